#include "hipguard/guard.h"

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
#include "report_file.h"
#include "kernel_checks.h"
#include "kernel_table.h"

namespace hipguard {

std::atomic<unsigned> g_launch_gate{0};

namespace {
thread_local int t_refused_error = 0;
thread_local int t_restored_error = 0;
}
int restored_last_error(bool clear) {
  int e = t_restored_error;
  if (clear) t_restored_error = 0;
  return e;
}
int refused_launch_error(bool clear) {
  int e = t_refused_error;
  if (clear) t_refused_error = 0;
  return e;
}
void note_refused_launch(int hip_error) { t_refused_error = hip_error; }

namespace {

constexpr unsigned kGateProbe = 1;     // some fat binary's kernels are not probed yet
constexpr unsigned kGateFindings = 2;  // some registered kernel has findings
constexpr unsigned kGatePending = 4;   // some fat binary's kernels are not checked yet (first use checks them)
constexpr unsigned kGateUnindexed = 8; // some registered kernels are not in the kernel table yet

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "<program>";
  buf[n] = 0;
  return buf;
}

// glibc >= 2.35's _dl_find_object: the object holding an address in O(log n),
// where dladdr also searches the object's symbol table for the nearest symbol
// (~30 k instructions per call in librocsparse). Looked up at run time so the
// shim still loads on an older glibc, where dladdr is the fallback.
using FindObjectFn = int (*)(void*, void*);
FindObjectFn find_object_fn() {
  static FindObjectFn fn = reinterpret_cast<FindObjectFn>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  return fn;
}

// The file that holds `addr` (executable or shared library).
std::string origin_of(const void* addr) {
#ifdef DLFO_STRUCT_HAS_EH_DBASE
  if (FindObjectFn fn = find_object_fn()) {
    dl_find_object fo{};
    if (fn(const_cast<void*>(addr), &fo) == 0 && fo.dlfo_link_map) {
      const char* name = fo.dlfo_link_map->l_name;
      // The main program's link map has an empty name.
      if (name && *name && strchr(name, '/')) return name;
      if (!name || !*name) return self_exe();
    }
  }
#endif
  Dl_info info{};
  if (dladdr(addr, &info) && info.dli_fname && *info.dli_fname) {
    // glibc reports argv[0] for the main program; prefer the real path.
    std::string name = info.dli_fname;
    if (name.find('/') == std::string::npos || name == program_invocation_name) return self_exe();
    return name;
  }
  return self_exe();
}

std::string hex(const void* p) {
  char buf[32];
  snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// The runtime answers these when it has no usable GPU at all: a probe then says nothing.
bool no_device_error(int e) { return e == 100 || e == 101 || e == 35 || e == 3; }

}  // namespace

namespace {
// "lo-hi perms ..." from one /proc/self/maps line; false when malformed.
bool parse_maps_line(const char* line, uintptr_t* lo, uintptr_t* hi, bool* readable) {
  char* end = nullptr;
  *lo = strtoull(line, &end, 16);
  if (*end != '-') return false;
  *hi = strtoull(end + 1, &end, 16);
  if (*end != ' ') return false;
  *readable = end[1] == 'r';
  return true;
}
}  // namespace

namespace {
// Inside a loaded object's readable PT_LOAD segment (where a fat binary
// registered by a program or library lives), the extent is that segment's end:
// no need to read /proc/self/maps, which costs ~100k instructions a call.
uint64_t loaded_segment_extent(uintptr_t addr) {
  struct Ctx {
    uintptr_t addr;
    uint64_t extent;
  } ctx{addr, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* c = static_cast<Ctx*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_R)) continue;
          uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
          if (c->addr >= lo && c->addr < hi) {
            c->extent = hi - c->addr;
            return 1;
          }
        }
        return 0;
      },
      &ctx);
  return ctx.extent;
}
}  // namespace

uint64_t readable_extent(const void* p, uint64_t cap) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  if (addr == 0) return 0;
  if (uint64_t in_object = loaded_segment_extent(addr)) return in_object < cap ? in_object : cap;
  FILE* f = fopen("/proc/self/maps", "re");
  if (!f) return 0;
  // getline: a line has no length limit (a mapped file's path can be long, and a
  // fixed buffer would read its tail as a line of its own).
  char* line = nullptr;
  size_t line_cap = 0;
  uintptr_t want = addr;  // next address that must be covered
  uint64_t extent = 0;
  bool started = false;
  while (getline(&line, &line_cap, f) > 0) {
    uintptr_t lo, hi;
    bool readable;
    if (!parse_maps_line(line, &lo, &hi, &readable)) continue;
    if (!started) {
      if (addr >= hi) continue;
      if (addr < lo || !readable) break;  // lines are sorted: addr is in a gap, or unreadable
      started = true;
      extent = hi - addr;
      want = hi;
    } else {
      if (lo != want || !readable) break;  // gap or unreadable: stop
      extent += hi - lo;
      want = hi;
    }
    if (extent >= cap) break;
  }
  free(line);
  fclose(f);
  return extent < cap ? extent : cap;
}

namespace {
std::string lowered(std::string_view v) {
  std::string s(v);
  for (char& ch : s) ch = static_cast<char>(tolower(static_cast<unsigned char>(ch)));
  return s;
}
}  // namespace

namespace {
// Optimal string alignment distance (adjacent transpositions count as one edit).
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

constexpr const char* kVariables[] = {"HIPGUARD_MODE",      "HIPGUARD_TARGET", "HIPGUARD_EXIT_CODE",
                                      "HIPGUARD_FAIL_ON",   "HIPGUARD_LOG_LEVEL", "HIPGUARD_REPORT",
                                      "HIPGUARD_SYSFS_ROOT", "HIPGUARD_SHIM"};
}  // namespace

