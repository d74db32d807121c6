#include "hipguard/report.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

namespace hipguard {
namespace {

// JSON strings must be UTF-8. A name or path that is not keeps its exact bytes
// in "<key>_hex" (two hex digits per byte); "<key>" then has U+FFFD for each
// invalid sequence (docs/report.md).
void put_text(llvm::json::Object& o, llvm::StringRef key, const std::string& text) {
  if (llvm::json::isUTF8(text)) {
    o[key] = text;
    return;
  }
  o[key] = llvm::json::fixUTF8(text);
  std::string hex;
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char c : text) hex += kHex[c >> 4], hex += kHex[c & 15];
  o[(key + "_hex").str()] = std::move(hex);
}

}  // namespace

llvm::json::Value diagnostic_json(const Diagnostic& d) {
  llvm::json::Object o{{"code", d.code}, {"severity", std::string(to_string(d.severity))}};
  put_text(o, "file", d.file);
  put_text(o, "entry", d.entry);
  put_text(o, "kernel", d.kernel);
  put_text(o, "target", d.target);
  put_text(o, "message", d.message);
  put_text(o, "fix", d.fix);
  if (d.value) o["value"] = static_cast<int64_t>(*d.value);
  if (d.limit) o["limit"] = static_cast<int64_t>(*d.limit);
  return o;
}

namespace {

llvm::json::Value code_object_json(const CodeObjectSummary& c) {
  llvm::json::Array kernels, devfns, orphans;
  for (const auto& k : c.co.kernels) {
    llvm::json::Object o{{"group_segment_fixed_size", static_cast<int64_t>(k.group_segment_fixed_size)},
                         {"private_segment_fixed_size", static_cast<int64_t>(k.private_segment_fixed_size)},
                         {"kernarg_segment_size", static_cast<int64_t>(k.kernarg_segment_size)},
                         {"kernarg_segment_align", static_cast<int64_t>(k.kernarg_segment_align)},
                         {"wavefront_size", static_cast<int64_t>(k.wavefront_size)},
                         {"max_flat_workgroup_size", static_cast<int64_t>(k.max_flat_workgroup_size)},
                         {"sgpr_count", static_cast<int64_t>(k.sgpr_count)},
                         {"vgpr_count", static_cast<int64_t>(k.vgpr_count)},
                         {"uses_dynamic_stack", k.uses_dynamic_stack},
                         {"args", static_cast<int64_t>(k.args.size())}};
    put_text(o, "name", k.name);
    put_text(o, "symbol", k.symbol);
    if (k.agpr_count) o["agpr_count"] = static_cast<int64_t>(*k.agpr_count);
    if (k.descriptor)
      o["descriptor"] = llvm::json::Object{
          {"group_segment_fixed_size", static_cast<int64_t>(k.descriptor->group_segment_fixed_size)},
          {"private_segment_fixed_size", static_cast<int64_t>(k.descriptor->private_segment_fixed_size)},
          {"kernarg_size", static_cast<int64_t>(k.descriptor->kernarg_size)},
          {"compute_pgm_rsrc1", static_cast<int64_t>(k.descriptor->compute_pgm_rsrc1)},
          {"compute_pgm_rsrc2", static_cast<int64_t>(k.descriptor->compute_pgm_rsrc2)},
          {"compute_pgm_rsrc3", static_cast<int64_t>(k.descriptor->compute_pgm_rsrc3)},
          {"kernel_code_properties", static_cast<int64_t>(k.descriptor->kernel_code_properties)}};
    kernels.push_back(std::move(o));
  }
  for (const auto& f : c.co.device_functions) devfns.push_back(llvm::json::fixUTF8(f));
  for (const auto& f : c.co.kernels_without_metadata) orphans.push_back(llvm::json::fixUTF8(f));
  llvm::json::Object o{{"target", describe_target(c.co)},
                            {"e_flags", static_cast<int64_t>(c.co.e_flags)},
                            {"code_object_version", static_cast<int64_t>(c.co.version)},
                            {"size", static_cast<int64_t>(c.co.size)},
                            {"kernels", std::move(kernels)},
                            {"device_functions", std::move(devfns)},
                            {"kernels_without_metadata", std::move(orphans)}};
  put_text(o, "entry", c.entry);
  return o;
}

}  // namespace

