// code_object.h on the real AITER corpus, on hipcc-built code objects, and on
// crafted code objects (broken ELF, unknown processor, metadata problems,
// per-kernel structural findings).
#include "hipguard/code_object.h"

#include <functional>

#include "corpus_facts.h"
#include "test_util.h"

using namespace hipguard;
using namespace hgtest;

namespace {

Result<CodeObject> parse(const ByteVec& v) { return parse_code_object(span(v)); }

}  // namespace

// ---- The AITER corpus -------------------------------------------------------

TEST(CorpusCodeObject, EveryFileParses) {
  HG_REQUIRE_CORPUS();
  auto files = corpus_files();
  ASSERT_EQ(files.size(), 42u) << "the corpus README lists 42 code objects";
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    ByteVec bytes = read_bytes(f);
    ASSERT_EQ(classify(span(bytes)), PayloadKind::CodeObject);
    auto co = parse(bytes);
    ASSERT_TRUE(co) << code_string(co.error().code) << " " << co.error().message;

    // Processor: from e_flags, must equal the file-name prefix (gfx942_, gfx950_, gfx1250_).
    std::string name = f.filename().string();
    std::string prefix = name.substr(0, name.find('_'));
    ASSERT_NE(co->processor, nullptr);
    EXPECT_EQ(co->processor->name, prefix);
    EXPECT_EQ(co->target.processor, prefix);
    // e_flags and EI_ABIVERSION read straight from the header bytes.
    uint32_t e_flags = get<uint32_t>(bytes, 48);
    EXPECT_EQ(co->e_flags, e_flags);
    EXPECT_EQ(co->mach, e_flags & 0xff);
    EXPECT_EQ(co->version, bytes[8] + 2u) << "code object version = EI_ABIVERSION + 2";
    EXPECT_GE(co->version, 4u);
    EXPECT_LE(co->version, 6u);
    // All corpus files carry 0x500 in the feature bits (llvm-readelf: Flags 0x54C/0x54F/0x549):
    // xnack "any" (0x100) and sramecc "any" (0x400), so no feature suffix in the target ID.
    EXPECT_EQ(e_flags & 0xf00, 0x500u);
    EXPECT_EQ(co->target.xnack, Feature::Any);
    EXPECT_EQ(co->target.sramecc, Feature::Any);
    EXPECT_EQ(co->target.str(), prefix);
    EXPECT_EQ(co->generic_version, 0u);

    // Kernels from the metadata note.
    ASSERT_EQ(co->kernels.size(), 1u);
    const KernelInfo& k = co->kernels[0];
    EXPECT_FALSE(k.name.empty());
    EXPECT_EQ(k.symbol, k.name + ".kd");
    auto lds = kCorpusLds.find(name);
    ASSERT_NE(lds, kCorpusLds.end()) << "file not in the llvm-readelf table";
    EXPECT_EQ(k.group_segment_fixed_size, lds->second);
    // gfx1250 is wave32-only; gfx9 is wave64 (llvm-readelf: .wavefront_size 32 / 64).
    EXPECT_EQ(k.wavefront_size, prefix == "gfx1250" ? 32u : 64u);
    ASSERT_TRUE(k.descriptor) << "every corpus kernel has its .kd symbol";
    EXPECT_EQ(k.descriptor->group_segment_fixed_size, lds->second);
    EXPECT_TRUE(co->kernels_without_metadata.empty());
  }
}

TEST(CorpusCodeObject, MetadataTargetWhenPresent) {
  HG_REQUIRE_CORPUS();
  // llvm-readelf --notes: every gfx1250 object has amdhsa.target; of the gfx942 ones
  // only flatmm, i8gemm and topk do; no gfx950 object does.
  for (const auto& f : corpus_files()) {
    auto co = parse(read_bytes(f));
    ASSERT_TRUE(co);
    std::string name = f.filename().string();
    std::string prefix = name.substr(0, name.find('_'));
    if (prefix == "gfx1250") {
      ASSERT_TRUE(co->metadata_target) << name;
      EXPECT_EQ(*co->metadata_target, "amdgcn-amd-amdhsa--gfx1250");
    } else if (prefix == "gfx950") {
      EXPECT_FALSE(co->metadata_target) << name;
    } else if (co->metadata_target) {
      EXPECT_EQ(*co->metadata_target, "amdgcn-amd-amdhsa--gfx942") << name;
    }
  }
  auto flatmm = parse(read_bytes(corpus_dir() / "gfx942_flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32.co"));
  ASSERT_TRUE(flatmm);
  EXPECT_TRUE(flatmm->metadata_target);
  EXPECT_EQ(flatmm->kernels[0].name, "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32");
}

