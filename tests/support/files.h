// Files of test inputs: reading whole files, existence, temporary files and directories.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace hgtest {

namespace fs = std::filesystem;

// The bytes of a file (empty when it cannot be read).
inline std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
// The text of a file (empty when it cannot be read).
inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// stat() succeeds: a file, directory or anything else is there.
inline bool exists(const std::string& p) {
  struct stat st;
  return !p.empty() && stat(p.c_str(), &st) == 0;
}

// A temporary file removed at scope exit.
struct TempFile {
  fs::path path;
  explicit TempFile(const std::vector<uint8_t>& content, std::string_view suffix = ".bin") {
    static int n = 0;
    path = fs::temp_directory_path() /
           ("hipguard_unit_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + std::string(suffix));
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::string str() const { return path.string(); }
};

// A fresh directory (mkdtemp) under the temporary directory, removed with its
// contents at scope exit; `path` is "" when it could not be made.
struct TempDir {
  std::string path;
  explicit TempDir(std::string_view prefix = "hipguard-test") {
    std::string t = fs::temp_directory_path().string() + "/" + std::string(prefix) + "-XXXXXX";
    path = mkdtemp(t.data()) ? t : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace hgtest
