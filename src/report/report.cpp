// The JSON report, and the report formats rendered by one writer each (JUnit: junit.cpp, SARIF: sarif.cpp).
#include "hipguard/report.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include "hipguard/version.h"
#include "report/report_internal.h"

namespace hipguard {

// ------------------------------------------------------------------ summary

void SeverityCounts::add(Severity s) {
  switch (s) {
    case Severity::Error: ++error; break;
    case Severity::Warning: ++warning; break;
    case Severity::Note: ++note; break;
  }
}

ReportSummary::ReportSummary(const std::vector<TargetId>& targets) {
  for (const auto& t : targets) {
    TargetSummary s;
    s.target = t.str();
    per_target.push_back(std::move(s));
  }
}

void ReportSummary::add_diagnostic(const Diagnostic& d) {
  all.add(d.severity);
  if (d.target.empty()) {
    structural.add(d.severity);
    return;
  }
  for (auto& t : per_target)
    if (t.target == d.target) {
      t.diagnostics.add(d.severity);
      return;
    }
  other_targets.add(d.severity);  // a target not in the list (never from the CLI)
}

void ReportSummary::add_image(const ImageReport& img) {
  ++images;
  if (!img.structurally_ok) ++structural_failed_images;
  for (const auto& c : img.code_objects) ++code_objects, kernels += c.co.kernels.size();
  for (size_t t = 0; t < per_target.size(); ++t) {
    if (t < img.verdicts.size() && img.verdicts[t].other_target) {
      ++per_target[t].other_target;
      continue;
    }
    bool can_run = t < img.verdicts.size() && img.verdicts[t].can_run;
    ++(can_run ? per_target[t].can_run : per_target[t].cannot_run);
  }
  for (const auto& d : img.diagnostics) add_diagnostic(d);
}

void ReportSummary::add_file(const FileReport& r) {
  ++files;
  bool error = false;
  for (const auto& d : r.diagnostics) {
    add_diagnostic(d);
    error = error || d.severity == Severity::Error;
  }
  if (error) ++file_errors;
}

// --------------------------------------------------------------------- JSON

namespace {

using llvm::json::OStream;

// JSON strings must be UTF-8. A name or path that is not keeps its exact bytes
// in "<key>_hex" (two hex digits per byte); "<key>" then has U+FFFD for each
// invalid sequence (docs/report.md).
void put_text(OStream& j, llvm::StringRef key, const std::string& text) {
  if (llvm::json::isUTF8(text)) {
    j.attribute(key, llvm::StringRef(text));
    return;
  }
  j.attribute(key, llvm::json::fixUTF8(text));
  std::string hex;
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char c : text) hex += kHex[c >> 4], hex += kHex[c & 15];
  j.attribute((key + "_hex").str(), hex);
}

llvm::StringRef utf8(const std::string& s, std::string& fixed) {
  if (llvm::json::isUTF8(s)) return s;
  fixed = llvm::json::fixUTF8(s);
  return fixed;
}

void write_diag(OStream& j, const Diagnostic& d) {
  j.object([&] {
    j.attribute("code", llvm::StringRef(code_string(d.code)));
    j.attribute("severity", llvm::StringRef(to_string(d.severity)));
    put_text(j, "file", d.file);
    put_text(j, "entry", d.entry);
    put_text(j, "kernel", d.kernel);
    put_text(j, "target", d.target);
    put_text(j, "message", d.message);
    put_text(j, "fix", d.fix);
    if (d.value) j.attribute("value", static_cast<int64_t>(*d.value));
    if (d.limit) j.attribute("limit", static_cast<int64_t>(*d.limit));
  });
}

void write_diags(OStream& j, llvm::StringRef key, const std::vector<Diagnostic>& diags) {
  j.attributeArray(key, [&] {
    for (const auto& d : diags) write_diag(j, d);
  });
}

int64_t i64(uint64_t v) { return static_cast<int64_t>(v); }

void write_code_object(OStream& j, const CodeObjectSummary& c) {
  std::string fixed;
  j.object([&] {
    put_text(j, "entry", c.entry);
    j.attribute("target", describe_target(c.co));
    j.attribute("e_flags", i64(c.co.e_flags));
    j.attribute("code_object_version", i64(c.co.version));
    j.attribute("size", i64(c.co.size));
    j.attributeArray("kernels", [&] {
      for (const auto& k : c.co.kernels)
        j.object([&] {
          put_text(j, "name", k.name);
          put_text(j, "symbol", k.symbol);
          j.attribute("group_segment_fixed_size", i64(k.group_segment_fixed_size));
          j.attribute("private_segment_fixed_size", i64(k.private_segment_fixed_size));
          j.attribute("kernarg_segment_size", i64(k.kernarg_segment_size));
          j.attribute("kernarg_segment_align", i64(k.kernarg_segment_align));
          j.attribute("wavefront_size", i64(k.wavefront_size));
          j.attribute("max_flat_workgroup_size", i64(k.max_flat_workgroup_size));
          j.attribute("sgpr_count", i64(k.sgpr_count));
          j.attribute("vgpr_count", i64(k.vgpr_count));
          if (k.agpr_count) j.attribute("agpr_count", i64(*k.agpr_count));
          j.attribute("uses_dynamic_stack", k.uses_dynamic_stack);
          j.attribute("args", i64(k.args.size()));
          if (k.descriptor)
            j.attributeObject("descriptor", [&] {
              const KernelDescriptor& d = *k.descriptor;
              j.attribute("group_segment_fixed_size", i64(d.group_segment_fixed_size));
              j.attribute("private_segment_fixed_size", i64(d.private_segment_fixed_size));
              j.attribute("kernarg_size", i64(d.kernarg_size));
              j.attribute("compute_pgm_rsrc1", i64(d.compute_pgm_rsrc1));
              j.attribute("compute_pgm_rsrc2", i64(d.compute_pgm_rsrc2));
              j.attribute("compute_pgm_rsrc3", i64(d.compute_pgm_rsrc3));
              j.attribute("kernel_code_properties", i64(d.kernel_code_properties));
            });
        });
    });
    j.attributeArray("device_functions", [&] {
      for (const auto& f : c.co.device_functions) j.value(utf8(f, fixed));
    });
    j.attributeArray("kernels_without_metadata", [&] {
      for (const auto& f : c.co.kernels_without_metadata) j.value(utf8(f, fixed));
    });
  });
}

void write_image(OStream& j, const ImageReport& img) {
  std::string fixed;
  j.object([&] {
    j.attribute("location", utf8(img.location, fixed));
    j.attribute("kind", llvm::StringRef(to_string(img.kind)));
    if (img.kind == PayloadKind::CompressedBundle) {
      j.attribute("ccob_version", i64(img.ccob_version));
      j.attribute("compression", img.ccob_method == 0 ? "zlib" : img.ccob_method == 1 ? "zstd" : "unknown");
    }
    j.attribute("ok", img.ok());
    j.attributeArray("entries", [&] {
      for (const auto& e : img.entries)
        j.object([&] {
          put_text(j, "id", e.id);
          j.attribute("offset", i64(e.offset));
          j.attribute("size", i64(e.size));
        });
    });
    j.attributeArray("code_objects", [&] {
      for (const auto& c : img.code_objects) write_code_object(j, c);
    });
    j.attributeArray("verdicts", [&] {
      for (const auto& v : img.verdicts)
        j.object([&] {
          j.attribute("target", v.target.str());
          j.attribute("can_run", v.can_run);
          j.attribute("selection", llvm::StringRef(to_string(v.selection)));
          j.attribute("selected", utf8(v.selected, fixed));
          j.attribute("kernels", i64(v.kernels));
          if (v.other_target) j.attribute("other_target", true);
        });
    });
    write_diags(j, "diagnostics", img.diagnostics);
  });
}

void write_counts(OStream& j, const SeverityCounts& c) {
  j.attribute("error", i64(c.error));
  j.attribute("warning", i64(c.warning));
  j.attribute("note", i64(c.note));
}

void write_summary(OStream& j, const ReportSummary& s) {
  j.attributeObject("summary", [&] {
    j.attribute("files", i64(s.files));
    j.attribute("file_errors", i64(s.file_errors));
    j.attribute("images", i64(s.images));
    j.attribute("code_objects", i64(s.code_objects));
    j.attribute("kernels", i64(s.kernels));
    j.attributeObject("diagnostics", [&] { write_counts(j, s.all); });
    j.attributeObject("structural", [&] {
      j.attribute("failed_images", i64(s.structural_failed_images));
      write_counts(j, s.structural);
    });
    j.attributeArray("targets", [&] {
      for (const auto& t : s.per_target)
        j.object([&] {
          j.attribute("target", t.target);
          j.attribute("can_run", i64(t.can_run));
          j.attribute("cannot_run", i64(t.cannot_run));
          j.attribute("other_target", i64(t.other_target));
          write_counts(j, t.diagnostics);
        });
    });
  });
}

// Kernel libraries (check_paths.h, LibrarySummary): what each target can load from each.
void write_libraries(OStream& j, const std::vector<LibrarySummary>& libraries) {
  j.attributeArray("libraries", [&] {
    for (const auto& l : libraries)
      j.object([&] {
        put_text(j, "name", l.name);
        j.attribute("files", i64(l.files));
        j.attributeArray("built_for", [&] {
          std::string fixed;
          for (const auto& b : l.built_for) j.value(utf8(b, fixed));
        });
        j.attributeArray("targets", [&] {
          for (const auto& t : l.targets)
            j.object([&] {
              j.attribute("target", t.target.str());
              j.attribute("can_run", t.code_objects > 0 && t.failing == 0);
              j.attribute("code_objects", i64(t.code_objects));
              j.attribute("kernels", i64(t.kernels));
              j.attribute("failing", i64(t.failing));
              j.attribute("other_target", i64(t.other));
            });
        });
      });
  });
}

void write_run(OStream& j, const RunInfo& run) {
  j.attributeObject("run", [&] {
    put_text(j, "program", run.program);
    j.attribute("pid", i64(run.pid));
    j.attribute("mode", run.mode);
    j.attribute("target_source", run.target_source);
    j.attributeArray("devices", [&] {
      for (const auto& d : run.devices) j.value(d);
    });
    j.attributeArray("kernels", [&] {
      for (const auto& k : run.kernels)
        j.object([&] {
          put_text(j, "name", k.name);
          put_text(j, "file", k.file);
          j.attribute("launches", i64(k.launches));
          j.attribute("blocked", i64(k.blocked));
          j.attributeArray("findings", [&] {
            for (Code c : k.codes) j.value(llvm::StringRef(code_string(c)));
          });
        });
    });
    write_diags(j, "consequences", run.consequences);
    j.attribute("not_listed", i64(run.not_listed));
  });
}

class JsonWriter final : public ReportWriter {
 public:
  JsonWriter(llvm::raw_ostream& os, const std::vector<TargetId>& targets) : os_(os), j_(os, 2), summary_(targets) {
    j_.objectBegin();
    j_.attribute("schema", kReportSchema);
    j_.attributeObject("tool", [&] {
      j_.attribute("name", "hipguard");
      j_.attribute("version", HIPGUARD_VERSION_STRING);
    });
    j_.attributeArray("targets", [&] {
      for (const auto& t : targets) j_.value(t.str());
    });
    j_.attributeBegin("files");
    j_.arrayBegin();
  }