TEST(CorpusCodeObject, VersionsSpanV4ToV6) {
  HG_REQUIRE_CORPUS();
  // README: gfx942_* are code object v4, v5 and v6 (ELF ABI version 2, 3, 4).
  std::set<unsigned> versions;
  for (const auto& f : corpus_files("gfx942_")) {
    auto co = parse(read_bytes(f));
    ASSERT_TRUE(co);
    versions.insert(co->version);
  }
  EXPECT_EQ(versions, (std::set<unsigned>{4, 5, 6}));
}

TEST(CorpusCodeObject, ImageSizeIsTheFileSize) {
  HG_REQUIRE_CORPUS();
  // Checked with llvm-readelf-16 -h before writing this: in every corpus file the
  // section header table is the last thing in the file (e_shoff + e_shnum * 64 ==
  // file size, e.g. 44576 + 16*64 = 45600), so the runtime's getElfSize is the file size.
  for (const auto& f : corpus_files()) {
    SCOPED_TRACE(f.filename().string());
    ByteVec bytes = read_bytes(f);
    EXPECT_EQ(get<uint64_t>(bytes, 40) + 64ull * get<uint16_t>(bytes, 60), bytes.size());
    auto size = elf_image_size(span(bytes));
    ASSERT_TRUE(size);
    EXPECT_EQ(*size, bytes.size());
    auto co = parse(bytes);
    ASSERT_TRUE(co);
    EXPECT_EQ(co->size, bytes.size());
  }
}

TEST(CorpusCodeObject, NoStructuralErrors) {
  HG_REQUIRE_CORPUS();
  // These are production kernels AITER ships and launches: no finding about the
  // object itself may be an error (target checks are separate).
  for (const auto& f : corpus_files()) {
    auto co = parse(read_bytes(f));
    ASSERT_TRUE(co);
    for (const auto& i : co->issues) {
      EXPECT_NE(code_info(i.code).severity, Severity::Error)
          << f.filename().string() << ": " << code_string(i.code) << " " << i.kernel << ": " << i.message;
    }
  }
}

// ---- hipcc-built code objects ------------------------------------------------------

TEST(HipccCodeObject, FeatureBitsFromEFlags) {
  HG_REQUIRE_APP(path, "vector_add_multi.hipfb");
  HG_REQUIRE_APP(exe, "vector_add_multi");
  // The .hipfb has gfx90a without suffix and gfx1030; e_flags read with llvm-readelf:
  // gfx90a 0x53F (xnack any, sramecc any), gfx1030 0x36 (no features).
  ByteVec file = read_bytes(path);
  auto gfx90a = parse(entry_payload(file, "hipv4-amdgcn-amd-amdhsa--gfx90a"));
  ASSERT_TRUE(gfx90a);
  EXPECT_EQ(gfx90a->e_flags, 0x53fu);
  EXPECT_EQ(gfx90a->target.str(), "gfx90a");
  EXPECT_EQ(gfx90a->target.xnack, Feature::Any);
  EXPECT_EQ(gfx90a->version, 4u);
  ASSERT_EQ(gfx90a->kernels.size(), 1u);
  EXPECT_EQ(gfx90a->kernels[0].name, "_Z10vector_addPKfS0_Pfi");
  EXPECT_EQ(gfx90a->kernels[0].wavefront_size, 64u);
  // Kernel arguments as in the source: three pointers and an int (llvm-readelf: 28-byte kernarg segment).
  EXPECT_EQ(gfx90a->kernels[0].kernarg_segment_size, 28u);
  ASSERT_GE(gfx90a->kernels[0].args.size(), 4u);
  EXPECT_EQ(gfx90a->kernels[0].args[0].value_kind, "global_buffer");
  EXPECT_EQ(gfx90a->kernels[0].args[3].value_kind, "by_value");
  auto gfx1030 = parse(entry_payload(file, "hipv4-amdgcn-amd-amdhsa--gfx1030"));
  ASSERT_TRUE(gfx1030);
  EXPECT_EQ(gfx1030->target.str(), "gfx1030");
  EXPECT_EQ(gfx1030->target.xnack, Feature::Unsupported);
  EXPECT_EQ(gfx1030->target.sramecc, Feature::Unsupported);
  EXPECT_TRUE(gfx1030->issues.empty());
}

