// Container images read in place (src/inputs/image.cpp): OCI archives, OCI layout directories and
// docker-save archives written in the test, their layers applied top first (whiteouts, opaque
// directories), a multi-platform index, and damaged images as findings naming the layer.
#include <archive.h>

#include <llvm/Support/JSON.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <optional>

#include <archive_entry.h>

#include "archive_writer.h"
#include "inputs/archive.h"
#include "test_util.h"

using namespace hgtest;
using namespace hipguard;

namespace {

std::string str(const ByteVec& v) { return std::string(v.begin(), v.end()); }

// A gfx942 code object whose kernel uses 96 KiB of LDS (an error on gfx942), and one that is fine.
std::string heavy_co() {
  CodeObjectSpec spec;
  spec.kernels[0].name = "heavy";
  spec.kernels[0].lds = 96 << 10;
  return str(make_code_object(spec));
}
std::string fine_co() { return str(make_code_object(CodeObjectSpec{})); }

std::string tar(const ArchiveMembers& members, int filter = ARCHIVE_FILTER_NONE) {
  std::string error;
  std::string out = write_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, filter, members, &error);
  EXPECT_EQ(error, "");
  return out;
}

std::string sha256(const std::string& bytes) { return "sha256:" + sha256_hex(bytes); }

std::string json(llvm::json::Value v) {
  std::string out;
  llvm::raw_string_ostream(out) << v;
  return out;
}

// An OCI image layout as files: blobs by digest, index.json over one manifest per image.
struct Layout {
  ArchiveMembers files{{"oci-layout", R"({"imageLayoutVersion":"1.0.0"})"}};
  llvm::json::Array manifests;

  llvm::json::Object put(const std::string& bytes, const std::string& media_type) {
    std::string d = sha256(bytes);
    files.emplace_back("blobs/sha256/" + d.substr(7), bytes);
    return llvm::json::Object{{"mediaType", media_type}, {"digest", d}, {"size", int64_t(bytes.size())}};
  }
  // An image of `layers` (bottom first, each a tar, maybe compressed); `platform` "" for none; `run`
  // the config's "config" (Env, Entrypoint, Cmd), or none.
  void image(const std::vector<std::string>& layers, const std::string& platform = "",
             std::optional<llvm::json::Object> run = std::nullopt) {
    llvm::json::Array descriptors;
    for (const auto& l : layers) descriptors.push_back(put(l, "application/vnd.oci.image.layer.v1.tar"));
    llvm::json::Object doc{{"rootfs", llvm::json::Object{{"type", "layers"}, {"diff_ids", llvm::json::Array{}}}}};
    if (run) doc["config"] = std::move(*run);
    llvm::json::Object config = put(json(std::move(doc)), "application/vnd.oci.image.config.v1+json");
    llvm::json::Object manifest =
        put(json(llvm::json::Object{
                {"schemaVersion", 2}, {"config", std::move(config)}, {"layers", std::move(descriptors)}}),
            "application/vnd.oci.image.manifest.v1+json");
    if (!platform.empty()) {
      size_t slash = platform.find('/');
      manifest["platform"] =
          llvm::json::Object{{"os", platform.substr(0, slash)}, {"architecture", platform.substr(slash + 1)}};
    }
    manifests.push_back(std::move(manifest));
  }
  ArchiveMembers members() const {
    ArchiveMembers out = files;
    out.emplace_back("index.json",
                     json(llvm::json::Object{{"schemaVersion", 2}, {"manifests", llvm::json::Array(manifests)}}));
    return out;
  }
  std::string as_tar() const { return tar(members()); }
  std::string write_to(const fs::path& dir) const {
    for (const auto& [name, bytes] : members()) {
      fs::create_directories((dir / name).parent_path());
      std::ofstream(dir / name, std::ios::binary) << bytes;
    }
    return dir.string();
  }
};

FileReport check_image(const std::string& path, const ArchiveReader& reader = archive_reader()) {
  CheckFileOptions o;
  o.archives = &reader;
  return check_file(path, {target("gfx942")}, o);
}

std::vector<std::string> member_names(const FileReport& r, const std::string& path) {
  std::vector<std::string> out;
  for (const auto& m : r.members) out.push_back(m.path.substr(path.size()));
  return out;
}

std::vector<Code> codes(const FileReport& r) {
  std::vector<Code> out;
  for (const auto& d : r.diagnostics) out.push_back(d.code);
  return out;
}

const Diagnostic* find(const FileReport& r, Code code) {
  for (const auto& d : r.diagnostics)
    if (d.code == code) return &d;
  return nullptr;
}

