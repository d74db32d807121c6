// The code object reader: ELF header, metadata note, symbols and kernel descriptors into a
// CodeObject. It only reads; the checks (checks/kernel_checks.cpp) judge what it read.
#include "hipguard/code_object.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackReader.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/AMDHSAKernelDescriptor.h>
#include <llvm/Support/Error.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_set>

#include "format/bytes.h"
#include "format/read_code_object.h"

#include "hipguard/diagnostic.h"

namespace hipguard {
namespace {

using ELFT = llvm::object::ELF64LE;
using ElfFile = llvm::object::ELFFile<ELFT>;

namespace ELF = llvm::ELF;
namespace kd = llvm::amdhsa;

// LLVM 16 names bytes 58-59 of the descriptor reserved2 (LLVM 17+: kernarg_preload).
// AMDGPUUsage, Kernel Descriptor, KERNARG_PRELOAD.
constexpr unsigned kKernargPreloadOffset = kd::RESERVED2_OFFSET;
constexpr uint64_t kDescriptorSize = sizeof(kd::kernel_descriptor_t);  // 64 bytes
// The public header tests these bits without LLVM's headers.
static_assert(KernelDescriptor::kWavefrontSize32 == kd::KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32);
static_assert(KernelDescriptor::kUsesDynamicStack == kd::KERNEL_CODE_PROPERTY_USES_DYNAMIC_STACK);

ParseError elf_error(std::string msg) { return {std::string(code::kMalformedElf), std::move(msg)}; }

Feature v4_feature(uint32_t bits, uint32_t unsupported, uint32_t any, uint32_t off) {
  if (bits == unsupported) return Feature::Unsupported;
  if (bits == any) return Feature::Any;
  if (bits == off) return Feature::Off;
  return Feature::On;
}

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
  explicit MetadataReader(CodeObject& co) : co_(co) {}

  void read(llvm::StringRef blob) {
    blob_size_ = blob.size();
    llvm::msgpack::Reader r(llvm::MemoryBufferRef(blob, "NT_AMDGPU_METADATA"));
    Out out;
    if (read_root(r, out) == Validity::Invalid) {
      issue(code::kBadMetadata, "", "NT_AMDGPU_METADATA is not a valid MessagePack document");
      return;
    }
    if (out.target) co_.metadata_target = std::move(out.target);
    for (auto& k : out.kernels) co_.kernels.push_back(std::move(k));
    for (auto& i : out.issues) add_issue(co_, std::move(i));
    co_.issues_dropped += out.dropped;
    co_.dropped_severity = std::max(co_.dropped_severity, out.dropped_severity);
  }

 private:
  enum class Validity { Valid, Invalid };  // of the whole document: an invalid one is rejected
  using Obj = llvm::msgpack::Object;
  using Type = llvm::msgpack::Type;
  static constexpr int kMaxDepth = 64;

  struct Out {
    std::optional<std::string> target;
    std::vector<KernelInfo> kernels;
    std::vector<CodeObjectIssue> issues;  // at most kMaxIssuesPerCodeObject
    uint64_t dropped = 0;
    Severity dropped_severity = Severity::Note;
  };

  void issue(std::string_view c, std::string kernel, std::string msg) {
    add_issue(co_, {std::string(c), std::move(kernel), std::move(msg)});
  }

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
      llvm::consumeError(got.takeError());
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

  // UInt or non-negative Int (the metadata verifier accepts both).
  static std::optional<uint64_t> as_uint(const Obj& o) {
    if (o.Kind == Type::UInt) return o.UInt;
    if (o.Kind == Type::Int && o.Int >= 0) return static_cast<uint64_t>(o.Int);
    return std::nullopt;
  }

