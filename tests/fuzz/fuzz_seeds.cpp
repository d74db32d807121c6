// Builds the seed corpora for the fuzz targets from real inputs:
//   fuzz_seeds OUT_DIR FILE...
// FILE may be a raw code object (.co), an offload bundle (.hipfb), a compressed
// bundle, or a .hip_fatbin section dumped by objcopy (several bundles back to
// back). Seeds go to OUT_DIR/<target>/<hash>; each target gets what it parses:
// bundles and their CCOB forms, the code objects inside, entry IDs, target IDs,
// (fuzz_archive) small archives of the first inputs in every format, and (fuzz_report_codec) each input's
// reports as a check cache records them.
#include <archive.h>
#include <archive_entry.h>
#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/Compression.h>
#include <llvm/Support/Error.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "cache/report_codec.h"
#include "hipguard/bundle.h"
#include "hipguard/check.h"
#include "hipguard/code_object.h"
#include "archive_writer.h"
#include "ccob.h"

namespace fs = std::filesystem;
using hgtest::ByteVec;

namespace {

fs::path g_out;
size_t g_written = 0;

void seed(const std::string& target, const void* p, size_t n) {
  std::string_view v(static_cast<const char*>(p), n);
  char name[32];
  std::snprintf(name, sizeof name, "%016zx", std::hash<std::string_view>{}(v));
  fs::path dir = g_out / target;
  fs::create_directories(dir);
  fs::path f = dir / name;
  if (fs::exists(f)) return;
  std::ofstream(f, std::ios::binary).write(v.data(), v.size());
  ++g_written;
}
void seed(const std::string& target, const ByteVec& v) { seed(target, v.data(), v.size()); }
void seed(const std::string& target, std::string_view s) { seed(target, s.data(), s.size()); }

// The NT_AMDGPU_METADATA descriptors of a code object, read with LLVM Object.
void metadata_notes(hipguard::Bytes b) {
  auto file = llvm::object::ELF64LEFile::create(llvm::StringRef(reinterpret_cast<const char*>(b.data()), b.size()));
  if (!file) return llvm::consumeError(file.takeError());
  auto sections = file->sections();
  if (!sections) return llvm::consumeError(sections.takeError());
  for (const auto& sec : *sections) {
    if (sec.sh_type != llvm::ELF::SHT_NOTE || sec.sh_offset > b.size() || sec.sh_size > b.size() - sec.sh_offset)
      continue;
    llvm::Error err = llvm::Error::success();
    for (auto note : file->notes(sec, err))
      if (note.getName() == "AMDGPU" && note.getType() == 32) {  // NT_AMDGPU_METADATA
        llvm::StringRef d = note.getDescAsStringRef();
        seed("fuzz_metadata", d.data(), d.size());
      }
    llvm::consumeError(std::move(err));
  }
}

void code_object(hipguard::Bytes b) {
  ByteVec v(b.begin(), b.end());
  metadata_notes(b);
  seed("fuzz_code_object", v);
  seed("fuzz_elf_image_size", v);
  seed("fuzz_check_image", v);
}

void bundle(hipguard::Bytes b) {
  auto parsed = hipguard::parse_bundle(b);
  if (!parsed) return;
  ByteVec v(b.begin(), b.begin() + parsed->encoded_size);
  seed("fuzz_bundle", v);
  seed("fuzz_check_image", v);
  seed("fuzz_fatbin_section", v);
  for (const auto& e : parsed->entries) {
    seed("fuzz_entry_id", e.id);
    if (!e.parsed.target_id.empty()) seed("fuzz_target", e.parsed.target_id);
    hipguard::Bytes payload = hipguard::entry_bytes(*parsed, b, e);
    if (hipguard::classify(payload) == hipguard::PayloadKind::CodeObject) code_object(payload);
  }
  if (parsed->compressed) {
    auto format = parsed->ccob_method == 1 ? llvm::compression::Format::Zstd : llvm::compression::Format::Zlib;
    llvm::SmallVector<uint8_t, 0> out;
    if (llvm::Error err = llvm::compression::decompress(
            format, llvm::ArrayRef<uint8_t>(parsed->payload.data(), parsed->payload.size()), out,
            parsed->uncompressed_size)) {
      llvm::consumeError(std::move(err));
      return;
    }
    ByteVec inner(out.begin(), out.end());
    ByteVec ctl = {0};
    ctl.insert(ctl.end(), inner.begin(), inner.end());
    seed("fuzz_ccob", ctl);
    return;
  }
  // Compressed forms of this bundle, one per CCOB version and method.
  for (auto format : {llvm::compression::Format::Zlib, llvm::compression::Format::Zstd}) {
    if (llvm::compression::getReasonIfUnsupported(format)) continue;
    for (uint16_t version : {1, 2, 3}) {
      uint16_t method = format == llvm::compression::Format::Zstd ? hgtest::kCcobZstd : hgtest::kCcobZlib;
      ByteVec c = hgtest::make_ccob(v, version, method, /*hash=*/0);
      seed("fuzz_bundle", c);
      seed("fuzz_check_image", c);
      seed("fuzz_fatbin_section", c);
    }
  }
  for (uint8_t ctl : {0x00, 0x01, 0x02, 0x04, 0x05, 0x06}) {  // fuzz_ccob: version/method byte, then the bundle
    ByteVec c = {ctl};
    c.insert(c.end(), v.begin(), v.end());
    seed("fuzz_ccob", c);
  }
}

// The first inputs in a tar (plain, gzip, xz, zstd, bzip2), a zip, an ar and
// a .deb-shaped ar (debian-binary, data.tar.xz): fuzz_archive's seeds.
std::string archive_of(int format, int filter, const std::vector<std::pair<std::string, ByteVec>>& members) {
  hgtest::ArchiveMembers m;
  for (const auto& [name, bytes] : members) m.push_back({name, std::string(bytes.begin(), bytes.end())});
  return hgtest::write_archive(format, filter, m);
}

void archives(const std::vector<std::pair<std::string, ByteVec>>& members) {
  for (int filter :
       {ARCHIVE_FILTER_NONE, ARCHIVE_FILTER_GZIP, ARCHIVE_FILTER_XZ, ARCHIVE_FILTER_ZSTD, ARCHIVE_FILTER_BZIP2})
    seed("fuzz_archive", archive_of(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, filter, members));
  seed("fuzz_archive", archive_of(ARCHIVE_FORMAT_ZIP, ARCHIVE_FILTER_NONE, members));
  std::vector<std::pair<std::string, ByteVec>> flat;
  for (const auto& [name, bytes] : members) flat.push_back({fs::path(name).filename().string(), bytes});
  seed("fuzz_archive", archive_of(ARCHIVE_FORMAT_AR_GNU, ARCHIVE_FILTER_NONE, flat));
  std::string data = archive_of(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_XZ, members);
  seed("fuzz_archive", archive_of(ARCHIVE_FORMAT_AR_GNU, ARCHIVE_FILTER_NONE,
                                  {{"debian-binary", ByteVec{'2', '.', '0', '\n'}},
                                   {"data.tar.xz", ByteVec(data.begin(), data.end())}}));
}

// The same members as container images (src/inputs/image.cpp): an OCI archive of two layers, the
// upper one whiting out the first member and making a directory opaque, and a docker-save archive.
void images(const std::vector<std::pair<std::string, ByteVec>>& members) {
  if (members.empty()) return;
  std::string lower = archive_of(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_GZIP, members);
  std::string upper =
      hgtest::write_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_NONE,
                            {{".wh." + fs::path(members[0].first).filename().string(), ""}, {"opt/.wh..wh..opq", ""}});
  std::string config = R"({"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}})";
  auto descriptor = [](const char* type, const std::string& bytes) {
    return std::string(R"({"mediaType":")") + type + R"(","digest":"sha256:)" + hgtest::sha256_hex(bytes) +
           R"(","size":)" + std::to_string(bytes.size()) + "}";
  };
  std::string manifest = R"({"schemaVersion":2,"config":)" +
                         descriptor("application/vnd.oci.image.config.v1+json", config) + R"(,"layers":[)" +
                         descriptor("application/vnd.oci.image.layer.v1.tar+gzip", lower) + "," +
                         descriptor("application/vnd.oci.image.layer.v1.tar", upper) + "]}";
  std::string index =
      R"({"schemaVersion":2,"manifests":[)" + descriptor("application/vnd.oci.image.manifest.v1+json", manifest) + "]}";
  hgtest::ArchiveMembers oci = {{"oci-layout", R"({"imageLayoutVersion":"1.0.0"})"}, {"index.json", index}};
  for (const std::string* blob : {&lower, &upper, &config, &manifest})
    oci.push_back({"blobs/sha256/" + hgtest::sha256_hex(*blob), *blob});
  seed("fuzz_archive", hgtest::write_archive(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_NONE, oci));
  std::string plain = archive_of(ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_NONE, members);
  std::string saved_manifest =
      R"([{"Config":"config.json","RepoTags":["hg/seed:1"],"Layers":[")" + hgtest::sha256_hex(plain) + R"(.tar"]}])";
  seed("fuzz_archive",
       hgtest::write_archive(
           ARCHIVE_FORMAT_TAR_PAX_RESTRICTED, ARCHIVE_FILTER_NONE,
           {{hgtest::sha256_hex(plain) + ".tar", plain}, {"config.json", config}, {"manifest.json", saved_manifest}}));
}

}  // namespace

