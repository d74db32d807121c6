// hipguard's simulated HIP runtime: a stand-in for ROCm's libamdhip64.so.5
// that hipcc-built test programs load through LD_LIBRARY_PATH on machines
// without an AMD GPU. See tests/simrt/README.md for the behaviour and sources.
//
// Behaviour model (section numbers refer to
// shared/reference/hip-fatbin-and-selection.md):
//   HIPGUARD_SIM_CLR=6.2 (default): ROCm 6.2.0 CLR (tag rocm-6.2.0, labelled
//     CLR-6.2 in the reference; the installed ROCm 5.2 returns the same codes):
//     native code objects only, no match -> hipErrorNoBinaryForGpu (§4, §6).
//   HIPGUARD_SIM_CLR=new: the rocm-systems monorepo CLR (CLR-new): native then
//     generic, lazy digest at first use, hipErrorInvalidImage on the first
//     use and hipErrorInvalidKernelFile afterwards (§4, §6).
//
// Nothing here calls hipguard's core; all parsing is in sim_parse.cpp.
#include <hip/hip_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "hipguard/owned_mutex.h"
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sim_api.h"
#include "sim_internal.h"
#include "sim_parse.h"

#define SIMRT_EXPORT extern "C" __attribute__((visibility("default")))

namespace simrt {
namespace {

enum class Model { Clr62, ClrNew };

struct Device {
  TargetId target;  // explicit feature values where the processor has them
  const Processor* proc = nullptr;
  uint32_t lds = 65536;
};

// A kernel as loaded on one device: what a hipFunction_t points to.
constexpr uint32_t kFunctionMagic = 0x46534d53;  // "SMSF"
struct Function {
  uint32_t magic = kFunctionMagic;
  int device = 0;
  KernelInfo kernel;
  std::string origin;  // for log lines
};

// Per-device result of digesting a fat binary.
struct Program {
  bool has_program = false;
  hipError_t error = hipSuccess;  // why there is no program (CLR-6.2 model)
  std::vector<KernelInfo> kernels;
  std::string chosen;  // bundle entry ID
};

struct FatBinary {
  const void* wrapper = nullptr;
  const uint8_t* blob = nullptr;
  bool digested = false;
  hipError_t digest_status = hipSuccess;
  std::vector<Program> programs;  // one per device
  std::map<std::pair<int, std::string>, std::unique_ptr<Function>> functions;
};

struct StaticKernel {
  FatBinary* fatbin = nullptr;  // null when registration returned null (CLR-new)
  std::string device_name;
};

struct Module {
  int device = 0;
  std::vector<KernelInfo> kernels;
  std::map<std::string, std::unique_ptr<Function>> functions;
  std::string origin;
};

// hipLibraryLoadData / hipLibraryLoadFromFile (CLR hip_library.cpp): the code
// object is built lazily, for the current device, at the first kernel lookup.
struct Library {
  const uint8_t* image = nullptr;  // hipLibraryLoadData: the caller's memory
  std::vector<uint8_t> file;       // hipLibraryLoadFromFile: read at load
  std::string origin;
  bool built = false;
  hipError_t build_error = hipSuccess;
  std::unique_ptr<Module> module;
};

// Graphs (CLR hip_graph.cpp): kernel nodes keep their parameters; nothing runs.
struct GraphNode {
  int type = kSimGraphNodeTypeKernel;
  hipKernelNodeParams kernel{};
};
struct Graph {
  std::vector<std::unique_ptr<GraphNode>> nodes;
};
// A stream only knows its device (nothing is ever queued).
struct Stream {
  int device = 0;
};

struct GraphExec {
  std::map<const GraphNode*, hipKernelNodeParams> kernels;  // instantiated copies
};

struct LaunchConfig {
  dim3 grid, block;
  size_t shared = 0;
  hipStream_t stream = nullptr;
};

struct State {
  // A std::mutex, not the shim's OwnedMutex: the sanitizer builds leave this library uninstrumented,
  // and ThreadSanitizer sees the order a std::mutex gives through its interceptors, not through
  // uninstrumented atomics (with an OwnedMutex it reported races in the programs' threads).
  std::mutex mu;
  Model model = Model::Clr62;
  bool log = false;
  bool initialized = false;  // any non-registration HIP API has been called
  std::vector<Device> devices;
  std::vector<std::unique_ptr<FatBinary>> fatbins;
  std::unordered_map<const void*, StaticKernel> kernels;  // host pointer -> kernel
  std::unordered_set<const Function*> functions;          // valid hipFunction_t
  std::unordered_map<const void*, std::unique_ptr<Module>> modules;
  std::unordered_map<void*, size_t> allocations;
  std::unordered_map<const void*, std::unique_ptr<Library>> libraries;
  std::unordered_map<const void*, std::unique_ptr<Graph>> graphs;
  std::unordered_map<const void*, std::unique_ptr<GraphExec>> graph_execs;
  std::unordered_map<const void*, std::unique_ptr<Stream>> streams;
};

thread_local hipError_t t_last_error = hipSuccess;
thread_local hipError_t t_last_command_error = hipSuccess;  // hipExtGetLastError's slot
thread_local int t_device = 0;
thread_local std::vector<LaunchConfig> t_configs;

void logf(State& s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void logf(State& s, const char* fmt, ...) {
  if (!s.log) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "simrt: %s\n", buf);
}

// A CLR build with HotSwap forwarding (rocclr/device/hotswap.hpp) reads HSA_HOTSWAP_DISABLE: the
// simulated runtime's file mentions it too, so that the shim takes it for such a build (HG210 is
// said only there). It forwards nothing itself.
[[gnu::used]] const char kHotSwapBuild[] = "HSA_HOTSWAP_DISABLE";

void configure(State& s) {
  const char* clr = getenv("HIPGUARD_SIM_CLR");
  if (clr && strcmp(clr, "new") == 0) s.model = Model::ClrNew;
  else if (clr && *clr && strcmp(clr, "6.2") != 0)
    fprintf(stderr, "simrt: HIPGUARD_SIM_CLR=%s not understood (use 6.2 or new); using 6.2\n", clr);
  const char* gpus = getenv("HIPGUARD_SIM_GPUS");
  std::string list = gpus ? gpus : "";
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() : comma + 1;
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) continue;
    auto tid = parse_target_id(item);
    const Processor* proc = tid ? find_processor(tid->processor) : nullptr;
    if (!tid || !proc || proc->is_generic || (tid->xnack && !proc->xnack) || (tid->sramecc && !proc->sramecc)) {
      fprintf(stderr, "simrt: ignoring HIPGUARD_SIM_GPUS entry '%s' (not a device target ID)\n", item.c_str());
      continue;
    }
    // ROCr registers every agent ISA with explicit feature values (ref §4).
    if (proc->sramecc && !tid->sramecc) {
      fprintf(stderr, "simrt: '%s' has no sramecc value; assuming sramecc-\n", item.c_str());
      tid->sramecc = '-';
    }
    if (proc->xnack && !tid->xnack) {
      fprintf(stderr, "simrt: '%s' has no xnack value; assuming xnack-\n", item.c_str());
      tid->xnack = '-';
    }
    Device d;
    d.target = *tid;
    d.proc = proc;
    d.lds = proc->lds;
    s.devices.push_back(d);
  }
  logf(s, "model %s, %zu device(s)", s.model == Model::ClrNew ? "CLR-new" : "CLR-6.2", s.devices.size());
  for (size_t i = 0; i < s.devices.size(); ++i)
    logf(s, "device %zu: amdgcn-amd-amdhsa--%s, LDS %u bytes", i, s.devices[i].target.str().c_str(), s.devices[i].lds);
}

// The runtime's lock, held across fork() so that a child forked while another thread is inside the
// runtime can use it. A fork() from a signal handler that interrupted this thread holding it leaves
// it to the thread, which, resuming, releases it; what the handlers took is kept per depth (a
// handler's fork inside another fork's handlers). Tried only as long as the shim tries its own
// (OwnedMutex::kForkPatienceMs), then left held: this library cannot know whether its thread
// holds the shim's locks (another library's), for which the holder of this one may be waiting in a
// fork handler of its own (the shim's lock_for_fork knows its own). The fork tests' children that call HIP fork outside
// signal handlers. t_holding: this thread holds the lock, or waits for it (a test double's simplification: a handler
// that interrupted the wait leaves the lock, as the one that interrupted a holder).
thread_local unsigned t_holding = 0;
struct Locked {
  std::mutex& mu;
  explicit Locked(State& s) : mu(s.mu) {
    ++t_holding;
    mu.lock();
  }
  ~Locked() {
    mu.unlock();
    --t_holding;
  }
};
constinit thread_local hipguard::ForkRecords<hipguard::OwnedMutex::ForkHold> t_fork_hold;

