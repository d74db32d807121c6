// Relocatable host objects of clang's new offload driver: the .llvm.offloading section
// (SHT_LLVM_OFFLOADING, OffloadBinary images) read through LLVM's OffloadBinary structures. The objects are
// crafted here (OffloadBinary::write, a minimal ELF64 ET_REL) around a crafted code object.
#include <algorithm>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/OffloadBinary.h>
#include <llvm/Support/MemoryBuffer.h>

#include "format/offloading.h"
#include "test_util.h"

using namespace hgtest;
using namespace hipguard;

namespace {

std::string offload_binary(llvm::object::ImageKind kind, const std::string& image, const std::string& arch) {
  llvm::object::OffloadBinary::OffloadingImage img;
  img.TheImageKind = kind;
  img.TheOffloadKind = llvm::object::OFK_HIP;
  img.Flags = 0;
  img.StringData["triple"] = "amdgcn-amd-amdhsa";
  img.StringData["arch"] = arch;
  img.Image = llvm::MemoryBuffer::getMemBufferCopy(image);
  return llvm::object::OffloadBinary::write(img)->getBuffer().str();
}

// An x86-64 ET_REL with one SHT_LLVM_OFFLOADING section `.llvm.offloading` holding `section`.
std::string host_object(const std::string& section) {
  using namespace llvm::ELF;
  std::string shstrtab = std::string("\0.llvm.offloading\0.shstrtab\0", 28);
  std::string out(sizeof(Elf64_Ehdr), '\0');
  auto align = [&](size_t a) { out.resize((out.size() + a - 1) / a * a, '\0'); };
  align(8);
  size_t data_at = out.size();
  out += section;
  size_t str_at = out.size();
  out += shstrtab;
  align(8);
  size_t sh_at = out.size();
  Elf64_Shdr sh[3] = {};
  sh[1].sh_name = 1, sh[1].sh_type = SHT_LLVM_OFFLOADING, sh[1].sh_flags = SHF_EXCLUDE;
  sh[1].sh_offset = data_at, sh[1].sh_size = section.size(), sh[1].sh_addralign = 8;
  sh[2].sh_name = 18, sh[2].sh_type = SHT_STRTAB, sh[2].sh_offset = str_at, sh[2].sh_size = shstrtab.size();
  sh[2].sh_addralign = 1;
  out.append(reinterpret_cast<const char*>(sh), sizeof sh);
  Elf64_Ehdr h = {};
  std::memcpy(h.e_ident,
              "\x7f"
              "ELF",
              4);
  h.e_ident[EI_CLASS] = ELFCLASS64, h.e_ident[EI_DATA] = ELFDATA2LSB, h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_type = ET_REL, h.e_machine = EM_X86_64, h.e_version = EV_CURRENT;
  h.e_shoff = sh_at, h.e_ehsize = sizeof h, h.e_shentsize = sizeof(Elf64_Shdr), h.e_shnum = 3, h.e_shstrndx = 2;
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

std::string str(const ByteVec& v) { return std::string(v.begin(), v.end()); }

std::string put(const TempDir& t, const std::string& name, const std::string& bytes) {
  std::string p = t.path + "/" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

}  // namespace

TEST(Offloading, CodeObjectImagesAreCheckedLikeRawCodeObjects) {
  CodeObjectSpec spec;
  spec.kernels[0].lds = 96 << 10;  // over gfx942's 64 KiB: HG301
  std::string co = str(make_code_object(spec));
  TempDir t;
  std::string raw = put(t, "k.co", co);
  std::string obj = put(t, "k.o",
                        host_object(offload_binary(llvm::object::IMG_Object, co, "gfx942") +
                                    offload_binary(llvm::object::IMG_Bitcode, "BC\xc0\xde", "gfx90a")));
  FileReport want = check_file(raw, {target("gfx942")}), got = check_file(obj, {target("gfx942")});
  ASSERT_EQ(got.images.size(), 1u) << dump(got.diagnostics);
  EXPECT_EQ(got.images[0].location, ".llvm.offloading image 1 (gfx942)");
  EXPECT_TRUE(got.hip);
  ASSERT_EQ(want.images.size(), 1u);
  EXPECT_TRUE(has_code(got.images[0].diagnostics, Code::kLdsOverLimit)) << dump(got.images[0].diagnostics);
  EXPECT_EQ(got.images[0].diagnostics.size(), want.images[0].diagnostics.size());
  EXPECT_EQ(got.ok(), want.ok());
}

TEST(Offloading, BitcodeOnlyIsNothingToCheckYet) {
  TempDir t;
  std::string obj = put(t, "rdc.o", host_object(offload_binary(llvm::object::IMG_Bitcode, "BC\xc0\xde", "gfx942")));
  FileReport named = check_file(obj, {target("gfx942")});
  ASSERT_TRUE(has_code(named.diagnostics, Code::kNoHipFatbin)) << dump(named.diagnostics);
  EXPECT_NE(named.diagnostics[0].message.find("LLVM IR for gfx942"), std::string::npos) << named.diagnostics[0].message;
  EXPECT_TRUE(check_file(obj, {target("gfx942")}, /*explicit_arg=*/false).diagnostics.empty());
}

// The offsets of OffloadBinary (LLVM's Header, Entry, StringEntry): header: magic, version@4,
// size@8, entry offset@16, entry size@24; the entry at 32: image kind@32, offload kind@34, flags@36,
// string offset@40, string count@48, image offset@56, image size@64; then the string entries (key
// offset, value offset), in key order: "arch", "triple".
struct Layout {
  static constexpr size_t kVersion = 4, kSize = 8, kEntryOffset = 16, kEntrySize = 24, kImageKind = 32,
                          kStringOffset = 40, kNumStrings = 48, kImageOffset = 56, kImageSize = 64;
};

std::string good_binary() {
  return offload_binary(llvm::object::IMG_Object, str(make_code_object(CodeObjectSpec{})), "gfx942");
}

template <class T>
std::string patched(std::string s, size_t at, T v) {
  std::memcpy(&s[at], &v, sizeof v);
  return s;
}

template <class T>
T field(const std::string& s, size_t at) {
  T v;
  std::memcpy(&v, &s[at], sizeof v);
  return v;
}

Result<std::vector<OffloadingImage>> read(const std::string& s) {
  return read_offloading_section(Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

// Each malformed binary is one HG106 whose message names what is wrong, and nothing is read
// outside the section (the ASan run holds the reads to it).
TEST(Offloading, HostileSectionsAreErrorsNotReads) {
  const std::string good = good_binary();
  using L = Layout;
  const uint64_t string_at = field<uint64_t>(good, L::kStringOffset);
  const uint64_t last = good.size() - 1;
  const std::pair<std::string, std::string> cases[] = {
      {patched<uint64_t>(good, L::kSize, 0), "outside the section"},
      {patched<uint64_t>(good, L::kSize, 1ull << 40), "outside the section"},
      {patched<uint32_t>(good, L::kVersion, 2), "version 2, not 1"},
      {patched<uint64_t>(good, L::kEntryOffset, good.size() - 8), "entry out of bounds"},
      {patched<uint64_t>(good, L::kEntrySize, 1ull << 40), "entry out of bounds"},
      {patched<uint64_t>(good, L::kNumStrings, 1ull << 59), "string table out of bounds"},
      {patched<uint64_t>(good, L::kStringOffset, good.size() + 1), "string table out of bounds"},
      {patched<uint64_t>(good, L::kImageOffset, good.size() + 1), "image out of bounds"},
      {patched<uint64_t>(good, L::kImageSize, 1ull << 40), "image out of bounds"},
      {patched<uint64_t>(good, string_at, good.size()), "string out of bounds"},  // a key past the end
      // a value at the last byte, made not NUL: a string that runs off the binary's end
      {patched<uint64_t>(patched<char>(good, last, 'x'), string_at + 8, last), "string out of bounds"},
      {good.substr(0, 40), "outside the section"},
      {"\x10\xff\x10\xae" + good.substr(4), "no OffloadBinary magic"},
  };
  for (const auto& [bad, why] : cases) {
    auto images = read(bad);
    ASSERT_FALSE(images) << why;
    EXPECT_EQ(images.error().code, Code::kMalformedElf);
    EXPECT_NE(images.error().message.find(why), std::string::npos) << images.error().message;
  }
  auto images = read(good);
  ASSERT_TRUE(images) << images.error().message;
  ASSERT_EQ(images->size(), 1u);
  EXPECT_TRUE((*images)[0].code_object);
  EXPECT_EQ((*images)[0].arch, "gfx942");
  EXPECT_EQ((*images)[0].triple, "amdgcn-amd-amdhsa");
  EXPECT_EQ((*images)[0].bytes, str(make_code_object(CodeObjectSpec{})));
}

// A key given twice takes its last value, as OffloadBinary's string map keeps it: "arch"'s key made
// "triple" leaves the binary with no arch and the triple of whichever entry comes last (write()
// orders the entries as its StringMap iterates).
TEST(Offloading, RepeatedKeyTakesItsLastValue) {
  const std::string good = good_binary();
  const uint64_t string_at = field<uint64_t>(good, Layout::kStringOffset);
  ASSERT_EQ(field<uint64_t>(good, Layout::kNumStrings), 2u);
  auto key = [&](int i) { return std::string(good.c_str() + field<uint64_t>(good, string_at + 16 * i)); };
  auto value = [&](int i) { return std::string(good.c_str() + field<uint64_t>(good, string_at + 16 * i + 8)); };
  const int arch = key(0) == "arch" ? 0 : 1, triple = 1 - arch;
  ASSERT_EQ(key(triple), "triple");
  const std::string bad =
      patched<uint64_t>(good, string_at + 16 * arch, field<uint64_t>(good, string_at + 16 * triple));
  auto images = read(bad);
  ASSERT_TRUE(images) << images.error().message;
  ASSERT_EQ(images->size(), 1u);
  EXPECT_EQ((*images)[0].arch, "");
  EXPECT_EQ((*images)[0].triple, value(std::max(arch, triple)));
}

// The section's contents need not be 8-byte aligned in memory (a mapped file's section may sit at any
// offset): read at an odd address, two binaries give what they give aligned.
TEST(Offloading, UnalignedSectionReadsTheSame) {
  const std::string two = good_binary() + offload_binary(llvm::object::IMG_Bitcode, "BC\xc0\xde", "gfx90a");
  std::string shifted = " " + two;
  auto aligned = read(two);
  auto odd = read_offloading_section(Bytes(reinterpret_cast<const uint8_t*>(shifted.data()) + 1, two.size()));
  ASSERT_TRUE(aligned && odd);
  ASSERT_EQ(odd->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*odd)[i].arch, (*aligned)[i].arch);
    EXPECT_EQ((*odd)[i].kind, (*aligned)[i].kind);
    EXPECT_EQ((*odd)[i].bytes, (*aligned)[i].bytes);
  }
  EXPECT_EQ((*odd)[1].kind, "LLVM IR");
}

// Images that are not AMDGPU code objects are named in words in HG107's list, never checked.
TEST(Offloading, OtherImageKindsAreNamedInWords) {
  const std::pair<llvm::object::ImageKind, std::string> kinds[] = {{llvm::object::IMG_Object, "an object"},
                                                                   {llvm::object::IMG_Bitcode, "LLVM IR"},
                                                                   {llvm::object::IMG_Cubin, "a cubin"},
                                                                   {llvm::object::IMG_Fatbinary, "a CUDA fatbin"},
                                                                   {llvm::object::IMG_PTX, "PTX"}};
  for (const auto& [kind, words] : kinds) {
    auto images = read(offload_binary(kind, "payload", "sm_90"));
    ASSERT_TRUE(images) << words;
    ASSERT_EQ(images->size(), 1u);
    EXPECT_EQ((*images)[0].kind, words);
    EXPECT_EQ((*images)[0].code_object, kind == llvm::object::IMG_Object) << words;  // its triple is amdgcn's
  }
  auto unknown = read(patched<uint16_t>(good_binary(), Layout::kImageKind, 9));
  ASSERT_TRUE(unknown);
  EXPECT_EQ((*unknown)[0].kind, "an image of kind 9");
  EXPECT_FALSE((*unknown)[0].code_object);
}
