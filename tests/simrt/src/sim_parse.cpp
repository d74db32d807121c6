// Minimal, bounds-checked parsing for the simulated HIP runtime. Independent
// of hipguard's core on purpose (see sim_parse.h).
#include "sim_parse.h"

#include <cstring>
#include <limits>

namespace simrt {
namespace {

// ---- processor table -------------------------------------------------------
// EF_AMDGPU_MACH values: LLVM ELF.h / AMDGPUUsage (reference
// amdgpu-code-object.md §2.2). Feature support: AMDGPUUsage "Target Features
// Supported" (ref §3.2). LDS per workgroup: LLVM
// FeatureAddressableLocalMemorySize (ref §3.1) = CLR-new device.cpp table (ref
// hip-fatbin §6): 65536 default, 163840 gfx950, 327680 gfx1250 family.
// Generic family: CLR-new hip_fatbin.cpp TargetGenericMap (ref hip-fatbin §4),
// plus gfx1250/1251 -> gfx12-5-generic (PR #9741).
constexpr uint32_t k64K = 65536;
constexpr Processor kProcessors[] = {
    {"gfx600", 0x020, false, false, 32768, nullptr, false},
    {"gfx601", 0x021, false, false, 32768, nullptr, false},
    {"gfx602", 0x03a, false, false, 32768, nullptr, false},
    {"gfx700", 0x022, false, false, k64K, nullptr, false},
    {"gfx701", 0x023, false, false, k64K, nullptr, false},
    {"gfx702", 0x024, false, false, k64K, nullptr, false},
    {"gfx703", 0x025, false, false, k64K, nullptr, false},
    {"gfx704", 0x026, false, false, k64K, nullptr, false},
    {"gfx705", 0x03b, false, false, k64K, nullptr, false},
    {"gfx801", 0x028, true, false, k64K, nullptr, false},
    {"gfx802", 0x029, false, false, k64K, nullptr, false},
    {"gfx803", 0x02a, false, false, k64K, nullptr, false},
    {"gfx805", 0x03c, false, false, k64K, nullptr, false},
    {"gfx810", 0x02b, true, false, k64K, nullptr, false},
    {"gfx900", 0x02c, true, false, k64K, "gfx9-generic", false},
    {"gfx902", 0x02d, true, false, k64K, "gfx9-generic", false},
    {"gfx904", 0x02e, true, false, k64K, "gfx9-generic", false},
    {"gfx906", 0x02f, true, true, k64K, "gfx9-generic", false},
    {"gfx908", 0x030, true, true, k64K, nullptr, false},
    {"gfx909", 0x031, true, false, k64K, "gfx9-generic", false},
    {"gfx90a", 0x03f, true, true, k64K, nullptr, false},
    {"gfx90c", 0x032, true, false, k64K, "gfx9-generic", false},
    {"gfx940", 0x040, true, true, k64K, nullptr, false},  // removed from new LLVM
    {"gfx941", 0x04b, true, true, k64K, nullptr, false},  // removed from new LLVM
    {"gfx942", 0x04c, true, true, k64K, "gfx9-4-generic", false},
    {"gfx950", 0x04f, true, true, 163840, "gfx9-4-generic", false},
    {"gfx1010", 0x033, true, false, k64K, "gfx10-1-generic", false},
    {"gfx1011", 0x034, true, false, k64K, "gfx10-1-generic", false},
    {"gfx1012", 0x035, true, false, k64K, "gfx10-1-generic", false},
    {"gfx1013", 0x042, true, false, k64K, "gfx10-1-generic", false},
    {"gfx1030", 0x036, false, false, k64K, "gfx10-3-generic", false},
    {"gfx1031", 0x037, false, false, k64K, "gfx10-3-generic", false},
    {"gfx1032", 0x038, false, false, k64K, "gfx10-3-generic", false},
    {"gfx1033", 0x039, false, false, k64K, "gfx10-3-generic", false},
    {"gfx1034", 0x03e, false, false, k64K, "gfx10-3-generic", false},
    {"gfx1035", 0x03d, false, false, k64K, "gfx10-3-generic", false},
    {"gfx1036", 0x045, false, false, k64K, "gfx10-3-generic", false},
    {"gfx1100", 0x041, false, false, k64K, "gfx11-generic", false},
    {"gfx1101", 0x046, false, false, k64K, "gfx11-generic", false},
    {"gfx1102", 0x047, false, false, k64K, "gfx11-generic", false},
    {"gfx1103", 0x044, false, false, k64K, "gfx11-generic", false},
    {"gfx1150", 0x043, false, false, k64K, "gfx11-generic", false},
    {"gfx1151", 0x04a, false, false, k64K, "gfx11-generic", false},
    {"gfx1152", 0x055, false, false, k64K, "gfx11-generic", false},
    {"gfx1153", 0x058, false, false, k64K, "gfx11-generic", false},
    {"gfx1200", 0x048, false, false, k64K, "gfx12-generic", false},
    {"gfx1201", 0x04e, false, false, k64K, "gfx12-generic", false},
    // gfx1250: the sources disagree on its xnack/sramecc target features (ref
    // §3.2 note); the simulator treats it as having none, so its device ID is
    // plain "gfx1250" and code-object "any"/"unsupported" bits match.
    {"gfx1250", 0x049, false, false, 327680, "gfx12-5-generic", false},
    {"gfx1251", 0x05a, false, false, 327680, "gfx12-5-generic", false},
    // generic targets (code objects only; never a device)
    {"gfx9-generic", 0x051, true, false, k64K, nullptr, true},
    {"gfx9-4-generic", 0x05f, true, true, k64K, nullptr, true},
    {"gfx10-1-generic", 0x052, true, false, k64K, nullptr, true},
    {"gfx10-3-generic", 0x053, false, false, k64K, nullptr, true},
    {"gfx11-generic", 0x054, false, false, k64K, nullptr, true},
    {"gfx12-generic", 0x059, false, false, k64K, nullptr, true},
    {"gfx12-5-generic", 0x05b, false, false, 327680, nullptr, true},
};

// ---- little-endian reads with bounds ---------------------------------------
bool in_bounds(size_t avail, uint64_t off, uint64_t len) { return off <= avail && len <= avail - off; }
uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t rd64(const uint8_t* p) { return static_cast<uint64_t>(rd32(p)) | (static_cast<uint64_t>(rd32(p + 4)) << 32); }

// ---- msgpack -----------------------------------------------------------------
class Msgpack {
 public:
  Msgpack(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }

  // Peeks the type byte.
  bool peek(uint8_t* b) {
    if (pos_ >= n_) return fail();
    *b = p_[pos_];
    return true;
  }
  bool read_map(uint64_t* len) {
    uint8_t b;
    if (!peek(&b)) return false;
    if ((b & 0xf0) == 0x80) {
      ++pos_;
      *len = b & 0x0f;
      return true;
    }
    if (b == 0xde) return read_len(2, len);
    if (b == 0xdf) return read_len(4, len);
    return fail();
  }
  bool read_array(uint64_t* len) {
    uint8_t b;
    if (!peek(&b)) return false;
    if ((b & 0xf0) == 0x90) {
      ++pos_;
      *len = b & 0x0f;
      return true;
    }
    if (b == 0xdc) return read_len(2, len);
    if (b == 0xdd) return read_len(4, len);
    return fail();
  }
  // Reads a str (or bin) value. Returns false without consuming if not a string.
  bool read_str(std::string* s) {
    uint8_t b;
    if (!peek(&b)) return false;
    uint64_t len = 0;
    if ((b & 0xe0) == 0xa0) {
      ++pos_;
      len = b & 0x1f;
    } else if (b == 0xd9 || b == 0xc4) {
      if (!read_len(1, &len)) return false;
    } else if (b == 0xda || b == 0xc5) {
      if (!read_len(2, &len)) return false;
    } else if (b == 0xdb || b == 0xc6) {
      if (!read_len(4, &len)) return false;
    } else return false;
    if (!in_bounds(n_, pos_, len)) return fail();
    s->assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return true;
  }
  // Reads a non-negative integer. Returns false without failing the stream
  // for non-integers (the caller then skips the value).
  bool read_uint(uint64_t* v) {
    uint8_t b;
    if (!peek(&b)) return false;
    if (b <= 0x7f) {
      ++pos_;
      *v = b;
      return true;
    }
    int width = 0;
    bool is_signed = false;
    switch (b) {
      case 0xcc: width = 1; break;
      case 0xcd: width = 2; break;
      case 0xce: width = 4; break;
      case 0xcf: width = 8; break;
      case 0xd0:
        width = 1;
        is_signed = true;
        break;
      case 0xd1:
        width = 2;
        is_signed = true;
        break;
      case 0xd2:
        width = 4;
        is_signed = true;
        break;
      case 0xd3:
        width = 8;
        is_signed = true;
        break;
      default: return false;
    }
    if (!in_bounds(n_, pos_ + 1, width)) return fail();
    const uint8_t* q = p_ + pos_ + 1;
    uint64_t x = width == 1   ? q[0]
                 : width == 2 ? (static_cast<uint64_t>(q[0]) << 8 | q[1])
                 : width == 4 ? (static_cast<uint64_t>(q[0]) << 24 | static_cast<uint64_t>(q[1]) << 16 |
                                 static_cast<uint64_t>(q[2]) << 8 | q[3])
                              : 0;
    if (width == 8)
      for (int i = 0; i < 8; ++i) x = (x << 8) | q[i];
    if (is_signed) {
      int shift = 64 - 8 * width;
      int64_t sx = static_cast<int64_t>(x << shift) >> shift;
      if (sx < 0) return false;  // leave for skip()
      x = static_cast<uint64_t>(sx);
    }
    pos_ += 1 + width;
    *v = x;
    return true;
  }
  // Skips one complete value of any type.
  bool skip(int depth = 0) {
    if (depth > 64) return fail();
    uint8_t b;
    if (!peek(&b)) return false;
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
      ++pos_;
      return true;
    }
    if ((b & 0xe0) == 0xa0) return advance(1 + (b & 0x1f));
    if ((b & 0xf0) == 0x80 || b == 0xde || b == 0xdf) {
      uint64_t len;
      if (!read_map(&len)) return false;
      for (uint64_t i = 0; i < len; ++i)
        if (!skip(depth + 1) || !skip(depth + 1)) return false;
      return true;
    }
    if ((b & 0xf0) == 0x90 || b == 0xdc || b == 0xdd) {
      uint64_t len;
      if (!read_array(&len)) return false;
      for (uint64_t i = 0; i < len; ++i)
        if (!skip(depth + 1)) return false;
      return true;
    }
    uint64_t len = 0;
    switch (b) {
      case 0xc4:
      case 0xd9:
        if (!read_len(1, &len)) return false;
        return advance(len);
      case 0xc5:
      case 0xda:
        if (!read_len(2, &len)) return false;
        return advance(len);
      case 0xc6:
      case 0xdb:
        if (!read_len(4, &len)) return false;
        return advance(len);
      case 0xc7:
        if (!read_len(1, &len)) return false;
        return advance(1 + len);  // ext8: type + data
      case 0xc8:
        if (!read_len(2, &len)) return false;
        return advance(1 + len);
      case 0xc9:
        if (!read_len(4, &len)) return false;
        return advance(1 + len);
      case 0xca: return advance(5);
      case 0xcb: return advance(9);
      case 0xcc:
      case 0xd0: return advance(2);
      case 0xcd:
      case 0xd1: return advance(3);
      case 0xce:
      case 0xd2: return advance(5);
      case 0xcf:
      case 0xd3: return advance(9);
      case 0xd4: return advance(3);  // fixext1
      case 0xd5: return advance(4);
      case 0xd6: return advance(6);
      case 0xd7: return advance(10);
      case 0xd8: return advance(18);
      default: return fail();  // 0xc1 is never used
    }
  }

