// Drives every load, lookup and launch path of HIP 7.2 that hipguard
// interposes beyond the classic ones (interpose/hip_api.def), with one kernel:
// 48 KiB of static LDS plus the dynamic LDS given on the command line (48 KiB +
// 20000 bytes is over a 64 KiB GPU; the runtime never checks the sum).
//
//   api_paths MODULE.hipfb DYNAMIC_LDS [--only API]
//
// Multi-device launches get one entry per device, on a stream of that device;
// entry i asks for DYNAMIC_LDS when bit i of API_PATHS_MULTI_MASK is set
// (default: every entry but the first when there are several devices).
//
// MODULE.hipfb holds the same kernel (dyn_lds.hip built with --genco); it is
// loaded with hipModuleLoadFatBinary, hipLibraryLoadData and
// hipLibraryLoadFromFile (each library's kernel found by hipLibraryEnumerateKernels,
// then by hipLibraryGetKernel). Each call prints "API: <hipError_t>"; entry points
// handed out by hipGetProcAddress / hipGetDriverEntryPoint(_spt) also print the
// library they live in. With --only, only the named API's line is printed
// (setup calls still run). ROCm 5.2's headers declare none of the HIP 6/7 calls:
// they are looked up by name, as a program built against newer headers binds them.
#include <dlfcn.h>
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

__global__ void lds_static_and_dynamic(float* out) {
  __shared__ float tile[12 * 1024];  // 48 KiB static
  extern __shared__ float dyn[];
  for (int i = threadIdx.x; i < 12 * 1024; i += blockDim.x) tile[i] = out[i];
  __syncthreads();
  dyn[threadIdx.x] = tile[(threadIdx.x * 193) % (12 * 1024)];
  __syncthreads();
  out[threadIdx.x] = dyn[(threadIdx.x + 1) % blockDim.x];
}

