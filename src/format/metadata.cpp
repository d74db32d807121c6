// The NT_AMDGPU_METADATA reader: MessagePack kernel metadata into CodeObject kernels (reading only).
#include <llvm/BinaryFormat/MsgPackReader.h>
#include <llvm/Support/Error.h>

#include <algorithm>
#include <span>
#include <string_view>

#include "format/read_code_object.h"
#include "hipguard/code_object.h"
#include "hipguard/diagnostic.h"

namespace hipguard {
namespace {

// One NT_AMDGPU_METADATA note as read on its own: its kernels and findings, and
// what comgr's note merge compares (comgr-metadata.cpp mergeNoteRecords).
struct NoteDoc {
  bool valid = false;  // a whole, well-formed MessagePack document
  std::optional<std::string> target;
  std::vector<KernelInfo> kernels;
  std::vector<CodeObjectIssue> issues;  // at most kMaxIssuesPerCodeObject
  uint64_t dropped = 0;
  Severity dropped_severity = Severity::Note;
  bool root_is_map = false;
  std::optional<std::vector<uint64_t>> version;  // amdhsa.version, when an array of integers
  bool has_version_array = false;
  bool has_kernels_array = false;
  bool has_printf = false;  // amdhsa.printf
};

// Reads NT_AMDGPU_METADATA in one pass with LLVM's streaming msgpack reader,
// keeping only the fields the checks use (AMDGPUUsage, Code Object V3+
// Metadata). No llvm::msgpack::Document: building its std::map tree cost ~80 %
// of `hipguard check` on rocSPARSE's multi-megabyte metadata. Every object is
// still read, so a truncated or malformed document is rejected as a whole, as
// before: container map keys (which Document cannot order), nesting deeper than
// 64, and a repeated key that hipguard reads (in the root, kernel or argument
// maps; Document rejected every repeated key).
class MetadataReader {
 public:
  // kernel_budget: how many more kernels the code object may keep (kMaxKernelsPerCodeObject in all).
  static NoteDoc read(llvm::StringRef blob, uint64_t kernel_budget) {
    MetadataReader reader(blob.size(), kernel_budget);
    llvm::msgpack::Reader r(llvm::MemoryBufferRef(blob, "NT_AMDGPU_METADATA"));
    NoteDoc out;
    out.valid = reader.read_root(r, out) == Validity::Valid;
    return out;
  }

 private:
  MetadataReader(uint64_t blob_size, uint64_t kernel_budget) : blob_size_(blob_size), kernel_budget_(kernel_budget) {}
  enum class Validity { Valid, Invalid };  // of the whole document: an invalid one is rejected
  using Obj = llvm::msgpack::Object;
  using Type = llvm::msgpack::Type;
  using Out = NoteDoc;
  static constexpr int kMaxDepth = 64;

  // Keeps a finding while there is room; counts the rest (the log of a
  // document with a million broken kernels stays a hundred lines long).
  static void note(Out& out, CodeObjectIssue i) {
    if (out.issues.size() < kMaxIssuesPerCodeObject) {
      out.issues.push_back(std::move(i));
      return;
    }
    ++out.dropped;
    out.dropped_severity = std::max(out.dropped_severity, issue_severity(i));
  }

  // A document of n bytes holds at most n objects: a container claiming more
  // elements is malformed (checked before any element is read).
  bool claims_too_many(const Obj& o) const { return o.Length > blob_size_; }

  // Next object; false when the reader fails or the blob ends mid-document.
  static bool next(llvm::msgpack::Reader& r, Obj& o) {
    auto got = r.read(o);
    if (!got) {
      llvm::consumeError(got.takeError());  // the callers treat a failed read as a document ending early
      return false;
    }
    return *got;
  }

  // Reads the body of `o` (already read) to its end. Inlined: most values are
  // scalars, which have no body (a call for each cost ~2 % of `hipguard check`).
  [[gnu::always_inline]] static bool skip(llvm::msgpack::Reader& r, const Obj& o, int depth) {
    if (depth > kMaxDepth) return false;
    return (o.Kind != Type::Array && o.Kind != Type::Map) || skip_container(r, o, depth);
  }

