// The probe's state (internal): the runtime's lookup functions and the kernels
// not probed yet. Guard::State::probe, under the state mutex; run_probe
// (probe.cpp) calls the runtime outside it.
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/guard.h"

namespace hipguard {

struct KernelState;

struct ProbeState {
  ProbeFunctions functions;  // handed in by the shim at the first launch
  // Indexed kernels not probed yet, by fat binary (handle): probed at the first
  // launch of one of them, so the runtime never loads code objects for us that
  // the program does not use.
  std::unordered_map<const void*, std::vector<std::pair<const void*, const KernelState*>>> unprobed;
  bool off = false;  // the runtime has no usable GPU: probing says nothing
};

}  // namespace hipguard