  void begin_file(const std::string& path) override {
    j_.objectBegin();
    put_text(j_, "path", path);
    j_.attributeBegin("images");
    j_.arrayBegin();
    file_ok_ = true;
  }

  void image(ImageReport&& img) override {
    write_image(j_, img);
    summary_.add_image(img);
    file_ok_ = file_ok_ && img.ok();
  }

  void end_file(FileReport&& r) override {
    j_.arrayEnd();
    j_.attributeEnd();
    if (!r.library.empty()) put_text(j_, "library", r.library);
    write_diags(j_, "diagnostics", r.diagnostics);
    if (!r.needed_by.empty()) put_text(j_, "needed_by", r.needed_by);  // a dependency: who loads it
    for (const auto& d : r.diagnostics) file_ok_ = file_ok_ && d.severity != Severity::Error;
    j_.attribute("ok", file_ok_);
    j_.objectEnd();
    summary_.add_file(r);
  }

  void library(LibrarySummary&& l) override { libraries_.push_back(std::move(l)); }
  void support(const std::vector<SupportRow>& rows) override { support_ = rows; }

  void finish(const RunInfo* run) override {
    j_.arrayEnd();
    j_.attributeEnd();
    if (!libraries_.empty()) write_libraries(j_, libraries_);
    if (!support_.empty()) write_support(j_, support_);
    write_summary(j_, summary_);
    if (run) write_run(j_, *run);
    j_.objectEnd();
    j_.flush();
    os_ << "\n";
    os_.flush();
  }