  [[gnu::noinline]] static bool skip_container(llvm::msgpack::Reader& r, const Obj& o, int depth) {
    if (o.Kind == Type::Array) {
      for (size_t i = 0; i < o.Length; ++i) {
        Obj e;
        if (!next(r, e) || !skip(r, e, depth + 1)) return false;
      }
    } else if (o.Kind == Type::Map) {
      for (size_t i = 0; i < o.Length; ++i) {
        llvm::StringRef unused;
        if (!key(r, unused)) return false;
        Obj v;
        if (!next(r, v) || !skip(r, v, depth + 1)) return false;
      }
    }
    return true;
  }

  // A map key: read and checked to be a scalar (a scalar has no body to skip);
  // its string form, empty for non-strings, which match no known key.
  static bool key(llvm::msgpack::Reader& r, llvm::StringRef& out) {
    Obj k;
    if (!next(r, k) || k.Kind == Type::Array || k.Kind == Type::Map) return false;
    out = k.Kind == Type::String ? k.Raw : llvm::StringRef();
    return true;
  }

  // One map entry: its key (empty unless a string; views the document, compared
  // inline, length first) and its value, read but not skipped.
  static bool entry(llvm::msgpack::Reader& r, std::string_view& key_name, Obj& v) {
    llvm::StringRef k;
    if (!key(r, k) || !next(r, v)) return false;
    key_name = std::string_view(k.data(), k.size());
    return true;
  }

  // UInt or non-negative Int (the metadata verifier accepts both).
  static std::optional<uint64_t> as_uint(const Obj& o) {
    if (o.Kind == Type::UInt) return o.UInt;
    if (o.Kind == Type::Int && o.Int >= 0) return static_cast<uint64_t>(o.Int);
    return std::nullopt;
  }

  // amdhsa.version's elements (integers; anything else makes it no version comgr can compare).
  bool read_version(llvm::msgpack::Reader& r, const Obj& v, Out& out) {
    if (claims_too_many(v)) return false;
    out.has_version_array = true;
    std::vector<uint64_t> version;
    bool ints = true;
    for (size_t j = 0; j < v.Length; ++j) {
      Obj e;
      if (!next(r, e) || !skip(r, e, 2)) return false;
      auto n = as_uint(e);
      if (n && version.size() < 8) version.push_back(*n);
      else ints = false;
    }
    if (ints) out.version = std::move(version);
    return true;
  }

  Validity read_root(llvm::msgpack::Reader& r, Out& out) {
    Obj root;
    if (!next(r, root)) return Validity::Invalid;
    if (root.Kind != Type::Map) return skip(r, root, 0) ? Validity::Valid : Validity::Invalid;  // said by the merge
    out.root_is_map = true;
    bool seen_target = false, seen_kernels = false, kernels_ok = false;
    for (size_t i = 0; i < root.Length; ++i) {
      std::string_view k;
      Obj v;
      if (!entry(r, k, v)) return Validity::Invalid;
      if (k == "amdhsa.target") {
        if (seen_target) return Validity::Invalid;
        seen_target = true;
        if (v.Kind == Type::String) out.target = v.Raw.str();
        if (!skip(r, v, 1)) return Validity::Invalid;
      } else if (k == "amdhsa.version" && v.Kind == Type::Array) {
        if (out.has_version_array) return Validity::Invalid;
        if (!read_version(r, v, out)) return Validity::Invalid;
      } else if (k == "amdhsa.printf") {
        out.has_printf = true;
        if (!skip(r, v, 1)) return Validity::Invalid;
      } else if (k == "amdhsa.kernels") {
        if (seen_kernels) return Validity::Invalid;
        seen_kernels = true;
        if (v.Kind != Type::Array) {
          if (!skip(r, v, 1)) return Validity::Invalid;
          continue;
        }
        if (claims_too_many(v)) return Validity::Invalid;
        kernels_ok = true;
        out.has_kernels_array = true;
        uint64_t keep = std::min<uint64_t>(v.Length, kernel_budget_);
        if (v.Length > keep)
          note(out, {Code::kBudgetExceeded, "",
                     "amdhsa.kernels has " + std::to_string(v.Length) + " entries, over hipguard's limit of " +
                         std::to_string(kMaxKernelsPerCodeObject) + " per code object; " + std::to_string(keep) +
                         " of them are checked, the rest only read",
                     std::nullopt, v.Length + (kMaxKernelsPerCodeObject - kernel_budget_), kMaxKernelsPerCodeObject});
        for (size_t j = 0; j < v.Length; ++j) {
          if (j < keep) {
            if (read_kernel(r, j, out) == Validity::Invalid) return Validity::Invalid;
            continue;
          }
          Obj e;  // past the limit: validated, not kept
          if (!next(r, e) || !skip(r, e, 2)) return Validity::Invalid;
        }
      } else if (!skip(r, v, 1)) {
        return Validity::Invalid;
      }
    }
    if (!seen_kernels)
      // CLR accepts a code object without kernels ("HIP may have binaries with just
      // global variables", devprogram.cpp): only lookups of kernels fail.
      note(out, {Code::kBadMetadata, "", "metadata has no amdhsa.kernels list: the code object holds no kernel",
                 Severity::Warning});
    else if (!kernels_ok) note(out, {Code::kBadMetadata, "", "amdhsa.kernels is not an array"});
    return Validity::Valid;
  }

