// Device code of clang's new offload driver in host objects: the .llvm.offloading section
// (SHT_LLVM_OFFLOADING), a list of OffloadBinary images, as `clang -fgpu-rdc --offload-new-driver -c` writes it.
#pragma once

#include <string>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/result.h"

namespace hipguard {

struct OffloadingImage {
  std::string triple, arch;  // "amdgcn-amd-amdhsa", "gfx942" (the image's string table)
  std::string kind;          // in words: "an object", "LLVM IR" (compiled when the program is linked), "PTX", ...
  bool code_object = false;  // an ELF image for amdgcn: checked as a raw code object
  std::string bytes;         // the image, copied out of the section (8-byte alignment not required of it)
};

// The images of one SHT_LLVM_OFFLOADING section's contents, in order (the
// section holds OffloadBinary blobs back to back, each padded to 8 bytes; read
// through LLVM's definitions of llvm::object::OffloadBinary, version 1 as clang
// 16 to 21 write it).
// HG106 (kMalformedElf) when the contents are not such a list.
Result<std::vector<OffloadingImage>> read_offloading_section(Bytes section);

}  // namespace hipguard
