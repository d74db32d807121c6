// DescriptorLookup (strict registration's per-kernel descriptor lookup) against
// the full read of the same code objects: the AITER corpus, the hipcc test
// apps, and a fixed sample of the ROCm 6.4 libraries' fat binaries (every
// processor they ship); and Depth::Headers, the registration check that leaves
// the kernels to it, against Depth::Full.
#include <gtest/gtest.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "check_util.h"
#include "code_object.h"
#include "format/read_code_object.h"
#include "hipguard/check.h"
#include "hipguard/code_object.h"

using namespace hipguard;

namespace {

using namespace checks;

struct Tally {
  size_t objects = 0, kernels = 0;
};

bool same(const KernelDescriptor& a, const KernelDescriptor& b) {
  return a.group_segment_fixed_size == b.group_segment_fixed_size &&
         a.private_segment_fixed_size == b.private_segment_fixed_size && a.kernarg_size == b.kernarg_size &&
         a.kernel_code_entry_byte_offset == b.kernel_code_entry_byte_offset && a.compute_pgm_rsrc1 == b.compute_pgm_rsrc1 &&
         a.compute_pgm_rsrc2 == b.compute_pgm_rsrc2 && a.compute_pgm_rsrc3 == b.compute_pgm_rsrc3 &&
         a.kernel_code_properties == b.kernel_code_properties && a.kernarg_preload == b.kernarg_preload;
}

// Every kernel the full read finds by its "<name>.kd" descriptor, the lookup
// finds with the same descriptor; device functions and unknown names it does not.
void compare(Bytes image, const std::string& what, Tally& t) {
  Result<CodeObject> full = parse_code_object(image);
  ASSERT_TRUE(full) << what;
  std::optional<DescriptorLookup> lookup = DescriptorLookup::open(image);
  ASSERT_TRUE(lookup) << what;
  ++t.objects;
  for (const auto& k : full->kernels) {
    if (!k.descriptor) {  // the full read rejects it (HG406): the lookup must not clear it
      EXPECT_FALSE(lookup->find(k.name)) << what << ": " << k.name;
      continue;
    }
    if (k.symbol != k.name + ".kd") continue;
    std::optional<KernelDescriptor> d = lookup->find(k.name);
    ASSERT_TRUE(d) << what << ": " << k.name;
    EXPECT_TRUE(same(*d, *k.descriptor)) << what << ": " << k.name;
    EXPECT_FALSE(lookup->find(k.name + "_")) << what;
    ++t.kernels;
  }
  for (const auto& f : full->device_functions) EXPECT_FALSE(lookup->find(f)) << what << ": device function " << f;
}

// Each amdgcn entry of an uncompressed bundle.
void compare_bundle(Bytes data, const std::string& what, Tally& t) {
  auto b = parse_bundle(data);
  ASSERT_TRUE(b) << what;
  ASSERT_FALSE(b->compressed) << what;
  for (const auto& e : b->entries)
    if (e.id.find("amdgcn") != std::string::npos) compare(entry_bytes(*b, data, e), what + " " + e.id, t);
}

}  // namespace

TEST(DescriptorLookup, FindsWhatTheFullReadFindsInCorpusAndHipccObjects) {
  Tally t;
  for (const auto& f : std::filesystem::directory_iterator(kCorpus)) {
    if (f.path().extension() != ".co") continue;
    std::vector<uint8_t> co = read_bytes(f.path().string());
    compare(Bytes(co.data(), co.size()), f.path().filename().string(), t);
  }
  EXPECT_EQ(t.objects, 42u) << "the corpus README lists 42 code objects";
  for (const char* app : {"vector_add_gfx90a.hipfb", "vector_add_multi.hipfb", "fill_gfx1100.hipfb"}) {
    std::string path = kApps + "/" + app;
    if (kApps.empty() || !exists(path)) GTEST_SKIP() << "hipcc test apps not built";
    std::vector<uint8_t> b = read_bytes(path);
    compare_bundle(Bytes(b.data(), b.size()), app, t);
  }
  std::cout << t.objects << " code objects, " << t.kernels << " kernels: the same descriptors\n";
}

