// Reading a container image's JSON documents with llvm::json: OCI index -> manifests -> layers and
// config; docker-save's manifest.json -> layers and config. Every document named by a descriptor is
// checked against its digest before it is parsed.
#include "inputs/image_index.h"

#include <nettle/sha2.h>

#include <algorithm>
#include <set>

#include "hipguard/diagnostic.h"
#include "llvm/Support/JSON.h"

namespace hipguard {

std::optional<Platform> Platform::parse(std::string_view s) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    size_t end = s.find('/', at);
    parts.push_back(s.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  bool empty = std::any_of(parts.begin(), parts.end(), [](std::string_view p) { return p.empty(); });
  if (parts.size() < 2 || parts.size() > 3 || empty) return std::nullopt;
  return Platform{std::string(parts[0]), std::string(parts[1]), parts.size() == 3 ? std::string(parts[2]) : ""};
}

bool is_sha256_digest(std::string_view digest) {
  constexpr std::string_view kAlgorithm = "sha256:";
  if (digest.size() != kAlgorithm.size() + 64 || digest.substr(0, kAlgorithm.size()) != kAlgorithm) return false;
  return std::all_of(digest.begin() + kAlgorithm.size(), digest.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string digest_of_bytes(Bytes bytes, const FileData* file) {
  constexpr size_t kChunk = 16 << 20;
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  for (size_t at = 0; at < bytes.size(); at += kChunk) {
    Bytes chunk = bytes.subspan(at, std::min(kChunk, bytes.size() - at));
    sha256_update(&ctx, chunk.size(), chunk.data());
    if (file) file->release(chunk);
  }
  uint8_t hash[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, sizeof hash, hash);
  static const char digits[] = "0123456789abcdef";
  std::string s = "sha256:";
  for (uint8_t b : hash) s += digits[b >> 4], s += digits[b & 15];
  return s;
}

namespace {

constexpr unsigned kMaxIndexNesting = 4;  // an index of indexes (docker buildx, containerd's store: one level)

bool is_index_type(llvm::StringRef media_type) {
  return media_type == "application/vnd.oci.image.index.v1+json" ||
         media_type == "application/vnd.docker.distribution.manifest.list.v2+json";
}

// A manifest is an image's when its config is an image config (OCI manifest.md "Guidelines for
// artifact usage": artifacts set artifactType or another config media type). No media type: an image.
bool is_image_manifest(const llvm::json::Object& manifest) {
  if (manifest.getString("artifactType")) return false;
  const llvm::json::Object* config = manifest.getObject("config");
  llvm::StringRef type = config ? config->getString("mediaType").value_or("") : "";
  return type.empty() || type == "application/vnd.oci.image.config.v1+json" ||
         type == "application/vnd.docker.container.image.v1+json";
}

// Foreign (non-distributable) layers are not in an image's store by design (OCI layer.md).
bool is_foreign_layer(llvm::StringRef media_type) {
  return media_type.contains("nondistributable") || media_type.contains("foreign");
}

class Reader {
 public:
  Reader(const BlobSource& blobs, ImageList& list) : blobs_(blobs), list_(list) {}

  // The document `name` (`what`, in a problem) parsed, checked against `digest` first when given;
  // or nullopt with a problem said.
  std::optional<llvm::json::Value> document(const std::string& name, const std::string& what,
                                            const std::string& digest = "") {
    Result<Bytes> bytes = blobs_(name);
    if (!bytes) return problem(what + ": " + bytes.error().message), std::nullopt;
    if (bytes->size() > kMaxImageDocumentBytes)
      return problem(what + " is " + std::to_string(bytes->size()) + " bytes; hipguard reads at most " +
                     std::to_string(kMaxImageDocumentBytes) + " bytes of one"),
             std::nullopt;
    if (!digest.empty() && digest_of_bytes(*bytes) != digest) {
      list_.problems.push_back({Code::kImageDigestMismatch,
                                what + " does not have the digest that names it; the image was not read further"});
      return std::nullopt;
    }
    llvm::Expected<llvm::json::Value> v =
        llvm::json::parse(llvm::StringRef(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
    if (!v) return problem(what + " is not JSON: " + llvm::toString(v.takeError())), std::nullopt;
    return std::move(*v);
  }
  // A descriptor's blob (OCI descriptor.md): its digest names it in the layout's blobs/ directory.
  std::optional<llvm::json::Value> blob_document(const llvm::json::Object& descriptor, const std::string& what) {
    std::string digest = descriptor.getString("digest").value_or("").str();
    if (!is_sha256_digest(digest)) return problem(what + " has no sha256 digest"), std::nullopt;
    return document(blob_name(digest), what + " " + digest, digest);
  }
  static std::string blob_name(const std::string& digest) { return "blobs/sha256/" + digest.substr(7); }

  void problem(std::string sentence) { list_.problems.push_back({Code::kUnreadableImage, sentence}); }

  // The image a manifest describes: its layers and the config's diff IDs. An artifact is skipped.
  void manifest(const llvm::json::Object& descriptor, std::string name) {
    std::optional<llvm::json::Value> m = blob_document(descriptor, "the image manifest");
    const llvm::json::Object* o = m ? m->getAsObject() : nullptr;
    if (!m) return;
    if (o && !is_image_manifest(*o)) return void(++artifacts);
    const llvm::json::Array* layers = o ? o->getArray("layers") : nullptr;
    const llvm::json::Object* config = o ? o->getObject("config") : nullptr;
    if (!layers || !config) return problem("the image manifest " + digest_of(descriptor) + " has no layers or config");
    if (layers->size() > kMaxImageLayers)
      return problem("the image manifest " + digest_of(descriptor) + " lists " + std::to_string(layers->size()) +
                     " layers; hipguard reads images of at most " + std::to_string(kMaxImageLayers));
    ImageDescription image;
    image.name = std::move(name);
    for (const llvm::json::Value& l : *layers) {
      const llvm::json::Object* layer = l.getAsObject();
      std::string digest = layer ? layer->getString("digest").value_or("").str() : "";
      if (!is_sha256_digest(digest))
        return problem("a layer of the image manifest " + digest_of(descriptor) + " has no sha256 digest");
      if (is_foreign_layer(layer->getString("mediaType").value_or("")) && !blobs_(blob_name(digest))) continue;
      image.layers.push_back({blob_name(digest), digest, ""});
    }
    std::optional<llvm::json::Value> c = blob_document(*config, "the image config");
    if (c) read_config(*c, image);
    list_.images.push_back(std::move(image));
  }

  // The config's rootfs.diff_ids, one per layer (OCI config.md).
  void read_config(const llvm::json::Value& config, ImageDescription& image) {
    const llvm::json::Object* o = config.getAsObject();
    if (!o) return problem("the image config is not a JSON object");
    if (const llvm::json::Object* rootfs = o->getObject("rootfs"))
      if (const llvm::json::Array* ids = rootfs->getArray("diff_ids"))
        for (size_t i = 0; i < ids->size() && i < image.layers.size(); ++i)
          image.layers[i].diff_id = (*ids)[i].getAsString().value_or("").str();
    if (const llvm::json::Object* run = o->getObject("config")) {
      strings(run->getArray("Env"), image.run.env);
      strings(run->getArray("Entrypoint"), image.run.entrypoint);
      strings(run->getArray("Cmd"), image.run.cmd);
      image.run.working_dir = run->getString("WorkingDir").value_or("").str();
    }
  }
  // The strings of a JSON array (other values skipped); a missing array is none.
  static void strings(const llvm::json::Array* a, std::vector<std::string>& out) {
    if (!a) return;
    for (const llvm::json::Value& v : *a)
      if (auto s = v.getAsString()) out.push_back(s->str());
  }

  static std::string digest_of(const llvm::json::Object& descriptor) {
    return descriptor.getString("digest").value_or("(no digest)").str();
  }

  const BlobSource& blobs_;
  ImageList& list_;
  size_t artifacts = 0;  // manifests skipped as not an image's
};

// The manifests of an index for `platform`, nested indexes followed (each once).
class IndexWalk {
 public:
  IndexWalk(Reader& reader, const Platform& platform) : reader_(reader), platform_(platform) {}

  // `name`: the tag of the descriptor that led here (containerd's store tags the nested index).
  void index(const llvm::json::Value& v, const std::string& what, unsigned depth, const std::string& name) {
    const llvm::json::Object* o = v.getAsObject();
    const llvm::json::Array* manifests = o ? o->getArray("manifests") : nullptr;
    if (!manifests) return reader_.problem(what + " has no manifests");
    for (const llvm::json::Value& m : *manifests)
      if (const llvm::json::Object* d = m.getAsObject()) descriptor(*d, depth, name);
  }

  // After the walk: the manifests found (one image each), or why there is none.
  void finish() {
    size_t before = reader_.list_.images.size();
    for (auto& [descriptor, name] : chosen_) reader_.manifest(descriptor, name);
    if (reader_.list_.images.size() == before + 1) reader_.list_.images.back().name.clear();  // one: no name
    if (reader_.list_.images.size() == before && reader_.artifacts > 0)
      reader_.problem("the image holds no image manifest, only " + std::to_string(reader_.artifacts) +
                      " artifact(s) (a config that is not an image config, or an artifactType)");
    if (chosen_.empty() && !other_platforms_.empty()) {
      std::string list;
      for (const auto& p : other_platforms_) list += (list.empty() ? "" : ", ") + p;
      reader_.problem("the image has no manifest for " + platform_.str() + "; it has " + list +
                      " (--platform picks one)");
    }
  }

 private:
  void descriptor(const llvm::json::Object& d, unsigned depth, const std::string& inherited) {
    std::string digest = d.getString("digest").value_or("").str();
    std::string name = name_of(d, inherited.empty() ? digest.substr(0, 19) : inherited);
    if (is_index_type(d.getString("mediaType").value_or(""))) {
      if (depth + 1 >= kMaxIndexNesting) return reader_.problem("image indexes nested too deep");
      if (!indexes_.insert(digest).second) return;  // an index reached twice (a cycle): walked once
      if (auto nested = reader_.blob_document(d, "the image index")) index(*nested, "the image index", depth + 1, name);
      return;
    }
    if (const llvm::json::Object* annotations = d.getObject("annotations"))
      if (annotations->getString("vnd.docker.reference.type") == "attestation-manifest") return;
    if (const llvm::json::Object* p = d.getObject("platform")) {
      Platform found{p->getString("os").value_or("").str(), p->getString("architecture").value_or("").str(),
                     p->getString("variant").value_or("").str()};
      if (found.os != platform_.os || found.architecture != platform_.architecture ||
          (!platform_.variant.empty() && found.variant != platform_.variant)) {
        if (found.os != "unknown") other_platforms_.insert(found.str());
        return;
      }
    }
    if (!seen_.insert(digest).second) return;  // one manifest under several tags: one image
    chosen_.emplace_back(d, name);             // a copy: a nested index's document is gone after its walk
  }

  // Its tag, or `otherwise` ("sha256:" and 12 digits, as docker shows image IDs).
  static std::string name_of(const llvm::json::Object& d, const std::string& otherwise) {
    if (const llvm::json::Object* a = d.getObject("annotations"))
      for (const char* key : {"io.containerd.image.name", "org.opencontainers.image.ref.name"})
        if (auto n = a->getString(key)) return n->str();
    return otherwise;
  }

  Reader& reader_;
  const Platform& platform_;
  std::vector<std::pair<llvm::json::Object, std::string>> chosen_;
  std::set<std::string> seen_, indexes_, other_platforms_;
};

}  // namespace

ImageList read_oci_index(const BlobSource& blobs, const Platform& platform) {
  ImageList list;
  Reader reader(blobs, list);
  list.recognized = true;  // an oci-layout file beside it says what it is
  std::optional<llvm::json::Value> top = reader.document("index.json", "index.json");
  if (!top) return list;
  IndexWalk walk(reader, platform);
  walk.index(*top, "index.json", 0, "");
  walk.finish();
  return list;
}

std::optional<std::string> ImageRun::get(std::string_view name) const {
  std::optional<std::string> value;
  for (const std::string& e : env)
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=')
      value = e.substr(name.size() + 1);
  return value;
}

std::string ImageRun::program() const {
  if (!entrypoint.empty()) return entrypoint[0];
  return cmd.empty() ? "" : cmd[0];
}

std::string ImageRun::program_path() const {
  std::string p = program();
  if (p.empty() || p[0] == '/' || p.find('/') == std::string::npos) return p;
  return (working_dir.empty() ? "/" : working_dir) + "/" + p;
}

ImageList read_docker_manifest(const BlobSource& blobs) {
  ImageList list;
  Reader reader(blobs, list);
  std::optional<llvm::json::Value> top = reader.document("manifest.json", "manifest.json");
  if (!top) return list;
  const llvm::json::Array* images = top->getAsArray();
  if (!images) return list;
  for (const llvm::json::Value& v : *images)
    if (const llvm::json::Object* o = v.getAsObject(); o && o->getArray("Layers")) list.recognized = true;
  for (const llvm::json::Value& v : *images) {
    const llvm::json::Object* o = v.getAsObject();
    const llvm::json::Array* layers = o ? o->getArray("Layers") : nullptr;
    std::string config = o ? o->getString("Config").value_or("").str() : "";
    if (!layers || config.empty() || layers->size() > kMaxImageLayers) {
      reader.problem("an image of manifest.json has no Config, or no Layers or more than " +
                     std::to_string(kMaxImageLayers));
      continue;
    }
    ImageDescription image;
    if (const llvm::json::Array* tags = o->getArray("RepoTags"); tags && !tags->empty())
      image.name = (*tags)[0].getAsString().value_or("").str();
    if (image.name.empty()) image.name = config;
    for (const llvm::json::Value& l : *layers) {
      std::string name = l.getAsString().value_or("").str();
      // Docker 25+ ("blobs/sha256/<hex>") and skopeo ("<hex>.tar") name a layer by its digest.
      std::string base = name.substr(name.rfind('/') + 1);
      if (base.size() > 4 && base.compare(base.size() - 4, 4, ".tar") == 0) base.resize(base.size() - 4);
      std::string digest = is_sha256_digest("sha256:" + base) ? "sha256:" + base : "";
      image.layers.push_back({name, digest, ""});
    }
    if (auto c = reader.document(config, "the image config " + config)) reader.read_config(*c, image);
    list.images.push_back(std::move(image));
  }
  if (list.images.size() == 1) list.images[0].name.clear();
  return list;
}

}  // namespace hipguard
