// P1 input: writes every amdgcn code object found in FILE's offload bundles to
// DIR/<n>.co, through hipguard's own bundle reader.
#include <cstdio>
#include <fstream>
#include <string>

#include "hipguard/check_paths.h"

using namespace hipguard;

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: extract_code_objects FILE DIR\n");
    return 2;
  }
  auto file = FileData::open(argv[1]);
  if (!file) return fprintf(stderr, "%s\n", file.error().message.c_str()), 1;
  size_t n = 0;
  Bytes data = file->bytes();
  std::string hay(reinterpret_cast<const char*>(data.data()), data.size());
  for (size_t pos = hay.find(kBundleMagic); pos != std::string::npos; pos = hay.find(kBundleMagic, pos + 1)) {
    auto b = parse_bundle(data.subspan(pos));
    if (!b) continue;
    for (const auto& e : b->entries) {
      if (!e.parsed.is_amdgcn() || e.size == 0) continue;
      Bytes co = entry_bytes(*b, data.subspan(pos), e);
      std::ofstream out(std::string(argv[2]) + "/" + std::to_string(n++) + ".co", std::ios::binary);
      out.write(reinterpret_cast<const char*>(co.data()), static_cast<std::streamsize>(co.size()));
    }
  }
  printf("%zu code objects written\n", n);
  return 0;
}
