// Kernel databases on hostile input: Tensile .dat MessagePack of wrong types, huge counts, truncated,
// nested too deep; database directories missing their files (HG701, HG702).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <archive.h>

#include "archive_writer.h"
#include "hipguard/check_paths.h"
#include "hipguard/kernel_database.h"
#include "hipguard/target.h"
#include "inputs/archive.h"
#include "test_util.h"

using namespace hipguard;

namespace {

// A minimal MessagePack writer (fixstr/str8, fixmap/map16, fixarray/array16/array32, true/false).
struct Mp {
  std::string b;
  Mp& str(std::string_view s) {
    if (s.size() < 32) b += char(0xa0 | s.size());
    else b += char(0xd9), b += char(s.size());
    b += s;
    return *this;
  }
  Mp& map(size_t n) {
    if (n < 16) b += char(0x80 | n);
    else b += char(0xde), b += char(n >> 8), b += char(n & 0xff);
    return *this;
  }
  Mp& arr(uint32_t n) {
    if (n < 16) b += char(0x90 | n);
    else b += char(0xdd), b += char(n >> 24), b += char(n >> 16), b += char(n >> 8), b += char(n);
    return *this;
  }
  Mp& boolean(bool v) {
    b += char(v ? 0xc3 : 0xc2);
    return *this;
  }
  Mp& integer(uint8_t v) {
    b += char(0xcc), b += char(v);
    return *this;
  }
};

std::string valid_placeholder_dat() {
  Mp m;
  m.map(2).str("solutions").arr(2);
  m.map(3)
      .str("name")
      .str("Cijk_A")
      .str("index")
      .integer(7)
      .str("sizeMapping")
      .map(1)
      .str("sourceKernel")
      .boolean(true);
  m.map(2).str("name").str("Cijk_B_solution").str("kernelName").str("Cijk_B");
  m.str("library").map(1).str("type").str("Problem");
  return m.b;
}

std::string valid_lazy_dat() {
  Mp m;
  m.map(2).str("solutions").arr(0).str("library").map(2).str("type").str("Hardware").str("rows").arr(3);
  m.map(2).str("type").str("Placeholder").str("value").str("TensileLibrary_X_gfx90a");
  m.map(2).str("value").str("TensileLibrary_Y_gfx90a").str("type").str("Placeholder");  // keys in any order
  m.map(2).str("type").str("Placeholder").str("value").str("TensileLibrary_X_gfx90a");  // a repeat
  return m.b;
}

TEST(KernelDatabase, ReadsSolutionsAsTensileNamesThem) {
  auto s = read_tensile_solutions(valid_placeholder_dat());
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].kernel, "Cijk_A");  // rocBLAS: "name"
  EXPECT_TRUE((*s)[0].source_kernel);
  EXPECT_EQ((*s)[1].kernel, "Cijk_B");  // hipBLASLt: "kernelName"
  EXPECT_FALSE((*s)[1].source_kernel);
}

TEST(KernelDatabase, ReadsPlaceholdersOnceInFileOrder) {
  auto p = read_tensile_placeholders(valid_lazy_dat());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(*p, (std::vector<std::string>{"TensileLibrary_X_gfx90a", "TensileLibrary_Y_gfx90a"}));
}

TEST(KernelDatabase, EveryTruncationFailsCleanly) {
  std::string sol = valid_placeholder_dat(), lazy = valid_lazy_dat();
  // Cut anywhere before the value of "library" (which is not read: kernel_database.h).
  for (size_t n = 0; n < sol.find("\xa7library") + 8; ++n) {
    auto s = read_tensile_solutions(sol.substr(0, n));
    ASSERT_FALSE(s) << "prefix " << n;
    EXPECT_EQ(s.error().code, Code::kDatabaseMalformed) << "prefix " << n;
    EXPECT_FALSE(s.error().message.empty()) << "prefix " << n;
  }
  for (size_t n = 0; n < lazy.size(); ++n) EXPECT_FALSE(read_tensile_placeholders(lazy.substr(0, n))) << "prefix " << n;
}