GuardConfig config_from(const EnvLookup& env, bool secure, const std::vector<std::string>& names) {
  GuardConfig c;
  auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? v : "";  // empty counts as unset
  };
  auto setup = [&](std::string_view code, std::string msg, std::string fix) {
    Diagnostic d = make_diagnostic(code, self_exe(), std::move(msg), std::move(fix));
    if (d.severity == Severity::Error) c.config_error = true;
    c.setup_diagnostics.push_back(std::move(d));
  };
  // One line naming the variable, the value, what is accepted and what hipguard does instead.
  auto refuse = [&](const char* name, const std::string& value, const std::string& accepted, const std::string& instead) {
    setup(code::kBadSetting, std::string(name) + "='" + value + "' is not accepted (accepted: " + accepted + "): " + instead,
          "set " + std::string(name) + " to one of: " + accepted);
  };

  // Misspelled variable names: said, never silently ignored.
  bool misspelled_mode = false;
  for (const auto& name : names) {
    std::string upper = name;
    for (char& ch : upper) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
    const char* meant = nullptr;
    bool known = false;
    for (const char* v : kVariables) {
      if (name == v) known = true;
      else if (!meant && (upper == v || edit_distance(upper, v) <= 2)) meant = v;
    }
    if (known || !meant) continue;  // HIPGUARD_SIM_GPUS and the like belong to others
    bool mode_var = std::string_view(meant) == "HIPGUARD_MODE" && !env("HIPGUARD_MODE");
    misspelled_mode = misspelled_mode || mode_var;
    setup(code::kBadSetting,
          name + " is not a hipguard variable (did you mean " + meant + "?): ignored" +
              (mode_var ? "; running in strict mode" : ""),
          "rename it to " + std::string(meant) + " (variable names are case-sensitive)");
  }

  std::string mode = lowered(get("HIPGUARD_MODE"));
  if (mode.empty() || mode == "warn") c.mode = Mode::Warn;
  else if (mode == "strict") c.mode = Mode::Strict;
  else if (mode == "off") c.mode = Mode::Off;
  else {
    c.mode = Mode::Strict;  // fail closed: a CI job that asked for something asked for checking
    refuse("HIPGUARD_MODE", get("HIPGUARD_MODE"), "warn, strict, off (any case)", "running in strict mode");
  }
  if (misspelled_mode) c.mode = Mode::Strict;

  if (std::string e = get("HIPGUARD_EXIT_CODE"); !e.empty()) {
    char* end = nullptr;
    errno = 0;
    long v = strtol(e.c_str(), &end, 10);
    bool number = end && end != e.c_str() && *end == 0 && errno == 0 && isdigit(static_cast<unsigned char>(e[0]));
    if (number && v >= 1 && v <= 255) c.exit_code = static_cast<int>(v);
    else
      refuse("HIPGUARD_EXIT_CODE", e, "a decimal exit status from 1 to 255",
             std::string(number && v == 0 ? "0 would let a failing process pass; " : "") + "using exit status " +
                 std::to_string(kDefaultExitCode));
  }

  if (c.mode == Mode::Strict) c.fail_on = Severity::Error;
  if (std::string f = lowered(get("HIPGUARD_FAIL_ON")); !f.empty()) {
    if (f == "error") c.fail_on = Severity::Error;
    else if (f == "warning" || f == "warn") c.fail_on = Severity::Warning;
    else if (f == "none") {
      // Never weaker than strict mode.
    } else {
      c.fail_on = Severity::Warning;  // the stricter choice
      refuse("HIPGUARD_FAIL_ON", get("HIPGUARD_FAIL_ON"), "error, warning, none (any case)",
             "failing the exit status on warnings and errors");
    }
  }

  if (c.mode == Mode::Off) c.fail_on.reset();  // off changes nothing, not even the exit status

  if (std::string l = lowered(get("HIPGUARD_LOG_LEVEL")); !l.empty()) {
    static const std::pair<const char*, LogLevel> kLevels[] = {
        {"trace", LogLevel::Trace}, {"debug", LogLevel::Debug}, {"info", LogLevel::Info},
        {"warn", LogLevel::Warn},   {"warning", LogLevel::Warn}, {"error", LogLevel::Error},
        {"err", LogLevel::Error},   {"off", LogLevel::Off},      {"none", LogLevel::Off},
        // AMD_LOG_LEVEL's numbers (CLR: 0 none, 1 error, 2 warning, 3 info, 4 debug, 5 extra debug).
        {"0", LogLevel::Off},       {"1", LogLevel::Error},      {"2", LogLevel::Warn},
        {"3", LogLevel::Info},      {"4", LogLevel::Debug},      {"5", LogLevel::Trace}};
    bool found = false;
    for (const auto& [name, level] : kLevels)
      if (l == name) c.log_level = level, found = true;
    if (!found)
      refuse("HIPGUARD_LOG_LEVEL", get("HIPGUARD_LOG_LEVEL"),
             "trace, debug, info, warn, error, off (any case), or AMD_LOG_LEVEL's 0 (off) to 5 (trace)",
             "logging at info");
  }

  // A setuid/setgid process must not write files chosen by its environment.
  if (std::string report = get("HIPGUARD_REPORT"); !report.empty() && !secure) {
    c.report_path = report;  // "%p" is expanded when the report is written: a forked child has its own pid
  }

  // HSA_TOOLS_LIB: a space-separated list of tool libraries ROCr loads.
  for (const char* tool : {"libhsa-hotswap.so", "libamd_comgr_hotswap_tool.so"})
    if (std::string tools = get("HSA_TOOLS_LIB"); c.hotswap_tool.empty() && tools.find(tool) != std::string::npos)
      c.hotswap_tool = tool;

  std::string targets = get("HIPGUARD_TARGET");
  if (!targets.empty()) {
    size_t pos = 0;
    while (pos <= targets.size()) {
      size_t comma = targets.find(',', pos);
      std::string item = targets.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma == std::string::npos ? targets.size() + 1 : comma + 1;
      std::string err;
      if (item.empty()) err = "empty entry";
      else if (item.find_first_of(" \t;") != std::string::npos) err = "separate targets with ',' and no spaces";
      if (err.empty())
        if (auto ts = resolve_target(item, &err); !ts.empty()) {
          c.targets.insert(c.targets.end(), ts.begin(), ts.end());
          continue;
        }
      setup(code::kBadTarget, "HIPGUARD_TARGET entry '" + item + "' is not a target: " + err,
            "use a comma-separated list of target IDs such as gfx942, gfx942:sramecc+:xnack- or product names such "
            "as mi300x");
    }
    c.target_source = "HIPGUARD_TARGET";
    if (c.targets.empty())
      setup(code::kDeviceChecksSkipped,
            "HIPGUARD_TARGET='" + targets + "' has no valid entry: device checks skipped, structural checks only" +
                (c.mode == Mode::Strict ? " (strict mode stops the program instead)" : ""),
            "set HIPGUARD_TARGET to valid targets (gfx942, mi300x, ...)");
  } else {
    // A setuid/setgid process reads the real sysfs only, not files its environment names.
    std::string sysfs = secure ? "/sys" : get("HIPGUARD_SYSFS_ROOT");
    if (sysfs.empty()) sysfs = "/sys";
    for (const Device& d : discover_devices(sysfs)) {
      if (!find_processor(d.target.processor)) continue;
      TargetId t = d.target;
      t.alias = "GPU " + std::to_string(d.index);  // messages say which GPU a problem concerns
      if (d.index < 1024) {
        if (c.device_targets.size() <= static_cast<size_t>(d.index)) c.device_targets.resize(d.index + 1, -1);
        c.device_targets[d.index] = static_cast<int>(c.targets.size());
      }
      c.targets.push_back(t);
      c.target_source += (c.target_source.empty() ? "" : ", ") + ("GPU " + std::to_string(d.index) + " (KFD node " +
                                                                   std::to_string(d.node) + ")");
    }
    if (c.targets.empty())
      setup(code::kDeviceChecksSkipped,
            "no AMD GPU found and HIPGUARD_TARGET not set: device checks skipped, structural checks only",
            "set HIPGUARD_TARGET=gfx942 (or mi300x, mi355x, ...) to check against a GPU this machine lacks");
  }
  return c;
}

