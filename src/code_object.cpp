#include "hipguard/code_object.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/BinaryFormat/MsgPackReader.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/Error.h>

#include <map>
#include <set>

#include "bytes.h"
#include "kernel_checks.h"

#include "hipguard/diagnostic.h"

namespace hipguard {
namespace {

using ELFT = llvm::object::ELF64LE;
using ElfFile = llvm::object::ELFFile<ELFT>;

constexpr uint32_t kMachMask = 0x0ff;         // EF_AMDGPU_MACH
constexpr uint32_t kXnackV4 = 0x300;          // EF_AMDGPU_FEATURE_XNACK_V4
constexpr uint32_t kSrameccV4 = 0xc00;        // EF_AMDGPU_FEATURE_SRAMECC_V4
constexpr uint32_t kXnackV3 = 0x100, kSrameccV3 = 0x200;
constexpr unsigned kNtAmdgpuMetadata = 32;    // NT_AMDGPU_METADATA, owner "AMDGPU"

ParseError elf_error(std::string msg) { return {std::string(code::kMalformedElf), std::move(msg)}; }

Feature v4_feature(uint32_t bits, uint32_t unsupported, uint32_t any, uint32_t off) {
  if (bits == unsupported) return Feature::Unsupported;
  if (bits == any) return Feature::Any;
  if (bits == off) return Feature::Off;
  return Feature::On;
}

// Integer from a msgpack node: UInt or non-negative Int (the verifier accepts both).
std::optional<uint64_t> as_uint(const llvm::msgpack::DocNode& n) {
  if (n.getKind() == llvm::msgpack::Type::UInt) return n.getUInt();
  if (n.getKind() == llvm::msgpack::Type::Int && n.getInt() >= 0) return static_cast<uint64_t>(n.getInt());
  return std::nullopt;
}

// Walks one msgpack object with the streaming reader. llvm::msgpack::Document
// orders map keys with DocNode::operator<, which hits llvm_unreachable for
// map/array keys (MsgPackDocument.h, LLVM 16): such documents, and absurdly
// deep ones, are rejected here before a Document ever sees them.
bool plain_msgpack(llvm::msgpack::Reader& r, int depth) {
  if (depth > 64) return false;
  llvm::msgpack::Object obj;
  auto got = r.read(obj);
  if (!got) {
    llvm::consumeError(got.takeError());
    return false;
  }
  if (!*got) return false;  // truncated
  if (obj.Kind == llvm::msgpack::Type::Array) {
    for (size_t i = 0; i < obj.Length; ++i)
      if (!plain_msgpack(r, depth + 1)) return false;
  } else if (obj.Kind == llvm::msgpack::Type::Map) {
    for (size_t i = 0; i < obj.Length; ++i) {
      llvm::msgpack::Object key;
      auto k = r.read(key);
      if (!k) {
        llvm::consumeError(k.takeError());
        return false;
      }
      if (!*k || key.Kind == llvm::msgpack::Type::Array || key.Kind == llvm::msgpack::Type::Map) return false;
      if (!plain_msgpack(r, depth + 1)) return false;
    }
  }
  return true;
}

class MetadataReader {
 public:
  MetadataReader(CodeObject& co) : co_(co) {}

  void read(llvm::StringRef blob) {
    llvm::msgpack::Reader check(llvm::MemoryBufferRef(blob, "NT_AMDGPU_METADATA"));
    llvm::msgpack::Document doc;
    if (!plain_msgpack(check, 0) || !doc.readFromBlob(blob, /*Multi=*/false)) {
      issue(code::kBadMetadata, "", "NT_AMDGPU_METADATA is not a valid MessagePack document");
      return;
    }
    auto& root = doc.getRoot();
    if (root.getKind() != llvm::msgpack::Type::Map) {
      issue(code::kBadMetadata, "", "metadata root is not a map");
      return;
    }
    auto& map = root.getMap();
    if (auto it = map.find(map.getDocument()->getNode("amdhsa.target")); it != map.end() &&
                                                                         it->second.getKind() == llvm::msgpack::Type::String)
      co_.metadata_target = it->second.getString().str();
    auto kit = map.find(map.getDocument()->getNode("amdhsa.kernels"));
    if (kit == map.end()) {
      issue(code::kBadMetadata, "", "metadata has no amdhsa.kernels list");
      return;
    }
    if (kit->second.getKind() != llvm::msgpack::Type::Array) {
      issue(code::kBadMetadata, "", "amdhsa.kernels is not an array");
      return;
    }
    size_t index = 0;
    for (auto& node : kit->second.getArray()) read_kernel(node, index++);
  }

