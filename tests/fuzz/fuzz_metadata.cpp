// read_metadata_note on arbitrary bytes: the NT_AMDGPU_METADATA MessagePack
// reader alone (seeded with the notes of the AITER .co files and of the code
// objects inside the hipcc-built bundles), without the ELF around it.
#include "fuzz_common.h"
#include "hipguard/code_object.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kPlainFactor);  // fuzz_common.h: past it is a finding
  hipguard::CodeObject co;
  hipguard::read_metadata_note(std::string_view(reinterpret_cast<const char*>(data), size), co);
  for (const auto& i : co.issues)
    HG_FUZZ_CHECK(i.code == hipguard::Code::kBadMetadata || i.code == hipguard::Code::kBadKernelMetadata ||
                  i.code == hipguard::Code::kBudgetExceeded);
  // Findings are capped per code object (the rest counted): the shim's log stays bounded.
  HG_FUZZ_CHECK(co.issues.size() <= hipguard::kMaxIssuesPerCodeObject);
  HG_FUZZ_CHECK(co.kernels.size() <= hipguard::kMaxKernelsPerCodeObject);
  for (const auto& k : co.kernels) {
    // Every kernel and argument came out of the input: none can outnumber its bytes.
    HG_FUZZ_CHECK(k.args.size() <= size);
    HG_FUZZ_CHECK(k.args.size() <= hipguard::kMaxArgsPerKernel);
    HG_FUZZ_CHECK(k.name.size() <= size);
  }
  HG_FUZZ_CHECK(co.kernels.size() <= size);
  return 0;
}
