// Directory walking: the paths hipguard check is given, expanded into the files to check.
#include "inputs/expand_paths.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace hipguard {

std::vector<std::string> expand(const std::vector<std::string>& paths, std::vector<PathProblem>* problems,
                                std::vector<bool>* regular, const ArchiveReader* archives) {
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
    if (!fs::is_directory(st) || (archives && archives->is_image_directory(p))) {
      out.push_back(p);
      regular->push_back(fs::is_regular_file(st));
      continue;
    }
    // Walked by hand: every directory that cannot be read is reported, never skipped silently.
    // An image layout met on the way is one input, like a file (not regular: FileData cannot open it).
    std::vector<std::string> found, layouts;
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
          if (archives && archives->is_image_directory(e.path().string())) {
            found.push_back(e.path().string());
            layouts.push_back(e.path().string());
          } else {
            todo.push_back(e.path());
          }
        } else if (e.is_regular_file(ec2)) {
          found.push_back(e.path().string());
        }
      }
      if (ec) problem(dir.string(), ec);
    }
    std::sort(found.begin(), found.end());
    for (const auto& f : found) {
      out.push_back(f);
      // Directory entries of regular files (or symlinks to them), or an image layout.
      regular->push_back(std::find(layouts.begin(), layouts.end(), f) == layouts.end());
    }
  }
  return out;
}

std::vector<std::string> expand_paths(const std::vector<std::string>& paths, std::vector<PathProblem>* problems) {
  std::vector<bool> regular;
  return expand(paths, problems, &regular);
}

}  // namespace hipguard