// One fat binary in `stride` of each library (in file order, so the sample is
// fixed), every entry of each: all the processors a library ships.
TEST(DescriptorLookup, FindsWhatTheFullReadFindsInRocmLibraries) {
  const std::string root = HIPGUARD_ROCM_ROOT;
  if (!exists(root + "/.hipguard-root")) GTEST_SKIP() << "no ROCm root at '" << root << "' (scripts/rocm-root.sh builds it)";
  const size_t stride = 16;
  for (const char* lib : {"librocblas.so.4", "librocsparse.so.1", "librocsolver.so.0", "ggml/backends0/libggml-hip.so"}) {
    std::string path = root + "/usr/lib/x86_64-linux-gnu/" + lib;
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    ASSERT_TRUE(bool(buf)) << path;
    auto f = llvm::object::ELFFile<llvm::object::ELF64LE>::create((*buf)->getBuffer());
    ASSERT_TRUE(bool(f)) << path;
    Tally t;
    size_t bundles = 0;
    for (const auto& s : llvm::cantFail(f->sections())) {
      auto name = f->getSectionName(s);
      if (!name || *name != ".hip_fatbin") continue;
      auto data = llvm::cantFail(f->getSectionContents(s));
      for (const auto& sb : split_fatbin_section(Bytes(data.data(), data.size())))
        if (bundles++ % stride == 0) compare_bundle(Bytes(data.data(), data.size()).subspan(sb.offset), lib, t);
    }
    EXPECT_GT(t.kernels, 100u) << lib;
    std::cout << lib << ": " << bundles << " fat binaries, " << t.objects << " code objects of " << (bundles + stride - 1) / stride
              << " of them, " << t.kernels << " kernels: the same descriptors\n";
  }
}

// A descriptor symbol that points outside its section or the image, or names
// no section, is not cleared; a symbol table that points outside the image
// gives no lookup. (fuzz_code_object runs the lookup on arbitrary bytes.)
TEST(DescriptorLookup, NothingOutsideTheImage) {
  using ELFT = llvm::object::ELF64LE;
  const hgtest::CodeObjectSpec spec;
  const std::string name = spec.kernels[0].name;
  const std::vector<uint8_t> co = hgtest::make_code_object(spec);
  {
    std::optional<DescriptorLookup> whole = DescriptorLookup::open(Bytes(co.data(), co.size()));
    ASSERT_TRUE(whole);
    EXPECT_TRUE(whole->find(name));
  }
  // Offsets in `co` of the descriptor's symbol and of the symbol table's section header.
  auto file = llvm::cantFail(llvm::object::ELFFile<ELFT>::create(
      llvm::StringRef(reinterpret_cast<const char*>(co.data()), co.size())));
  auto sections = llvm::cantFail(file.sections());
  uint64_t sym_at = 0, table_header_at = 0;
  for (const auto& sec : sections) {
    if (sec.sh_type != llvm::ELF::SHT_SYMTAB && sec.sh_type != llvm::ELF::SHT_DYNSYM) continue;
    table_header_at = reinterpret_cast<const uint8_t*>(&sec) - co.data();
    auto strtab = llvm::cantFail(file.getStringTableForSymtab(sec, sections));
    for (const auto& sym : llvm::cantFail(file.symbols(&sec)))
      if (llvm::cantFail(sym.getName(strtab)) == name + ".kd") sym_at = reinterpret_cast<const uint8_t*>(&sym) - co.data();
  }
  ASSERT_NE(sym_at, 0u);
  auto changed = [&](uint64_t at, uint64_t value, size_t bytes) {
    std::vector<uint8_t> c = co;
    std::memcpy(c.data() + at, &value, bytes);
    return c;
  };
  using Sym = llvm::ELF::Elf64_Sym;  // plain structs with the ABI's layout
  using Shdr = llvm::ELF::Elf64_Shdr;
  for (const auto& [what, c] : std::vector<std::pair<std::string, std::vector<uint8_t>>>{
           {"value past its section", changed(sym_at + offsetof(Sym, st_value), 1ull << 40, 8)},
           {"value before its section", changed(sym_at + offsetof(Sym, st_value), 0, 8)},
           {"no such section", changed(sym_at + offsetof(Sym, st_shndx), 0xfff0, 2)},
           {"undefined", changed(sym_at + offsetof(Sym, st_shndx), 0, 2)}}) {
    std::optional<DescriptorLookup> l = DescriptorLookup::open(Bytes(c.data(), c.size()));
    ASSERT_TRUE(l) << what;
    EXPECT_FALSE(l->find(name)) << what;
  }
  for (const auto& [what, c] : std::vector<std::pair<std::string, std::vector<uint8_t>>>{
           {"symbol table past the image", changed(table_header_at + offsetof(Shdr, sh_offset), co.size(), 8)},
           {"string table link out of range", changed(table_header_at + offsetof(Shdr, sh_link), 0xffff, 4)}})
    EXPECT_FALSE(DescriptorLookup::open(Bytes(c.data(), c.size()))) << what;
}

