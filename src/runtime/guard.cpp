#include "runtime/guard.h"

#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <pthread.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/auxv.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "hipguard/inputs.h"
#include "hipguard/report.h"
#include "hipguard/version.h"
#include "runtime/address.h"
#include "runtime/state.h"
#include "checks/kernel_checks.h"
#include "runtime/kernel_table.h"

namespace hipguard {

std::atomic<unsigned> g_launch_gate{0};

LaunchCache g_launch_cache;
std::atomic<bool> g_state_ready{false};
thread_local std::unique_ptr<PendingFatbin> t_pending_fatbin;
thread_local std::unique_ptr<ModuleInfo> t_pending_module;

Guard& Guard::get() {
  static Guard* g = new Guard();  // never destroyed: HIP may call us from atexit handlers
  return *g;
}

namespace {
std::mutex g_config_mu;
GuardConfig* g_config = nullptr;  // init()'s, until the state takes it
}  // namespace

Guard& Guard::init(GuardConfig config) {
  std::lock_guard<std::mutex> lock(g_config_mu);
  if (!g_config && !g_state_ready.load(std::memory_order_acquire)) g_config = new GuardConfig(std::move(config));
  return get();
}

Guard::State& Guard::state() {
  static State* s = [] {
    auto* st = new State();
    {
      std::lock_guard<std::mutex> lock(g_config_mu);
      if (g_config) st->config = std::move(*g_config);
    }
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    st->logger = std::make_shared<spdlog::logger>("hipguard", sink);
    st->logger->set_pattern("hipguard: %v");
    st->logger->set_level(static_cast<spdlog::level::level_enum>(st->config.log_level));
    st->logger->flush_on(spdlog::level::trace);
    if (!st->config.report_path.empty()) {
      Guard::get().open_report(*st);
      atexit([] { guarded([] { Guard::get().write_report(); }); });
      pthread_atfork([] { guarded([] { Guard::get().before_fork(); }); },
                     [] { guarded([] { Guard::get().after_fork(false); }); },
                     [] { guarded([] { Guard::get().after_fork(true); }); });
    }
    g_state_ready.store(true, std::memory_order_release);
    return st;
  }();
  return *s;
}

const GuardConfig& Guard::config() {
  State& s = state();
  // Set-up findings (bad HIPGUARD_TARGET, no target) are said once, at first use.
  static std::once_flag once;
  std::call_once(once, [&] {
    for (const auto& d : s.config.setup_diagnostics) report_once(d);
    if (!s.config.targets.empty()) {
      std::string list;
      for (const auto& t : s.config.targets) list += (list.empty() ? "" : ", ") + t.str();
      log("debug", std::string("hipguard ") + HIPGUARD_VERSION_STRING + ": checking against " + list + " (from " +
                       s.config.target_source + ")");
    }
  });
  return s.config;
}

void Guard::log(std::string_view level, const std::string& line) {
  State& s = state();
  s.logger->log(spdlog::level::from_str(std::string(level)), line);
}

void Guard::report_once(const Diagnostic& d) {
  std::string line = format_line(d);
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.logged.insert(line).second) return;
    if (s.report_file.is_open() || s.report_reopen) journal(s, d);
    if (s.config.fails_on(d.severity)) {
      if (s.findings_pid != getpid()) s.findings_pid = getpid(), s.failing = 0;
      if (s.failing++ == 0) s.first_failing = d.code + (d.kernel.empty() ? "" : " kernel '" + d.kernel + "'");
    }
  }
  log(d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warn" : "info", line);
}

void Guard::report_consequence(const Diagnostic& d, const Diagnostic* cause) {
  if (cause) {
    State& s = state();
    bool said;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      said = s.logged.count(format_line(*cause)) != 0;
      if (said && s.consequences.size() < kMaxConsequences) s.consequences.push_back(d);
    }
    if (said) {  // at debug level, as a note: it adds nothing the user must act on
      Diagnostic note = d;
      note.severity = Severity::Note;
      log("debug", format_line(note));
      return;
    }
  }
  report_once(d);
}

