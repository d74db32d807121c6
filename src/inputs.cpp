#include "hipguard/inputs.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace hipguard {

Result<FileData> FileData::open(const std::string& path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf) return ParseError{std::string(code::kUnreadable), "cannot read " + path + ": " + buf.getError().message()};
  FileData f;
  std::shared_ptr<llvm::MemoryBuffer> owner(std::move(*buf));
  f.bytes_ = Bytes(reinterpret_cast<const uint8_t*>(owner->getBufferStart()), owner->getBufferSize());
  f.owner_ = owner;
  return f;
}

bool FileReport::ok() const {
  for (const auto& d : diagnostics)
    if (d.severity == Severity::Error) return false;
  for (const auto& i : images)
    if (!i.ok()) return false;
  return true;
}

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}


// Finds .hip_fatbin in a host ELF. Returns false when the file is not a
// usable ELF of the host kind.
bool find_fatbin_section(Bytes data, Bytes* section, std::string* error) {
  using ElfFile = llvm::object::ELFFile<llvm::object::ELF64LE>;
  auto file = ElfFile::create(llvm::StringRef(reinterpret_cast<const char*>(data.data()), data.size()));
  if (!file) {
    *error = llvm::toString(file.takeError());
    return false;
  }
  auto sections = file->sections();
  if (!sections) {
    *error = llvm::toString(sections.takeError());
    return false;
  }
  *section = {};
  for (const auto& sec : *sections) {
    auto name = file->getSectionName(sec);
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (*name != ".hip_fatbin") continue;
    auto contents = file->getSectionContents(sec);
    if (!contents) {
      *error = ".hip_fatbin: " + llvm::toString(contents.takeError());
      return false;
    }
    *section = Bytes(contents->data(), contents->size());
    return true;
  }
  return true;
}

}  // namespace

FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, bool explicit_arg) {
  FileReport r;
  r.path = path;
  auto file = FileData::open(path);
  if (!file) {
    r.diagnostics.push_back(make_diagnostic(code::kUnreadable, path, file.error().message, "check the path and permissions"));
    return r;
  }
  Bytes data = file->bytes();
  PayloadKind kind = classify(data);
  if (kind == PayloadKind::CodeObject || kind == PayloadKind::OffloadBundle || kind == PayloadKind::CompressedBundle) {
    r.hip = true;
    r.images.push_back(check_image(data, path, targets));
    return r;
  }
  bool elf = data.size() >= 64 && std::equal(data.begin(), data.begin() + 4, "\x7f" "ELF");
  if (elf && data[4] == 2 && data[5] == 1) {
    Bytes section;
    std::string error;
    if (!find_fatbin_section(data, &section, &error)) {
      if (explicit_arg)
        r.diagnostics.push_back(make_diagnostic(code::kMalformedElf, path, "cannot read the host ELF: " + error,
                                          "the file is damaged; rebuild it"));
      return r;
    }
    if (!section.empty()) {
      r.hip = true;
      auto bundles = split_fatbin_section(section);
      size_t n = 0;
      for (auto& sb : bundles) {
        std::string where = ".hip_fatbin bundle " + std::to_string(++n) + "/" + std::to_string(bundles.size()) + " @" +
                            hex(sb.offset);
        r.images.push_back(check_image(section.subspan(sb.offset), path, targets, bundles.size() > 1 ? where : ""));
      }
      if (bundles.empty())
        r.diagnostics.push_back(make_diagnostic(code::kMalformedBundle, path, ".hip_fatbin holds no offload bundle",
                                          "rebuild the program; its GPU code is missing"));
      return r;
    }
  }
  if (explicit_arg)
    r.diagnostics.push_back(make_diagnostic(code::kNoHipFatbin, path,
                                      "no GPU code: not a code object, not an offload bundle, and no .hip_fatbin section",
                                      "if this program loads its kernels at run time (hipModuleLoad), check those files "
                                      "instead, or run it under 'hipguard run'"));
  return r;
}

std::vector<std::string> expand_paths(const std::vector<std::string>& paths, std::vector<std::string>* missing) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code ec2;
        if (it->is_regular_file(ec2)) found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      out.push_back(p);
    } else if (missing) {
      missing->push_back(p);
    }
  }
  return out;
}

}  // namespace hipguard
