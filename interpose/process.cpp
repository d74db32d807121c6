// The shim's view of its process: the environment read into the guard's
// configuration, the loaded HIP runtime found and its functions resolved.
// The shim is the one place that reads the environment for the guard.
#include "process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace hipguard::shim {

namespace {

// The first loaded libamdhip64: the path it was loaded under (the loader's own string, valid while
// it stays loaded; null when none is) and its image. Allocates nothing: it runs under the loader's
// lock, and outside guarded().
struct LoadedRuntime {
  const char* path = nullptr;
  hipguard::LoadedObject object{};
};
LoadedRuntime loaded_runtime() {
  LoadedRuntime found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        if (!info->dlpi_name || !strstr(info->dlpi_name, "libamdhip64.so")) return 0;
        *static_cast<LoadedRuntime*>(data) = {info->dlpi_name, {info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum}};
        return 1;
      },
      &found);
  return found;
}

// The real file behind a loaded path (libamdhip64.so.6 -> libamdhip64.so.6.4.43484), else the path.
std::string real_file(const char* path) {
  std::string real = path;
  if (char* resolved = realpath(path, nullptr)) {
    real = resolved;
    free(resolved);
  }
  return real;
}

// The HIP runtime version selection follows, from the real file name of the loaded runtime.
// Unknown (a name without major.minor): the newest, the strictest.
void runtime_version(hipguard::GuardConfig& config, const std::string& real) {
  if (const hipguard::RuntimeInfo* r = hipguard::runtime_for_library(real)) {
    config.machine.runtime = r;
    config.runtime_source = real;
  }
}

// Whether a HotSwap build of the runtime is loaded: the HIP or HSA runtime's file mentions "hotswap"
// (any case; HotSwap builds read HSA_HOTSWAP_* and name the tool they forward to). ROCm 5.2's, 6.4.3's
// and 7.2.4's (libamdhip64, libhsa-runtime64) do not: there ROCr may load HSA_TOOLS_LIB's HotSwap
// tool, but nothing hands it a bundle entry, so HG210 would be false. Read with pread (no page of
// the mapping faulted in); only when HSA_TOOLS_LIB names the tool.
bool hotswap_build_loaded() {
  struct Found {
    const char* paths[4];
    int n;
  } found{{}, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* f = static_cast<Found*>(data);
        if (info->dlpi_name && f->n < 4 &&
            (strstr(info->dlpi_name, "libamdhip64.so") || strstr(info->dlpi_name, "libhsa-runtime64.so")))
          f->paths[f->n++] = info->dlpi_name;
        return 0;
      },
      &found);
  constexpr char kWord[] = "hotswap";
  constexpr size_t kLen = sizeof kWord - 1;
  std::vector<char> buf(1 << 20);
  for (int i = 0; i < found.n; ++i) {
    int fd = open(found.paths[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    size_t carried = 0;  // the end of the previous chunk, for a word across two
    off_t at = 0;
    for (ssize_t got; (got = pread(fd, buf.data() + carried, buf.size() - carried, at)) > 0; at += got) {
      size_t end = carried + static_cast<size_t>(got);
      for (size_t j = 0; j + kLen <= end; ++j)
        if ((buf[j] | 0x20) == 'h' && strncasecmp(buf.data() + j, kWord, kLen) == 0) {
          close(fd);
          return true;
        }
      carried = std::min(end, kLen - 1);
      memmove(buf.data(), buf.data() + end - carried, carried);
    }
    close(fd);
  }
  return false;
}

// HG604: the loaded runtime's exports against hip_api.def, said once at start (setup diagnostics).
// Runs inside guard()'s initialisation: it must not log (log_line asks guard(), which would wait for
// itself). The runtime's tables are read from its own memory (no file, no LLVM: an allocation that
// fails is a std::bad_alloc that guarded() catches); a runtime without them is not audited.
void audit_runtime(hipguard::GuardConfig& config, const LoadedRuntime& runtime, const std::string& real) {
  if (config.mode == hipguard::Mode::Off) return;
  auto exports = hipguard::read_loaded_exports(runtime.object);
  if (!exports) return;
  for (auto& d : hipguard::audit_runtime_exports(*exports, table_entry_points(), real))
    config.setup_diagnostics.push_back(std::move(d));
}

// The loaded libamdhip64, found even when the application does not link it
// and a HIP library was dlopen'ed RTLD_LOCAL (dlsym(RTLD_NEXT) is NULL then).
// Allocates nothing: it runs outside guarded().
void* find_runtime_handle() {
  if (const char* path = loaded_runtime().path) return dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
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
    hipguard::GuardConfig config = hipguard::config_from([](const char* name) -> const char* { return getenv(name); },
                                                         getauxval(AT_SECURE) != 0, names);
    if (LoadedRuntime runtime = loaded_runtime(); runtime.path) {
      std::string real = real_file(runtime.path);
      runtime_version(config, real);
      guarded([&] { audit_runtime(config, runtime, real); });
    }
    // HG210 only where a HotSwap build would forward (hotswap_build_loaded).
    if (!config.hotswap_tool.empty() && !guarded(false, [] { return hotswap_build_loaded(); }))
      config.hotswap_tool.clear();
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

namespace {
std::atomic<void*> g_stream_get_device;  // hipStreamGetDevice, once resolved
}  // namespace

int stream_device(hipStream_t stream) {
  using Fn = hipError_t (*)(hipStream_t, int*);
  if (!stream) return -1;
  void* p = g_stream_get_device.load(std::memory_order_acquire);
  if (!p) {
    p = resolve("hipStreamGetDevice", table_node("hipStreamGetDevice"), /*optional=*/true);
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
    return std::string(requested ? requested : "?") + ": handing out hipguard's " + api->name +
           " instead of the runtime's";
  });
  *pfn = mine;
}

}  // namespace hipguard::shim