TEST(KernelDatabase, WrongTypesAreRejected) {
  auto why = [](const Result<std::vector<TensileSolution>>& r) {
    return r ? std::string("(read)") : r.error().message;
  };
  EXPECT_NE(why(read_tensile_solutions(Mp().arr(0).b)).find("not a map"), std::string::npos);  // root not a map
  EXPECT_NE(why(read_tensile_solutions(Mp().map(1).str("solutions").str("x").b)).find("not an array"),
            std::string::npos);
  EXPECT_NE(
      why(read_tensile_solutions(Mp().map(1).str("solutions").arr(1).map(1).str("name").integer(3).b)).find("\"name\""),
      std::string::npos);
  EXPECT_NE(why(read_tensile_solutions(Mp().map(1).integer(1).str("x").b)).find("key"),
            std::string::npos);                                               // key not a string
  EXPECT_FALSE(read_tensile_solutions(Mp().map(1).str("library").map(0).b));  // no solutions
  Mp ph;
  ph.map(1).str("library").map(1).str("type").str("Placeholder");  // no value
  EXPECT_FALSE(read_tensile_placeholders(ph.b));
  EXPECT_FALSE(read_tensile_placeholders("\xc1"));  // never-used type byte
}

TEST(KernelDatabase, HugeCountsFailWithoutAllocating) {
  // 4 billion solutions announced, none present: each one read fails at the end of the data (a reserve of
  // that many would throw std::bad_alloc out of the reader).
  EXPECT_FALSE(read_tensile_solutions(Mp().map(1).str("solutions").arr(0xffffffffu).b));
  EXPECT_FALSE(read_tensile_placeholders(Mp().map(1).str("library").arr(0xffffffffu).b));
  // A string claiming more bytes than there are.
  Mp big;
  big.map(1).str("solutions").arr(1).map(1).str("name");
  big.b += "\xdb\xff\xff\xff\xff";
  EXPECT_FALSE(read_tensile_solutions(big.b));
}

TEST(KernelDatabase, DeepNestingStopsAtTheLimit) {
  Mp m;
  m.map(1).str("library");
  for (int i = 0; i < 100000; ++i) m.arr(1);
  auto p = read_tensile_placeholders(m.b);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("deeper"), std::string::npos) << p.error().message;
  Mp n;
  n.map(1).str("other");
  for (int i = 0; i < 100000; ++i) n.arr(1);
  EXPECT_FALSE(read_tensile_solutions(n.b));  // skipped subtrees are bounded too
}

TEST(KernelDatabase, ExtOpEntriesOfOneProcessor) {
  Mp m;
  m.map(2).str("gfx908").map(0).str("gfx90a").map(1).str("Softmax").map(1).str("S").arr(2);
  m.map(3).str("func_name").str("Softmax_S").str("co_path").str("extop_gfx90a.co").str("num_workitems").integer(255);
  m.map(2).str("func_name").str("Softmax_T").str("co_path").str("extop_gfx90a.co");
  auto e = read_extop_entries(m.b, "gfx90a");
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_EQ(e->size(), 2u);
  EXPECT_EQ((*e)[1].kernel, "Softmax_T");
  EXPECT_EQ((*e)[1].code_object, "extop_gfx90a.co");
  auto other = read_extop_entries(m.b, "gfx1100");  // not shipped for it: nothing
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->empty());
  for (size_t n = 0; n < m.b.size(); ++n) EXPECT_FALSE(read_extop_entries(m.b.substr(0, n), "gfx90a")) << n;
  Mp bad;
  bad.map(1).str("gfx90a").map(1).str("AMax").map(1).str("S").arr(1).map(1).str("func_name").str("k");  // no co_path
  auto no_co = read_extop_entries(bad.b, "gfx90a");
  ASSERT_FALSE(no_co);
  EXPECT_NE(no_co.error().message.find("co_path"), std::string::npos) << no_co.error().message;
}

// A scratch directory removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "hg_kdb_XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  void write(const std::string& rel, const std::string& data) const {
    std::filesystem::create_directories((path / rel).parent_path());
    std::ofstream(path / rel, std::ios::binary) << data;
  }
};

std::vector<Code> codes(const DatabaseReport& r) {
  std::vector<Code> out;
  for (const auto& d : r.diagnostics) out.push_back(d.code);
  return out;
}

