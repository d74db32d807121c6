// hipguard check: will these files run on these GPUs? The per-target table, the findings, the closing tally.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "cache/file_cache.h"
#include "cli/common.h"
#include "cli/progress.h"
#include "cli/support.h"
#include "hipguard/kernel_database.h"
#include "hipguard/report.h"

namespace hipguard {
namespace {

// Prints finding lines (--quiet: errors and warnings only) and counts them.
struct FindingLines {
  const OutputOptions& output;
  size_t count = 0;

  void print(Severity severity, const std::string& line) {
    if (output.quiet && severity == Severity::Note) return;
    printf("%s\n", paint_line(output.color, line).c_str());
    ++count;
  }
};

// Units of grouping: a file, or all files of one kernel library (not with
// --verbose), in first-occurrence order.
std::vector<std::vector<const FileReport*>> finding_units(const std::vector<FileReport>& reports, bool verbose) {
  std::vector<std::vector<const FileReport*>> units;
  std::unordered_map<std::string, size_t> library_unit;
  for (const auto& r : reports) {
    if (r.library.empty() || verbose || r.images.empty()) {
      units.push_back({&r});
      continue;
    }
    auto [it, fresh] = library_unit.try_emplace(r.library, units.size());
    if (fresh) units.emplace_back();
    units[it->second].push_back(&r);
  }
  return units;
}

// The findings of one unit: its files' own, then those of its images, equal
// ones said once: grouped by their line with the unit's name for the file, in
// first occurrence order.
void print_unit_findings(const std::vector<const FileReport*>& unit, bool verbose, FindingLines& lines) {
  bool library = unit.size() > 1 || !unit[0]->library.empty();
  const std::string& name = library && !verbose ? unit[0]->library : unit[0]->path;
  size_t images = 0;
  for (const FileReport* r : unit) {
    for (const auto& d : r->diagnostics) lines.print(d.severity, format_line(d));
    images += r->images.size();
  }
  struct Group {
    const Diagnostic* d;
    size_t n;
    const std::string* line;  // the line as printed once (the key itself), unless it has a location
  };
  std::vector<Group> groups;
  std::unordered_map<std::string, size_t> index;  // node-based: the keys stay where Group::line points
  for (const FileReport* r : unit)
    for (const auto& i : r->images)
      for (const auto& d : i.diagnostics) {
        bool as_is = verbose || (!library && d.file == r->path);
        std::string key;
        if (as_is) {
          key = format_line(d);
        } else {
          Diagnostic located = d;
          located.file = name;
          key = format_line(located);
        }
        auto [it, fresh] = index.try_emplace(std::move(key), groups.size());
        if (fresh) groups.push_back({&d, 0, as_is ? &it->first : nullptr});
        ++groups[it->second].n;
      }
  for (const auto& g : groups) {
    if (g.n == 1 && (g.line || library)) {
      lines.print(g.d->severity, g.line ? *g.line : format_line(*g.d));
      continue;
    }
    Diagnostic d = *g.d;
    if (g.n > 1)
      d.file = name + " [" + std::to_string(g.n) + " of " + std::to_string(images) +
               (library ? " files]" : " fat binaries]");
    lines.print(d.severity, format_line(d));
  }
}

// Findings that differ only in which fat binary of one file (rocSPARSE: 111
// bundles, one HG201 each), or which file of one kernel library, they concern
// are printed once with a count; the JSON report keeps every one.
// --verbose: every finding as it is; --quiet: errors and warnings only.
void print_findings(const std::vector<FileReport>& reports, const OutputOptions& output) {
  FindingLines lines{output};
  for (const auto& unit : finding_units(reports, output.verbose)) print_unit_findings(unit, output.verbose, lines);
  if (lines.count == 0 && !output.quiet) printf("no problems found\n");
}

// What was checked, per target, for the closing line: a CI log shows a gate
// that checked nothing. Counted as files are checked (the table mode drops
// the parsed kernels afterwards).
struct Tally {
  size_t bundles = 0, raw = 0, objects = 0, kernels = 0;  // objects/kernels: read, without targets
  std::vector<size_t> selected, selected_kernels;         // per target: selected code objects, their kernels