 private:
  void issue(std::string_view c, std::string kernel, std::string msg) {
    co_.issues.push_back({std::string(c), std::move(kernel), std::move(msg)});
  }

  void read_kernel(llvm::msgpack::DocNode& node, size_t index) {
    std::string label = "#" + std::to_string(index);
    if (node.getKind() != llvm::msgpack::Type::Map) {
      issue(code::kBadKernelMetadata, label, "amdhsa.kernels[" + std::to_string(index) + "] is not a map");
      return;
    }
    auto& m = node.getMap();
    auto get = [&](const char* key) -> llvm::msgpack::DocNode* {
      auto it = m.find(m.getDocument()->getNode(key));
      return it == m.end() ? nullptr : &it->second;
    };
    KernelInfo k;
    auto str = [&](const char* key, std::string& out) {
      auto* n = get(key);
      if (n && n->getKind() == llvm::msgpack::Type::String) {
        out = n->getString().str();
        return true;
      }
      return false;
    };
    std::vector<std::string> missing;
    if (!str(".name", k.name)) missing.push_back(".name");
    if (!str(".symbol", k.symbol)) missing.push_back(".symbol");
    std::string who = !k.name.empty() ? k.name : !k.symbol.empty() ? k.symbol : label;
    // Required integer keys (AMDGPUUsage, Code Object V3+ Metadata; MetadataVerifier).
    struct IntKey {
      const char* key;
      uint64_t* out;
    } required[] = {
        {".group_segment_fixed_size", &k.group_segment_fixed_size},
        {".private_segment_fixed_size", &k.private_segment_fixed_size},
        {".kernarg_segment_size", &k.kernarg_segment_size},
        {".kernarg_segment_align", &k.kernarg_segment_align},
        {".wavefront_size", &k.wavefront_size},
        {".sgpr_count", &k.sgpr_count},
        {".vgpr_count", &k.vgpr_count},
        {".max_flat_workgroup_size", &k.max_flat_workgroup_size},
    };
    for (auto& r : required) {
      auto* n = get(r.key);
      std::optional<uint64_t> v = n ? as_uint(*n) : std::nullopt;
      if (!v) {
        missing.push_back(n ? std::string(r.key) + " (not an integer)" : std::string(r.key));
        continue;
      }
      *r.out = *v;
    }
    if (auto* n = get(".agpr_count")) k.agpr_count = as_uint(*n);
    if (auto* n = get(".sgpr_spill_count")) k.sgpr_spill_count = as_uint(*n).value_or(0);
    if (auto* n = get(".vgpr_spill_count")) k.vgpr_spill_count = as_uint(*n).value_or(0);
    if (auto* n = get(".reqd_workgroup_size"); n && n->getKind() == llvm::msgpack::Type::Array) {
      auto& a = n->getArray();
      if (a.size() == 3 && as_uint(a[0]) && as_uint(a[1]) && as_uint(a[2]))
        k.reqd_workgroup_size = std::array<uint64_t, 3>{*as_uint(a[0]), *as_uint(a[1]), *as_uint(a[2])};
      else
        issue(code::kBadKernelMetadata, who, ".reqd_workgroup_size is not an array of 3 integers");
    }
    if (auto* n = get(".args")) {
      if (n->getKind() != llvm::msgpack::Type::Array) {
        issue(code::kBadKernelMetadata, who, ".args is not an array");
      } else {
        size_t i = 0;
        for (auto& an : n->getArray()) {
          std::string label = "argument " + std::to_string(i++);
          if (an.getKind() != llvm::msgpack::Type::Map) {
            missing.push_back(label + " (not a map)");
            continue;
          }
          auto& am = an.getMap();
          auto aget = [&](const char* key) -> llvm::msgpack::DocNode* {
            auto it = am.find(am.getDocument()->getNode(key));
            return it == am.end() ? nullptr : &it->second;
          };
          KernelArg arg;
          auto* off = aget(".offset");
          auto* size = aget(".size");
          auto* kind = aget(".value_kind");
          if (!off || !as_uint(*off) || !size || !as_uint(*size) || !kind || kind->getKind() != llvm::msgpack::Type::String) {
            missing.push_back(label + " .offset/.size/.value_kind");
            continue;
          }
          arg.offset = *as_uint(*off);
          arg.size = *as_uint(*size);
          arg.value_kind = kind->getString().str();
          if (auto* nm = aget(".name"); nm && nm->getKind() == llvm::msgpack::Type::String) arg.name = nm->getString().str();
          k.args.push_back(std::move(arg));
        }
      }
    }
    if (auto* n = get(".uses_dynamic_stack"); n && n->getKind() == llvm::msgpack::Type::Boolean)
      k.uses_dynamic_stack = n->getBool();
    if (!missing.empty()) {
      // The kernel cannot be judged without these: report it, never fill in guesses.
      std::string list;
      for (auto& s : missing) list += (list.empty() ? "" : ", ") + s;
      issue(code::kBadKernelMetadata, who, "kernel metadata lacks required " + list);
      return;
    }
    co_.kernels.push_back(std::move(k));
  }

