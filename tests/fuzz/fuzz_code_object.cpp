// parse_code_object on arbitrary bytes (seeded with the AITER
// .co files and the code objects inside the hipcc-built bundles).
#include "format/read_code_object.h"
#include "fuzz_common.h"
#include "hipguard/check.h"
#include "hipguard/code_object.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hgfuzz::Budget budget(size, hgfuzz::kPlainFactor);  // fuzz_common.h: past it is a finding
  hipguard::Bytes bytes(data, size);
  hipguard::Result<hipguard::CodeObject> co = hipguard::parse_code_object(bytes);
  if (co) {
    HG_FUZZ_CHECK(co->processor != nullptr);
    std::string d = hipguard::describe_target(*co);
    HG_FUZZ_CHECK(!d.empty());
    for (const auto& i : co->issues) HG_FUZZ_CHECK(!hipguard::code_string(i.code).empty());
    HG_FUZZ_CHECK(co->issues.size() <= hipguard::kMaxIssuesPerCodeObject + 1);  // + the HG112 summary
    for (const auto& k : co->kernels) HG_FUZZ_CHECK(k.args.size() < size + 1);
  } else {
    HG_FUZZ_CHECK(co.error().code == hipguard::Code::kMalformedElf ||
                  co.error().code == hipguard::Code::kUnknownProcessor);
  }
  return 0;
}
