// The loaded HIP runtime's exports against the entry points the shim wraps (interpose/hip_api.def):
// a kernel entry point hipguard does not know, or a wrapped one the runtime lacks (HG604, at start).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hipguard/diagnostic.h"
#include "hipguard/result.h"

namespace hipguard {

// What a shared library exports: each defined dynamic symbol with its version node ("" when
// unversioned), and the version nodes it defines (ELF .gnu.version_d; the base entry left out).
// The names are views into `storage`, or, when it is null, into memory that outlives the value (the
// loaded object's own tables: read them while it stays loaded). Two sorted vectors of views: the
// shim reads the runtime's ~525 exports once per process, inside the program's first HIP call.
struct RuntimeExports {
  struct Symbol {
    std::string_view name, node;
    bool operator==(const Symbol&) const = default;
  };
  std::vector<Symbol> symbols;          // ordered after seal() (for node_of); of two with one name, the first
  std::vector<std::string_view> nodes;  // sorted and unique after seal()
  std::shared_ptr<const void> storage;

  // Sorts and drops repeats: call after filling `symbols` and `nodes`, before the lookups below.
  void seal();
  // The node `name` is exported under, or null when it is not exported.
  const std::string_view* node_of(std::string_view name) const;
  bool defines(std::string_view node) const { return std::binary_search(nodes.begin(), nodes.end(), node); }
};

// Reads `path`'s dynamic symbol table and version definitions (LLVM Object). Error HG101 when it
// cannot be read, HG106 when it is no ELF shared object with a dynamic symbol table.
Result<RuntimeExports> read_runtime_exports(const std::string& path);

// Whether an export's name says it loads code, looks up, enumerates, queries or launches a kernel,
// makes or sets a graph kernel node, configures a launch, hands out entry points or reads the last
// error: the exports hip_api.def must place (an HG_API or an HG_SKIP line). The same list is what
// the tests hold the real runtimes to (ShimExports.*).
bool on_a_kernel_path(std::string_view name);

// An entry point of hip_api.def: wrapped (HG_API; `alternative`, when not null, is another spelling
// the shim forwards to when the runtime lacks this one) or not (HG_SKIP).
struct KnownEntryPoint {
  std::string_view name, node, alternative;
  bool wrapped;
};

// The entries of hip_api.def as audit_runtime_exports takes them: `wrapped` (HG_API) and `skipped`
// (HG_SKIP) as (symbol, node) pairs; a C++-spelled entry (_Z24hipExtModuleLaunchKernel...) and the
// entry of its C name are each other's alternative, as the shim forwards one to the other.
using TableEntry = std::pair<std::string_view, std::string_view>;
std::vector<KnownEntryPoint> known_entry_points(const std::vector<TableEntry>& wrapped,
                                                const std::vector<TableEntry>& skipped);

// HG604 warnings (one per kind, naming the symbols): exports on a kernel path that no entry of
// `known` places, and wrapped entry points under a node the runtime defines that it does not export
// (nor their alternative). Empty for the runtimes the tests hold to hip_api.def (ROCm 5.2, HIP 6.4, 7.2).
std::vector<Diagnostic> audit_runtime_exports(const RuntimeExports& exports, const std::vector<KnownEntryPoint>& known,
                                              const std::string& path);

}  // namespace hipguard

namespace hipguard {

// The same read from a loaded object's own memory (dl_iterate_phdr's load bias and program headers):
// PT_DYNAMIC's DT_SYMTAB, DT_STRTAB, DT_GNU_HASH (the symbol count), DT_VERSYM, DT_VERDEF(NUM), which
// the dynamic loader has mapped and checked. Allocates with operator new only (a failure is
// std::bad_alloc, never an abort): what the shim uses inside other processes, where LLVM's own
// allocation failures would abort. Error HG106 when the object has no such tables.
struct LoadedObject {
  uintptr_t base;    // dlpi_addr
  const void* phdr;  // dlpi_phdr (Elf64_Phdr[phnum])
  unsigned phnum;
};
Result<RuntimeExports> read_loaded_exports(const LoadedObject& object);

}  // namespace hipguard
