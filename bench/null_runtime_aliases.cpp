// Every symbol of the API tables as a weak alias of hipguard_null_success: it
// returns hipSuccess (0), a null pointer or nothing, whatever the signature.
// The version script (cmake/hip_api.cmake, from the same tables) gives each its
// version node. The aliases need their target defined in the same file.
extern "C" __attribute__((visibility("default"), used)) int hipguard_null_success() { return 0; }

#define HG_API(sym, node, ...) \
  __asm__(".weak " #sym "\n.type " #sym ", @function\n.set " #sym ", hipguard_null_success\n");
#define SIM_API(sym, node) HG_API(sym, node)
#define HG_SKIP(sym, node, why)
#include "hip_api.def"
#include "simrt_extra.def"
#include "null_runtime_extra.def"