  // What reading one kernel map gathers before the kernel is judged.
  struct KernelKeys {
    KernelInfo k;
    // Required integer keys (AMDGPUUsage, Code Object V3+ Metadata; MetadataVerifier).
    struct IntKey {
      std::string_view key;
      uint64_t KernelInfo::*field;
      enum { Absent, NotInt, Set } state;
    } required[8] = {
        {".group_segment_fixed_size", &KernelInfo::group_segment_fixed_size, IntKey::Absent},
        {".private_segment_fixed_size", &KernelInfo::private_segment_fixed_size, IntKey::Absent},
        {".kernarg_segment_size", &KernelInfo::kernarg_segment_size, IntKey::Absent},
        {".kernarg_segment_align", &KernelInfo::kernarg_segment_align, IntKey::Absent},
        {".wavefront_size", &KernelInfo::wavefront_size, IntKey::Absent},
        {".sgpr_count", &KernelInfo::sgpr_count, IntKey::Absent},
        {".vgpr_count", &KernelInfo::vgpr_count, IntKey::Absent},
        {".max_flat_workgroup_size", &KernelInfo::max_flat_workgroup_size, IntKey::Absent},
    };
    bool has_name = false, has_symbol = false;
    uint32_t seen = 0;  // bit per optional key, to reject repeats
    std::vector<std::string> arg_missing;
    std::optional<std::string> reqd_issue, args_issue;
    uint64_t too_many_args = 0;
    bool once(unsigned bit) {
      if (seen & (1u << bit)) return false;
      seen |= 1u << bit;
      return true;
    }
  };
  // A key whose value it read to its end (a container's elements included).
  enum class KeyRead { Invalid, Done, SkipValue };

  // amdhsa.kernels[index]: its keys, then the judgement of what they say.
  Validity read_kernel(llvm::msgpack::Reader& r, size_t index, Out& out) {
    constexpr int depth = 2;  // root map -> kernels array -> this map
    std::string label = std::to_string(index);
    label.insert(label.begin(), '#');  // not "#" + ...: a GCC 12 -Wrestrict false positive in Release
    Obj m;
    if (!next(r, m)) return Validity::Invalid;
    if (m.Kind != Type::Map) {
      if (!skip(r, m, depth)) return Validity::Invalid;
      note(out, {Code::kBadKernelMetadata, label, "amdhsa.kernels[" + std::to_string(index) + "] is not a map"});
      return Validity::Valid;
    }
    KernelKeys kk;
    for (size_t i = 0; i < m.Length; ++i) {
      std::string_view key_name;
      Obj v;
      if (!entry(r, key_name, v)) return Validity::Invalid;
      KeyRead got = read_kernel_key(r, key_name, v, depth, kk);
      if (got == KeyRead::Invalid || (got == KeyRead::SkipValue && !skip(r, v, depth + 1))) return Validity::Invalid;
    }
    judge_kernel(std::move(kk), label, out);
    return Validity::Valid;
  }