  void add(const ImageReport& img, size_t targets) {  // as it is checked, before its parsed kernels are dropped
    selected.resize(targets), selected_kernels.resize(targets);
    (img.kind == PayloadKind::CodeObject ? raw : bundles)++;
    for (size_t t = 0; t < targets && t < img.verdicts.size(); ++t) {
      const TargetVerdict& v = img.verdicts[t];
      if (v.selection == Selection::Native || v.selection == Selection::Generic)
        ++selected[t], selected_kernels[t] += v.kernels;
    }
    for (const auto& c : img.code_objects) ++objects, kernels += c.co.kernels.size();
  }

  std::string line(const std::vector<TargetId>& targets) const {
    std::string s =
        "checked " + std::to_string(bundles) + " fat binaries and " + std::to_string(raw) + " code object files";
    if (targets.empty())
      s += ": " + std::to_string(objects) + " code objects, " + std::to_string(kernels) +
           " kernels (structural checks only)";
    for (size_t t = 0; t < targets.size(); ++t)
      s += std::string(t ? "; " : ": ") + targets[t].str() + ": " +
           std::to_string(t < selected.size() ? selected[t] : 0) + " code objects, " +
           std::to_string(t < selected.size() ? selected_kernels[t] : 0) + " kernels";
    return s;
  }
};

// One row of the table: a file, a kernel library, or (--verbose) a fat binary.
struct Row {
  bool ok;
  std::string selected, kernels, name;
};

std::string result_word(bool color, const Row& r) {
  return paint(color, r.ok ? "32" : "1;31", pad(r.ok ? "ok" : "FAIL", 6));
}

std::string selection_text(const TargetVerdict& v) {
  return v.selection == Selection::None ? "-"
                                        : escape_text(v.selected) + " (" + std::string(to_string(v.selection)) + ")";
}

Row image_row(const ImageReport& img, const TargetVerdict& v) {
  std::string name = escape_text(img.location.empty() ? img.origin : img.origin + " [" + img.location + "]");
  return {!v.fails(), selection_text(v), v.selection == Selection::None ? "-" : std::to_string(v.kernels), name};
}

// A file with several fat binaries (a program, a shared library) on one row:
// the distinct selections, the kernels of all, how many cannot run.
Row file_row(const FileReport& r, size_t t) {
  std::vector<std::string> selections;
  size_t kernels = 0, failing = 0;
  for (const auto& img : r.images) {
    const TargetVerdict& v = img.verdicts[t];
    std::string s = selection_text(v);
    if (std::find(selections.begin(), selections.end(), s) == selections.end()) selections.push_back(s);
    kernels += v.kernels;
    if (v.fails()) ++failing;
  }
  std::string selected = selections.empty() ? "-" : selections[0];
  if (selections.size() > 1) selected += " +" + std::to_string(selections.size() - 1) + " more";
  std::string name = escape_text(r.path) + " (" + std::to_string(r.images.size()) + " fat binaries";
  if (failing) name += ", " + std::to_string(failing) + " cannot run";
  return {failing == 0, selected, std::to_string(kernels), name + ")"};
}

// A kernel library on one row: the files the target loads, and those it does not.
Row library_row(const LibrarySummary& l, size_t t) {
  const LibrarySummary::PerTarget& p = l.targets[t];
  std::string selected = std::to_string(p.code_objects) + " of " + std::to_string(l.files) + " files";
  if (p.other) selected += " (" + std::to_string(p.other) + " for other targets)";
  std::string name = escape_text(l.name) + "/ (library";
  if (p.failing) name += ", " + std::to_string(p.failing) + " files cannot run";
  return {p.code_objects > 0 && p.failing == 0, selected, std::to_string(p.kernels), name + ")"};
}

// Structural soundness per kernel library: its files and its broken files.
std::map<std::string, std::pair<size_t, size_t>> library_soundness(const std::vector<FileReport>& reports) {
  std::map<std::string, std::pair<size_t, size_t>> sound;
  for (const auto& r : reports)
    if (!r.library.empty() && !r.images.empty()) {
      auto& [files, broken] = sound[r.library];
      ++files;
      for (const auto& i : r.images) broken += !i.structurally_ok;
    }
  return sound;
}

// The rows for target `t` (structural soundness when t == npos), in input order:
// one per kernel library, per file, or with --verbose per fat binary.
std::vector<Row> table_rows(const std::vector<FileReport>& reports, const std::vector<LibrarySummary>& libraries,
                            size_t t, bool verbose) {
  std::vector<Row> rows;
  std::set<std::string> listed;
  auto sound = t == SIZE_MAX ? library_soundness(reports) : std::map<std::string, std::pair<size_t, size_t>>{};
  for (const auto& r : reports) {
    if (r.images.empty()) continue;  // findings of its own only (HG101, HG107, HG214)
    if (!r.library.empty() && !verbose) {
      if (!listed.insert(r.library).second) continue;
      auto l = std::find_if(libraries.begin(), libraries.end(),
                            [&](const LibrarySummary& l) { return l.name == r.library; });
      if (t != SIZE_MAX && l != libraries.end()) {
        rows.push_back(library_row(*l, t));
        continue;
      }
    }
    if (t == SIZE_MAX && !r.library.empty() && !verbose) {
      auto [files, broken] = sound[r.library];
      rows.push_back({broken == 0, "library, " + std::to_string(files) + " files", "", escape_text(r.library) + "/"});
    } else if (t == SIZE_MAX) {
      bool ok = std::all_of(r.images.begin(), r.images.end(), [](const ImageReport& i) { return i.structurally_ok; });
      std::string what = std::string(to_string(r.images[0].kind));
      if (r.images.size() > 1) what += ", " + std::to_string(r.images.size()) + " fat binaries";
      rows.push_back({ok, what, "", escape_text(r.path)});
    } else if (r.images.size() == 1 || verbose) {
      for (const auto& img : r.images)
        if (!img.verdicts[t].other_target) rows.push_back(image_row(img, img.verdicts[t]));
    } else {
      rows.push_back(file_row(r, t));
    }
  }
  return rows;
}

// The dependencies among the files, each with the program or library that loads it.
// The kernel files of one directory that one library opens are one line.
void print_needed_by(const std::vector<FileReport>& reports) {
  bool any = false;
  for (size_t i = 0; i < reports.size();) {
    const FileReport& r = reports[i];
    if (r.needed_by.empty()) {
      ++i;
      continue;
    }
    std::string dir = std::filesystem::path(r.path).parent_path().string();
    size_t n = 1;
    while (i + n < reports.size() && reports[i + n].needed_by == r.needed_by &&
           std::filesystem::path(reports[i + n].path).parent_path() == dir)
      ++n;
    if (!any) printf("loaded by the files named:\n");
    any = true;
    std::string what = n > 2 ? dir + "/ (" + std::to_string(n) + " files)" : r.path;
    printf("  %s, needed by %s\n", escape_text(what).c_str(), escape_text(r.needed_by).c_str());
    if (n <= 2) n = 1;
    i += n;
  }
  if (any) printf("\n");
}

void print_table(const std::vector<FileReport>& reports, const std::vector<LibrarySummary>& libraries,
                 const std::vector<TargetId>& targets, const Tally& tally, const OutputOptions& output) {
  if (output.quiet) {
    print_findings(reports, output);
    return;
  }
  for (size_t t = 0; t < targets.size(); ++t) {
    std::vector<Row> rows = table_rows(reports, libraries, t, output.verbose);
    if (rows.empty()) continue;  // nothing with GPU code: the findings say why
    printf("target %s\n", targets[t].label().c_str());
    printf("  %s %s %s %s\n", pad("RESULT", 6).c_str(), pad("SELECTED", 52).c_str(), pad("KERNELS", 7).c_str(), "FILE");
    for (const Row& r : rows)
      printf("  %s %s %s %s\n", result_word(output.color, r).c_str(), pad(r.selected, 52).c_str(),
             pad(r.kernels, 7).c_str(), r.name.c_str());
    size_t runnable = std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.ok; });
    printf("  %zu of %zu can run on %s\n\n", runnable, rows.size(), targets[t].str().c_str());
  }
  if (targets.empty()) {
    std::vector<Row> rows = table_rows(reports, libraries, SIZE_MAX, output.verbose);
    if (!rows.empty()) {
      printf("no --target given: structural checks only\n");
      for (const Row& r : rows)
        printf("  %s %s (%s)\n", result_word(output.color, r).c_str(), r.name.c_str(), r.selected.c_str());
      printf("\n");
    }
  }
  print_needed_by(reports);
  print_findings(reports, output);
  printf("%s\n", tally.line(targets).c_str());
}

}  // namespace