TEST(KernelDatabase, TensileDirectoryWithoutTheProcessorOrWithADamagedDatabase) {
  TempDir t;
  t.write("TensileLibrary_lazy_gfx90a.dat", valid_lazy_dat());
  t.write("TensileLibrary_X_gfx90a.dat", valid_placeholder_dat().substr(0, 20));  // truncated
  auto dbs = find_kernel_databases(t.path.string());
  ASSERT_EQ(dbs.size(), 1u);
  EXPECT_EQ(dbs[0].kind, DatabaseKind::Rocblas);
  auto gfx942 = *parse_target_id("gfx942"), gfx90a = *parse_target_id("gfx90a");
  DatabaseReport r = check_kernel_database(dbs[0], {gfx942});
  EXPECT_EQ(codes(r), (std::vector<Code>{Code::kDatabaseMissing, Code::kDatabaseChecked}));
  EXPECT_NE(r.diagnostics[0].message.find("rocBLAS error: Cannot read"), std::string::npos);
  // No gfx942 code object at all: HG214 says it once; HG701 adds the library's message as a note.
  EXPECT_EQ(r.diagnostics[0].severity, Severity::Note);
  t.write("TensileLibrary_X_gfx942.co", "not even ELF");  // rocBLAS's glob "*gfx942*co" now matches
  r = check_kernel_database(dbs[0], {gfx942});
  ASSERT_FALSE(r.diagnostics.empty());
  EXPECT_EQ(r.diagnostics[0].code, Code::kDatabaseMissing);
  EXPECT_EQ(r.diagnostics[0].severity, Severity::Error);
  std::filesystem::remove(t.path / "TensileLibrary_X_gfx942.co");
  r = check_kernel_database(dbs[0], {gfx90a});
  // The helper is missing (HG706), X.dat is damaged (HG702), Y.dat missing (HG703), then the summary.
  EXPECT_EQ(codes(r), (std::vector<Code>{Code::kDatabaseHelperMissing, Code::kDatabaseMalformed,
                                         Code::kDatabaseFileMissing, Code::kDatabaseChecked}));
}

// A lazy database cut after its first placeholder: the library loads nothing from it, so HG702 says it
// once and the placeholder read before the damage (X, whose .dat is missing: HG703) is not checked.
TEST(KernelDatabase, UnreadableLazyDatabaseChecksNoPlaceholder) {
  TempDir t;
  std::string lazy = valid_lazy_dat();
  size_t y = lazy.find("TensileLibrary_Y_gfx90a");
  ASSERT_NE(y, std::string::npos);
  ASSERT_NE(lazy.find("TensileLibrary_X_gfx90a"), std::string::npos);
  ASSERT_LT(lazy.find("TensileLibrary_X_gfx90a"), y);
  t.write("TensileLibrary_lazy_gfx90a.dat", lazy.substr(0, y));
  auto dbs = find_kernel_databases(t.path.string());
  ASSERT_EQ(dbs.size(), 1u);
  DatabaseReport r = check_kernel_database(dbs[0], {*parse_target_id("gfx90a")});
  EXPECT_EQ(codes(r),
            (std::vector<Code>{Code::kDatabaseHelperMissing, Code::kDatabaseMalformed, Code::kDatabaseChecked}));
  ASSERT_GE(r.diagnostics.size(), 2u);
  EXPECT_NE(r.diagnostics[1].message.find("cannot read this lazy Tensile database"), std::string::npos)
      << r.diagnostics[1].message;
}

// The kernel-database findings of check_paths over `path` for `target`: code, file and message with
// `strip` taken out.
std::vector<std::pair<Code, std::string>> database_findings(const std::string& path, const std::string& strip,
                                                            const std::string& target) {
  auto without = [&](std::string s) {
    for (size_t at; (at = s.find(strip)) != std::string::npos;) s.erase(at, strip.size());
    return s;
  };
  CheckPathsOptions o;
  o.targets = {*parse_target_id(target)};
  o.archives = &archive_reader();
  o.kernel_databases = kernel_database_step;
  CollectSink sink(false);
  check_paths({path}, o, sink);
  std::vector<std::pair<Code, std::string>> out;
  for (const auto& r : sink.reports)
    for (const auto& d : r.diagnostics)
      if (code_string(d.code).starts_with("HG70"))
        out.emplace_back(d.code, without(d.file) + ": " + without(d.message));
  return out;
}

