// The code object reader: ELF header, metadata note (metadata.cpp), symbols and kernel descriptors
// into a CodeObject. It only reads; the checks (checks/kernel_checks.cpp) judge what it read.
#include "hipguard/code_object.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/AMDHSAKernelDescriptor.h>
#include <llvm/Support/Error.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_set>

#include "format/bytes.h"
#include "format/name_hash.h"
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

ParseError elf_error(std::string msg) { return {Code::kMalformedElf, std::move(msg)}; }

Feature v4_feature(uint32_t bits, uint32_t unsupported, uint32_t any, uint32_t off) {
  if (bits == unsupported) return Feature::Unsupported;
  if (bits == any) return Feature::Any;
  if (bits == off) return Feature::Off;
  return Feature::On;
}

// The steps of read_code_object, in order; each returns a ParseError when the ELF is unusable.
using Sections = ElfFile::Elf_Shdr_Range;

// The identification the loader checks first: a 64-bit LSB AMDGPU HSA ELF whose sections lie inside the image.
std::optional<ParseError> check_identification(llvm::StringRef raw, Bytes data) {
  if (data.size() < 64 || raw.substr(0, 4) !=
                              "\x7f"
                              "ELF")
    return elf_error("not an ELF file");
  if (data[4] != ELF::ELFCLASS64 || data[5] != ELF::ELFDATA2LSB)
    return elf_error("not a 64-bit little-endian ELF (amdgcn code objects are ELFCLASS64, LSB)");
  return std::nullopt;
}

std::optional<ParseError> check_machine(const ElfFile::Elf_Ehdr& hdr) {
  if (hdr.e_machine != ELF::EM_AMDGPU)
    return elf_error("e_machine is " + std::to_string(hdr.e_machine) + ", not EM_AMDGPU (224)");
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
    return ParseError{Code::kUnknownProcessor,
                      std::string("e_flags processor ") + hex + " is not a processor hipguard knows"};
  }
  co.target.processor = std::string(co.processor->name);
  if (co.version >= 4) {
    co.target.xnack =
        v4_feature(co.e_flags & ELF::EF_AMDGPU_FEATURE_XNACK_V4, ELF::EF_AMDGPU_FEATURE_XNACK_UNSUPPORTED_V4,
                   ELF::EF_AMDGPU_FEATURE_XNACK_ANY_V4, ELF::EF_AMDGPU_FEATURE_XNACK_OFF_V4);
    co.target.sramecc =
        v4_feature(co.e_flags & ELF::EF_AMDGPU_FEATURE_SRAMECC_V4, ELF::EF_AMDGPU_FEATURE_SRAMECC_UNSUPPORTED_V4,
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
    co.issues.push_back({Code::kCodeObjectVersion, "",
                         "code object v" + std::to_string(co.version) + " (EI_ABIVERSION " +
                             std::to_string(hdr.e_ident[ELF::EI_ABIVERSION]) + ")" +
                             (co.version > 6 ? "; the ROCm loader takes v2 to v6 and rejects it"
                                             : "; the ROCm loader still takes it, current compilers emit v4 to v6"),
                         co.version > 6 ? Severity::Error : Severity::Warning});
  return std::nullopt;
}

// Every NT_AMDGPU_METADATA note of the SHT_NOTE sections, merged into
// co.kernels as comgr merges them (or, with read false, only looked for).
std::optional<ParseError> read_notes(const ElfFile& file, Sections sections, Bytes data, bool read, CodeObject& co) {
  std::vector<std::string_view> descs;  // views into `data`
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
      if (note.getName() != "AMDGPU" || note.getType() != ELF::NT_AMDGPU_METADATA) continue;
      found_metadata = true;
      if (!read) continue;
      llvm::StringRef desc = note.getDescAsStringRef();
      descs.emplace_back(desc.data(), desc.size());
    }
    if (err) return elf_error("note section: " + llvm::toString(std::move(err)));
  }
  if (read && !descs.empty()) read_metadata_notes(descs, co);
  if (!found_metadata && co.version >= 3)
    co.issues.push_back({Code::kNoMetadata, "", "no NT_AMDGPU_METADATA note: the runtime cannot find any kernel"});
  return std::nullopt;
}

struct Sym {
  uint8_t type;
  uint16_t shndx;
  uint64_t value, size;
};
// Names are views into the string table; sorted by name, one entry per name.
using SymbolTable = std::vector<std::pair<llvm::StringRef, Sym>>;

bool is_descriptor(std::string_view name, const Sym& sym) {
  return sym.type == ELF::STT_OBJECT && name.size() > 3 && name.ends_with(".kd");
}