// Two layers: the upper whites out lib/heavy.co and makes opt/ opaque, adds opt/new.co, and whites
// out a path no layer has.
Layout two_layers() {
  Layout l;
  l.image({tar({{"lib/heavy.co", heavy_co()}, {"lib/fine.co", fine_co()}, {"opt/old.co", heavy_co()}}),
           tar({{"lib/.wh.heavy.co", ""}, {"opt/.wh..wh..opq", ""}, {"opt/new.co", fine_co()}, {"etc/.wh.none", ""}},
               ARCHIVE_FILTER_GZIP)});
  return l;
}

}  // namespace

TEST(Image, OciArchiveAppliesWhiteoutsTopFirst) {
  TempDir tmp("hipguard-image");
  std::string path = (fs::path(tmp.path) / "image.tar").string();
  std::ofstream(path, std::ios::binary) << two_layers().as_tar();
  FileReport r = check_image(path);
  // Top layer first; what it whites out or hides below an opaque directory is never read.
  EXPECT_EQ(member_names(r, path), (std::vector<std::string>{"!opt/new.co", "!lib/fine.co"}));
  EXPECT_TRUE(r.ok()) << dump(r.diagnostics);
  const Diagnostic* none = find(r, Code::kWhiteoutOfNothing);
  ASSERT_NE(none, nullptr) << dump(r.diagnostics);
  EXPECT_NE(none->message.find("etc/none"), std::string::npos) << none->message;
  EXPECT_EQ(codes(r), std::vector<Code>{Code::kWhiteoutOfNothing});
}

TEST(Image, OciLayoutDirectoryIsOneImage) {
  TempDir tmp("hipguard-image");
  std::string dir = two_layers().write_to(fs::path(tmp.path) / "layout");
  FileReport r = check_image(dir + "/");  // named as typed, without its trailing '/'
  EXPECT_EQ(member_names(r, dir), (std::vector<std::string>{"!opt/new.co", "!lib/fine.co"}));
  // check_paths keeps the layout whole: one input, not a directory of blobs.
  CheckPathsOptions o;
  o.targets = {target("gfx942")};
  o.archives = &archive_reader();
  CollectSink sink(false);
  CheckPathsResult result = check_paths({dir}, o, sink);
  std::vector<std::string> paths;
  for (const auto& f : sink.reports) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{dir + "!opt/new.co", dir + "!lib/fine.co", dir}));
  EXPECT_TRUE(result.gpu_code);
}

TEST(Image, MultiPlatformIndexPicksLinuxAmd64) {
  TempDir tmp("hipguard-image");
  Layout l;
  l.image({tar({{"arm.co", heavy_co()}})}, "linux/arm64");
  l.image({tar({{"amd.co", fine_co()}})}, "linux/amd64");
  std::string path = (fs::path(tmp.path) / "multi.tar").string();
  std::ofstream(path, std::ios::binary) << l.as_tar();
  EXPECT_EQ(member_names(check_image(path), path), std::vector<std::string>{"!amd.co"});
  Layout arm;
  arm.image({tar({{"arm.co", heavy_co()}})}, "linux/arm64");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << arm.as_tar();
  FileReport r = check_image(path);
  const Diagnostic* d = find(r, Code::kUnreadableImage);
  ASSERT_NE(d, nullptr) << dump(r.diagnostics);
  EXPECT_NE(d->message.find("no manifest for linux/amd64; it has linux/arm64"), std::string::npos) << d->message;
  EXPECT_TRUE(r.members.empty());
  // --platform linux/arm64: the other image of the first index; a variant that is not there: none.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << l.as_tar();
  auto arm64 = make_archive_reader({}, *Platform::parse("linux/arm64"));
  EXPECT_EQ(member_names(check_image(path, *arm64), path), std::vector<std::string>{"!arm.co"});
  auto v7 = make_archive_reader({}, *Platform::parse("linux/arm64/v7"));
  r = check_image(path, *v7);
  EXPECT_TRUE(r.members.empty());
  EXPECT_EQ(codes(r), std::vector<Code>{Code::kUnreadableImage});
}

TEST(Image, PlatformParsesOsArchitectureAndVariant) {
  EXPECT_EQ(Platform::parse("linux/amd64")->str(), "linux/amd64");
  EXPECT_EQ(Platform::parse("linux/arm64/v8")->variant, "v8");
  for (const char* bad : {"", "linux", "linux/", "/amd64", "linux/arm64/", "a/b/c/d"})
    EXPECT_FALSE(Platform::parse(bad)) << bad;
}