  CodeObject& co_;
};

}  // namespace

Result<CodeObject> parse_code_object(Bytes data) {
  llvm::StringRef raw(reinterpret_cast<const char*>(data.data()), data.size());
  if (data.size() < 64 || raw.substr(0, 4) != "\x7f" "ELF") return elf_error("not an ELF file");
  if (data[4] != llvm::ELF::ELFCLASS64 || data[5] != llvm::ELF::ELFDATA2LSB)
    return elf_error("not a 64-bit little-endian ELF (amdgcn code objects are ELFCLASS64, LSB)");
  auto file = ElfFile::create(raw);
  if (!file) return elf_error(llvm::toString(file.takeError()));
  const auto& hdr = file->getHeader();
  if (hdr.e_machine != llvm::ELF::EM_AMDGPU) return elf_error("e_machine is " + std::to_string(hdr.e_machine) + ", not EM_AMDGPU (224)");
  if (hdr.e_ident[llvm::ELF::EI_OSABI] != llvm::ELF::ELFOSABI_AMDGPU_HSA)
    return elf_error("OS ABI is " + std::to_string(hdr.e_ident[llvm::ELF::EI_OSABI]) + ", not ELFOSABI_AMDGPU_HSA (64)");

  // The section header table must lie inside the image before anything else is trusted.
  auto sections = file->sections();
  if (!sections) return elf_error(llvm::toString(sections.takeError()));

  CodeObject co;
  co.version = hdr.e_ident[llvm::ELF::EI_ABIVERSION] + 2u;
  co.e_flags = hdr.e_flags;
  co.mach = hdr.e_flags & kMachMask;
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
    co.target.xnack = v4_feature(co.e_flags & kXnackV4, 0x000, 0x100, 0x200);
    co.target.sramecc = v4_feature(co.e_flags & kSrameccV4, 0x000, 0x400, 0x800);
  } else {
    // v3: single on-bits; "any" is written as "on" (AMDGPUUsage, V2 to V3 Target ID).
    co.target.xnack = co.processor->xnack ? ((co.e_flags & kXnackV3) ? Feature::On : Feature::Off) : Feature::Unsupported;
    co.target.sramecc = co.processor->sramecc ? ((co.e_flags & kSrameccV3) ? Feature::On : Feature::Off) : Feature::Unsupported;
  }
  if (co.version >= 6) co.generic_version = co.e_flags >> 24;
  if (co.version < 4 || co.version > 6)
    co.issues.push_back({std::string(code::kCodeObjectVersion), "",
                         "code object v" + std::to_string(co.version) + " (EI_ABIVERSION " +
                             std::to_string(hdr.e_ident[llvm::ELF::EI_ABIVERSION]) +
                             "); current ROCm loads v4 to v6"});

  // Metadata note(s).
  bool found_metadata = false;
  for (const auto& sec : *sections) {
    if (sec.sh_type != llvm::ELF::SHT_NOTE) continue;
    // LLVM 16's notes_begin adds sh_offset + sh_size unchecked (ELF.h:331): bound it first.
    if (!fits(data, sec.sh_offset, sec.sh_size))
      return elf_error("note section at offset " + std::to_string(sec.sh_offset) + " with " +
                       std::to_string(sec.sh_size) + " bytes lies outside the " + std::to_string(data.size()) +
                       "-byte image");
    llvm::Error err = llvm::Error::success();
    for (auto note : file->notes(sec, err)) {
      if (note.getName() == "AMDGPU" && note.getType() == kNtAmdgpuMetadata && !found_metadata) {
        found_metadata = true;
        MetadataReader(co).read(note.getDescAsStringRef());
      }
    }
    if (err) return elf_error("note section: " + llvm::toString(std::move(err)));
  }
  if (!found_metadata && co.version >= 3)
    co.issues.push_back({std::string(code::kNoMetadata), "", "no NT_AMDGPU_METADATA note: the runtime cannot find any kernel"});

