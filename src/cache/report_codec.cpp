// Recording the report model as bytes and reading it back (report_codec.h): one field list per recorded
// type, walked alike by the writer and by the reader, which trusts nothing it reads.
#include "cache/report_codec.h"

#include <llvm/Support/xxhash.h>

#include <array>
#include <concepts>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

namespace hipguard {
namespace {

enum Tag : uint8_t { kEnd, kBeginFile, kImage, kEndFile, kLibrary };
constexpr char kMagic[4] = {'H', 'G', 'R', 'C'};
constexpr size_t kHeaderBytes = 8, kChecksumBytes = 8;

// A tripwire: a new field in a recorded type (most change its size) must be recorded below, with
// kReportCodecVersion bumped, before the size here is updated (x86-64, libstdc++; GCC and Clang agree).
static_assert(sizeof(Diagnostic) == 232);
static_assert(sizeof(TargetId) == 80);
static_assert(sizeof(TargetVerdict) == 144);
static_assert(sizeof(BundleEntry) == 144);
static_assert(sizeof(KernelDescriptor) == 40);
static_assert(sizeof(KernelArg) == 80);
static_assert(sizeof(KernelInfo) == 272);
static_assert(sizeof(CodeObjectIssue) == 112);
static_assert(sizeof(CodeObject) == 272);
static_assert(sizeof(CodeObjectSummary) == 304);
static_assert(sizeof(ImageReport) == 320);
static_assert(sizeof(FileReport) == 176);
static_assert(sizeof(LibrarySummary::PerTarget) == 112);
static_assert(sizeof(LibrarySummary) == 88);

// The largest value of each recorded enumeration: one beyond it is refused.
template <class E>
uint64_t enum_max();
template <>
uint64_t enum_max<Severity>() {
  return uint64_t(Severity::Error);
}
template <>
uint64_t enum_max<Feature>() {
  return uint64_t(Feature::On);
}
template <>
uint64_t enum_max<Selection>() {
  return uint64_t(Selection::None);
}
template <>
uint64_t enum_max<PayloadKind>() {
  return uint64_t(PayloadKind::Unknown);
}
template <>
uint64_t enum_max<Code>() {
  return all_codes().size() - 1;
}

template <class T>
concept Sequence = requires(T t) {
  t.emplace_back();
}
&&!std::same_as<T, std::string>;
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsArray : std::false_type {};
template <class T, size_t N>
struct IsArray<std::array<T, N>> : std::true_type {};

// ---- The field lists: each recorded type's fields in declaration order (T: the type, const or not).
template <class T, class U>
concept Is = std::same_as<std::remove_const_t<T>, U>;

template <class IO, Is<Diagnostic> T>
void fields(IO& io, T& d) {
  io(d.code, d.severity, d.file, d.entry, d.kernel, d.target, d.message, d.fix, d.value, d.limit);
}
template <class IO, Is<TargetId> T>
void fields(IO& io, T& t) {
  io(t.processor, t.sramecc, t.xnack, t.alias, t.lds_bytes);
}
template <class IO, Is<TargetVerdict> T>
void fields(IO& io, T& v) {
  io(v.target, v.selection, v.selected, v.can_run, v.kernels, v.kernel_free, v.other_target);
}
template <class IO, Is<BundleEntry> T>
void fields(IO& io, T& e) {
  io(e.id, e.parsed.kind, e.parsed.triple, e.parsed.target_id, e.offset, e.size);
}
template <class IO, Is<KernelDescriptor> T>
void fields(IO& io, T& k) {
  io(k.group_segment_fixed_size, k.private_segment_fixed_size, k.kernarg_size, k.kernel_code_entry_byte_offset,
     k.compute_pgm_rsrc1, k.compute_pgm_rsrc2, k.compute_pgm_rsrc3, k.kernel_code_properties, k.kernarg_preload);
}
template <class IO, Is<KernelArg> T>
void fields(IO& io, T& a) {
  io(a.name, a.value_kind, a.offset, a.size);
}
template <class IO, Is<KernelInfo> T>
void fields(IO& io, T& k) {
  io(k.name, k.symbol, k.group_segment_fixed_size, k.private_segment_fixed_size, k.kernarg_segment_size,
     k.kernarg_segment_align, k.wavefront_size, k.max_flat_workgroup_size, k.sgpr_count, k.vgpr_count, k.agpr_count,
     k.sgpr_spill_count, k.vgpr_spill_count, k.uses_dynamic_stack, k.reqd_workgroup_size, k.args, k.descriptor);
}
template <class IO, Is<CodeObjectIssue> T>
void fields(IO& io, T& i) {
  io(i.code, i.kernel, i.message, i.severity, i.value, i.limit);
}
template <class IO, Is<CodeObject> T>
void fields(IO& io, T& c) {
  io(c.version, c.e_flags, c.mach);
  io.processor(c.processor, c.mach);  // a pointer into the processor table: whether there is one
  io(c.target, c.generic_version, c.metadata_target, c.kernels, c.device_functions, c.kernels_without_metadata,
     c.issues, c.issues_dropped, c.dropped_severity, c.size);
}
template <class IO, Is<CodeObjectSummary> T>
void fields(IO& io, T& s) {
  io(s.entry, s.co);
}
template <class IO, Is<ImageReport> T>
void fields(IO& io, T& r) {
  io(r.origin, r.location, r.file_offset, r.kind, r.entry_ids, r.entries, r.ccob_version, r.ccob_method, r.table_bytes,
     r.encoded_read, r.code_objects, r.built_for, r.verdicts, r.diagnostics, r.structurally_ok);
}
template <class IO, Is<FileReport> T>
void fields(IO& io, T& f) {
  io(f.path, f.library, f.images, f.diagnostics, f.hip);
  io.nested([&] { io(f.members); });
  io(f.needed_by);
}
template <class IO, Is<LibrarySummary::PerTarget> T>
void fields(IO& io, T& p) {
  io(p.target, p.code_objects, p.kernels, p.other, p.failing);
}
template <class IO, Is<LibrarySummary> T>
void fields(IO& io, T& l) {
  io(l.name, l.files, l.built_for, l.targets);
}

// ---- Writing: numbers as LEB128 (signed ones zigzagged), strings and sequences after their length.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <class... A>
  void operator()(const A&... a) {
    (put(a), ...);
  }
  void processor(const ProcessorInfo* p, uint32_t) { put(p != nullptr); }
  template <class F>
  void nested(F f) {
    f();
  }