TEST(Image, DockerSaveArchiveChecksLayerDigests) {
  TempDir tmp("hipguard-image");
  std::string lower = tar({{"lib/heavy.co", heavy_co()}}), upper = tar({{"lib/.wh.heavy.co", ""}});
  std::string config = R"({"rootfs":{"type":"layers","diff_ids":[]}})";
  auto save = [&](const std::string& upper_bytes) {
    std::string lower_name = sha256(lower).substr(7) + ".tar", upper_name = sha256(upper).substr(7) + ".tar";
    std::string manifest =
        json(llvm::json::Array{llvm::json::Object{{"Config", "config.json"},
                                                  {"RepoTags", llvm::json::Array{"hg/test:1"}},
                                                  {"Layers", llvm::json::Array{lower_name, upper_name}}}});
    return tar({{lower_name, lower}, {upper_name, upper_bytes}, {"config.json", config}, {"manifest.json", manifest}});
  };
  std::string path = (fs::path(tmp.path) / "saved.tar").string();
  std::ofstream(path, std::ios::binary) << save(upper);
  FileReport r = check_image(path);
  EXPECT_TRUE(r.members.empty()) << "the upper layer whites out the only file";
  EXPECT_EQ(codes(r), std::vector<Code>{Code::kNoHipFatbin}) << "an image named with no GPU code left";
  // The upper layer altered: not read (its whiteout is not applied), named, and the lower one still checked.
  std::string altered = upper;
  altered[600] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << save(altered);
  r = check_image(path);
  const Diagnostic* d = find(r, Code::kImageDigestMismatch);
  ASSERT_NE(d, nullptr) << dump(r.diagnostics);
  EXPECT_NE(d->message.find("layer 2 of 2"), std::string::npos) << d->message;
  EXPECT_EQ(member_names(r, path), std::vector<std::string>{"!lib/heavy.co"});
  EXPECT_FALSE(r.ok());
}

TEST(Image, DamagedImagesAreFindingsAndTheOtherLayersAreChecked) {
  TempDir tmp("hipguard-image");
  // A member leaving the image: HG116, not read; the layer's other members are.
  Layout outside;
  outside.image({tar({{"../escape.co", heavy_co()}, {"lib/fine.co", fine_co()}})});
  std::string path = (fs::path(tmp.path) / "outside.tar").string();
  std::ofstream(path, std::ios::binary) << outside.as_tar();
  FileReport r = check_image(path);
  EXPECT_EQ(member_names(r, path), std::vector<std::string>{"!lib/fine.co"});
  EXPECT_EQ(codes(r), std::vector<Code>{Code::kImagePathOutside});
  // index.json that is not JSON, and a manifest naming a blob the layout lacks: HG114.
  Layout layout = two_layers();
  std::string dir = layout.write_to(fs::path(tmp.path) / "missing");
  std::string top = layout.files[2].first;  // the upper layer's blob
  fs::remove(fs::path(dir) / top);
  r = check_image(dir);
  ASSERT_NE(find(r, Code::kUnreadableImage), nullptr) << dump(r.diagnostics);
  EXPECT_NE(find(r, Code::kUnreadableImage)->message.find("layer 2 of 2"), std::string::npos);
  EXPECT_EQ(member_names(r, dir), (std::vector<std::string>{"!lib/heavy.co", "!lib/fine.co", "!opt/old.co"}));
  std::ofstream(fs::path(dir) / "index.json", std::ios::trunc) << "{not json";
  r = check_image(dir);
  EXPECT_EQ(codes(r), std::vector<Code>{Code::kUnreadableImage});
  EXPECT_TRUE(r.members.empty());
}

TEST(Image, LayerBudgetsNameTheLayer) {
  TempDir tmp("hipguard-image");
  Layout l;
  l.image({tar({{"zeros.bin", std::string(4 << 20, '\0')}, {"lib/fine.co", fine_co()}}, ARCHIVE_FILTER_GZIP)});
  std::string path = (fs::path(tmp.path) / "bomb.tar").string();
  std::ofstream(path, std::ios::binary) << l.as_tar();
  ArchiveLimits limits;
  limits.total_bytes = 1 << 20;
  auto reader = make_archive_reader(limits);
  FileReport r = check_image(path, *reader);
  const Diagnostic* d = find(r, Code::kBudgetExceeded);
  ASSERT_NE(d, nullptr) << dump(r.diagnostics);
  EXPECT_NE(d->message.find("layer 1 of 1"), std::string::npos) << d->message;
}

TEST(Image, TarWithAnotherManifestJsonIsAnOrdinaryArchive) {
  TempDir tmp("hipguard-image");
  std::string path = (fs::path(tmp.path) / "web.tar").string();
  std::ofstream(path, std::ios::binary) << tar({{"manifest.json", R"({"name":"a web app"})"}, {"k.co", fine_co()}});
  FileReport r = check_image(path);
  EXPECT_EQ(member_names(r, path), std::vector<std::string>{"!k.co"});
  EXPECT_TRUE(r.diagnostics.empty()) << dump(r.diagnostics);
}

