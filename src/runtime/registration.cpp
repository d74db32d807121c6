// Fat binaries and their kernels: __hipRegisterFatBinary / __hipRegisterFunction / __hipUnregisterFatBinary, and the
// kernel table they fill.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "format/bytes.h"
#include "runtime/address.h"
#include "runtime/events.h"
#include "runtime/kernels.h"

namespace hipguard {

void PendingDelete::operator()(PendingFatbin* p) const noexcept { delete p; }

namespace {

// A read fault on a file mapping maps every page of the page cache in the
// 64 KiB-aligned window around it (the kernel's fault_around_bytes, 64 KiB by
// default), not only the page read: what a check touched is released by
// whole windows.
constexpr uintptr_t kFaultAround = 64 * 1024;

// The bytes of an uncompressed bundle's header and entry table
// (__CLANG_OFFLOAD_BUNDLE__, count; per entry offset, size, ID length, ID):
// as parsed, or estimated from the entries when the parse failed.
uint64_t bundle_table_bytes(const ImageReport& r) {
  if (r.table_bytes) return r.table_bytes;
  uint64_t n = 24 + 8;
  for (const auto& e : r.entries) n += 24 + e.id.size();
  return n;
}

// Headers, symbol tables and descriptors lie megabytes apart in a library's
// code objects, and a library holds hundreds of fat binaries: the pages a
// registration check faulted in would stay in the program's RSS (a fault-around
// window per bundle table; docs/performance.md, R2). Released: the bundle table
// of an uncompressed bundle and, when they were read, its selected entries; the
// compressed bytes decoded to reach a compressed bundle's table (a zstd block);
// or a raw code object. Only clean file-backed pages of read-only
// segments are dropped (release_read_pages): the runtime re-faults them from
// the page cache when it reads them.
using Windows = std::vector<std::pair<const void*, uint64_t>>;

// [offset, offset + size) of `data`, widened to whole fault-around windows.
void add_window(Bytes data, uint64_t offset, uint64_t size, Windows& out) {
  if (offset >= data.size()) return;
  size = std::min<uint64_t>(size, data.size() - offset);
  uintptr_t lo = reinterpret_cast<uintptr_t>(data.data() + offset) & ~(kFaultAround - 1);
  uintptr_t hi = (reinterpret_cast<uintptr_t>(data.data() + offset + size) + kFaultAround - 1) & ~(kFaultAround - 1);
  out.emplace_back(reinterpret_cast<const void*>(lo), hi - lo);
}

// What a registration check at `depth` read of `data`: a raw code object (its header, or all); an
// uncompressed bundle's table (unless read from a copy, check_image's head)
// and, past Depth::Selection, its selected entries; at Depth::Selection, what
// a compressed bundle's table took of it.
Windows checked_windows(Bytes data, const ImageReport& r, Depth depth, uint64_t head_bytes = 0) {
  Windows out;
  // A raw code object: at Depth::Selection, when it fit every target (else it was read in full), its
  // ELF header and the section header table that sized it (elf_image_size: the end of the image);
  // otherwise all of it.
  if (r.kind == PayloadKind::CodeObject) {
    bool header_only =
        depth == Depth::Selection && data.size() >= 64 &&
        std::all_of(r.verdicts.begin(), r.verdicts.end(), [](const auto& v) { return !v.selected.empty(); });
    if (!header_only) {
      add_window(data, 0, data.size(), out);
    } else {
      uint64_t shoff = read_le<uint64_t>(data, 40);  // e_shoff, ELF64 little-endian (checked when sized)
      add_window(data, 0, 64, out);
      if (shoff < data.size()) add_window(data, shoff, data.size() - shoff, out);
    }
  }
  if (r.kind == PayloadKind::CompressedBundle && depth == Depth::Selection) add_window(data, 0, r.encoded_read, out);
  if (r.kind != PayloadKind::OffloadBundle) return out;
  // Parsed within the head: read from it (Checker::read_bundle), not from data.
  if (r.table_bytes == 0 || r.table_bytes > head_bytes) add_window(data, 0, bundle_table_bytes(r), out);
  if (depth == Depth::Selection) return out;
  std::vector<const BundleEntry*> added;  // an entry selected for several targets, once
  for (const auto& v : r.verdicts)
    for (const auto& e : r.entries)
      if (e.id == v.selected && std::find(added.begin(), added.end(), &e) == added.end()) {
        added.push_back(&e);
        add_window(data, e.offset, e.size, out);
      }
  return out;
}

void release_checked_pages(const PendingFatbin& p, uint64_t head_bytes) {
  release_read_pages(checked_windows(p.data, p.report, p.depth, head_bytes), p.readonly);
}

// A __hipRegisterFatBinary wrapper as read: its fat binary's bytes, a kpack
// wrapper (nothing to check), or why it cannot be read.
struct WrapperRead {
  enum { FatBinary, Kpack, Broken } kind = Broken;
  Bytes data;
  std::vector<uint8_t> head;      // a copy of data's first bytes from its file, or empty (head_from_file)
  Code code = Code::kUnreadable;  // Broken: the diagnostic
  std::string message;
};

template <class HeadOf>
WrapperRead read_wrapper(const void* wrapper, HeadOf&& head_of) {
  WrapperRead r;
  if (readable_extent(wrapper, sizeof(FatbinWrapper)) < sizeof(FatbinWrapper)) {
    r.code = Code::kUnreadable;
    r.message = "fat binary wrapper at " + hex(wrapper) + " is not readable memory";
    return r;
  }
  FatbinWrapper w;
  memcpy(&w, wrapper, sizeof w);
  if (w.magic == kHipkMagic && w.version == 1) {
    r.kind = WrapperRead::Kpack;
    return r;
  }
  if (w.magic != kHipFatbinMagic || w.version != 1) {
    char buf[160];
    snprintf(buf, sizeof buf,
             "fat binary wrapper has magic 0x%08x version %u (expected 0x%08x HIPF or 0x%08x HIPK, version 1)", w.magic,
             w.version, kHipFatbinMagic, kHipkMagic);
    r.code = Code::kBadFatbinWrapper;
    r.message = buf;
    return r;
  }
  uint64_t extent = readable_extent(w.binary, kMaxDecompressedBytes);
  if (extent == 0) {
    r.code = Code::kUnreadable;
    r.message = "fat binary at " + hex(w.binary) + " is not readable memory";
    return r;
  }
  r.kind = WrapperRead::FatBinary;
  r.data = Bytes(static_cast<const uint8_t*>(w.binary), extent);
  r.head = head_of(r.data);
  // A raw code object (AITER registers .co files this way): size it from its headers.
  if (classify(r.head.empty() ? r.data : Bytes(r.head)) == PayloadKind::CodeObject) {
    if (auto size = elf_image_size(r.data); size && *size <= extent) r.data = r.data.first(*size);
  }
  return r;
}

// The registration of a fat binary that cannot be read: one structural error.
PendingFatbinPtr broken_fatbin(const std::string& origin, Code code, std::string message) {
  PendingFatbinPtr r(new PendingFatbin());
  r->report.origin = origin;
  r->report.diagnostics.push_back(
      make_diagnostic(code, origin, std::move(message),
                      "the program's fat binary is damaged or not produced by a HIP compiler; rebuild it"));
  r->report.structurally_ok = false;
  return r;
}

// Bundles, in both modes: checked to selection now (compressed ones: below; a library may carry
// hundreds of fat binaries whose kernels are never launched); each fat binary
// is checked in full at the first launch or lookup of one of its kernels,
// when the runtime loads its code object for the device too (HIP 6.4: the
// first use of one of its functions or variables; ROCm 5.2 likewise builds a
// program at first use, hipamd hip_fatbin.cpp), and strict mode refuses a
// launch of a kernel that cannot run there. Selection itself cannot wait: a
// ROCm 5.2 runtime extracts every registered fat binary's code objects when
// HIP initialises and aborts if one has none for the device (hipamd
// hip_fatbin.cpp ExtractFatBinary, guarantee; later ones log it and fail at
// first use), before any launch; strict mode stops the program there, before
// main. The selected code objects' headers and kernel descriptors are not read
// here: they are pages of code objects the program may never use, which the
// runtime itself reads only at first use (docs/performance.md, R2). A raw code
// object (AITER registers .co files this way) is selected from its ELF header,
// as CLR selects it, and read at its first use like a bundle's entry.
Depth registration_depth(Bytes data, const GuardConfig& c) {
  PayloadKind kind = classify(data);
  bool selectable =
      kind == PayloadKind::OffloadBundle || kind == PayloadKind::CompressedBundle || kind == PayloadKind::CodeObject;
  return selectable && !c.targets.empty() ? Depth::Selection : Depth::Full;
}

// A compressed bundle (CCOB) is not even decoded at registration when the runtime goes on without a
// code object for the GPU (ROCm 5.3 and later, runtime_version.h): its bundle table is the start of
// the compressed payload, and zstd decodes a whole block (up to 128 KiB) to give it, a cost a library of
// compressed bundles pays per fat binary at dlopen (docs/performance.md, R4). CLR decompresses it at the first use of
// one of its kernels (FatBinaryInfo::ExtractFatBinaryUsingCOMGR, deferred loading), where hipguard then checks it in
// full: no code object for the GPU refuses that launch in strict mode, as the runtime fails it, rather than stopping
// the program before main.
bool decoded_at_first_use(Bytes data, const GuardConfig& c) {
  const RuntimeInfo& runtime = c.machine.runtime ? *c.machine.runtime : default_runtime();
  return classify(data) == PayloadKind::CompressedBundle && !runtime.aborts_without_code_object;
}

// Registration reads an uncompressed bundle's table (the first 4 KiB hold a
// dozen entries' IDs) from the library's file rather than its mapping: the
// mapping's pages are never faulted in, so there is nothing to release, and a
// pread costs less than the fault, /proc/self/pagemap and madvise it replaces
// (docs/performance.md).
constexpr uint64_t kHeadBytes = 4096;

// A copy of `data`'s first bytes (a bundle's table) read from the file it is
// mapped from (MappedFiles::read), or empty: then read the memory.
std::vector<uint8_t> head_from_file(MappedFiles& files, Bytes data) {
  std::vector<uint8_t> head(std::min<uint64_t>(data.size(), kHeadBytes));
  if (!files.read(data.data(), head.size(), head.data())) head.clear();
  return head;
}

// The registration check of the readable fat binary `data` (of `wrapper`),
// `head` a copy of its first bytes or empty; its read pages released.
PendingFatbinPtr check_registration(Reporting& out, SelectionMemo& memo, const void* wrapper, Bytes data, Bytes head,
                                    const std::string& origin) {
  const GuardConfig& c = out.config();
  PendingFatbinPtr pending(new PendingFatbin());
  pending->depth = registration_depth(head.empty() ? data : head, c);
  pending->data = data;
  pending->readonly = readonly_segments_of(wrapper);
  if (pending->depth == Depth::Selection && decoded_at_first_use(head.empty() ? data : head, c)) {
    pending->report.origin = origin;  // nothing read past the CCOB magic: checked in full at first use
    pending->report.kind = PayloadKind::CompressedBundle;
    return pending;
  }
  pending->report = check_image(data, origin, c.targets, "", pending->depth, c.machine, &memo, head);
  // Nothing selected for any target: there is nothing to check in full.
  bool selected = false;
  for (const auto& vv : pending->report.verdicts) selected = selected || vv.selection != Selection::None;
  if (!selected) pending->depth = Depth::Full;
  release_checked_pages(*pending, head.size());
  add_hotswap(pending->report, c);
  if (out.logs_debug())  // not built per fat binary otherwise: a library registers hundreds
    out.log("debug", "registered fat binary of " + origin + " (" + std::string(to_string(pending->report.kind)) + ", " +
                         std::to_string(pending->report.entry_ids.size()) + " bundle entries)");
  return pending;
}

// A fat binary's check stops the process: its report goes into the report file. No exception
// leaves it: the stop it comes with must not turn into a forward.
void stopping_at(Reporting& out, const ImageReport& report) try { out.sink().stop_at(report); } catch (...) {
}

}  // namespace

Decision events::on_register_fatbin(Kernels& k, MappedFiles& files, SelectionMemo& memo, const void* wrapper,
                                    PendingFatbinPtr& out) {
  const GuardConfig& c = k.config;
  if (c.mode == Mode::Off) return {};
  if (c.mode == Mode::Strict && c.config_error) {
    k.out.log("error", "strict mode: stopping " + self_exe() + " before its first kernel launch (exit status " +
                           std::to_string(c.exit_code) + "): the hipguard settings above are not accepted");
    return {Action::Exit, 0};
  }
  std::string origin = origin_of(wrapper);
  bool table_from_file = !c.targets.empty();  // checked to selection (registration_depth)
  WrapperRead read = read_wrapper(
      wrapper, [&](Bytes data) { return table_from_file ? head_from_file(files, data) : std::vector<uint8_t>{}; });
  if (read.kind == WrapperRead::Kpack) {
    // Valid for current CLR: not an error, but nothing hipguard can check.
    out.reset();
    k.out.say(make_diagnostic(Code::kKpackNotChecked, origin,
                              "kpack fat binary (HIPK wrapper): its code objects are in an archive beside the "
                              "program, which hipguard does not read; its kernels are not checked",
                              "check the archive's code objects with 'hipguard check' offline"));
    return {};
  }
  PendingFatbinPtr pending = read.kind == WrapperRead::Broken
                                 ? broken_fatbin(origin, read.code, std::move(read.message))
                                 : check_registration(k.out, memo, wrapper, read.data, read.head, origin);
  Decision v = k.out.judge(pending->report, true);
  if (v.action == Action::Exit) {
    if (read.kind == WrapperRead::FatBinary)
      k.out.log("error", "strict mode: stopping " + self_exe() + " before its first kernel launch (exit status " +
                             std::to_string(c.exit_code) + ")");
    stopping_at(k.out, pending->report);
  }
  out = std::move(pending);
  return v;
}

void events::on_registered_fatbin(Kernels& k, const void* handle, PendingFatbinPtr pending) {
  if (!pending) return;
  std::lock_guard lock(k.mu);
  k.register_fatbin(handle, std::move(*pending));
}

// __hipRegisterFunction runs for every kernel of every fat binary a library
// carries (12 k for rocSPARSE), during dlopen: it only records the kernel. The
// kernel table is filled at the first launch, lookup, or report (Kernels::index_*),
// and a kernel is judged there: it never stops the program here.
Decision events::on_register_function(Kernels& k, const void* handle, const void* host_function,
                                      const char* device_name) {
  if (!host_function || !device_name) return {};
  if (k.config.mode == Mode::Off) return {};
  std::lock_guard lock(k.mu);
  k.registry.add_function(handle, host_function, device_name);
  return {};
}

void events::on_unregister_fatbin(Kernels& k, const void* handle) {
  // The report lists every kernel (write_report): a library unregisters its fat binaries before the
  // report is written, at exit. Not what a forked child inherited, nor after the report is written.
  if (!k.config.report_path.empty() && k.for_the_report(handle)) k.check_in_full(handle, /*say=*/false);
  std::lock_guard lock(k.mu);
  if (!k.registry.has_fatbin(handle)) return;
  // The report lists kernels with findings: index them while their names are valid.
  if (!k.config.report_path.empty()) k.index_kernels_of(handle);
  k.unregister_fatbin(handle);
}

// The kernel table's lazy indexing (kernels.h).
void Kernels::index_kernels_of(const void* handle) { registry.index_kernels_of(handle, config.targets, to_probe()); }

// Only the fat binary whose registration of `key` counts is indexed (Registry::index_kernel).
void Kernels::index_kernel(const void* key) {
  if (!(gate.load(std::memory_order_acquire) & kGateUnindexed)) return;
  if (registry.find(key)) return;
  std::lock_guard lock(mu);
  if (registry.find(key)) return;
  registry.index_kernel(key, config.targets, to_probe());
}

bool Kernels::for_the_report(const void* handle) {
  std::lock_guard lock(mu);
  return registry.below_full(handle, fork_seq) && !out.sink().report_written();
}

}  // namespace hipguard
