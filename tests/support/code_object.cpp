// Minimal AMDGPU code objects: the builders declared in code_object.h.
#include "code_object.h"

#include <llvm/BinaryFormat/MsgPackDocument.h>

#include <cstring>

namespace hgtest {

std::string metadata_blob(const CodeObjectSpec& spec) {
  llvm::msgpack::Document doc;
  auto root = doc.getMapNode();
  auto version = doc.getArrayNode();
  version.push_back(doc.getNode(uint64_t(1)));
  version.push_back(doc.getNode(uint64_t(spec.version >= 5 ? spec.version - 3 : 1)));
  root["amdhsa.version"] = version;
  if (!spec.target.empty()) root["amdhsa.target"] = doc.getNode(spec.target, /*Copy=*/true);
  auto kernels = doc.getArrayNode();
  for (const auto& k : spec.kernels) {
    if (!k.metadata) continue;
    auto m = doc.getMapNode();
    auto set = [&](const char* key, llvm::msgpack::DocNode v) {
      if (!k.omit.count(key)) m[key] = v;
    };
    set(".name", doc.getNode(k.name, true));
    set(".symbol", doc.getNode(k.name + ".kd", true));
    set(".group_segment_fixed_size", doc.getNode(k.lds));
    set(".private_segment_fixed_size", doc.getNode(k.private_size));
    set(".kernarg_segment_size", doc.getNode(k.kernarg_size));
    set(".kernarg_segment_align", doc.getNode(k.kernarg_align));
    set(".wavefront_size", doc.getNode(k.wavefront));
    set(".sgpr_count", doc.getNode(k.sgpr));
    set(".vgpr_count", doc.getNode(k.vgpr));
    set(".max_flat_workgroup_size", doc.getNode(k.max_flat));
    if (k.agpr) set(".agpr_count", doc.getNode(*k.agpr));
    set(".uses_dynamic_stack", doc.getNode(k.uses_dynamic_stack));
    if (k.reqd) {
      auto a = doc.getArrayNode();
      for (uint64_t v : *k.reqd) a.push_back(doc.getNode(v));
      set(".reqd_workgroup_size", a);
    }
    auto args = doc.getArrayNode();
    for (const auto& a : k.args) {
      auto am = doc.getMapNode();
      if (!a.name.empty()) am[".name"] = doc.getNode(a.name, true);
      am[".value_kind"] = doc.getNode(a.value_kind, true);
      am[".offset"] = doc.getNode(a.offset);
      am[".size"] = doc.getNode(a.size);
      args.push_back(am);
    }
    set(".args", args);
    kernels.push_back(m);
  }
  root["amdhsa.kernels"] = kernels;
  doc.getRoot() = root;
  std::string blob;
  doc.writeToBlob(blob);
  return blob;
}

namespace {

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0, addr = 0, offset = 0, size = 0, entsize = 0, align = 1;
  uint32_t link = 0, info = 0;
};

uint32_t add_string(std::string& table, const std::string& s) {
  uint32_t off = static_cast<uint32_t>(table.size());
  table += s;
  table += '\0';
  return off;
}

}  // namespace