 private:
  void varint(uint64_t v) {
    for (; v >= 0x80; v >>= 7) out_.push_back(static_cast<char>(v | 0x80));
    out_.push_back(static_cast<char>(v));
  }
  template <class T>
  void put(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      out_.push_back(v ? 1 : 0);
    } else if constexpr (std::is_enum_v<T>) {
      varint(static_cast<uint64_t>(v));
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      auto u = static_cast<uint64_t>(v);
      varint((u << 1) ^ (v < 0 ? ~uint64_t(0) : 0));
    } else if constexpr (std::is_integral_v<T>) {
      varint(v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      varint(v.size());
      out_.append(v);
    } else if constexpr (IsOptional<T>::value) {
      put(v.has_value());
      if (v) put(*v);
    } else if constexpr (Sequence<T>) {
      varint(v.size());
      for (const auto& x : v) put(x);
    } else if constexpr (IsArray<T>::value) {
      for (const auto& x : v) put(x);
    } else {
      fields(*this, v);
    }
  }
  std::string& out_;
};

// ---- Reading: every value checked against what the type can hold and the bytes left; the first
// failure stops the reading (each later read is a no-op) and is kept.
class Reader {
 public:
  explicit Reader(Bytes in) : in_(in) {}
  template <class... A>
  void operator()(A&... a) {
    (get(a), ...);
  }
  void processor(const ProcessorInfo*& p, uint32_t mach) {
    bool has = false;
    get(has);
    p = has ? find_processor_by_mach(mach) : nullptr;
    if (has && !p) fail("a processor the table does not have");
  }
  template <class F>
  void nested(F f) {
    if (++depth_ > kMaxRecordedNesting) return fail("members nested too deep");
    f();
    --depth_;
  }
  uint8_t tag() {
    if (failed() || pos_ >= in_.size()) return fail("truncated"), kEnd;
    return in_[pos_++];
  }
  bool at_end() const { return pos_ == in_.size(); }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  void fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at byte " + std::to_string(pos_ + kHeaderBytes);
  }
  uint64_t left() const { return in_.size() - pos_; }
  uint64_t varint() {
    uint64_t v = 0;
    for (unsigned shift = 0; !failed() && shift < 64; shift += 7) {
      if (pos_ >= in_.size()) return fail("truncated"), 0;
      uint8_t b = in_[pos_++];
      if (shift == 63 && b > 1) break;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return fail("a number too large"), 0;
  }
  template <class T>
  void get(T& v) {
    if (failed()) return;
    if constexpr (std::is_same_v<T, bool>) {
      uint64_t b = varint();
      if (b > 1) return fail("a truth value that is neither 0 nor 1");
      v = b == 1;
    } else if constexpr (std::is_enum_v<T>) {
      uint64_t e = varint();
      if (e > enum_max<T>()) return fail("a value out of its enumeration");
      v = static_cast<T>(e);
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      uint64_t u = varint();
      auto s = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
      if (s < std::numeric_limits<T>::min() || s > std::numeric_limits<T>::max()) return fail("a number out of range");
      v = static_cast<T>(s);
    } else if constexpr (std::is_integral_v<T>) {
      uint64_t u = varint();
      if (u > std::numeric_limits<T>::max()) return fail("a number out of range");
      v = static_cast<T>(u);
    } else if constexpr (std::is_same_v<T, std::string>) {
      uint64_t n = varint();
      if (n > left()) return fail("a string longer than the bytes left");
      v.assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
      pos_ += n;
    } else if constexpr (IsOptional<T>::value) {
      bool has = false;
      get(has);
      v.reset();
      if (has) get(v.emplace());
    } else if constexpr (Sequence<T>) {
      uint64_t n = varint();
      if (n > left()) return fail("a count larger than the bytes left");  // every element takes a byte
      v.clear();
      for (uint64_t i = 0; i < n && !failed(); ++i) get(v.emplace_back());
    } else if constexpr (IsArray<T>::value) {
      for (auto& x : v) get(x);
    } else {
      fields(*this, v);
    }
  }
  Bytes in_;
  uint64_t pos_ = 0;
  unsigned depth_ = 0;
  std::string error_;
};

uint64_t checksum(Bytes b) {
  return llvm::xxHash64(llvm::StringRef(reinterpret_cast<const char*>(b.data()), b.size()));
}

// One pass over the events: into `sink`, or (null) only read.
std::string read_events(Bytes events, FileSink* sink) {
  Reader r(events);
  for (uint8_t tag; !r.failed() && (tag = r.tag()) != kEnd;) {
    if (tag == kBeginFile) {
      std::string path;
      r(path);
      if (sink && !r.failed()) sink->begin_file(path);
    } else if (tag == kImage) {
      ImageReport img;
      r(img);
      if (sink && !r.failed()) sink->image(std::move(img));
    } else if (tag == kEndFile) {
      FileReport file;
      r(file);
      if (sink && !r.failed()) sink->end_file(std::move(file));
    } else if (tag == kLibrary) {
      LibrarySummary library;
      r(library);
      if (sink && !r.failed()) sink->library(std::move(library));
    } else {
      return "an event of an unknown kind";
    }
  }
  if (r.failed()) return r.error();
  return r.at_end() ? "" : "bytes after the end";
}

}  // namespace

