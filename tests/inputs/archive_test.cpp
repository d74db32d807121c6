// Archives read in place (src/inputs/archive.cpp): members named "archive!member" and checked like
// the files they are, a .deb's data.tar opened transparently, and hostile archives (truncated,
// members over budget, nesting and decompression bombs) as diagnostics. The archives are written
// in the test with libarchive's writer from crafted code objects.
#include <archive.h>
#include <archive_entry.h>

#include <llvm/Support/JSON.h>
#include <sys/wait.h>

#include <functional>
#include <map>
#include <thread>

#include "archive_writer.h"
#include "inputs/archive.h"
#include "test_util.h"

using namespace hgtest;
using namespace hipguard;

namespace {

using Members = ArchiveMembers;  // name, bytes

// An archive in memory (archive_writer.h); libarchive's refusal fails the test.
std::string checked_archive(int format, int filter, const Members& members) {
  std::string error;
  std::string out = hgtest::write_archive(format, filter, members, &error);
  EXPECT_EQ(error, "");
  return out;
}

std::string str(const ByteVec& v) { return std::string(v.begin(), v.end()); }

// A gfx942 code object whose kernel uses 96 KiB of LDS: an error on gfx942 (64 KiB).
std::string lds_heavy_co() {
  CodeObjectSpec spec;
  spec.kernels[0].name = "lds_heavy";
  spec.kernels[0].lds = 96 << 10;
  return str(make_code_object(spec));
}
std::string fine_bundle() {
  return str(make_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx942", make_code_object(CodeObjectSpec{})},
                          {"host-x86_64-unknown-linux-gnu-", {}}}));
}

std::string deb(const Members& data, int data_filter = ARCHIVE_FILTER_XZ) {
  return checked_archive(
      ARCHIVE_FORMAT_AR_GNU, ARCHIVE_FILTER_NONE,
      {{"debian-binary", "2.0\n"},
       {"control.tar.gz", checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP,
                                          {{"./control", "Package: x\n"}, {"./k.co", lds_heavy_co()}})},
       {data_filter == ARCHIVE_FILTER_XZ ? "data.tar.xz" : "data.tar.zst",
        checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, data_filter, data)}});
}

// A temporary directory holding the test's files.
struct Scratch {
  hgtest::TempDir tmp{"hipguard-archive"};
  fs::path dir = tmp.path;
  std::string put(const std::string& name, const std::string& bytes) const {
    fs::path p = dir / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
};

FileReport check_with(const std::string& path, const std::vector<TargetId>& targets,
                      const ArchiveReader* reader = &archive_reader(), bool explicit_arg = true) {
  CheckFileOptions o;
  o.archives = reader;
  o.explicit_arg = explicit_arg;
  return check_file(path, targets, o);
}

// What a report says, with its own path replaced: verdicts and findings per image.
std::vector<std::string> summary(const FileReport& r) {
  std::vector<std::string> out;
  auto line = [&](const Diagnostic& d) {
    std::string m = d.message;
    for (size_t at; (at = m.find(r.path)) != std::string::npos;) m.replace(at, r.path.size(), "<path>");
    return std::string(code_string(d.code)) + " " + d.target + " " + d.entry + " " + d.kernel + " " + m;
  };
  for (const auto& d : r.diagnostics) out.push_back(line(d));
  for (const auto& img : r.images) {
    for (const auto& v : img.verdicts)
      out.push_back(v.target.str() + (v.can_run ? " runs " : " fails ") + v.selected + " " + std::to_string(v.kernels));
    for (const auto& d : img.diagnostics) out.push_back(line(d));
  }
  return out;
}

std::vector<std::string> member_names(const FileReport& r) {
  std::vector<std::string> out;
  for (const auto& m : r.members) out.push_back(m.path);
  return out;
}

}  // namespace