 private:
  llvm::raw_ostream& os_;
  OStream j_;
  ReportSummary summary_;
  bool file_ok_ = true;
  std::vector<LibrarySummary> libraries_;
  std::vector<SupportRow> support_;
};

class StdioOStream final : public llvm::raw_ostream {
 public:
  explicit StdioOStream(std::FILE* f) : f_(f) {}
  ~StdioOStream() override { flush(); }

 private:
  void write_impl(const char* p, size_t n) override {
    std::fwrite(p, 1, n, f_);
    pos_ += n;
  }
  uint64_t current_pos() const override { return pos_; }
  std::FILE* f_;
  uint64_t pos_ = 0;
};

std::string render(ReportFormat format, const std::vector<FileReport>& reports, const std::vector<TargetId>& targets,
                   const RunInfo* run) {
  std::string out;
  llvm::raw_string_ostream os(out);
  auto w = make_report_writer(format, os, targets);
  for (const auto& r : reports) {
    w->begin_file(r.path);
    for (const auto& img : r.images) w->image(ImageReport(img));
    FileReport rest;
    rest.path = r.path;
    rest.diagnostics = r.diagnostics;
    rest.hip = r.hip;
    rest.needed_by = r.needed_by;
    w->end_file(std::move(rest));
  }
  w->finish(run);
  os.flush();
  return out;
}

}  // namespace

