// Reading a loaded object's exports from its own memory (read_loaded_exports, runtime_exports.h):
// the shim's path, with glibc's <elf.h> types and no LLVM (whose allocation failures abort).
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "runtime/runtime_exports.h"

namespace hipguard {

// DT_GNU_HASH: the number of dynamic symbols is one past the last symbol any hash chain reaches
// (the table has no count of its own; glibc elf/dl-lookup.c walks it the same way).
static size_t gnu_hash_symbol_count(const uint32_t* table) {
  const uint32_t nbuckets = table[0], symoffset = table[1], bloom_words = table[2];
  const uint32_t* buckets = table + 4 + 2 * bloom_words;  // 64-bit bloom words
  const uint32_t* chains = buckets + nbuckets;
  uint32_t last = 0;
  for (uint32_t b = 0; b < nbuckets; ++b) last = std::max(last, buckets[b]);
  if (last < symoffset) return symoffset;
  while (!(chains[last - symoffset] & 1)) ++last;
  return last + 1;
}

Result<RuntimeExports> read_loaded_exports(const LoadedObject& object) {
  const auto* phdr = static_cast<const Elf64_Phdr*>(object.phdr);
  const Elf64_Dyn* dyn = nullptr;
  for (unsigned i = 0; i < object.phnum; ++i)
    if (phdr[i].p_type == PT_DYNAMIC) dyn = reinterpret_cast<const Elf64_Dyn*>(object.base + phdr[i].p_vaddr);
  auto no_tables = [] { return ParseError{Code::kMalformedElf, "no dynamic symbol table"}; };
  if (!dyn) return no_tables();
  // glibc relocates these entries in place on x86-64 (l_info): an address below the base is not yet.
  auto at = [&](uint64_t p) { return p < object.base ? object.base + p : p; };
  const Elf64_Sym* symtab = nullptr;
  const char* strtab = nullptr;
  const uint32_t* gnu_hash = nullptr;
  const uint16_t* versym = nullptr;
  const uint8_t* verdef = nullptr;
  uint64_t verdefnum = 0, strsz = 0;
  for (const Elf64_Dyn* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const Elf64_Sym*>(at(d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(at(d->d_un.d_ptr)); break;
      case DT_STRSZ: strsz = d->d_un.d_val; break;
      case DT_GNU_HASH: gnu_hash = reinterpret_cast<const uint32_t*>(at(d->d_un.d_ptr)); break;
      case DT_VERSYM: versym = reinterpret_cast<const uint16_t*>(at(d->d_un.d_ptr)); break;
      case DT_VERDEF: verdef = reinterpret_cast<const uint8_t*>(at(d->d_un.d_ptr)); break;
      case DT_VERDEFNUM: verdefnum = d->d_un.d_val; break;
      default: break;
    }
  }
  if (!symtab || !strtab || !gnu_hash || !strsz) return no_tables();
  auto name_at = [&](uint64_t off) -> std::string_view {
    if (off >= strsz) return {};
    return std::string_view(strtab + off, strnlen(strtab + off, strsz - off));
  };
  // Version index -> node name, from the definitions (index 1 is the object itself: no node).
  std::vector<std::string_view> node_names;
  const uint8_t* v = verdef;
  for (uint64_t i = 0; v && i < verdefnum; ++i) {
    const auto* def = reinterpret_cast<const Elf64_Verdef*>(v);
    const uint16_t index = def->vd_ndx & 0x7fff;
    if (!(def->vd_flags & VER_FLG_BASE) && def->vd_cnt > 0) {
      if (index >= node_names.size()) node_names.resize(index + 1);
      node_names[index] = name_at(reinterpret_cast<const Elf64_Verdaux*>(v + def->vd_aux)->vda_name);
    }
    if (!def->vd_next) break;
    v += def->vd_next;
  }
  RuntimeExports out;
  const size_t count = gnu_hash_symbol_count(gnu_hash);
  out.symbols.reserve(count);
  std::vector<bool> node_used(node_names.size());
  for (size_t i = 1; i < count; ++i) {
    const Elf64_Sym& sym = symtab[i];
    // An import, or an absolute symbol (each version node has one of its own name): no entry point.
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) continue;
    std::string_view name = name_at(sym.st_name);
    if (name.empty()) continue;
    std::string_view node;
    if (const uint16_t index = versym ? versym[i] & 0x7fff : 0; index < node_names.size()) {
      node = node_names[index];
      node_used[index] = true;
    }
    out.symbols.push_back({name, node});
  }
  // The nodes a defined symbol is exported under, as the file's reader finds them.
  for (size_t index = 0; index < node_names.size(); ++index)
    if (node_used[index] && !node_names[index].empty()) out.nodes.push_back(node_names[index]);
  out.seal();
  return out;
}

}  // namespace hipguard
