// A container image's files recorded as its layers are read, searched as the dynamic loader searches
// a root (file_tree.h): symlinks followed inside the image, as a container sees them.
#include "inputs/image_tree.h"

#include <archive_entry.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <set>

#include "inputs/dynamic_elf.h"
#include "inputs/image_overlay.h"

namespace hipguard {
namespace {
constexpr size_t kNoId = SIZE_MAX;

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) (s += s.empty() ? "" : "/") += p;
  return s;
}
// A name of a member of an archive inside the walked one ("x.whl!torch/lib/y.so"): not a file the
// archive or image installs, so it is not recorded (an image's filter records its own names first).
bool nested(const std::string& name) { return name.empty() || name.find('!') != std::string::npos; }
}  // namespace

void ImageTree::entry(const std::string& name, unsigned filetype, const std::string& hardlink) {
  Kind kind = !hardlink.empty()      ? Kind::Hardlink
              : filetype == AE_IFDIR ? Kind::Directory
              : filetype == AE_IFLNK ? Kind::Symlink
                                     : Kind::File;
  if (kind == Kind::File && filetype != AE_IFREG) return;  // devices, FIFOs, sockets: nothing the loader opens
  if (entries_.emplace(name, Entry{kind, hardlink, next_id_++}).second && kind == Kind::File)
    layer_files_.push_back(name);
}

void ImageTree::expect_program(const std::string& program) {
  if (program.empty()) return;
  if (program.find('/') == std::string::npos) return void(program_name_ = program);
  std::string path;
  for (const auto& part : split_path(program)) (path += path.empty() ? "" : "/") += part;
  program_path_ = path;
}

void ImageTree::end_layer() {
  for (const auto& name : layer_files_) {
    if (elves_.count(name) || texts_.count(name) || name == program_path_ || is_kernel_file_name(name)) continue;
    if (!program_name_.empty() && name.size() >= program_name_.size() &&
        name.compare(name.size() - program_name_.size(), program_name_.size(), program_name_) == 0 &&
        (name.size() == program_name_.size() || name[name.size() - program_name_.size() - 1] == '/'))
      continue;
    entries_.erase(name);
  }
  layer_files_.clear();
}

void ImageTree::link(const std::string& name, const std::string& target, bool hard) {
  auto it = entries_.find(name);
  if (it == entries_.end() && !nested(name))
    entries_.emplace(name, Entry{hard ? Kind::Hardlink : Kind::Symlink, target, next_id_++});
  else if (it != entries_.end() && !hard && it->second.kind == Kind::Symlink && it->second.target.empty())
    it->second.target = target;
}

void ImageTree::member(const std::string& name, Bytes bytes) {
  if (!entries_.count(name) && !nested(name)) entry(name, AE_IFREG, "");
  auto it = entries_.find(name);
  if (it == entries_.end() || it->second.kind == Kind::Directory || it->second.kind == Kind::Symlink) return;
  if (bytes.size() >= 4 &&
      std::memcmp(bytes.data(),
                  "\x7f"
                  "ELF",
                  4) == 0 &&
      !elves_.count(name))
    elves_.emplace(name, read_dynamic_info(bytes));
}

bool ImageTree::wants_text(const std::string& name) {
  return name == "etc/ld.so.conf" || name.rfind("etc/ld.so.conf.d/", 0) == 0;
}

void ImageTree::set_text(const std::string& name, std::string text) {
  if (text.size() > kMaxTreeTextBytes) text.resize(kMaxTreeTextBytes);
  if (entries_.count(name)) texts_.emplace(name, std::move(text));
}

const ImageTree::Entry* ImageTree::lookup(const std::string& path, Entry* implicit) const {
  if (auto it = entries_.find(path); it != entries_.end()) return &it->second;
  std::string below = path + "/";
  auto next = entries_.lower_bound(below);
  if (next == entries_.end() || next->first.compare(0, below.size(), below) != 0) return nullptr;
  *implicit = Entry{Kind::Directory, "", kNoId};  // a layer that lists files without their directories
  return implicit;
}

std::string ImageTree::file_name(const std::string& path) const {
  auto it = entries_.find(path);
  if (it != entries_.end() && it->second.kind == Kind::Hardlink && entries_.count(it->second.target))
    return it->second.target;
  return path;
}