TEST(HipccCodeObject, XnackSettingsFromEFlags) {
  HG_REQUIRE_APP(multi, "vector_add_multi");
  HG_REQUIRE_APP(on, "vector_add_xnack_on");
  // From .hip_fatbin: gfx90a:xnack- has e_flags 0x63F, gfx90a:xnack+ 0x73F (llvm-readelf on the extracted entries).
  auto r = check_file(multi, {});
  ASSERT_EQ(r.images.size(), 1u);
  bool seen = false;
  for (const auto& c : r.images[0].code_objects) {
    if (c.entry != "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-") continue;
    seen = true;
    EXPECT_EQ(c.co.e_flags, 0x63fu);
    EXPECT_EQ(c.co.target.xnack, Feature::Off);
    EXPECT_EQ(c.co.target.sramecc, Feature::Any);
    EXPECT_EQ(c.co.target.str(), "gfx90a:xnack-");
  }
  EXPECT_TRUE(seen);
  auto r2 = check_file(on, {});
  ASSERT_EQ(r2.images.size(), 1u);
  ASSERT_EQ(r2.images[0].code_objects.size(), 1u);
  EXPECT_EQ(r2.images[0].code_objects[0].co.e_flags, 0x73fu);
  EXPECT_EQ(r2.images[0].code_objects[0].co.target.str(), "gfx90a:xnack+");
}

// ---- Crafted code objects -------------------------------------------------------------

TEST(CraftedCodeObject, BuilderOutputIsClean) {
  // The builder's default object must parse without findings, or the tests below mean nothing.
  ByteVec v = make_code_object({});
  auto co = parse(v);
  ASSERT_TRUE(co) << co.error().message;
  EXPECT_EQ(co->target.str(), "gfx942");
  EXPECT_EQ(co->version, 5u);
  ASSERT_EQ(co->kernels.size(), 1u);
  EXPECT_EQ(co->kernels[0].name, "k");
  ASSERT_TRUE(co->kernels[0].descriptor);
  EXPECT_TRUE(co->device_functions.empty());
  for (const auto& i : co->issues) ADD_FAILURE() << code_string(i.code) << " " << i.kernel << ": " << i.message;
  EXPECT_EQ(co->size, v.size());
}

TEST(CraftedCodeObject, TruncatedIsHG106) {
  ByteVec v = make_code_object({});
  for (size_t n : {size_t(0), size_t(4), size_t(63), size_t(64), v.size() / 2, v.size() - 1}) {
    auto r = parse_code_object(Bytes(v.data(), n));
    ASSERT_FALSE(r) << n << " bytes accepted";
    EXPECT_EQ(r.error().code, Code::kMalformedElf) << n << " bytes: " << r.error().message;
  }
}

TEST(CraftedCodeObject, TruncatedCorpusFileIsHG106) {
  HG_REQUIRE_CORPUS();
  ByteVec v = read_bytes(corpus_dir() / "gfx942_pa_a16w8_f16.co");
  auto r = parse_code_object(Bytes(v.data(), v.size() - 100));  // section headers cut off
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kMalformedElf);
}

TEST(CraftedCodeObject, WrongMachineIsHG106) {
  CodeObjectSpec s;
  s.machine = 62;  // EM_X86_64
  auto r = parse(make_code_object(s));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kMalformedElf);
  EXPECT_NE(r.error().message.find("224"), std::string::npos) << r.error().message;
}

