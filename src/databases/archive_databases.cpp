// Kernel databases inside archives and container images: their files kept aside while the archives are
// read, and each archive's databases checked over them as over the same files installed.
#include "databases/archive_databases.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "databases/database_hook.h"

namespace hipguard {
namespace {

bool ends_with(std::string_view s, std::string_view e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}
bool starts_with(std::string_view s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// "usr/lib/./x" -> "usr/lib/x"; "" when a component climbs ("..") or nothing is left.
std::string clean(std::string_view path) {
  std::string out;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") return "";
    out += (out.empty() ? "" : "/") + std::string(part);
  }
  return out;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
}

bool write_at(int fd, Bytes data, uint64_t offset) {
  for (size_t done = 0; done < data.size();) {
    ssize_t n = ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

ArchiveDatabases::ArchiveDatabases(const std::vector<TargetId>& targets) : targets_(targets) {
  side_.wants = [this](const std::string& member) { return wants(member); };
  side_.take = [this](const std::string& member, Bytes data, const Diagnostic* problem) {
    take(member, data, problem);
  };
}

ArchiveDatabases::~ArchiveDatabases() {
  if (spill_map_) ::munmap(const_cast<uint8_t*>(spill_map_), spill_size_);
  if (spill_fd_ >= 0) ::close(spill_fd_);
}

// The files the database checks read (kernel_database.h). The placeholder databases a lazy one names
// are "TensileLibrary_<...>.dat" (Tensile's naming), so every database file is known by its name.
ArchiveReader::Want ArchiveDatabases::wants(const std::string& member) const {
  using Want = ArchiveReader::Want;
  std::string_view name(member);
  size_t cut = name.find_last_of("/!");
  std::string_view base = name.substr(cut == std::string_view::npos ? 0 : cut + 1);
  if (ends_with(base, ".dat")) {
    if (!starts_with(base, "TensileLibrary") && !starts_with(base, "TensileLiteLibrary") &&
        base != "hipblasltExtOpLibrary.dat")
      return Want::Nothing;
    return for_another_processor(base) ? Want::Name : Want::Bytes;
  }
  bool aiter = name.find("/hsa/") != std::string_view::npos || name.find("!hsa/") != std::string_view::npos;
  return ends_with(base, ".csv") && aiter ? Want::Bytes : Want::Nothing;
}

// A Tensile file named after a processor no target has ("..._gfx90a.dat" for gfx942): the target's
// loader never reads it (but a directory listing sees it).
bool ArchiveDatabases::for_another_processor(std::string_view base) const {
  if (targets_.empty()) return false;
  for (size_t at = base.find("gfx"); at != std::string_view::npos; at = base.find("gfx", at + 3)) {
    size_t end = at + 3;
    while (end < base.size() && std::isalnum(static_cast<unsigned char>(base[end]))) ++end;
    std::string processor(base.substr(at, end - at));
    if (!find_processor(processor)) continue;
    bool targeted = false;
    for (const auto& t : targets_) targeted |= t.processor == processor;
    if (!targeted) return true;
  }
  return false;
}

std::string ArchiveDatabases::add(const std::string& member, std::string* root) {
  size_t bang = member.rfind('!');
  if (bang == std::string::npos) return "";
  std::string rel = clean(std::string_view(member).substr(bang + 1));
  if (rel.empty()) return "";
  std::string top = member.substr(0, bang);
  std::string path = top + "/" + rel;
  files_.try_emplace(path);
  for (size_t slash = path.rfind('/'); slash != std::string::npos && slash >= top.size();
       slash = path.rfind('/', slash - 1)) {
    std::string dir = path.substr(0, slash), name = path.substr(slash + 1, path.find('/', slash + 1) - slash - 1);
    children_[dir][name] = path.size() > slash + 1 + name.size();
    if (slash == top.size()) break;
  }
  if (root) *root = top;
  return path;
}

void ArchiveDatabases::take(const std::string& member, Bytes data, const Diagnostic* problem) {
  if (problem) data = Bytes();  // over the member budget: empty, which the check calls unreadable (HG702)
  uint64_t offset = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string root, path = add(member, &root);
    if (path.empty()) return;
    if (std::find(roots_.begin(), roots_.end(), root) == roots_.end()) roots_.push_back(root);
    if (data.empty()) return;
    if (spill_fd_ < 0) {
      llvm::SmallString<128> name;
      if (llvm::sys::fs::createTemporaryFile("hipguard-databases", "bin", spill_fd_, name)) return;
      ::unlink(name.c_str());  // gone with the process, whatever happens to it
    }
    offset = spill_size_;
    spill_size_ += data.size();
    files_[path] = {offset, data.size()};
  }
  if (!write_at(spill_fd_, data, offset)) {
    std::lock_guard<std::mutex> lock(mu_);
    files_[add(member)] = {};  // unwritable: read as empty
  }
}

// As DatabaseHook::observe, for members: the facts of the entries the check parsed; an image with
// none parsed (built for another processor) keeps the targets it is built for, which is all the
// database check says of it.
void ArchiveDatabases::observe(const ImageReport& img) {
  if (!img.location.empty() || img.kind == PayloadKind::Unknown || img.origin.find('!') == std::string::npos) return;
  CodeObjectFacts f;
  for (const auto& c : img.code_objects) f.entries.push_back(facts_of(c.co));
  if (f.entries.empty()) {
    auto add_target = [&](std::string_view target_id, unsigned generic_version) {
      if (auto t = parse_target_id(target_id)) f.entries.push_back({std::move(*t), generic_version, {}});
    };
    if (!img.built_for.empty()) {  // describe_target: "gfx9-4-generic:xnack- (generic v1)"
      std::string_view b(img.built_for);
      size_t v = b.find(" (generic v");
      add_target(b.substr(0, v), v == std::string_view::npos ? 0 : std::atoi(img.built_for.c_str() + v + 11));
    }
    for (const auto& id : img.entry_ids)
      if (BundleEntryId e = parse_entry_id(id); e.is_amdgcn()) add_target(e.target_id, 0);
    if (f.entries.empty()) f.error = "no AMDGPU code object in it";
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::string path = add(img.origin);
  if (!path.empty()) facts_.emplace(path, std::move(f));
}

bool ArchiveDatabases::is_file(const std::string& path) const { return files_.count(path) != 0; }
bool ArchiveDatabases::is_directory(const std::string& path) const { return children_.count(path) != 0; }

std::vector<kdb::DatabaseFiles::Entry> ArchiveDatabases::list(const std::string& dir) const {
  std::vector<Entry> out;
  auto it = children_.find(dir);
  if (it == children_.end()) return out;
  for (const auto& [name, directory] : it->second) out.push_back({name, directory, !directory});
  return out;
}

Result<kdb::FileBytes> ArchiveDatabases::read(const std::string& path, uint64_t limit) const {
  auto it = files_.find(path);
  if (it == files_.end()) return ParseError{Code::kUnreadable, "no such member"};
  if (it->second.size > limit)
    return ParseError{Code::kBudgetExceeded, "larger than " + std::to_string(limit) + " bytes"};
  if (it->second.size == 0) return kdb::FileBytes{};
  if (!spill_map_) return ParseError{Code::kUnreadable, "its copy cannot be read"};
  return kdb::FileBytes{FileData(), Bytes(spill_map_ + it->second.offset, it->second.size)};
}

bool ArchiveDatabases::map_spill() {
  if (spill_map_ || spill_size_ == 0) return true;
  void* p = ::mmap(nullptr, spill_size_, PROT_READ, MAP_PRIVATE, spill_fd_, 0);
  if (p == MAP_FAILED) return false;
  spill_map_ = static_cast<const uint8_t*>(p);
  return true;
}

std::vector<FileReport> ArchiveDatabases::check() {
  std::vector<FileReport> out;
  std::lock_guard<std::mutex> lock(mu_);  // the checking threads are done; taken for the analyzers
  map_spill();
  FactsLookup lookup = [&](const std::string& path) -> const CodeObjectFacts* {
    auto it = facts_.find(path);
    return it == facts_.end() ? nullptr : &it->second;
  };
  for (const auto& root : roots_) {
    for (const auto& db : kdb::find_kernel_databases(*this, root)) {
      kdb::FactsCache cache(lookup, *this);
      DatabaseReport r = kdb::check_kernel_database(db, targets_, cache);
      // "ARCHIVE/usr/lib/x" is the member "ARCHIVE!usr/lib/x".
      auto name = [&](std::string& s) { replace_all(s, root + "/", root + "!"); };
      name(r.path);
      for (auto& d : r.diagnostics) name(d.file), name(d.message), name(d.fix);
      out.push_back(database_file_report(std::move(r)));
    }
  }
  // The trees are in the order the checking threads met their files: reported in path order.
  std::stable_sort(out.begin(), out.end(), [](const FileReport& a, const FileReport& b) { return a.path < b.path; });
  return out;
}

}  // namespace hipguard