int run_check(const CheckOptions& o) {
  auto resolved = resolve_targets(o.input.targets);
  if (!resolved) return usage_error("check", resolved.error().message);
  const std::vector<TargetId>& targets = *resolved;
  bool report = o.json || o.junit || o.sarif;
  if (o.json + o.junit + o.sarif > 1) return usage_error("check", "--json, --junit and --sarif exclude each other");
  if (o.input.paths.empty()) return usage_error("check", "check needs at least one PATH");
  // Code objects for other processors are read to their descriptors (check.h, Depth::ForTargets).
  auto read = read_input_options(
      o.input, !o.no_deps,
      CheckPathsOptions{
          targets, o.jobs, /*empty_directory_is_error=*/true, Depth::ForTargets, {}, {}, false, {}, {}, {}});
  if (!read) return usage_error("check", read.error().message);
  CheckPathsOptions& options = *read;
  options.kernel_databases = kernel_database_step;  // kernel databases below directory arguments, in archives
  std::unique_ptr<FileCache> cache;
  if (!o.cache.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.cache, ec);
    if (ec || ::access(o.cache.c_str(), W_OK | X_OK) != 0)
      return usage_error("check", "--cache " + o.cache + ": not a directory hipguard can write to" +
                                      (ec ? " (" + ec.message() + ")" : ""));
    std::string identity = program_identity();
    if (identity.empty())
      std::fprintf(stderr, "hipguard: --cache %s: this hipguard's build cannot be identified; nothing is cached\n",
                   o.cache.c_str());
    cache = file_cache(o.cache, identity);
    options.cache = cache.get();
  }
  // Not over a report streamed to the same terminal.
  Progress progress(!o.output.quiet && !(report && isatty(STDOUT_FILENO)), o.input.progress_delay_ms);
  options.progress = [&](size_t done, size_t total, const std::string& path) { progress.file_done(done, total, path); };
  if (report) {  // streamed as the files are checked
    auto os = stdio_ostream(stdout);
    auto writer = make_report_writer(o.json    ? ReportFormat::Json
                                     : o.junit ? ReportFormat::JUnit
                                               : ReportFormat::Sarif,
                                     *os, targets);
    CheckPathsResult result = check_paths(o.input.paths, options, *writer);
    if (!o.junit && targets.empty() && result.gpu_code)
      writer->support(check_support(o.input.paths, options, progress));
    writer->finish();
    return result.ok ? kExitOk : kExitProblems;
  }
  // The table needs only verdicts and diagnostics: the sink drops the parsed kernels.
  Tally tally;
  CollectSink sink(/*keep_parsed=*/false, {}, /*keep=*/true,
                   [&](const ImageReport& i) { tally.add(i, targets.size()); });
  CheckPathsResult result = check_paths(o.input.paths, options, sink);
  progress.clear();
  print_table(sink.reports, sink.libraries, targets, tally, o.output);
  // Without --target, the other question: which GPUs (its exit status stays the structural check's:
  // a CI gate names its targets).
  if (targets.empty() && !o.output.quiet && result.gpu_code) {
    printf("\n");
    print_support(check_support(o.input.paths, options, progress), o.output.color);
  }
  return result.ok ? kExitOk : kExitProblems;
}

}  // namespace hipguard