TEST(CraftedCodeObject, WrongOsAbiIsHG106) {
  for (uint8_t abi : {uint8_t(0), uint8_t(65), uint8_t(66)}) {  // SYSV, AMDGPU_PAL, AMDGPU_MESA3D
    CodeObjectSpec s;
    s.osabi = abi;
    auto r = parse(make_code_object(s));
    ASSERT_FALSE(r) << "OSABI " << int(abi);
    EXPECT_EQ(r.error().code, Code::kMalformedElf);
  }
}

TEST(CraftedCodeObject, NotElf64LsbIsHG106) {
  ByteVec v = make_code_object({});
  v[4] = 1;  // ELFCLASS32
  auto r = parse(v);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kMalformedElf);
  v = make_code_object({});
  v[5] = 2;  // big endian
  r = parse(v);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kMalformedElf);
  v = make_code_object({});
  put<uint64_t>(v, 40, v.size() - 10);  // section header table runs off the end
  r = parse(v);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kMalformedElf);
}

TEST(CraftedCodeObject, UnknownMachIsHG108) {
  CodeObjectSpec s;
  s.mach = 0x0fe;  // not an EF_AMDGPU_MACH value in llvm/BinaryFormat/ELF.h
  ASSERT_EQ(find_processor_by_mach(0x0fe), nullptr);
  auto r = parse(make_code_object(s));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kUnknownProcessor);
  EXPECT_NE(r.error().message.find("0x0fe"), std::string::npos) << r.error().message;
  // Through the checker: structural error, every verdict fails.
  auto report = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
  EXPECT_TRUE(has_code(report.diagnostics, Code::kUnknownProcessor)) << dump(report.diagnostics);
  EXPECT_FALSE(report.ok());
}

TEST(CraftedCodeObject, NoMetadataNoteIsHG401) {
  CodeObjectSpec s;
  s.note = false;
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co) << co.error().message;
  EXPECT_TRUE(has_issue(*co, Code::kNoMetadata));
  EXPECT_TRUE(co->kernels.empty());
  // The .kd symbol is still there: a kernel nobody can launch.
  EXPECT_TRUE(has_issue(*co, Code::kKernelWithoutMetadata));
  auto report = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
  EXPECT_TRUE(has_code(report.diagnostics, Code::kNoMetadata));
  EXPECT_FALSE(report.structurally_ok);
  EXPECT_FALSE(report.ok());
}

TEST(CraftedCodeObject, GarbageMetadataIsHG402) {
  CodeObjectSpec s;
  s.raw_metadata = std::string("\xc1\xc1\xc1 not msgpack", 15);  // 0xc1 is never used in MessagePack
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co) << co.error().message;
  EXPECT_TRUE(has_issue(*co, Code::kBadMetadata));
  EXPECT_TRUE(co->kernels.empty());
}

TEST(CraftedCodeObject, MetadataWithoutKernelListIsHG402) {
  CodeObjectSpec s;
  s.raw_metadata = std::string("\x91\x01", 2);  // msgpack [1]: root is not a map
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_TRUE(has_issue(*co, Code::kBadMetadata));
  s.raw_metadata = std::string("\x81\xa1x\x01", 4);  // {"x": 1}: no amdhsa.kernels
  co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_TRUE(has_issue(*co, Code::kBadMetadata));
}

// One NT_AMDGPU_METADATA note per kernel, as Tensile writes rocBLAS's and
// hipBLASLt's code objects: comgr merges them (comgr-metadata.cpp mergeNoteRecords).
namespace {
// The metadata of `spec` with only kernel `i` in amdhsa.kernels.
std::string note_of_kernel(CodeObjectSpec spec, size_t i) {
  for (size_t j = 0; j < spec.kernels.size(); ++j) spec.kernels[j].metadata = j == i;
  return metadata_blob(spec);
}
CodeObjectSpec three_kernels() {
  CodeObjectSpec s;
  s.kernels = {KernelSpec{.name = "k0"}, KernelSpec{.name = "k1", .lds = 4096}, KernelSpec{.name = "k2", .sgpr = 40}};
  return s;
}
}  // namespace