// Leaked on purpose: __hipUnregisterFatBinary runs from atexit handlers that
// may come after static destructors. Registration uses state() only; the
// configuration (devices, model) is read at the first other HIP call, as the
// real runtime initialises on first API use, not in module constructors.
State& state() {
  static State* s = [] {
    auto* st = new State;
    const char* log = getenv("HIPGUARD_SIM_LOG");
    st->log = log && *log && strcmp(log, "0") != 0;
    // Held across fork(), so a child forked while another thread is inside the runtime can use it
    // (the fork tests exercise the shim's locks, not this one's).
    using Hold = hipguard::OwnedMutex::ForkHold;
    auto after = [] {
      if (t_fork_hold.pop(Hold::Mine) != Hold::Taken) return;
      state().mu.unlock();
      --t_holding;
    };
    pthread_atfork(
        [] {
          Hold* hold = t_fork_hold.push();
          if (!hold) return;
          std::mutex& mu = state().mu;
          *hold = t_holding ? Hold::Mine : Hold::Other;  // held by this thread: by a fork handler outside too
          for (long ms = 0; ms < hipguard::OwnedMutex::kForkPatienceMs && *hold == Hold::Other; ++ms) {
            if (mu.try_lock()) {
              *hold = Hold::Taken;
              ++t_holding;
            } else {
              usleep(1000);
            }
          }
        },
        after, after);
    return st;
  }();
  return *s;
}

State& api() {
  State& s = state();
  static std::once_flag once;
  std::call_once(once, [&] { configure(s); });
  return s;
}

hipError_t ret(hipError_t e) {
  if (e != hipSuccess) t_last_error = t_last_command_error = e;  // sticky, like HIP 6.x HIP_RETURN
  return e;
}

const char* error_name(hipError_t e);

// ---- code-object choice --------------------------------------------------------

// Checks a chosen ELF against the device the way CLR's createKernelMetadataMap
// / ROCr's loader do (ref §4 step 6): processor must match (generic: family
// and version >= 1, CLR-new only); +/- features must equal the device's.
bool isa_compatible(State& s, const CodeObjectInfo& co, const Device& dev, std::string* why) {
  if (!co.processor) {
    *why = "unknown EF_AMDGPU_MACH";
    return false;
  }
  if (co.processor->is_generic) {
    if (s.model != Model::ClrNew) {
      *why = std::string("generic code object ") + co.processor->name + " (CLR-6.2 has no generic ISAs)";
      return false;
    }
    if (!dev.proc->generic || strcmp(dev.proc->generic, co.processor->name) != 0 || co.generic_version < 1) {
      *why = std::string("generic ") + co.processor->name + " does not cover " + dev.proc->name;
      return false;
    }
  } else if (co.processor != dev.proc) {
    *why = std::string("program ISA ") + co.processor->name + " is not the device ISA " + dev.proc->name;
    return false;
  }
  if (!features_compatible(co.target, dev.target)) {
    *why = "features " + co.target.str() + " do not match device " + dev.target.str();
    return false;
  }
  return true;
}

// Entry selection for one device (comgr lookUpCodeObject, ref §4): walk the
// bundle in file order; the first compatible native entry wins; CLR-new then
// falls back to the first compatible generic entry.
const BundleEntry* choose_entry(State& s, const std::vector<BundleEntry>& entries, const Device& dev) {
  for (const auto& e : entries) {
    auto t = hip_entry_target(e.id);
    if (t && e.size != 0 && t->processor == dev.proc->name && features_compatible(*t, dev.target)) return &e;
  }
  if (s.model == Model::ClrNew && dev.proc->generic) {
    for (const auto& e : entries) {
      auto t = hip_entry_target(e.id);
      if (t && e.size != 0 && t->processor == dev.proc->generic && features_compatible(*t, dev.target)) return &e;
    }
  }
  return nullptr;
}

// Result of loading one image (bundle or raw ELF) for one device.
struct LoadResult {
  hipError_t error = hipSuccess;
  std::vector<KernelInfo> kernels;
  std::string chosen;
};

// `avail` is the image size when known (files), SIZE_MAX for in-memory images.
LoadResult load_for_device(State& s, const uint8_t* image, size_t avail, const Device& dev, const char* what) {
  LoadResult r;
  const uint8_t* co = nullptr;
  size_t co_size = 0;
  if (is_compressed_bundle(image, avail)) {
    logf(s, "%s: compressed (CCOB) bundles are not simulated", what);
    r.error = hipErrorNotSupported;
    return r;
  }
  if (is_bundle(image, avail)) {
    std::vector<BundleEntry> entries;
    std::string err;
    if (!parse_bundle(image, avail, &entries, &err)) {
      logf(s, "%s: invalid offload bundle: %s", what, err.c_str());
      r.error = hipErrorInvalidImage;
      return r;
    }
    const BundleEntry* e = choose_entry(s, entries, dev);
    if (!e) {
      // CLR-6.2: "Cannot find CO in the bundle ... for ISA" -> NoBinaryForGpu.
      // CLR-new: "No compatible code objects found for" -> InvalidImage.
      r.error = s.model == Model::ClrNew ? hipErrorInvalidImage : hipErrorNoBinaryForGpu;
      logf(s, "%s: no compatible code object for amdgcn-amd-amdhsa--%s -> %s", what, dev.target.str().c_str(),
           error_name(r.error));
      return r;
    }
    r.chosen = e->id;
    co = image + e->offset;
    co_size = e->size;
  } else {
    // Raw ELF code object (ref §1(c)): accepted for every device; the ISA
    // check comes at program build.
    if (!is_amdgpu_elf(image, avail)) {
      logf(s, "%s: not a bundle nor an AMDGPU HSA ELF", what);
      r.error = hipErrorInvalidImage;
      return r;
    }
    uint64_t sz = elf_size(image, avail);
    if (sz == 0 || sz > avail) {
      logf(s, "%s: ELF size unknown or past the end of the image", what);
      r.error = hipErrorInvalidImage;
      return r;
    }
    r.chosen = "raw ELF";
    co = image;
    co_size = sz;
  }
  CodeObjectInfo info;
  std::string err;
  if (!parse_code_object(co, co_size, &info, &err)) {
    logf(s, "%s: code object %s cannot be built: %s -> hipErrorNoBinaryForGpu", what, r.chosen.c_str(), err.c_str());
    r.error = hipErrorNoBinaryForGpu;
    return r;
  }
  std::string why;
  if (!isa_compatible(s, info, dev, &why)) {
    // "Error: The program ISA ... is not compatible with the device ISA" (§4.6),
    // BuildProgram failure -> hipErrorNoBinaryForGpu (§6).
    logf(s, "%s: %s: %s -> hipErrorNoBinaryForGpu", what, r.chosen.c_str(), why.c_str());
    r.error = hipErrorNoBinaryForGpu;
    return r;
  }
  logf(s, "%s: device amdgcn-amd-amdhsa--%s uses %s (%zu kernel(s))", what, dev.target.str().c_str(), r.chosen.c_str(),
       info.kernels.size());
  r.kernels = std::move(info.kernels);
  return r;
}

// Lazy digest of a registered fat binary for all devices (first use).
void digest(State& s, FatBinary& fb) {
  if (fb.digested) return;
  fb.digested = true;
  fb.programs.assign(s.devices.size(), Program{});
  char what[64];
  snprintf(what, sizeof what, "fat binary %p", fb.wrapper);
  bool stop = false;
  fb.digest_status = hipErrorInvalidImage;  // CLR-new's initial status (§4 step 5)
  for (size_t i = 0; i < s.devices.size(); ++i) {
    Program& p = fb.programs[i];
    if (stop) {
      p.error = hipErrorInvalidKernelFile;
      continue;
    }
    LoadResult r = load_for_device(s, fb.blob, SIZE_MAX, s.devices[i], what);
    if (r.error == hipSuccess) {
      p.has_program = true;
      p.kernels = std::move(r.kernels);
      p.chosen = r.chosen;
      fb.digest_status = hipSuccess;
    } else {
      p.error = r.error;
      // CLR-new breaks out of the device loop on the first device without a
      // compatible code object; later devices get no program.
      if (s.model == Model::ClrNew) {
        if (r.error == hipErrorNoBinaryForGpu) {
          // A code object was chosen but will not build: the digest attached
          // it (status hipSuccess); BuildProgram fails later (NoBinaryForGpu).
          fb.digest_status = hipSuccess;
        } else {
          stop = true;
        }
      }
    }
  }
}

Function* make_function(State& s, std::unique_ptr<Function>& slot, int device, const KernelInfo& k,
                        const std::string& origin) {
  if (!slot) {
    slot = std::make_unique<Function>();
    slot->device = device;
    slot->kernel = k;
    slot->origin = origin;
    s.functions.insert(slot.get());
  }
  return slot.get();
}

