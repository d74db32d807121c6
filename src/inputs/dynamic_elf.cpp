// The file layer of the dependency search: objects' dynamic sections read from files
// (format/dynamic_elf.h parses them), paths resolved inside a sysroot, and that sysroot as a FileTree.
#include "inputs/dynamic_elf.h"

#include "hipguard/dependencies.h"
#include "hipguard/inputs.h"
#include "inputs/file_tree.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>

namespace hipguard {
namespace {
constexpr int kMaxSymlinks = 40;  // Linux's MAXSYMLINKS
}  // namespace

ElfInfo read_elf(const std::string& host) {
  auto data = FileData::open(host, kCliMapAbove);
  if (!data) return ElfInfo();
  return read_dynamic_info(data->bytes());
}

std::vector<std::string> split_path(const std::string& p) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::optional<std::vector<std::string>> resolve_inside(
    const std::string& path, const std::function<PathStep(const std::vector<std::string>& components)>& step) {
  std::deque<std::string> todo;
  for (auto& c : split_path(path)) todo.push_back(std::move(c));
  std::vector<std::string> done;  // resolved components below the root
  int links = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      if (!done.empty()) done.pop_back();  // never above the root, as in a chroot
      continue;
    }
    done.push_back(std::move(c));
    PathStep s = step(done);
    if (s.kind == PathStep::Kind::Missing) return std::nullopt;
    if (s.kind == PathStep::Kind::Symlink) {
      done.pop_back();
      if (++links > kMaxSymlinks || s.target.empty()) return std::nullopt;
      if (s.target[0] == '/') done.clear();  // absolute: from the root again
      auto parts = split_path(s.target);
      todo.insert(todo.begin(), parts.begin(), parts.end());
      continue;
    }
    if (!todo.empty() && s.kind != PathStep::Kind::Directory) return std::nullopt;
  }
  return done;
}

std::string resolve_in_root(const std::string& sysroot, const std::string& path) {
  std::string root = sysroot;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty() || root == "/") {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? path : "";
  }
  auto joined = [&](const std::vector<std::string>& components) {
    std::string s = root;
    for (const auto& c : components) s += "/" + c;
    return s;
  };
  auto done = resolve_inside(path, [&](const std::vector<std::string>& components) {
    std::string host = joined(components);
    struct stat st {};
    if (::lstat(host.c_str(), &st) != 0) return PathStep{};
    if (!S_ISLNK(st.st_mode))
      return PathStep{S_ISDIR(st.st_mode) ? PathStep::Kind::Directory : PathStep::Kind::Other, ""};
    std::string target(4096, '\0');
    ssize_t n = ::readlink(host.c_str(), target.data(), target.size());
    if (n <= 0 || static_cast<size_t>(n) >= target.size()) return PathStep{};
    target.resize(static_cast<size_t>(n));
    return PathStep{PathStep::Kind::Symlink, std::move(target)};
  });
  return done ? joined(*done) : "";
}

HostTree::HostTree(const std::string& sysroot) {
  std::error_code ec;
  if (!sysroot.empty()) root_ = std::filesystem::absolute(sysroot, ec).lexically_normal().string();
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();  // so that named files compare with it
  if (root_ == "/") root_.clear();
}

std::optional<FileTree::Found> HostTree::find(const std::string& at) const {
  std::string host = resolve_in_root(root_, at);
  struct stat st {};
  if (host.empty() || ::stat(host.c_str(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
    return std::nullopt;
  std::string inside = root_.empty() ? host : host.substr(std::min(root_.size(), host.size()));
  return Found{host, inside, {st.st_dev, st.st_ino}, S_ISDIR(st.st_mode)};
}

std::vector<std::string> HostTree::list(const std::string& at) const {
  std::vector<std::string> out;
  std::string host = resolve_in_root(root_, at);
  if (DIR* d = host.empty() ? nullptr : opendir(host.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ElfInfo HostTree::elf(const Found& file) const { return read_elf(file.label); }

std::string HostTree::text(const Found& file) const {
  std::ifstream in(file.label, std::ios::binary);
  std::string s(kMaxTreeTextBytes, '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return s;
}

}  // namespace hipguard
