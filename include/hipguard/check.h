// The check pipeline: payload bytes -> bundle -> selected code object ->
// metadata -> per-target checks -> diagnostics and a verdict per target.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/code_object.h"
#include "hipguard/diagnostic.h"
#include "hipguard/target.h"

namespace hipguard {

// How a code object was chosen for a target (AMDGPUUsage / CLR fatbin selection:
// first compatible entry in file order, native before generic).
enum class Selection { Native, Generic, Spirv, None };  // Spirv: the runtime would JIT-compile a SPIR-V entry
std::string_view to_string(Selection s);

struct TargetVerdict {
  TargetId target;
  Selection selection = Selection::None;
  std::string selected;  // bundle entry ID, or the raw code object's target ID
  bool can_run = false;  // no error-severity diagnostic for this target
  size_t kernels = 0;    // kernels in the selected code object
  bool kernel_free = false;  // nothing selected, but no entry has a kernel: the fat binary runs (HG211)
};

// A summary of one code object that was parsed (selected, or every one when
// no target is given).
struct CodeObjectSummary {
  std::string entry;  // bundle entry ID ("" for a raw code object)
  CodeObject co;
};

struct ImageReport {
  std::string origin;    // file path or in-memory origin
  std::string location;  // where in the origin: "bundle #2 @0x3000", "" for whole files
  uint64_t file_offset = 0;  // where the payload starts in the origin file (set by check_file)
  PayloadKind kind = PayloadKind::Unknown;
  std::vector<std::string> entry_ids;        // bundle entry IDs, file order
  std::vector<BundleEntry> entries;          // the same entries with offsets and sizes
  uint16_t ccob_version = 0, ccob_method = 0;  // compressed bundles: header version, 0 zlib / 1 zstd
  std::deque<CodeObjectSummary> code_objects;  // deque: diagnostics keep pointers stable
  std::vector<TargetVerdict> verdicts;       // one per requested target, same order
  std::vector<Diagnostic> diagnostics;       // structural ones have an empty target
  bool structurally_ok = true;               // no target-independent error

  // With targets: every requested target can run this image. Without: the
  // image is structurally sound.
  bool ok() const;
};

// How far check_image goes for offload bundles (a raw code object is checked
// in full, but at ForTargets).
enum class Depth {
  Full,       // select, then parse the selected code objects and check every kernel
  ForTargets,  // as Full, and a raw code object built for a processor that none of the targets has is
               // read as a bundle entry the runtime does not select would be: not its metadata, only
               // its kernel descriptors, for HG202 and HG301 (the kernels that fit no target), and it is
               // not listed in ImageReport::code_objects (`hipguard check`: a directory of code objects
               // for many GPUs costs what the ones for the GPUs asked about cost)
  Selection,  // bundle table and selection only: no code object is parsed (the
              // shim's registration path; kernels are checked at first use), except
              // that when nothing fits a target the entries' descriptors are read
              // until one has a kernel (HG201 or HG211)
  Descriptors,  // select, then the selected code objects' ELF headers, symbol tables and
                // kernel descriptors, without reading their metadata (strict registration):
                // the errors decided there (e_flags, static LDS, a kernel descriptor out of
                // bounds, no metadata note). Kernels are the "<name>.kd" symbols; findings
                // below error severity, and everything the metadata decides, wait for Full.
};

// Checks one payload (offload bundle, compressed bundle or raw code object)
// against `targets`. With no targets only structural checks run, over every
// AMDGPU entry (Full depth only). `data` must be readable in full.
ImageReport check_image(Bytes data, const std::string& origin, const std::vector<TargetId>& targets,
                        const std::string& location = "", Depth depth = Depth::Full);

}  // namespace hipguard
