// A kernel with 48 KiB of static LDS plus dynamic LDS given on the command line:
// 48 KiB + 20000 bytes exceeds a 64 KiB GPU, which the ROCm runtime never checks
// (it compares only the dynamic part with the limit). Also asks the runtime for
// the kernel with hipGetFuncBySymbol when the runtime has it (ROCm >= 6.2),
// and launches it by the hipFunction_t it returns.
// Ignores every error and exits with argv[2] (default 0), like a program that
// does not check what its launches return.
#include <dlfcn.h>
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void lds_static_and_dynamic(float* out) {
  __shared__ float tile[12 * 1024];  // 48 KiB static
  extern __shared__ float dyn[];
  for (int i = threadIdx.x; i < 12 * 1024; i += blockDim.x) tile[i] = out[i];
  __syncthreads();
  dyn[threadIdx.x] = tile[(threadIdx.x * 193) % (12 * 1024)];
  __syncthreads();
  out[threadIdx.x] = dyn[(threadIdx.x + 1) % blockDim.x];
}

int main(int argc, char** argv) {
  size_t dynamic = argc > 1 ? strtoul(argv[1], nullptr, 10) : 0;
  using GetFuncBySymbol = hipError_t (*)(hipFunction_t*, const void*);
  if (auto get = reinterpret_cast<GetFuncBySymbol>(dlsym(RTLD_DEFAULT, "hipGetFuncBySymbol"))) {
    hipFunction_t f = nullptr;
    hipError_t e = get(&f, reinterpret_cast<const void*>(lds_static_and_dynamic));
    printf("hipGetFuncBySymbol: %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
    if (e == hipSuccess) {  // launched by its hipFunction_t, as AITER does
      void* no_args[] = {nullptr};
      e = hipModuleLaunchKernel(f, 1, 1, 1, 64, 1, 1, static_cast<unsigned>(dynamic), nullptr, no_args, nullptr);
      printf("hipModuleLaunchKernel(hipGetFuncBySymbol, dynamic LDS %zu): %d (%s)\n", dynamic, static_cast<int>(e),
             hipGetErrorName(e));
    }
  }
  float* d = nullptr;
  hipError_t e = hipMalloc(&d, 12 * 1024 * sizeof(float));
  printf("hipMalloc: %d (%s)\n", static_cast<int>(e), hipGetErrorName(e));
  // hipLaunchKernelExC (ROCm >= 6.5; not in the 5.2 headers): config layout as cudaLaunchConfig_t.
  struct LaunchConfig {
    dim3 grid, block;
    size_t dynamic_smem;
    hipStream_t stream;
    void* attrs;
    unsigned int num_attrs;
  } config{dim3(1), dim3(64), dynamic, nullptr, nullptr, 0};
  using LaunchExC = hipError_t (*)(const LaunchConfig*, const void*, void**);
  if (auto ex = reinterpret_cast<LaunchExC>(dlsym(RTLD_DEFAULT, "hipLaunchKernelExC"))) {
    void* args[] = {&d};
    e = ex(&config, reinterpret_cast<const void*>(lds_static_and_dynamic), args);
    printf("hipLaunchKernelExC(dynamic LDS %zu): %d (%s)\n", dynamic, static_cast<int>(e), hipGetErrorName(e));
  }
  // The other launch entry points the shim gates, looked up by name (the 5.2
  // headers do not declare the _spt forms).
  using Launch = hipError_t (*)(const void*, dim3, dim3, void**, size_t, hipStream_t);
  using LaunchCoop = hipError_t (*)(const void*, dim3, dim3, void**, uint32_t, hipStream_t);
  void* args[] = {&d};
  if (auto spt = reinterpret_cast<Launch>(dlsym(RTLD_DEFAULT, "hipLaunchKernel_spt"))) {
    e = spt(reinterpret_cast<const void*>(lds_static_and_dynamic), dim3(1), dim3(64), args, dynamic, nullptr);
    printf("hipLaunchKernel_spt(dynamic LDS %zu): %d (%s)\n", dynamic, static_cast<int>(e), hipGetErrorName(e));
  }
  for (const char* name : {"hipLaunchCooperativeKernel", "hipLaunchCooperativeKernel_spt"}) {
    if (auto coop = reinterpret_cast<LaunchCoop>(dlsym(RTLD_DEFAULT, name))) {
      e = coop(reinterpret_cast<const void*>(lds_static_and_dynamic), dim3(1), dim3(64), args,
               static_cast<uint32_t>(dynamic), nullptr);
      printf("%s(dynamic LDS %zu): %d (%s)\n", name, dynamic, static_cast<int>(e), hipGetErrorName(e));
    }
  }
  hipLaunchKernelGGL(lds_static_and_dynamic, dim3(1), dim3(64), dynamic, 0, d);
  e = hipGetLastError();
  printf("hipLaunchKernel(dynamic LDS %zu): %d (%s)\n", dynamic, static_cast<int>(e), hipGetErrorName(e));
  return argc > 2 ? atoi(argv[2]) : 0;
}