const KernelInfo* find_kernel(const std::vector<KernelInfo>& ks, const std::string& name) {
  for (const auto& k : ks) {
    if (k.name == name) return &k;
    if (k.symbol.size() == name.size() + 3 && k.symbol.compare(0, name.size(), name) == 0 &&
        k.symbol.compare(name.size(), 3, ".kd") == 0)
      return &k;
  }
  return nullptr;
}

// CLR's StatCO::GetFunc for the current device (ref §6 table).
hipError_t get_static_function(State& s, const void* host, Function** out) {
  auto it = s.kernels.find(host);
  if (it == s.kernels.end()) return hipErrorInvalidSymbol;
  StaticKernel& sk = it->second;
  if (!sk.fatbin) return hipErrorInvalidDeviceFunction;
  FatBinary& fb = *sk.fatbin;
  bool first = !fb.digested;
  digest(s, fb);
  const Program& p = fb.programs[t_device];
  if (!p.has_program) {
    if (s.model == Model::ClrNew) {
      if (first && fb.digest_status != hipSuccess) return fb.digest_status;  // first use: digest error
      if (p.error == hipErrorNoBinaryForGpu) return hipErrorNoBinaryForGpu;  // chosen but build failed
      return hipErrorInvalidKernelFile;                                      // no per-device program
    }
    return p.error == hipErrorInvalidImage ? hipErrorInvalidImage : hipErrorNoBinaryForGpu;
  }
  const KernelInfo* k = find_kernel(p.kernels, sk.device_name);
  if (!k) {
    logf(s, "kernel %s not in the code object chosen for device %d", sk.device_name.c_str(), t_device);
    return hipErrorInvalidDeviceFunction;
  }
  *out = make_function(s, fb.functions[{t_device, sk.device_name}], t_device, *k, p.chosen);
  return hipSuccess;
}

Function* as_function(State& s, const void* f) {
  auto* fn = static_cast<const Function*>(f);
  return s.functions.count(fn) ? const_cast<Function*>(fn) : nullptr;
}

hipError_t need_device(State& s) {
  s.initialized = true;
  // The installed ROCm 5.2 answers hipErrorInvalidDevice when there is no GPU.
  if (s.devices.empty()) return hipErrorInvalidDevice;
  if (t_device < 0 || static_cast<size_t>(t_device) >= s.devices.size()) return hipErrorInvalidDevice;
  return hipSuccess;
}

enum class LaunchKind { Static, Cooperative, Module, ModuleCooperative };

// Launch-time checks (ref §6 "Launch-time checks", CLR hip_module.cpp and
// rocvirtual.cpp), in CLR's order: validation, then dispatch.
hipError_t launch(State& s, Function& f, LaunchKind kind, uint64_t bx, uint64_t by, uint64_t bz, uint64_t gx,
                  uint64_t gy, uint64_t gz, uint64_t shared) {
  const Device& dev = s.devices[f.device];
  bool module = kind == LaunchKind::Module || kind == LaunchKind::ModuleCooperative;
  uint64_t threads = bx * by * bz;
  if (bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 || threads > 1024) {
    logf(s, "launch %s: block %llux%llux%llu grid %llux%llux%llu invalid", f.kernel.name.c_str(),
         (unsigned long long)bx, (unsigned long long)by, (unsigned long long)bz, (unsigned long long)gx,
         (unsigned long long)gy, (unsigned long long)gz);
    return module ? hipErrorInvalidValue : hipErrorInvalidConfiguration;
  }
  if (shared > dev.lds) {
    logf(s, "launch %s: dynamic LDS %llu > device LDS %u", f.kernel.name.c_str(), (unsigned long long)shared, dev.lds);
    bool coop = kind == LaunchKind::Cooperative || kind == LaunchKind::ModuleCooperative;
    return coop ? hipErrorCooperativeLaunchTooLarge : hipErrorInvalidValue;
  }
  if (f.kernel.max_flat_workgroup_size != 0 && threads > f.kernel.max_flat_workgroup_size) {
    logf(s, "launch %s: block of %llu threads > max flat workgroup size %llu", f.kernel.name.c_str(),
         (unsigned long long)threads, (unsigned long long)f.kernel.max_flat_workgroup_size);
    return hipErrorLaunchFailure;
  }
  if (f.kernel.group_segment_fixed_size > dev.lds) {
    // rocvirtual.cpp submitKernelInternal: "No local memory available",
    // CL_INVALID_OPERATION -> hipErrorIllegalState (direct dispatch).
    logf(s, "launch %s: static LDS %llu > device LDS %u -> hipErrorIllegalState", f.kernel.name.c_str(),
         (unsigned long long)f.kernel.group_segment_fixed_size, dev.lds);
    return hipErrorIllegalState;
  }
  logf(s, "launch %s on device %d (%s): ok, not executed", f.kernel.name.c_str(), f.device, f.origin.c_str());
  return hipSuccess;
}

// hipLaunchKernel / _spt / hipLaunchCooperativeKernel / hipLaunchKernelExC.
hipError_t launch_static(const void* host, dim3 grid, dim3 block, size_t shared, bool cooperative) {
  State& s = api();
  Locked lock(s);
  if (hipError_t e = need_device(s)) return ret(e);
  Function* f = nullptr;
  hipError_t e = get_static_function(s, host, &f);
  if (e != hipSuccess) {
    if (s.model == Model::Clr62) {
      // ihipLaunchKernel (CLR-6.2): NoBinaryForGpu passes through, anything
      // else becomes InvalidDeviceFunction.
      e = e == hipErrorNoBinaryForGpu ? hipErrorNoBinaryForGpu : hipErrorInvalidDeviceFunction;
      logf(s, "launch %p: %s", host, error_name(e));
      return ret(e);
    }
    // CLR-new passes InvalidKernelFile/InvalidDeviceFunction/InvalidImage and
    // otherwise treats the pointer as a hipFunction_t.
    if (e == hipErrorInvalidKernelFile || e == hipErrorInvalidDeviceFunction || e == hipErrorInvalidImage) {
      logf(s, "launch %p: %s", host, error_name(e));
      return ret(e);
    }
    f = as_function(s, host);
    if (!f) {
      // Real CLR-new casts without validating (undefined); the simulator refuses.
      logf(s, "launch %p: not a registered kernel nor a hipFunction_t", host);
      return ret(hipErrorInvalidDeviceFunction);
    }
  }
  return ret(launch(s, *f, cooperative ? LaunchKind::Cooperative : LaunchKind::Static, block.x, block.y, block.z,
                    grid.x, grid.y, grid.z, shared));
}

hipError_t launch_module(hipFunction_t fn, uint64_t gx, uint64_t gy, uint64_t gz, uint64_t bx, uint64_t by, uint64_t bz,
                         uint64_t shared, void** params, void** extra, bool cooperative) {
  State& s = api();
  Locked lock(s);
  if (hipError_t e = need_device(s)) return ret(e);
  Function* f = as_function(s, fn);
  if (!f) return ret(hipErrorInvalidResourceHandle);
  if (params && extra) return ret(hipErrorInvalidValue);
  return ret(
      launch(s, *f, cooperative ? LaunchKind::ModuleCooperative : LaunchKind::Module, bx, by, bz, gx, gy, gz, shared));
}

hipError_t module_load(hipModule_t* module, const uint8_t* image, size_t avail, const std::string& origin) {
  State& s = api();
  const Device& dev = s.devices[t_device];
  LoadResult r = load_for_device(s, image, avail, dev, origin.c_str());
  if (r.error != hipSuccess) return r.error;
  auto m = std::make_unique<Module>();
  m->device = t_device;
  m->kernels = std::move(r.kernels);
  m->origin = origin + " [" + r.chosen + "]";
  *module = reinterpret_cast<hipModule_t>(m.get());
  s.modules[m.get()] = std::move(m);
  return hipSuccess;
}