 private:
  bool fail() {
    ok_ = false;
    return false;
  }
  bool advance(uint64_t k) {
    if (!in_bounds(n_, pos_, k)) return fail();
    pos_ += k;
    return true;
  }
  // Consumes the type byte plus a big-endian length of `width` bytes.
  bool read_len(int width, uint64_t* len) {
    if (!in_bounds(n_, pos_ + 1, width)) return fail();
    uint64_t x = 0;
    for (int i = 0; i < width; ++i) x = (x << 8) | p_[pos_ + 1 + i];
    pos_ += 1 + width;
    *len = x;
    return true;
  }

  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

bool parse_kernel_map(Msgpack& m, KernelInfo* k) {
  uint64_t n;
  if (!m.read_map(&n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    std::string key;
    if (!m.read_str(&key)) {
      if (!m.skip()) return false;  // non-string key
      if (!m.skip()) return false;
      continue;
    }
    bool done = false;
    if (key == ".name") done = m.read_str(&k->name);
    else if (key == ".symbol") done = m.read_str(&k->symbol);
    else if (key == ".group_segment_fixed_size") done = m.read_uint(&k->group_segment_fixed_size);
    else if (key == ".private_segment_fixed_size") done = m.read_uint(&k->private_segment_fixed_size);
    else if (key == ".kernarg_segment_size") done = m.read_uint(&k->kernarg_segment_size);
    else if (key == ".max_flat_workgroup_size") done = m.read_uint(&k->max_flat_workgroup_size);
    else if (key == ".vgpr_count") done = m.read_uint(&k->vgpr_count);
    else if (key == ".sgpr_count") done = m.read_uint(&k->sgpr_count);
    else if (key == ".wavefront_size") done = m.read_uint(&k->wavefront_size);
    if (!m.ok()) return false;
    if (!done && !m.skip()) return false;
  }
  return true;
}

TargetId target_from_flags(const Processor* proc, uint32_t flags, uint8_t abi_version) {
  TargetId t;
  if (proc) t.processor = proc->name;
  if (abi_version >= 2) {  // code object v4+
    switch (flags & 0x300) {
      case 0x200: t.xnack = '-'; break;
      case 0x300: t.xnack = '+'; break;
      default: break;  // 0 unsupported, 0x100 any
    }
    switch (flags & 0xc00) {
      case 0x800: t.sramecc = '-'; break;
      case 0xc00: t.sramecc = '+'; break;
      default: break;
    }
  } else if (abi_version == 1) {
    // Code object v3: single "on" bits; "any" is written like "on" (AMDGPUUsage
    // "Code Object V2 to V3 Target ID"). The simulator reads a set bit as "+",
    // as comgr's ISA-name-from-e_flags does; a clear bit as unspecified.
    if (flags & 0x100) t.xnack = '+';
    if (flags & 0x200) t.sramecc = '+';
  }
  return t;
}

}  // namespace

// ---- processors ----------------------------------------------------------------
const Processor* find_processor(std::string_view name) {
  for (const auto& p : kProcessors)
    if (name == p.name) return &p;
  return nullptr;
}
const Processor* find_processor_by_mach(uint32_t mach) {
  for (const auto& p : kProcessors)
    if (p.mach == mach) return &p;
  return nullptr;
}

// ---- target IDs ----------------------------------------------------------------
std::string TargetId::str() const {
  std::string s = processor;
  if (sramecc) (s += ":sramecc") += sramecc;
  if (xnack) (s += ":xnack") += xnack;
  return s;
}

std::optional<TargetId> parse_target_id(std::string_view s) {
  TargetId t;
  size_t colon = s.find(':');
  t.processor = std::string(s.substr(0, colon));
  if (t.processor.empty()) return std::nullopt;
  while (colon != std::string_view::npos) {
    s = s.substr(colon + 1);
    colon = s.find(':');
    std::string_view f = s.substr(0, colon);
    if (f.size() < 2) return std::nullopt;
    char v = f.back();
    if (v != '+' && v != '-') return std::nullopt;
    f.remove_suffix(1);
    char* slot = f == "sramecc" ? &t.sramecc : f == "xnack" ? &t.xnack : nullptr;
    if (!slot || *slot) return std::nullopt;
    *slot = v;
  }
  return t;
}

bool features_compatible(const TargetId& co, const TargetId& dev) {
  if (co.sramecc && co.sramecc != dev.sramecc) return false;
  if (co.xnack && co.xnack != dev.xnack) return false;
  return true;
}

// ---- offload bundle ----------------------------------------------------------------
bool is_bundle(const uint8_t* p, size_t avail) {
  return p && avail >= kBundleMagicLen && std::memcmp(p, kBundleMagic, kBundleMagicLen) == 0;
}
bool is_compressed_bundle(const uint8_t* p, size_t avail) { return p && avail >= 4 && std::memcmp(p, "CCOB", 4) == 0; }

bool parse_bundle(const uint8_t* p, size_t avail, std::vector<BundleEntry>* out, std::string* err) {
  out->clear();
  if (!is_bundle(p, avail)) {
    *err = "no offload-bundle magic";
    return false;
  }
  if (!in_bounds(avail, 24, 8)) {
    *err = "bundle header truncated";
    return false;
  }
  uint64_t n = rd64(p + 24);
  // A sane bound: LLVM's reader has none, but each entry is >= 24 bytes and
  // HIP bundles hold a handful of targets.
  if (n == 0 || n > 4096) {
    *err = "implausible bundle entry count " + std::to_string(n);
    return false;
  }
  uint64_t pos = 32;
  for (uint64_t i = 0; i < n; ++i) {
    if (!in_bounds(avail, pos, 24)) {
      *err = "bundle entry table truncated";
      return false;
    }
    BundleEntry e;
    e.offset = rd64(p + pos);
    e.size = rd64(p + pos + 8);
    uint64_t idlen = rd64(p + pos + 16);
    pos += 24;
    if (idlen > 4096 || !in_bounds(avail, pos, idlen)) {
      *err = "bundle entry ID out of bounds";
      return false;
    }
    e.id.assign(reinterpret_cast<const char*>(p + pos), idlen);
    while (!e.id.empty() && e.id.back() == '\0') e.id.pop_back();  // comgr trims NULs
    pos += idlen;
    if (e.size != 0 && (e.offset < pos || e.offset > std::numeric_limits<uint64_t>::max() - e.size)) {
      *err = "bundle entry payload overlaps the table or overflows";
      return false;
    }
    if (e.size != 0 && !in_bounds(avail, e.offset, e.size)) {
      *err = "bundle entry payload out of bounds";
      return false;
    }
    out->push_back(std::move(e));
  }
  return true;
}

uint64_t bundle_extent(const std::vector<BundleEntry>& entries) {
  uint64_t end = 0;
  for (const auto& e : entries)
    if (e.offset + e.size > end) end = e.offset + e.size;
  return end;
}

std::optional<TargetId> hip_entry_target(std::string_view id) {
  // Split on '-' at most 5 times (OffloadBundler OffloadTargetInfo).
  std::string_view parts[6];
  size_t count = 0;
  while (count < 5) {
    size_t dash = id.find('-');
    if (dash == std::string_view::npos) break;
    parts[count++] = id.substr(0, dash);
    id = id.substr(dash + 1);
  }
  parts[count++] = id;
  if (count < 5) return std::nullopt;
  std::string_view kind = parts[0];
  if (kind != "hip" && kind != "hipv4" && kind != "hcc") return std::nullopt;  // comgr lookUpCodeObject
  if (parts[1] != "amdgcn" || parts[2] != "amd" || parts[3] != "amdhsa") return std::nullopt;
  if (count != 6 || parts[5].empty()) return std::nullopt;
  return parse_target_id(parts[5]);
}

// ---- ELF ----------------------------------------------------------------------------
bool is_amdgpu_elf(const uint8_t* p, size_t avail) {
  if (!p || avail < 64) return false;
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return false;
  if (p[4] != 2 /*ELFCLASS64*/ || p[5] != 1 /*ELFDATA2LSB*/) return false;
  return rd16(p + 18) == 224 /*EM_AMDGPU*/ && p[7] == 64 /*ELFOSABI_AMDGPU_HSA*/;
}

uint64_t elf_size(const uint8_t* p, size_t avail) {
  if (!p || avail < 64 ||
      std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      p[4] != 2)
    return 0;
  uint64_t shoff = rd64(p + 40);
  uint16_t shentsize = rd16(p + 58);
  uint16_t shnum = rd16(p + 60);
  if (shnum == 0) return 0;
  if (shentsize < 64 || shoff > (uint64_t{1} << 40)) return 0;
  uint64_t table_end = shoff + uint64_t{shentsize} * shnum;
  if (!in_bounds(avail, shoff, uint64_t{shentsize} * shnum)) return 0;
  uint64_t best_off = 0, best_end = 0;
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint8_t* sh = p + shoff + uint64_t{i} * shentsize;
    uint32_t type = rd32(sh + 4);
    uint64_t off = rd64(sh + 24), size = rd64(sh + 32);
    if (off >= best_off) {
      best_off = off;
      best_end = type == 8 /*SHT_NOBITS*/ ? off : off + size;
    }
  }
  return best_end > table_end ? best_end : table_end;
}

bool parse_metadata_msgpack(const uint8_t* p, size_t size, std::vector<KernelInfo>* out, std::string* err) {
  Msgpack m(p, size);
  uint64_t n;
  if (!m.read_map(&n)) {
    *err = "metadata root is not a map";
    return false;
  }
  for (uint64_t i = 0; i < n; ++i) {
    std::string key;
    if (!m.read_str(&key)) {
      if (!m.skip() || !m.skip()) {
        *err = "malformed metadata";
        return false;
      }
      continue;
    }
    if (key != "amdhsa.kernels") {
      if (!m.skip()) {
        *err = "malformed metadata";
        return false;
      }
      continue;
    }
    uint64_t nk;
    if (!m.read_array(&nk)) {
      *err = "amdhsa.kernels is not an array";
      return false;
    }
    for (uint64_t k = 0; k < nk; ++k) {
      KernelInfo info;
      if (!parse_kernel_map(m, &info)) {
        *err = "malformed kernel map";
        return false;
      }
      out->push_back(std::move(info));
    }
  }
  if (!m.ok()) {
    *err = "malformed metadata";
    return false;
  }
  return true;
}

bool parse_code_object(const uint8_t* p, size_t size, CodeObjectInfo* out, std::string* err) {
  *out = CodeObjectInfo{};
  if (!is_amdgpu_elf(p, size)) {
    *err = "not an AMDGPU HSA ELF64";
    return false;
  }
  out->e_flags = rd32(p + 48);
  out->abi_version = p[8];
  out->processor = find_processor_by_mach(out->e_flags & 0xff);
  out->target = target_from_flags(out->processor, out->e_flags, out->abi_version);
  out->generic_version = out->e_flags >> 24;

  // Note sections (sh_type SHT_NOTE = 7); fall back to PT_NOTE segments.
  struct Span {
    uint64_t off, size, align;
  };
  std::vector<Span> notes;
  uint64_t shoff = rd64(p + 40);
  uint16_t shentsize = rd16(p + 58), shnum = rd16(p + 60);
  if (shnum != 0) {
    if (shentsize < 64 || !in_bounds(size, shoff, uint64_t{shentsize} * shnum)) {
      *err = "section header table out of bounds";
      return false;
    }
    for (uint16_t i = 0; i < shnum; ++i) {
      const uint8_t* sh = p + shoff + uint64_t{i} * shentsize;
      if (rd32(sh + 4) == 7) notes.push_back({rd64(sh + 24), rd64(sh + 32), rd64(sh + 48)});
    }
  } else {
    uint64_t phoff = rd64(p + 32);
    uint16_t phentsize = rd16(p + 54), phnum = rd16(p + 56);
    if (phnum != 0 && phentsize >= 56 && in_bounds(size, phoff, uint64_t{phentsize} * phnum)) {
      for (uint16_t i = 0; i < phnum; ++i) {
        const uint8_t* ph = p + phoff + uint64_t{i} * phentsize;
        if (rd32(ph) == 4 /*PT_NOTE*/) notes.push_back({rd64(ph + 8), rd64(ph + 32), rd64(ph + 48)});
      }
    }
  }
  for (const Span& s : notes) {
    if (!in_bounds(size, s.off, s.size)) {
      *err = "note section out of bounds";
      return false;
    }
    uint64_t align = s.align == 8 ? 8 : 4;  // LLVM accepts 4- and 8-aligned notes
    auto pad = [align](uint64_t x) { return (x + align - 1) & ~(align - 1); };
    uint64_t pos = 0;
    while (pos + 12 <= s.size) {
      const uint8_t* nh = p + s.off + pos;
      uint64_t namesz = rd32(nh), descsz = rd32(nh + 4);
      uint32_t type = rd32(nh + 8);
      uint64_t name_off = pos + 12;
      uint64_t desc_off = name_off + pad(namesz);
      if (desc_off > s.size || descsz > s.size - desc_off) break;  // truncated note: stop
      const char* name = reinterpret_cast<const char*>(p + s.off + name_off);
      bool amdgpu = namesz == 7 && std::memcmp(name, "AMDGPU", 7) == 0;
      if (amdgpu && type == 32 /*NT_AMDGPU_METADATA*/) {
        if (out->has_metadata) {
          *err = "more than one metadata note";
          return false;
        }
        out->has_metadata = true;
        if (!parse_metadata_msgpack(p + s.off + desc_off, descsz, &out->kernels, err)) return false;
      }
      pos = desc_off + pad(descsz);
    }
  }
  return true;
}

}  // namespace simrt
