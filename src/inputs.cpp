#include "hipguard/inputs.h"

#include "regular_file.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace hipguard {

Result<FileData> FileData::open(const std::string& path, Access access) {
  auto fail = [&](std::string why) { return ParseError{std::string(code::kUnreadable), "cannot read " + path + ": " + why}; };
  struct stat st {};
  std::string why;
  int fd = open_regular_file(path, &st, &why);
  if (fd < 0) return fail(why);
  std::shared_ptr<int> closer(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  uint64_t size = static_cast<uint64_t>(st.st_size);
  FileData f;
  if (size <= kCopyLimit || access == Access::CopyAlways) {
    // Small files are copied with pread: a file that shrinks meanwhile is read
    // short (and checked as such), never a SIGBUS.
    auto copy = std::make_shared<std::vector<uint8_t>>(size);
    uint64_t done = 0;
    while (done < size) {
      ssize_t n = ::pread(fd, copy->data() + done, size - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(strerror(errno));
      if (n == 0) break;  // shrank
      done += static_cast<uint64_t>(n);
    }
    copy->resize(done);
    f.bytes_ = Bytes(copy->data(), copy->size());
    f.owner_ = copy;
    return f;
  }
  // Large files (a 1.3 GB rocSPARSE) are mapped: only the pages the checks touch
  // are read. The CLI turns a SIGBUS from a file truncated meanwhile into a clean error.
  auto buf = llvm::MemoryBuffer::getOpenFile(fd, path, size, /*RequiresNullTerminator=*/false);
  if (!buf) return fail(buf.getError().message());
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

// Every bundle of `data` (a .hip_fatbin section or a file holding one or more
// bundles back to back; `base`: its offset in the file), each an image of `r`.
void check_bundles(Bytes data, uint64_t base, const std::string& path, const std::vector<TargetId>& targets,
                   FileReport& r) {
  auto bundles = split_fatbin_section(data);
  size_t n = 0;
  for (auto& sb : bundles) {
    std::string where = ".hip_fatbin bundle " + std::to_string(++n) + "/" + std::to_string(bundles.size()) + " @" +
                        hex(sb.offset);
    r.images.push_back(check_image(data.subspan(sb.offset), path, targets, bundles.size() > 1 ? where : ""));
    r.images.back().file_offset = base + sb.offset;
  }
}

}  // namespace

FileReport check_file(const std::string& path, const std::vector<TargetId>& targets, bool explicit_arg,
                      FileData::Access access) {
  FileReport r;
  r.path = path;
  auto file = FileData::open(path, access);
  if (!file) {
    r.diagnostics.push_back(make_diagnostic(code::kUnreadable, path, file.error().message, "check the path and permissions"));
    return r;
  }
  Bytes data = file->bytes();
  PayloadKind kind = classify(data);
  if (kind == PayloadKind::CodeObject) {
    r.hip = true;
    r.images.push_back(check_image(data, path, targets));
    return r;
  }
  if (kind == PayloadKind::OffloadBundle || kind == PayloadKind::CompressedBundle) {
    // A bundle file, or a dumped .hip_fatbin section: several bundles back to back.
    r.hip = true;
    check_bundles(data, 0, path, targets, r);
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
      check_bundles(section, static_cast<uint64_t>(section.data() - data.data()), path, targets, r);
      if (r.images.empty())
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

std::vector<std::string> expand_paths(const std::vector<std::string>& paths, std::vector<PathProblem>* problems) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  auto problem = [&](const std::string& path, const std::error_code& ec) {
    if (problems) problems->push_back({path, ec.message()});
  };
  for (const auto& p : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(p, ec);  // follows symlinks; ELOOP, ENAMETOOLONG, EACCES come back in ec
    if (ec || !fs::exists(st)) {
      problem(p, ec ? ec : std::make_error_code(std::errc::no_such_file_or_directory));
      continue;
    }
    if (!fs::is_directory(st)) {
      out.push_back(p);
      continue;
    }
    // Walked by hand: every directory that cannot be read is reported, never skipped silently.
    std::vector<std::string> found;
    std::vector<fs::path> todo{fs::path(p)};
    while (!todo.empty()) {
      fs::path dir = std::move(todo.back());
      todo.pop_back();
      fs::directory_iterator it(dir, ec), end;
      if (ec) {
        problem(dir.string(), ec);
        continue;
      }
      for (; it != end; it.increment(ec)) {
        std::error_code ec2;
        const fs::directory_entry& e = *it;
        if (e.is_symlink(ec2)) {
          // Symlinks to files are followed; symlinked directories are not walked (no loops).
          if (e.is_regular_file(ec2)) found.push_back(e.path().string());
        } else if (e.is_directory(ec2)) {
          todo.push_back(e.path());
        } else if (e.is_regular_file(ec2)) {
          found.push_back(e.path().string());
        }
      }
      if (ec) problem(dir.string(), ec);
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace hipguard