// Names from /usr/include/hip/hip_runtime_api.h; ROCm 5.2's hipGetErrorString
// returns the same text as hipGetErrorName (checked against the installed
// libamdhip64.so.5).
// clang-format off
const char* error_name(hipError_t e) {
  switch (e) {
#define N(x) case x: return #x;
    N(hipSuccess) N(hipErrorInvalidValue) N(hipErrorOutOfMemory) N(hipErrorNotInitialized)
    N(hipErrorDeinitialized) N(hipErrorProfilerDisabled) N(hipErrorProfilerNotInitialized)
    N(hipErrorProfilerAlreadyStarted) N(hipErrorProfilerAlreadyStopped) N(hipErrorInvalidConfiguration)
    N(hipErrorInvalidPitchValue) N(hipErrorInvalidSymbol) N(hipErrorInvalidDevicePointer)
    N(hipErrorInvalidMemcpyDirection) N(hipErrorInsufficientDriver) N(hipErrorMissingConfiguration)
    N(hipErrorPriorLaunchFailure) N(hipErrorInvalidDeviceFunction) N(hipErrorNoDevice) N(hipErrorInvalidDevice)
    N(hipErrorInvalidImage) N(hipErrorInvalidContext) N(hipErrorContextAlreadyCurrent) N(hipErrorMapFailed)
    N(hipErrorUnmapFailed) N(hipErrorArrayIsMapped) N(hipErrorAlreadyMapped) N(hipErrorNoBinaryForGpu)
    N(hipErrorAlreadyAcquired) N(hipErrorNotMapped) N(hipErrorNotMappedAsArray) N(hipErrorNotMappedAsPointer)
    N(hipErrorECCNotCorrectable) N(hipErrorUnsupportedLimit) N(hipErrorContextAlreadyInUse)
    N(hipErrorPeerAccessUnsupported) N(hipErrorInvalidKernelFile) N(hipErrorInvalidGraphicsContext)
    N(hipErrorInvalidSource) N(hipErrorFileNotFound) N(hipErrorSharedObjectSymbolNotFound)
    N(hipErrorSharedObjectInitFailed) N(hipErrorOperatingSystem) N(hipErrorInvalidHandle) N(hipErrorIllegalState)
    N(hipErrorNotFound) N(hipErrorNotReady) N(hipErrorIllegalAddress) N(hipErrorLaunchOutOfResources)
    N(hipErrorLaunchTimeOut) N(hipErrorPeerAccessAlreadyEnabled) N(hipErrorPeerAccessNotEnabled)
    N(hipErrorSetOnActiveProcess) N(hipErrorContextIsDestroyed) N(hipErrorAssert)
    N(hipErrorHostMemoryAlreadyRegistered) N(hipErrorHostMemoryNotRegistered) N(hipErrorLaunchFailure)
    N(hipErrorCooperativeLaunchTooLarge) N(hipErrorNotSupported) N(hipErrorStreamCaptureUnsupported)
    N(hipErrorStreamCaptureInvalidated) N(hipErrorStreamCaptureMerge) N(hipErrorStreamCaptureUnmatched)
    N(hipErrorStreamCaptureUnjoined) N(hipErrorStreamCaptureIsolation) N(hipErrorStreamCaptureImplicit)
    N(hipErrorCapturedEvent) N(hipErrorStreamCaptureWrongThread) N(hipErrorGraphExecUpdateFailure)
    N(hipErrorUnknown) N(hipErrorRuntimeMemory) N(hipErrorRuntimeOther) N(hipErrorTbd)
#undef N
    default: return "hipErrorUnknown";
  }
}
// clang-format on

}  // namespace
}  // namespace simrt

using namespace simrt;

// ---- registration (hip_4.2) ---------------------------------------------------------

SIMRT_EXPORT void** __hipRegisterFatBinary(const void* data) {
  State& s = state();
  Locked lock(s);
  // The wrapper {u32 magic, u32 version, void* binary, void*} is checked at
  // registration by both CLRs (ref §1); the bundle itself is not parsed here.
  struct Wrapper {
    uint32_t magic, version;
    const void* binary;
    const void* dummy;
  };
  auto* w = static_cast<const Wrapper*>(data);
  if (!w || w->version != 1 || w->magic != kHipfMagic || !w->binary) {
    logf(s, "Cannot Register fat binary %p (bad wrapper)", data);
    return nullptr;
  }
  auto fb = std::make_unique<FatBinary>();
  fb->wrapper = data;
  fb->blob = static_cast<const uint8_t*>(w->binary);
  FatBinary* raw = fb.get();
  s.fatbins.push_back(std::move(fb));
  if (s.initialized && s.model == Model::ClrNew) {
    // CLR-new StatCO::AddFatBinary digests at once when HIP is already
    // initialised (e.g. a library dlopen'ed later) and returns nullptr on
    // failure (ref §6 "Registration").
    digest(s, *raw);
    if (raw->digest_status != hipSuccess) {
      logf(s, "fat binary %p registered after initialisation failed to digest: returning null", data);
      return nullptr;
    }
  }
  logf(s, "registered fat binary %p (lazy)", data);
  return reinterpret_cast<void**>(raw);
}

SIMRT_EXPORT void __hipRegisterFunction(void** modules, const void* hostFunction, char* deviceFunction,
                                        const char* deviceName, unsigned int, uint3*, uint3*, dim3*, dim3*, int*) {
  State& s = state();
  Locked lock(s);
  if (!hostFunction) return;
  const char* name = deviceName ? deviceName : deviceFunction;
  StaticKernel sk;
  auto* fb = reinterpret_cast<FatBinary*>(modules);
  bool known = false;
  for (auto& p : s.fatbins) known = known || p.get() == fb;
  sk.fatbin = known ? fb : nullptr;
  sk.device_name = name ? name : "";
  // The first registration of a stub stays; a later one is dropped, and the
  // stub is gone with its first fat binary (CLR StatCO::RegisterFunction).
  s.kernels.try_emplace(hostFunction, sk);
}

SIMRT_EXPORT void __hipRegisterVar(void**, void*, char*, char*, int, size_t, int, int) {}

SIMRT_EXPORT void __hipUnregisterFatBinary(void** modules) {
  State& s = state();
  Locked lock(s);
  auto* fb = reinterpret_cast<FatBinary*>(modules);
  auto it = std::find_if(s.fatbins.begin(), s.fatbins.end(), [&](auto& p) { return p.get() == fb; });
  if (it == s.fatbins.end()) return;
  for (auto k = s.kernels.begin(); k != s.kernels.end();)
    k = k->second.fatbin == fb ? s.kernels.erase(k) : std::next(k);
  for (auto& [key, f] : fb->functions) s.functions.erase(f.get());
  s.fatbins.erase(it);
}

SIMRT_EXPORT hipError_t __hipPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, hipStream_t stream) {
  t_configs.push_back({gridDim, blockDim, sharedMem, stream});
  return hipSuccess;
}

SIMRT_EXPORT hipError_t __hipPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                                  hipStream_t* stream) {
  if (t_configs.empty()) return ret(hipErrorInvalidConfiguration);
  LaunchConfig c = t_configs.back();
  t_configs.pop_back();
  if (gridDim) *gridDim = c.grid;
  if (blockDim) *blockDim = c.block;
  if (sharedMem) *sharedMem = c.shared;
  if (stream) *stream = c.stream;
  return hipSuccess;
}

// ---- launches --------------------------------------------------------------------------

SIMRT_EXPORT hipError_t hipLaunchKernel(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void**,
                                        size_t sharedMemBytes, hipStream_t) {
  return launch_static(function_address, numBlocks, dimBlocks, sharedMemBytes, false);
}

SIMRT_EXPORT hipError_t hipLaunchKernel_spt(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void**,
                                            size_t sharedMemBytes, hipStream_t) {
  return launch_static(function_address, numBlocks, dimBlocks, sharedMemBytes, false);
}

SIMRT_EXPORT hipError_t hipLaunchCooperativeKernel(const void* f, dim3 gridDim, dim3 blockDimX, void**,
                                                   unsigned int sharedMemBytes, hipStream_t) {
  return launch_static(f, gridDim, blockDimX, sharedMemBytes, true);
}

SIMRT_EXPORT hipError_t hipLaunchCooperativeKernel_spt(const void* f, dim3 gridDim, dim3 blockDim, void**,
                                                       uint32_t sharedMemBytes, hipStream_t) {
  return launch_static(f, gridDim, blockDim, sharedMemBytes, true);
}

SIMRT_EXPORT hipError_t hipLaunchKernelExC(const hipLaunchConfig_sim* config, const void* fPtr, void**) {
  if (!config) return ret(hipErrorInvalidValue);
  return launch_static(fPtr, config->gridDim, config->blockDim, config->dynamicSmemBytes, false);
}

SIMRT_EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                              unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                              unsigned int blockDimZ, unsigned int sharedMemBytes, hipStream_t,
                                              void** kernelParams, void** extra) {
  return launch_module(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, kernelParams,
                       extra, false);
}

SIMRT_EXPORT hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                                         unsigned int gridDimZ, unsigned int blockDimX,
                                                         unsigned int blockDimY, unsigned int blockDimZ,
                                                         unsigned int sharedMemBytes, hipStream_t,
                                                         void** kernelParams) {
  return launch_module(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, kernelParams,
                       nullptr, true);
}