GuardConfig config_from_env() {
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e)
    if (strncasecmp(*e, "HIPGUARD_", 9) == 0)
      if (const char* eq = strchr(*e, '=')) names.emplace_back(*e, static_cast<size_t>(eq - *e));
  return config_from([](const char* name) -> const char* { return getenv(name); }, getauxval(AT_SECURE) != 0, names);
}

// What hipguard knows about one kernel, by host function or hipFunction_t.
struct KernelState : LaunchFacts {
  std::string name;
  // Shared by every kernel of its image: registration copies a pointer, not the path.
  std::shared_ptr<const std::string> file;
  const std::string& file_name() const {
    static const std::string none;
    return file ? *file : none;
  }
  // Errors and warnings that concern this kernel; image-wide ones are shared
  // by every kernel of the image (thousands of kernels, one vector).
  std::shared_ptr<const std::vector<Diagnostic>> findings_ptr;
  bool blocking = false;  // an error among them: cannot run on some target
  uint64_t static_lds = 0;
  // max_dynamic_lds (LaunchFacts): smallest (device LDS - static LDS) over the targets
  std::string lds_target;                 // the target that sets max_dynamic_lds
  uint64_t lds_limit = 0;
  // Per target (index into GuardConfig::targets), when there are several:
  // {static LDS, max dynamic LDS, limit}; max dynamic UINT64_MAX = not known.
  struct TargetLds {
    uint64_t static_lds = 0, max_dynamic = UINT64_MAX, limit = 0;
  };
  std::vector<TargetLds> lds_by_target;
  const void* fatbin = nullptr;  // registration handle (null for module functions)
  bool shallow = false;          // its fat binary's kernels are not checked yet
  // Replaced by a fresh state after the full check (readers may still hold this
  // one, so it is kept, but the report lists only the current state).
  mutable bool superseded = false;  // written and read under the state mutex
  // Its module was unloaded or its fat binary unregistered: in quarantine,
  // then reused (Guard::State::new_kernel). Under the state mutex.
  mutable bool retired = false;
  uint64_t seq = 0;  // Guard::State::seq when created: a forked child reports only what came after the fork
  mutable std::atomic<uint64_t> launches{0}, blocked{0};
  mutable std::atomic<bool> warned{false}, lds_warned{false};
  // Its fat binary's kernels were probed (or are never probed: module kernels):
  // launches need not take the state mutex to find out.
  mutable std::atomic<bool> probed{false};
  // clean (LaunchFacts): checked in full, probed (or never to be), no finding:
  // a launch with dynamic LDS up to max_dynamic_lds may skip the guard
  // (launch_known_clean). Written under the state mutex (refresh_clean).

  const std::vector<Diagnostic>& findings() const {
    static const std::vector<Diagnostic> none;
    return findings_ptr ? *findings_ptr : none;
  }

  // Back to a fresh state, for reuse after its quarantine.
  void reset() {
    name.clear();
    file.reset();
    findings_ptr.reset();
    blocking = false;
    static_lds = 0;
    max_dynamic_lds = UINT64_MAX;
    lds_target.clear();
    lds_limit = 0;
    lds_by_target.clear();
    fatbin = nullptr;
    shallow = superseded = retired = false;
    seq = 0;
    launches = blocked = 0;
    warned = lds_warned = probed = clean = false;
  }
};

// What an image report says per kernel, computed once per image so that
// registering its (possibly thousands of) kernels stays linear.
struct ImageIndex {
  struct LdsFit {
    uint64_t static_lds = 0, max_dynamic = UINT64_MAX, limit = 0;
    std::string target;
  };
  std::shared_ptr<const std::vector<Diagnostic>> image_findings;  // errors about the whole image
  std::unordered_map<std::string, std::vector<Diagnostic>> by_kernel;
  std::unordered_map<std::string, LdsFit> lds;
  // Per kernel and target index, when there are several targets.
  std::unordered_map<std::string, std::vector<LdsFit>> lds_by_target;
  // Per target with a parsed selected code object: the kernels it holds. A
  // registered kernel missing there cannot be launched on that target (HG409).
  struct Selected {
    const TargetId* target;
    std::string entry;
    std::unordered_set<std::string> kernels;
  };
  std::vector<Selected> selected;
  std::string origin;
};

struct FatbinState {
  ImageReport report;
  uint64_t seq = 0;
  Bytes data;            // the registered image (valid while registered)
  bool shallow = false;  // only selection so far: kernels are checked at first use
  std::shared_ptr<const std::string> origin;  // report.origin, shared with its kernels
  std::unique_ptr<ImageIndex> index;  // built when its kernels are first indexed
  std::vector<const void*> host_functions;  // indexed kernels (in the kernel table)
  // Registered, not indexed yet: (host function, device name). The name is a
  // copy: the runtime copies it too, so a program may free its own after
  // __hipRegisterFunction returns.
  std::vector<std::pair<const void*, std::string>> unindexed;
};