// Which GPUs the files run on (hipguard/support.h): a row per shipped configuration.
void write_support(llvm::json::OStream& j, const std::vector<SupportRow>& rows) {
  j.attributeArray("support", [&] {
    for (const auto& r : rows)
      j.object([&] {
        j.attribute("target", r.target.str());
        j.attributeArray("products", [&] {
          for (const auto& p : r.products) j.value(p);
        });
        j.attribute("runs", r.runs);
        if (!r.runs) put_text(j, "cause", r.cause);
        if (r.code) j.attribute("code", llvm::StringRef(code_string(*r.code)));
      });
  });
}

// The same object write_diag streams, as a value (the shim's journal lines).
llvm::json::Value diagnostic_json(const Diagnostic& d) {
  std::string text;
  llvm::raw_string_ostream os(text);
  {
    OStream j(os);
    write_diag(j, d);
  }
  os.flush();
  auto v = llvm::json::parse(text);
  if (!v) {
    llvm::consumeError(v.takeError());  // write_diag writes valid JSON; were it not, an empty object stands in
    return llvm::json::Object{};
  }
  return std::move(*v);
}

std::unique_ptr<ReportWriter> make_report_writer(ReportFormat format, llvm::raw_ostream& os,
                                                 const std::vector<TargetId>& targets) {
  switch (format) {
    case ReportFormat::Json: return std::make_unique<JsonWriter>(os, targets);
    case ReportFormat::JUnit: return make_junit_writer(os, targets);
    case ReportFormat::Sarif: return make_sarif_writer(os, targets);
  }
  return nullptr;
}

std::unique_ptr<llvm::raw_ostream> stdio_ostream(std::FILE* f) { return std::make_unique<StdioOStream>(f); }

std::string report_json(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets,
                        const RunInfo* run) {
  std::string doc = render(ReportFormat::Json, reports, targets, run);
  if (!doc.empty() && doc.back() == '\n') doc.pop_back();  // as before: the caller adds the newline
  return doc;
}

std::string report_junit(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets) {
  return render(ReportFormat::JUnit, reports, targets, nullptr);
}

std::string report_sarif(const std::vector<FileReport>& reports, const std::vector<TargetId>& targets) {
  return render(ReportFormat::Sarif, reports, targets, nullptr);
}

}  // namespace hipguard
