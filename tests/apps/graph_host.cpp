// A plain host program (no kernels) that builds, instantiates, launches and
// tears down a HIP graph, linked against libamdhip64 as real programs are:
// the simulated runtime must export every entry point it calls. Prints
// "API: <hipError_t> (<name>)" per call.
#include <hip/hip_runtime_api.h>

#include <cstdio>

namespace {
void show(const char* api, hipError_t e) { printf("%s: %d (%s)\n", api, static_cast<int>(e), hipGetErrorName(e)); }
}  // namespace

int main() {
  hipStream_t stream = nullptr;
  show("hipStreamCreate", hipStreamCreate(&stream));
  hipGraph_t graph = nullptr;
  show("hipGraphCreate", hipGraphCreate(&graph, 0));
  hipGraphNode_t empty = nullptr;
  show("hipGraphAddEmptyNode", hipGraphAddEmptyNode(&empty, graph, nullptr, 0));
  size_t nodes = 0;
  show("hipGraphGetNodes", hipGraphGetNodes(graph, nullptr, &nodes));
  hipGraphExec_t exec = nullptr;
  show("hipGraphInstantiate", hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  show("hipGraphLaunch", hipGraphLaunch(exec, stream));
  show("hipStreamSynchronize", hipStreamSynchronize(stream));
  show("hipGraphExecDestroy", hipGraphExecDestroy(exec));
  show("hipGraphDestroy", hipGraphDestroy(graph));
  show("hipStreamDestroy", hipStreamDestroy(stream));
  printf("graph_host: done\n");
  return 0;
}