  Validity read_root(llvm::msgpack::Reader& r, Out& out) {
    Obj root;
    if (!next(r, root)) return Validity::Invalid;
    if (root.Kind != Type::Map) {
      if (!skip(r, root, 0)) return Validity::Invalid;
      note(out, {std::string(code::kBadMetadata), "", "metadata root is not a map"});
      return Validity::Valid;
    }
    bool seen_target = false, seen_kernels = false, kernels_ok = false;
    for (size_t i = 0; i < root.Length; ++i) {
      llvm::StringRef k;
      if (!key(r, k)) return Validity::Invalid;
      Obj v;
      if (!next(r, v)) return Validity::Invalid;
      if (k == "amdhsa.target") {
        if (seen_target) return Validity::Invalid;
        seen_target = true;
        if (v.Kind == Type::String) out.target = v.Raw.str();
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
        uint64_t keep = std::min<uint64_t>(v.Length, kMaxKernelsPerCodeObject);
        if (v.Length > keep)
          note(out, {std::string(code::kBudgetExceeded), "",
                     "amdhsa.kernels has " + std::to_string(v.Length) + " entries, over hipguard's limit of " +
                         std::to_string(kMaxKernelsPerCodeObject) + " per code object; the first " +
                         std::to_string(keep) + " are checked, the rest only read",
                     std::nullopt, v.Length, kMaxKernelsPerCodeObject});
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
      note(out, {std::string(code::kBadMetadata), "",
                            "metadata has no amdhsa.kernels list: the code object holds no kernel", Severity::Warning});
    else if (!kernels_ok)
      note(out, {std::string(code::kBadMetadata), "", "amdhsa.kernels is not an array"});
    return Validity::Valid;
  }

  Validity read_kernel(llvm::msgpack::Reader& r, size_t index, Out& out) {
    constexpr int depth = 2;  // root map -> kernels array -> this map
    std::string label = "#" + std::to_string(index);
    Obj m;
    if (!next(r, m)) return Validity::Invalid;
    if (m.Kind != Type::Map) {
      if (!skip(r, m, depth)) return Validity::Invalid;
      note(out, {std::string(code::kBadKernelMetadata), label,
                            "amdhsa.kernels[" + std::to_string(index) + "] is not a map"});
      return Validity::Valid;
    }
    // Required integer keys (AMDGPUUsage, Code Object V3+ Metadata; MetadataVerifier).
    KernelInfo k;
    struct IntKey {
      const char* key;
      uint64_t* out;
      enum { Absent, NotInt, Set } state;
    } required[] = {
        {".group_segment_fixed_size", &k.group_segment_fixed_size, IntKey::Absent},
        {".private_segment_fixed_size", &k.private_segment_fixed_size, IntKey::Absent},
        {".kernarg_segment_size", &k.kernarg_segment_size, IntKey::Absent},
        {".kernarg_segment_align", &k.kernarg_segment_align, IntKey::Absent},
        {".wavefront_size", &k.wavefront_size, IntKey::Absent},
        {".sgpr_count", &k.sgpr_count, IntKey::Absent},
        {".vgpr_count", &k.vgpr_count, IntKey::Absent},
        {".max_flat_workgroup_size", &k.max_flat_workgroup_size, IntKey::Absent},
    };
    bool has_name = false, has_symbol = false;
    uint32_t seen = 0;  // bit per optional key below, to reject repeats
    std::vector<std::string> arg_missing;
    std::optional<std::string> reqd_issue, args_issue;
    uint64_t too_many_args = 0;
    for (size_t i = 0; i < m.Length; ++i) {
      llvm::StringRef key_name;
      if (!key(r, key_name)) return Validity::Invalid;
      Obj v;
      if (!next(r, v)) return Validity::Invalid;
      auto once = [&](unsigned bit) {
        if (seen & (1u << bit)) return false;
        seen |= 1u << bit;
        return true;
      };
      if (key_name == ".name" || key_name == ".symbol") {
        bool is_name = key_name == ".name";
        if (!once(is_name ? 0 : 1)) return Validity::Invalid;
        if (v.Kind == Type::String) {
          (is_name ? k.name : k.symbol) = v.Raw.str();
          (is_name ? has_name : has_symbol) = true;
        }
      } else if (key_name == ".agpr_count") {
        if (!once(2)) return Validity::Invalid;
        k.agpr_count = as_uint(v);
      } else if (key_name == ".sgpr_spill_count") {
        if (!once(3)) return Validity::Invalid;
        k.sgpr_spill_count = as_uint(v).value_or(0);
      } else if (key_name == ".vgpr_spill_count") {
        if (!once(4)) return Validity::Invalid;
        k.vgpr_spill_count = as_uint(v).value_or(0);
      } else if (key_name == ".uses_dynamic_stack") {
        if (!once(5)) return Validity::Invalid;
        if (v.Kind == Type::Boolean) k.uses_dynamic_stack = v.Bool;
      } else if (key_name == ".reqd_workgroup_size" && v.Kind == Type::Array) {
        if (!once(6)) return Validity::Invalid;
        std::array<uint64_t, 3> dims{};
        bool good = v.Length == 3;
        for (size_t j = 0; j < v.Length; ++j) {
          Obj e;
          if (!next(r, e) || !skip(r, e, depth + 2)) return Validity::Invalid;
          auto n = as_uint(e);
          if (!n) good = false;
          else if (j < 3) dims[j] = *n;
        }
        if (good) k.reqd_workgroup_size = dims;
        else reqd_issue = ".reqd_workgroup_size is not an array of 3 integers";
        continue;  // elements already read
      } else if (key_name == ".args") {
        if (!once(7)) return Validity::Invalid;
        if (v.Kind != Type::Array) {
          args_issue = ".args is not an array";
        } else {
          if (claims_too_many(v)) return Validity::Invalid;
          k.args.reserve(std::min<size_t>(v.Length, 256));  // Length is untrusted: cap the up-front allocation
          for (size_t j = 0; j < v.Length; ++j) {
            if (j < kMaxArgsPerKernel) {
              if (read_arg(r, j, k, arg_missing) == Validity::Invalid) return Validity::Invalid;
              continue;
            }
            Obj e;  // past the limit: validated, not kept
            if (!next(r, e) || !skip(r, e, depth + 2)) return Validity::Invalid;
          }
          if (v.Length > kMaxArgsPerKernel) too_many_args = v.Length;
          continue;  // elements already read
        }
      } else {
        for (auto& rk : required) {
          if (key_name != rk.key) continue;
          if (rk.state != IntKey::Absent) return Validity::Invalid;  // repeated key
          auto n = as_uint(v);
          rk.state = n ? IntKey::Set : IntKey::NotInt;
          if (n) *rk.out = *n;
          break;
        }
      }
      if (!skip(r, v, depth + 1)) return Validity::Invalid;
    }
    std::string who = !k.name.empty() ? k.name : !k.symbol.empty() ? k.symbol : label;
    if (reqd_issue) note(out, {std::string(code::kBadKernelMetadata), who, *reqd_issue});
    if (args_issue) note(out, {std::string(code::kBadKernelMetadata), who, *args_issue});
    if (too_many_args) {
      // Its kernarg layout cannot be judged from a prefix: the kernel stays unchecked.
      note(out, {std::string(code::kBudgetExceeded), who,
                 ".args has " + std::to_string(too_many_args) + " entries, over hipguard's limit of " +
                     std::to_string(kMaxArgsPerKernel) + " per kernel; the kernel is not checked",
                 std::nullopt, too_many_args, kMaxArgsPerKernel});
      return Validity::Valid;
    }
    std::vector<std::string> missing;
    if (!has_name) missing.push_back(".name");
    if (!has_symbol) missing.push_back(".symbol");
    for (auto& rk : required)
      if (rk.state != IntKey::Set)
        missing.push_back(rk.state == IntKey::NotInt ? std::string(rk.key) + " (not an integer)" : std::string(rk.key));
    for (auto& a : arg_missing) missing.push_back(std::move(a));
    if (!missing.empty()) {
      // The kernel cannot be judged without these: report it, never fill in guesses.
      std::string list;
      for (auto& s : missing) list += (list.empty() ? "" : ", ") + s;
      // CLR rejects the whole code object without .name, .symbol or a non-zero
      // .max_flat_workgroup_size (devprogram.cpp createKernelMetadataMap, rockernel.cpp
      // postLoad); other keys it takes as 0 (comgr ignores the reader's errors).
      bool fatal = !has_name || !has_symbol;
      for (auto& rk : required)
        fatal = fatal || (rk.state != IntKey::Set && std::string_view(rk.key) == ".max_flat_workgroup_size");
      note(out, {std::string(code::kBadKernelMetadata), who,
                            "kernel metadata lacks required " + list +
                                (fatal ? "; the runtime rejects the whole code object"
                                       : "; the runtime takes what is missing as 0, hipguard leaves the kernel unchecked"),
                            fatal ? Severity::Error : Severity::Warning});
      return Validity::Valid;
    }
    out.kernels.push_back(std::move(k));
    return Validity::Valid;
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
      llvm::StringRef key_name;
      if (!key(r, key_name)) return Validity::Invalid;
      Obj v;
      if (!next(r, v)) return Validity::Invalid;
      int bit = key_name == ".offset" ? 0 : key_name == ".size" ? 1 : key_name == ".value_kind" ? 2
              : key_name == ".name" ? 3 : -1;
      if (bit >= 0) {
        if (seen & (1u << bit)) return Validity::Invalid;
        seen |= 1u << bit;
        auto n = as_uint(v);
        if (bit == 0 && n) arg.offset = *n, off = true;
        if (bit == 1 && n) arg.size = *n, size = true;
        if (bit == 2 && v.Kind == Type::String) arg.value_kind = v.Raw.str(), kind = true;
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

  CodeObject& co_;
  uint64_t blob_size_ = 0;
};

}  // namespace

namespace {

// The steps of read_code_object, in order; each returns a ParseError when the ELF is unusable.
using Sections = ElfFile::Elf_Shdr_Range;

// The identification the loader checks first: a 64-bit LSB AMDGPU HSA ELF whose sections lie inside the image.
std::optional<ParseError> check_identification(llvm::StringRef raw, Bytes data) {
  if (data.size() < 64 || raw.substr(0, 4) != "\x7f" "ELF") return elf_error("not an ELF file");
  if (data[4] != ELF::ELFCLASS64 || data[5] != ELF::ELFDATA2LSB)
    return elf_error("not a 64-bit little-endian ELF (amdgcn code objects are ELFCLASS64, LSB)");
  return std::nullopt;
}

std::optional<ParseError> check_machine(const ElfFile::Elf_Ehdr& hdr) {
  if (hdr.e_machine != ELF::EM_AMDGPU) return elf_error("e_machine is " + std::to_string(hdr.e_machine) + ", not EM_AMDGPU (224)");
  if (hdr.e_ident[ELF::EI_OSABI] != ELF::ELFOSABI_AMDGPU_HSA)
    return elf_error("OS ABI is " + std::to_string(hdr.e_ident[ELF::EI_OSABI]) + ", not ELFOSABI_AMDGPU_HSA (64)");
  return std::nullopt;
}

// Version, processor and target ID features from the ELF header (AMDGPUUsage, ELF Header).
std::optional<ParseError> read_header(const ElfFile::Elf_Ehdr& hdr, Bytes data, CodeObject& co) {
  co.version = hdr.e_ident[ELF::EI_ABIVERSION] + 2u;
  co.e_flags = hdr.e_flags;
  co.mach = hdr.e_flags & ELF::EF_AMDGPU_MACH;
  co.size = elf_image_size(data).value_or(data.size());
  co.processor = find_processor_by_mach(co.mach);
  if (!co.processor) {
    char hex[16];
    snprintf(hex, sizeof hex, "0x%03x", co.mach);
    return ParseError{std::string(code::kUnknownProcessor),
                      std::string("e_flags processor ") + hex + " is not a processor hipguard knows"};
  }
  co.target.processor = std::string(co.processor->name);
  if (co.version >= 4) {
    co.target.xnack = v4_feature(co.e_flags & ELF::EF_AMDGPU_FEATURE_XNACK_V4, ELF::EF_AMDGPU_FEATURE_XNACK_UNSUPPORTED_V4,
                                 ELF::EF_AMDGPU_FEATURE_XNACK_ANY_V4, ELF::EF_AMDGPU_FEATURE_XNACK_OFF_V4);
    co.target.sramecc = v4_feature(co.e_flags & ELF::EF_AMDGPU_FEATURE_SRAMECC_V4, ELF::EF_AMDGPU_FEATURE_SRAMECC_UNSUPPORTED_V4,
                                   ELF::EF_AMDGPU_FEATURE_SRAMECC_ANY_V4, ELF::EF_AMDGPU_FEATURE_SRAMECC_OFF_V4);
  } else {
    // v3: single on-bits; "any" is written as "on" (AMDGPUUsage, V2 to V3 Target ID).
    auto v3 = [&](bool supported, uint32_t bit) {
      return supported ? ((co.e_flags & bit) ? Feature::On : Feature::Off) : Feature::Unsupported;
    };
    co.target.xnack = v3(co.processor->xnack, ELF::EF_AMDGPU_FEATURE_XNACK_V3);
    co.target.sramecc = v3(co.processor->sramecc, ELF::EF_AMDGPU_FEATURE_SRAMECC_V3);
  }
  // LLVM 17+ EF_AMDGPU_GENERIC_VERSION (bits 24-31, v6). AMDGPUUsage, ELF Header, EF_AMDGPU_GENERIC_VERSION.
  if (co.version >= 6) co.generic_version = co.e_flags >> 24;
  // ROCr's loader takes v2 to v6 (amd_hsa_code.cpp GetCodeObjectVersion,
  // executable.cpp LoadCodeObject); LLVM no longer emits v2/v3.
  if (co.version < 4 || co.version > 6)
    co.issues.push_back({std::string(code::kCodeObjectVersion), "",
                         "code object v" + std::to_string(co.version) + " (EI_ABIVERSION " +
                             std::to_string(hdr.e_ident[ELF::EI_ABIVERSION]) + ")" +
                             (co.version > 6 ? "; the ROCm loader takes v2 to v6 and rejects it"
                                             : "; the ROCm loader still takes it, current compilers emit v4 to v6"),
                         co.version > 6 ? Severity::Error : Severity::Warning});
  return std::nullopt;
}

// The first NT_AMDGPU_METADATA note of any SHT_NOTE section, read into co.kernels.
std::optional<ParseError> read_metadata_notes(const ElfFile& file, Sections sections, Bytes data, CodeObject& co) {
  bool found_metadata = false;
  for (const auto& sec : sections) {
    if (sec.sh_type != ELF::SHT_NOTE) continue;
    // LLVM 16's notes_begin adds sh_offset + sh_size unchecked (ELF.h:331): bound it first.
    if (!fits(data, sec.sh_offset, sec.sh_size))
      return elf_error("note section at offset " + std::to_string(sec.sh_offset) + " with " +
                       std::to_string(sec.sh_size) + " bytes lies outside the " + std::to_string(data.size()) +
                       "-byte image");
    llvm::Error err = llvm::Error::success();
    for (auto note : file.notes(sec, err)) {
      if (note.getName() == "AMDGPU" && note.getType() == ELF::NT_AMDGPU_METADATA && !found_metadata) {
        found_metadata = true;
        read_metadata_note(note.getDescAsStringRef(), co);
      }
    }
    if (err) return elf_error("note section: " + llvm::toString(std::move(err)));
  }
  if (!found_metadata && co.version >= 3)
    co.issues.push_back({std::string(code::kNoMetadata), "", "no NT_AMDGPU_METADATA note: the runtime cannot find any kernel"});
  return std::nullopt;
}

struct Sym {
  uint8_t type;
  uint16_t shndx;
  uint64_t value, size;
};
// Names are views into the string table; sorted by name, one entry per name.
using SymbolTable = std::vector<std::pair<llvm::StringRef, Sym>>;

// Defined symbols of .symtab when present, else .dynsym: kernel descriptors
// ("<kernel>.kd", STT_OBJECT), kernel entry points and device functions (STT_FUNC).
std::optional<ParseError> read_symbols(const ElfFile& file, Sections sections, SymbolTable& syms) {
  const ElfFile::Elf_Shdr* symtab = nullptr;
  for (const auto& sec : sections)
    if (sec.sh_type == ELF::SHT_SYMTAB || (!symtab && sec.sh_type == ELF::SHT_DYNSYM)) symtab = &sec;
  if (symtab) {
    auto list = file.symbols(symtab);
    if (!list) return elf_error("symbol table: " + llvm::toString(list.takeError()));
    auto strtab = file.getStringTableForSymtab(*symtab, sections);
    if (!strtab) return elf_error("symbol string table: " + llvm::toString(strtab.takeError()));
    for (const auto& sym : *list) {
      if (sym.st_shndx == ELF::SHN_UNDEF) continue;
      auto name = sym.getName(*strtab);
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      syms.push_back({*name, {sym.getType(), sym.st_shndx, sym.st_value, sym.st_size}});
    }
  }
  // The last of equal names kept (what a std::map assigned in order held, without a string each).
  auto by_name = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(syms.begin(), syms.end(), by_name);
  size_t out = 0;
  for (size_t i = 0; i < syms.size(); ++i) {
    if (i + 1 < syms.size() && syms[i + 1].first == syms[i].first) continue;  // a later one of the same name wins
    syms[out++] = syms[i];
  }
  syms.resize(out);
  return std::nullopt;
}

const Sym* find_symbol(const SymbolTable& syms, llvm::StringRef name) {
  auto it = std::lower_bound(syms.begin(), syms.end(), name, [](const auto& e, llvm::StringRef n) { return e.first < n; });
  return it != syms.end() && it->first == name ? &it->second : nullptr;
}

// The fields the checks use, at the offsets of amdhsa::kernel_descriptor_t (AMDGPUUsage, Kernel Descriptor).
KernelDescriptor decode_descriptor(Bytes b) {
  KernelDescriptor d;
  d.group_segment_fixed_size = read_le<uint32_t>(b, kd::GROUP_SEGMENT_FIXED_SIZE_OFFSET);
  d.private_segment_fixed_size = read_le<uint32_t>(b, kd::PRIVATE_SEGMENT_FIXED_SIZE_OFFSET);
  d.kernarg_size = read_le<uint32_t>(b, kd::KERNARG_SIZE_OFFSET);
  d.kernel_code_entry_byte_offset = read_le<int64_t>(b, kd::KERNEL_CODE_ENTRY_BYTE_OFFSET_OFFSET);
  d.compute_pgm_rsrc3 = read_le<uint32_t>(b, kd::COMPUTE_PGM_RSRC3_OFFSET);
  d.compute_pgm_rsrc1 = read_le<uint32_t>(b, kd::COMPUTE_PGM_RSRC1_OFFSET);
  d.compute_pgm_rsrc2 = read_le<uint32_t>(b, kd::COMPUTE_PGM_RSRC2_OFFSET);
  d.kernel_code_properties = read_le<uint16_t>(b, kd::KERNEL_CODE_PROPERTIES_OFFSET);
  d.kernarg_preload = read_le<uint16_t>(b, kKernargPreloadOffset);
  return d;
}

// Each metadata kernel's descriptor ("<kernel>.kd"): its address mapped to file
// bytes through its section, every step bounds-checked.
void read_descriptors(const ElfFile& file, Bytes data, const SymbolTable& syms, CodeObject& co) {
  for (auto& k : co.kernels) {
    const Sym* found = find_symbol(syms, k.symbol);
    if (!found || found->type != ELF::STT_OBJECT) {
      add_issue(co, {std::string(code::kDescriptorMissing), k.name,
                           "metadata names kernel descriptor '" + k.symbol + "', but the symbol table has no such object: "
                           "the runtime cannot launch this kernel"});
      continue;
    }
    auto sec = file.getSection(found->shndx);
    uint64_t rel = found->value - (sec ? (*sec)->sh_addr : 0);
    if (!sec || found->value < (*sec)->sh_addr || (*sec)->sh_type == ELF::SHT_NOBITS ||
        rel > (*sec)->sh_size || (*sec)->sh_size - rel < kDescriptorSize || !fits(data, (*sec)->sh_offset, (*sec)->sh_size)) {
      if (!sec) llvm::consumeError(sec.takeError());
      add_issue(co, {std::string(code::kDescriptorMissing), k.name,
                           "kernel descriptor '" + k.symbol + "' lies outside its section or the file"});
      continue;
    }
    k.descriptor = decode_descriptor(data.subspan((*sec)->sh_offset + rel, kDescriptorSize));
  }
}

// Symbols the metadata does not name: descriptors without metadata (not
// launchable) and functions that are not kernel entries (device functions).
void list_other_symbols(const SymbolTable& syms, CodeObject& co) {
  std::unordered_set<std::string_view> entry_names, descriptor_names;  // views into co.kernels
  entry_names.reserve(2 * co.kernels.size());
  descriptor_names.reserve(co.kernels.size());
  for (const auto& k : co.kernels) {
    entry_names.insert(k.name);
    descriptor_names.insert(k.symbol);
    if (k.symbol.size() > 3 && k.symbol.ends_with(".kd"))
      entry_names.insert(std::string_view(k.symbol).substr(0, k.symbol.size() - 3));
  }
  for (const auto& [ref, sym] : syms) {
    std::string_view name(ref.data(), ref.size());
    if (sym.type == ELF::STT_OBJECT && name.size() > 3 && name.ends_with(".kd") && !descriptor_names.count(name)) {
      co.kernels_without_metadata.emplace_back(name.substr(0, name.size() - 3));
      add_issue(co, {std::string(code::kKernelWithoutMetadata), std::string(name.substr(0, name.size() - 3)),
                           "kernel descriptor '" + std::string(name) + "' has no entry in amdhsa.kernels: the kernel is not "
                           "launchable (hipguard does not guess its metadata)"});
    }
    if (sym.type == ELF::STT_FUNC && !entry_names.count(name)) co.device_functions.emplace_back(name);
  }
}

}  // namespace

Result<CodeObject> read_code_object(Bytes data) {
  llvm::StringRef raw(reinterpret_cast<const char*>(data.data()), data.size());
  if (auto e = check_identification(raw, data)) return std::move(*e);
  auto file = ElfFile::create(raw);
  if (!file) return elf_error(llvm::toString(file.takeError()));
  if (auto e = check_machine(file->getHeader())) return std::move(*e);
  // The section header table must lie inside the image before anything else is trusted.
  auto sections = file->sections();
  if (!sections) return elf_error(llvm::toString(sections.takeError()));

  CodeObject co;
  if (auto e = read_header(file->getHeader(), data, co)) return std::move(*e);
  if (auto e = read_metadata_notes(*file, *sections, data, co)) return std::move(*e);
  SymbolTable syms;
  if (auto e = read_symbols(*file, *sections, syms)) return std::move(*e);
  read_descriptors(*file, data, syms, co);
  list_other_symbols(syms, co);
  return co;
}

Severity issue_severity(const CodeObjectIssue& i) {
  if (i.severity) return *i.severity;
  const CodeInfo* info = find_code(i.code);
  return info ? info->severity : Severity::Error;
}

void add_issue(CodeObject& co, CodeObjectIssue issue) {
  if (co.issues.size() < kMaxIssuesPerCodeObject) {
    co.issues.push_back(std::move(issue));
    return;
  }
  ++co.issues_dropped;
  co.dropped_severity = std::max(co.dropped_severity, issue_severity(issue));
}

void read_metadata_note(std::string_view desc, CodeObject& co) {
  MetadataReader(co).read(llvm::StringRef(desc.data(), desc.size()));
}

std::string describe_target(const CodeObject& co) {
  std::string s = co.target.str();
  if (co.generic_version) s += " (generic v" + std::to_string(co.generic_version) + ")";
  return s;
}

}  // namespace hipguard
