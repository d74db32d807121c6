// Dynamic sections read with LLVM's ELFFile: DT_NEEDED, DT_SONAME, DT_RPATH/DT_RUNPATH, DF_1_NODEFLIB,
// every offset checked against the bytes.
#include "format/dynamic_elf.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/Error.h>

#include <algorithm>
#include <cstring>

namespace hipguard {
namespace {

// A string of the dynamic string table, or false for an offset out of it.
bool dyn_string(const uint8_t* table, uint64_t size, uint64_t offset, std::string* out) {
  if (!table || offset >= size) return false;
  const uint8_t* end = static_cast<const uint8_t*>(memchr(table + offset, 0, size - offset));
  if (!end) return false;
  out->assign(reinterpret_cast<const char*>(table + offset), end - (table + offset));
  return true;
}

void read_dynamic(const llvm::object::ELFFile<llvm::object::ELF64LE>& f, uint64_t size, ElfInfo* info) {
  // LLVM 16's dynamicEntries() takes PT_DYNAMIC as it is: checked here first (in the file, aligned).
  auto phdrs = f.program_headers();
  if (!phdrs) {
    info->error = llvm::toString(phdrs.takeError());
    return;
  }
  for (const auto& ph : *phdrs) {
    if (ph.p_type != llvm::ELF::PT_DYNAMIC) continue;
    if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset || ph.p_offset % alignof(uint64_t) != 0) {
      info->error = "PT_DYNAMIC (offset " + std::to_string(ph.p_offset) + ", " + std::to_string(ph.p_filesz) +
                    " bytes) lies outside the file (" + std::to_string(size) + " bytes) or is misaligned";
      return;
    }
    break;  // the first one is the one dynamicEntries() reads
  }
  auto dyn = f.dynamicEntries();
  if (!dyn) {
    info->error = llvm::toString(dyn.takeError());
    return;
  }
  uint64_t strtab = 0, strsz = 0;
  for (const auto& d : *dyn) {
    if (d.d_tag == llvm::ELF::DT_STRTAB) strtab = d.getVal();
    if (d.d_tag == llvm::ELF::DT_STRSZ) strsz = d.getVal();
    if (d.d_tag == llvm::ELF::DT_FLAGS_1 && (d.getVal() & llvm::ELF::DF_1_NODEFLIB)) info->nodeflib = true;
  }
  if (dyn->empty()) return;  // static: nothing to load
  const uint8_t* table = nullptr;
  if (strtab) {
    auto mapped = f.toMappedAddr(strtab);
    if (!mapped) {
      info->error = "DT_STRTAB: " + llvm::toString(mapped.takeError());
      return;
    }
    table = *mapped;
    uint64_t at = static_cast<uint64_t>(table - f.base());
    strsz = at < size ? std::min(strsz, size - at) : 0;
  }
  for (const auto& d : *dyn) {
    uint64_t tag = d.d_tag;
    if (tag != llvm::ELF::DT_NEEDED && tag != llvm::ELF::DT_SONAME && tag != llvm::ELF::DT_RPATH &&
        tag != llvm::ELF::DT_RUNPATH)
      continue;
    std::string s;
    if (!dyn_string(table, strsz, d.getVal(), &s)) {
      info->error = "a string offset (" + std::to_string(d.getVal()) + ") lies outside the dynamic string table (" +
                    std::to_string(strsz) + " bytes)";
      return;
    }
    if (tag == llvm::ELF::DT_NEEDED && info->needed.size() < kMaxNeeded) info->needed.push_back(std::move(s));
    else if (tag == llvm::ELF::DT_SONAME) info->soname = std::move(s);
    else if (tag == llvm::ELF::DT_RPATH) info->rpath = std::move(s);
    else if (tag == llvm::ELF::DT_RUNPATH) info->runpath = std::move(s), info->has_runpath = true;
  }
  if (info->has_runpath) info->rpath.clear();  // elf/get-dynamic-info.h: RUNPATH hides RPATH
}

}  // namespace

ElfInfo read_dynamic_info(Bytes b) {
  ElfInfo info;
  if (b.size() < 64 ||
      memcmp(b.data(),
             "\x7f"
             "ELF",
             4) != 0 ||
      b[4] != 2 || b[5] != 1)
    return info;
  auto f = llvm::object::ELFFile<llvm::object::ELF64LE>::create(
      llvm::StringRef(reinterpret_cast<const char*>(b.data()), b.size()));
  if (!f) {
    info.error = llvm::toString(f.takeError());
    return info;
  }
  info.elf = true;
  info.machine = f->getHeader().e_machine;
  if (auto sections = f->sections()) {
    for (const auto& s : *sections) {
      auto name = f->getSectionName(s);
      if (name && *name == ".hip_fatbin" && s.sh_type != llvm::ELF::SHT_NOBITS && s.sh_size) info.hip = true;
      if (!name) llvm::consumeError(name.takeError());  // a section without a readable name is not .hip_fatbin
    }
  } else {
    llvm::consumeError(sections.takeError());  // no section table: no .hip_fatbin; the dynamic segment is read below
  }
  read_dynamic(*f, b.size(), &info);
  return info;
}

}  // namespace hipguard