struct ModuleInfo {
  std::string origin;
  uint64_t seq = 0;
  std::vector<ImageReport> images;
  std::set<std::string> kernels;
  std::set<std::string> device_functions;
  std::vector<const void*> functions;  // hipFunction_t handed out for it
};

struct Guard::State {
  std::mutex mu;
  GuardConfig config;
  std::shared_ptr<spdlog::logger> logger;
  std::set<std::string> logged;  // diagnostics already reported
  // Runtime events (HG501/HG502/HG503) whose cause was said already: in the
  // report under the run, not as more log lines. Bounded.
  std::vector<Diagnostic> consequences;
  std::map<const void*, FatbinState> fatbins;
  std::map<const void*, ModuleInfo> modules;
  // Fat binaries and modules seen but gone, for the report: one per distinct
  // (origin, findings), at most kMaxGoneImages; the rest are counted.
  struct GoneImage {
    ImageReport report;
    uint64_t seq;
  };
  std::deque<GoneImage> unregistered;  // no copies on growth
  std::set<std::string> unregistered_keys;
  // Kernels of unloaded modules / unregistered fat binaries that had findings
  // or launches, summed per (name, file), at most kMaxGoneKernels.
  struct GoneKernel {
    KernelRecord record;
    uint64_t seq;  // of the last one summed in
  };
  std::map<std::pair<std::string, std::string>, GoneKernel> gone_kernels;
  // Counts registrations, module loads and kernel states; a forked child's
  // report lists only what has a seq above fork_seq (what it did itself).
  uint64_t seq = 0;
  uint64_t fork_seq = 0;
  size_t consequences_at_fork = 0;
  // HIPGUARD_REPORT: findings appended as said, the document at exit.
  ReportFile report_file;
  bool report_reopen = false;  // a forked child with "%p" in the path opens its own
  size_t not_listed = 0;  // images and kernels over those bounds
  std::deque<KernelState> kernels;        // stable addresses: the table points into it
  // Retired kernel states wait here before reuse: a launch racing with the
  // unload of its own kernel (a program bug) still reads a valid state.
  std::deque<KernelState*> quarantine;
  static constexpr size_t kQuarantine = 256;
  static constexpr size_t kMaxGoneImages = 256;
  static constexpr size_t kMaxGoneKernels = 1024;

  KernelState& new_kernel() {
    KernelState* k;
    if (quarantine.size() <= kQuarantine) {
      k = &kernels.emplace_back();
    } else {
      k = quarantine.front();
      quarantine.pop_front();
      k->reset();
    }
    k->seq = ++seq;
    return *k;
  }
  // Forgets `key` in the kernel table; its state goes to quarantine (and, with
  // a report, what it found or how often it ran into gone_kernels).
  void retire(const void* key) {
    const KernelState* k = find(key);
    table.erase(key);
    if (!k || k->retired) return;
    if (!k->superseded && !config.report_path.empty() && (!k->findings().empty() || k->launches != 0)) {
      auto id = std::make_pair(k->name, k->file_name());
      auto it = gone_kernels.find(id);
      if (it == gone_kernels.end() && gone_kernels.size() < kMaxGoneKernels) {
        KernelRecord rec{k->name, k->file_name(), 0, 0, {}};
        for (const auto& d : k->findings()) rec.codes.push_back(d.code);
        it = gone_kernels.emplace(id, GoneKernel{std::move(rec), 0}).first;
      }
      if (it != gone_kernels.end()) {
        it->second.record.launches += k->launches.load();
        it->second.record.blocked += k->blocked.load();
        it->second.seq = k->seq;
      } else {
        ++not_listed;
      }
    }
    k->retired = true;
    k->clean.store(false, std::memory_order_release);
    quarantine.push_back(const_cast<KernelState*>(k));
  }
  // Keeps `img` for the report unless one like it is kept already.
  void keep_gone_image(ImageReport&& img, uint64_t image_seq) {
    std::string key = img.origin;
    for (const auto& d : img.diagnostics) key += "\n" + format_line(d);
    if (unregistered_keys.count(key)) return;
    if (unregistered.size() >= kMaxGoneImages) {
      ++not_listed;
      return;
    }
    unregistered_keys.insert(std::move(key));
    unregistered.push_back(GoneImage{std::move(img), image_seq});
  }
  KernelTable<LaunchFacts> table;  // values are KernelStates
  const KernelState* find(const void* key) const { return static_cast<const KernelState*>(table.find(key)); }
  ProbeFunctions probe;
  // Indexed kernels not probed yet, by fat binary (handle): probed at the first
  // launch of one of them, so the runtime never loads code objects for us that
  // the program does not use.
  std::unordered_map<const void*, std::vector<std::pair<const void*, const KernelState*>>> unprobed;
  bool probe_off = false;  // the runtime has no usable GPU: probing says nothing
  pid_t report_written_by = 0;  // the report is written once per process (a forked child writes its own)
  size_t pending_fatbins = 0;  // registered with selection only, kernels not checked yet
  std::vector<const void*> unindexed_order;  // fat binaries with unindexed kernels, in registration order
  // The findings this process reported (for HIPGUARD_FAIL_ON / strict exit status):
  // the most severe, how many at or above config.fail_on, the first of them.
  pid_t findings_pid = 0;  // a forked child starts counting afresh
  size_t failing = 0;
  std::string first_failing;
};

namespace {
// Set once the guard's state exists: the process called HIP. The exit status
// handler does nothing before that.
std::atomic<bool> g_state_ready{false};
}  // namespace

namespace {
void refresh_clean(const KernelState& k, bool probe_off) {
  bool clean = !k.shallow && !k.superseded && !k.retired && k.findings().empty() &&
               (probe_off || k.probed.load(std::memory_order_relaxed));
  k.clean.store(clean, std::memory_order_release);
}
}  // namespace

std::atomic<const KernelTable<LaunchFacts>*> g_launch_table{nullptr};