Decision Guard::judge(const ImageReport& report, bool registration) {
  const GuardConfig& c = config();
  for (const auto& d : report.diagnostics) report_once(d);
  if (report.ok()) return {};
  if (c.mode != Mode::Strict) return {};
  if (registration) return {Action::Exit, 0};
  // Malformed input -> invalid image; nothing usable for this GPU -> no binary for GPU.
  return {Action::Refuse, report.structurally_ok ? kHipErrorNoBinaryForGpu : kHipErrorInvalidImage};
}

// ---------------------------------------------------------------- registration

Decision Guard::on_register_fatbin(const void* wrapper) try {
  const GuardConfig& c = config();
  if (c.mode == Mode::Off) return {};
  if (c.mode == Mode::Strict && c.config_error) {
    log("error", "strict mode: stopping " + self_exe() + " before its first kernel launch (exit status " +
                     std::to_string(c.exit_code) + "): the hipguard settings above are not accepted");
    return {Action::Exit, 0};
  }
  std::string origin = origin_of(wrapper);
  auto fail = [&](std::string_view code, std::string msg) {
    auto r = std::make_unique<PendingFatbin>();
    r->report.origin = origin;
    r->report.diagnostics.push_back(make_diagnostic(
        code, origin, std::move(msg), "the program's fat binary is damaged or not produced by a HIP compiler; rebuild it"));
    r->report.structurally_ok = false;
    Decision v = judge(r->report, true);
    t_pending_fatbin = std::move(r);
    return v;
  };
  if (readable_extent(wrapper, sizeof(FatbinWrapper)) < sizeof(FatbinWrapper))
    return fail(code::kUnreadable, "fat binary wrapper at " + hex(wrapper) + " is not readable memory");
  FatbinWrapper w;
  memcpy(&w, wrapper, sizeof w);
  if (w.magic == kHipkMagic && w.version == 1) {
    // Valid for current CLR: not an error, but nothing hipguard can check.
    t_pending_fatbin.reset();
    report_once(make_diagnostic(code::kKpackNotChecked, origin,
                                "kpack fat binary (HIPK wrapper): its code objects are in an archive beside the "
                                "program, which hipguard does not read; its kernels are not checked",
                                "check the archive's code objects with 'hipguard check' offline"));
    return {};
  }
  if (w.magic != kHipFatbinMagic || w.version != 1) {
    char buf[160];
    snprintf(buf, sizeof buf, "fat binary wrapper has magic 0x%08x version %u (expected 0x%08x HIPF or 0x%08x HIPK, version 1)",
             w.magic, w.version, kHipFatbinMagic, kHipkMagic);
    return fail(code::kBadFatbinWrapper, buf);
  }
  uint64_t extent = readable_extent(w.binary, kMaxDecompressedBytes);
  if (extent == 0) return fail(code::kUnreadable, "fat binary at " + hex(w.binary) + " is not readable memory");
  Bytes data(static_cast<const uint8_t*>(w.binary), extent);
  // A raw code object (AITER registers .co files this way): size it from its headers.
  if (classify(data) == PayloadKind::CodeObject) {
    if (auto size = elf_image_size(data); size && *size <= extent) data = data.first(*size);
  }
  // Warn mode, bundles: checked to selection now (a library may carry hundreds
  // of fat binaries whose kernels are never launched); each fat binary is
  // checked in full at the first launch or lookup of one of its kernels.
  // Strict mode decides every error now (Depth::Errors: what a full check
  // finds of error severity, without keeping kernel arguments), so that any
  // error stops the program before main, as `hipguard check` would fail it;
  // warnings wait for the check in full at first use. Raw code objects: in full.
  auto pending = std::make_unique<PendingFatbin>();
  PayloadKind kind = classify(data);
  if ((kind == PayloadKind::OffloadBundle || kind == PayloadKind::CompressedBundle) && !c.targets.empty())
    pending->depth = c.mode == Mode::Strict ? Depth::Errors : Depth::Selection;
  pending->data = data;
  pending->readonly = readonly_segments_of(wrapper);
  pending->report = check_image(data, origin, c.targets, "", pending->depth);
  add_hotswap(pending->report, c);
  // Nothing selected for any target: there is nothing to check in full.
  bool selected = false;
  for (const auto& vv : pending->report.verdicts) selected = selected || vv.selection != Selection::None;
  if (!selected) pending->depth = Depth::Full;
  log("debug", "registered fat binary of " + origin + " (" + std::string(to_string(pending->report.kind)) + ", " +
                   std::to_string(pending->report.entry_ids.size()) + " bundle entries)");
  Decision v = judge(pending->report, true);

  if (v.action == Action::Exit)
    log("error", "strict mode: stopping " + self_exe() + " before its first kernel launch (exit status " +
                     std::to_string(c.exit_code) + ")");
  t_pending_fatbin = std::move(pending);
  return v;
} catch (...) {
  return {};  // never let hipguard be the reason a program fails
}