TEST(Archive, MembersAreCheckedLikeTheFilesTheyAre) {
  Scratch t;
  std::string co = lds_heavy_co(), bundle = fine_bundle();
  std::string co_file = t.put("plain/k.co", co), bundle_file = t.put("plain/b.hipfb", bundle);
  std::vector<TargetId> targets = {target("gfx942")};
  FileReport want_co = check_file(co_file, targets), want_bundle = check_file(bundle_file, targets);
  ASSERT_FALSE(want_co.ok());
  ASSERT_TRUE(want_bundle.ok());
  Members members = {{"kernels/k.co", co}, {"README", "not GPU code\n"}, {"lib/b.hipfb", bundle}};
  struct Kind {
    std::string name;
    int format, filter;
  };
  for (const Kind& k : {Kind{"a.tar", ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_NONE},
                        Kind{"a.tar.gz", ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP},
                        Kind{"a.tar.xz", ARCHIVE_FORMAT_TAR_GNUTAR, ARCHIVE_FILTER_XZ},
                        Kind{"a.tar.zst", ARCHIVE_FORMAT_TAR_USTAR, ARCHIVE_FILTER_ZSTD},
                        Kind{"a.tar.bz2", ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_BZIP2},
                        Kind{"a.whl", ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE},
                        Kind{"liba.a", ARCHIVE_FORMAT_AR_GNU, ARCHIVE_FILTER_NONE}}) {
    SCOPED_TRACE(k.name);
    Members ms = members;
    if (k.format == ARCHIVE_FORMAT_AR_GNU)  // ar keeps base names only
      for (auto& m : ms) m.first = fs::path(m.first).filename().string();
    std::string path = t.put(k.name, checked_archive(k.format, k.filter, ms));
    FileReport r = check_with(path, targets);
    ASSERT_EQ(r.members.size(), 2u) << dump(r.diagnostics);
    EXPECT_TRUE(r.diagnostics.empty()) << dump(r.diagnostics);
    EXPECT_EQ(r.members[0].path, path + "!" + ms[0].first);
    EXPECT_EQ(r.members[1].path, path + "!" + ms[2].first);
    EXPECT_EQ(summary(r.members[0]), summary(want_co));
    EXPECT_EQ(summary(r.members[1]), summary(want_bundle));
    EXPECT_TRUE(r.members[0].hip && r.members[1].hip);
    EXPECT_FALSE(r.ok()) << "the LDS-heavy member fails gfx942, so the archive does";
  }
}

TEST(Archive, DebOpensItsDataTarTransparently) {
  Scratch t;
  std::string fine = str(make_code_object(CodeObjectSpec{}));
  std::string path = t.put("pkg_1.0_amd64.deb", deb({{"./usr/", ""},
                                                     {"./usr/lib/x86_64-linux-gnu/libk.co", fine},
                                                     {"./usr/share/doc/x/changelog.gz", std::string("\x1f\x8b", 2)},
                                                     {"./usr/share/doc/x/copyright", "text"}}));
  FileReport r = check_with(path, {target("gfx942")});
  EXPECT_EQ(member_names(r), std::vector<std::string>{path + "!usr/lib/x86_64-linux-gnu/libk.co"})
      << "control.tar.gz's code object is not read; data.tar.xz is no level of the name";
  EXPECT_TRUE(r.ok()) << dump(all_diags(r.members.at(0))) << dump(r.diagnostics);
  std::string zst = t.put("pkg_zst.deb", deb({{"./usr/lib/libk.co", fine}}, ARCHIVE_FILTER_ZSTD));
  EXPECT_EQ(member_names(check_with(zst, {target("gfx942")})), std::vector<std::string>{zst + "!usr/lib/libk.co"});
}

TEST(Archive, NestedArchivesNameEveryLevel) {
  Scratch t;
  std::string lib =
      checked_archive(ARCHIVE_FORMAT_AR_GNU, ARCHIVE_FILTER_NONE, {{"x.o", fine_bundle()}, {"y.o", "junk"}});
  std::string zip = checked_archive(ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE, {{"inner/k.co", lds_heavy_co()}});
  std::string path = t.put("out.tar.gz", checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP,
                                                         {{"lib/libx.a", lib}, {"dist/w.whl", zip}}));
  FileReport r = check_with(path, {target("gfx942")});
  EXPECT_EQ(member_names(r), (std::vector<std::string>{path + "!lib/libx.a!x.o", path + "!dist/w.whl!inner/k.co"}));
  EXPECT_TRUE(r.diagnostics.empty()) << dump(r.diagnostics);
}