namespace {
struct PendingFatbin {
  ImageReport report;
  Bytes data;
  bool shallow = false;
};
thread_local std::unique_ptr<PendingFatbin> t_pending_fatbin;  // between register call and its handle
thread_local std::unique_ptr<ModuleInfo> t_pending_module;   // between load call and its module

ImageIndex build_index(const ImageReport& r, const std::vector<TargetId>& targets) {
  ImageIndex idx;
  auto image = std::make_shared<std::vector<Diagnostic>>();
  for (const auto& d : r.diagnostics) {
    if (d.severity == Severity::Note) continue;
    if (!d.kernel.empty()) idx.by_kernel[d.kernel].push_back(d);
    else if (d.severity == Severity::Error) image->push_back(d);
  }
  idx.image_findings = std::move(image);
  idx.origin = r.location.empty() ? r.origin : r.origin + " [" + r.location + "]";
  for (size_t t = 0; t < targets.size() && t < r.verdicts.size(); ++t) {
    const TargetVerdict& v = r.verdicts[t];
    if (v.selection == Selection::None) continue;
    const CodeObject* co = nullptr;
    for (const auto& c : r.code_objects)
      if (c.entry == v.selected || (r.kind == PayloadKind::CodeObject && c.entry.empty())) co = &c.co;
    const ProcessorInfo* proc = find_processor(targets[t].processor);
    if (!co || !proc) continue;
    ImageIndex::Selected& sel = idx.selected.emplace_back();
    sel.target = &targets[t];
    sel.entry = v.selected;
    for (const auto& ki : co->kernels) sel.kernels.insert(ki.name);
    for (const auto& ki : co->kernels) {
      uint64_t lds = ki.group_segment_fixed_size;
      if (ki.descriptor) lds = std::max<uint64_t>(lds, ki.descriptor->group_segment_fixed_size);
      uint64_t limit = lds_limit(targets[t], *proc);
      uint64_t avail = limit > lds ? limit - lds : 0;
      ImageIndex::LdsFit& fit = idx.lds[ki.name];
      if (avail < fit.max_dynamic) fit = {lds, avail, limit, targets[t].label()};
      if (targets.size() > 1) {
        auto& per = idx.lds_by_target[ki.name];
        if (per.size() < targets.size()) per.resize(targets.size());
        if (avail < per[t].max_dynamic) per[t] = {lds, avail, limit, targets[t].label()};
      }
    }
  }
  return idx;
}

// HG409 for each target whose selected code object lacks the kernel `name`.
std::vector<Diagnostic> missing_kernel(const std::string& name, const ImageIndex& idx) {
  std::vector<Diagnostic> out;
  for (const auto& sel : idx.selected) {
    if (sel.kernels.count(name)) continue;
    std::string held;
    size_t n = 0;
    for (const auto& k : sel.kernels) {
      if (++n > 8) {
        held += ", ...";
        break;
      }
      held += (held.empty() ? "" : ", ") + k;
    }
    Diagnostic d = make_diagnostic(
        code::kKernelNotInCodeObject, idx.origin,
        "kernel is registered by the program, but the code object selected for " + sel.target->label() + " (" +
            sel.entry + ") does not contain it; the runtime fails its lookup and launch with "
            "hipErrorInvalidDeviceFunction. Kernels there: " + (held.empty() ? std::string("none") : held),
        "compile the kernel for every --offload-arch (look for #if __gfx...__ / __HIP_ARCH_* guards around its "
        "definition), or do not launch it on " + sel.target->processor);
    d.entry = sel.entry;
    d.kernel = name;
    d.target = sel.target->str();
    out.push_back(std::move(d));
  }
  return out;
}

// HG210 into the image's own findings (a warning: verdicts are unchanged).
void add_hotswap(ImageReport& report, const GuardConfig& c) {
  for (auto& d : hotswap_forwarding(report, c.targets, c.hotswap_tool)) report.diagnostics.push_back(std::move(d));
}

// Adds what `idx` says about kernel k.name (its findings, its LDS headroom).
void fill_kernel(KernelState& k, const ImageIndex& idx) {
  auto own = idx.by_kernel.find(k.name);
  std::vector<Diagnostic> missing = missing_kernel(k.name, idx);
  if (!k.findings_ptr && own == idx.by_kernel.end() && missing.empty()) {
    k.findings_ptr = idx.image_findings;  // shared
  } else {
    auto merged = std::make_shared<std::vector<Diagnostic>>(k.findings());
    merged->insert(merged->end(), idx.image_findings->begin(), idx.image_findings->end());
    if (own != idx.by_kernel.end()) merged->insert(merged->end(), own->second.begin(), own->second.end());
    merged->insert(merged->end(), missing.begin(), missing.end());
    k.findings_ptr = std::move(merged);
  }
  k.blocking = false;
  for (const auto& d : k.findings()) k.blocking = k.blocking || d.severity == Severity::Error;
  if (auto fit = idx.lds.find(k.name); fit != idx.lds.end() && fit->second.max_dynamic < k.max_dynamic_lds) {
    k.max_dynamic_lds = fit->second.max_dynamic;
    k.static_lds = fit->second.static_lds;
    k.lds_limit = fit->second.limit;
    k.lds_target = fit->second.target;
  }
  if (auto per = idx.lds_by_target.find(k.name); per != idx.lds_by_target.end()) {
    if (k.lds_by_target.size() < per->second.size()) k.lds_by_target.resize(per->second.size());
    for (size_t t = 0; t < per->second.size(); ++t)
      if (per->second[t].max_dynamic < k.lds_by_target[t].max_dynamic)
        k.lds_by_target[t] = {per->second[t].static_lds, per->second[t].max_dynamic, per->second[t].limit};
  }
}

std::string first_finding(const KernelState& k) {
  if (k.findings().empty()) return "no finding";
  const Diagnostic& d = k.findings().front();
  return d.code + (d.target.empty() ? "" : " [" + d.target + "]") + ": " + d.message;
}

}  // namespace

Guard& Guard::get() {
  static Guard* g = new Guard();  // never destroyed: HIP may call us from atexit handlers
  return *g;
}

Guard::State& Guard::state() {
  static State* s = [] {
    auto* st = new State();
    st->config = config_from_env();
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    st->logger = std::make_shared<spdlog::logger>("hipguard", sink);
    st->logger->set_pattern("hipguard: %v");
    st->logger->set_level(static_cast<spdlog::level::level_enum>(st->config.log_level));
    st->logger->flush_on(spdlog::level::trace);
    if (!st->config.report_path.empty()) {
      Guard::get().open_report(*st);
      atexit([] { Guard::get().write_report(); });
      pthread_atfork([] { Guard::get().before_fork(); }, [] { Guard::get().after_fork(false); },
                     [] { Guard::get().after_fork(true); });
    }
    g_launch_table.store(&st->table, std::memory_order_release);
    g_state_ready.store(true, std::memory_order_release);
    return st;
  }();
  return *s;
}