  // One key of a kernel map and its value `v` (already read).
  KeyRead read_kernel_key(llvm::msgpack::Reader& r, std::string_view key_name, const Obj& v, int depth,
                          KernelKeys& kk) {
    KernelInfo& k = kk.k;
    if (key_name == ".name" || key_name == ".symbol") {
      bool is_name = key_name == ".name";
      if (!kk.once(is_name ? 0 : 1)) return KeyRead::Invalid;
      if (v.Kind == Type::String) {
        (is_name ? k.name : k.symbol) = v.Raw.str();
        (is_name ? kk.has_name : kk.has_symbol) = true;
      }
    } else if (key_name == ".agpr_count") {
      if (!kk.once(2)) return KeyRead::Invalid;
      k.agpr_count = as_uint(v);
    } else if (key_name == ".sgpr_spill_count") {
      if (!kk.once(3)) return KeyRead::Invalid;
      k.sgpr_spill_count = as_uint(v).value_or(0);
    } else if (key_name == ".vgpr_spill_count") {
      if (!kk.once(4)) return KeyRead::Invalid;
      k.vgpr_spill_count = as_uint(v).value_or(0);
    } else if (key_name == ".uses_dynamic_stack") {
      if (!kk.once(5)) return KeyRead::Invalid;
      if (v.Kind == Type::Boolean) k.uses_dynamic_stack = v.Bool;
    } else if (key_name == ".reqd_workgroup_size" && v.Kind == Type::Array) {
      if (!kk.once(6)) return KeyRead::Invalid;
      return read_reqd_workgroup_size(r, v, depth, kk) ? KeyRead::Done : KeyRead::Invalid;
    } else if (key_name == ".args") {
      if (!kk.once(7)) return KeyRead::Invalid;
      if (v.Kind != Type::Array) {
        kk.args_issue = ".args is not an array";
      } else {
        return read_args(r, v, depth, kk) ? KeyRead::Done : KeyRead::Invalid;
      }
    } else {
      for (auto& rk : kk.required) {
        if (key_name != rk.key) continue;
        if (rk.state != KernelKeys::IntKey::Absent) return KeyRead::Invalid;  // repeated key
        auto n = as_uint(v);
        rk.state = n ? KernelKeys::IntKey::Set : KernelKeys::IntKey::NotInt;
        if (n) k.*rk.field = *n;
        break;
      }
    }
    return KeyRead::SkipValue;
  }

  // .reqd_workgroup_size: its elements; anything but 3 integers is an issue, not a failure.
  bool read_reqd_workgroup_size(llvm::msgpack::Reader& r, const Obj& v, int depth, KernelKeys& kk) {
    std::array<uint64_t, 3> dims{};
    bool good = v.Length == 3;
    for (size_t j = 0; j < v.Length; ++j) {
      Obj e;
      if (!next(r, e) || !skip(r, e, depth + 2)) return false;
      auto n = as_uint(e);
      if (!n) good = false;
      else if (j < 3) dims[j] = *n;
    }
    if (good) kk.k.reqd_workgroup_size = dims;
    else kk.reqd_issue = ".reqd_workgroup_size is not an array of 3 integers";
    return true;
  }

  // .args: each argument map up to the budget; past it, validated and not kept.
  bool read_args(llvm::msgpack::Reader& r, const Obj& v, int depth, KernelKeys& kk) {
    if (claims_too_many(v)) return false;
    kk.k.args.reserve(std::min<size_t>(v.Length, 256));  // Length is untrusted: cap the up-front allocation
    for (size_t j = 0; j < v.Length; ++j) {
      if (j < kMaxArgsPerKernel) {
        if (read_arg(r, j, kk.k, kk.arg_missing) == Validity::Invalid) return false;
        continue;
      }
      Obj e;
      if (!next(r, e) || !skip(r, e, depth + 2)) return false;
    }
    if (v.Length > kMaxArgsPerKernel) kk.too_many_args = v.Length;
    return true;
  }

