// AMD's own answers for the differential tests (tests/oracles/oracle_diff.py): kernel metadata, ISA names
// and code-object selection as comgr (libamd_comgr.so.3) gives them. Built and run inside the ROCm root.
//
// Reads requests from stdin, one per line, fields separated by tabs; writes one JSON object per line:
//   isas                                  -> {"isas": [...]}            (amd_comgr_get_isa_count/_name)
//   meta  PATH OFFSET SIZE                -> {"kernels": [{key: string|null}...]}   (amdhsa.kernels of
//                                            AMD_COMGR_DATA_KIND_EXECUTABLE metadata: all notes merged)
//   lookup PATH OFFSET SIZE ISA...        -> {"found": [{"isa", "offset", "size"}...]}  one
//                                            amd_comgr_lookup_code_object call per ISA (uncompressed bundle)
//   unbundle PATH OFFSET SIZE ID...       -> {"items": [{"name", "size", "hash"}...]}  one
//                                            AMD_COMGR_ACTION_UNBUNDLE with these bundle entry IDs
//   meta_entry PATH OFFSET SIZE ID        -> as meta, for the bytes AMD_COMGR_ACTION_UNBUNDLE gives for ID
//                                            (a compressed or uncompressed bundle)
//   hash PATH OFFSET SIZE                 -> {"hash"}  (same hash as unbundle's, for plain bytes)
// Errors: {"error": "..."}; the line still answers its request.
#include <amd_comgr/amd_comgr.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