// HIPGUARD_REPORT for this process ("%p" = its pid). A path that cannot be a
// report (a directory, /dev/full, a symlink) is said once, and nothing is created.
void Guard::open_report(State& s) {
  std::string path = s.config.report_path;
  for (size_t p; (p = path.find("%p")) != std::string::npos;) path.replace(p, 2, std::to_string(getpid()));
  if (auto why = s.report_file.open(path, llvm::json::Object{{"program", self_exe()}})) {
    Diagnostic d = make_diagnostic(code::kReportNotWritten, path, "HIPGUARD_REPORT not written: " + *why,
                                   "give HIPGUARD_REPORT the path of a regular file (or of one to create), e.g. "
                                   "hipguard-%p.json");
    s.logger->warn(format_line(d));
  }
}

// Around fork(): the child starts with the guard unlocked, its own report
// descriptor (or, with "%p", its own file, opened at its first record), and
// counts and lists only what it does itself.
void Guard::before_fork() {
  State& s = state();
  s.mu.lock();
  s.report_file.prepare_fork();
}

void Guard::after_fork(bool child) {
  State& s = state();
  if (child) {
    s.fork_seq = s.seq;
    s.consequences_at_fork = s.consequences.size();
    s.report_written_by = 0;
    if (s.config.report_path.find("%p") != std::string::npos) {
      s.report_file.close_inherited();
      s.report_reopen = true;
    } else {
      s.report_file.child_after_fork();
    }
  } else {
    s.report_file.parent_after_fork();
  }
  s.mu.unlock();
}

