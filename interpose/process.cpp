// The shim's view of its process: the environment read into the guard's
// configuration, the loaded HIP runtime found and its functions resolved.
// The shim is the one place that reads the environment for the guard.
#include "process.h"

#include "runtime/runtime_exports.h"

#include <dlfcn.h>
#include <link.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace hipguard::shim {

namespace {

// The path under which the first loaded libamdhip64 was loaded (the loader's
// own string, valid while it stays loaded), or null. Allocates nothing.
const char* loaded_runtime_path() {
  const char* path = nullptr;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        if (!info->dlpi_name || !strstr(info->dlpi_name, "libamdhip64.so")) return 0;
        *static_cast<const char**>(data) = info->dlpi_name;
        return 1;
      },
      &path);
  return path;
}

// The HIP runtime version selection follows: the real file name behind the
// loaded libamdhip64 (libamdhip64.so.6 -> libamdhip64.so.6.4.43484). Unknown
// (not loaded yet, or a name without major.minor): the newest, the strictest.
void runtime_version(hipguard::GuardConfig& config) {
  const char* loaded = loaded_runtime_path();
  if (!loaded) return;
  std::string real = loaded;
  if (char* resolved = realpath(loaded, nullptr)) {
    real = resolved;
    free(resolved);
  }
  if (const hipguard::RuntimeInfo* r = hipguard::runtime_for_library(real)) {
    config.machine.runtime = r;
    config.runtime_source = real;
  }
}

// HG604: the loaded runtime's exports against hip_api.def, said once at start (setup diagnostics).
// Runs inside guard()'s initialisation: it must not log (log_line asks guard(), which would wait for
// itself). The runtime's tables are read from its own memory (no file, no LLVM: an allocation that
// fails is a std::bad_alloc that guarded() catches); a runtime without them is not audited.
void audit_runtime(hipguard::GuardConfig& config) {
  if (config.mode == hipguard::Mode::Off) return;
  struct Found {  // filled under the loader's lock: nothing allocated there
    hipguard::LoadedObject object{};
    const char* path = nullptr;  // the loader's string, valid while the runtime stays loaded
  } f;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        if (!info->dlpi_name || !strstr(info->dlpi_name, "libamdhip64.so")) return 0;
        auto* out = static_cast<Found*>(data);
        out->object = {info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum};
        out->path = info->dlpi_name;
        return 1;
      },
      &f);
  if (!f.path) return;
  auto exports = hipguard::read_loaded_exports(f.object);
  if (!exports) return;
  std::string path = f.path;
  if (char* resolved = realpath(f.path, nullptr)) {
    path = resolved;
    free(resolved);
  }
  std::vector<hipguard::TableEntry> wrapped, skipped;
  for (const auto& a : kApis) wrapped.emplace_back(a.name, a.node);
  for (const auto& a : kSkippedApis) skipped.emplace_back(a.name, a.node);
  auto known = hipguard::known_entry_points(wrapped, skipped);
  for (auto& d : hipguard::audit_runtime_exports(*exports, known, path))
    config.setup_diagnostics.push_back(std::move(d));
}

// The loaded libamdhip64, found even when the application does not link it
// and a HIP library was dlopen'ed RTLD_LOCAL (dlsym(RTLD_NEXT) is NULL then).
// Allocates nothing: it runs outside guarded().
void* find_runtime_handle() {
  if (const char* path = loaded_runtime_path()) return dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  for (const char* name : {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"})
    if (void* h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD)) return h;
  return nullptr;
}

// This shim's own handle (its wrappers are looked up there).
void* self_handle() {
  static void* h = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&self_handle), &info) || !info.dli_fname) return static_cast<void*>(nullptr);
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }();
  return h;
}

const ApiEntry* find_api(const char* name) {
  if (!name) return nullptr;
  for (const auto& a : kApis)
    if (strcmp(a.name, name) == 0) return &a;
  return nullptr;
}

}  // namespace

Guard& guard() {
  static Guard& g = []() -> Guard& {
    std::vector<std::string> names;  // HIPGUARD_* in any case: misspellings are said
    for (char** e = environ; e && *e; ++e)
      if (strncasecmp(*e, "HIPGUARD_", 9) == 0)
        if (const char* eq = strchr(*e, '=')) names.emplace_back(*e, static_cast<size_t>(eq - *e));
    hipguard::GuardConfig config = hipguard::config_from(
        [](const char* name) -> const char* { return getenv(name); }, getauxval(AT_SECURE) != 0, names);
    runtime_version(config);
    guarded([&] { audit_runtime(config); });
    return Guard::init(std::move(config));
  }();
  return g;
}