void Guard::on_registered_fatbin(const void* handle) try {
  if (!t_pending_fatbin) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  // A null handle (the runtime refused outright) still gets its report kept, keyed by null.
  FatbinState& fb = s.fatbins[handle];
  fb.seq = ++s.seq;
  if (fb.depth != Depth::Full) --s.fatbins_not_checked_in_full;  // re-registered under the same handle
  fb.report = std::move(t_pending_fatbin->report);
  fb.data = t_pending_fatbin->data;
  fb.depth = t_pending_fatbin->depth;
  fb.index.reset();
  fb.origin.reset();
  fb.host_functions.clear();
  fb.unindexed.clear();
  fb.unindexed_names.clear();
  fb.readonly = std::move(t_pending_fatbin->readonly);
  if (fb.depth != Depth::Full && s.fatbins_not_checked_in_full++ == 0)
    g_launch_gate.fetch_or(kGateNotCheckedInFull, std::memory_order_release);
  t_pending_fatbin.reset();
} catch (...) {
}

// __hipRegisterFunction runs for every kernel of every fat binary a library
// carries (12 k for rocSPARSE), during dlopen: it only records the kernel. The
// kernel table is filled at the first launch, lookup, or report (index_*).
Decision Guard::on_register_function(const void* handle, const void* host_function, const char* device_name) try {
  if (!host_function || !device_name) return {};
  State& s = state();
  if (s.config.mode == Mode::Off) return {};
  std::vector<Diagnostic> missing;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (handle != s.last_fatbin_handle || !s.last_fatbin) {
      auto it = s.fatbins.find(handle);
      if (it == s.fatbins.end()) return {};
      s.last_fatbin_handle = handle;
      s.last_fatbin = &it->second;
    }
    FatbinState& fb = *s.last_fatbin;
    if (fb.unindexed.empty()) s.unindexed_order.push_back(handle);
    uintptr_t at = reinterpret_cast<uintptr_t>(device_name);
    bool in_image = false;
    for (const auto& [lo, hi] : fb.readonly) in_image = in_image || (at >= lo && at < hi);
    if (in_image) {
      fb.unindexed.push_back({host_function, device_name, 0});
    } else {
      fb.unindexed.push_back({host_function, nullptr, fb.unindexed_names.size()});
      fb.unindexed_names.append(device_name).push_back('\0');
    }
    if (!(g_launch_gate.load(std::memory_order_relaxed) & kGateUnindexed))
      g_launch_gate.fetch_or(kGateUnindexed, std::memory_order_release);
    // Strict mode parsed the selected code objects: a kernel one of them
    // lacks stops the program here, still before main.
    if (s.config.mode == Mode::Strict && fb.depth != Depth::Selection) {
      if (!fb.index)
        fb.index = std::make_unique<ImageIndex>(build_index(fb.report, s.config.targets, fb.depth == Depth::Full));
      missing = missing_kernel(device_name, *fb.index);
    }
  }
  if (missing.empty()) return {};
  for (const auto& d : missing) report_once(d);
  log("error", "strict mode: stopping " + self_exe() + " before its first kernel launch (exit status " +
                   std::to_string(s.config.exit_code) + ")");
  return {Action::Exit, 0};
} catch (...) {
  return {};
}