ByteVec make_code_object(const CodeObjectSpec& spec) {
  ByteVec out(64, 0);  // ELF header, written last
  std::vector<Section> secs(1);

  // .note: namesz, descsz, type, "AMDGPU\0" padded to 4, desc padded to 4 (gABI note layout).
  uint16_t note_index = 0;
  if (spec.note) {
    std::string desc = spec.raw_metadata ? *spec.raw_metadata : metadata_blob(spec);
    pad_to(out, 8);
    Section s{".note", 7 /*SHT_NOTE*/, 2 /*SHF_ALLOC*/};
    s.offset = s.addr = out.size();
    s.align = 4;
    auto note = [&out](const std::string& d) {
      append<uint32_t>(out, 7);
      append<uint32_t>(out, static_cast<uint32_t>(d.size()));
      append<uint32_t>(out, 32);  // NT_AMDGPU_METADATA
      append_str(out, std::string("AMDGPU\0", 7));
      pad_to(out, 4);
      append_str(out, d);
      pad_to(out, 4);
    };
    note(desc);
    for (const auto& d : spec.extra_notes) note(d);
    s.size = out.size() - s.offset;
    note_index = static_cast<uint16_t>(secs.size());
    secs.push_back(s);
  }
  (void)note_index;

  // .rodata: one 64-byte kernel descriptor per kernel (AMDHSAKernelDescriptor.h layout).
  pad_to(out, 64);
  Section rodata{".rodata", 1 /*SHT_PROGBITS*/, 2};
  rodata.offset = rodata.addr = out.size();
  rodata.align = 64;
  std::vector<uint64_t> kd_addr;
  for (const auto& k : spec.kernels) {
    kd_addr.push_back(out.size());
    if (!k.descriptor) continue;
    size_t base = out.size();
    out.resize(base + 64, 0);
    put<uint32_t>(out, base + 0, k.kd_lds.value_or(static_cast<uint32_t>(k.lds)));
    put<uint32_t>(out, base + 4, k.kd_private.value_or(static_cast<uint32_t>(k.private_size)));
    put<uint32_t>(out, base + 8, k.kd_kernarg.value_or(static_cast<uint32_t>(k.kernarg_size)));
    uint16_t props = 0x8;  // ENABLE_SGPR_KERNARG_SEGMENT_PTR
    if (k.wavefront == 32) props |= 1u << 10;
    if (k.uses_dynamic_stack) props |= 1u << 11;
    put<uint16_t>(out, base + 56, k.kd_properties.value_or(props));
  }
  rodata.size = out.size() - rodata.offset;
  uint16_t rodata_index = static_cast<uint16_t>(secs.size());
  secs.push_back(rodata);

  // .text: 256 bytes of s_endpgm-free zeros per function; only the symbols matter.
  pad_to(out, 256);
  Section text{".text", 1, 2 | 4 /*SHF_EXECINSTR*/};
  text.offset = text.addr = out.size();
  text.align = 256;
  std::vector<std::string> funcs;
  for (const auto& k : spec.kernels) funcs.push_back(k.name);
  for (const auto& f : spec.device_functions) funcs.push_back(f);
  out.resize(out.size() + 256 * funcs.size(), 0);
  text.size = out.size() - text.offset;
  uint16_t text_index = static_cast<uint16_t>(secs.size());
  secs.push_back(text);

  // .symtab / .strtab: null symbol, then global symbols.
  std::string strtab(1, '\0');
  ByteVec syms(24, 0);
  auto add_sym = [&](const std::string& name, uint8_t type, uint16_t shndx, uint64_t value, uint64_t size) {
    size_t base = syms.size();
    syms.resize(base + 24, 0);
    put<uint32_t>(syms, base, add_string(strtab, name));
    syms[base + 4] = static_cast<uint8_t>((1 /*STB_GLOBAL*/ << 4) | type);
    syms[base + 5] = 3;  // STV_PROTECTED
    put<uint16_t>(syms, base + 6, shndx);
    put<uint64_t>(syms, base + 8, value);
    put<uint64_t>(syms, base + 16, size);
  };
  for (size_t i = 0; i < spec.kernels.size(); ++i) {
    if (spec.kernels[i].descriptor)
      add_sym(spec.kernels[i].name + ".kd", 1 /*STT_OBJECT*/, rodata_index, kd_addr[i], 64);
  }
  for (size_t i = 0; i < funcs.size(); ++i) add_sym(funcs[i], 2 /*STT_FUNC*/, text_index, text.addr + 256 * i, 256);
  pad_to(out, 8);
  Section symtab{".symtab", 2 /*SHT_SYMTAB*/, 0};
  symtab.offset = out.size();
  symtab.size = syms.size();
  symtab.entsize = 24;
  symtab.align = 8;
  symtab.info = 1;  // first non-local symbol
  out.insert(out.end(), syms.begin(), syms.end());
  uint16_t symtab_index = static_cast<uint16_t>(secs.size());
  secs.push_back(symtab);
  Section str{".strtab", 3 /*SHT_STRTAB*/, 0};
  str.offset = out.size();
  str.size = strtab.size();
  append_str(out, strtab);
  secs[symtab_index].link = static_cast<uint32_t>(secs.size());
  secs.push_back(str);

  // .shstrtab
  std::string shstr(1, '\0');
  std::vector<uint32_t> name_off;
  for (auto& s : secs) name_off.push_back(s.name.empty() ? 0 : add_string(shstr, s.name));
  uint32_t shstr_name = add_string(shstr, ".shstrtab");
  Section sh{".shstrtab", 3, 0};
  sh.offset = out.size();
  sh.size = shstr.size();
  append_str(out, shstr);
  name_off.push_back(shstr_name);
  secs.push_back(sh);

  // Section header table at the end (like lld output).
  pad_to(out, 8);
  uint64_t shoff = out.size();
  for (size_t i = 0; i < secs.size(); ++i) {
    const Section& s = secs[i];
    size_t b = out.size();
    out.resize(b + 64, 0);
    put<uint32_t>(out, b + 0, name_off[i]);
    put<uint32_t>(out, b + 4, s.type);
    put<uint64_t>(out, b + 8, s.flags);
    put<uint64_t>(out, b + 16, s.addr);
    put<uint64_t>(out, b + 24, s.offset);
    put<uint64_t>(out, b + 32, s.size);
    put<uint32_t>(out, b + 40, s.link);
    put<uint32_t>(out, b + 44, s.info);
    put<uint64_t>(out, b + 48, i == 0 ? 0 : s.align);
    put<uint64_t>(out, b + 56, s.entsize);
  }

  // ELF header.
  const uint8_t ident[16] = {0x7f,
                             'E',
                             'L',
                             'F',
                             2 /*ELFCLASS64*/,
                             1 /*LSB*/,
                             1 /*EV_CURRENT*/,
                             spec.osabi,
                             static_cast<uint8_t>(spec.version - 2)};
  std::memcpy(out.data(), ident, 16);
  put<uint16_t>(out, 16, 3);  // ET_DYN
  put<uint16_t>(out, 18, spec.machine);
  put<uint32_t>(out, 20, 1);
  put<uint64_t>(out, 24, 0);  // e_entry
  put<uint64_t>(out, 32, 0);  // e_phoff
  put<uint64_t>(out, 40, shoff);
  put<uint32_t>(out, 48, spec.mach | spec.features | (spec.generic_version << 24));
  put<uint16_t>(out, 52, 64);
  put<uint16_t>(out, 54, 56);
  put<uint16_t>(out, 56, 0);
  put<uint16_t>(out, 58, 64);
  put<uint16_t>(out, 60, static_cast<uint16_t>(secs.size()));
  put<uint16_t>(out, 62, static_cast<uint16_t>(secs.size() - 1));
  return out;
}

