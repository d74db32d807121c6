// The .llvm.offloading section of host objects (clang's new offload driver): OffloadBinary images
// read through LLVM's own definitions of the format (OffloadBinary::Header, Entry, StringEntry,
// ImageKind), without OffloadBinary::create. That function's object file also holds the
// IR-reading half of OffloadBinary, which links LLVM's IR, bitcode and MC libraries, with their
// static constructors, into every process the shim is preloaded in (docs/performance.md, R4).
#include "format/offloading.h"

#include "hipguard/diagnostic.h"

#include <llvm/Object/OffloadBinary.h>
#include <llvm/Support/MathExtras.h>

#include <cstring>

namespace hipguard {
namespace {
using llvm::object::OffloadBinary;

template <class T>
T read_at(const uint8_t* p) {  // the section need not be aligned for T
  T out;
  std::memcpy(&out, p, sizeof out);
  return out;
}

// One OffloadBinary of `size` bytes at `p` (size checked against the section and the header): the
// checks OffloadBinary::create (LLVM 16) makes, and what it leaves unchecked, checked too: the
// image and every string of the string table inside the binary, each string NUL-terminated there.
// Linear in `size` whatever the binary says: a string is terminated inside it exactly when it starts
// at or before the binary's last NUL, found once. Fails with HG106 (kMalformedElf), as the section does.
Status validate(const uint8_t* p, uint64_t size, const OffloadBinary::Header& h) {
  auto invalid = [](std::string why) { return ParseError{Code::kMalformedElf, std::move(why)}; };
  if (h.Version != OffloadBinary::Version)
    return invalid("version " + std::to_string(h.Version) + ", not " + std::to_string(OffloadBinary::Version));
  if (size < sizeof(OffloadBinary::Header) + sizeof(OffloadBinary::Entry) ||
      h.EntryOffset > size - sizeof(OffloadBinary::Entry) || h.EntrySize > size - sizeof(OffloadBinary::Header))
    return invalid("entry out of bounds");
  const auto e = read_at<OffloadBinary::Entry>(p + h.EntryOffset);
  if (e.ImageOffset > size || e.ImageSize > size - e.ImageOffset) return invalid("image out of bounds");
  if (e.StringOffset > size || e.NumStrings > (size - e.StringOffset) / sizeof(OffloadBinary::StringEntry))
    return invalid("string table out of bounds");
  const void* last_nul = memrchr(p, 0, size);
  const uint64_t terminated_below = last_nul ? static_cast<const uint8_t*>(last_nul) - p + 1 : 0;
  for (uint64_t i = 0; i < e.NumStrings; ++i) {
    const auto s = read_at<OffloadBinary::StringEntry>(p + e.StringOffset + i * sizeof(OffloadBinary::StringEntry));
    if (s.KeyOffset >= terminated_below || s.ValueOffset >= terminated_below) return invalid("string out of bounds");
  }
  return ok();
}

// The value of `key` in the binary's string table ("" when absent; the last of two, as
// OffloadBinary's map keeps it). The binary is valid (validate() passed); `e` is its entry.
// Each key is compared over at most key.size() + 1 bytes and one value copied: linear in the table.
std::string string_of(const uint8_t* p, const OffloadBinary::Entry& e, std::string_view key) {
  const char* value = "";
  for (uint64_t i = 0; i < e.NumStrings; ++i) {
    const auto s = read_at<OffloadBinary::StringEntry>(p + e.StringOffset + i * sizeof(OffloadBinary::StringEntry));
    const char* k = reinterpret_cast<const char*>(p + s.KeyOffset);
    if (std::strncmp(k, key.data(), key.size()) == 0 && k[key.size()] == '\0')
      value = reinterpret_cast<const char*>(p + s.ValueOffset);
  }
  return value;
}

// The image kinds not named as code objects or IR, in words (getImageKindName gives file
// extensions: "s" for PTX); LLVM 16's ImageKind, whose later versions add IMG_SPIRV (6).
std::string kind_name(uint16_t kind) {
  switch (kind) {
    case llvm::object::IMG_Object: return "an object";
    case llvm::object::IMG_Bitcode: return "LLVM IR";
    case llvm::object::IMG_Cubin: return "a cubin";
    case llvm::object::IMG_Fatbinary: return "a CUDA fatbin";
    case llvm::object::IMG_PTX: return "PTX";
    case 6: return "SPIR-V";
    default: return "an image of kind " + std::to_string(kind);
  }
}
}  // namespace

Result<std::vector<OffloadingImage>> read_offloading_section(Bytes section) {
  auto malformed = [](std::string why) { return ParseError{Code::kMalformedElf, std::move(why)}; };
  std::vector<OffloadingImage> images;
  uint64_t offset = 0;
  while (offset < section.size()) {
    const uint8_t* p = section.data() + offset;
    const uint64_t rest = section.size() - offset;
    // A section too short for a header reads as one of size 0.
    const auto h = rest >= sizeof(OffloadBinary::Header) ? read_at<OffloadBinary::Header>(p) : OffloadBinary::Header{};
    const uint64_t size = h.Size;
    std::string why = "image at offset " + std::to_string(offset) + ": ";
    if (size < sizeof(OffloadBinary::Header) || size > rest)
      return malformed(why + "size " + std::to_string(size) + " outside the section");
    if (std::memcmp(p, "\x10\xff\x10\xad", 4) != 0) return malformed(why + "no OffloadBinary magic");
    if (Status valid = validate(p, size, h); !valid) return malformed(why + valid.error().message);
    const auto e = read_at<OffloadBinary::Entry>(p + h.EntryOffset);
    OffloadingImage image;
    image.triple = string_of(p, e, "triple");
    image.arch = string_of(p, e, "arch");
    image.kind = kind_name(e.TheImageKind);
    image.code_object =
        e.TheImageKind == llvm::object::IMG_Object && llvm::StringRef(image.triple).startswith("amdgcn");
    image.bytes.assign(reinterpret_cast<const char*>(p + e.ImageOffset), e.ImageSize);
    images.push_back(std::move(image));
    offset = llvm::alignTo(offset + size, OffloadBinary::getAlignment());
  }
  return images;
}

}  // namespace hipguard
