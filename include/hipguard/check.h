// The check pipeline: payload bytes -> bundle -> selected code object ->
// metadata -> per-target checks -> diagnostics and a verdict per target.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/code_object.h"
#include "hipguard/diagnostic.h"
#include "hipguard/owned_mutex.h"
#include "hipguard/runtime_version.h"
#include "hipguard/target.h"

namespace hipguard {

// Parses an AMDGPU code object held in `data` (exactly the image, or more):
// reads it (format/read_code_object.h), then adds the findings of the target-independent kernel checks.
// Fails (HG106) when the ELF itself is unusable, (HG108) when the processor
// is unknown; metadata problems are recorded in issues and do not fail.
// descriptors_only (Depth::Descriptors): the metadata is not read (only whether
// the note is there, HG401); kernels are the "<name>.kd" symbols (name, symbol
// and descriptor set, every other field 0), device functions are not listed,
// only the checks that need no metadata run, and issues below error severity
// are left out. Every error it finds the full parse finds too, for kernels the
// metadata describes. only_lds_over (bytes, with descriptors_only): only the
// kernels whose descriptor declares more static LDS are listed (a code object
// built for another processor, where only whether its kernels fit at all is
// said: HG301); UINT64_MAX lists none without reading the symbol table.
Result<CodeObject> parse_code_object(Bytes data, bool descriptors_only = false, uint64_t only_lds_over = 0);

// How a code object was chosen for a target (AMDGPUUsage / CLR fatbin selection:
// first compatible entry in file order, native before generic).
enum class Selection { Native, Generic, Spirv, None };  // Spirv: the runtime would JIT-compile a SPIR-V entry
std::string_view to_string(Selection s);

struct TargetVerdict {
  TargetId target;
  Selection selection = Selection::None;
  std::string selected;      // bundle entry ID, or the raw code object's target ID
  bool can_run = false;      // no error-severity diagnostic for this target
  size_t kernels = 0;        // kernels in the selected code object
  bool kernel_free = false;  // nothing selected, but no entry has a kernel: the fat binary runs (HG211)
  // A kernel library's file (check_paths.h, LibrarySummary) built for another processor or configuration:
  // the library's loader does not load it for this target, so it is counted, not checked, and its
  // HG201/HG202/HG203 for this target are dropped. can_run stays false; it fails nothing.
  bool other_target = false;

  bool fails() const { return !can_run && !other_target; }
  // Whether the error `d` is this verdict's: its own (d.target is this target), or a structural one of
  // the whole image (no entry) or of `selected`, the entry it selected or the one that entry shares its
  // bytes with.
  bool counts(const Diagnostic& d, const std::string& selected) const {
    return d.target.empty() ? (d.entry.empty() || d.entry == selected) : d.target == target.str();
  }
};

// A summary of one code object that was parsed (selected, or every one when
// no target is given).
struct CodeObjectSummary {
  std::string entry;  // bundle entry ID ("" for a raw code object)
  CodeObject co;
};

struct ImageReport {
  std::string origin;        // file path or in-memory origin
  std::string location;      // where in the origin: "bundle #2 @0x3000", "" for whole files
  uint64_t file_offset = 0;  // where the payload starts in the origin file (set by check_file)
  PayloadKind kind = PayloadKind::Unknown;
  std::vector<std::string> entry_ids;          // bundle entry IDs, file order
  std::vector<BundleEntry> entries;            // the same entries with offsets and sizes
  uint16_t ccob_version = 0, ccob_method = 0;  // compressed bundles: header version, 0 zlib / 1 zstd
  uint64_t table_bytes = 0;   // a bundle's header and entry table, bytes (of the decompressed bundle); 0: not parsed
  uint64_t encoded_read = 0;  // a compressed bundle: bytes of it (header and payload) read to decode its table
  std::deque<CodeObjectSummary> code_objects;  // deque: diagnostics keep pointers stable
  std::string built_for;                       // a raw code object: the target ID it is built for (describe_target)
  std::vector<TargetVerdict> verdicts;         // one per requested target, same order
  std::vector<Diagnostic> diagnostics;         // structural ones have an empty target
  bool structurally_ok = true;                 // no target-independent error