  // The kernel is kept when every required key is there; else an issue says
  // what is missing (never a guess filled in).
  void judge_kernel(KernelKeys&& kk, const std::string& label, Out& out) {
    const KernelInfo& k = kk.k;
    std::string who = !k.name.empty() ? k.name : !k.symbol.empty() ? k.symbol : label;
    if (kk.reqd_issue) note(out, {Code::kBadKernelMetadata, who, *kk.reqd_issue});
    if (kk.args_issue) note(out, {Code::kBadKernelMetadata, who, *kk.args_issue});
    if (kk.too_many_args) {
      // Its kernarg layout cannot be judged from a prefix: the kernel stays unchecked.
      note(out, {Code::kBudgetExceeded, who,
                 ".args has " + std::to_string(kk.too_many_args) + " entries, over hipguard's limit of " +
                     std::to_string(kMaxArgsPerKernel) + " per kernel; the kernel is not checked",
                 std::nullopt, kk.too_many_args, kMaxArgsPerKernel});
      return;
    }
    std::vector<std::string> missing;
    if (!kk.has_name) missing.push_back(".name");
    if (!kk.has_symbol) missing.push_back(".symbol");
    for (auto& rk : kk.required)
      if (rk.state != KernelKeys::IntKey::Set)
        missing.push_back(rk.state == KernelKeys::IntKey::NotInt ? std::string(rk.key) + " (not an integer)"
                                                                 : std::string(rk.key));
    for (auto& a : kk.arg_missing) missing.push_back(std::move(a));
    if (missing.empty()) {
      out.kernels.push_back(std::move(kk.k));
      return;
    }
    std::string list;
    for (auto& s : missing) list += (list.empty() ? "" : ", ") + s;
    // CLR rejects the whole code object without .name, .symbol or a non-zero
    // .max_flat_workgroup_size (devprogram.cpp createKernelMetadataMap, rockernel.cpp
    // postLoad); other keys it takes as 0 (comgr ignores the reader's errors).
    bool fatal = !kk.has_name || !kk.has_symbol;
    for (auto& rk : kk.required)
      fatal = fatal || (rk.state != KernelKeys::IntKey::Set && rk.key == ".max_flat_workgroup_size");
    note(out, {Code::kBadKernelMetadata, who,
               "kernel metadata lacks required " + list +
                   (fatal ? "; the runtime rejects the whole code object"
                          : "; the runtime takes what is missing as 0, hipguard leaves the kernel unchecked"),
               fatal ? Severity::Error : Severity::Warning});
  }

  Validity read_arg(llvm::msgpack::Reader& r, size_t index, KernelInfo& k, std::vector<std::string>& missing) {
    constexpr int depth = 4;  // kernel map -> .args array -> this map
    Obj m;
    if (!next(r, m)) return Validity::Invalid;
    if (m.Kind != Type::Map) {
      if (!skip(r, m, depth)) return Validity::Invalid;
      missing.push_back("argument " + std::to_string(index) + " (not a map)");
      return Validity::Valid;
    }
    KernelArg& arg = k.args.emplace_back();  // built in place; dropped again if incomplete
    bool off = false, size = false, kind = false;
    unsigned seen = 0;  // .offset, .size, .value_kind, .name: a repeated key is rejected
    for (size_t i = 0; i < m.Length; ++i) {
      std::string_view key_name;
      Obj v;
      if (!entry(r, key_name, v)) return Validity::Invalid;
      int bit = key_name == ".offset"       ? 0
                : key_name == ".size"       ? 1
                : key_name == ".value_kind" ? 2
                : key_name == ".name"       ? 3
                                            : -1;
      if (bit >= 0) {
        if (seen & (1u << bit)) return Validity::Invalid;
        seen |= 1u << bit;
        auto n = as_uint(v);
        if (bit == 0 && n) arg.offset = *n, off = true;
        if (bit == 1 && n) arg.size = *n, size = true;
        if (bit == 2 && v.Kind == Type::String) kind = true;
        if (bit == 2 && v.Kind == Type::String) arg.value_kind = v.Raw.str();
        if (bit == 3 && v.Kind == Type::String) arg.name = v.Raw.str();
      }
      if (!skip(r, v, depth + 1)) return Validity::Invalid;
    }
    if (!off || !size || !kind) {
      k.args.pop_back();
      missing.push_back("argument " + std::to_string(index) + " .offset/.size/.value_kind");
      return Validity::Valid;
    }
    return Validity::Valid;
  }