TEST(Archive, WithoutGpuCodeIsHG107WhenNamedAndSilentOtherwise) {
  Scratch t;
  std::string path = t.put("docs.tar.gz", checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP,
                                                          {{"a.txt", "text"}, {"b.sh", "#!/bin/sh\n"}}));
  FileReport named = check_with(path, {target("gfx942")});
  EXPECT_TRUE(named.members.empty());
  ASSERT_TRUE(has_code(named.diagnostics, Code::kNoHipFatbin)) << dump(named.diagnostics);
  EXPECT_NE(named.diagnostics[0].message.find("archive"), std::string::npos) << named.diagnostics[0].message;
  EXPECT_FALSE(named.ok());
  FileReport found = check_with(path, {target("gfx942")}, &archive_reader(), /*explicit_arg=*/false);
  EXPECT_TRUE(found.diagnostics.empty() && found.members.empty()) << dump(found.diagnostics);
}

TEST(Archive, NotOpenedWithoutAReader) {
  // The shim passes no reader: an archive is a file without GPU code.
  Scratch t;
  std::string path = t.put(
      "a.tar", checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_NONE, {{"k.co", lds_heavy_co()}}));
  FileReport r = check_with(path, {target("gfx942")}, nullptr);
  EXPECT_TRUE(r.members.empty());
  EXPECT_TRUE(has_code(r.diagnostics, Code::kNoHipFatbin)) << dump(r.diagnostics);
}

TEST(Archive, TruncatedNeverPassesNorCrashes) {
  Scratch t;
  Members ms = {{"a/k.co", lds_heavy_co()}, {"b/b.hipfb", fine_bundle()}};
  for (auto [name, format, filter] :
       {std::tuple{"t.tar.gz", ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP},
        std::tuple{"t.zip", ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE}, std::tuple{"t.deb", 0, 0}}) {
    SCOPED_TRACE(name);
    std::string whole = format ? checked_archive(format, filter, ms) : deb(ms);
    size_t step = std::max<size_t>(1, whole.size() / 97);
    size_t hg113 = 0, cuts = 0;
    for (size_t len = 1; len < whole.size(); len += step, ++cuts) {
      std::string path = t.put(name, whole.substr(0, len));
      FileReport r;
      ASSERT_NO_THROW(r = check_with(path, {target("gfx950")})) << len;
      // A cut archive fails: damaged (HG113), or, cut before anything is recognisable, no GPU code
      // (HG107); or every member was read whole (a zip cut in its central directory, which the
      // streaming reader does not need).
      bool failed = has_code(r.diagnostics, Code::kUnreadableArchive) || has_code(r.diagnostics, Code::kNoHipFatbin);
      EXPECT_TRUE(failed || r.members.size() == ms.size())
          << "cut at " << len << " of " << whole.size() << ": " << dump(r.diagnostics);
      hg113 += has_code(r.diagnostics, Code::kUnreadableArchive);
    }
    EXPECT_GT(hg113, cuts / 2) << "most cuts are reported as a damaged archive";
  }
}

TEST(Archive, MemberOverBudgetIsHG111NamingIt) {
  Scratch t;
  std::string co = lds_heavy_co() + std::string(16 << 10, '\0');  // larger than the bundle after it
  std::string path = t.put("big.tar.xz", checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_XZ,
                                                         {{"big.co", co}, {"ok.hipfb", fine_bundle()}}));
  ArchiveLimits limits;
  limits.member_bytes = co.size() - 1;
  auto reader = make_archive_reader(limits);
  FileReport r = check_with(path, {target("gfx942")}, reader.get());
  ASSERT_EQ(member_names(r), (std::vector<std::string>{path + "!big.co", path + "!ok.hipfb"}));
  const auto& d = r.members[0].diagnostics;
  ASSERT_TRUE(has_code(d, Code::kBudgetExceeded)) << dump(d);
  EXPECT_EQ(d[0].value, co.size());
  EXPECT_EQ(d[0].limit, co.size() - 1);
  EXPECT_EQ(d[0].file, path + "!big.co");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.members[1].ok()) << "the members after it are still checked" << dump(all_diags(r.members[1]));
}