// Defined STT_OBJECT and STT_FUNC symbols of .symtab when present, else
// .dynsym: kernel descriptors ("<kernel>.kd", STT_OBJECT), kernel entry points
// and device functions (STT_FUNC); with descriptors_only, the kernel
// descriptors only. In file order; by_name sorts them. A symbol of another
// type is not kept, so it does not hide one of the same name.
std::optional<ParseError> read_symbols(const ElfFile& file, Sections sections, bool descriptors_only,
                                       SymbolTable& syms) {
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
      // Only descriptors (STT_OBJECT) and functions (STT_FUNC) are used: the
      // rest (a Tensile object's 430k local labels, STT_NOTYPE) are skipped
      // before their name is looked up (a strlen in the string table, whose
      // pages then stay resident) and kept nowhere.
      uint8_t type = sym.getType();
      if (type != ELF::STT_OBJECT && (descriptors_only || type != ELF::STT_FUNC)) continue;
      auto name = sym.getName(*strtab);
      if (!name) {
        llvm::consumeError(name.takeError());  // a symbol without a readable name cannot be looked up: skipped
        continue;
      }
      Sym s{type, sym.st_shndx, sym.st_value, sym.st_size};
      if (!descriptors_only || is_descriptor(std::string_view(name->data(), name->size()), s))
        syms.push_back({*name, s});
    }
  }
  return std::nullopt;
}