// hipExtModuleLaunchKernel: C symbol (CLR-new hip_hcc.map.in, hip_4.2) and,
// in sim_cxx.cpp, the C++-mangled one that ROCm 5.2's hip_ext.h makes callers use.
hipError_t simrt::ext_module_launch(hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY,
                                    uint32_t globalWorkSizeZ, uint32_t localWorkSizeX, uint32_t localWorkSizeY,
                                    uint32_t localWorkSizeZ, size_t sharedMemBytes, void** kernelParams, void** extra) {
  // Global work sizes are in work-items; the grid is their quotient (rounded up).
  auto blocks = [](uint64_t global, uint64_t local) { return local ? (global + local - 1) / local : 0; };
  return launch_module(f, blocks(globalWorkSizeX, localWorkSizeX), blocks(globalWorkSizeY, localWorkSizeY),
                       blocks(globalWorkSizeZ, localWorkSizeZ), localWorkSizeX, localWorkSizeY, localWorkSizeZ,
                       sharedMemBytes, kernelParams, extra, false);
}

SIMRT_EXPORT hipError_t hipExtModuleLaunchKernel(hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY,
                                                 uint32_t globalWorkSizeZ, uint32_t localWorkSizeX,
                                                 uint32_t localWorkSizeY, uint32_t localWorkSizeZ,
                                                 size_t sharedMemBytes, hipStream_t, void** kernelParams, void** extra,
                                                 hipEvent_t, hipEvent_t, uint32_t) {
  return ext_module_launch(f, globalWorkSizeX, globalWorkSizeY, globalWorkSizeZ, localWorkSizeX, localWorkSizeY,
                           localWorkSizeZ, sharedMemBytes, kernelParams, extra);
}

// hipHccModuleLaunchKernel with C linkage, as HIP 6.4's libamdhip64.so.6 exports it.
SIMRT_EXPORT hipError_t hipHccModuleLaunchKernel(hipFunction_t f, uint32_t globalWorkSizeX, uint32_t globalWorkSizeY,
                                                 uint32_t globalWorkSizeZ, uint32_t localWorkSizeX,
                                                 uint32_t localWorkSizeY, uint32_t localWorkSizeZ,
                                                 size_t sharedMemBytes, hipStream_t, void** kernelParams, void** extra,
                                                 hipEvent_t, hipEvent_t) {
  return ext_module_launch(f, globalWorkSizeX, globalWorkSizeY, globalWorkSizeZ, localWorkSizeX, localWorkSizeY,
                           localWorkSizeZ, sharedMemBytes, kernelParams, extra);
}

// ---- function lookup -----------------------------------------------------------------

SIMRT_EXPORT hipError_t hipGetFuncBySymbol(hipFunction_t* functionPtr, const void* symbolPtr) {
  State& s = api();
  Locked lock(s);
  if (!functionPtr) return ret(hipErrorInvalidValue);
  if (hipError_t e = need_device(s)) return ret(e);
  Function* f = nullptr;
  hipError_t e = get_static_function(s, symbolPtr, &f);
  if (e != hipSuccess) {
    // CLR-new hipGetFuncBySymbol turns any GetFunc failure into
    // hipErrorInvalidDeviceFunction (ref §6).
    logf(s, "hipGetFuncBySymbol %p: %s -> hipErrorInvalidDeviceFunction", symbolPtr, error_name(e));
    return ret(hipErrorInvalidDeviceFunction);
  }
  *functionPtr = reinterpret_cast<hipFunction_t>(f);
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipFuncGetAttributes(hipFuncAttributes* attr, const void* func) {
  State& s = api();
  Locked lock(s);
  if (!attr) return ret(hipErrorInvalidValue);
  if (!func) return ret(hipErrorInvalidDeviceFunction);
  if (hipError_t e = need_device(s)) return ret(e);
  Function* f = nullptr;
  if (hipError_t e = get_static_function(s, func, &f)) return ret(e);
  const Device& dev = s.devices[f->device];
  const KernelInfo& k = f->kernel;
  *attr = hipFuncAttributes{};
  attr->sharedSizeBytes = k.group_segment_fixed_size;
  attr->localSizeBytes = k.private_segment_fixed_size;
  // rockernel.cpp: available - static; the simulator clamps at 0 where the
  // real unsigned subtraction's outcome is UNCONFIRMED.
  attr->maxDynamicSharedSizeBytes =
      k.group_segment_fixed_size >= dev.lds ? 0 : static_cast<int>(dev.lds - k.group_segment_fixed_size);
  attr->maxThreadsPerBlock = k.max_flat_workgroup_size ? static_cast<int>(k.max_flat_workgroup_size) : 1024;
  attr->numRegs = static_cast<int>(k.vgpr_count);
  return hipSuccess;
}

// ---- modules -----------------------------------------------------------------------------

SIMRT_EXPORT hipError_t hipModuleLoad(hipModule_t* module, const char* fname) {
  State& s = api();
  Locked lock(s);
  if (!module || !fname) return ret(hipErrorInvalidValue);
  if (hipError_t e = need_device(s)) return ret(e);
  std::ifstream in(fname, std::ios::binary);
  struct stat st {};
  if (!in || stat(fname, &st) != 0 || !S_ISREG(st.st_mode)) {
    logf(s, "hipModuleLoad %s: cannot open", fname);
    return ret(hipErrorFileNotFound);
  }
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.empty()) {
    logf(s, "hipModuleLoad %s: empty file", fname);
    return ret(hipErrorInvalidImage);
  }
  return ret(module_load(module, data.data(), data.size(), fname));
}

namespace {
// hipModuleLoadData and the calls CLR implements the same way (hipModuleLoadDataEx,
// hipModuleLoadFatBinary). Internal: a call to the exported symbol from inside
// the library would go through an interposer again, which CLR's calls do not.
hipError_t module_load_data(hipModule_t* module, const void* image) {
  State& s = api();
  Locked lock(s);
  if (!module || !image) return ret(hipErrorInvalidValue);
  if (hipError_t e = need_device(s)) return ret(e);
  char origin[64];
  snprintf(origin, sizeof origin, "image %p", image);
  // The image size is unknown (as it is to CLR); reads are bounded by the
  // bundle table / ELF section headers found in it.
  return ret(module_load(module, static_cast<const uint8_t*>(image), SIZE_MAX, origin));
}
}  // namespace

SIMRT_EXPORT hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  return module_load_data(module, image);
}

SIMRT_EXPORT hipError_t hipModuleLoadDataEx(hipModule_t* module, const void* image, unsigned int, hipJitOption*,
                                            void**) {
  return module_load_data(module, image);  // CLR ignores the options (ref §5)
}