TEST(Archive, HeaderClaimingGigabytesAllocatesNothing) {
  // A tar header whose size field says 5 GiB, with 512 bytes behind it: HG111 from the header alone.
  std::string tar = checked_archive(ARCHIVE_FORMAT_TAR_USTAR, ARCHIVE_FILTER_NONE, {{"huge.co", lds_heavy_co()}});
  snprintf(&tar[124], 12, "%011llo", 5ull << 30);
  std::memset(&tar[148], ' ', 8);
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(tar[i]);
  snprintf(&tar[148], 8, "%06o", sum);
  Scratch t;
  std::string path = t.put("claim.tar", tar);
  FileReport r = check_with(path, {target("gfx942")});
  ASSERT_EQ(r.members.size(), 1u) << dump(r.diagnostics);
  ASSERT_TRUE(has_code(r.members[0].diagnostics, Code::kBudgetExceeded)) << dump(r.members[0].diagnostics);
  EXPECT_EQ(r.members[0].diagnostics[0].value, 5ull << 30);
  EXPECT_EQ(r.members[0].diagnostics[0].limit, kMaxArchiveMemberBytes);
  EXPECT_FALSE(has_code(r.diagnostics, Code::kNoHipFatbin)) << "its member was not read: not said to hold no GPU code";
}

TEST(Archive, DecompressionBombStopsAtTheTotalBudget) {
  // 64 MiB of zeros (a few KB compressed) in members that are no GPU code, then a code object.
  std::string zeros(64 << 20, '\0');
  std::string path;
  Scratch t;
  path = t.put("bomb.tar.zst", checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_ZSTD,
                                               {{"z1", zeros}, {"z2", zeros}, {"k.co", lds_heavy_co()}}));
  ASSERT_LT(fs::file_size(path), 1u << 20);
  ArchiveLimits limits;
  limits.total_bytes = 100 << 20;
  auto reader = make_archive_reader(limits);
  FileReport r = check_with(path, {target("gfx942")}, reader.get());
  EXPECT_TRUE(r.members.empty());
  ASSERT_TRUE(has_code(r.diagnostics, Code::kBudgetExceeded)) << dump(r.diagnostics);
  EXPECT_NE(r.diagnostics[0].message.find(path + "!z2"), std::string::npos) << r.diagnostics[0].message;
  EXPECT_EQ(r.diagnostics[0].limit, 100u << 20);
  EXPECT_FALSE(has_code(r.diagnostics, Code::kNoHipFatbin))
      << "not said to hold no GPU code: it was not read to the end";
  // A zip's deflated member that holds no GPU code is inflated to be passed over: counted too.
  std::string zip = t.put("bomb.zip", checked_archive(ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE,
                                                      {{"z1", zeros}, {"z2", zeros}, {"k.co", lds_heavy_co()}}));
  FileReport z = check_with(zip, {target("gfx942")}, reader.get());
  ASSERT_TRUE(has_code(z.diagnostics, Code::kBudgetExceeded)) << dump(z.diagnostics);
  EXPECT_NE(z.diagnostics[0].message.find(zip + "!z2"), std::string::npos) << z.diagnostics[0].message;
}