namespace {

constexpr unsigned kDir = AE_IFDIR, kSymlink = AE_IFLNK;

std::string layer(const std::vector<TarEntry>& entries, int filter = ARCHIVE_FILTER_NONE) {
  std::string error;
  std::string out = write_tar(entries, filter, &error);
  EXPECT_EQ(error, "");
  return out;
}

std::vector<std::string> members_of(const Layout& l) {
  TempDir tmp("hipguard-image");
  std::string path = (fs::path(tmp.path) / "i.tar").string();
  std::ofstream(path, std::ios::binary) << l.as_tar();
  return member_names(check_image(path), path);
}

}  // namespace

// moby applies layers bottom first: a non-directory over a directory removes it and all below it,
// a directory over a file replaces it; read top first, the same files remain.
TEST(Image, ReplacedPathsHideWhatTheirLayerRemoved) {
  Layout l;
  l.image({layer({{"opt/rocm", "", kDir}, {"opt/rocm/lib/old.co", fine_co()}, {"etc/k.co", heavy_co()}}),
           layer({{"opt/rocm", "", kSymlink, "rocm-7.2"}, {"etc/k.co", "", kDir}}),
           layer({{"opt/rocm", "", kDir}, {"opt/rocm/lib/new.co", fine_co()}, {"etc/k.co/inside.co", fine_co()}})});
  EXPECT_EQ(members_of(l), (std::vector<std::string>{"!opt/rocm/lib/new.co", "!etc/k.co/inside.co"}));
}

TEST(Image, NamesAreCleanedAndAnOpaqueRootHidesEverythingBelow) {
  Layout l;
  l.image({layer({{"./lib/a.co", fine_co()}, {"usr/lib/../lib64/b.co", fine_co()}}),
           layer({{"./.wh..wh..opq", ""}, {"./new.co", fine_co()}, {".wh..wh.plnk/123.456", fine_co()}})});
  EXPECT_EQ(members_of(l), std::vector<std::string>{"!new.co"}) << "AUFS's .wh..wh.plnk is not a file of the image";
  Layout below;
  below.image({layer({{"./lib/a.co", fine_co()}, {"usr/lib/../lib64/b.co", fine_co()}})});
  EXPECT_EQ(members_of(below), (std::vector<std::string>{"!lib/a.co", "!usr/lib64/b.co"}))
      << "'..' that stays inside the image is not HG116; the member is named where it is installed";
}

TEST(Image, HardLinkToAFileAnUpperLayerDeletesIsCheckedUnderItsName) {
  Layout l;
  l.image({layer({{"lib/libk.so", heavy_co()}, {"lib/libk.so.1", "", 0100000, "", "lib/libk.so"}}),
           layer({{"lib/.wh.libk.so", ""}})});
  TempDir tmp("hipguard-image");
  std::string path = (fs::path(tmp.path) / "i.tar").string();
  std::ofstream(path, std::ios::binary) << l.as_tar();
  FileReport r = check_image(path);
  ASSERT_EQ(member_names(r, path), std::vector<std::string>{"!lib/libk.so.1"});
  EXPECT_FALSE(r.members[0].ok()) << "the linked bytes are the LDS-heavy code object";
}