// A Tensile library in a directory, a tar and a tar.gz: the same findings, named by member inside the
// archives. Its code objects: X's .co (gfx90a) lacks kernel Cijk_B (HG705), X's .hsaco is built for
// gfx942 (HG704); Y's .dat (HG703) and the helper (HG706) are missing.
TEST(KernelDatabase, DatabasesInsideArchivesAsInstalled) {
  hgtest::CodeObjectSpec gfx90a;
  gfx90a.mach = 0x03f;
  gfx90a.target = "amdgcn-amd-amdhsa--gfx90a";
  gfx90a.kernels[0].name = "Cijk_A_other";
  auto str = [](const hgtest::ByteVec& v) { return std::string(v.begin(), v.end()); };
  hgtest::ArchiveMembers files{{"lib/TensileLibrary_lazy_gfx90a.dat", valid_lazy_dat()},
                               {"lib/TensileLibrary_X_gfx90a.dat", valid_placeholder_dat()},
                               {"lib/TensileLibrary_X_gfx90a.co", str(hgtest::make_code_object(gfx90a))},
                               {"lib/TensileLibrary_X_gfx90a.hsaco", str(hgtest::make_code_object({}))},
                               {"lib/TensileLibrary_lazy_gfx942.dat", "not read for gfx90a"}};
  TempDir t;
  for (const auto& [name, bytes] : files) t.write("dir/" + name, bytes);
  auto installed = database_findings((t.path / "dir/lib").string(), (t.path / "dir/").string(), "gfx90a");
  std::vector<Code> codes;
  for (const auto& [code, what] : installed) codes.push_back(code);
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(codes,
            (std::vector<Code>{Code::kDatabaseFileMissing, Code::kDatabaseCodeObjectMismatch,
                               Code::kDatabaseKernelMissing, Code::kDatabaseHelperMissing, Code::kDatabaseChecked}));
  for (int filter : {ARCHIVE_FILTER_NONE, ARCHIVE_FILTER_GZIP}) {
    std::string tar = (t.path / ("lib.tar" + std::to_string(filter))).string();
    std::ofstream(tar, std::ios::binary) << hgtest::write_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, filter, files);
    EXPECT_EQ(database_findings(tar, tar + "!", "gfx90a"), installed) << filter;
  }

  // Files reached through links: X's .dat a symlink to the same name in another directory (a versioned
  // install), its .co a hard link; the installed tree follows both, and so does the archive.
  std::vector<hgtest::TarEntry> linked;
  for (const auto& [name, bytes] : files) {
    if (name == "lib/TensileLibrary_X_gfx90a.dat") linked.push_back({"v1/TensileLibrary_X_gfx90a.dat", bytes});
    else if (name == "lib/TensileLibrary_X_gfx90a.co") linked.push_back({"lib/X.co", bytes});
    else linked.push_back({name, bytes});
  }
  linked.push_back({"lib/TensileLibrary_X_gfx90a.dat", "", 0120000, "../v1/TensileLibrary_X_gfx90a.dat"});
  linked.push_back({"lib/TensileLibrary_X_gfx90a.co", "", 0100000, "", "lib/X.co"});
  std::string tar = (t.path / "linked.tar").string();
  std::ofstream(tar, std::ios::binary) << hgtest::write_tar(linked);
  auto in_lib = database_findings(tar, tar + "!", "gfx90a");  // v1/ is a database directory of its own too
  std::erase_if(in_lib, [](const auto& f) { return f.second.rfind("lib", 0) != 0; });
  EXPECT_EQ(in_lib, installed);

  // An archive cut short (HG113) says so; its databases are not reported as missing what was not read.
  // (cut inside X's .co: both .dat files were read, the code objects were not)
  std::string whole = hgtest::write_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_NONE, files);
  size_t co = whole.find("lib/TensileLibrary_X_gfx90a.co");
  ASSERT_NE(co, std::string::npos);
  std::string cut = (t.path / "cut.tar").string();
  std::ofstream(cut, std::ios::binary) << whole.substr(0, co + 1024);
  EXPECT_EQ(database_findings(cut, cut + "!", "gfx90a"), (std::vector<std::pair<Code, std::string>>{}));

  // No temporary copy can be made: HG119 says the databases went unchecked, instead of HG70x.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string saved = tmpdir ? tmpdir : "";
  setenv("TMPDIR", (t.path / "no such directory").c_str(), 1);
  CheckPathsOptions o;
  o.targets = {*parse_target_id("gfx90a")};
  o.archives = &archive_reader();
  o.kernel_databases = kernel_database_step;
  CollectSink sink(false);
  check_paths({tar}, o, sink);
  tmpdir ? setenv("TMPDIR", saved.c_str(), 1) : unsetenv("TMPDIR");
  std::vector<Code> said;
  for (const auto& r : sink.reports)
    for (const auto& d : r.diagnostics)
      if (code_string(d.code).starts_with("HG70") || d.code == Code::kArchiveDatabasesUnchecked) said.push_back(d.code);
  EXPECT_EQ(said, std::vector<Code>{Code::kArchiveDatabasesUnchecked});
}

