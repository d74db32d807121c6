// Kernel libraries (check_paths.h, LibrarySummary): which library a file found in a
// directory walk belongs to, a library file's verdicts, and the tally per library.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hipguard/check_paths.h"

namespace hipguard::library {

// Whether a file's image is a library file: a whole-file code object, offload
// bundle or compressed bundle (not a fat binary inside a host program, which
// starts at the .hip_fatbin section's offset).
bool is_library_image(const ImageReport& img);

// The library of `file`: the directory holding it, each component named after
// a processor ("gfx942", "gfx9-4-generic") replaced by "<processor>".
std::string library_name(const std::string& file);

// For each target that a library file cannot serve only because it is built
// for another processor or configuration (nothing selected; errors HG201, HG202
// or HG203 for the target, none of HG205, HG212, HG213; structurally sound):
// marks the verdict other_target and drops the image's diagnostics for that
// target (the library's loader never loads the file there).
void mark_other_targets(ImageReport& img);

// The libraries of one check_paths call, fed in delivery order.
class Tally {
 public:
  explicit Tally(const std::vector<TargetId>& targets) : targets_(targets) {}
  // An image of a library file, after mark_other_targets.
  void add(const std::string& library, const ImageReport& img);
  // A library file that held no image (unreadable, not GPU code): counted.
  void add_file(const std::string& library);
  // One HG214 report per library without a loadable file for some target.
  std::vector<FileReport> missing_targets() const;
  // The summaries, in order of each library's first file.
  std::vector<LibrarySummary> take();
  bool empty() const { return order_.empty(); }
  // The library of the last add().
  const std::string& last_name() const { return last_; }

 private:
  LibrarySummary& get(const std::string& library);

  std::vector<TargetId> targets_;
  std::vector<LibrarySummary> order_;
  std::map<std::string, size_t> index_;
  std::string last_;
};

}  // namespace hipguard::library