TEST(CraftedCodeObject, EveryMetadataNoteIsMerged) {
  CodeObjectSpec s = three_kernels();
  s.raw_metadata = note_of_kernel(s, 0);
  s.extra_notes = {note_of_kernel(s, 1), note_of_kernel(s, 2)};
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co) << co.error().message;
  ASSERT_EQ(co->kernels.size(), 3u);
  EXPECT_EQ(co->kernels[0].name, "k0");
  EXPECT_EQ(co->kernels[1].name, "k1");
  EXPECT_EQ(co->kernels[1].group_segment_fixed_size, 4096u);
  EXPECT_EQ(co->kernels[2].sgpr_count, 40u);
  EXPECT_TRUE(co->kernels_without_metadata.empty());
  EXPECT_TRUE(co->issues.empty()) << code_string(co->issues[0].code) << " " << co->issues[0].message;
}

TEST(CraftedCodeObject, NoteWithAnotherVersionIsNotMerged) {
  CodeObjectSpec s = three_kernels();
  CodeObjectSpec v4 = s;
  v4.version = 4;  // amdhsa.version [1, 1] beside the others' [1, 2]
  s.raw_metadata = note_of_kernel(s, 0);
  s.extra_notes = {note_of_kernel(v4, 1), note_of_kernel(s, 2)};
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co) << co.error().message;
  ASSERT_EQ(co->kernels.size(), 2u);
  EXPECT_EQ(co->kernels[1].name, "k2");
  ASSERT_EQ(co->kernels_without_metadata, std::vector<std::string>{"k1"});
  bool said = false;
  for (const auto& i : co->issues)
    said |= i.code == Code::kBadMetadata && i.message.find("note 2 of 3") != std::string::npos &&
            i.message.find("amdhsa.version differs") != std::string::npos && i.severity == Severity::Warning;
  EXPECT_TRUE(said);
}

TEST(CraftedCodeObject, BrokenLaterNoteIsHG402AndTheOthersStay) {
  CodeObjectSpec s = three_kernels();
  s.raw_metadata = note_of_kernel(s, 0);
  s.extra_notes = {std::string("\xc1\xc1", 2), note_of_kernel(s, 2)};
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co) << co.error().message;
  ASSERT_EQ(co->kernels.size(), 2u);
  ASSERT_EQ(co->issues.size(), 2u) << "HG402 for the note, HG407 for k1";
  EXPECT_EQ(co->issues[0].code, Code::kBadMetadata);
  EXPECT_EQ(co->issues[0].severity, Severity::Warning) << "comgr still reads the other notes";
  EXPECT_EQ(co->issues[1].code, Code::kKernelWithoutMetadata);
  // The first note unreadable: the second becomes the document, as in comgr.
  s.raw_metadata = std::string("\xc1\xc1", 2);
  s.extra_notes = {note_of_kernel(s, 1), note_of_kernel(s, 2)};
  co = parse(make_code_object(s));
  ASSERT_TRUE(co) << co.error().message;
  ASSERT_EQ(co->kernels.size(), 2u);
  EXPECT_EQ(co->kernels[0].name, "k1");
  ASSERT_EQ(co->issues.size(), 2u) << "HG402 warning, HG407 for k0";
  // Every note unreadable: the runtime has no metadata (an error).
  s.extra_notes = {std::string("\xc1", 1)};
  co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_TRUE(co->kernels.empty());
  for (const auto& i : co->issues)
    if (i.code == Code::kBadMetadata) EXPECT_FALSE(i.severity) << "the code's own severity (error)";
}

TEST(CraftedCodeObject, MissingRequiredKernelKeyIsHG403) {
  CodeObjectSpec s;
  s.kernels[0].name = "needs_lds";
  s.kernels[0].omit = {".group_segment_fixed_size"};
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  ASSERT_TRUE(has_issue(*co, Code::kBadKernelMetadata));
  for (const auto& i : co->issues)
    if (i.code == Code::kBadKernelMetadata) {
      EXPECT_EQ(i.kernel, "needs_lds");
      EXPECT_NE(i.message.find(".group_segment_fixed_size"), std::string::npos) << i.message;
    }
  // The kernel is not guessed at: it is left out of the kernel list.
  EXPECT_TRUE(co->kernels.empty());
}