// FNV-1a 64: identifies an unbundled code object's bytes among the bundle's entries.
std::string fnv(const char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  char b[24];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

bool read_slice(const std::string& path, uint64_t off, uint64_t size, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  f.seekg(static_cast<std::streamoff>(off));
  out->resize(size);
  f.read(out->data(), static_cast<std::streamsize>(size));
  return static_cast<uint64_t>(f.gcount()) == size;
}

struct Fail {
  std::string what;
};
void check(amd_comgr_status_t s, const char* what) {
  if (s != AMD_COMGR_STATUS_SUCCESS) throw Fail{std::string(what) + " failed (status " + std::to_string(s) + ")"};
}

std::string meta_string(amd_comgr_metadata_node_t n) {
  size_t size = 0;
  check(amd_comgr_get_metadata_string(n, &size, nullptr), "amd_comgr_get_metadata_string");
  std::string s(size, '\0');
  check(amd_comgr_get_metadata_string(n, &size, s.data()), "amd_comgr_get_metadata_string");
  if (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

const char* kFields[] = {".symbol",
                         ".name",
                         ".group_segment_fixed_size",
                         ".private_segment_fixed_size",
                         ".kernarg_segment_size",
                         ".kernarg_segment_align",
                         ".vgpr_count",
                         ".agpr_count",
                         ".sgpr_count",
                         ".wavefront_size",
                         ".max_flat_workgroup_size",
                         ".uses_dynamic_stack"};

std::string do_meta(const std::string& bytes) {
  amd_comgr_data_t data;
  check(amd_comgr_create_data(AMD_COMGR_DATA_KIND_EXECUTABLE, &data), "amd_comgr_create_data");
  std::string out;
  try {
    check(amd_comgr_set_data(data, bytes.size(), bytes.data()), "amd_comgr_set_data");
    amd_comgr_metadata_node_t root, kernels;
    check(amd_comgr_get_data_metadata(data, &root), "amd_comgr_get_data_metadata");
    check(amd_comgr_metadata_lookup(root, "amdhsa.kernels", &kernels), "amd_comgr_metadata_lookup amdhsa.kernels");
    size_t n = 0;
    check(amd_comgr_get_metadata_list_size(kernels, &n), "amd_comgr_get_metadata_list_size");
    out = "{\"kernels\": [";
    for (size_t i = 0; i < n; ++i) {
      amd_comgr_metadata_node_t k;
      check(amd_comgr_index_list_metadata(kernels, i, &k), "amd_comgr_index_list_metadata");
      out += i ? ", {" : "{";
      bool first = true;
      for (const char* key : kFields) {
        amd_comgr_metadata_node_t v;
        std::string val = "null";
        if (amd_comgr_metadata_lookup(k, key, &v) == AMD_COMGR_STATUS_SUCCESS) {
          amd_comgr_metadata_kind_t kind;
          check(amd_comgr_get_metadata_kind(v, &kind), "amd_comgr_get_metadata_kind");
          if (kind == AMD_COMGR_METADATA_KIND_STRING) val = json_str(meta_string(v));
          amd_comgr_destroy_metadata(v);
        }
        out += (first ? "" : ", ") + json_str(key) + ": " + val;
        first = false;
      }
      out += "}";
      amd_comgr_destroy_metadata(k);
    }
    out += "]}";
    amd_comgr_destroy_metadata(kernels);
    amd_comgr_destroy_metadata(root);
  } catch (...) {
    amd_comgr_release_data(data);
    throw;
  }
  amd_comgr_release_data(data);
  return out;
}

// As HIP asks for an uncompressed bundle: a FATBIN data object, one query per ISA.
std::string do_lookup(const std::string& bytes, const std::vector<std::string>& isas) {
  amd_comgr_data_t data;
  check(amd_comgr_create_data(AMD_COMGR_DATA_KIND_FATBIN, &data), "amd_comgr_create_data");
  std::string out = "{\"found\": [";
  try {
    check(amd_comgr_set_data(data, bytes.size(), bytes.data()), "amd_comgr_set_data");
    for (size_t i = 0; i < isas.size(); ++i) {
      amd_comgr_code_object_info_t q{isas[i].c_str(), 0, 0};
      check(amd_comgr_lookup_code_object(data, &q, 1), "amd_comgr_lookup_code_object");
      out += (i ? ", " : "") + std::string("{\"isa\": ") + json_str(isas[i]) +
             ", \"offset\": " + std::to_string(q.offset) + ", \"size\": " + std::to_string(q.size) + "}";
    }
  } catch (...) {
    amd_comgr_release_data(data);
    throw;
  }
  amd_comgr_release_data(data);
  return out + "]}";
}

// As CLR unbundles a compressed bundle: OBJ_BUNDLE data in a set, AMD_COMGR_ACTION_UNBUNDLE with the
// bundle entry IDs, the EXECUTABLE items of the result as (name, bytes).
std::vector<std::pair<std::string, std::string>> unbundle(const std::string& bytes,
                                                          const std::vector<std::string>& ids) {
  amd_comgr_data_set_t in, out_set;
  amd_comgr_data_t bundle;
  amd_comgr_action_info_t action;
  check(amd_comgr_create_data_set(&in), "amd_comgr_create_data_set");
  check(amd_comgr_create_data_set(&out_set), "amd_comgr_create_data_set");
  check(amd_comgr_create_action_info(&action), "amd_comgr_create_action_info");
  check(amd_comgr_create_data(AMD_COMGR_DATA_KIND_OBJ_BUNDLE, &bundle), "amd_comgr_create_data");
  std::vector<std::pair<std::string, std::string>> items;
  try {
    check(amd_comgr_set_data(bundle, bytes.size(), bytes.data()), "amd_comgr_set_data");
    check(amd_comgr_set_data_name(bundle, "hipfatbin"), "amd_comgr_set_data_name");
    check(amd_comgr_data_set_add(in, bundle), "amd_comgr_data_set_add");
    std::vector<const char*> cids;
    for (const auto& s : ids) cids.push_back(s.c_str());
    check(amd_comgr_action_info_set_bundle_entry_ids(action, cids.data(), cids.size()),
          "amd_comgr_action_info_set_bundle_entry_ids");
    check(amd_comgr_do_action(AMD_COMGR_ACTION_UNBUNDLE, action, in, out_set), "AMD_COMGR_ACTION_UNBUNDLE");
    size_t n = 0;
    check(amd_comgr_action_data_count(out_set, AMD_COMGR_DATA_KIND_EXECUTABLE, &n), "amd_comgr_action_data_count");
    for (size_t i = 0; i < n; ++i) {
      amd_comgr_data_t item;
      check(amd_comgr_action_data_get_data(out_set, AMD_COMGR_DATA_KIND_EXECUTABLE, i, &item),
            "amd_comgr_action_data_get_data");
      size_t nsize = 0, size = 0;
      check(amd_comgr_get_data_name(item, &nsize, nullptr), "amd_comgr_get_data_name");
      std::string name(nsize, '\0');
      check(amd_comgr_get_data_name(item, &nsize, name.data()), "amd_comgr_get_data_name");
      if (!name.empty() && name.back() == '\0') name.pop_back();
      check(amd_comgr_get_data(item, &size, nullptr), "amd_comgr_get_data");
      std::string body(size, '\0');
      if (size) check(amd_comgr_get_data(item, &size, body.data()), "amd_comgr_get_data");
      amd_comgr_release_data(item);
      items.emplace_back(std::move(name), std::move(body));
    }
  } catch (...) {
    amd_comgr_release_data(bundle);
    amd_comgr_destroy_data_set(in);
    amd_comgr_destroy_data_set(out_set);
    amd_comgr_destroy_action_info(action);
    throw;
  }
  amd_comgr_release_data(bundle);
  amd_comgr_destroy_data_set(in);
  amd_comgr_destroy_data_set(out_set);
  amd_comgr_destroy_action_info(action);
  return items;
}

std::string do_unbundle(const std::string& bytes, const std::vector<std::string>& ids) {
  std::string out = "{\"items\": [";
  bool first = true;
  for (const auto& [name, body] : unbundle(bytes, ids)) {
    out += (first ? "" : ", ") + std::string("{\"name\": ") + json_str(name) +
           ", \"size\": " + std::to_string(body.size()) + ", \"hash\": \"" + fnv(body.data(), body.size()) + "\"}";
    first = false;
  }
  return out + "]}";
}

// The metadata of one entry of a bundle (compressed or not) as comgr unbundles it.
std::string do_meta_entry(const std::string& bytes, const std::string& id) {
  for (const auto& item : unbundle(bytes, {id}))
    if (!item.second.empty()) return do_meta(item.second);
  throw Fail{"AMD_COMGR_ACTION_UNBUNDLE gave no bytes for " + id};
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, '\t');) f.push_back(x);
    if (f.empty()) continue;
    std::string answer;
    try {
      if (f[0] == "isas") {
        size_t n = 0;
        check(amd_comgr_get_isa_count(&n), "amd_comgr_get_isa_count");
        answer = "{\"isas\": [";
        for (size_t i = 0; i < n; ++i) {
          const char* name = nullptr;
          check(amd_comgr_get_isa_name(i, &name), "amd_comgr_get_isa_name");
          answer += (i ? ", " : "") + json_str(name);
        }
        answer += "]}";
      } else if (f.size() >= 4) {
        std::string bytes;
        if (!read_slice(f[1], std::stoull(f[2]), std::stoull(f[3]), &bytes)) throw Fail{"cannot read " + f[1]};
        std::vector<std::string> rest(f.begin() + 4, f.end());
        if (f[0] == "meta") answer = do_meta(bytes);
        else if (f[0] == "lookup") answer = do_lookup(bytes, rest);
        else if (f[0] == "unbundle") answer = do_unbundle(bytes, rest);
        else if (f[0] == "meta_entry" && rest.size() == 1) answer = do_meta_entry(bytes, rest[0]);
        else if (f[0] == "hash") answer = "{\"hash\": \"" + fnv(bytes.data(), bytes.size()) + "\"}";
        else throw Fail{"unknown request " + f[0]};
      } else {
        throw Fail{"bad request"};
      }
    } catch (const Fail& e) {
      answer = "{\"error\": " + json_str(e.what) + "}";
    } catch (const std::exception& e) {
      answer = "{\"error\": " + json_str(e.what()) + "}";
    }
    std::cout << answer << "\n" << std::flush;
  }
  return 0;
}