// Depth::Headers decides what needs no kernel as Depth::Full does, and reads no kernel.
TEST(HeadersDepth, DecidesTheHeaderErrorsAndReadsNoKernel) {
  auto gfx942 = std::vector<TargetId>{*parse_target_id("gfx942")};
  auto bundled = [](const std::vector<uint8_t>& co, const std::string& id) {
    return make_bundle({{"host-x86_64-unknown-linux-gnu-", {}}, {"hipv4-amdgcn-amd-amdhsa--" + id, co}});
  };
  struct Case {
    const char* what;
    const char* code;  // "" when the image is fine without its kernels
    hgtest::CodeObjectSpec spec;
    std::string label;
  };
  hgtest::CodeObjectSpec v7, no_note, xnack_on, lds;
  v7.version = 7;
  no_note.note = false;
  xnack_on.features = hgtest::kXnackOn | hgtest::kSrameccAny;
  lds.kernels[0].kd_lds = 70000;
  std::vector<Case> cases = {{"code object v7", "HG109", v7, "gfx942"},
                             {"no metadata note", "HG401", no_note, "gfx942"},
                             {"entry label and e_flags disagree", "HG203", xnack_on, "gfx942:xnack-"},
                             {"static LDS over the limit: the kernel's registration decides", "", lds, "gfx942"}};
  for (const auto& c : cases) {
    std::vector<uint8_t> b = bundled(hgtest::make_code_object(c.spec), c.label);
    auto targets = c.label == "gfx942:xnack-" ? std::vector<TargetId>{*parse_target_id("gfx942:xnack-")} : gfx942;
    ImageReport full = check_image(Bytes(b.data(), b.size()), "x", targets, "", Depth::Full);
    ImageReport headers = check_image(Bytes(b.data(), b.size()), "x", targets, "", Depth::Headers);
    EXPECT_FALSE(full.ok()) << c.what;
    EXPECT_EQ(headers.ok(), *c.code == 0) << c.what;
    bool found = false;
    for (const auto& d : headers.diagnostics) found = found || d.code == c.code;
    if (*c.code) EXPECT_TRUE(found) << c.what;
    ASSERT_EQ(headers.verdicts.size(), full.verdicts.size());
    EXPECT_EQ(headers.verdicts[0].selected, full.verdicts[0].selected) << c.what;
    ASSERT_FALSE(headers.code_objects.empty()) << c.what;
    for (const auto& co : headers.code_objects) EXPECT_TRUE(co.co.kernels.empty()) << c.what;
  }
}