// Section header table entries and the ELF header written with append/put;
// the layout of the robustness suite's original builder, byte for byte.
ByteVec make_note_only_code_object(std::string_view metadata, uint32_t e_flags, uint8_t abi_version) {
  ByteVec f(64, 0);
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 64 /*ELFOSABI_AMDGPU_HSA*/, abi_version};
  std::memcpy(f.data(), ident, sizeof ident);
  // Note: namesz, descsz, type, "AMDGPU\0" padded to 4, desc padded to 4.
  uint64_t note_off = f.size();
  append<uint32_t>(f, 7);
  append<uint32_t>(f, static_cast<uint32_t>(metadata.size()));
  append<uint32_t>(f, 32);  // NT_AMDGPU_METADATA
  append_str(f, std::string_view("AMDGPU\0\0", 8));
  append_str(f, metadata);
  pad_to(f, 4);
  uint64_t note_size = f.size() - note_off;
  uint64_t strtab_off = f.size();
  const char strtab[] = "\0.note\0.shstrtab\0";
  f.insert(f.end(), strtab, strtab + sizeof strtab);
  uint64_t strtab_size = sizeof strtab;
  pad_to(f, 8);
  uint64_t shoff = f.size();
  auto shdr = [&](uint32_t name, uint32_t type, uint64_t off, uint64_t size, uint64_t align) {
    append<uint32_t>(f, name);
    append<uint32_t>(f, type);
    append<uint64_t>(f, type == 7 ? 2 /*SHF_ALLOC*/ : 0);
    append<uint64_t>(f, 0);  // addr
    append<uint64_t>(f, off);
    append<uint64_t>(f, size);
    append<uint32_t>(f, 0);  // link
    append<uint32_t>(f, 0);  // info
    append<uint64_t>(f, align);
    append<uint64_t>(f, 0);  // entsize
  };
  shdr(0, 0, 0, 0, 0);
  shdr(1, 7 /*SHT_NOTE*/, note_off, note_size, 4);
  shdr(7, 3 /*SHT_STRTAB*/, strtab_off, strtab_size, 1);
  // ELF header fields.
  put<uint16_t>(f, 16, 3);    // e_type ET_DYN
  put<uint16_t>(f, 18, 224);  // e_machine EM_AMDGPU
  put<uint32_t>(f, 20, 1);    // e_version
  put<uint64_t>(f, 40, shoff);
  put<uint32_t>(f, 48, e_flags);
  put<uint16_t>(f, 52, 64);  // e_ehsize
  put<uint16_t>(f, 54, 56);  // e_phentsize
  put<uint16_t>(f, 58, 64);  // e_shentsize
  put<uint16_t>(f, 60, 3);   // e_shnum
  put<uint16_t>(f, 62, 2);   // e_shstrndx
  return f;
}

}  // namespace hgtest
