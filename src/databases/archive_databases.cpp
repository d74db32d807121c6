// Kernel databases inside archives and container images: their files kept aside while the archives are
// read, and each archive's databases checked over them as over the same files installed.
#include "databases/archive_databases.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "databases/database_hook.h"

namespace hipguard {
namespace {

bool ends_with(std::string_view s, std::string_view e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}
bool starts_with(std::string_view s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// `path` ("usr/lib/../lib64/./x") resolved below a root: "usr/lib64/x"; nullopt when it climbs above it.
std::optional<std::string> inside(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part != "..") parts.push_back(part);
    else if (parts.empty()) return std::nullopt;
    else parts.pop_back();
  }
  std::string out;
  for (auto p : parts) out += (out.empty() ? "" : "/") + std::string(p);
  return out;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
}

constexpr int kMaxLinkHops = 8;  // a chain of links longer than this (or a loop) is left unresolved

}  // namespace

ArchiveDatabases::ArchiveDatabases(const std::vector<TargetId>& targets) : targets_(targets) {
  side_.wants = [this](const std::string& member) { return wants(member); };
  side_.take = [this](const std::string& member, Bytes data, const FileData&, const Diagnostic* problem) {
    take(member, data, problem);
  };
  side_.link = [this](const std::string& member, const std::string& target, bool hard) { link(member, target, hard); };
  side_.incomplete = [this](std::string archive) {
    while (archive.size() > 1 && archive.back() == '/') archive.pop_back();  // "img/" names "img!path"
    std::lock_guard<std::mutex> lock(mu_);
    incomplete_.insert(std::move(archive));
  };
  side_.max_bytes = kMaxDatabaseFileBytes;  // larger: only its size is kept, read as on disk (HG702)
}

ArchiveDatabases::~ArchiveDatabases() = default;

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

// A Tensile file named after processors none of which a target has ("..._gfx90a.dat" for gfx942):
// the targets' loader never reads it (but a directory listing sees it).
bool ArchiveDatabases::for_another_processor(std::string_view base) const {
  if (targets_.empty()) return false;
  bool other = false;
  for (size_t at = base.find("gfx"); at != std::string_view::npos; at = base.find("gfx", at + 3)) {
    size_t end = at + 3;
    while (end < base.size() && std::isalnum(static_cast<unsigned char>(base[end]))) ++end;
    std::string processor(base.substr(at, end - at));
    if (!find_processor(processor)) continue;
    for (const auto& t : targets_)
      if (t.processor == processor) return false;
    other = true;
  }
  return other;
}

std::string ArchiveDatabases::add(const std::string& member, Tree** tree) {
  size_t bang = member.rfind('!');
  if (bang == std::string::npos) return "";
  std::optional<std::string> rel = inside(std::string_view(member).substr(bang + 1));
  if (!rel || rel->empty()) return "";
  std::string prefix = member.substr(0, bang + 1);
  auto [it, fresh] = tree_of_.try_emplace(prefix, trees_.size());
  if (fresh) trees_.push_back({prefix, "\x1f" + std::to_string(trees_.size()), false, ""});
  Tree& t = trees_[it->second];
  if (tree) *tree = &t;
  std::string path = t.root + "/" + *rel;
  for (size_t slash = path.rfind('/'); slash >= t.root.size(); slash = path.rfind('/', slash - 1)) {
    size_t end = path.find('/', slash + 1);
    children_[path.substr(0, slash)][path.substr(slash + 1, end - slash - 1)] = end != std::string::npos;
    if (slash == t.root.size()) break;
  }
  return path;
}

Result<ArchiveDatabases::File> ArchiveDatabases::keep_bytes(Bytes data) {
  if (!spill_ && spill_error_.empty()) {
    auto created = SpillFile::create("hipguard-databases");
    if (created) spill_.emplace(std::move(*created));
    else spill_error_ = created.error().message;
  }
  if (!spill_) return ParseError{Code::kArchiveDatabasesUnchecked, spill_error_};
  File file{File::Kept::Bytes, spill_size_, data.size()};
  spill_size_ += data.size();
  return file;
}

void ArchiveDatabases::take(const std::string& member, Bytes data, const Diagnostic* problem) {
  File kept;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Tree* t = nullptr;
    std::string path = add(member, &t);
    if (path.empty()) return;
    t->has_database = true;
    File& f = files_[path];
    if (problem) f = {File::Kept::TooBig, 0, problem->value.value_or(0)};
    if (problem || !data.data()) return;  // over the budget, or only its name wanted
    auto place = keep_bytes(data);
    if (!place) return void(t->lost = place.error().message);
    kept = f = *place;
  }
  if (spill_->write_at(data, kept.offset)) return;
  std::string why = std::string("cannot write its temporary copy: ") + std::strerror(errno);
  std::lock_guard<std::mutex> lock(mu_);
  Tree* t = nullptr;
  files_[add(member, &t)] = {};
  t->lost = why;
}

void ArchiveDatabases::link(const std::string& member, const std::string& target, bool hard) {
  // Only what a database check looks for: its files and code objects (an image has thousands of
  // other links: libraries, alternatives).
  if (wants(member) == ArchiveReader::Want::Nothing && !ends_with(member, ".co") && !ends_with(member, ".hsaco"))
    return;
  std::lock_guard<std::mutex> lock(mu_);
  Tree* t = nullptr;
  std::string path = add(member, &t);
  if (path.empty()) return;
  // A hard link names an archive member; a symlink is relative to its directory, or absolute in the
  // archive's own root (an image's, as the container sees it).
  std::string rel = path.substr(t->root.size() + 1);
  std::string dir = rel.find('/') == std::string::npos ? "" : rel.substr(0, rel.rfind('/'));
  std::string in_root = hard || target.rfind('/', 0) == 0 ? target : dir + "/" + target;
  if (std::optional<std::string> to = inside(in_root); to && !to->empty())
    links_.emplace_back(path, t->root + "/" + *to);
  children_[path.substr(0, path.rfind('/'))].erase(path.substr(path.rfind('/') + 1));  // until resolved
}