TEST(Image, NestedIndexTagsAttestationsAndArtifacts) {
  Layout l;
  l.image({tar({{"amd.co", fine_co()}})}, "linux/amd64");
  llvm::json::Object image = std::move(*l.manifests[0].getAsObject());
  l.manifests.clear();
  llvm::json::Object attestation = l.put(
      json(llvm::json::Object{{"schemaVersion", 2},
                              {"config", llvm::json::Object{{"mediaType", "application/vnd.oci.image.config.v1+json"}}},
                              {"layers", llvm::json::Array{}}}),
      "application/vnd.oci.image.manifest.v1+json");
  attestation["platform"] = llvm::json::Object{{"os", "unknown"}, {"architecture", "unknown"}};
  attestation["annotations"] = llvm::json::Object{{"vnd.docker.reference.type", "attestation-manifest"}};
  llvm::json::Object nested =
      l.put(json(llvm::json::Object{{"schemaVersion", 2},
                                    {"manifests", llvm::json::Array{std::move(image), std::move(attestation)}}}),
            "application/vnd.oci.image.index.v1+json");
  // containerd's store tags the index, not the manifest; two tags of one index are one image each name.
  for (const char* tag : {"hg/app:1", "hg/other:2"}) {
    llvm::json::Object d = nested;
    d["annotations"] = llvm::json::Object{{"io.containerd.image.name", tag}};
    l.manifests.push_back(std::move(d));
  }
  // A signature beside them: an artifact, not an image.
  l.manifests.push_back(
      l.put(json(llvm::json::Object{{"schemaVersion", 2},
                                    {"artifactType", "application/vnd.dev.cosign.artifact.sig.v1+json"},
                                    {"config", llvm::json::Object{{"mediaType", "application/vnd.oci.empty.v1+json"}}},
                                    {"layers", llvm::json::Array{}}}),
            "application/vnd.oci.image.manifest.v1+json"));
  EXPECT_EQ(members_of(l), std::vector<std::string>{"!amd.co"}) << "the index is walked once, its image read once";
  // Two images under two tags: each checked, named by its tag.
  Layout two;
  two.image({tar({{"a.co", fine_co()}})});
  two.image({tar({{"b.co", fine_co()}})});
  two.manifests[0].getAsObject()->insert(
      {"annotations", llvm::json::Object{{"org.opencontainers.image.ref.name", "a"}}});
  two.manifests[1].getAsObject()->insert(
      {"annotations", llvm::json::Object{{"org.opencontainers.image.ref.name", "b"}}});
  EXPECT_EQ(members_of(two), (std::vector<std::string>{"!a!a.co", "!b!b.co"}));
  // Only an artifact: no image, said (HG114), not passed as an image without files.
  Layout sig;
  sig.manifests.push_back(std::move(l.manifests.back()));
  sig.files = l.files;
  TempDir tmp("hipguard-image");
  std::string path = (fs::path(tmp.path) / "sig.tar").string();
  std::ofstream(path, std::ios::binary) << sig.as_tar();
  FileReport r = check_image(path);
  ASSERT_NE(find(r, Code::kUnreadableImage), nullptr) << dump(r.diagnostics);
  EXPECT_NE(find(r, Code::kUnreadableImage)->message.find("1 artifact"), std::string::npos);
}

TEST(Image, DocumentsAreCheckedAgainstTheirDigests) {
  Layout l = two_layers();
  ArchiveMembers members = l.members();
  for (auto& [name, bytes] : members)  // the manifest: the blob after the config
    if (name == l.files[4].first) bytes[bytes.find("schemaVersion")] = 'S';
  TempDir tmp("hipguard-image");
  std::string path = (fs::path(tmp.path) / "i.tar").string();
  std::ofstream(path, std::ios::binary) << tar(members);
  FileReport r = check_image(path);
  EXPECT_EQ(codes(r), std::vector<Code>{Code::kImageDigestMismatch});
  EXPECT_TRUE(r.members.empty());
}

TEST(Image, LegacyDockerSaveLayersAreCheckedByTheirDiffIds) {
  std::string lower = tar({{"lib/k.co", heavy_co()}});
  auto save = [&](const std::string& layer_bytes) {
    std::string config = json(llvm::json::Object{
        {"rootfs", llvm::json::Object{{"type", "layers"}, {"diff_ids", llvm::json::Array{sha256(lower)}}}}});
    std::string manifest = json(llvm::json::Array{
        llvm::json::Object{{"Config", "cfg.json"}, {"Layers", llvm::json::Array{"0123abc/layer.tar"}}}});
    return tar({{"0123abc/layer.tar", layer_bytes}, {"cfg.json", config}, {"manifest.json", manifest}});
  };
  TempDir tmp("hipguard-image");
  std::string path = (fs::path(tmp.path) / "legacy.tar").string();
  std::ofstream(path, std::ios::binary) << save(lower);
  FileReport r = check_image(path);
  EXPECT_EQ(member_names(r, path), std::vector<std::string>{"!lib/k.co"});
  std::string altered = lower;
  altered[700] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << save(altered);
  r = check_image(path);
  EXPECT_EQ(codes(r), std::vector<Code>{Code::kImageDigestMismatch});
  EXPECT_TRUE(r.members.empty());
  // Stored compressed (the diff ID is of the uncompressed tar, so it cannot be compared): read.
  for (int filter : {ARCHIVE_FILTER_GZIP, ARCHIVE_FILTER_XZ, ARCHIVE_FILTER_BZIP2, ARCHIVE_FILTER_ZSTD}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << save(tar({{"lib/k.co", heavy_co()}}, filter));
    r = check_image(path);
    EXPECT_EQ(codes(r), std::vector<Code>{}) << filter;
    EXPECT_EQ(member_names(r, path), std::vector<std::string>{"!lib/k.co"}) << filter;
  }
}