void Guard::index_kernels_of(const void* handle) {
  State& s = state();
  auto it = s.fatbins.find(handle);
  if (it == s.fatbins.end() || it->second.unindexed.empty()) return;
  FatbinState& fb = it->second;
  if (!fb.index) fb.index = std::make_unique<ImageIndex>(build_index(fb.report, s.config.targets));
  if (!fb.origin) fb.origin = std::make_shared<const std::string>(fb.report.origin);
  bool findings = false;
  for (const auto& [host_function, name_in_image, name_at] : fb.unindexed) {
    KernelState& k = s.new_kernel();
    k.name = name_in_image ? name_in_image : fb.unindexed_names.c_str() + name_at;
    k.file = fb.origin;
    k.fatbin = handle;
    k.depth = fb.depth;
    fill_kernel(k, *fb.index);
    refresh_clean(k, s.probe_off);
    k.seq = fb.seq;  // a forked child's report lists the kernels of what it registered itself
    fb.host_functions.push_back(host_function);
    s.table.insert(host_function, &k);
    if (!s.probe_off) s.unprobed[handle].emplace_back(host_function, &k);  // gate set below
    findings = findings || !k.findings().empty();
  }
  fb.unindexed.clear();
  fb.unindexed.shrink_to_fit();
  fb.unindexed_names.clear();
  fb.unindexed_names.shrink_to_fit();
  if (findings) g_launch_gate.fetch_or(kGateFindings, std::memory_order_release);
  if (!s.probe_off) g_launch_gate.fetch_or(kGateProbe, std::memory_order_release);
}

void Guard::index_pending_kernels() {
  State& s = state();
  for (const void* h : s.unindexed_order) index_kernels_of(h);
  s.unindexed_order.clear();
  g_launch_gate.fetch_and(~kGateUnindexed, std::memory_order_release);
}

void Guard::index_if_needed() {
  if (!(g_launch_gate.load(std::memory_order_acquire) & kGateUnindexed)) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  index_pending_kernels();
}

void Guard::on_unregister_fatbin(const void* handle) try {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.fatbins.find(handle);
  if (it == s.fatbins.end()) return;
  // The report lists kernels with findings: index them while their names are valid.
  if (!s.config.report_path.empty()) index_kernels_of(handle);
  // Host addresses may be reused by a library loaded later: forget them.
  for (const void* f : it->second.host_functions) s.retire(f);
  if (s.unprobed.erase(handle) && s.unprobed.empty()) g_launch_gate.fetch_and(~kGateProbe, std::memory_order_release);
  if (it->second.depth != Depth::Full && --s.fatbins_not_checked_in_full == 0)
    g_launch_gate.fetch_and(~kGateNotCheckedInFull, std::memory_order_release);
  if (!s.config.report_path.empty()) s.keep_gone_image(std::move(it->second.report), it->second.seq);  // only the report reads it
  s.fatbins.erase(it);
  s.last_fatbin_handle = nullptr;
  s.last_fatbin = nullptr;
} catch (...) {
}

// ---------------------------------------------------------------- modules

// Strict mode with a refused setting, at a module load: the same stop as at a
// fat binary's registration (the shim's strict_exit), from here.
void Guard::stop_for_settings() {
  const GuardConfig& c = config();
  log("error", "strict mode: stopping " + self_exe() + " at its first module load (exit status " +
                   std::to_string(c.exit_code) + "): the hipguard settings above are not accepted");
  write_report();
  _exit(c.exit_code);
}

Decision Guard::on_module_load_file(const char* path) try {
  const GuardConfig& c = config();
  if (c.mode == Mode::Off || !path) return {};
  if (c.mode == Mode::Strict && c.config_error) stop_for_settings();
  FileReport fr = check_file(path, c.targets, /*explicit_arg=*/true, FileData::Access::CopyAlways);
  for (const auto& d : fr.diagnostics)
    if (d.code == code::kUnreadable) return {};  // let the runtime report hipErrorFileNotFound itself
  auto info = std::make_unique<ModuleInfo>();
  info->origin = path;
  bool structurally_ok = true;
  for (const auto& d : fr.diagnostics) report_once(d);
  for (auto& img : fr.images) add_hotswap(img, c);
  for (const auto& img : fr.images) {
    for (const auto& d : img.diagnostics) report_once(d);
    structurally_ok = structurally_ok && img.structurally_ok;
    for (const auto& co : img.code_objects) {
      for (const auto& k : co.co.kernels) info->kernels.insert(k.name);
      info->device_functions.insert(co.co.device_functions.begin(), co.co.device_functions.end());
    }
  }
  info->images = std::move(fr.images);
  bool ok = fr.ok();
  for (const auto& img : info->images) ok = ok && img.ok();
  t_pending_module = std::move(info);
  if (ok || c.mode != Mode::Strict) return {};
  return {Action::Refuse, structurally_ok ? kHipErrorNoBinaryForGpu : kHipErrorInvalidImage};
} catch (...) {
  return {};
}