void* resolve(const char* name, const char* version, bool optional) {
  void* p = dlvsym(RTLD_NEXT, name, version);
  if (!p) p = dlsym(RTLD_NEXT, name);
  if (!p) {
    if (void* h = find_runtime_handle()) {
      p = dlvsym(h, name, version);
      if (!p) p = dlsym(h, name);
    }
  }
  if (p) {
    Dl_info info{};
    if (dladdr(p, &info) && info.dli_fname)
      log_line("debug", [&] { return std::string("forwarding ") + name + " to " + info.dli_fname; });
  } else if (!optional) {
    if (void* h = find_runtime_handle()) {
      // Loaded, but older than the function (e.g. ROCm 5.2 and a HIP 7 entry
      // point a program looked up by name): the wrapper answers hipErrorNotSupported.
      dlclose(h);
      log_line("debug", [&] { return std::string("the loaded HIP runtime has no ") + name + "@" + version; });
    } else {
      log_line("error", [&] {
        return std::string("cannot find the HIP runtime's ") + name + "@" + version + "; is libamdhip64 loaded?";
      });
    }
  }
  return p;
}

hipError_t missing_runtime_function() {
  void* h = find_runtime_handle();
  if (!h) return kHipErrorNotInitialized;
  dlclose(h);
  return kHipErrorNotSupported;
}

[[noreturn]] void strict_exit() {
  guarded([] { guard().write_report(); });
  _exit(guarded(hipguard::kDefaultExitCode, [] { return guard().config().exit_code; }));
}

namespace {
// The exit status of a process that saw errors and exits with 0 (strict mode,
// HIPGUARD_FAIL_ON): registered before the program's own exit handlers, so it runs after them.
__attribute__((constructor)) void install_exit_status() {
  guarded([] { hipguard::install_exit_status_handler(); });
}
}  // namespace

void provide_probe_functions() {
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire) || done.exchange(true)) return;  // no locked exchange per launch
  hipguard::ProbeFunctions f;
  f.get_func_by_symbol = reinterpret_cast<int (*)(void**, const void*)>(resolve("hipGetFuncBySymbol", "hip_6.2", true));
  f.func_get_attributes = reinterpret_cast<int (*)(void*, const void*)>(resolve("hipFuncGetAttributes", "hip_4.2", true));
  f.get_last_error = reinterpret_cast<int (*)()>(resolve("hipGetLastError", "hip_4.2", true));
  f.peek_at_last_error = reinterpret_cast<int (*)()>(resolve("hipPeekAtLastError", "hip_4.2", true));
  guard().set_probe_functions(f);
}

namespace {
std::atomic<void*> g_stream_get_device;  // hipStreamGetDevice, once resolved
}  // namespace

int stream_device(hipStream_t stream) {
  using Fn = hipError_t (*)(hipStream_t, int*);
  if (!stream) return -1;
  void* p = g_stream_get_device.load(std::memory_order_acquire);
  if (!p) {
    p = resolve("hipStreamGetDevice", "hip_4.2", /*optional=*/true);
    if (!p) return -1;
    g_stream_get_device.store(p, std::memory_order_release);
  }
  int device = -1;
  return reinterpret_cast<Fn>(p)(stream, &device) == kHipSuccess ? device : -1;
}

// The runtime's answer names the function it chose (dladdr); failing that, the same rule as CLR's picks it.
void redirect(const char* requested, bool per_thread, void** pfn) {
  if (!pfn || !*pfn) return;
  const ApiEntry* api = nullptr;
  Dl_info info{};
  if (dladdr(*pfn, &info) && info.dli_sname) api = find_api(info.dli_sname);
  if (!api && requested) {
    std::string name = requested;
    if (per_thread) api = find_api((name + "_spt").c_str());
    if (!api) api = find_api(requested);
  }
  if (!api) return;
  void* self = self_handle();
  void* mine = self ? dlvsym(self, api->name, api->node) : nullptr;
  if (!mine || mine == *pfn) return;
  log_line("debug", [&] {
    return std::string(requested ? requested : "?") + ": handing out hipguard's " + api->name + " instead of the runtime's";
  });
  *pfn = mine;
}

}  // namespace hipguard::shim