  // Symbols: kernel descriptors ("<kernel>.kd", STT_OBJECT), kernel entry points
  // and device functions (STT_FUNC). .symtab when present, else .dynsym.
  struct Sym {
    uint8_t type;
    uint16_t shndx;
    uint64_t value, size;
  };
  std::map<std::string, Sym> syms;
  const ElfFile::Elf_Shdr* symtab = nullptr;
  for (const auto& sec : *sections)
    if (sec.sh_type == llvm::ELF::SHT_SYMTAB || (!symtab && sec.sh_type == llvm::ELF::SHT_DYNSYM)) symtab = &sec;
  if (symtab) {
    auto list = file->symbols(symtab);
    if (!list) return elf_error("symbol table: " + llvm::toString(list.takeError()));
    auto strtab = file->getStringTableForSymtab(*symtab, *sections);
    if (!strtab) return elf_error("symbol string table: " + llvm::toString(strtab.takeError()));
    for (const auto& sym : *list) {
      if (sym.st_shndx == llvm::ELF::SHN_UNDEF) continue;
      auto name = sym.getName(*strtab);
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      syms[name->str()] = {sym.getType(), sym.st_shndx, sym.st_value, sym.st_size};
    }
  }
  std::set<std::string> entry_names, descriptor_names;
  for (auto& k : co.kernels) {
    entry_names.insert(k.name);
    descriptor_names.insert(k.symbol);
    if (k.symbol.size() > 3 && k.symbol.ends_with(".kd")) entry_names.insert(k.symbol.substr(0, k.symbol.size() - 3));
    auto it = syms.find(k.symbol);
    if (it == syms.end() || it->second.type != llvm::ELF::STT_OBJECT) {
      co.issues.push_back({std::string(code::kDescriptorMissing), k.name,
                           "metadata names kernel descriptor '" + k.symbol + "', but the symbol table has no such object: "
                           "the runtime cannot launch this kernel"});
      continue;
    }
    // Map the descriptor's address to file bytes through its section; every step bounds-checked.
    auto sec = file->getSection(it->second.shndx);
    uint64_t rel = it->second.value - (sec ? (*sec)->sh_addr : 0);
    if (!sec || it->second.value < (*sec)->sh_addr || (*sec)->sh_type == llvm::ELF::SHT_NOBITS ||
        rel > (*sec)->sh_size || (*sec)->sh_size - rel < 64 || !fits(data, (*sec)->sh_offset, (*sec)->sh_size)) {
      if (!sec) llvm::consumeError(sec.takeError());
      co.issues.push_back({std::string(code::kDescriptorMissing), k.name,
                           "kernel descriptor '" + k.symbol + "' lies outside its section or the file"});
      continue;
    }
    Bytes kd = data.subspan((*sec)->sh_offset + rel, 64);
    KernelDescriptor d;
    d.group_segment_fixed_size = read_le<uint32_t>(kd, 0);
    d.private_segment_fixed_size = read_le<uint32_t>(kd, 4);
    d.kernarg_size = read_le<uint32_t>(kd, 8);
    d.kernel_code_entry_byte_offset = read_le<int64_t>(kd, 16);
    d.compute_pgm_rsrc3 = read_le<uint32_t>(kd, 44);
    d.compute_pgm_rsrc1 = read_le<uint32_t>(kd, 48);
    d.compute_pgm_rsrc2 = read_le<uint32_t>(kd, 52);
    d.kernel_code_properties = read_le<uint16_t>(kd, 56);
    d.kernarg_preload = read_le<uint16_t>(kd, 58);
    k.descriptor = d;
  }
  for (const auto& [name, sym] : syms) {
    if (sym.type == llvm::ELF::STT_OBJECT && name.size() > 3 && name.ends_with(".kd") && !descriptor_names.count(name)) {
      co.kernels_without_metadata.push_back(name.substr(0, name.size() - 3));
      co.issues.push_back({std::string(code::kKernelWithoutMetadata), name.substr(0, name.size() - 3),
                           "kernel descriptor '" + name + "' has no entry in amdhsa.kernels: the kernel is not "
                           "launchable (hipguard does not guess its metadata)"});
    }
    if (sym.type == llvm::ELF::STT_FUNC && !entry_names.count(name)) co.device_functions.push_back(name);
  }
  add_structural_kernel_issues(co);
  return co;
}

std::string describe_target(const CodeObject& co) {
  std::string s = co.target.str();
  if (co.generic_version) s += " (generic v" + std::to_string(co.generic_version) + ")";
  return s;
}

}  // namespace hipguard