SIMRT_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* kname) {
  State& s = api();
  Locked lock(s);
  s.initialized = true;
  if (!function || !kname || !*kname) return ret(hipErrorInvalidValue);
  if (!module) return ret(hipErrorInvalidResourceHandle);
  auto it = s.modules.find(module);
  if (it == s.modules.end()) return ret(hipErrorNotFound);
  Module& m = *it->second;
  const KernelInfo* k = find_kernel(m.kernels, kname);
  if (!k) {
    logf(s, "hipModuleGetFunction %s: not in %s", kname, m.origin.c_str());
    return ret(hipErrorNotFound);
  }
  *function = reinterpret_cast<hipFunction_t>(make_function(s, m.functions[kname], m.device, *k, m.origin));
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipModuleUnload(hipModule_t module) {
  State& s = api();
  Locked lock(s);
  auto it = s.modules.find(module);
  if (!module || it == s.modules.end()) return ret(hipErrorInvalidResourceHandle);
  for (auto& [name, f] : it->second->functions) s.functions.erase(f.get());
  s.modules.erase(it);
  return hipSuccess;
}

// ---- devices -----------------------------------------------------------------------------

SIMRT_EXPORT hipError_t hipInit(unsigned int flags) {
  State& s = api();
  Locked lock(s);
  s.initialized = true;
  if (flags != 0) return ret(hipErrorInvalidValue);
  return s.devices.empty() ? ret(hipErrorNoDevice) : hipSuccess;
}

SIMRT_EXPORT hipError_t hipGetDeviceCount(int* count) {
  State& s = api();
  Locked lock(s);
  s.initialized = true;
  if (!count) return ret(hipErrorInvalidValue);
  *count = static_cast<int>(s.devices.size());
  return s.devices.empty() ? ret(hipErrorNoDevice) : hipSuccess;
}

SIMRT_EXPORT hipError_t hipSetDevice(int deviceId) {
  State& s = api();
  Locked lock(s);
  s.initialized = true;
  if (s.devices.empty()) return ret(hipErrorNoDevice);
  if (deviceId < 0 || static_cast<size_t>(deviceId) >= s.devices.size()) return ret(hipErrorInvalidDevice);
  t_device = deviceId;
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipGetDevice(int* deviceId) {
  State& s = api();
  Locked lock(s);
  s.initialized = true;
  if (!deviceId) return ret(hipErrorInvalidValue);
  if (s.devices.empty()) return ret(hipErrorNoDevice);
  *deviceId = t_device;
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int deviceId) {
  State& s = api();
  Locked lock(s);
  s.initialized = true;
  if (!prop) return ret(hipErrorInvalidValue);
  if (deviceId < 0 || static_cast<size_t>(deviceId) >= s.devices.size()) return ret(hipErrorInvalidDevice);
  const Device& d = s.devices[deviceId];
  *prop = hipDeviceProp_t{};
  snprintf(prop->name, sizeof prop->name, "hipguard simulated %s", d.proc->name);
  snprintf(prop->gcnArchName, sizeof prop->gcnArchName, "%s", d.target.str().c_str());
  prop->totalGlobalMem = size_t{16} << 30;
  prop->sharedMemPerBlock = d.lds;
  prop->maxSharedMemoryPerMultiProcessor = d.lds;
  prop->warpSize = (d.proc->name[3] == '1' && strlen(d.proc->name) >= 7) ? 32 : 64;  // gfx10+ default wave32
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = prop->maxThreadsDim[2] = 1024;
  prop->maxGridSize[0] = prop->maxGridSize[1] = prop->maxGridSize[2] = 0x7fffffff;
  prop->multiProcessorCount = 1;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->regsPerBlock = 65536;
  prop->cooperativeLaunch = 1;
  prop->major = 9;
  prop->minor = 0;
  prop->gcnArch = 0;
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipDeviceSynchronize() {
  State& s = api();
  Locked lock(s);
  if (hipError_t e = need_device(s)) return ret(e);
  return hipSuccess;
}

// ---- memory (host memory stands in for device memory) --------------------------------

SIMRT_EXPORT hipError_t hipMalloc(void** ptr, size_t size) {
  State& s = api();
  Locked lock(s);
  if (!ptr) return ret(hipErrorInvalidValue);
  if (hipError_t e = need_device(s)) return ret(e);
  if (size == 0) {
    *ptr = nullptr;
    return hipSuccess;
  }
  void* p = aligned_alloc(256, (size + 255) / 256 * 256);
  if (!p) return ret(hipErrorOutOfMemory);
  s.allocations[p] = size;
  *ptr = p;
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipFree(void* ptr) {
  State& s = api();
  Locked lock(s);
  s.initialized = true;
  if (!ptr) return hipSuccess;
  auto it = s.allocations.find(ptr);
  if (it == s.allocations.end()) return ret(hipErrorInvalidValue);
  free(ptr);
  s.allocations.erase(it);
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipMemcpy(void* dst, const void* src, size_t sizeBytes, hipMemcpyKind kind) {
  if (sizeBytes == 0) return hipSuccess;
  if (!dst || !src || static_cast<int>(kind) < 0 || static_cast<int>(kind) > 4) return ret(hipErrorInvalidValue);
  memmove(dst, src, sizeBytes);
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipMemset(void* dst, int value, size_t sizeBytes) {
  if (sizeBytes == 0) return hipSuccess;
  if (!dst) return ret(hipErrorInvalidValue);
  memset(dst, value, sizeBytes);
  return hipSuccess;
}

// ---- errors ------------------------------------------------------------------------------

SIMRT_EXPORT hipError_t hipGetLastError() {
  hipError_t e = t_last_error;
  t_last_error = hipSuccess;
  return e;
}

SIMRT_EXPORT hipError_t hipPeekAtLastError() { return t_last_error; }

// CLR keeps the last call's result apart (tls.last_command_error_); the
// simulator records only failures there.
SIMRT_EXPORT hipError_t hipExtGetLastError() {
  hipError_t e = t_last_command_error;
  t_last_command_error = hipSuccess;
  return e;
}

SIMRT_EXPORT const char* hipGetErrorName(hipError_t hip_error) { return error_name(hip_error); }

SIMRT_EXPORT const char* hipGetErrorString(hipError_t hipError) { return error_name(hipError); }

// ---- HIP 7.2 load and launch paths -------------------------------------------------------

// hipModuleLoadFatBinary (hip_7.1): CLR loads it exactly as hipModuleLoadData.
SIMRT_EXPORT hipError_t hipModuleLoadFatBinary(hipModule_t* module, const void* fatbin) {
  return module_load_data(module, fatbin);
}

namespace {
hipError_t library_load(hipLibrary_sim* library, std::unique_ptr<Library> lib, unsigned int numJitOptions) {
  State& s = api();
  Locked lock(s);
  s.initialized = true;
  if (numJitOptions > 0) return ret(hipErrorInvalidValue);  // CLR: JIT options are not supported
  Library* raw = lib.get();
  s.libraries[raw] = std::move(lib);
  *library = reinterpret_cast<hipLibrary_sim>(raw);
  logf(s, "library %s loaded (built at the first kernel lookup)", raw->origin.c_str());
  return hipSuccess;
}
}  // namespace

// hipLibraryLoadData / hipLibraryLoadFromFile (hip_7.2): CLR only records the
// image (or file name) and returns hipSuccess; LibraryContainer::BuildIt
// extracts and builds the code object at the first hipLibraryGetKernel(Count).
SIMRT_EXPORT hipError_t hipLibraryLoadData(hipLibrary_sim* library, const void* code, hipJitOption*, void**,
                                           unsigned int numJitOptions, int*, void**, unsigned int) {
  if (!library || !code) return ret(hipErrorInvalidValue);
  auto lib = std::make_unique<Library>();
  lib->image = static_cast<const uint8_t*>(code);
  char origin[64];
  snprintf(origin, sizeof origin, "library image %p", code);
  lib->origin = origin;
  return library_load(library, std::move(lib), numJitOptions);
}

SIMRT_EXPORT hipError_t hipLibraryLoadFromFile(hipLibrary_sim* library, const char* fileName, hipJitOption*, void**,
                                               unsigned int numJitOptions, int*, void**, unsigned int) {
  struct stat st {};
  if (!library || !fileName || stat(fileName, &st) != 0) return ret(hipErrorInvalidValue);
  auto lib = std::make_unique<Library>();
  std::ifstream in(fileName, std::ios::binary);
  lib->file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  lib->origin = fileName;
  return library_load(library, std::move(lib), numJitOptions);
}

SIMRT_EXPORT hipError_t hipLibraryUnload(hipLibrary_sim library) {
  State& s = api();
  Locked lock(s);
  if (!library) return ret(hipErrorInvalidResourceHandle);
  auto it = s.libraries.find(library);
  if (it == s.libraries.end()) return ret(hipErrorInvalidResourceHandle);
  if (it->second->module)
    for (auto& [name, f] : it->second->module->functions) s.functions.erase(f.get());
  s.libraries.erase(it);
  return hipSuccess;
}

namespace {
// CLR LibraryContainer::BuildIt: the code object is built at the first kernel
// lookup or enumeration; a failure is not cached (the next call retries).
hipError_t library_build(State& s, Library& l) {
  if (!l.built) {
    hipModule_t m = nullptr;
    hipError_t e = l.file.empty() && !l.image ? hipErrorInvalidValue
                                              : module_load(&m, l.image ? l.image : l.file.data(),
                                                            l.image ? SIZE_MAX : l.file.size(), l.origin);
    if (e != hipSuccess) {
      logf(s, "library %s: build failed: %s", l.origin.c_str(), error_name(e));
      return ret(e);
    }
    auto mit = s.modules.find(m);
    l.module = std::move(mit->second);
    s.modules.erase(mit);
    l.built = true;
  }
  return hipSuccess;
}

// The module of `library`, built for the current device (hipLibraryGetKernel,
// hipLibraryEnumerateKernels, hipLibraryGetKernelCount); null with *err set.
Module* library_module(State& s, hipLibrary_sim library, hipError_t* err) {
  auto it = s.libraries.find(library);
  if (it == s.libraries.end()) {
    *err = ret(hipErrorInvalidValue);
    return nullptr;
  }
  if (hipError_t e = need_device(s)) {
    *err = ret(e);
    return nullptr;
  }
  if ((*err = library_build(s, *it->second)) != hipSuccess) return nullptr;
  return it->second->module.get();
}
}  // namespace

// The kernel handle is a hipFunction_t (CLR: getDynFunc), launched with
// hipModuleLaunchKernel and friends.
SIMRT_EXPORT hipError_t hipLibraryGetKernel(hipKernel_sim* pKernel, hipLibrary_sim library, const char* name) {
  State& s = api();
  Locked lock(s);
  if (!library || !name || !pKernel) return ret(hipErrorInvalidValue);
  hipError_t e = hipSuccess;
  Module* built = library_module(s, library, &e);
  if (!built) return e;
  Module& m = *built;
  const KernelInfo* k = find_kernel(m.kernels, name);
  if (!k) {
    logf(s, "hipLibraryGetKernel %s: not in %s", name, m.origin.c_str());
    return ret(hipErrorNotFound);
  }
  *pKernel = reinterpret_cast<hipKernel_sim>(make_function(s, m.functions[name], m.device, *k, m.origin));
  return hipSuccess;
}

// hipLibraryEnumerateKernels (hip_7.2): the first numKernels kernels of the
// library, as the same handles hipLibraryGetKernel gives (CLR: one per name).
SIMRT_EXPORT hipError_t hipLibraryEnumerateKernels(hipKernel_sim* kernels, unsigned int numKernels,
                                                   hipLibrary_sim library) {
  State& s = api();
  Locked lock(s);
  if (!library || (numKernels && !kernels)) return ret(hipErrorInvalidValue);
  hipError_t e = hipSuccess;
  Module* built = library_module(s, library, &e);
  if (!built) return e;
  Module& m = *built;
  if (numKernels > m.kernels.size()) return ret(hipErrorInvalidValue);
  for (unsigned int i = 0; i < numKernels; ++i) {
    const KernelInfo& k = m.kernels[i];
    kernels[i] = reinterpret_cast<hipKernel_sim>(make_function(s, m.functions[k.name], m.device, k, m.origin));
  }
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipLibraryGetKernelCount(unsigned int* count, hipLibrary_sim library) {
  State& s = api();
  Locked lock(s);
  if (!count || !library) return ret(hipErrorInvalidValue);
  hipError_t e = hipSuccess;
  Module* m = library_module(s, library, &e);
  if (!m) return e;
  *count = static_cast<unsigned int>(m->kernels.size());
  return hipSuccess;
}

// hipKernelGetName / hipKernelGetLibrary (hip_7.2): a kernel handle's name and owner.
SIMRT_EXPORT hipError_t hipKernelGetName(const char** name, hipKernel_sim kernel) {
  State& s = api();
  Locked lock(s);
  auto* f = reinterpret_cast<Function*>(kernel);
  if (!name || !kernel || !s.functions.count(f)) return ret(hipErrorInvalidValue);
  *name = f->kernel.name.c_str();
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipKernelGetLibrary(hipLibrary_sim* library, hipKernel_sim kernel) {
  State& s = api();
  Locked lock(s);
  if (!library || !kernel) return ret(hipErrorInvalidValue);
  for (auto& [handle, l] : s.libraries)
    if (l->module)
      for (auto& [name, f] : l->module->functions)
        if (f.get() == reinterpret_cast<Function*>(kernel)) {
          *library = reinterpret_cast<hipLibrary_sim>(const_cast<void*>(handle));
          return hipSuccess;
        }
  return ret(hipErrorInvalidResourceHandle);
}

SIMRT_EXPORT hipError_t hipExtLaunchKernel(const void* function_address, dim3 numBlocks, dim3 dimBlocks, void**,
                                           size_t sharedMemBytes, hipStream_t, hipEvent_t, hipEvent_t, int) {
  return launch_static(function_address, numBlocks, dimBlocks, sharedMemBytes, false);
}

// hipConfigureCall / hipSetupArgument / hipLaunchByPtr: the configuration goes
// on the same stack as __hipPushCallConfiguration's (CLR PlatformState::configureCall).
SIMRT_EXPORT hipError_t hipConfigureCall(dim3 gridDim, dim3 blockDim, size_t sharedMem, hipStream_t stream) {
  t_configs.push_back({gridDim, blockDim, sharedMem, stream});
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipSetupArgument(const void*, size_t, size_t) { return hipSuccess; }

SIMRT_EXPORT hipError_t hipLaunchByPtr(const void* hostFunction) {
  if (t_configs.empty()) return ret(hipErrorInvalidConfiguration);
  LaunchConfig c = t_configs.back();
  t_configs.pop_back();
  hipError_t e = launch_static(hostFunction, c.grid, c.block, c.shared, false);
  // CLR: any GetFunc failure is hipErrorInvalidDeviceFunction here.
  return e == hipErrorNoBinaryForGpu ? ret(hipErrorInvalidDeviceFunction) : e;
}

// ---- streams (a device each; nothing is queued) ------------------------------------------

SIMRT_EXPORT hipError_t hipStreamCreate(hipStream_t* stream) {
  State& s = api();
  Locked lock(s);
  if (!stream) return ret(hipErrorInvalidValue);
  if (hipError_t e = need_device(s)) return ret(e);
  auto st = std::make_unique<Stream>();
  st->device = t_device;
  *stream = reinterpret_cast<hipStream_t>(st.get());
  s.streams[st.get()] = std::move(st);
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipStreamDestroy(hipStream_t stream) {
  State& s = api();
  Locked lock(s);
  return s.streams.erase(stream) ? hipSuccess : ret(hipErrorInvalidHandle);
}

// hipStreamGetDevice (hip_4.2 in CLR's map; not in ROCm 5.2): the null stream is the current device's.
SIMRT_EXPORT hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t* device) {
  State& s = api();
  Locked lock(s);
  if (!device) return ret(hipErrorInvalidValue);
  if (!stream) {
    *device = t_device;
    return hipSuccess;
  }
  auto it = s.streams.find(stream);
  if (it == s.streams.end()) return ret(hipErrorInvalidHandle);
  *device = it->second->device;
  return hipSuccess;
}

namespace {
// Multi-device launches (CLR ihipLaunchCooperativeKernelMultiDevice): a null
// list is hipErrorInvalidValue, more entries than devices
// hipErrorInvalidDevice; every entry needs a stream (null:
// hipErrorInvalidResourceHandle) and runs on its stream's device.
template <class Params, class StreamOf, class Launch>
hipError_t multi_device(const Params* list, long n, StreamOf stream_of, Launch launch_one) {
  State& s = api();
  std::vector<int> devices;
  {
    Locked lock(s);
    if (hipError_t e = need_device(s)) return ret(e);
    if (!list || n <= 0) return ret(hipErrorInvalidValue);
    if (static_cast<size_t>(n) > s.devices.size()) return ret(hipErrorInvalidDevice);
    for (long i = 0; i < n; ++i) {
      hipStream_t st = stream_of(list[i]);
      if (!st) return ret(hipErrorInvalidResourceHandle);
      auto it = s.streams.find(st);
      if (it == s.streams.end()) return ret(hipErrorInvalidValue);
      devices.push_back(it->second->device);
    }
  }
  int saved = t_device;
  hipError_t result = hipSuccess;
  for (long i = 0; i < n && result == hipSuccess; ++i) {
    t_device = devices[i];
    result = launch_one(list[i]);
  }
  t_device = saved;
  return result;
}
}  // namespace

SIMRT_EXPORT hipError_t hipLaunchCooperativeKernelMultiDevice(hipLaunchParams* launchParamsList, int numDevices,
                                                              unsigned int) {
  return multi_device(
      launchParamsList, numDevices, [](const hipLaunchParams& p) { return p.stream; },
      [](const hipLaunchParams& p) { return launch_static(p.func, p.gridDim, p.blockDim, p.sharedMem, true); });
}

SIMRT_EXPORT hipError_t hipExtLaunchMultiKernelMultiDevice(hipLaunchParams* launchParamsList, int numDevices,
                                                           unsigned int) {
  return multi_device(
      launchParamsList, numDevices, [](const hipLaunchParams& p) { return p.stream; },
      [](const hipLaunchParams& p) { return launch_static(p.func, p.gridDim, p.blockDim, p.sharedMem, false); });
}

SIMRT_EXPORT hipError_t hipModuleLaunchCooperativeKernelMultiDevice(hipFunctionLaunchParams_sim* launchParamsList,
                                                                    unsigned int numDevices, unsigned int) {
  return multi_device(
      launchParamsList, static_cast<long>(numDevices), [](const hipFunctionLaunchParams_sim& p) { return p.hStream; },
      [](const hipFunctionLaunchParams_sim& p) {
        return launch_module(p.function, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
                             p.sharedMemBytes, p.kernelParams, nullptr, true);
      });
}

SIMRT_EXPORT hipError_t hipDrvLaunchKernelEx(const HIP_LAUNCH_CONFIG_sim* config, hipFunction_t f, void** params,
                                             void** extra) {
  if (!config) return ret(hipErrorInvalidValue);
  return launch_module(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                       config->blockDimZ, config->sharedMemBytes, params, extra, false);
}

// ---- graphs ------------------------------------------------------------------------------

namespace {
// CLR validates a kernel node's function when the node is created or its
// parameters set (hipGraphKernelNode::validateKernelParams): a host function
// the runtime cannot find, or more dynamic LDS than the device has, fails there.
hipError_t validate_kernel_node(State& s, const hipKernelNodeParams* p) {
  if (!p || !p->func) return hipErrorInvalidValue;
  if (hipError_t e = need_device(s)) return e;
  Function* f = nullptr;
  if (get_static_function(s, p->func, &f) != hipSuccess) f = as_function(s, p->func);
  if (!f) return hipErrorInvalidDeviceFunction;
  if (p->sharedMemBytes > s.devices[f->device].lds) return hipErrorInvalidValue;
  return hipSuccess;
}

GraphNode* find_node(State& s, hipGraphNode_t node) {
  for (auto& [key, g] : s.graphs)
    for (auto& n : g->nodes)
      if (n.get() == reinterpret_cast<GraphNode*>(node)) return n.get();
  return nullptr;
}

hipError_t add_node(hipGraphNode_t* pGraphNode, hipGraph_t graph, int type, const hipKernelNodeParams* params) {
  State& s = api();
  Locked lock(s);
  if (!pGraphNode) return ret(hipErrorInvalidValue);
  auto it = s.graphs.find(graph);
  if (it == s.graphs.end()) return ret(hipErrorInvalidValue);
  if (type != kSimGraphNodeTypeKernel) return ret(hipErrorNotSupported);  // only kernel nodes are simulated
  if (hipError_t e = validate_kernel_node(s, params)) return ret(e);
  auto n = std::make_unique<GraphNode>();
  n->kernel = *params;
  *pGraphNode = reinterpret_cast<hipGraphNode_t>(n.get());
  it->second->nodes.push_back(std::move(n));
  return hipSuccess;
}

hipError_t set_node(hipGraphExec_t exec, hipGraphNode_t node, const hipKernelNodeParams* params) {
  State& s = api();
  Locked lock(s);
  GraphNode* n = find_node(s, node);
  if (!n || n->type != kSimGraphNodeTypeKernel) return ret(hipErrorInvalidValue);
  if (hipError_t e = validate_kernel_node(s, params)) return ret(e);
  if (!exec) {
    n->kernel = *params;
    return hipSuccess;
  }
  auto it = s.graph_execs.find(exec);
  if (it == s.graph_execs.end() || !it->second->kernels.count(n)) return ret(hipErrorInvalidValue);
  it->second->kernels[n] = *params;
  return hipSuccess;
}
}  // namespace

SIMRT_EXPORT hipError_t hipGraphCreate(hipGraph_t* pGraph, unsigned int flags) {
  State& s = api();
  Locked lock(s);
  if (!pGraph || flags != 0) return ret(hipErrorInvalidValue);
  auto g = std::make_unique<Graph>();
  *pGraph = reinterpret_cast<hipGraph_t>(g.get());
  s.graphs[g.get()] = std::move(g);
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipGraphDestroy(hipGraph_t graph) {
  State& s = api();
  Locked lock(s);
  return s.graphs.erase(graph) ? hipSuccess : ret(hipErrorInvalidValue);
}

SIMRT_EXPORT hipError_t hipGraphInstantiate(hipGraphExec_t* pGraphExec, hipGraph_t graph, hipGraphNode_t*, char*,
                                            size_t) {
  State& s = api();
  Locked lock(s);
  auto it = s.graphs.find(graph);
  if (!pGraphExec || it == s.graphs.end()) return ret(hipErrorInvalidValue);
  auto e = std::make_unique<GraphExec>();
  for (auto& n : it->second->nodes) e->kernels[n.get()] = n->kernel;
  *pGraphExec = reinterpret_cast<hipGraphExec_t>(e.get());
  s.graph_execs[e.get()] = std::move(e);
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipGraphExecDestroy(hipGraphExec_t graphExec) {
  State& s = api();
  Locked lock(s);
  return s.graph_execs.erase(graphExec) ? hipSuccess : ret(hipErrorInvalidValue);
}

// hipGraphLaunch (+_spt): its kernel nodes were validated when made or set; nothing runs.
SIMRT_EXPORT hipError_t hipGraphLaunch(hipGraphExec_t graphExec, hipStream_t) {
  State& s = api();
  Locked lock(s);
  return s.graph_execs.count(graphExec) ? hipSuccess : ret(hipErrorInvalidValue);
}
SIMRT_EXPORT hipError_t hipGraphLaunch_spt(hipGraphExec_t graphExec, hipStream_t stream) {
  return hipGraphLaunch(graphExec, stream);
}

// Nothing is ever queued: a stream is always idle.
SIMRT_EXPORT hipError_t hipStreamSynchronize(hipStream_t) { return hipSuccess; }
SIMRT_EXPORT hipError_t hipStreamSynchronize_spt(hipStream_t) { return hipSuccess; }

SIMRT_EXPORT hipError_t hipGraphAddKernelNode(hipGraphNode_t* pGraphNode, hipGraph_t graph, const hipGraphNode_t*,
                                              size_t, const hipKernelNodeParams* pNodeParams) {
  return add_node(pGraphNode, graph, kSimGraphNodeTypeKernel, pNodeParams);
}

SIMRT_EXPORT hipError_t hipGraphKernelNodeSetParams(hipGraphNode_t node, const hipKernelNodeParams* pNodeParams) {
  return set_node(nullptr, node, pNodeParams);
}

SIMRT_EXPORT hipError_t hipGraphKernelNodeGetParams(hipGraphNode_t node, hipKernelNodeParams* pNodeParams) {
  State& s = api();
  Locked lock(s);
  GraphNode* n = find_node(s, node);
  if (!n || !pNodeParams) return ret(hipErrorInvalidValue);
  *pNodeParams = n->kernel;
  return hipSuccess;
}

SIMRT_EXPORT hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t hGraphExec, hipGraphNode_t node,
                                                        const hipKernelNodeParams* pNodeParams) {
  if (!hGraphExec) return ret(hipErrorInvalidValue);
  return set_node(hGraphExec, node, pNodeParams);
}

SIMRT_EXPORT hipError_t hipGraphAddNode(hipGraphNode_t* pGraphNode, hipGraph_t graph, const hipGraphNode_t*, size_t,
                                        hipGraphNodeParams_sim* nodeParams) {
  if (!nodeParams) return ret(hipErrorInvalidValue);
  return add_node(pGraphNode, graph, nodeParams->type, &nodeParams->kernel);
}

SIMRT_EXPORT hipError_t hipGraphNodeSetParams(hipGraphNode_t node, hipGraphNodeParams_sim* nodeParams) {
  if (!nodeParams || nodeParams->type != kSimGraphNodeTypeKernel) return ret(hipErrorInvalidValue);
  return set_node(nullptr, node, &nodeParams->kernel);
}

SIMRT_EXPORT hipError_t hipGraphExecNodeSetParams(hipGraphExec_t graphExec, hipGraphNode_t node,
                                                  hipGraphNodeParams_sim* nodeParams) {
  if (!graphExec || !nodeParams || nodeParams->type != kSimGraphNodeTypeKernel) return ret(hipErrorInvalidValue);
  return set_node(graphExec, node, &nodeParams->kernel);
}

// ---- entry points resolved at run time ---------------------------------------------------
// CLR hipGetProcAddress_common / hipGetDriverEntryPoint_common: flags must be
// default (0), legacy stream (1) or per-thread stream (2); per-thread looks up
// "<symbol>_spt" first; the symbol is dlsym'ed on the runtime's own handle, so
// the runtime's own function comes back (not an interposer's).

namespace {
void* own_handle() {
  static void* h = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&own_handle), &info) || !info.dli_fname) return static_cast<void*>(nullptr);
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }();
  return h;
}

hipError_t proc_address(const char* symbol, void** pfn, uint64_t flags, int* status) {
  if (!symbol || !*symbol || !pfn) return hipErrorInvalidValue;
  if (flags > 2) return hipErrorInvalidValue;
  void* h = own_handle();
  if (!h) return hipErrorInvalidValue;
  *pfn = nullptr;
  if (flags == 2) *pfn = dlsym(h, (std::string(symbol) + "_spt").c_str());
  if (!*pfn) *pfn = dlsym(h, symbol);
  if (!*pfn) {
    if (status) *status = 1;  // ..._SYMBOL_NOT_FOUND
    return hipErrorInvalidValue;
  }
  if (status) *status = 0;  // ..._SUCCESS
  return hipSuccess;
}
}  // namespace

SIMRT_EXPORT hipError_t hipGetProcAddress(const char* symbol, void** pfn, int, uint64_t flags, void* symbolStatus) {
  api();
  return ret(proc_address(symbol, pfn, flags, static_cast<int*>(symbolStatus)));
}

SIMRT_EXPORT hipError_t hipGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long flags,
                                               void* driverStatus) {
  api();
  return ret(proc_address(symbol, funcPtr, flags, static_cast<int*>(driverStatus)));
}

SIMRT_EXPORT hipError_t hipGetDriverEntryPoint_spt(const char* symbol, void** funcPtr, unsigned long long flags,
                                                   void* driverStatus) {
  api();
  return ret(proc_address(symbol, funcPtr, flags == 0 ? 2 : flags, static_cast<int*>(driverStatus)));
}
