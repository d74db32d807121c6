// Archive members too large to hold in memory (over 16 MiB, src/inputs/archive.cpp) are read into a
// temporary file and checked mapped from it, with the verdicts of the file installed; without a
// writable TMPDIR they are held in memory, as before. The input is Debian 12's real librocrand.so.1
// (25 MB; librocrand1, scripts/deps.sh), in a tar and a tar.gz written in the test.
#include <archive.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

#include "archive_writer.h"
#include "inputs/archive.h"
#include "test_util.h"

using namespace hgtest;
using namespace hipguard;

namespace {

const std::string kRocrand = "/usr/lib/x86_64-linux-gnu/librocrand.so.1";

// How a member was handed over: its bytes' size, whether they are those of a mapped temporary
// file, and whether they are the bytes put in the archive.
struct Handed {
  std::string name;
  uint64_t size = 0;
  bool mapped = false, same = false;
  bool operator==(const Handed&) const = default;
};

std::vector<Handed> handed(const std::string& archive, const std::map<std::string, std::string>& put) {
  std::vector<Handed> out;
  archive_reader().read(
      Bytes(reinterpret_cast<const uint8_t*>(archive.data()), archive.size()), "a.tar",
      [&](const std::string& name, Bytes data, const FileData& file, const Diagnostic* problem) {
        EXPECT_EQ(problem, nullptr) << name;
        const std::string& original = put.at(name.substr(std::strlen("a.tar!")));
        out.push_back({name, data.size(), file.mapped() && file.bytes().data() == data.data(),
                       data.size() == original.size() && std::memcmp(data.data(), original.data(), data.size()) == 0});
      });
  return out;
}

// Verdicts and findings, without the file's own name.
std::vector<std::string> verdicts(const FileReport& r) {
  std::vector<std::string> out;
  for (const auto& img : r.images) {
    for (const auto& v : img.verdicts)
      out.push_back(v.target.str() + (v.can_run ? " runs " : " fails ") + v.selected + " " + std::to_string(v.kernels));
    for (const auto& d : img.diagnostics) out.push_back(std::string(code_string(d.code)) + " " + d.target);
  }
  for (const auto& d : r.diagnostics) out.push_back(std::string(code_string(d.code)) + " " + d.target);
  return out;
}

struct Inputs {
  std::string lib = [] {
    std::vector<uint8_t> b = read_bytes(kRocrand);
    return std::string(b.begin(), b.end());
  }();
  std::string small = [] {
    ByteVec co = make_code_object(CodeObjectSpec{});
    return std::string(co.begin(), co.end());
  }();
  std::map<std::string, std::string> put{{"usr/lib/librocrand.so.1", lib}, {"k.co", small}};
  std::string tar(int filter) const {
    std::string error;
    std::string out = write_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, filter,
                                    {{"usr/lib/librocrand.so.1", lib}, {"k.co", small}}, &error);
    EXPECT_EQ(error, "");
    return out;
  }
};

}  // namespace

TEST(ArchiveSpill, LargeMemberIsCheckedFromATemporaryFile) {
  ASSERT_TRUE(fs::exists(kRocrand)) << "Debian 12's librocrand1 (scripts/deps.sh)";
  Inputs in;
  ASSERT_GT(in.lib.size(), 16u << 20);
  TempDir t("hipguard-spill");
  std::vector<TargetId> targets{target("gfx90a"), target("gfx942"), target("gfx1100")};
  FileReport installed = check_file(kRocrand, targets, true);
  ASSERT_TRUE(installed.hip);
  for (int filter : {ARCHIVE_FILTER_NONE, ARCHIVE_FILTER_GZIP}) {
    SCOPED_TRACE(filter);
    std::string tar = in.tar(filter);
    EXPECT_EQ(handed(tar, in.put), (std::vector<Handed>{{"a.tar!usr/lib/librocrand.so.1", in.lib.size(), true, true},
                                                        {"a.tar!k.co", in.small.size(), false, true}}));
    // Checked as the file installed: the same verdicts and findings.
    std::string path = (fs::path(t.path) / ("a" + std::to_string(filter) + ".tar")).string();
    std::ofstream(path, std::ios::binary) << tar;
    CheckFileOptions o;
    o.archives = &archive_reader();
    FileReport r = check_file(path, targets, o);
    ASSERT_EQ(r.members.size(), 2u) << dump(r.diagnostics);
    EXPECT_EQ(r.members[0].path, path + "!usr/lib/librocrand.so.1");
    EXPECT_EQ(verdicts(r.members[0]), verdicts(installed));
    EXPECT_FALSE(verdicts(installed).empty());
  }
}

TEST(ArchiveSpill, WithoutATemporaryFileTheMemberIsHeldInMemory) {
  ASSERT_TRUE(fs::exists(kRocrand)) << "Debian 12's librocrand1 (scripts/deps.sh)";
  Inputs in;
  TempDir t("hipguard-spill");
  const char* tmpdir = std::getenv("TMPDIR");
  std::string saved = tmpdir ? tmpdir : "";
  setenv("TMPDIR", (fs::path(t.path) / "no such directory").c_str(), 1);
  std::vector<Handed> got = handed(in.tar(ARCHIVE_FILTER_GZIP), in.put);
  tmpdir ? setenv("TMPDIR", saved.c_str(), 1) : unsetenv("TMPDIR");
  EXPECT_EQ(got, (std::vector<Handed>{{"a.tar!usr/lib/librocrand.so.1", in.lib.size(), false, true},
                                      {"a.tar!k.co", in.small.size(), false, true}}));
}

// The temporary file fails part way (here RLIMIT_FSIZE at 20 MiB, as a full TMPDIR would at any
// size): what it holds is read back and the member is handed over in memory, whole. In a child
// process, so that the limit binds nothing else.
TEST(ArchiveSpill, TemporaryFileFailingPartWayFallsBackToMemory) {
  ASSERT_TRUE(fs::exists(kRocrand)) << "Debian 12's librocrand1 (scripts/deps.sh)";
  Inputs in;
  std::string tar = in.tar(ARCHIVE_FILTER_NONE);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);  // a write over the limit fails with EFBIG instead
    struct rlimit limit {
      20u << 20, 20u << 20
    };
    setrlimit(RLIMIT_FSIZE, &limit);
    std::vector<Handed> got = handed(tar, in.put);
    bool held = got == std::vector<Handed>{{"a.tar!usr/lib/librocrand.so.1", in.lib.size(), false, true},
                                           {"a.tar!k.co", in.small.size(), false, true}};
    _exit(held ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the member was not handed over whole, in memory";
}
