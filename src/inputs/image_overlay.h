// The layers of a container image applied as the runtime applies them, read top layer first (OCI
// image-spec layer.md, "Applying Changesets" and "Whiteouts"; moby's pkg/archive UnpackLayer): which
// entries of the layer being read are files of the image, and what the layer hides below it.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace hipguard {

class Overlay {
 public:
  // Whether an entry of the current layer is a file of the image (then the walk hands it over), and
  // records what it hides in the layers below. `raw`: its name in the layer; `filetype`: AE_IF*;
  // `hardlink`: the earlier entry of the same layer it links to, or "".
  bool visible(const std::string& raw, unsigned filetype, const std::string& hardlink);
  // The current layer is read: what it hides applies to the layers below it.
  void end_layer();
  // Some layer was not read whole (missing, damaged, over a budget): whiteouts above it cannot be
  // told to have hidden nothing.
  void layer_incomplete() { incomplete_ = true; }
  // Whiteouts that hid nothing in any layer below them, sorted (none when a layer was incomplete).
  std::vector<std::string> unmatched_whiteouts() const;

  // Entries of the current layer whose path leaves the image (moby refuses the layer).
  std::vector<std::string> outside;
  // Hard links of the current layer that are files of the image while the file they link to (in the
  // same layer) is not: {link, target}, both normalized. Its bytes are read again under the link's name.
  std::vector<std::pair<std::string, std::string>> relinked;

  // "./usr//lib/../lib64/" -> "usr/lib64"; nullopt when it climbs above the root.
  static std::optional<std::string> normalize(const std::string& raw);

 private:
  bool hidden(const std::string& path);
  bool whiteout(const std::string& dir, const std::string& base);

  std::unordered_set<std::string> gone_;    // whited out or replaced by a non-directory above: it and below
  std::unordered_set<std::string> opaque_;  // opaque above: everything below
  std::unordered_set<std::string> dirs_;    // directories above: a lower non-directory of that name is replaced
  std::vector<std::string> layer_gone_, layer_opaque_, layer_dirs_;
  std::unordered_set<std::string> layer_hidden_files_;  // regular files of the current layer not in the image
  std::unordered_map<std::string, bool> whiteouts_;     // whited-out path -> it hid something below
  bool incomplete_ = false;
};

}  // namespace hipguard
