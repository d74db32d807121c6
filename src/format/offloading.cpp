// The .llvm.offloading section of host objects (clang's new offload driver) read with LLVM's OffloadBinary.
#include "format/offloading.h"

#include "hipguard/diagnostic.h"

#include <llvm/Object/OffloadBinary.h>
#include <llvm/Support/Alignment.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstring>

namespace hipguard {
namespace {
using llvm::object::OffloadBinary;

// What OffloadBinary::create (LLVM 16) leaves unchecked, checked first: the
// image and every string of the string table inside the `size` bytes of the
// binary at `p` (8-byte aligned), each string NUL-terminated there.
bool within(const char* p, uint64_t size, std::string* error) {
  if (size < sizeof(OffloadBinary::Header)) return *error = "shorter than its header", false;
  const auto* h = reinterpret_cast<const OffloadBinary::Header*>(p);
  if (h->EntryOffset > size || size - h->EntryOffset < sizeof(OffloadBinary::Entry) ||
      h->EntryOffset % alignof(OffloadBinary::Entry) != 0)
    return *error = "entry out of bounds", false;
  const auto* e = reinterpret_cast<const OffloadBinary::Entry*>(p + h->EntryOffset);
  if (e->ImageOffset > size || e->ImageSize > size - e->ImageOffset) return *error = "image out of bounds", false;
  if (e->StringOffset > size || e->NumStrings > (size - e->StringOffset) / sizeof(OffloadBinary::StringEntry) ||
      e->StringOffset % alignof(OffloadBinary::StringEntry) != 0)
    return *error = "string table out of bounds", false;
  const auto* strings = reinterpret_cast<const OffloadBinary::StringEntry*>(p + e->StringOffset);
  for (uint64_t i = 0; i < e->NumStrings; ++i)
    for (uint64_t at : {strings[i].KeyOffset, strings[i].ValueOffset})
      if (at >= size || !std::memchr(p + at, 0, size - at)) return *error = "string out of bounds", false;
  return true;
}
}  // namespace

Result<std::vector<OffloadingImage>> read_offloading_section(Bytes section) {
  auto malformed = [](std::string why) { return ParseError{std::string(code::kMalformedElf), std::move(why)}; };
  std::vector<OffloadingImage> images;
  llvm::StringRef all(reinterpret_cast<const char*>(section.data()), section.size());
  uint64_t offset = 0;
  while (offset < all.size()) {
    // OffloadBinary wants its header 8-byte aligned: a copy when the section is not.
    llvm::StringRef rest = all.drop_front(offset);
    uint64_t size = 0;
    if (rest.size() >= sizeof(OffloadBinary::Header)) std::memcpy(&size, rest.data() + 8, sizeof size);  // Header::Size
    std::string why = "image at offset " + std::to_string(offset) + ": ";
    if (size < sizeof(OffloadBinary::Header) || size > rest.size())
      return malformed(why + "size " + std::to_string(size) + " outside the section");
    std::unique_ptr<llvm::MemoryBuffer> buffer =
        llvm::MemoryBuffer::getMemBuffer(rest.take_front(size), "", /*RequiresNullTerminator=*/false);
    if (!llvm::isAddrAligned(llvm::Align(OffloadBinary::getAlignment()), buffer->getBufferStart()))
      buffer = llvm::MemoryBuffer::getMemBufferCopy(buffer->getBuffer());
    if (rest.size() < 8 || std::memcmp(rest.data(), "\x10\xff\x10\xad", 4) != 0)
      return malformed(why + "no OffloadBinary magic");
    std::string bounds;
    if (!within(buffer->getBufferStart(), size, &bounds)) return malformed(why + bounds);
    auto binary = OffloadBinary::create(*buffer);
    if (!binary) return malformed(why + llvm::toString(binary.takeError()));
    const OffloadBinary& b = **binary;
    OffloadingImage image;
    image.triple = b.getTriple().str();
    image.arch = b.getArch().str();
    image.kind = b.getImageKind() == llvm::object::IMG_Bitcode  ? "LLVM IR"
                 : b.getImageKind() == llvm::object::IMG_Object ? "an object"
                                                                : llvm::object::getImageKindName(b.getImageKind()).str();
    image.code_object = b.getImageKind() == llvm::object::IMG_Object && llvm::StringRef(image.triple).startswith("amdgcn");
    image.bytes = b.getImage().str();
    images.push_back(std::move(image));
    offset = llvm::alignTo(offset + size, OffloadBinary::getAlignment());
  }
  return images;
}

}  // namespace hipguard