// As DatabaseHook::observe (and FactsCache::get for a file it did not see), for members: the facts
// of the entries the check parsed; for a file built only for other processors, the targets it is
// built for, which is all the database check says of it (HG704).
void ArchiveDatabases::observe(const ImageReport& img) {
  if (img.kind == PayloadKind::Unknown || img.origin.find('!') == std::string::npos) return;
  CodeObjectFacts f;
  for (const auto& c : img.code_objects) f.entries.push_back(facts_of(c.co));
  bool selected = std::any_of(img.verdicts.begin(), img.verdicts.end(),
                              [](const TargetVerdict& v) { return v.selection != Selection::None; });
  if (f.entries.empty() && !selected) {
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
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::string path = add(img.origin);
  if (path.empty()) return;
  files_.try_emplace(path);
  CodeObjectFacts& all = facts_[path];  // a file of several bundles: each one's entries
  for (auto& e : f.entries) all.entries.push_back(std::move(e));
  all.error = !all.entries.empty()      ? ""
              : img.diagnostics.empty() ? "no AMDGPU code object in it"
                                        : img.diagnostics.front().message;
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
  const File& f = it->second;
  if (f.kept == File::Kept::TooBig || f.size > limit)
    return ParseError{Code::kBudgetExceeded, "larger than " + std::to_string(limit) + " bytes"};
  if (f.kept == File::Kept::Name)
    return ParseError{Code::kUnreadable, "not kept by hipguard (a file none of the targets' loaders reads)"};
  if (f.size == 0) return kdb::FileBytes{};
  return kdb::FileBytes{FileData(), Bytes(spill_map_.bytes().data() + f.offset, f.size)};
}

// Each link becomes the file it leads to (its bytes, its facts), as the installed tree reads it.
void ArchiveDatabases::resolve_links() {
  for (int hop = 0; hop < kMaxLinkHops; ++hop) {
    bool more = false;
    for (const auto& [path, to] : links_) {
      if (files_.count(path) || !files_.count(to)) continue;
      files_[path] = files_[to];
      if (auto f = facts_.find(to); f != facts_.end()) facts_[path] = f->second;
      children_[path.substr(0, path.rfind('/'))][path.substr(path.rfind('/') + 1)] = false;
      more = true;
    }
    if (!more) return;
  }
}

std::vector<FileReport> ArchiveDatabases::check_tree(const Tree& t) {
  std::vector<FileReport> out;
  FactsLookup lookup = [&](const std::string& path) -> const CodeObjectFacts* {
    auto it = facts_.find(path);
    return it == facts_.end() ? nullptr : &it->second;
  };
  std::string archive = t.prefix.substr(0, t.prefix.size() - 1);
  for (const auto& db : kdb::find_kernel_databases(*this, t.root)) {
    kdb::FactsCache cache(lookup, *this);
    DatabaseReport r = kdb::check_kernel_database(db, targets_, cache);
    auto name = [&](std::string& s) {  // "<root>/usr/lib/x" is the member "ARCHIVE!usr/lib/x"
      replace_all(s, t.root + "/", t.prefix);
      replace_all(s, t.root, archive);
    };
    name(r.path);
    for (auto& d : r.diagnostics) name(d.file), name(d.message), name(d.fix);
    out.push_back(database_file_report(std::move(r)));
  }
  return out;
}

std::vector<FileReport> ArchiveDatabases::check() {
  std::vector<FileReport> out;
  std::lock_guard<std::mutex> lock(mu_);  // the checking threads are done; for the analyzers
  if (spill_ && spill_size_ > 0 && spill_map_.bytes().empty()) {
    auto mapped = spill_->map(spill_size_);
    if (mapped) spill_map_ = std::move(*mapped);
    else
      for (auto& t : trees_) t.lost = "cannot map its temporary copy: " + mapped.error().message;
  }
  resolve_links();
  for (const auto& t : trees_) {
    // Read short (HG111, HG113-HG116, said already): what is missing here is not missing there.
    bool whole = std::none_of(incomplete_.begin(), incomplete_.end(),
                              [&](const std::string& a) { return starts_with(t.prefix, a + "!"); });
    if (!t.has_database || !whole) continue;
    if (t.lost.empty()) {
      for (auto& r : check_tree(t)) out.push_back(std::move(r));
      continue;
    }
    FileReport r;
    r.path = t.prefix.substr(0, t.prefix.size() - 1);
    r.hip = true;
    r.diagnostics.push_back(make_diagnostic(
        Code::kArchiveDatabasesUnchecked, r.path,
        "the kernel databases inside (Tensile .dat, AITER .csv) were not cross-checked with its code objects: " +
            t.lost,
        "point TMPDIR at a writable directory with room for them, or unpack the archive and check the directory"));
    out.push_back(std::move(r));
  }
  // The trees are in the order the checking threads met their files: reported in path order.
  std::stable_sort(out.begin(), out.end(), [](const FileReport& a, const FileReport& b) { return a.path < b.path; });
  return out;
}

}  // namespace hipguard