TEST(Archive, NestingBombStopsAtTheDepthLimit) {
  std::string inner =
      checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP, {{"k.co", lds_heavy_co()}});
  for (int level = 0; level < 5; ++level)
    inner = checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP,
                            {{"l.tar.gz", inner}, {"k" + std::to_string(level) + ".co", lds_heavy_co()}});
  Scratch t;
  std::string path = t.put("nest.tar.gz", inner);
  FileReport r = check_with(path, {target("gfx950")});
  ASSERT_TRUE(has_code(r.diagnostics, Code::kBudgetExceeded)) << dump(r.diagnostics);
  std::string deepest = path + "!l.tar.gz!l.tar.gz!l.tar.gz!l.tar.gz";
  EXPECT_NE(r.diagnostics[0].message.find(deepest + ":"), std::string::npos) << r.diagnostics[0].message;
  EXPECT_EQ(r.diagnostics[0].value, kMaxArchiveNesting + 1);
  // The members of the levels within the limit are checked.
  EXPECT_EQ(member_names(r),
            (std::vector<std::string>{path + "!l.tar.gz!l.tar.gz!l.tar.gz!k1.co", path + "!l.tar.gz!l.tar.gz!k2.co",
                                      path + "!l.tar.gz!k3.co", path + "!k4.co"}));
}

namespace {
// Every call a FileSink receives, as text.
struct Recorder : FileSink {
  std::vector<std::string> calls;
  void begin_file(const std::string& path) override { calls.push_back("begin " + path); }
  void image(ImageReport&& img) override {
    calls.push_back("image " + img.origin + " " + std::to_string(img.diagnostics.size()));
  }
  void end_file(FileReport&& f) override {
    std::string codes;
    for (const auto& d : f.diagnostics) codes += " " + std::string(code_string(d.code));
    calls.push_back("end " + f.path + codes);
  }
};
}  // namespace

TEST(Archive, CheckPathsDeliversMembersInInputOrderForAnyJobs) {
  Scratch t;
  auto tar = [&](const Members& ms) {
    return checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP, ms);
  };
  Members many = {{"x.co", lds_heavy_co()}};  // more events than a file not yet delivered may queue
  for (int i = 0; i < 9; ++i) many.push_back({"m" + std::to_string(i) + ".hipfb", fine_bundle()});
  t.put("in/a.tar.gz", tar(many));
  t.put("in/b.co", lds_heavy_co());
  t.put("in/c.zip", checked_archive(ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE, {{"t.txt", "text"}}));
  t.put("in/d.deb", deb({{"./usr/lib/k.co", lds_heavy_co()}}));
  std::string trunc = tar({{"k.co", lds_heavy_co()}, {"k2.co", lds_heavy_co()}});
  t.put("in/e.tar.gz", trunc.substr(0, trunc.size() - 40));
  t.put("empty/c.zip", checked_archive(ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE, {{"t.txt", "text"}}));
  std::string in = (t.dir / "in").string(), empty = (t.dir / "empty").string();
  std::vector<std::string> reference;
  for (unsigned jobs : {1u, 2u, 4u, 2u, 4u, 8u}) {  // several runs: an ordering bug shows in some
    SCOPED_TRACE(jobs);
    Recorder rec;
    CheckPathsOptions o;
    o.targets = {target("gfx942")};
    o.jobs = jobs;
    o.archives = &archive_reader();
    CheckPathsResult res = check_paths({in, empty}, o, rec);
    EXPECT_FALSE(res.ok);
    EXPECT_TRUE(res.unreadable) << "a damaged archive is an input that could not be read (inspect exits 1)";
    if (jobs == 1) reference = rec.calls;
    else EXPECT_EQ(rec.calls, reference);
  }
  std::vector<std::string> begins;
  for (const auto& c : reference)
    if (c.rfind("begin ", 0) == 0 && c.find("e.tar.gz!") == std::string::npos) begins.push_back(c.substr(6));
  std::vector<std::string> want;
  for (const auto& m : many) want.push_back(in + "/a.tar.gz!" + m.first);
  for (std::string f : {"/b.co", "/d.deb!usr/lib/k.co", "/e.tar.gz"}) want.push_back(in + f);
  want.push_back(empty);
  EXPECT_EQ(begins, want) << "members with GPU code, then the damaged archive itself (HG113); c.zip, without GPU "
                             "code, is skipped; the directory holding only such an archive gets HG110";
  auto has = [&](const std::string& call) {
    return std::find(reference.begin(), reference.end(), call) != reference.end();
  };
  EXPECT_TRUE(has("end " + in + "/e.tar.gz HG113"));
  EXPECT_TRUE(has("end " + empty + " HG110"));
  EXPECT_TRUE(has("image " + in + "/a.tar.gz!m8.hipfb 0"));
}

