// Whiteouts, opaque directories and replaced paths of a container image's layers, read top first.
#include "inputs/image_overlay.h"

#include <archive_entry.h>

#include <algorithm>
#include <string_view>

namespace hipguard {
namespace {
constexpr std::string_view kWhiteout = ".wh.", kOpaque = ".wh..wh..opq";
constexpr std::string_view kAufsMeta = ".wh..wh.";  // AUFS's own entries (.wh..wh.plnk, .wh..wh.aufs): moby skips them
}  // namespace

std::optional<std::string> Overlay::normalize(const std::string& raw) {
  std::vector<std::string_view> parts;
  for (size_t at = 0; at <= raw.size();) {
    size_t end = std::min(raw.find('/', at), raw.size());
    std::string_view part(raw.data() + at, end - at);
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    at = end + 1;
  }
  std::string out;
  for (std::string_view p : parts) (out += out.empty() ? "" : "/") += p;
  return out;
}

bool Overlay::visible(const std::string& raw, unsigned filetype, const std::string& hardlink) {
  std::optional<std::string> path = normalize(raw);
  if (!path) return outside.push_back(raw), false;
  if (path->empty()) return false;  // the root itself
  size_t slash = path->rfind('/');
  std::string dir = slash == std::string::npos ? "" : path->substr(0, slash);
  std::string base = path->substr(slash + 1);
  if (base == kOpaque) return layer_opaque_.push_back(dir), false;
  if (path->rfind(kAufsMeta, 0) == 0) return false;
  if (base.rfind(kWhiteout, 0) == 0) return whiteout(dir, base);
  bool file = filetype != AE_IFDIR;
  if (hidden(*path) || (file && dirs_.count(*path))) {
    // A non-directory under an upper directory of its name still removed, when its layer was
    // applied, whatever lower layers had below it.
    if (file && dirs_.count(*path)) layer_opaque_.push_back(*path);
    if (file && hardlink.empty()) layer_hidden_files_.insert(*path);
    return false;
  }
  (file ? layer_gone_ : layer_dirs_).push_back(*path);
  if (!hardlink.empty()) {
    std::optional<std::string> target = normalize(hardlink);
    if (target && layer_hidden_files_.count(*target)) relinked.emplace_back(*path, *target);
  }
  return true;
}

// A whiteout entry of the current layer: never a file of the image.
bool Overlay::whiteout(const std::string& dir, const std::string& base) {
  if (base.rfind(kAufsMeta, 0) == 0) return false;  // another AUFS entry (.wh..wh.aufs in a directory)
  std::string target = (dir.empty() ? "" : dir + "/") + base.substr(kWhiteout.size());
  whiteouts_.emplace(target, false);
  layer_gone_.push_back(std::move(target));
  return false;
}

// Whether an upper layer whited out or replaced `path` or a directory above it, or made a directory
// above it opaque.
bool Overlay::hidden(const std::string& path) {
  if (opaque_.count("")) return true;
  std::string_view p(path);
  for (bool self = true;; self = false) {
    std::string prefix(p);
    if (gone_.count(prefix)) {
      if (auto w = whiteouts_.find(prefix); w != whiteouts_.end()) w->second = true;
      return true;
    }
    if (!self && opaque_.count(prefix)) return true;
    size_t slash = p.rfind('/');
    if (slash == std::string_view::npos) return false;
    p = p.substr(0, slash);
  }
}

void Overlay::end_layer() {
  gone_.insert(layer_gone_.begin(), layer_gone_.end());
  opaque_.insert(layer_opaque_.begin(), layer_opaque_.end());
  dirs_.insert(layer_dirs_.begin(), layer_dirs_.end());
  layer_gone_.clear();
  layer_opaque_.clear();
  layer_dirs_.clear();
  layer_hidden_files_.clear();
  relinked.clear();
  outside.clear();
}

std::vector<std::string> Overlay::unmatched_whiteouts() const {
  std::vector<std::string> out;
  if (incomplete_) return out;
  for (const auto& [path, matched] : whiteouts_)
    if (!matched) out.push_back(path);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hipguard
