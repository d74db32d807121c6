// hipguard targets: the products, processors and HIP runtimes the checks know, and the sources of their facts.
#include <cstdio>

#include "cli/common.h"

namespace hipguard {
namespace {

std::string feature_name(Feature f) {
  switch (f) {
    case Feature::On: return "+";
    case Feature::Off: return "-";
    case Feature::Any: return "any";
    case Feature::Unsupported: return "n/a";
  }
  return "?";
}

std::string waves(const ProcessorInfo& p) { return p.wave32 && p.wave64 ? "32,64" : p.wave32 ? "32" : "64"; }

void print_products() {
  printf("Products (checked as shipped; NAME:xnack+ etc. for another setting)\n");
  printf("  %-13s %-24s %-26s %-10s %s\n", "NAME", "GPU", "TARGET ID", "LDS", "WAVE");
  for (const auto& p : all_products()) {
    auto t = parse_target(p.name);
    const ProcessorInfo* info = find_processor(p.processor);
    if (!t || !info) continue;
    printf("  %-13s %-24s %-26s %-10s %s\n", std::string(p.name).c_str(), std::string(p.display).c_str(),
           t->str().c_str(), human_bytes(info->lds_bytes).c_str(), waves(*info).c_str());
  }
}

void print_processors() {
  printf("\nProcessors (a bare processor is checked in each configuration its products ship with)\n");
  printf("  %-16s %-10s %-6s %-7s %-8s %-14s %s\n", "PROCESSOR", "LDS", "WAVE", "XNACK", "SRAMECC", "XNACK DEFAULT",
         "CHECKED AS");
  for (const auto& p : all_processors()) {
    std::string as;
    if (auto ts = resolve_target(p.name))
      for (const auto& t : *ts) as += (as.empty() ? "" : ", ") + t.str();
    printf("  %-16s %-10s %-6s %-7s %-8s %-14s %s%s\n", std::string(p.name).c_str(), human_bytes(p.lds_bytes).c_str(),
           waves(p).c_str(), p.xnack ? "yes" : "no", p.sramecc ? "yes" : "no",
           p.xnack ? feature_name(p.default_xnack).c_str() : "n/a", as.c_str(),
           p.legacy       ? " (legacy)"
           : p.is_generic ? " (generic)"
                          : "");
  }
}

void print_runtimes() {
  printf("\nHIP runtimes (check --runtime; default %s, the newest)\n", std::string(default_runtime().name).c_str());
  printf("  %-8s %-8s %-8s %-15s %-13s %s\n", "VERSION", "GENERIC", "SPIR-V", "GENERIC NAME", "ONE PROCESS", "SOURCE");
  for (const auto& r : all_runtimes())
    printf("  %-8s %-8s %-8s %-15s %-13s %s\n", std::string(r.name).c_str(), r.generic ? "yes" : "no",
           r.spirv ? "yes" : "no",
           !r.generic                 ? "-"
           : r.generic_keeps_features ? "with features"
                                      : "bare",
           !r.batch_lookup             ? "per GPU"
           : r.own_parser_with_generic ? "batch*"
                                       : "batch",
           std::string(r.source).c_str());
  printf(
      "  (batch: one comgr lookup for all GPUs, an entry serves one GPU; *: per GPU when an uncompressed bundle "
      "has a generic entry)\n");
}

}  // namespace

// The product and processor tables the checks use; not --quiet, the runtimes and sources too.
int run_targets(const TargetsOptions& o) {
  print_products();
  print_processors();
  if (o.output.quiet) return kExitOk;
  print_runtimes();
  printf("\nSources\n");
  for (const auto& f : fact_sources()) printf("  %s: %s\n", std::string(f.fact).c_str(), std::string(f.source).c_str());
  return kExitOk;
}

}  // namespace hipguard