TEST(Image, OtherFormsOfAStore) {
  TempDir tmp("hipguard-image");
  fs::path dir(tmp.path);
  Layout l = two_layers();
  // A layout tarred under a directory of its own.
  ArchiveMembers under;
  for (const auto& [name, bytes] : l.members()) under.emplace_back("img/" + name, bytes);
  std::string path = (dir / "under.tar").string();
  std::ofstream(path, std::ios::binary) << tar(under);
  EXPECT_EQ(member_names(check_image(path), path), (std::vector<std::string>{"!opt/new.co", "!lib/fine.co"}));
  // Compressed (`docker save | gzip`): read as the image, from its tar decompressed to a temporary file.
  std::string plain = (dir / "image.tar").string();
  std::ofstream(plain, std::ios::binary) << tar(l.members());
  std::vector<std::string> image_members = member_names(check_image(plain), plain);
  ASSERT_EQ(image_members, (std::vector<std::string>{"!opt/new.co", "!lib/fine.co"}));
  for (int filter : {ARCHIVE_FILTER_GZIP, ARCHIVE_FILTER_XZ, ARCHIVE_FILTER_ZSTD}) {
    path = (dir / "image.tar.z").string();
    std::ofstream(path, std::ios::binary | std::ios::trunc) << tar(l.members(), filter);
    FileReport r = check_image(path);
    EXPECT_EQ(find(r, Code::kImageReadAsArchive), nullptr) << filter << dump(r.diagnostics);
    EXPECT_EQ(member_names(r, path), image_members) << filter;
  }
  // As `tar -C DIR -cz .` writes it: "./" first, then every name under it.
  std::vector<TarEntry> dotted{{"./", "", AE_IFDIR}};
  for (const auto& [name, bytes] : l.members()) dotted.push_back({"./" + name, bytes});
  std::string dotted_path = (dir / "dotted.tar.gz").string();
  std::ofstream(dotted_path, std::ios::binary) << write_tar(dotted, ARCHIVE_FILTER_GZIP);
  FileReport dotted_report = check_image(dotted_path);
  EXPECT_EQ(find(dotted_report, Code::kImageReadAsArchive), nullptr) << dump(dotted_report.diagnostics);
  EXPECT_EQ(member_names(dotted_report, dotted_path), image_members);
  // A compressed tar that holds no image is an ordinary archive, without HG118.
  std::string other = (dir / "other.tar.gz").string();
  std::ofstream(other, std::ios::binary) << tar({{"lib/fine.co", fine_co()}}, ARCHIVE_FILTER_GZIP);
  FileReport other_report = check_image(other);
  EXPECT_EQ(find(other_report, Code::kImageReadAsArchive), nullptr) << dump(other_report.diagnostics);
  EXPECT_EQ(member_names(other_report, other), std::vector<std::string>{"!lib/fine.co"});
  // Where no temporary file can be written: read as an ordinary archive, and said so (HG118).
  const char* tmpdir = std::getenv("TMPDIR");
  std::string saved = tmpdir ? tmpdir : "";
  setenv("TMPDIR", (dir / "no such directory").c_str(), 1);
  FileReport r = check_image(path);
  tmpdir ? setenv("TMPDIR", saved.c_str(), 1) : unsetenv("TMPDIR");
  ASSERT_NE(find(r, Code::kImageReadAsArchive), nullptr) << dump(r.diagnostics);
  EXPECT_EQ(r.members.size(), 4u) << "each layer's files, whited out or not, named after their blob";
  // A layout met in a directory walk is one input; a blob that is a symlink is not followed.
  std::string walked = l.write_to(dir / "tree" / "layout");
  fs::create_directories(dir / "tree" / "other");
  fs::copy_file(dir / "under.tar", dir / "tree" / "other" / "x.txt");
  CheckPathsOptions o;
  o.targets = {target("gfx942")};
  o.archives = &archive_reader();
  CollectSink sink(false);
  check_paths({(dir / "tree").string()}, o, sink);
  std::vector<std::string> paths;
  for (const auto& f : sink.reports) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{walked + "!opt/new.co", walked + "!lib/fine.co", walked,
                                             (dir / "tree/other/x.txt").string() + "!opt/new.co",
                                             (dir / "tree/other/x.txt").string() + "!lib/fine.co",
                                             (dir / "tree/other/x.txt").string()}));
  fs::path blob = fs::path(walked) / l.files[1].first;
  fs::rename(blob, dir / "elsewhere");
  fs::create_symlink(dir / "elsewhere", blob);
  r = check_image(walked);
  const Diagnostic* d = find(r, Code::kUnreadableImage);
  ASSERT_NE(d, nullptr) << dump(r.diagnostics);
  EXPECT_NE(d->message.find("symlink is not followed"), std::string::npos) << d->message;
}