Decision Guard::on_module_load_data(const void* image, const char* api) try {
  const GuardConfig& c = config();
  if (c.mode == Mode::Off || !image) return {};
  if (c.mode == Mode::Strict && c.config_error) stop_for_settings();
  std::string origin = std::string(api) + " image at " + hex(image) + " in " + origin_of(image);
  uint64_t extent = readable_extent(image, kMaxDecompressedBytes);
  ImageReport report;
  if (extent == 0) {
    report.origin = origin;
    report.diagnostics.push_back(make_diagnostic(code::kUnreadable, origin, "image pointer is not readable memory",
                                                 "pass a pointer to a loaded code object or offload bundle"));
    report.structurally_ok = false;
  } else {
    Bytes data(static_cast<const uint8_t*>(image), extent);
    if (classify(data) == PayloadKind::CodeObject) {
      if (auto size = elf_image_size(data); size && *size <= extent) data = data.first(*size);
    }
    report = check_image(data, origin, c.targets);
    add_hotswap(report, c);
  }
  auto info = std::make_unique<ModuleInfo>();
  info->origin = origin;
  for (const auto& co : report.code_objects) {
    for (const auto& k : co.co.kernels) info->kernels.insert(k.name);
    info->device_functions.insert(co.co.device_functions.begin(), co.co.device_functions.end());
  }
  Decision v = judge(report, false);
  info->images.push_back(std::move(report));
  t_pending_module = std::move(info);
  return v;
} catch (...) {
  return {};
}

void Guard::on_module_loaded(const void* module) try {
  if (!module || !t_pending_module) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  t_pending_module->seq = ++s.seq;
  s.modules[module] = std::move(*t_pending_module);
  t_pending_module.reset();
} catch (...) {
}

void Guard::on_module_unloaded(const void* module) try {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.modules.find(module);
  if (it == s.modules.end()) return;
  for (const void* f : it->second.functions) s.retire(f);
  if (!s.config.report_path.empty())  // only the report reads them
    for (auto& img : it->second.images) s.keep_gone_image(std::move(img), it->second.seq);
  s.modules.erase(it);
} catch (...) {
}

Decision Guard::before_module_get_function(const void* module, const char* name, const char* api) try {
  if (!name || config().mode == Mode::Off) return {};
  Diagnostic d;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.modules.find(module);
    if (it == s.modules.end() || !it->second.device_functions.count(name)) return {};
    std::string kernels;
    for (const auto& k : it->second.kernels) kernels += (kernels.empty() ? "" : ", ") + k;
    d.code = std::string(code::kDeviceFunction);
    d.file = it->second.origin;
    d.kernel = name;
    d.message = std::string(api) + " asks for a device function, not a kernel; kernels in this module: " +
                (kernels.empty() ? std::string("none") : kernels);
    d.fix = "ask for a __global__ kernel; device functions can only be called from kernels";
  }
  report_once(d);  // takes the lock itself
  if (config().mode == Mode::Strict) return {Action::Refuse, kHipErrorNotFound};
  return {};
} catch (...) {
  return {};
}