// Under the state mutex: the journal record of a finding just said.
void Guard::journal(State& s, const Diagnostic& d) {
  if (s.report_reopen) {
    s.report_reopen = false;
    open_report(s);
  }
  s.report_file.append(llvm::json::Object{{"diagnostic", diagnostic_json(d)}});
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

Verdict Guard::judge(const ImageReport& report, bool registration) {
  const GuardConfig& c = config();
  for (const auto& d : report.diagnostics) report_once(d);
  if (report.ok()) return {};
  if (c.mode != Mode::Strict) return {};
  if (registration) return {Action::Exit, 0};
  // Malformed input -> invalid image; nothing usable for this GPU -> no binary for GPU.
  return {Action::Refuse, report.structurally_ok ? kHipErrorNoBinaryForGpu : kHipErrorInvalidImage};
}

// ---------------------------------------------------------------- registration

Verdict Guard::on_register_fatbin(const void* wrapper) try {
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
    Verdict v = judge(r->report, true);
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
  // Warn mode, bundles: selection only now (a library may carry hundreds of fat
  // binaries whose kernels are never launched); each fat binary's kernels are
  // checked at the first launch or lookup of one of them. Strict mode checks
  // every kernel now, so that any error stops the program before main, as
  // `hipguard check` would fail it. Raw code objects: in full.
  auto pending = std::make_unique<PendingFatbin>();
  PayloadKind kind = classify(data);
  pending->shallow = (kind == PayloadKind::OffloadBundle || kind == PayloadKind::CompressedBundle) &&
                     !c.targets.empty() && c.mode != Mode::Strict;
  pending->data = data;
  pending->report = check_image(data, origin, c.targets, "", pending->shallow ? Depth::Selection : Depth::Full);
  add_hotswap(pending->report, c);
  // Nothing selected for any target: there is nothing to check more deeply.
  bool selected = false;
  for (const auto& vv : pending->report.verdicts) selected = selected || vv.selection != Selection::None;
  pending->shallow = pending->shallow && selected;
  log("debug", "registered fat binary of " + origin + " (" + std::string(to_string(pending->report.kind)) + ", " +
                   std::to_string(pending->report.entry_ids.size()) + " bundle entries)");
  Verdict v = judge(pending->report, true);

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
  if (fb.shallow) --s.pending_fatbins;  // re-registered under the same handle
  fb.report = std::move(t_pending_fatbin->report);
  fb.data = t_pending_fatbin->data;
  fb.shallow = t_pending_fatbin->shallow;
  fb.index.reset();
  fb.origin.reset();
  fb.host_functions.clear();
  fb.unindexed.clear();
  if (fb.shallow && s.pending_fatbins++ == 0) g_launch_gate.fetch_or(kGatePending, std::memory_order_release);
  t_pending_fatbin.reset();
} catch (...) {
}

// __hipRegisterFunction runs for every kernel of every fat binary a library
// carries (12 k for rocSPARSE), during dlopen: it only records the kernel. The
// kernel table is filled at the first launch, lookup, or report (index_*).
Verdict Guard::on_register_function(const void* handle, const void* host_function, const char* device_name) try {
  if (!host_function || !device_name) return {};
  State& s = state();
  if (s.config.mode == Mode::Off) return {};
  std::vector<Diagnostic> missing;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.fatbins.find(handle);
    if (it == s.fatbins.end()) return {};
    FatbinState& fb = it->second;
    if (fb.unindexed.empty()) s.unindexed_order.push_back(handle);
    fb.unindexed.emplace_back(host_function, device_name);
    if (!(g_launch_gate.load(std::memory_order_relaxed) & kGateUnindexed))
      g_launch_gate.fetch_or(kGateUnindexed, std::memory_order_release);
    // Strict mode checked the fat binary in full: a kernel its selected code
    // object lacks stops the program here, still before main.
    if (s.config.mode == Mode::Strict && !fb.shallow) {
      if (!fb.index) fb.index = std::make_unique<ImageIndex>(build_index(fb.report, s.config.targets));
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
  for (const auto& [host_function, device_name] : fb.unindexed) {
    KernelState& k = s.new_kernel();
    k.name = device_name;
    k.file = fb.origin;
    k.fatbin = handle;
    k.shallow = fb.shallow;
    fill_kernel(k, *fb.index);
    refresh_clean(k, s.probe_off);
    fb.host_functions.push_back(host_function);
    s.table.insert(host_function, &k);
    if (!s.probe_off) s.unprobed[handle].emplace_back(host_function, &k);  // gate set below
    findings = findings || !k.findings().empty();
  }
  fb.unindexed.clear();
  fb.unindexed.shrink_to_fit();
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
  if (it->second.shallow && --s.pending_fatbins == 0) g_launch_gate.fetch_and(~kGatePending, std::memory_order_release);
  if (!s.config.report_path.empty()) s.keep_gone_image(std::move(it->second.report), it->second.seq);  // only the report reads it
  s.fatbins.erase(it);
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

Verdict Guard::on_module_load_file(const char* path) try {
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

Verdict Guard::on_module_load_data(const void* image, const char* api) try {
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
  Verdict v = judge(report, false);
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

Verdict Guard::before_module_get_function(const void* module, const char* name, const char* api) try {
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
  if (k && k->shallow) {
    deepen(k->fatbin);
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

void Guard::deepen(const void* handle) {
  State& s = state();
  std::vector<Diagnostic> said;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.fatbins.find(handle);
    if (it == s.fatbins.end() || !it->second.shallow) return;
    FatbinState& fb = it->second;
    fb.report = check_image(fb.data, fb.report.origin, s.config.targets);
    add_hotswap(fb.report, s.config);
    fb.shallow = false;
    fb.index = std::make_unique<ImageIndex>(build_index(fb.report, s.config.targets));
    said = fb.report.diagnostics;
    // Fresh kernel states (readers may hold the old ones, which stay valid).
    bool findings = false;
    for (const void* f : fb.host_functions) {
      const KernelState* old = s.find(f);
      if (!old) continue;
      old->superseded = true;
      old->clean.store(false, std::memory_order_release);
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
      refresh_clean(k, s.probe_off);
      s.table.insert(f, &k);
      findings = findings || !k.findings().empty();
    }
    if (findings) g_launch_gate.fetch_or(kGateFindings, std::memory_order_release);
    if (--s.pending_fatbins == 0) g_launch_gate.fetch_and(~kGatePending, std::memory_order_release);
  }
  for (const auto& d : said) report_once(d);
}

void Guard::set_probe_functions(const ProbeFunctions& f) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.probe = f;
}

void Guard::run_probe(const void* fatbin_handle) {
  State& s = state();
  std::vector<std::pair<const void*, const KernelState*>> todo;
  ProbeFunctions fns;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.probe_off) return;
    fns = s.probe;
    auto it = s.unprobed.find(fatbin_handle);
    if (it == s.unprobed.end()) return;
    todo.swap(it->second);  // each kernel is probed once, by whichever launch gets here first
    s.unprobed.erase(it);
    for (const auto& [host, registered] : todo)
      if (const KernelState* k = s.find(host)) {
        k->probed.store(true, std::memory_order_release);
        refresh_clean(*k, s.probe_off);
      }
    if (s.unprobed.empty()) g_launch_gate.fetch_and(~kGateProbe, std::memory_order_acq_rel);
  }
  if (todo.empty() || (!fns.get_func_by_symbol && !fns.func_get_attributes)) return;
  const char* via = fns.get_func_by_symbol ? "hipGetFuncBySymbol" : "hipFuncGetAttributes";
  // Leave the program's last-error state as it was (see restored_last_error).
  const int prior = fns.peek_at_last_error ? fns.peek_at_last_error() : 0;
  bool failed = false;
  auto restore = [&] {
    if (!failed || !fns.get_last_error) return;
    fns.get_last_error();  // drain what the probe caused
    if (prior != 0) t_restored_error = prior;
  };
  for (const auto& [host, registered] : todo) {
    const KernelState* k = s.find(host);  // the current state (a first use may have refined it)
    if (!k) continue;  // unregistered meanwhile
    alignas(16) unsigned char attr[512] = {};  // hipFuncAttributes is far smaller
    void* fn = nullptr;
    int r = fns.get_func_by_symbol ? fns.get_func_by_symbol(&fn, host) : fns.func_get_attributes(attr, host);
    failed = failed || r != 0;
    if (no_device_error(r)) {
      restore();
      log("debug", std::string("registration probe off: the runtime has no usable GPU (") + via + " returned " +
                       std::to_string(r) + ")");
      std::lock_guard<std::mutex> lock(s.mu);
      s.probe_off = true;
      s.unprobed.clear();
      g_launch_gate.fetch_and(~kGateProbe, std::memory_order_acq_rel);
      return;
    }
    if (r == 0) continue;
    if (k->shallow) {  // explain the rejection with the full check of its fat binary
      deepen(k->fatbin);
      if (const KernelState* fresh = s.find(host)) k = fresh;
    }
    Diagnostic d;
    d.code = std::string(code::kRuntimeRejected);
    d.file = k->file_name();
    d.kernel = k->name;
    d.message = std::string("the runtime rejected this kernel (") + via + " returned hipError_t " + std::to_string(r) +
                "); " + (k->findings().empty() ? "cause unknown to hipguard" : "hipguard's finding: " + first_finding(*k));
    d.fix = k->findings().empty() ? "run with AMD_LOG_LEVEL=4 for the runtime's own reason" : k->findings().front().fix;
    report_consequence(d, k->findings().empty() ? nullptr : &k->findings().front());
  }
  restore();
  log("debug", std::string("registration probe done through ") + via + " (" + std::to_string(todo.size()) + " kernels)");
}

Verdict Guard::on_launch(const void* key, uint64_t dynamic_lds, const char* api) {
  return on_launch(key, dynamic_lds, api, -1);
}

Verdict Guard::on_launch(const void* key, uint64_t dynamic_lds, const char* api, int device) try {
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
  if (k->shallow) {
    deepen(k->fatbin);  // first use of this fat binary: check its kernels now
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
  return {};
} catch (...) {
  return {};
}

// ---------------------------------------------------------------- report

void Guard::write_report() try {
  State& s = state();
  if (s.config.report_path.empty()) return;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.report_written_by == getpid()) return;
    s.report_written_by = getpid();
  }
  std::vector<const void*> shallow;  // the report covers every kernel: finish the deferred checks
  {
    std::lock_guard<std::mutex> lock(s.mu);
    index_pending_kernels();
    for (const auto& [h, fb] : s.fatbins)
      if (fb.shallow && fb.seq > s.fork_seq) shallow.push_back(h);
  }
  for (const void* h : shallow) deepen(h);
  std::vector<FileReport> files;
  RunInfo run;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    std::map<std::string, size_t> by_origin;
    auto add = [&](const ImageReport& img) {
      auto [it, fresh] = by_origin.emplace(img.origin, files.size());
      if (fresh) {
        files.emplace_back();
        files.back().path = img.origin;
        files.back().hip = true;
      }
      files[it->second].images.push_back(img);
    };
    // A forked child lists what it registered or loaded itself (seq after the fork).
    for (const auto& [h, fb] : s.fatbins)
      if (fb.seq > s.fork_seq) add(fb.report);
    for (const auto& [m, mi] : s.modules)
      if (mi.seq > s.fork_seq)
        for (const auto& img : mi.images) add(img);
    for (const auto& g : s.unregistered)
      if (g.seq > s.fork_seq) add(g.report);
    // A strict-mode stop comes between a fat binary's check and its registration.
    if (t_pending_fatbin) add(t_pending_fatbin->report);
    run.program = self_exe();
    run.pid = getpid();
    run.mode = s.config.mode == Mode::Strict ? "strict" : s.config.mode == Mode::Off ? "off" : "warn";
    run.target_source = s.config.target_source;
    for (const auto& t : s.config.targets) run.devices.push_back(t.label());
    run.consequences.assign(s.consequences.begin() + std::min(s.consequences_at_fork, s.consequences.size()),
                            s.consequences.end());
    for (const auto& [id, gone] : s.gone_kernels)
      if (gone.seq > s.fork_seq) run.kernels.push_back(gone.record);
    run.not_listed = s.not_listed;
    for (const auto& k : s.kernels) {
      if (k.superseded || k.retired || k.seq <= s.fork_seq || (k.findings().empty() && k.launches == 0)) continue;
      KernelRecord rec{k.name, k.file_name(), k.launches.load(), k.blocked.load(), {}};
      for (const auto& d : k.findings()) rec.codes.push_back(d.code);
      run.kernels.push_back(std::move(rec));
    }
  }
  bool xml = s.config.report_path.size() > 4 &&
             s.config.report_path.compare(s.config.report_path.size() - 4, 4, ".xml") == 0;
  llvm::json::Object record;
  auto doc = llvm::json::parse(report_json(files, s.config.targets, &run));
  if (!doc) {
    llvm::consumeError(doc.takeError());
    return;
  }
  record["report"] = std::move(*doc);
  if (xml) record["junit"] = report_junit(files, s.config.targets);
  std::optional<std::string> problem;
  std::string path;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.report_reopen) {
      s.report_reopen = false;
      open_report(s);
    }
    path = s.report_file.path();
    problem = s.report_file.finish(std::move(record), xml);
  }
  if (problem) {
    report_once(make_diagnostic(code::kReportNotWritten, path, "HIPGUARD_REPORT is incomplete: " + *problem,
                                "free space (or raise the file size limit) where the report goes"));
  } else if (!path.empty()) {
    log("debug", "report written to " + path);
  }
} catch (...) {
}

