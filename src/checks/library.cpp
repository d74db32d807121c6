// Kernel libraries: grouping a directory's code object files, their verdicts
// per target, and one error per library and target without a loadable file.
#include "checks/library.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "hipguard/target.h"

namespace hipguard::library {

bool is_library_image(const ImageReport& img) {
  // A host ELF's only fat binary has no location either, but starts past the ELF header.
  return img.location.empty() && img.file_offset == 0 && img.kind != PayloadKind::Unknown;
}

std::string library_name(const std::string& file) {
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  std::string name;
  for (const auto& part : dir) {
    std::string p = part.string();
    if (find_processor(p)) p = "<processor>";
    if (!name.empty() && name.back() != '/') name += '/';
    name += p;
  }
  return name.empty() ? "." : name;
}

namespace {

bool is_code(const Diagnostic& d, std::initializer_list<Code> codes) {
  return std::find(codes.begin(), codes.end(), d.code) != codes.end();
}

// Nothing selected for `v` only because the file is for another processor or configuration.
bool for_other_target(const ImageReport& img, const TargetVerdict& v) {
  if (v.selection != Selection::None || v.kernel_free || !img.structurally_ok) return false;
  std::string target = v.target.str();
  bool elsewhere = false;
  for (const auto& d : img.diagnostics) {
    if (d.target != target || d.severity != Severity::Error) continue;
    if (is_code(d, {Code::kGenericTooOld, Code::kBatchLookupStarved, Code::kGenericFeaturesRejected})) return false;
    if (is_code(d, {Code::kNoCodeObject, Code::kProcessorMismatch, Code::kFeatureMismatch})) elsewhere = true;
  }
  return elsewhere;
}

}  // namespace

void mark_other_targets(ImageReport& img) {
  std::set<std::string> dropped;
  for (auto& v : img.verdicts)
    if (for_other_target(img, v)) {
      v.other_target = true;
      dropped.insert(v.target.str());
    }
  if (dropped.empty()) return;
  std::erase_if(img.diagnostics, [&](const Diagnostic& d) { return !d.target.empty() && dropped.count(d.target); });
}

LibrarySummary& Tally::get(const std::string& library) {
  auto [it, fresh] = index_.try_emplace(library, order_.size());
  if (fresh) {
    LibrarySummary s;
    s.name = library;
    for (const auto& t : targets_) s.targets.push_back({t});
    order_.push_back(std::move(s));
  }
  return order_[it->second];
}

void Tally::add_file(const std::string& library) { ++get(library).files; }

void Tally::add(const std::string& library, const ImageReport& img) {
  LibrarySummary& s = get(library);
  ++s.files;
  last_ = library;
  auto built_for = [&](const std::string& id) {
    if (!id.empty() && std::find(s.built_for.begin(), s.built_for.end(), id) == s.built_for.end())
      s.built_for.insert(std::upper_bound(s.built_for.begin(), s.built_for.end(), id), id);
  };
  built_for(img.built_for);
  for (const auto& id : img.entry_ids) {
    BundleEntryId e = parse_entry_id(id);
    if (e.is_amdgcn()) built_for(e.target_id);
  }
  for (size_t t = 0; t < s.targets.size() && t < img.verdicts.size(); ++t) {
    const TargetVerdict& v = img.verdicts[t];
    LibrarySummary::PerTarget& p = s.targets[t];
    if (v.other_target) {
      ++p.other;
      continue;
    }
    if (v.selection != Selection::None) ++p.code_objects, p.kernels += v.kernels;
    if (v.fails()) ++p.failing;
  }
}

std::vector<FileReport> Tally::missing_targets() const {
  std::vector<FileReport> reports;
  for (const auto& s : order_) {
    std::string has;
    for (size_t i = 0; i < s.built_for.size(); ++i) {
      if (i == 16) {
        has += " and " + std::to_string(s.built_for.size() - i) + " more";
        break;
      }
      has += (i ? ", " : "") + s.built_for[i];
    }
    FileReport r;
    r.path = s.name;
    r.library = s.name;
    for (const auto& p : s.targets) {
      if (p.code_objects > 0) continue;
      std::string nearest;
      for (const auto& n : nearest_processors(p.target.processor, s.built_for))
        nearest += (nearest.empty() ? "" : ", ") + n;
      Diagnostic d = make_diagnostic(
          Code::kLibraryLacksTarget, s.name,
          "kernel library has no code object for " + p.target.label() + ": its " + std::to_string(s.files) +
              " code object file(s) are built for " + (has.empty() ? "no AMDGPU processor" : has) +
              (nearest.empty() ? "" : " (nearest: " + nearest + ")"),
          "install or build the library for " + p.target.processor + " (--offload-arch=" + p.target.processor +
              ", GPU_TARGETS or AMDGPU_TARGETS=" + p.target.processor + "), or run it on a GPU it has code for");
      d.target = p.target.str();
      d.value = 0;
      r.diagnostics.push_back(std::move(d));
    }
    if (!r.diagnostics.empty()) reports.push_back(std::move(r));
  }
  return reports;
}

std::vector<LibrarySummary> Tally::take() {
  index_.clear();
  return std::move(order_);
}

}  // namespace hipguard::library