// The reports of checking `b` (structurally, then for gfx942) as RecordingSink records them, without its
// frame (header and checksum), which fuzz_report_codec adds itself.
void recorded_reports(hipguard::Bytes b, const std::string& path) {
  hipguard::RecordingSink sink;
  sink.begin_file(path);
  for (const auto& targets : {std::vector<hipguard::TargetId>{}, {*hipguard::parse_target_id("gfx942")}})
    sink.image(hipguard::check_image(b, path, targets));
  hipguard::FileReport file;
  file.path = path;
  file.hip = true;
  sink.end_file(std::move(file));
  std::string r = sink.finish();
  if (r.size() > 16) seed("fuzz_report_codec", r.data() + 8, r.size() - 16);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR FILE...\n", argv[0]);
    return 2;
  }
  g_out = argv[1];
  for (std::string_view t : {"gfx942", "gfx942:sramecc+:xnack-", "gfx90a:xnack+", "gfx950:xnack+", "mi300x:sramecc-",
                             "MI355X", "gfx10-3-generic", "gfx1030", "gfx9-4-generic:xnack-", "gfx1250"})
    seed("fuzz_target", t);
  for (std::string_view id : {"host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
                              "hip-amdgcn-amd-amdhsa-unknown-gfx10-3-generic", "hip-spirv64-amd-amdhsa--amdgcnspirv"})
    seed("fuzz_entry_id", id);
  std::vector<std::pair<std::string, ByteVec>> first;  // for the archive seeds: two small inputs
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    ByteVec data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (first.size() < 2 && data.size() < (256u << 10))
      first.push_back({"lib/" + fs::path(argv[i]).filename().string(), data});
    hipguard::Bytes b(data.data(), data.size());
    if (data.size() < (4u << 20)) recorded_reports(b, argv[i]);
    switch (hipguard::classify(b)) {
      case hipguard::PayloadKind::CodeObject: code_object(b); break;
      case hipguard::PayloadKind::OffloadBundle:
      case hipguard::PayloadKind::CompressedBundle:
      case hipguard::PayloadKind::Unknown:
        // A bundle, or a .hip_fatbin section (bundles back to back, maybe padded).
        seed("fuzz_fatbin_section", data);
        for (const auto& part : hipguard::split_fatbin_section(b))
          if (part.bundle) bundle(b.subspan(part.offset));
        break;
    }
  }
  if (!first.empty()) archives(first), images(first);
  std::printf("fuzz_seeds: %zu seed files in %s\n", g_written, g_out.c_str());
  return 0;
}