// Hand-encoded MessagePack (fixmap/fixarray/fixstr/uint32), for documents a
// well-behaved writer cannot produce: repeated keys, wrong types, cut ends.
struct Mp {
  std::string b;
  Mp& map(unsigned n) { return b += char(0x80 | n), *this; }  // n < 16
  Mp& arr(unsigned n) { return b += char(0x90 | n), *this; }
  Mp& str(std::string_view v) { return b += char(0xa0 | v.size()), b += v, *this; }  // size < 32
  Mp& u(uint32_t v) {
    b += char(0xce);
    for (int i = 3; i >= 0; --i) b += char(v >> (8 * i));
    return *this;
  }
};

// The root map and one kernel map: the ten required entries (.name, .symbol and
// the eight integers), then `extra_fields` more that `extra` appends.
std::string one_kernel_doc(unsigned extra_fields, const std::function<void(Mp&)>& extra,
                           const char* vgpr_key = ".vgpr_count") {
  Mp m;
  m.map(2).str("amdhsa.target").str("amdgcn-amd-amdhsa--gfx942").str("amdhsa.kernels").arr(1);
  m.map(10 + extra_fields).str(".name").str("k").str(".symbol").str("k.kd");
  m.str(".group_segment_fixed_size").u(1024).str(".private_segment_fixed_size").u(0);
  m.str(".kernarg_segment_size").u(16).str(".kernarg_segment_align").u(8).str(".wavefront_size").u(64);
  m.str(".sgpr_count").u(16).str(vgpr_key).u(8).str(".max_flat_workgroup_size").u(256);
  extra(m);
  return m.b;
}

TEST(CraftedCodeObject, StreamingMetadataReader) {
  CodeObjectSpec s;  // kernel "k" with its k.kd descriptor
  auto parse_doc = [&](const std::string& doc) {
    s.raw_metadata = doc;
    auto co = parse(make_code_object(s));
    EXPECT_TRUE(co) << co.error().message;
    return co ? *co : CodeObject{};
  };
  // Unknown keys, nested containers included, are skipped; arguments are read.
  CodeObject co = parse_doc(one_kernel_doc(2, [](Mp& m) {
    m.str(".vendor_x").map(1).str("deep").arr(2).u(1).map(1).str("y").arr(0);
    m.str(".args").arr(1).map(4).str(".offset").u(0).str(".size").u(8).str(".value_kind").str("global_buffer");
    m.str(".name").str("out");
  }));
  ASSERT_EQ(co.kernels.size(), 1u);
  EXPECT_EQ(co.metadata_target, "amdgcn-amd-amdhsa--gfx942");
  EXPECT_EQ(co.kernels[0].group_segment_fixed_size, 1024u);
  ASSERT_EQ(co.kernels[0].args.size(), 1u);
  EXPECT_EQ(co.kernels[0].args[0].value_kind, "global_buffer");
  EXPECT_EQ(co.kernels[0].args[0].name, "out");
  EXPECT_FALSE(has_issue(co, Code::kBadMetadata));
  EXPECT_FALSE(has_issue(co, Code::kBadKernelMetadata));

  // Cut anywhere inside the document: the whole document is rejected, no kernel survives.
  std::string full = one_kernel_doc(0, [](Mp&) {});
  for (size_t cut : {full.size() - 1, full.size() - 5, full.size() / 2, size_t{1}}) {
    co = parse_doc(full.substr(0, cut));
    EXPECT_TRUE(has_issue(co, Code::kBadMetadata)) << "cut at " << cut;
    EXPECT_TRUE(co.kernels.empty()) << "cut at " << cut;
  }

  // A key the checks read, given twice (which value would the runtime use?): HG402.
  co = parse_doc(one_kernel_doc(1, [](Mp& m) { m.str(".sgpr_count").u(99); }));
  EXPECT_TRUE(has_issue(co, Code::kBadMetadata));
  EXPECT_TRUE(co.kernels.empty());

  // A required integer missing (misspelt key) or of the wrong type: HG403 naming
  // it, and the kernel is not guessed at.
  co = parse_doc(one_kernel_doc(
      0, [](Mp&) {}, ".vgpr_countX"));
  ASSERT_TRUE(has_issue(co, Code::kBadKernelMetadata));
  co = parse_doc([] {
    std::string d = one_kernel_doc(0, [](Mp&) {});
    // Replace the uint32 8 after ".vgpr_count" by the string "many".
    std::string key = std::string(1, char(0xa0 | 11)) + ".vgpr_count";
    size_t at = d.find(key) + key.size();
    return d.substr(0, at) + Mp().str("many").b + d.substr(at + 5);
  }());
  EXPECT_TRUE(co.kernels.empty());
  bool named = false;
  for (const auto& i : co.issues)
    named = named || (i.code == Code::kBadKernelMetadata && i.kernel == "k" &&
                      i.message.find(".vgpr_count (not an integer)") != std::string::npos);
  EXPECT_TRUE(named);

  // An argument without .value_kind: HG403 naming the argument.
  co = parse_doc(one_kernel_doc(1, [](Mp& m) { m.str(".args").arr(1).map(2).str(".offset").u(0).str(".size").u(8); }));
  EXPECT_TRUE(co.kernels.empty());
  named = false;
  for (const auto& i : co.issues)
    named = named || (i.code == Code::kBadKernelMetadata &&
                      i.message.find("argument 0 .offset/.size/.value_kind") != std::string::npos);
  EXPECT_TRUE(named);
}