namespace {
// hipguard ARGS as a process: (exit status, stdout).
std::pair<int, std::string> cli(const std::vector<std::string>& args) {
  std::string cmd = HIPGUARD_CLI;
  for (const auto& a : args) cmd += " '" + a + "'";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}
}  // namespace

TEST(CliArchive, MemberNamesInEveryReportFormat) {
  HG_REQUIRE_CORPUS();
  // Two real code objects of the AITER corpus in a tar.zst under aiter/, and the same two files
  // installed in a directory aiter/: a kernel library either way (a member is in the library of its
  // directory inside the archive), so each report of the archive is the directory's.
  std::vector<fs::path> files = corpus_files("gfx942");
  ASSERT_GE(files.size(), 2u);
  files.resize(2);
  Members ms;
  Scratch t;
  for (const auto& f : files) {
    auto bytes = read_bytes(f);
    ms.push_back({"aiter/" + f.filename().string(), std::string(bytes.begin(), bytes.end())});
    t.put("installed/" + ms.back().first, ms.back().second);
  }
  const std::string installed = (t.dir / "installed").string();
  std::string tar =
      t.put("kernels.tar.zst", checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_ZSTD, ms));
  // On gfx950 the library has nothing to load: one HG214 for it, its files counted, not errors.
  auto [rc_files, plain] = cli({"check", "--target", "gfx950", "--json", installed + "/aiter"});
  auto [rc_tar, json] = cli({"check", "--target", "gfx950", "--json", tar});
  EXPECT_EQ(rc_tar, rc_files);
  EXPECT_EQ(rc_tar, 1);
  // Each report of the archive is the directory's, once the paths are replaced.
  auto reports = [](const std::string& doc, auto name_of) {
    std::map<std::string, std::string> out;
    auto parsed = llvm::json::parse(doc);
    EXPECT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    if (!parsed) return out;
    for (const auto& f : *parsed->getAsObject()->getArray("files")) {
      const auto* o = f.getAsObject();
      std::string path = o->getString("path")->str(), text;
      llvm::raw_string_ostream os(text);
      os << llvm::json::Value(llvm::json::Array{*o->get("ok"), *o->get("diagnostics"), *o->get("images")});
      os.flush();
      for (size_t at; (at = text.find(path)) != std::string::npos;) text.replace(at, path.size(), "<path>");
      out[name_of(path)] = text;
    }
    return out;
  };
  auto members = reports(json, [&](const std::string& p) { return p.substr(tar.size() + 1); });
  auto originals = reports(plain, [&](const std::string& p) { return p.substr(installed.size() + 1); });
  EXPECT_EQ(members.size(), 3u);  // the library's HG214 and its two files
  EXPECT_EQ(members, originals);
  EXPECT_NE(json.find("\"path\": \"" + tar + "!" + ms[0].first + "\""), std::string::npos) << json.substr(0, 600);
  EXPECT_NE(json.find("\"library\": \"" + tar + "!aiter\""), std::string::npos) << json.substr(0, 600);
  auto [rc_text, text] = cli({"check", "--target", "gfx950", tar});
  EXPECT_NE(text.find(tar + "!aiter/ (library)"), std::string::npos) << text.substr(0, 800);
  auto [rc_sarif, sarif] = cli({"check", "--target", "gfx950", "--sarif", tar});
  EXPECT_NE(sarif.find("kernels.tar.zst%21aiter"), std::string::npos) << "a URI like any path's: '!' percent-encoded\n"
                                                                      << sarif.substr(0, 800);
  // On gfx942 each member is a passing test case of its own.
  auto [rc_junit, junit] = cli({"check", "--target", "gfx942", "--junit", tar});
  EXPECT_EQ(rc_junit, 0);
  for (const auto& [name, bytes] : ms)
    EXPECT_NE(junit.find(tar + "!" + name), std::string::npos) << junit.substr(0, 800);
  auto [rc_inspect, inspect] = cli({"inspect", tar});
  EXPECT_EQ(rc_inspect, 0);
  EXPECT_NE(inspect.find(tar + "!" + ms[1].first), std::string::npos) << inspect.substr(0, 800);
  EXPECT_EQ(rc_text, rc_tar);
  EXPECT_EQ(rc_sarif, rc_tar);
}