std::optional<FileTree::Found> ImageTree::find(const std::string& at) const {
  Entry implicit{Kind::Directory, "", kNoId};
  auto done = resolve_inside(at, [&](const std::vector<std::string>& components) {
    const Entry* e = lookup(joined(components), &implicit);
    if (!e) return PathStep{};
    if (e->kind == Kind::Symlink) return PathStep{PathStep::Kind::Symlink, e->target};
    return PathStep{e->kind == Kind::Directory ? PathStep::Kind::Directory : PathStep::Kind::Other, ""};
  });
  if (!done) return std::nullopt;
  std::string path = joined(*done);
  implicit = Entry{Kind::Directory, "", kNoId};  // the root, or a directory no entry names
  const Entry* e = path.empty() ? &implicit : lookup(path, &implicit);
  if (!e) return std::nullopt;
  size_t id = e->id;
  if (e->kind == Kind::Hardlink)
    if (auto t = entries_.find(file_name(path)); t != entries_.end()) id = t->second.id;
  return Found{label_ + path, "/" + path, {1, id}, e->kind == Kind::Directory};
}

std::vector<std::string> ImageTree::list(const std::string& at) const {
  std::vector<std::string> out;
  std::optional<Found> dir = find(at);
  if (!dir || !dir->directory) return out;
  std::string prefix = dir->at.size() > 1 ? dir->at.substr(1) + "/" : "";
  for (auto it = entries_.lower_bound(prefix);
       it != entries_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    std::string name = it->first.substr(prefix.size());
    size_t slash = name.find('/');
    if (slash != std::string::npos) name.resize(slash);
    if (!name.empty() && name[0] != '.') out.push_back(name);
    // Past what lies below name ("name/..."; '0' follows '/'), or to the next entry.
    it = slash == std::string::npos ? std::next(it) : entries_.lower_bound(prefix + name + "0");
  }
  std::set<std::string> sorted(out.begin(), out.end());
  return {sorted.begin(), sorted.end()};
}

std::vector<std::string> ImageTree::elf_files() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : elves_) out.push_back("/" + name);
  std::sort(out.begin(), out.end());
  return out;
}

ElfInfo ImageTree::elf(const Found& file) const {
  auto it = elves_.find(file_name(file.at.substr(1)));
  return it == elves_.end() ? ElfInfo() : it->second;
}

std::string ImageTree::text(const Found& file) const {
  auto it = texts_.find(file_name(file.at.substr(1)));
  return it == texts_.end() ? "" : it->second;
}

std::string ImageTree::name_of(const std::string& at) const { return at; }

ArchiveReader::SideFiles recording_side_files(ImageTree* tree, const std::string& prefix,
                                              const ArchiveReader::SideFiles* outer) {
  ArchiveReader::SideFiles side;
  auto name = [prefix](const std::string& label) {
    return label.compare(0, prefix.size(), prefix) == 0 ? label.substr(prefix.size()) : std::string();
  };
  auto outer_wants = [outer](const std::string& label) {
    return outer && outer->wants ? outer->wants(label) : ArchiveReader::Want::Nothing;
  };
  side.wants = [=](const std::string& label) {
    return ImageTree::wants_text(name(label)) ? ArchiveReader::Want::Bytes : outer_wants(label);
  };
  side.take = [=](const std::string& label, Bytes data, const FileData& file, const Diagnostic* problem) {
    if (ImageTree::wants_text(name(label)) && !problem)
      tree->set_text(name(label), std::string(reinterpret_cast<const char*>(data.data()), data.size()));
    ArchiveReader::Want want = outer_wants(label);
    if (want == ArchiveReader::Want::Bytes) outer->take(label, data, file, problem);
    if (want == ArchiveReader::Want::Name) outer->take(label, {}, FileData(), nullptr);
  };
  side.link = [=](const std::string& label, const std::string& target, bool hard) {
    std::optional<std::string> n = Overlay::normalize(name(label));
    std::optional<std::string> t = hard ? Overlay::normalize(target) : std::optional<std::string>(target);
    if (!name(label).empty() && n && t) tree->link(*n, *t, hard);
    if (outer && outer->link) outer->link(label, target, hard);
  };
  if (outer) side.incomplete = outer->incomplete;
  side.max_bytes = outer ? outer->max_bytes : kMaxTreeTextBytes;
  return side;
}

std::vector<Diagnostic> kernel_directory_findings(const ImageTree& tree, DependencyOptions options,
                                                  std::set<std::pair<uint64_t, uint64_t>> asked) {
  std::vector<Diagnostic> out;
  options.follow_needed = false;
  for (const std::string& at : tree.elf_files()) {
    auto file = tree.find(at);
    if (!file || !asked.insert(file->identity).second) continue;
    std::string soname = tree.elf(*file).soname;
    if (!opens_kernel_files(soname.empty() ? at.substr(at.rfind('/') + 1) : soname)) continue;
    for (Diagnostic& d : find_dependencies_in(tree, at, options).diagnostics)
      if (d.code == Code::kKernelDirectoryMissing) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace hipguard