TEST(CraftedCodeObject, CodeObjectVersionOutsideV4ToV6IsHG109) {
  for (unsigned v : {3u, 7u}) {
    CodeObjectSpec s;
    s.version = v;
    auto co = parse(make_code_object(s));
    ASSERT_TRUE(co) << co.error().message;
    EXPECT_EQ(co->version, v);
    EXPECT_TRUE(has_issue(*co, Code::kCodeObjectVersion)) << "v" << v;
  }
  for (unsigned v : {4u, 5u, 6u}) {
    CodeObjectSpec s;
    s.version = v;
    auto co = parse(make_code_object(s));
    ASSERT_TRUE(co);
    EXPECT_FALSE(has_issue(*co, Code::kCodeObjectVersion)) << "v" << v;
  }
}

TEST(CraftedCodeObject, GenericTargetBelowV6IsHG109) {
  // AMDGPUUsage "Generic Processors": generic code objects require code object v6.
  CodeObjectSpec s;
  s.mach = 0x05f;  // gfx9-4-generic
  s.version = 5;
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_EQ(co->target.processor, "gfx9-4-generic");
  EXPECT_TRUE(has_issue(*co, Code::kCodeObjectVersion));
}

TEST(CraftedCodeObject, GenericVersionFromEFlags) {
  CodeObjectSpec s;
  s.mach = 0x05f;
  s.version = 6;
  s.generic_version = 1;
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_EQ(co->generic_version, 1u);
  EXPECT_FALSE(has_issue(*co, Code::kCodeObjectVersion));
  EXPECT_NE(describe_target(*co).find("gfx9-4-generic"), std::string::npos);
}

TEST(CraftedCodeObject, DescriptorDisagreesWithMetadataIsHG404) {
  CodeObjectSpec s;
  s.kernels[0].name = "liar";
  s.kernels[0].lds = 1024;
  s.kernels[0].kd_lds = 2048;
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  ASSERT_TRUE(has_issue(*co, Code::kDescriptorMismatch));
  EXPECT_EQ(code_info(Code::kDescriptorMismatch).severity, Severity::Warning);
  ASSERT_TRUE(co->kernels[0].descriptor);
  EXPECT_EQ(co->kernels[0].descriptor->group_segment_fixed_size, 2048u);
  EXPECT_EQ(co->kernels[0].group_segment_fixed_size, 1024u);
}

