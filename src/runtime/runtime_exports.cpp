// Reading a HIP runtime's exports and comparing them with the shim's table (runtime_exports.h).
#include "runtime/runtime_exports.h"

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <array>

#include "hipguard/diagnostic.h"

namespace hipguard {

Result<RuntimeExports> read_runtime_exports(const std::string& path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) return ParseError{std::string(code::kUnreadable), path + ": " + buffer.getError().message()};
  auto object = llvm::object::ObjectFile::createELFObjectFile((*buffer)->getMemBufferRef());
  if (!object) return ParseError{std::string(code::kMalformedElf), path + ": " + llvm::toString(object.takeError())};
  const auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(object->get());
  if (!elf) return ParseError{std::string(code::kMalformedElf), path + ": not a 64-bit little-endian ELF"};
  auto versions = elf->readDynsymVersions();  // one per symbol the iterator below yields, in its order
  if (!versions) return ParseError{std::string(code::kMalformedElf), path + ": " + llvm::toString(versions.takeError())};
  RuntimeExports out;
  size_t i = 0;
  for (const llvm::object::ELFSymbolRef& sym : elf->getDynamicSymbolIterators()) {
    const size_t index = i++;
    auto name = sym.getName();
    auto section = sym.getSection();
    if (!name || !section) {
      llvm::consumeError(name.takeError());  // a symbol that cannot be named is no entry point
      llvm::consumeError(section.takeError());
      continue;
    }
    if (*section == elf->section_end() || name->empty()) continue;  // undefined: an import
    std::string node;
    if (index < versions->size()) {
      node = (*versions)[index].Name;
      if ((*versions)[index].IsVerDef && !node.empty()) out.nodes.insert(node);
    }
    out.symbols.emplace(name->str(), node);
  }
  return out;
}

bool on_a_kernel_path(std::string_view name) {
  static constexpr std::array kPaths = {
      "Launch", "ModuleLoad", "Library", "KernelNode", "GraphAddNode", "NodeSetParams", "ProcAddress",
      "EntryPoint", "ConfigureCall", "CallConfiguration", "SetupArgument", "BeginCapture", "GraphInstantiate",
      "ChildGraph", "GraphClone", "ExecUpdate", "GraphUpload", "GetFunc", "GetKernel", "EnumerateKernels",
      "KernelGet", "LastError", "FuncGetAttribute", "FuncSet", "Occupancy"};
  // Graph nodes of other kinds carry no kernel.
  static constexpr std::array kOtherNodes = {"Memcpy", "Memset", "HostNode", "EventRecord", "EventWait",
                                             "ExternalSemaphore", "MemAlloc", "MemFree", "BatchMemOp"};
  auto has = [&](const char* part) { return name.find(part) != std::string_view::npos; };
  return std::any_of(kPaths.begin(), kPaths.end(), has) && std::none_of(kOtherNodes.begin(), kOtherNodes.end(), has);
}

std::vector<KnownEntryPoint> known_entry_points(const std::vector<TableEntry>& wrapped,
                                                const std::vector<TableEntry>& skipped) {
  // "_Z" <length> <C name> ...: the Itanium mangling of a function at namespace scope.
  auto spells = [](std::string_view mangled, std::string_view c_name) {
    std::string prefix = "_Z" + std::to_string(c_name.size());
    return mangled.substr(0, prefix.size()) == prefix && mangled.substr(prefix.size(), c_name.size()) == c_name;
  };
  std::vector<KnownEntryPoint> out;
  for (const auto& [name, node] : wrapped) {
    std::string_view alternative;
    for (const auto& other : wrapped)
      if (spells(other.first, name) || spells(name, other.first)) alternative = other.first;
    out.push_back({name, node, alternative, /*wrapped=*/true});
  }
  for (const auto& [name, node] : skipped) out.push_back({name, node, {}, /*wrapped=*/false});
  return out;
}

std::vector<Diagnostic> audit_runtime_exports(const RuntimeExports& exports, const std::vector<KnownEntryPoint>& known,
                                              const std::string& path) {
  std::set<std::string_view> placed;
  for (const auto& k : known) placed.insert(k.name);
  std::string unknown, missing;
  size_t n_unknown = 0, n_missing = 0;
  for (const auto& [name, node] : exports.symbols)
    if (on_a_kernel_path(name) && !placed.count(name)) {
      unknown += (n_unknown++ ? ", " : "") + name + (node.empty() ? "" : "@" + node);
    }
  for (const auto& k : known) {
    if (!k.wrapped || !exports.nodes.count(std::string(k.node)) || exports.symbols.count(std::string(k.name))) continue;
    if (!k.alternative.empty() && exports.symbols.count(std::string(k.alternative))) continue;
    missing += (n_missing++ ? ", " : "") + std::string(k.name) + "@" + std::string(k.node);
  }
  std::vector<Diagnostic> out;
  if (n_unknown)
    out.push_back(make_diagnostic(code::kRuntimeEntryPoints, path,
                                  "the HIP runtime exports " + std::to_string(n_unknown) +
                                      " entry point(s) on a kernel's path that this hipguard does not know: " + unknown +
                                      "; kernels loaded, looked up or launched through them are not checked",
                                  "use a hipguard that knows this runtime (interpose/hip_api.def lists what it wraps)"));
  if (n_missing)
    out.push_back(make_diagnostic(code::kRuntimeEntryPoints, path,
                                  "the HIP runtime defines the version node but not " + std::to_string(n_missing) +
                                      " entry point(s) hipguard wraps: " + missing +
                                      "; a call to one returns hipErrorNotSupported, as without hipguard",
                                  "check that this libamdhip64 is the one the program was built for"));
  return out;
}

}  // namespace hipguard