namespace {

// gcc SOURCE -> a shared library with `soname` linked against `needs`, or a program when soname is "".
std::string gcc_elf(const fs::path& dir, const std::string& soname, const std::vector<std::string>& needs) {
  std::string out = (dir / (soname.empty() ? "app" : soname)).string();
  std::ofstream(dir / "src.c") << "int f(void) { return 0; }\nint main(void) { return 0; }\n";
  std::string cmd = "gcc -nostdlib -o '" + out + "' '" + (dir / "src.c").string() + "'" +
                    (soname.empty() ? " -Wl,-e,main" : " -shared -fPIC -Wl,-soname," + soname) + " -Wl,--no-as-needed";
  for (const auto& n : needs) cmd += " '" + (dir / n).string() + "'";
  EXPECT_EQ(std::system((cmd + " 2>&1").c_str()), 0) << cmd;
  std::ifstream in(out, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

llvm::json::Array strings(std::initializer_list<const char*> list) {
  llvm::json::Array a;
  for (const char* s : list) a.push_back(s);
  return a;
}

}  // namespace

// The program a container of the image starts (its PATH, symlinks and ld.so.conf.d of the image, the
// config's LD_LIBRARY_PATH) is followed into the libraries it loads inside the image: what the image
// lacks is HG120 naming the program, a program it lacks HG124; the image's files are checked all the same.
TEST(Image, TheConfigsProgramIsFollowedInsideTheImage) {
  if (std::system("gcc --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gcc to build the test programs";
  TempDir tmp("hipguard-image");
  fs::path dir(tmp.path);
  std::string libk = gcc_elf(dir, "libk.so.1", {}), libmissing = gcc_elf(dir, "libmissing.so.2", {});
  std::string app = gcc_elf(dir, "", {"libk.so.1", "libmissing.so.2"});
  std::string files = layer({{"lib", "", kSymlink, "usr/lib"},
                             {"usr/local/k/libk.so.1.0", libk},
                             {"usr/local/k/libk.so.1", "", kSymlink, "libk.so.1.0"},
                             {"etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n"},
                             {"etc/ld.so.conf.d/k.conf", "/usr/local/k\n"},
                             {"opt/app/bin/app", app},
                             {"docker-entrypoint.sh", "#!/bin/sh\nexec app \"$@\"\n"},
                             {"README", "a file the search never opens"},
                             {"k.co", fine_co()}});
  auto checked = [&](llvm::json::Object run, std::string extra = "") {
    Layout l;
    l.image(extra.empty() ? std::vector<std::string>{files} : std::vector<std::string>{files, extra}, "",
            std::move(run));
    std::string path = (dir / "i.tar").string();
    std::ofstream(path, std::ios::binary) << l.as_tar();
    return check_image(path);
  };
  // On PATH; libk.so.1 through ld.so.conf.d and a symlink; libmissing.so.2 nowhere.
  FileReport r =
      checked(llvm::json::Object{{"Env", strings({"PATH=/usr/bin:/opt/app/bin"})}, {"Entrypoint", strings({"app"})}});
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kLibraryNotFound}) << dump(r.diagnostics);
  EXPECT_NE(r.diagnostics[0].message.find("the Entrypoint program app: libmissing.so.2, needed by app"),
            std::string::npos)
      << r.diagnostics[0].message;
  EXPECT_EQ(member_names(r, (dir / "i.tar").string()), std::vector<std::string>{"!k.co"})
      << "the program and libk.so.1.0 have no GPU code: followed, not listed";
  // The config's LD_LIBRARY_PATH finds it (Cmd without an Entrypoint, an absolute path).
  r = checked(llvm::json::Object{{"Env", strings({"LD_LIBRARY_PATH=/opt/m"})}, {"Cmd", strings({"/opt/app/bin/app"})}},
              layer({{"opt/m/libmissing.so.2", libmissing}}));
  EXPECT_TRUE(r.diagnostics.empty()) << dump(r.diagnostics);
  // HIPBLASLT_TENSILE_LIBPATH is hipBLASLt's Tensile directory, taken as it is: no <processor>/ below it.
  std::string libhb = gcc_elf(dir, "libhipblaslt.so.1", {}), blas = gcc_elf(dir, "", {"libhipblaslt.so.1"});
  std::string hb = layer({{"usr/lib/libhipblaslt.so.1", libhb},
                          {"usr/lib/hipblaslt/library/gfx942/k.co", fine_co()},
                          {"opt/app/bin/blas", blas}});
  r = checked(llvm::json::Object{{"Cmd", strings({"/opt/app/bin/blas"})}}, hb);
  EXPECT_TRUE(r.diagnostics.empty()) << dump(r.diagnostics);
  r = checked(llvm::json::Object{{"Env", strings({"HIPBLASLT_TENSILE_LIBPATH=/usr/lib/hipblaslt/library"})},
                                 {"Cmd", strings({"/opt/app/bin/blas"})}},
              hb);
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kKernelDirectoryMissing}) << dump(r.diagnostics);
  EXPECT_NE(r.diagnostics[0].message.find("(HIPBLASLT_TENSILE_LIBPATH) directory of libhipblaslt.so.1"),
            std::string::npos)
      << r.diagnostics[0].message;
  // Its kernel files are listed by name, whatever they hold (a compressed bundle is no ELF file).
  r = checked(llvm::json::Object{{"Env", strings({"HIPBLASLT_TENSILE_LIBPATH=/opt/t"})},
                                 {"Cmd", strings({"/opt/app/bin/blas"})}},
              layer({{"usr/lib/libhipblaslt.so.1", libhb},
                     {"opt/t/TensileLibrary_gfx942.co", std::string("CCOB\3\0\0\0", 8)},
                     {"opt/app/bin/blas", blas}}));
  EXPECT_TRUE(r.diagnostics.empty()) << dump(r.diagnostics);
  // A rocBLAS the program does not load is asked for its Tensile directory all the same (HG123, naming it).
  std::string blas_lib = gcc_elf(dir, "librocblas.so.5", {});
  r = checked(llvm::json::Object{{"Env", strings({"LD_LIBRARY_PATH=/opt/m"})}, {"Cmd", strings({"/opt/app/bin/app"})}},
              layer({{"opt/m/libmissing.so.2", libmissing}, {"opt/wheel/lib/librocblas.so.5", blas_lib}}));
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kKernelDirectoryMissing}) << dump(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].file, (dir / "i.tar").string() + "!opt/wheel/lib/librocblas.so.5");
  // Not in the image.
  r = checked(llvm::json::Object{{"Entrypoint", strings({"app"})}});
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kImageProgramMissing}) << dump(r.diagnostics);
  EXPECT_NE(r.diagnostics[0].message.find("searched PATH: /usr/local/sbin:"), std::string::npos)
      << r.diagnostics[0].message;
  // A script is a program too (its interpreter is not followed); a relative Cmd is taken from WorkingDir.
  r = checked(llvm::json::Object{{"Entrypoint", strings({"/docker-entrypoint.sh"})}});
  EXPECT_TRUE(r.diagnostics.empty()) << dump(r.diagnostics);
  r = checked(llvm::json::Object{{"WorkingDir", "/opt/app"}, {"Cmd", strings({"bin/app"})}});
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kLibraryNotFound}) << dump(r.diagnostics);
  r = checked(llvm::json::Object{{"Cmd", strings({"/README"})}});
  EXPECT_TRUE(r.diagnostics.empty()) << "a file that is no ELF is still a file of the image: " << dump(r.diagnostics);
  // No program: nothing to follow.
  r = checked(llvm::json::Object{});
  EXPECT_TRUE(r.diagnostics.empty()) << dump(r.diagnostics);
}

