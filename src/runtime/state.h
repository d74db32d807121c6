// The guard's state (internal): its parts, each owning its own state: the settings, Reporting
// (reporting.h: the log, the findings sink), Kernels (kernels.h: the registry under its mutex, the
// probe, the launch gate), the selection memo and the mapped files, each under a lock of its own.
// guard.cpp alone holds them all (Guard, the facade over them); the event handlers (events.h) get
// the parts they need.
#pragma once

#include <atomic>
#include <mutex>
#include <utility>

#include "hipguard/check.h"
#include "runtime/address.h"
#include "runtime/config.h"
#include "runtime/kernel_table.h"
#include "runtime/kernels.h"
#include "runtime/reporting.h"

namespace hipguard {

struct GuardState {
  // The process's guard (Guard::get()) keeps the process-wide launch gate and
  // cache, which the shim's launch wrappers read; a guard built on its own
  // keeps its own gate and no cache (no wrapper reads it).
  GuardState(GuardConfig c, std::atomic<unsigned>* launch_gate, LaunchCache* cache)
      : config(std::move(c)), out(config), kernels(config, out, launch_gate, cache) {}

  const GuardConfig config;   // the parts below keep a reference to it
  std::once_flag setup_said;  // the set-up findings, said at first use (Guard::config())
  Reporting out;              // the log and the findings sink: locks of their own
  Kernels kernels;            // the registry under its mutex, the probe, the launch gate
  // Registration's selections by bundle entry IDs (warn and strict mode): its
  // own lock, taken by check_image outside the registry's mutex.
  SelectionMemo selection_memo;
  // The files of the loaded objects whose fat binaries' tables registration
  // read from the file (registration.cpp, head_from_file), each checked once: its own lock.
  MappedFiles mapped_files;
};

}  // namespace hipguard