std::string report_json(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets, const RunInfo* run) {
  llvm::json::Array files;
  for (const auto& r : reports) {
    llvm::json::Array images, fdiags;
    for (const auto& d : r.diagnostics) fdiags.push_back(diagnostic_json(d));
    for (const auto& img : r.images) {
      llvm::json::Array verdicts, diags, cos, entries;
      for (const auto& v : img.verdicts)
        verdicts.push_back(llvm::json::Object{{"target", v.target.str()},
                                              {"can_run", v.can_run},
                                              {"selection", std::string(to_string(v.selection))},
                                              {"selected", llvm::json::fixUTF8(v.selected)}});
      for (const auto& d : img.diagnostics) diags.push_back(diagnostic_json(d));
      for (const auto& e : img.entries) {
        llvm::json::Object entry{{"offset", static_cast<int64_t>(e.offset)}, {"size", static_cast<int64_t>(e.size)}};
        put_text(entry, "id", e.id);
        entries.push_back(std::move(entry));
      }
      for (const auto& c : img.code_objects) cos.push_back(code_object_json(c));
      llvm::json::Object image{{"location", llvm::json::fixUTF8(img.location)},
                               {"kind", std::string(to_string(img.kind))},
                               {"ok", img.ok()},
                               {"entries", std::move(entries)},
                               {"code_objects", std::move(cos)},
                               {"verdicts", std::move(verdicts)},
                               {"diagnostics", std::move(diags)}};
      if (img.kind == PayloadKind::CompressedBundle) {
        image["ccob_version"] = static_cast<int64_t>(img.ccob_version);
        image["compression"] = img.ccob_method == 0 ? "zlib" : img.ccob_method == 1 ? "zstd" : "unknown";
      }
      images.push_back(std::move(image));
    }
    llvm::json::Object file{{"ok", r.ok()}, {"images", std::move(images)}, {"diagnostics", std::move(fdiags)}};
    put_text(file, "path", r.path);
    files.push_back(std::move(file));
  }
  llvm::json::Array tlist;
  for (const auto& t : targets) tlist.push_back(t.str());
  llvm::json::Object doc{{"schema", "hipguard-report/1"}, {"targets", std::move(tlist)}, {"files", std::move(files)}};
  if (run) {
    llvm::json::Array devices, kernels;
    for (const auto& d : run->devices) devices.push_back(d);
    for (const auto& k : run->kernels) {
      llvm::json::Array codes;
      for (const auto& c : k.codes) codes.push_back(c);
      llvm::json::Object kernel{{"launches", static_cast<int64_t>(k.launches)},
                                {"blocked", static_cast<int64_t>(k.blocked)},
                                {"findings", std::move(codes)}};
      put_text(kernel, "name", k.name);
      put_text(kernel, "file", k.file);
      kernels.push_back(std::move(kernel));
    }
    llvm::json::Array consequences;
    for (const auto& d : run->consequences) consequences.push_back(diagnostic_json(d));
    llvm::json::Object r{{"pid", static_cast<int64_t>(run->pid)},
                         {"consequences", std::move(consequences)},
                         {"mode", run->mode},
                         {"target_source", run->target_source},
                         {"devices", std::move(devices)},
                         {"kernels", std::move(kernels)},
                         {"not_listed", static_cast<int64_t>(run->not_listed)}};
    put_text(r, "program", run->program);
    doc["run"] = std::move(r);
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(doc)));
  os.flush();
  return out;
}


// escape_text (no control characters or invalid UTF-8 survive: XML 1.0 allows
// neither), then XML's own escapes.
std::string xml_escape(const std::string& text) {
  std::string o, s = escape_text(text);
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string report_junit(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets) {
  // One testsuite per target, one testcase per image; a failure per error diagnostic.
  std::string body;
  size_t tests = 0, failures = 0;
  std::vector<TargetId> ts = targets;
  bool structural = ts.empty();
  if (structural) {
    TargetId none;
    none.processor = "structural";
    ts.push_back(none);
  }
  for (size_t t = 0; t < ts.size(); ++t) {
    std::string suite;
    size_t st = 0, sf = 0;
    for (const auto& r : reports) {
      for (const auto& img : r.images) {
        ++st;
        std::string name = img.location.empty() ? img.origin : img.origin + " [" + img.location + "]";
        std::string fails;
        for (const auto& d : img.diagnostics) {
          if (d.severity != Severity::Error) continue;
          if (!structural && !d.target.empty() && d.target != ts[t].str()) continue;
          fails += "<failure type=\"" + d.code + "\" message=\"" + xml_escape(d.message) + "\">" +
                   xml_escape(format_line(d)) + "</failure>";
        }
        if (!fails.empty()) ++sf;
        suite += "  <testcase classname=\"hipguard." + xml_escape(ts[t].str()) + "\" name=\"" + xml_escape(name) + "\">" +
                 fails + "</testcase>\n";
      }
      for (const auto& d : r.diagnostics) {
        if (d.severity != Severity::Error) continue;
        ++st, ++sf;
        suite += "  <testcase classname=\"hipguard." + xml_escape(ts[t].str()) + "\" name=\"" + xml_escape(r.path) +
                 "\"><failure type=\"" + d.code + "\" message=\"" + xml_escape(d.message) + "\"/></testcase>\n";
      }
    }
    tests += st;
    failures += sf;
    body += " <testsuite name=\"hipguard " + xml_escape(ts[t].str()) + "\" tests=\"" + std::to_string(st) +
            "\" failures=\"" + std::to_string(sf) + "\">\n" + suite + " </testsuite>\n";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"" + std::to_string(tests) + "\" failures=\"" +
         std::to_string(failures) + "\">\n" + body + "</testsuites>\n";
}

}  // namespace hipguard