void Guard::on_module_get_function(const void* module, const char* name, const void* function, int result,
                                   const char* api) try {
  if (!name) return;
  State& s = state();
  if (s.config.mode == Mode::Off) return;
  std::unique_lock<std::mutex> lock(s.mu);
  auto it = s.modules.find(module);
  if (it == s.modules.end()) return;
  ModuleInfo& m = it->second;
  if (result == 0 && function) {
    // The runtime hands out the same hipFunction_t for the same name again: known already.
    if (const KernelState* known = s.find(function); known && known->name == name) return;
    KernelState& k = s.new_kernel();
    k.name = name;
    k.probed = true;  // module kernels are checked at load and lookup, not probed
    k.file = std::make_shared<const std::string>(m.origin);
    for (const auto& img : m.images) fill_kernel(k, build_index(img, s.config.targets));
    refresh_clean(k, s.probe_off);
    m.functions.push_back(function);
    s.table.insert(function, &k);
    if (!k.findings().empty()) g_launch_gate.fetch_or(kGateFindings, std::memory_order_release);
    return;
  }
  if (m.device_functions.count(name)) return;  // HG408 was said before the call
  Diagnostic d;
  d.code = std::string(code::kLookupFailed);
  d.file = m.origin;
  d.kernel = name;
  d.fix = "check the kernel name (mangled C++ name, or extern \"C\") against 'hipguard inspect " + m.origin + "'";
  std::string prefix = std::string(api) + " failed (hipError_t " + std::to_string(result) + "): ";
  if (!m.kernels.empty() && !m.kernels.count(name)) {
    std::string list;
    for (const auto& k : m.kernels) list += (list.empty() ? "" : ", ") + k;
    d.message = prefix + "the code object has no kernel of that name; its kernels: " + list;
  } else {
    KernelState probe;
    probe.name = name;
    for (const auto& img : m.images) fill_kernel(probe, build_index(img, s.config.targets));
    d.message = prefix + (probe.findings().empty() ? "hipguard found no cause in the code object"
                                                 : "cause: " + first_finding(probe));
    if (!probe.findings().empty()) {
      d.fix = probe.findings().front().fix;
      lock.unlock();
      report_consequence(d, &probe.findings().front());
      return;
    }
  }
  lock.unlock();
  report_once(d);
} catch (...) {
}

void Guard::on_get_func_by_symbol(const void* host_function, int result) try {
  if (result == 0 || no_device_error(result)) return;
  State& s = state();
  if (s.config.mode == Mode::Off) return;
  index_if_needed();
  const KernelState* k = s.find(host_function);
  if (k && k->depth != Depth::Full) {
    check_in_full(k->fatbin);
    k = s.find(host_function);
  }
  Diagnostic d;
  d.code = std::string(code::kLookupFailed);
  if (!k) {
    d.file = self_exe();
    d.message = "hipGetFuncBySymbol(" + hex(host_function) + ") failed (hipError_t " + std::to_string(result) +
                "): that pointer was never registered as a kernel";
    d.fix = "pass the kernel's host-side symbol (the __global__ function), not a device pointer";
  } else {
    d.file = k->file_name();
    d.kernel = k->name;
    d.message = "hipGetFuncBySymbol failed (hipError_t " + std::to_string(result) + "): " +
                (k->findings().empty() ? "hipguard found no cause in the code object" : "cause: " + first_finding(*k));
    d.fix = k->findings().empty() ? "run with AMD_LOG_LEVEL=4 for the runtime's own reason" : k->findings().front().fix;
  }
  report_consequence(d, k && !k->findings().empty() ? &k->findings().front() : nullptr);
} catch (...) {
}

// ---------------------------------------------------------------- launches

void Guard::check_in_full(const void* handle) {
  State& s = state();
  std::vector<Diagnostic> said;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.fatbins.find(handle);
    if (it == s.fatbins.end() || it->second.depth == Depth::Full) return;
    FatbinState& fb = it->second;
    fb.report = check_image(fb.data, fb.report.origin, s.config.targets);
    add_hotswap(fb.report, s.config);
    fb.depth = Depth::Full;
    fb.index = std::make_unique<ImageIndex>(build_index(fb.report, s.config.targets));
    said = fb.report.diagnostics;
    // Fresh kernel states (readers may hold the old ones, which stay valid).
    bool findings = false;
    for (const void* f : fb.host_functions) {
      const KernelState* old = s.find(f);
      if (!old) continue;
      old->superseded = true;
      old->set_clean(false);
      KernelState& k = s.new_kernel();
      s.quarantine.push_back(const_cast<KernelState*>(old));  // after new_kernel: never reused as its own successor
      k.name = old->name;
      k.file = old->file;
      k.fatbin = handle;
      fill_kernel(k, *fb.index);
      k.launches = old->launches.load();
      k.blocked = old->blocked.load();
      k.warned = old->warned.load();
      k.probed = old->probed.load();
      k.seq = old->seq;
      refresh_clean(k, s.probe_off);
      s.table.insert(f, &k);
      findings = findings || !k.findings().empty();
    }
    if (findings) g_launch_gate.fetch_or(kGateFindings, std::memory_order_release);
    if (--s.fatbins_not_checked_in_full == 0)
      g_launch_gate.fetch_and(~kGateNotCheckedInFull, std::memory_order_release);
  }
  for (const auto& d : said) report_once(d);
}