namespace {

const char* g_only = nullptr;

// A step's label is "API" or "API->launch through it"; --only API keeps the
// steps of that API. Loads and lookups always run (later steps need them), but
// print only when kept; launches and graph nodes run only when kept.
bool want(const std::string& label) {
  if (!g_only) return true;
  return label.substr(0, label.find("->")) == g_only;
}

void show(const std::string& label, hipError_t e, const std::string& extra = "") {
  if (want(label)) printf("%s: %d%s\n", label.c_str(), static_cast<int>(e), extra.c_str());
}

template <class Fn>
Fn sym(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

std::string where(void* p) {
  Dl_info info{};
  if (!p || !dladdr(p, &info) || !info.dli_fname) return " in ?";
  std::string f = info.dli_fname;
  return " in " + f.substr(f.rfind('/') + 1);
}

// HIP 7.2 ABI types (hip_runtime_api.h).
struct FunctionLaunchParams {
  hipFunction_t function;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  hipStream_t hStream;
  void** kernelParams;
};
struct LaunchConfig {  // HIP_LAUNCH_CONFIG
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  hipStream_t hStream;
  void* attrs;
  unsigned numAttrs;
};
struct GraphNodeParams {  // hipGraphNodeParams; hipGraphNodeTypeKernel is 0 in HIP >= 5.3
  GraphNodeParams() : reserved1{} {}
  int type = 0;
  int reserved0[3] = {};
  union {
    long long reserved1[29];
    hipKernelNodeParams kernel;
  };
  long long reserved2 = 0;
};
static_assert(sizeof(GraphNodeParams) == 256, "hipGraphNodeParams is 256 bytes");
using Library = void*;

using ModuleLoadFatBinary = hipError_t (*)(hipModule_t*, const void*);
using LibraryLoadData = hipError_t (*)(Library*, const void*, hipJitOption*, void**, unsigned, int*, void**, unsigned);
using LibraryLoadFromFile = hipError_t (*)(Library*, const char*, hipJitOption*, void**, unsigned, int*, void**,
                                           unsigned);
using LibraryGetKernel = hipError_t (*)(hipFunction_t*, Library, const char*);
using LibraryUnload = hipError_t (*)(Library);
using LibraryEnumerateKernels = hipError_t (*)(hipFunction_t*, unsigned, Library);
using GetLastErrorFn = hipError_t (*)();
using ExtLaunch = hipError_t (*)(const void*, dim3, dim3, void**, size_t, hipStream_t, hipEvent_t, hipEvent_t, int);
using MultiDevice = hipError_t (*)(hipLaunchParams*, int, unsigned);
using ModuleMultiDevice = hipError_t (*)(FunctionLaunchParams*, unsigned, unsigned);
using DrvLaunchEx = hipError_t (*)(const LaunchConfig*, hipFunction_t, void**, void**);
using HccLaunch = hipError_t (*)(hipFunction_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, size_t,
                                 hipStream_t, void**, void**, hipEvent_t, hipEvent_t);
using AddNode = hipError_t (*)(hipGraphNode_t*, hipGraph_t, const hipGraphNode_t*, size_t, GraphNodeParams*);
using NodeSetParams = hipError_t (*)(hipGraphNode_t, GraphNodeParams*);
using ExecNodeSetParams = hipError_t (*)(hipGraphExec_t, hipGraphNode_t, GraphNodeParams*);
using GetProcAddress = hipError_t (*)(const char*, void**, int, uint64_t, int*);
using GetDriverEntryPoint = hipError_t (*)(const char*, void**, unsigned long long, int*);
using LaunchKernelFn = hipError_t (*)(const void*, dim3, dim3, void**, size_t, hipStream_t);
using ModuleLaunchFn = hipError_t (*)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, hipStream_t, void**, void**);

std::vector<char> read_file(const char* path) {
  std::vector<char> data;
  if (FILE* f = fopen(path, "rb")) {
    char buf[65536];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) data.insert(data.end(), buf, buf + n);
    fclose(f);
  }
  return data;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: api_paths MODULE.hipfb DYNAMIC_LDS [--only API]\n");
    return 2;
  }
  const char* module_file = argv[1];
  unsigned dyn = static_cast<unsigned>(strtoul(argv[2], nullptr, 10));
  if (argc > 4 && std::strcmp(argv[3], "--only") == 0) g_only = argv[4];
  const void* kernel = reinterpret_cast<const void*>(lds_static_and_dynamic);
  const char* kname = "_Z22lds_static_and_dynamicPf";
  float* d = nullptr;
  if (hipMalloc(&d, 12 * 1024 * sizeof(float)) != hipSuccess) printf("hipMalloc failed\n");
  void* args[] = {&d};
  int devices = 0;
  if (hipGetDeviceCount(&devices) != hipSuccess || devices < 1) devices = 1;
  unsigned long mask = devices > 1 ? ~1ul : ~0ul;
  if (const char* m = getenv("API_PATHS_MULTI_MASK")) mask = strtoul(m, nullptr, 0);
  auto multi_lds = [&](int i) { return (mask >> i) & 1 ? dyn : 0u; };
  std::vector<hipStream_t> streams(devices, nullptr);
  for (int i = 0; i < devices; ++i)
    if (hipSetDevice(i) != hipSuccess || hipStreamCreate(&streams[i]) != hipSuccess) streams[i] = nullptr;
  (void)hipSetDevice(0);

  // ---- launches by host function
  if (auto f = sym<ExtLaunch>("hipExtLaunchKernel"); f && want("hipExtLaunchKernel")) {
    show("hipExtLaunchKernel", f(kernel, dim3(1), dim3(64), args, dyn, nullptr, nullptr, nullptr, 0));
    // HIP 6.0's other last-error slot, then the classic one (each cleared by its own reader)
    if (auto ext = sym<GetLastErrorFn>("hipExtGetLastError")) show("hipExtLaunchKernel->hipExtGetLastError", ext());
    show("hipExtLaunchKernel->hipGetLastError", hipGetLastError());
  }
  if (want("hipLaunchByPtr")) {
    (void)hipConfigureCall(dim3(1), dim3(64), dyn, nullptr);
    (void)hipSetupArgument(&d, sizeof d, 0);
    show("hipLaunchByPtr", hipLaunchByPtr(kernel));
  }
  std::vector<hipLaunchParams> lp(devices);
  for (int i = 0; i < devices; ++i)
    lp[i] = {const_cast<void*>(kernel), dim3(1), dim3(64), args, multi_lds(i), streams[i]};
  for (const char* name : {"hipLaunchCooperativeKernelMultiDevice", "hipExtLaunchMultiKernelMultiDevice"})
    if (auto f = sym<MultiDevice>(name); f && want(name)) show(name, f(lp.data(), devices, 0));

  // ---- graph kernel nodes
  hipGraph_t graph = nullptr;
  (void)hipGraphCreate(&graph, 0);
  hipKernelNodeParams good{};
  good.blockDim = dim3(64);
  good.gridDim = dim3(1);
  good.func = const_cast<void*>(kernel);
  good.kernelParams = args;
  good.sharedMemBytes = 0;
  hipKernelNodeParams bad = good;
  bad.sharedMemBytes = dyn;
  hipGraphNode_t added = nullptr, node = nullptr;
  if (want("hipGraphAddKernelNode"))
    show("hipGraphAddKernelNode", hipGraphAddKernelNode(&added, graph, nullptr, 0, &bad));
  (void)hipGraphAddKernelNode(&node, graph, nullptr, 0, &good);  // setup: a node to set parameters on
  if (want("hipGraphKernelNodeSetParams"))
    show("hipGraphKernelNodeSetParams", hipGraphKernelNodeSetParams(node, &bad));
  (void)hipGraphKernelNodeSetParams(node, &good);
  hipGraphExec_t exec = nullptr;
  (void)hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0);
  if (want("hipGraphExecKernelNodeSetParams"))
    show("hipGraphExecKernelNodeSetParams", hipGraphExecKernelNodeSetParams(exec, node, &bad));
  GraphNodeParams np;
  np.kernel = bad;
  if (auto f = sym<AddNode>("hipGraphAddNode"); f && want("hipGraphAddNode")) {
    hipGraphNode_t n2 = nullptr;
    show("hipGraphAddNode", f(&n2, graph, nullptr, 0, &np));
  }
  if (auto f = sym<NodeSetParams>("hipGraphNodeSetParams"); f && want("hipGraphNodeSetParams")) show("hipGraphNodeSetParams", f(node, &np));
  if (auto f = sym<ExecNodeSetParams>("hipGraphExecNodeSetParams"); f && want("hipGraphExecNodeSetParams"))
    show("hipGraphExecNodeSetParams", f(exec, node, &np));
  (void)hipGraphExecDestroy(exec);
  (void)hipGraphDestroy(graph);

  // ---- entry points resolved at run time, then launched through
  if (auto gpa = sym<GetProcAddress>("hipGetProcAddress")) {
    void* p = nullptr;
    hipError_t e = gpa("hipLaunchKernel", &p, 702, 0, nullptr);
    show("hipGetProcAddress", e, where(p));
    if (e == hipSuccess && p && want("hipGetProcAddress"))
      show("hipGetProcAddress->hipLaunchKernel",
           reinterpret_cast<LaunchKernelFn>(p)(kernel, dim3(1), dim3(64), args, dyn, nullptr));
    p = nullptr;
    e = gpa("hipLaunchKernel", &p, 702, 2 /* per-thread default stream */, nullptr);
    Dl_info info{};
    std::string name = p && dladdr(p, &info) && info.dli_sname ? info.dli_sname : "?";
    show("hipGetProcAddress(spt)", e, " " + name + where(p));
    if (e == hipSuccess && p && want("hipGetProcAddress(spt)"))
      show("hipGetProcAddress(spt)->hipLaunchKernel_spt",
           reinterpret_cast<LaunchKernelFn>(p)(kernel, dim3(1), dim3(64), args, dyn, nullptr));
  }
  for (const char* name : {"hipGetDriverEntryPoint", "hipGetDriverEntryPoint_spt"}) {
    if (auto gep = sym<GetDriverEntryPoint>(name)) {
      void* p = nullptr;
      hipError_t e = gep("hipLaunchKernel", &p, 0, nullptr);
      Dl_info info{};
      std::string resolved = p && dladdr(p, &info) && info.dli_sname ? info.dli_sname : "?";
      show(name, e, " " + resolved + where(p));
      if (e == hipSuccess && p && want(name))
        show(std::string(name) + "->" + resolved,
             reinterpret_cast<LaunchKernelFn>(p)(kernel, dim3(1), dim3(64), args, dyn, nullptr));
    }
  }

  // ---- loads, lookups and module launches
  std::vector<char> image = read_file(module_file);
  if (image.empty()) printf("cannot read %s\n", module_file);
  void* kparams[] = {&d};
  if (auto load = sym<ModuleLoadFatBinary>("hipModuleLoadFatBinary")) {
    hipModule_t m = nullptr;
    hipError_t e = load(&m, image.data());
    show("hipModuleLoadFatBinary", e);
    hipFunction_t f = nullptr;
    if (e == hipSuccess && hipModuleGetFunction(&f, m, kname) == hipSuccess) {
      LaunchConfig config{1, 1, 1, 64, 1, 1, dyn, nullptr, nullptr, 0};
      if (auto ex = sym<DrvLaunchEx>("hipDrvLaunchKernelEx"); ex && want("hipDrvLaunchKernelEx"))
        show("hipDrvLaunchKernelEx", ex(&config, f, kparams, nullptr));
      std::vector<FunctionLaunchParams> fp(devices);
      for (int i = 0; i < devices; ++i)
        fp[i] = {f, 1, 1, 1, 64, 1, 1, multi_lds(i), streams[i], kparams};
      if (auto mm = sym<ModuleMultiDevice>("hipModuleLaunchCooperativeKernelMultiDevice");
          mm && want("hipModuleLaunchCooperativeKernelMultiDevice"))
        show("hipModuleLaunchCooperativeKernelMultiDevice", mm(fp.data(), static_cast<unsigned>(devices), 0));
      if (auto hcc = sym<HccLaunch>(
              "_Z24hipHccModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_");
          hcc && want("hipHccModuleLaunchKernel"))
        show("hipHccModuleLaunchKernel", hcc(f, 64, 1, 1, 64, 1, 1, dyn, nullptr, kparams, nullptr, nullptr, nullptr));
      // the C symbol, as HIP >= 6's hip_ext.h declares it (extern "C")
      if (auto hcc = sym<HccLaunch>("hipHccModuleLaunchKernel"); hcc && want("hipHccModuleLaunchKernel(C)"))
        show("hipHccModuleLaunchKernel(C)",
             hcc(f, 64, 1, 1, 64, 1, 1, dyn, nullptr, kparams, nullptr, nullptr, nullptr));
      if (auto gpa = sym<GetProcAddress>("hipGetProcAddress"); gpa && want("hipGetProcAddress(module)")) {
        void* p = nullptr;
        if (gpa("hipModuleLaunchKernel", &p, 702, 0, nullptr) == hipSuccess && p)
          show("hipGetProcAddress(module)->hipModuleLaunchKernel",
               reinterpret_cast<ModuleLaunchFn>(p)(f, 1, 1, 1, 64, 1, 1, dyn, nullptr, kparams, nullptr));
      }
    }
    if (m) (void)hipModuleUnload(m);
  }
  auto get_kernel = sym<LibraryGetKernel>("hipLibraryGetKernel");
  auto unload = sym<LibraryUnload>("hipLibraryUnload");
  auto enumerate = sym<LibraryEnumerateKernels>("hipLibraryEnumerateKernels");
  auto use_library = [&](const char* load_api, hipError_t e, Library lib) {
    show(load_api, e);
    if (e != hipSuccess || !get_kernel) return;
    hipFunction_t k = nullptr;
    if (enumerate) {  // before hipLibraryGetKernel: the handle's first appearance
      e = enumerate(&k, 1, lib);
      show(std::string(load_api) + "->hipLibraryEnumerateKernels", e);
      if (e == hipSuccess && want(load_api))
        show(std::string(load_api) + "->hipLibraryEnumerateKernels->hipModuleLaunchKernel",
             hipModuleLaunchKernel(k, 1, 1, 1, 64, 1, 1, dyn, nullptr, kparams, nullptr));
    }
    e = get_kernel(&k, lib, kname);
    show(std::string(load_api) + "->hipLibraryGetKernel", e);
    if (e == hipSuccess && want(load_api))  // a hipKernel_t is a hipFunction_t (CLR)
      show(std::string(load_api) + "->hipModuleLaunchKernel",
           hipModuleLaunchKernel(k, 1, 1, 1, 64, 1, 1, dyn, nullptr, kparams, nullptr));
    if (unload) show(std::string(load_api) + "->hipLibraryUnload", unload(lib));
  };
  if (auto load = sym<LibraryLoadData>("hipLibraryLoadData")) {
    Library lib = nullptr;
    use_library("hipLibraryLoadData", load(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), lib);
  }
  if (auto load = sym<LibraryLoadFromFile>("hipLibraryLoadFromFile")) {
    Library lib = nullptr;
    use_library("hipLibraryLoadFromFile", load(&lib, module_file, nullptr, nullptr, 0, nullptr, nullptr, 0), lib);
  }
  for (hipStream_t s : streams)
    if (s) (void)hipStreamDestroy(s);
  (void)hipFree(d);
  printf("api_paths: done\n");
  return 0;
}
