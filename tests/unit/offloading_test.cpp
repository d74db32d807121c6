// Relocatable host objects of clang's new offload driver: the .llvm.offloading section
// (SHT_LLVM_OFFLOADING, OffloadBinary images) read through LLVM's OffloadBinary structures. The objects are
// crafted here (OffloadBinary::write, a minimal ELF64 ET_REL) around a crafted code object.
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
  std::memcpy(h.e_ident, "\x7f" "ELF", 4);
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
  std::string obj = put(t, "k.o", host_object(offload_binary(llvm::object::IMG_Object, co, "gfx942") +
                                               offload_binary(llvm::object::IMG_Bitcode, "BC\xc0\xde", "gfx90a")));
  FileReport want = check_file(raw, {target("gfx942")}), got = check_file(obj, {target("gfx942")});
  ASSERT_EQ(got.images.size(), 1u) << dump(got.diagnostics);
  EXPECT_EQ(got.images[0].location, ".llvm.offloading image 1 (gfx942)");
  EXPECT_TRUE(got.hip);
  ASSERT_EQ(want.images.size(), 1u);
  EXPECT_TRUE(has_code(got.images[0].diagnostics, "HG301")) << dump(got.images[0].diagnostics);
  EXPECT_EQ(got.images[0].diagnostics.size(), want.images[0].diagnostics.size());
  EXPECT_EQ(got.ok(), want.ok());
}

TEST(Offloading, BitcodeOnlyIsNothingToCheckYet) {
  TempDir t;
  std::string obj = put(t, "rdc.o", host_object(offload_binary(llvm::object::IMG_Bitcode, "BC\xc0\xde", "gfx942")));
  FileReport named = check_file(obj, {target("gfx942")});
  ASSERT_TRUE(has_code(named.diagnostics, "HG107")) << dump(named.diagnostics);
  EXPECT_NE(named.diagnostics[0].message.find("LLVM IR for gfx942"), std::string::npos) << named.diagnostics[0].message;
  EXPECT_TRUE(check_file(obj, {target("gfx942")}, /*explicit_arg=*/false).diagnostics.empty());
}

TEST(Offloading, HostileSectionsAreErrorsNotReads) {
  std::string good = offload_binary(llvm::object::IMG_Object, str(make_code_object(CodeObjectSpec{})), "gfx942");
  auto patch = [&](size_t at, uint64_t v) {
    std::string s = good;
    std::memcpy(&s[at], &v, sizeof v);
    return s;
  };
  // Header: magic, version, size@8, entry offset@16, entry size@24; the entry at 32: kinds, flags,
  // string offset@40, string count@48, image offset@56, image size@64.
  for (const std::string& bad : {patch(8, 0), patch(8, 1ull << 40), patch(16, good.size() - 8), patch(48, 1ull << 59),
                                 patch(56, good.size()), patch(64, 1ull << 40), patch(40, 3), good.substr(0, 40)}) {
    auto images = read_offloading_section(Bytes(reinterpret_cast<const uint8_t*>(bad.data()), bad.size()));
    ASSERT_FALSE(images);
    EXPECT_EQ(images.error().code, code::kMalformedElf);
    EXPECT_FALSE(images.error().message.empty());
  }
  auto images = read_offloading_section(Bytes(reinterpret_cast<const uint8_t*>(good.data()), good.size()));
  ASSERT_TRUE(images) << images.error().message;
  ASSERT_EQ(images->size(), 1u);
  EXPECT_TRUE((*images)[0].code_object);
  EXPECT_EQ((*images)[0].arch, "gfx942");
}