  // With targets: every requested target can run this image. Without: the
  // image is structurally sound.
  bool ok() const;
};

// How far check_image goes for offload bundles (a raw code object is checked
// in full, but at ForTargets).
enum class Depth {
  Full,         // select, then parse the selected code objects and check every kernel
  ForTargets,   // as Full, and a raw code object built for a processor that none of the targets has is
                // read as a bundle entry the runtime does not select would be: not its metadata, only
                // its kernel descriptors, for HG202 and HG301 (the kernels that fit no target), and it is
                // not listed in ImageReport::code_objects (`hipguard check`: a directory of code objects
                // for many GPUs costs what the ones for the GPUs asked about cost)
  Selection,    // bundle table and selection only: no code object is parsed (the
                // shim's registration path; kernels are checked at first use), except
                // that when nothing fits a target the entries' descriptors are read
                // until one has a kernel (HG201 or HG211)
  Library,      // as ForTargets, for a kernel library's file (check_paths.h, LibrarySummary): a raw code object
                // built for a processor that none of the targets has is read only to its ELF header, and a
                // bundle with nothing for a target is not searched for kernels (HG201, not HG211): the
                // library's loader loads neither there, so it is counted, not checked
  Descriptors,  // select, then the selected code objects' ELF headers, symbol tables and
                // kernel descriptors, without reading their metadata:
                // the errors decided there (e_flags, static LDS, a kernel descriptor out of
                // bounds, no metadata note). Kernels are the "<name>.kd" symbols; findings
                // below error severity, and everything the metadata decides, wait for Full.
};

// Where the targets run: which HIP runtime selects the code objects, and
// whether the targets are the GPUs of one process (the shim's GPUs, or
// `hipguard check --one-process`) rather than separate machines (several
// --target). In one process HIP 5.6 and later look up every GPU's code object
// in one comgr call, in which a bundle entry serves one GPU only (HG212).
struct Machine {
  const RuntimeInfo* runtime = nullptr;  // null: default_runtime(), the newest (strictest)
  bool one_process = false;
};

// Which entry each target selects in an uncompressed bundle checked to
// Depth::Selection (the shim's registration), by the
// bundle's entry IDs: selection depends on the IDs alone (not on offsets,
// sizes or contents) once something fits every target, and a library's
// hundreds of fat binaries share a few tables of IDs
// (rocSOLVER: 301 fat binaries). Kept only for selections without a finding,
// every target native or generic (a bundle with nothing for a target is
// searched for kernels, which reads its entries' contents: never kept); for
// one set of targets and machine (another clears it). At most kMaxTables
// tables of at most kMaxKeyBytes of IDs each. Thread-safe; lock_for_fork() and unlock_after_fork()
// hold its lock across fork() (the shim's fork handlers), so that a child
// never starts with it held.
class SelectionMemo {
 public:
  struct Choice {
    Selection selection;
    size_t entry;  // index into the bundle's entries
  };
  static constexpr size_t kMaxTables = 64;
  static constexpr size_t kMaxKeyBytes = 64 * 1024;
  // The choices remembered for `ids` (the entry IDs, each after its length), one per target.
  std::optional<std::vector<Choice>> find(const std::vector<TargetId>& targets, const Machine& machine,
                                          const std::string& ids) const;
  void remember(const std::vector<TargetId>& targets, const Machine& machine, std::string ids,
                std::vector<Choice> choices);
  size_t size() const;  // tables remembered
  void unlock_after_fork() const { mu_.unlock_after_fork(); }
  OwnedMutex::ForkHold lock_for_fork() const { return mu_.lock_for_fork(); }

 private:
  bool same_context(const std::vector<TargetId>& targets, const Machine& machine) const;
  mutable OwnedMutex mu_;
  std::vector<TargetId> targets_;
  const RuntimeInfo* runtime_ = nullptr;
  bool one_process_ = false;
  std::map<std::string, std::vector<Choice>> tables_;
};

// Checks one payload (offload bundle, compressed bundle or raw code object)
// against `targets`. With no targets only structural checks run, over every
// AMDGPU entry (Full depth only). `data` must be readable in full. With a
// memo, an uncompressed bundle checked to Depth::Selection is
// selected from it when its entry IDs are there, and its clean selection is
// added to it. `head`, when given, is a copy of data's first bytes (the shim
// reads them from the file `data` is mapped from): classification and an
// uncompressed bundle's table are read from it, so that a check to
// Depth::Selection whose table lies within it reads nothing of `data`
// (unless a target has nothing selected: then its entries are searched for kernels).
// `release_read`, when given, is told which bytes of a compressed bundle's payload its decoder has
// read (Bundle::release_read; check_file drops a mapped file's pages behind it).
ImageReport check_image(Bytes data, const std::string& origin, const std::vector<TargetId>& targets,
                        const std::string& location = "", Depth depth = Depth::Full, const Machine& machine = {},
                        SelectionMemo* memo = nullptr, Bytes head = {},
                        const std::function<void(Bytes)>& release_read = {});

}  // namespace hipguard
