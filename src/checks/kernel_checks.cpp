// Kernel checks: parse_code_object (read, then judge), structural findings and per-processor limits.
#include "checks/kernel_checks.h"

#include <llvm/Support/AMDHSAKernelDescriptor.h>

#include <algorithm>

#include "format/read_code_object.h"
#include "hipguard/check.h"
#include "hipguard/diagnostic.h"

namespace hipguard {
namespace {

std::string kib(uint64_t bytes) {
  if (bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  return buf;
}

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

// VGPR encoding granule of compute_pgm_rsrc1 (AMDGPUBaseInfo getVGPREncodingGranule;
// AMDGPUUsage compute_pgm_rsrc1): 8 on gfx90a-class, 16 for wave32 with gfx125x's
// 1024 VGPRs, 8 for wave32 on gfx10+, else 4.
uint64_t vgpr_granule(const ProcessorInfo& p, bool wave32) {
  if (p.unified_vgprs) return 8;
  if (p.vgprs == 1024) return wave32 ? 16 : 8;
  if (p.major >= 10 && wave32) return 8;
  return 4;
}

// The findings past kMaxIssuesPerCodeObject as one HG112 finding, with the
// severity of the worst of them (a dropped error still fails the verdict).
void summarize_dropped_issues(CodeObject& co) {
  while (co.issues.size() > kMaxIssuesPerCodeObject) {
    ++co.issues_dropped;
    co.dropped_severity = std::max(co.dropped_severity, issue_severity(co.issues.back()));
    co.issues.pop_back();
  }
  if (!co.issues_dropped) return;
  co.issues.push_back(
      {Code::kFindingsCapped, "",
       "and " + std::to_string(co.issues_dropped) +
           " more findings in this code object (the most severe: " + std::string(to_string(co.dropped_severity)) +
           "); hipguard reports at most " + std::to_string(kMaxIssuesPerCodeObject) + " per code object",
       co.dropped_severity, co.issues_dropped + kMaxIssuesPerCodeObject, kMaxIssuesPerCodeObject});
}

// Structural findings are not capped here: summarize_dropped_issues sums up the excess.
void add(CodeObject& co, Code c, const std::string& kernel, std::string msg,
         std::optional<Severity> severity = std::nullopt) {
  co.issues.push_back({c, kernel, std::move(msg), severity});
}

void check_generic_version(CodeObject& co) {
  if (co.processor && co.processor->is_generic && co.version < 6)
    add(co, Code::kCodeObjectVersion, "",
        "generic target " + std::string(co.processor->name) + " in a code object v" + std::to_string(co.version) +
            "; generic code objects require v6 (AMDGPUUsage, Generic Processors)");
}

// VGPR allocation: the hardware gives each work-item (compute_pgm_rsrc1
// GRANULATED_WORKITEM_VGPR_COUNT + 1) x granule VGPRs (AMDGPUUsage,
// compute_pgm_rsrc1). LLVM allocates at least what the kernel uses and often
// more: when LDS already limits the waves per SIMD, it raises the allocation to
// what that occupancy leaves free (AMDGPUAsmPrinter, NumVGPRsForWavesPerEU).
// So only an allocation below the use, or beyond the file, is a finding. The
// use is .vgpr_count (on gfx90a-class processors already VGPRs and AGPRs
// together; Tensile's assembler writes no .agpr_count there and its allocation
// covers both), on gfx908 the larger of .vgpr_count and .agpr_count (separate
// files of equal size).
void check_vgpr_allocation(CodeObject& co, const KernelInfo& k, const KernelDescriptor& d) {
  if (!co.processor) return;
  const ProcessorInfo& p = *co.processor;
  uint64_t g = vgpr_granule(p, d.wavefront_size32());
  uint64_t field = AMDHSA_BITS_GET(d.compute_pgm_rsrc1, llvm::amdhsa::COMPUTE_PGM_RSRC1_GRANULATED_WORKITEM_VGPR_COUNT);
  uint64_t allocated = (field + 1) * g;
  uint64_t used = p.unified_vgprs ? k.vgpr_count : std::max(k.vgpr_count, k.agpr_count.value_or(0));
  std::string how = " (compute_pgm_rsrc1 GRANULATED_WORKITEM_VGPR_COUNT " + std::to_string(field) + ", granule " +
                    std::to_string(g) + ")";
  if (allocated < used)
    add(co, Code::kDescriptorMismatch, k.name,
        "VGPRs: metadata says the kernel uses " + std::to_string(used) + ", kernel descriptor allocates only " +
            std::to_string(allocated) + how);
  else if (allocated > p.vgprs)
    add(co, Code::kDescriptorMismatch, k.name,
        "VGPRs: kernel descriptor allocates " + std::to_string(allocated) + how + "; " + std::string(p.name) +
            " addresses at most " + std::to_string(p.vgprs));
}

// Kernel descriptor vs metadata: the runtime reads the metadata, the hardware the
// descriptor. Nothing rejects a disagreement and hand-written kernels ship with
// them (hipBLASLt 7.1's extop_gfx90a.co: LDS 16 vs 32, 1024 vs 0), so it is a
// note; the limits are checked on the larger value (HG301, HG303).
void check_descriptor_matches_metadata(CodeObject& co, const KernelInfo& k, const KernelDescriptor* d) {
  auto differ = [&](const char* what, uint64_t md, uint64_t kd) {
    add(co, Code::kDescriptorMismatch, k.name,
        std::string(what) + ": metadata says " + std::to_string(md) + ", kernel descriptor says " + std::to_string(kd),
        Severity::Note);
  };
  if (d->group_segment_fixed_size != k.group_segment_fixed_size)
    differ("group_segment_fixed_size (static LDS bytes)", k.group_segment_fixed_size, d->group_segment_fixed_size);
  if (d->private_segment_fixed_size != k.private_segment_fixed_size)
    differ("private_segment_fixed_size (scratch bytes)", k.private_segment_fixed_size, d->private_segment_fixed_size);
  if (d->kernarg_size != 0 && d->kernarg_size != k.kernarg_segment_size)
    differ("kernarg size (bytes)", k.kernarg_segment_size, d->kernarg_size);
  uint64_t kd_wave = d->wavefront_size32() ? 32 : 64;
  if (k.wavefront_size && k.wavefront_size != kd_wave) differ("wavefront size", k.wavefront_size, kd_wave);
  if (co.version >= 5 && d->uses_dynamic_stack() != k.uses_dynamic_stack)
    differ("uses_dynamic_stack", k.uses_dynamic_stack, d->uses_dynamic_stack());
  check_vgpr_allocation(co, k, *d);
}

// Workgroup size limits (AMDGPUUsage: max_flat_workgroup_size >= 1; hardware max 1024).
// CLR rejects the code object for 0 (rockernel.cpp postLoad: workGroupInfo_.size_ == 0);
// nothing enforces the upper bound or .reqd_workgroup_size.
void check_workgroup_size(CodeObject& co, const KernelInfo& k) {
  if (k.max_flat_workgroup_size == 0)
    add(co, Code::kWorkgroupSize, k.name, ".max_flat_workgroup_size is 0; the runtime rejects the code object",
        Severity::Error);
  else if (k.max_flat_workgroup_size > 1024)
    add(co, Code::kWorkgroupSize, k.name,
        ".max_flat_workgroup_size is " + std::to_string(k.max_flat_workgroup_size) + "; it must be 1 to 1024");
  if (k.reqd_workgroup_size) {
    const auto& r = *k.reqd_workgroup_size;
    uint64_t product = r[0] * r[1] * r[2];  // each <= 2^64 in theory; guard overflow below
    bool overflow = r[0] && r[1] && r[2] && (r[0] > 1024 || r[1] > 1024 || r[2] > 1024);
    if (!r[0] || !r[1] || !r[2] || overflow || product > std::max<uint64_t>(k.max_flat_workgroup_size, 1))
      add(co, Code::kWorkgroupSize, k.name,
          ".reqd_workgroup_size " + std::to_string(r[0]) + "x" + std::to_string(r[1]) + "x" + std::to_string(r[2]) +
              " does not fit .max_flat_workgroup_size " + std::to_string(k.max_flat_workgroup_size));
  }
}

void check_dynamic_stack(CodeObject& co, const KernelInfo& k) {
  if (k.uses_dynamic_stack || (k.descriptor && k.descriptor->uses_dynamic_stack()))
    add(co, Code::kDynamicStack, k.name,
        "uses a dynamic call stack: its scratch need is " + std::to_string(k.private_segment_fixed_size) +
            " bytes per work-item plus a stack the compiler cannot size (recursion or indirect calls)");
}

// Arguments inside the kernarg segment, aligned, explicit before hidden, not overlapping.
void check_kernarg_layout(CodeObject& co, const KernelInfo& k) {
  if (!power_of_two(k.kernarg_segment_align))
    add(co, Code::kKernargLayout, k.name,
        ".kernarg_segment_align is " + std::to_string(k.kernarg_segment_align) + ", not a power of two");
  std::vector<const KernelArg*> sorted;
  bool seen_hidden = false;
  for (const auto& a : k.args) {
    uint64_t end;
    // Built only for a finding: this loop runs for every argument of every kernel.
    auto label = [&a] {
      return "argument '" + (a.name.empty() ? a.value_kind : a.name) + "' at offset " + std::to_string(a.offset);
    };
    if (__builtin_add_overflow(a.offset, a.size, &end) || end > k.kernarg_segment_size)
      add(co, Code::kKernargLayout, k.name,
          label() + " (" + std::to_string(a.size) + " bytes) ends beyond .kernarg_segment_size " +
              std::to_string(k.kernarg_segment_size));
    // Kernels read their arguments with scalar loads, which ignore the address's two
    // low bits (AMDGPU ISA, SMEM): a pointer at a dword-aligned offset is read whole
    // (Tensile packs 8-byte pointers at 4-byte offsets), one that is not is not.
    bool pointer_like = a.hidden() || a.value_kind == "global_buffer" || a.value_kind == "dynamic_shared_pointer";
    if (pointer_like && power_of_two(a.size) && a.size <= 8 && a.offset % std::min<uint64_t>(a.size, 4) != 0)
      add(co, Code::kKernargLayout, k.name,
          label() + " is not aligned to 4 bytes (scalar loads ignore the two low address bits)");
    if (a.hidden()) seen_hidden = true;
    else if (seen_hidden) add(co, Code::kKernargLayout, k.name, label() + " is an explicit argument after hidden ones");
    sorted.push_back(&a);
  }
  std::sort(sorted.begin(), sorted.end(), [](auto* x, auto* y) { return x->offset < y->offset; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    const KernelArg* prev = sorted[i - 1];
    uint64_t prev_end;
    if (!__builtin_add_overflow(prev->offset, prev->size, &prev_end) && prev_end > sorted[i]->offset)
      add(co, Code::kKernargLayout, k.name,
          "arguments at offsets " + std::to_string(prev->offset) + " (" + std::to_string(prev->size) + " bytes) and " +
              std::to_string(sorted[i]->offset) + " overlap");
  }
}

}  // namespace

void add_structural_kernel_issues(CodeObject& co) {
  check_generic_version(co);
  for (const auto& k : co.kernels) {
    if (k.descriptor) check_descriptor_matches_metadata(co, k, &*k.descriptor);
    check_workgroup_size(co, k);
    check_dynamic_stack(co, k);
    check_kernarg_layout(co, k);
  }
}

Result<CodeObject> parse_code_object(Bytes data, bool descriptors_only, uint64_t only_lds_over) {
  Result<CodeObject> co = read_code_object(data, descriptors_only, only_lds_over);  // ignored without descriptors_only
  if (!co) return co;
  if (descriptors_only) {  // the kernel checks judge metadata; warnings and notes wait for the check in full
    check_generic_version(*co);
    std::erase_if(co->issues, [](const CodeObjectIssue& i) { return issue_severity(i) != Severity::Error; });
  } else {
    add_structural_kernel_issues(*co);
  }
  summarize_dropped_issues(*co);
  return co;
}

std::vector<KernelFinding> check_kernels_on(const CodeObject& co, const ProcessorInfo& proc, bool lds_only) {
  std::vector<KernelFinding> out;
  const std::string p(proc.name);
  for (const auto& k : co.kernels) {
    // LDS: metadata (what the runtime allocates) and descriptor (what the hardware is told).
    uint64_t lds = k.group_segment_fixed_size;
    const char* source = "group_segment_fixed_size";  // built into a message only for a finding
    if (k.descriptor && k.descriptor->group_segment_fixed_size > lds) {
      lds = k.descriptor->group_segment_fixed_size;
      source = "kernel descriptor group_segment_fixed_size";
    }
    if (lds > proc.lds_bytes)
      out.push_back({Code::kLdsOverLimit, k.name,
                     "declares " + std::to_string(lds) + " bytes (" + kib(lds) + ") of static LDS (" +
                         std::string(source) + "); " + p + " provides at most " + std::to_string(proc.lds_bytes) +
                         " bytes (" + kib(proc.lds_bytes) + ") per workgroup",
                     "use a variant of this kernel built for " + p +
                         ", or reduce its LDS use (tile sizes, stages) to at most " + std::to_string(proc.lds_bytes) +
                         " bytes",
                     lds, proc.lds_bytes});
    if (lds_only) continue;

    // Wavefront size.
    uint64_t wave = k.wavefront_size;
    if (wave == 0 && k.descriptor) wave = k.descriptor->wavefront_size32() ? 32 : 64;
    if ((wave == 32 && !proc.wave32) || (wave == 64 && !proc.wave64) || (wave != 32 && wave != 64 && wave != 0))
      out.push_back({Code::kWavefrontSize, k.name,
                     "runs in wave" + std::to_string(wave) + "; " + p + " supports " +
                         (proc.wave32 && proc.wave64 ? "wave32 and wave64"
                          : proc.wave32              ? "wave32 only"
                                                     : "wave64 only"),
                     "rebuild for " + p +
                         (proc.wave64 && !proc.wave32 ? "" : " (-mwavefrontsize64 / -mno-wavefrontsize64 as needed)"),
                     wave, std::nullopt});

    // Register files (AMDGPUBaseInfo: addressable VGPRs/SGPRs).
    uint64_t agpr = k.agpr_count.value_or(0);
    if (proc.unified_vgprs) {
      // Here .vgpr_count is already the total: align4(arch VGPRs) + AGPRs (AMDGPUAsmPrinter).
      if (k.vgpr_count > proc.vgprs || agpr > 256)
        out.push_back({Code::kRegisterLimit, k.name,
                       "uses " + std::to_string(k.vgpr_count) + " VGPRs in total, " + std::to_string(agpr) +
                           " of them AGPRs; " + p + " has a unified file of " + std::to_string(proc.vgprs) +
                           " with at most 256 AGPRs",
                       "rebuild for " + p + " so the compiler can fit the register budget", k.vgpr_count, proc.vgprs});
    } else {
      uint64_t vlimit = proc.vgprs;
      if (k.vgpr_count > vlimit || agpr > 256)
        out.push_back({Code::kRegisterLimit, k.name,
                       "uses " + std::to_string(k.vgpr_count) + " VGPRs" +
                           (agpr ? " and " + std::to_string(agpr) + " AGPRs" : "") + "; " + p + " addresses at most " +
                           std::to_string(vlimit) + " VGPRs" + (agpr ? " and 256 AGPRs" : ""),
                       "rebuild for " + p + " so the compiler can fit the register budget", k.vgpr_count, vlimit});
    }
    // sgpr_count includes VCC, FLAT_SCRATCH and XNACK_MASK.
    uint64_t slimit = proc.major >= 10 ? 108 : 112;
    if (k.sgpr_count > slimit)
      out.push_back({Code::kRegisterLimit, k.name,
                     "uses " + std::to_string(k.sgpr_count) + " SGPRs; " + p + " allows at most " +
                         std::to_string(slimit) + " including VCC, FLAT_SCRATCH and XNACK_MASK",
                     "rebuild for " + p, k.sgpr_count, slimit});
  }
  return out;
}

}  // namespace hipguard