// Processor-named directories at an archive's top (hsa/<processor>/ as AITER lays it out, tarred from
// inside): one library, as the same directories installed, named after the archive
// ("kernels.tar!<processor>"), whose gfx90a file runs on gfx90a; not one library per directory with
// an HG214 for the one without gfx90a code.
TEST(CliArchive, ProcessorDirectoriesAtTheTopAreOneLibrary) {
  CodeObjectSpec gfx90a;
  gfx90a.mach = 0x03f;
  gfx90a.target = "amdgcn-amd-amdhsa--gfx90a";
  Members ms = {{"gfx942/k.co", str(make_code_object(CodeObjectSpec{}))},
                {"gfx90a/k.co", str(make_code_object(gfx90a))}};
  Scratch t;
  for (const auto& [name, bytes] : ms) t.put("installed/" + name, bytes);
  std::string tar = t.put("kernels.tar", checked_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_NONE, ms));
  auto [rc_tar, json] = cli({"check", "--target", "gfx90a", "--json", tar});
  auto [rc_dir, installed] = cli({"check", "--target", "gfx90a", "--json", (t.dir / "installed").string()});
  EXPECT_EQ(rc_tar, 0) << json.substr(0, 1200);
  EXPECT_EQ(rc_dir, 0) << installed.substr(0, 1200);
  auto libraries = [](const std::string& doc) {
    std::vector<std::string> names;
    auto parsed = llvm::json::parse(doc);
    EXPECT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    if (!parsed) return names;
    if (const auto* ls = parsed->getAsObject()->getArray("libraries"))
      for (const auto& l : *ls) names.push_back(l.getAsObject()->getString("name")->str());
    return names;
  };
  EXPECT_EQ(libraries(json), std::vector<std::string>{tar + "!<processor>"});
  EXPECT_EQ(libraries(installed), std::vector<std::string>{(t.dir / "installed").string() + "/<processor>"});
}

// An archive over kCliMapAbove is mapped and read 16 MiB at a time, its pages released behind the walk;
// its members and their reports are those of the same bytes read in memory (a zip's central directory
// too: the mapped reader seeks like the memory one).
TEST(Archive, MappedArchivesReadAsInMemory) {
  Scratch t;
  std::string co = lds_heavy_co(), bundle = fine_bundle();
  std::string padding(40u << 20, 'x');  // more than two chunks before the code
  Members members = {{"pad/big.bin", padding}, {"kernels/k.co", co}, {"lib/b.hipfb", bundle}};
  for (const auto& [name, format, filter] :
       {std::tuple{"a.zip", ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE},
        std::tuple{"a.tar.gz", ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP},
        std::tuple{"a.tar", ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_NONE}}) {
    SCOPED_TRACE(name);
    std::string bytes = checked_archive(format, filter, members);
    std::string path = t.put(name, bytes);
    CheckFileOptions o;
    o.archives = &archive_reader();
    o.map_above = kCliMapAbove;
    FileReport mapped = check_file(path, {target("gfx942")}, o);
    ASSERT_EQ(member_names(mapped), (std::vector<std::string>{path + "!kernels/k.co", path + "!lib/b.hipfb"}))
        << dump(mapped.diagnostics);
    std::vector<std::string> in_memory;
    ArchiveReader::Result r = archive_reader().read(
        Bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), path,
        [&](const std::string& member, Bytes, const FileData&, const Diagnostic*) { in_memory.push_back(member); });
    EXPECT_EQ(member_names(mapped), in_memory);
    EXPECT_TRUE(r.diagnostics.empty() && mapped.diagnostics.empty()) << dump(mapped.diagnostics);
    EXPECT_EQ(summary(mapped.members[0]), summary(check_file(t.put("plain/k.co", co), {target("gfx942")})));
  }
}