  uint64_t blob_size_ = 0;
  uint64_t kernel_budget_ = 0;
};

// The findings of a note that joins the document, under the code object's cap.
void take_issues(NoteDoc& doc, CodeObject& co) {
  for (auto& i : doc.issues) add_issue(co, std::move(i));
  co.issues_dropped += doc.dropped;
  co.dropped_severity = std::max(co.dropped_severity, doc.dropped_severity);
}

// Whether comgr merges `from` into the document `to`, else why not (HG402, kBadMetadata); `to`
// takes `from`'s printf record first, as comgr's merge does.
Status comgr_merges(const NoteDoc& from, NoteDoc& to) {
  auto refused = [](std::string why) { return ParseError{Code::kBadMetadata, std::move(why)}; };
  if (from.has_printf && to.has_printf) return refused("both notes have amdhsa.printf");
  to.has_printf = to.has_printf || from.has_printf;
  if (!from.has_version_array || !to.has_version_array) return refused("a note has no amdhsa.version array");
  if (!from.version || !to.version || *from.version != *to.version) return refused("its amdhsa.version differs");
  if (!from.has_kernels_array || !to.has_kernels_array) return refused("a note has no amdhsa.kernels array");
  return ok();
}

}  // namespace

// comgr's metadata (what CLR reads, comgr-metadata.cpp getElfMetadataRoot): the
// first note whose root is a map is the document; each later one is merged into
// it (its amdhsa.kernels appended) when mergeNoteRecords allows, else dropped.
void read_metadata_notes(std::span<const std::string_view> descs, CodeObject& co) {
  std::optional<NoteDoc> merged;
  std::vector<std::string> unreadable;  // notes comgr cannot read: dropped, fatal only when none is read
  for (size_t i = 0; i < descs.size(); ++i) {
    NoteDoc doc = MetadataReader::read(
        llvm::StringRef(descs[i].data(), descs[i].size()),
        kMaxKernelsPerCodeObject - std::min<uint64_t>(co.kernels.size(), kMaxKernelsPerCodeObject));
    std::string which =
        descs.size() == 1 ? "NT_AMDGPU_METADATA"
                          : "NT_AMDGPU_METADATA note " + std::to_string(i + 1) + " of " + std::to_string(descs.size());
    if (!doc.valid || !doc.root_is_map) {  // comgr: readFromBlob fails, or mergeNoteRecords refuses a non-map
      unreadable.push_back(which + (doc.valid ? "'s root is not a map" : " is not a valid MessagePack document"));
      continue;
    }
    if (!merged) {
      co.metadata_target = doc.target;
      for (auto& k : doc.kernels) co.kernels.push_back(std::move(k));
      take_issues(doc, co);
      merged = std::move(doc);
      continue;
    }
    if (Status merges = comgr_merges(doc, *merged); !merges) {
      const std::string& why = merges.error().message;
      if (!doc.kernels.empty())
        add_issue(co, {Code::kBadMetadata, "",
                       which + " cannot be merged into the metadata (" + why + "): comgr drops its " +
                           std::to_string(doc.kernels.size()) + " kernels, the runtime cannot launch them",
                       Severity::Warning});
      continue;
    }
    for (auto& k : doc.kernels) co.kernels.push_back(std::move(k));
    take_issues(doc, co);
  }
  // comgr reads the notes it can (processNote fails for one that is not MessagePack, and the
  // others still merge): the metadata is lost only when no note is read at all.
  for (auto& why : unreadable)
    add_issue(co, merged ? CodeObjectIssue{Code::kBadMetadata, "", why + "; comgr drops it", Severity::Warning}
                         : CodeObjectIssue{Code::kBadMetadata, "", std::move(why)});
}

void read_metadata_note(std::string_view desc, CodeObject& co) { read_metadata_notes({&desc, 1}, co); }

}  // namespace hipguard
