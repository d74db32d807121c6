// A runtime's exports read from its file (runtime_exports.h), with LLVM Object's ELFObjectFile. A
// translation unit of its own: the shim reads the loaded runtime's tables (loaded_exports.cpp) and
// never calls this, so linking it does not pull ELFObjectFile, and with it ObjectFile's every
// format, IR and MC, with their static constructors, into every process the shim is preloaded in.
#include "runtime/runtime_exports.h"

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

#include <memory>
#include <set>
#include <string>

#include "hipguard/diagnostic.h"

namespace hipguard {

Result<RuntimeExports> read_runtime_exports(const std::string& path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) return ParseError{Code::kUnreadable, path + ": " + buffer.getError().message()};
  auto object = llvm::object::ObjectFile::createELFObjectFile((*buffer)->getMemBufferRef());
  if (!object) return ParseError{Code::kMalformedElf, path + ": " + llvm::toString(object.takeError())};
  const auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(object->get());
  if (!elf) return ParseError{Code::kMalformedElf, path + ": not a 64-bit little-endian ELF"};
  auto versions = elf->readDynsymVersions();  // one per symbol the iterator below yields, in its order
  if (!versions) return ParseError{Code::kMalformedElf, path + ": " + llvm::toString(versions.takeError())};
  // Symbol names are views into the file's buffer; version names, which LLVM builds, into a set.
  struct Storage {
    std::unique_ptr<llvm::MemoryBuffer> file;
    std::set<std::string, std::less<>> node_names;
  };
  auto storage = std::make_shared<Storage>();
  storage->file = std::move(*buffer);
  RuntimeExports out;
  size_t i = 0;
  for (const llvm::object::ELFSymbolRef& sym : elf->getDynamicSymbolIterators()) {
    const size_t index = i++;
    auto name = sym.getName();
    auto section = sym.getSection();
    if (!name || !section) {
      llvm::consumeError(name.takeError());     // a symbol that cannot be named is no entry point
      llvm::consumeError(section.takeError());  // nor is one whose section cannot be read
      continue;
    }
    if (*section == elf->section_end() || name->empty()) continue;  // undefined: an import
    std::string_view node;
    if (index < versions->size() && !(*versions)[index].Name.empty()) {
      node = *storage->node_names.insert((*versions)[index].Name).first;
      if ((*versions)[index].IsVerDef) out.nodes.push_back(node);
    }
    out.symbols.push_back({std::string_view(name->data(), name->size()), node});
  }
  out.storage = std::move(storage);
  out.seal();
  return out;
}

}  // namespace hipguard