// A plain archive (a wheel, a tar, a .deb) is read as the files it installs: a rocBLAS in it is asked
// for its Tensile directory among them, as in a directory walk (HG123 without one, naming the member).
TEST(Image, PlainArchiveKernelLibraryIsAskedForItsTensileDirectory) {
  if (std::system("gcc --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gcc to build the test library";
  TempDir tmp("hipguard-image");
  fs::path dir(tmp.path);
  std::string blas = gcc_elf(dir, "librocblas.so.5", {});
  std::string path = (dir / "wheel.tar").string();
  auto checked = [&](std::vector<TarEntry> entries) {
    std::ofstream(path, std::ios::binary) << layer(entries);
    return check_image(path);
  };
  FileReport r =
      checked({{"torch/lib/librocblas.so.5", blas}, {"torch/lib/librocblas.so", "", kSymlink, "librocblas.so.5"}});
  ASSERT_EQ(codes(r), std::vector<Code>{Code::kKernelDirectoryMissing}) << dump(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].file, path + "!torch/lib/librocblas.so.5");
  // Its directory beside it, reached through a symlink as installed.
  r = checked({{"torch/lib/librocblas.so.5", blas},
               {"torch/share/library/Kernels.so-000-gfx942.hsaco", fine_co()},
               {"torch/lib/rocblas", "", kSymlink, "../share"}});
  EXPECT_TRUE(r.diagnostics.empty()) << dump(r.diagnostics);
  // An archive inside the archive installs nothing: its rocBLAS (here without GPU code) is not asked.
  std::string inner = layer({{"torch/lib/librocblas.so.5", blas}});
  r = checked({{"dist/inner.tar", inner}});
  EXPECT_EQ(codes(r), std::vector<Code>{Code::kNoHipFatbin}) << "no HG123: " << dump(r.diagnostics);
}