// Sorted by name, the last of equal names kept (what a std::map assigned in
// order held, without a string each).
void by_name(SymbolTable& syms) {
  std::stable_sort(syms.begin(), syms.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t out = 0;
  for (size_t i = 0; i < syms.size(); ++i) {
    if (i + 1 < syms.size() && syms[i + 1].first == syms[i].first) continue;  // a later one of the same name wins
    syms[out++] = syms[i];
  }
  syms.resize(out);
}

// One entry per name, the last of equal names kept as by_name keeps it, in
// the order names first appear: no sort. For the descriptors-only read of the
// registration check, whose kernels are looked up by name (HG409's index) and
// whose findings stop nothing unconfirmed (the check in full orders them):
// sorting a library's 13.8 k long mangled names cost it more than reading them.
void last_of_each_name(SymbolTable& syms) {
  llvm::DenseMap<llvm::StringRef, size_t, NameHash> slot;  // name -> its entry in the result
  slot.reserve(syms.size());
  size_t out = 0;
  for (size_t i = 0; i < syms.size(); ++i) {
    auto [it, fresh] = slot.try_emplace(syms[i].first, out);
    syms[fresh ? out++ : it->second] = syms[i];
  }
  syms.resize(out);
}

const Sym* find_symbol(const SymbolTable& syms, llvm::StringRef name) {
  auto it =
      std::lower_bound(syms.begin(), syms.end(), name, [](const auto& e, llvm::StringRef n) { return e.first < n; });
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

// The descriptor at symbol `sym`: its address mapped to file bytes through its
// section, every step bounds-checked; nullopt when it lies outside either.
// `sections` is the section header table read once (ElfFile::getSection reads and checks it again each call).
std::optional<KernelDescriptor> descriptor_at(Sections sections, Bytes data, const Sym& sym) {
  if (sym.shndx >= sections.size()) return std::nullopt;
  const auto& h = sections[sym.shndx];
  uint64_t rel = sym.value - h.sh_addr;
  if (sym.value < h.sh_addr || h.sh_type == ELF::SHT_NOBITS || rel > h.sh_size || h.sh_size - rel < kDescriptorSize ||
      !fits(data, h.sh_offset, h.sh_size))
    return std::nullopt;
  return decode_descriptor(data.subspan(h.sh_offset + rel, kDescriptorSize));
}

void descriptor_outside(CodeObject& co, const KernelInfo& k) {
  add_issue(co, {Code::kDescriptorMissing, k.name,
                 "kernel descriptor '" + k.symbol + "' lies outside its section or the file"});
}

// Each metadata kernel's descriptor ("<kernel>.kd").
void read_descriptors(Sections sections, Bytes data, const SymbolTable& syms, CodeObject& co) {
  for (auto& k : co.kernels) {
    const Sym* found = find_symbol(syms, k.symbol);
    if (!found || found->type != ELF::STT_OBJECT) {
      add_issue(co, {Code::kDescriptorMissing, k.name,
                     "metadata names kernel descriptor '" + k.symbol +
                         "', but the symbol table has no such object: "
                         "the runtime cannot launch this kernel"});
      continue;
    }
    k.descriptor = descriptor_at(sections, data, *found);
    if (!k.descriptor) descriptor_outside(co, k);
  }
}

// Without the metadata (Depth::Descriptors): the kernels are the descriptor
// objects ("<name>.kd", as ROCr's loader finds them), with no metadata fields.
// `syms` holds descriptors only, in file order. With only_lds_over, only
// those whose descriptor declares more static LDS are kept (one outside its
// section is not: the full parse says so only for kernels the metadata
// names), sorted by name; when none is, no name is copied. Without, the
// kernels are in no particular order (last_of_each_name).
void kernels_from_descriptors(Sections sections, Bytes data, SymbolTable& syms, uint64_t only_lds_over,
                              CodeObject& co) {
  auto kept = [&](const std::optional<KernelDescriptor>& d) {
    return !only_lds_over || (d && d->group_segment_fixed_size > only_lds_over);
  };
  if (only_lds_over && std::none_of(syms.begin(), syms.end(),
                                    [&](const auto& s) { return kept(descriptor_at(sections, data, s.second)); }))
    return;
  if (only_lds_over) by_name(syms);
  else last_of_each_name(syms);
  if (!only_lds_over) co.kernels.reserve(syms.size());  // no KernelInfo moved on growth
  for (const auto& [ref, sym] : syms) {
    std::optional<KernelDescriptor> d = descriptor_at(sections, data, sym);
    if (!kept(d)) continue;
    std::string_view name(ref.data(), ref.size());
    KernelInfo& k = co.kernels.emplace_back();
    // Constructed and moved in: assigning a view goes through std::string::_M_replace (13.8 k kernels for rocSOLVER).
    k.symbol = std::string(name);
    k.name = std::string(name.substr(0, name.size() - 3));
    k.descriptor = d;
    if (!k.descriptor) descriptor_outside(co, k);
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
    if (is_descriptor(name, sym) && !descriptor_names.count(name)) {
      co.kernels_without_metadata.emplace_back(name.substr(0, name.size() - 3));
      add_issue(co, {Code::kKernelWithoutMetadata, std::string(name.substr(0, name.size() - 3)),
                     "kernel descriptor '" + std::string(name) +
                         "' has no entry in amdhsa.kernels: the kernel is not "
                         "launchable (hipguard does not guess its metadata)"});
    }
    if (sym.type == ELF::STT_FUNC && !entry_names.count(name)) co.device_functions.emplace_back(name);
  }
}

// The ELF file of `data`, once it is identified as a 64-bit LSB AMDGPU HSA ELF.
Result<ElfFile> open_elf(Bytes data) {
  llvm::StringRef raw(reinterpret_cast<const char*>(data.data()), data.size());
  if (auto e = check_identification(raw, data)) return std::move(*e);
  auto file = ElfFile::create(raw);
  if (!file) return elf_error(llvm::toString(file.takeError()));
  if (auto e = check_machine(file->getHeader())) return std::move(*e);
  return std::move(*file);
}

}  // namespace

Result<CodeObject> read_code_object(Bytes data, bool descriptors_only, uint64_t only_lds_over) {
  Result<ElfFile> file = open_elf(data);
  if (!file) return file.error();
  // The section header table must lie inside the image before anything else is trusted.
  auto sections = file->sections();
  if (!sections) return elf_error(llvm::toString(sections.takeError()));

  CodeObject co;
  if (auto e = read_header(file->getHeader(), data, co)) return std::move(*e);
  if (auto e = read_notes(*file, *sections, data, /*read=*/!descriptors_only, co)) return std::move(*e);
  SymbolTable syms;
  if (auto e = read_symbols(*file, *sections, descriptors_only, syms)) return std::move(*e);
  if (descriptors_only) {
    kernels_from_descriptors(*sections, data, syms, only_lds_over, co);
    return co;
  }
  by_name(syms);
  read_descriptors(*sections, data, syms, co);
  list_other_symbols(syms, co);  // kernels without metadata (a warning) and device functions
  return co;
}

Result<CodeObject> read_code_object_header(Bytes data) {
  Result<ElfFile> file = open_elf(data);
  if (!file) return file.error();
  CodeObject co;
  if (auto e = read_header(file->getHeader(), data, co)) return std::move(*e);
  return co;
}

Severity issue_severity(const CodeObjectIssue& i) {
  if (i.severity) return *i.severity;
  return code_info(i.code).severity;
}

void add_issue(CodeObject& co, CodeObjectIssue issue) {
  if (co.issues.size() < kMaxIssuesPerCodeObject) {
    co.issues.push_back(std::move(issue));
    return;
  }
  ++co.issues_dropped;
  co.dropped_severity = std::max(co.dropped_severity, issue_severity(issue));
}

std::string describe_target(const CodeObject& co) {
  std::string s = co.target.str();
  if (co.generic_version) s += " (generic v" + std::to_string(co.generic_version) + ")";
  return s;
}

}  // namespace hipguard