RecordingSink::RecordingSink(uint64_t limit) : limit_(limit) {
  out_.assign(kMagic, sizeof kMagic);
  for (unsigned i = 0; i < 4; ++i) out_.push_back(static_cast<char>(kReportCodecVersion >> (8 * i)));
}

bool RecordingSink::within_limit() {
  if (!over_ && out_.size() > limit_) over_ = true, std::string().swap(out_);
  return !over_;
}

void RecordingSink::begin_file(const std::string& path) {
  if (!within_limit()) return;
  out_.push_back(kBeginFile);
  Writer w(out_);
  w(path);
}
void RecordingSink::record(const ImageReport& img) {
  if (!within_limit()) return;
  out_.push_back(kImage);
  Writer w(out_);
  w(img);
}
void RecordingSink::record(const FileReport& file) {
  if (!within_limit()) return;
  out_.push_back(kEndFile);
  Writer w(out_);
  w(file);
}
void RecordingSink::library(LibrarySummary&& library) {
  if (!within_limit()) return;
  out_.push_back(kLibrary);
  Writer w(out_);
  w(library);
}

std::string RecordingSink::finish() {
  std::string done;
  if (within_limit()) {
    out_.push_back(kEnd);
    uint64_t sum = checksum(Bytes(reinterpret_cast<const uint8_t*>(out_.data()), out_.size()));
    for (unsigned i = 0; i < 8; ++i) out_.push_back(static_cast<char>(sum >> (8 * i)));
    done = std::move(out_);
  }
  *this = RecordingSink(limit_);
  return done;
}

Status replay(Bytes recorded, FileSink* sink) {
  auto refused = [](const std::string& why) { return ParseError{Code::kUnreadable, "a recorded report: " + why}; };
  if (recorded.size() < kHeaderBytes + 1 + kChecksumBytes) return refused("too short");
  if (std::memcmp(recorded.data(), kMagic, sizeof kMagic) != 0) return refused("not a recording");
  uint32_t version = 0;
  for (unsigned i = 0; i < 4; ++i) version |= uint32_t(recorded[4 + i]) << (8 * i);
  if (version != kReportCodecVersion)
    return refused("format version " + std::to_string(version) + ", not " + std::to_string(kReportCodecVersion));
  size_t body_end = recorded.size() - kChecksumBytes;
  uint64_t stored = 0;
  for (unsigned i = 0; i < 8; ++i) stored |= uint64_t(recorded[body_end + i]) << (8 * i);
  if (checksum(recorded.first(body_end)) != stored) return refused("checksum mismatch");
  Bytes events = recorded.subspan(kHeaderBytes, body_end - kHeaderBytes);
  if (std::string why = read_events(events, nullptr); !why.empty()) return refused(why);
  if (sink) read_events(events, sink);  // read whole above: cannot fail
  return ok();
}

}  // namespace hipguard