TEST(CraftedCodeObject, KernargLayoutIsHG405) {
  {
    CodeObjectSpec s;  // argument ends beyond the 16-byte kernarg segment
    s.kernels[0].args = {{"a", "global_buffer", 0, 8}, {"b", "global_buffer", 16, 8}};
    auto co = parse(make_code_object(s));
    ASSERT_TRUE(co);
    EXPECT_TRUE(has_issue(*co, Code::kKernargLayout)) << "argument beyond the segment";
  }
  {
    CodeObjectSpec s;  // overlapping arguments
    s.kernels[0].args = {{"a", "global_buffer", 0, 8}, {"b", "by_value", 4, 4}};
    auto co = parse(make_code_object(s));
    ASSERT_TRUE(co);
    EXPECT_TRUE(has_issue(*co, Code::kKernargLayout)) << "overlap";
  }
  {
    CodeObjectSpec s;  // alignment not a power of two
    s.kernels[0].kernarg_align = 12;
    auto co = parse(make_code_object(s));
    ASSERT_TRUE(co);
    EXPECT_TRUE(has_issue(*co, Code::kKernargLayout)) << "align 12";
  }
}

TEST(CraftedCodeObject, MetadataKernelWithoutDescriptorIsHG406) {
  CodeObjectSpec s;
  s.kernels[0].name = "ghost";
  s.kernels[0].descriptor = false;
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  ASSERT_TRUE(has_issue(*co, Code::kDescriptorMissing));
  EXPECT_FALSE(co->kernels.at(0).descriptor);
}

TEST(CraftedCodeObject, DescriptorWithoutMetadataIsHG407) {
  CodeObjectSpec s;
  KernelSpec hidden;
  hidden.name = "unlisted";
  hidden.metadata = false;
  s.kernels.push_back(hidden);
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_TRUE(has_issue(*co, Code::kKernelWithoutMetadata));
  EXPECT_EQ(co->kernels_without_metadata, std::vector<std::string>{"unlisted"});
  ASSERT_EQ(co->kernels.size(), 1u);
  EXPECT_EQ(co->kernels[0].name, "k");
}

TEST(CraftedCodeObject, DeviceFunctionsAreNotKernels) {
  CodeObjectSpec s;
  s.device_functions = {"_Z5scalef"};
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_EQ(co->device_functions, std::vector<std::string>{"_Z5scalef"});
  ASSERT_EQ(co->kernels.size(), 1u);
}

TEST(CraftedCodeObject, DynamicStackIsHG305Note) {
  CodeObjectSpec s;
  s.kernels[0].uses_dynamic_stack = true;
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_TRUE(has_issue(*co, Code::kDynamicStack));
  EXPECT_EQ(code_info(Code::kDynamicStack).severity, Severity::Note);
  // A note does not make the image fail.
  auto report = check_image(span(make_code_object(s)), "crafted", {target("gfx942")});
  EXPECT_TRUE(has_code(report.diagnostics, Code::kDynamicStack));
  EXPECT_TRUE(report.ok()) << dump(report.diagnostics);
}

TEST(CraftedCodeObject, WorkgroupSizeIsHG304) {
  for (uint64_t bad : {uint64_t(0), uint64_t(2048)}) {
    CodeObjectSpec s;
    s.kernels[0].max_flat = bad;
    auto co = parse(make_code_object(s));
    ASSERT_TRUE(co);
    EXPECT_TRUE(has_issue(*co, Code::kWorkgroupSize)) << "max_flat_workgroup_size " << bad;
  }
  CodeObjectSpec s;
  s.kernels[0].max_flat = 256;
  s.kernels[0].reqd = std::array<uint64_t, 3>{32, 16, 1};  // 512 threads > 256
  auto co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_TRUE(has_issue(*co, Code::kWorkgroupSize));
  s.kernels[0].reqd = std::array<uint64_t, 3>{16, 16, 1};  // exactly 256: fine
  co = parse(make_code_object(s));
  ASSERT_TRUE(co);
  EXPECT_FALSE(has_issue(*co, Code::kWorkgroupSize));
}