TEST(KernelDatabase, AiterListWithoutItsColumns) {
  TempDir t;
  t.write("hsa/gfx942/fmoe/fmoe.csv", "// a comment line\nkernel,file\nk,x.co\n");
  t.write("hsa/gfx942/pa/pa.csv", "knl_name,co_name # trailing comment\n_ZN5aiter1kE,missing.co\n");
  auto dbs = find_kernel_databases(t.path.string());
  ASSERT_EQ(dbs.size(), 1u);
  EXPECT_EQ(dbs[0].kind, DatabaseKind::Aiter);
  DatabaseReport r = check_kernel_database(dbs[0], {});  // no target: every processor shipped (gfx942)
  EXPECT_EQ(codes(r),
            (std::vector<Code>{Code::kDatabaseMalformed, Code::kDatabaseFileMissing, Code::kDatabaseChecked}));
  ASSERT_EQ(r.targets.size(), 1u);
  EXPECT_EQ(r.targets[0].target, "gfx942");
}

// Real AITER code objects (the corpus) under hsa/gfx942/: a row naming a kernel the file lacks (HG705), a
// gfx950 code object where gfx942's is expected (HG704); the right row passes.
TEST(KernelDatabase, AiterRowsAgainstRealCodeObjects) {
  if (!hgtest::have_corpus()) GTEST_SKIP() << "no AITER corpus at " << hgtest::corpus_dir();
  auto f942 = hgtest::corpus_dir() / "gfx942_fmoe_gelu_fmoe_fp16_pertokenFp8_g1u1_gelu_1tg_32x448.co";
  auto f950 = hgtest::corpus_dir() / "gfx950_fmoe_gelu_fmoe_fp16_pertokenInt8_g1u1_multix_gelu_1tg_32x128.co";
  if (!std::filesystem::exists(f942) || !std::filesystem::exists(f950)) GTEST_SKIP() << "corpus files missing";
  TempDir t;
  std::filesystem::create_directories(t.path / "hsa/gfx942/fmoe/gelu");
  std::filesystem::copy_file(f942, t.path / "hsa/gfx942/fmoe/gelu/a.co");
  std::filesystem::copy_file(f950, t.path / "hsa/gfx942/fmoe/gelu/b.co");
  // The kernel list as AITER writes it (hsa/gfx942/fmoe/gelu/fmoe_bf16_pertokenFp8_g1u1_gelu.csv).
  t.write("hsa/gfx942/fmoe/gelu/fmoe.csv",
          "knl_name,co_name,atm,vskip,smf,tg_num_perCU,ps,subGU_m,subGU_n\n"
          "_ZN5aiter42fmoe_fp16_pertokenFp8_g1u1_gelu_1tg_32x448E,a.co,0,1,0,1,0,32,448\n"
          "_ZN5aiter42fmoe_fp16_pertokenFp8_g1u1_gelu_1tg_32x999E,a.co,0,1,0,1,0,32,999\n"
          "_ZN5aiter1kE,b.co,0,1,0,1,0,32,128\n");
  auto dbs = find_kernel_databases(t.path.string());
  ASSERT_EQ(dbs.size(), 1u);
  DatabaseReport r = check_kernel_database(dbs[0], {*parse_target_id("gfx942:xnack-")});
  EXPECT_EQ(codes(r), (std::vector<Code>{Code::kDatabaseKernelMissing, Code::kDatabaseCodeObjectMismatch,
                                         Code::kDatabaseChecked}));
  ASSERT_EQ(r.targets.size(), 1u);
  EXPECT_EQ(r.targets[0].entries, 3u);
  EXPECT_EQ(r.targets[0].kernels, 1u);
  EXPECT_NE(r.diagnostics[0].message.find(
                "kernel registration failed for '_ZN5aiter42fmoe_fp16_pertokenFp8_g1u1_gelu_1tg_32x999E'"),
            std::string::npos)
      << r.diagnostics[0].message;
}

}  // namespace