Decision Guard::on_launch(const void* key, uint64_t dynamic_lds, const char* api) {
  return on_launch(key, dynamic_lds, api, -1);
}

Decision Guard::on_launch(const void* key, uint64_t dynamic_lds, const char* api, int device) try {
  State& s = state();
  if (s.config.mode == Mode::Off) return {};
  index_if_needed();
  const KernelState* k = s.find(key);
  if (!k) return {};
  if ((g_launch_gate.load(std::memory_order_acquire) & kGateProbe) && !k->probed.load(std::memory_order_acquire)) {
    // The runtime is initialised by now (a launch is under way) and loads this
    // fat binary's code object for the launch anyway: probe its kernels.
    run_probe(k->fatbin);
    k = s.find(key);
    if (!k) return {};
  }
  if (k->depth != Depth::Full) {
    check_in_full(k->fatbin);  // first use of this fat binary: check it in full now
    k = s.find(key);
    if (!k) return {};
  }
  // Counted for the report only: an atomic add on a shared line costs every launching thread.
  if (!s.config.report_path.empty()) k->launches.fetch_add(1, std::memory_order_relaxed);
  bool strict = s.config.mode == Mode::Strict;
  if (!k->findings().empty()) {
    if (!k->warned.exchange(true)) {
      Diagnostic d;
      d.code = std::string(code::kLaunchWithFindings);
      d.severity = k->blocking ? Severity::Error : Severity::Warning;
      d.file = k->file_name();
      d.kernel = k->name;
      d.message = std::string(api) + " of a kernel with findings: " + first_finding(*k) +
                  (k->blocking ? (strict ? "; strict mode: launch refused with hipErrorInvalidDeviceFunction"
                                         : "; the launch is forwarded and will fail or misbehave")
                               : "");
      d.fix = k->findings().front().fix;
      report_consequence(d, &k->findings().front());
    }
    if (strict && k->blocking) {
      k->blocked.fetch_add(1, std::memory_order_relaxed);
      note_refused_launch(kHipErrorInvalidDeviceFunction);
      return {Action::Refuse, kHipErrorInvalidDeviceFunction};
    }
  }
  uint64_t max_dynamic = k->max_dynamic_lds, static_lds = k->static_lds, limit = k->lds_limit;
  int device_target = -1;  // the device's own limit applies (its target's label is said)
  if (device >= 0 && static_cast<size_t>(device) < s.config.device_targets.size()) {
    int t = s.config.device_targets[device];
    if (t >= 0 && static_cast<size_t>(t) < k->lds_by_target.size() &&
        k->lds_by_target[t].max_dynamic != UINT64_MAX) {  // that device's own limit
      max_dynamic = k->lds_by_target[t].max_dynamic;
      static_lds = k->lds_by_target[t].static_lds;
      limit = k->lds_by_target[t].limit;
      device_target = t;
    }
  }
  if (dynamic_lds > max_dynamic) {
    if (!k->lds_warned.exchange(true)) {
      Diagnostic d;
      d.code = std::string(code::kLaunchLds);
      d.file = k->file_name();
      d.kernel = k->name;
      std::string lds_target = device_target >= 0 ? s.config.targets[device_target].label() : k->lds_target;
      d.target = lds_target;
      d.message = std::string(api) + " asks for " + std::to_string(static_lds) + " bytes of static + " +
                  std::to_string(dynamic_lds) + " bytes of dynamic LDS = " + std::to_string(static_lds + dynamic_lds) +
                  "; " + lds_target + " provides " + std::to_string(limit) + " bytes per workgroup" +
                  (strict ? "; strict mode: launch refused with hipErrorInvalidConfiguration" : "");
      d.fix = "pass at most " + std::to_string(max_dynamic) + " bytes of dynamic shared memory for this kernel";
      d.value = static_lds + dynamic_lds;
      d.limit = limit;
      report_once(d);
    }
    if (strict) {
      k->blocked.fetch_add(1, std::memory_order_relaxed);
      note_refused_launch(kHipErrorInvalidConfiguration);
      return {Action::Refuse, kHipErrorInvalidConfiguration};
    }
  }
  launch_cache_remember(key, k);  // its next launches take the fast path
  return {};
} catch (...) {
  return {};
}

}  // namespace hipguard
