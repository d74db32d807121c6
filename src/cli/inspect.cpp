// hipguard inspect: what is inside the files (bundles, entries, code objects, kernels), and with --target what each
// target selects.
#include <algorithm>
#include <cstdio>

#include <llvm/Demangle/Demangle.h>

#include "cli/common.h"
#include "cli/progress.h"
#include "hipguard/report.h"

namespace hipguard {
namespace {

std::string shown_name(const std::string& name, bool demangle) {
  return escape_text(demangle ? llvm::demangle(name) : name);
}

// --sort: largest first for sizes (then by name), names in ascending order.
std::vector<const KernelInfo*> sorted_kernels(const CodeObject& co, const InspectOptions& o) {
  std::vector<const KernelInfo*> ks;
  for (const auto& k : co.kernels) ks.push_back(&k);
  auto key = [&](const KernelInfo& k) -> uint64_t {
    if (o.sort == "lds") return k.group_segment_fixed_size;
    if (o.sort == "scratch") return k.private_segment_fixed_size;
    if (o.sort == "vgpr") return k.vgpr_count;
    return 0;
  };
  if (!o.sort.empty())
    std::stable_sort(ks.begin(), ks.end(), [&](const KernelInfo* a, const KernelInfo* b) {
      if (key(*a) != key(*b)) return key(*a) > key(*b);
      return shown_name(a->name, o.demangle) < shown_name(b->name, o.demangle);
    });
  return ks;
}

// Why an entry (or a raw code object) is or is not a candidate for `t`.
std::string match_reason(const TargetId& code, unsigned generic_version, const TargetId& t) {
  MatchResult m = match_target(code, generic_version, t);
  switch (m.kind) {
    case Match::Native: return "fits (native)";
    case Match::Generic: return "fits (generic)";
    case Match::ProcessorMismatch: return "other processor" + (m.detail.empty() ? "" : ": " + m.detail);
    case Match::FeatureMismatch: return "xnack/sramecc differ" + (m.detail.empty() ? "" : ": " + m.detail);
    case Match::GenericTooOld: return "generic version too old" + (m.detail.empty() ? "" : ": " + m.detail);
  }
  return "?";
}

// Each entry of `img` (or its raw code object) and why it is or is not a candidate for `t`.
void print_candidates(const ImageReport& img, const TargetId& t) {
  for (const auto& e : img.entries) {
    if (!e.parsed.is_amdgcn()) continue;
    auto code = parse_target_id(e.parsed.target_id);
    unsigned generic = 0;
    for (const auto& c : img.code_objects)
      if (c.entry == e.id) generic = c.co.generic_version;
    printf("      %-52s %s\n", escape_text(e.id).c_str(),
           code ? match_reason(*code, generic, t).c_str() : ("unreadable target ID: " + code.error().message).c_str());
  }
  if (img.kind == PayloadKind::CodeObject)
    for (const auto& c : img.code_objects)
      printf("      %-52s %s\n", describe_target(c.co).c_str(),
             match_reason(c.co.target, c.co.generic_version, t).c_str());
}

// --target: what the runtime would select in `img` for each target (from the
// checked image `checked`), and why each entry is or is not a candidate.
void print_selection(const ImageReport& img, const ImageReport& checked, const std::vector<TargetId>& targets,
                     const OutputOptions& output) {
  for (size_t t = 0; t < targets.size() && t < checked.verdicts.size(); ++t) {
    const TargetVerdict& v = checked.verdicts[t];
    std::string sel = v.selection == Selection::None
                          ? "selects nothing"
                          : "selects " + escape_text(v.selected) + " (" + std::string(to_string(v.selection)) + "), " +
                                std::to_string(v.kernels) + " kernel(s)";
    printf("    target %s: %s: %s\n", targets[t].label().c_str(), sel.c_str(),
           paint(output.color, v.can_run ? "32" : "1;31", v.can_run ? "can run" : "cannot run").c_str());
    if (!output.quiet) print_candidates(img, targets[t]);
    for (const auto& d : checked.diagnostics)
      if (d.target == targets[t].str() && !(output.quiet && d.severity == Severity::Note))
        printf("      %s\n", paint_line(output.color, format_line(d)).c_str());
  }
}

// A code object's kernel table (not with --quiet), device functions and kernels without metadata.
void print_code_object(const CodeObjectSummary& c, const InspectOptions& o) {
  printf("    code object %s%s, v%u, %zu kernel(s)\n", describe_target(c.co).c_str(),
         c.entry.empty() ? "" : (" [" + escape_text(c.entry) + "]").c_str(), c.co.version, c.co.kernels.size());
  if (o.output.quiet) return;
  if (!c.co.kernels.empty())
    printf("      %-10s %-9s %-6s %-11s %-5s %-5s %-7s %s\n", "LDS", "SCRATCH", "WAVE", "VGPR/AGPR", "SGPR", "WG",
           "KERNARG", "KERNEL");
  for (const KernelInfo* kp : sorted_kernels(c.co, o)) {
    const KernelInfo& k = *kp;
    std::string regs = std::to_string(k.vgpr_count) + "/" + (k.agpr_count ? std::to_string(*k.agpr_count) : "-");
    std::string scratch = std::to_string(k.private_segment_fixed_size) + (k.uses_dynamic_stack ? "+dyn" : "");
    printf("      %-10llu %-9s %-6llu %-11s %-5llu %-5llu %-7llu %s\n",
           static_cast<unsigned long long>(k.group_segment_fixed_size), scratch.c_str(),
           static_cast<unsigned long long>(k.wavefront_size), regs.c_str(),
           static_cast<unsigned long long>(k.sgpr_count), static_cast<unsigned long long>(k.max_flat_workgroup_size),
           static_cast<unsigned long long>(k.kernarg_segment_size), shown_name(k.name, o.demangle).c_str());
  }
  for (const auto& f : c.co.device_functions)
    printf("      device function (not a kernel): %s\n", shown_name(f, o.demangle).c_str());
  for (const auto& f : c.co.kernels_without_metadata)
    printf("      kernel descriptor without metadata: %s\n", shown_name(f, o.demangle).c_str());
}

// One image of file `path`: its kind, entries with their offsets, code objects, findings;
// `checked`: the same image checked against the targets (null without --target).
void print_image(const std::string& path, const ImageReport& img, const ImageReport* checked,
                 const std::vector<TargetId>& targets, const InspectOptions& o) {
  std::string head = img.location.empty() ? std::string(to_string(img.kind)) : img.location;
  if (img.kind == PayloadKind::CompressedBundle)
    head += " (CCOB v" + std::to_string(img.ccob_version) + ", " + (img.ccob_method == 1 ? "zstd" : "zlib") + ")";
  if (img.kind != PayloadKind::CodeObject) head += ", file offset " + std::to_string(img.file_offset);
  printf("  %s\n", head.c_str());
  // Offsets: in the bundle (clang-offload-bundler), and in the file as
  // roc-obj-ls prints them (file://PATH#offset=N&size=M); entries of a
  // compressed bundle have no place in the file.
  bool in_file = img.kind == PayloadKind::OffloadBundle;
  for (const auto& e : img.entries) {
    std::string where = "at offset " + std::to_string(e.offset) +
                        (in_file ? ", file offset " + std::to_string(img.file_offset + e.offset) : " (compressed)");
    printf("    entry %-52s %10s %s\n", escape_text(e.id).c_str(), human_bytes(e.size).c_str(), where.c_str());
    if (o.output.verbose && in_file && e.size)
      printf("      file://%s#offset=%llu&size=%llu\n", escape_text(path).c_str(),
             static_cast<unsigned long long>(img.file_offset + e.offset), static_cast<unsigned long long>(e.size));
  }
  if (checked) print_selection(img, *checked, targets, o.output);
  for (const auto& c : img.code_objects) print_code_object(c, o);
  for (const auto& d : img.diagnostics) printf("    %s\n", paint_line(o.output.color, format_line(d)).c_str());
}

// `checked`: the same files checked against --target (empty without).
void print_inspect(const std::vector<FileReport>& reports, const std::vector<FileReport>& checked,
                   const std::vector<TargetId>& targets, const InspectOptions& o) {
  for (size_t ri = 0; ri < reports.size(); ++ri) {
    const FileReport& r = reports[ri];
    printf("%s\n", paint(o.output.color, "1", escape_text(r.path)).c_str());
    if (!r.needed_by.empty()) printf("  needed by %s\n", escape_text(r.needed_by).c_str());
    for (const auto& d : r.diagnostics) printf("  %s\n", paint_line(o.output.color, format_line(d)).c_str());
    size_t bundles = 0;
    for (const auto& img : r.images)
      if (img.kind != PayloadKind::CodeObject) ++bundles;
    if (bundles) printf("  %zu offload bundle(s)\n", bundles);
    for (size_t ii = 0; ii < r.images.size(); ++ii) {
      bool with_checked = ri < checked.size() && ii < checked[ri].images.size();
      print_image(r.path, r.images[ii], with_checked ? &checked[ri].images[ii] : nullptr, targets, o);
    }
  }
}

}  // namespace

int run_inspect(const InspectOptions& o) {
  auto resolved = resolve_targets(o.input.targets);
  if (!resolved) return usage_error("inspect", resolved.error().message);
  const std::vector<TargetId>& targets = *resolved;
  if (!o.sort.empty() && o.sort != "lds" && o.sort != "scratch" && o.sort != "vgpr" && o.sort != "name")
    return usage_error("inspect", "--sort must be lds, scratch, vgpr or name (got '" + o.sort + "')");
  const std::vector<std::string>& paths = o.input.paths;
  if (paths.empty()) return usage_error("inspect", "inspect needs at least one PATH");
  auto read = read_input_options(
      o.input, o.deps,
      CheckPathsOptions{targets, 0, /*empty_directory_is_error=*/false, Depth::Full, {}, {}, false, {}, {}, {}});
  if (!read) return usage_error("inspect", read.error().message);
  CheckPathsOptions& options = *read;
  CheckPathsResult result;
  if (o.json) {  // streamed as the files are read; with --target, what would be selected
    auto os = stdio_ostream(stdout);
    auto writer = make_report_writer(ReportFormat::Json, *os, targets);
    result = check_paths(paths, options, *writer);
    writer->finish();
  } else if (targets.empty()) {  // printed file by file
    auto print = [&](FileReport& r) {
      std::vector<FileReport> one;
      one.push_back(std::move(r));
      print_inspect(one, {}, targets, o);
    };
    CollectSink sink(/*keep_parsed=*/true, print, /*keep=*/false);
    result = check_paths(paths, options, sink);
  } else {
    // Every code object (no targets), and beside it what each target selects.
    CollectSink all(/*keep_parsed=*/true), checked(/*keep_parsed=*/false);
    Progress progress(!o.output.quiet, o.input.progress_delay_ms);
    options.progress = [&](size_t done, size_t total, const std::string& path) {
      progress.file_done(done, total, path);
    };
    CheckPathsOptions structural = options;
    structural.targets.clear();
    structural.dependency_targets = targets;  // the same kernel files as `checked`
    result = check_paths(paths, structural, all);
    check_paths(paths, options, checked);
    progress.clear();
    print_inspect(all.reports, checked.reports, targets, o);
  }
  // inspect describes; it fails only when an input could not be read at all.
  return result.unreadable ? kExitProblems : kExitOk;
}

}  // namespace hipguard