// ---------------------------------------------------------------- exit status

void Guard::on_process_exit(int status) try {
  if (status != 0) return;  // a program that fails keeps its own status
  State& s = state();
  std::string first;
  size_t failing = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.findings_pid != getpid() || s.failing == 0) return;
    failing = s.failing;
    first = s.first_failing;
  }
  const GuardConfig& c = s.config;
  fflush(nullptr);  // the program's buffered output first: _exit below skips stdio's own flush
  std::string why = c.mode == Mode::Strict ? "strict mode" : "HIPGUARD_FAIL_ON";
  Diagnostic d = make_diagnostic(
      code::kExitStatusChanged, self_exe(),
      "the program exited with status 0 after " + std::to_string(failing) + " finding(s) that fail it (" + why +
          "; first: " + first + "): exit status " + std::to_string(c.exit_code) + " (HIPGUARD_EXIT_CODE)",
      "fix the findings above; a program should also check the HIP errors its calls return");
  log("error", format_line(d));
  write_report();
  _exit(c.exit_code);
} catch (...) {
}

void install_exit_status_handler() {
  static bool done = false;
  if (done) return;
  done = true;
  // The handler lives in this library: keep it mapped even if it was dlopen'ed and is dlclose'd.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&install_exit_status_handler), &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  // on_exit handlers run in reverse order of registration: registered from the
  // shim's constructor, this one runs after the program's and the HIP
  // libraries' exit handlers (the report's, and __hipUnregisterFatBinary's).
  on_exit(
      [](int status, void*) {
        if (status == 0 && g_state_ready.load(std::memory_order_acquire)) Guard::get().on_process_exit(status);
      },
      nullptr);
}

// ---------------------------------------------------------------- HotSwap

std::vector<Diagnostic> hotswap_forwarding(const ImageReport& report, const std::vector<TargetId>& targets,
                                           const std::string& tool) {
  std::vector<Diagnostic> out;
  if (tool.empty()) return out;
  // The bundle entry CLR's HotSwap branch would forward: the first gfx1250 one.
  std::string foreign;
  for (const auto& id : report.entry_ids) {
    size_t dash = id.rfind("--");
    std::string_view target = dash == std::string::npos ? std::string_view() : std::string_view(id).substr(dash + 2);
    std::string_view proc = target.substr(0, target.find(':'));
    if (proc == "gfx1250") {
      foreign = id;
      break;
    }
  }
  if (foreign.empty()) return out;
  for (size_t i = 0; i < targets.size() && i < report.verdicts.size(); ++i) {
    const TargetId& t = targets[i];
    const TargetVerdict& v = report.verdicts[i];
    if (t.processor != "gfx942" && t.processor != "gfx950") continue;
    if (v.selection == Selection::None) continue;  // nothing native to lose (HG201 says why)
    Diagnostic d = make_diagnostic(
        code::kHotSwapForwarding, report.origin,
        "HSA_TOOLS_LIB loads the HotSwap tool (" + tool + "): CLR builds with HotSwap forwarding hand the bundle entry " +
            foreign + " to the tool for " + t.processor + " instead of loading the code object selected for it (" +
            v.selected + ")",
        "unset HSA_TOOLS_LIB (or remove " + tool + " from it); HSA_HOTSWAP_DISABLE=1 disables the forwarding only in "
        "some CLR builds, and CLR without HotSwap (after ROCm PR #9856) loads the native code object");
    d.target = t.str();
    d.entry = foreign;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace hipguard
