// The GPUs of this machine (KFD topology) and the targets they run.
#include "hipguard/devices.h"

#include "base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace hipguard {

namespace {
constexpr uint64_t kCapSramEdc = 0x04000000;  // HSA_CAP_SRAM_EDCSUPPORTED (bit 26)

bool parse_u64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (v > (UINT64_MAX - (c - '0')) / 10) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}
constexpr uint64_t kMaxLdsKib = 1u << 20;          // 1 GiB: far above any GPU, far below overflow
constexpr size_t kMaxPropertiesBytes = 64 * 1024;  // a KFD properties file is ~1.5 KB

// A sysfs text file: regular files only (a FIFO would block, /dev/zero never
// ends), at most kMaxPropertiesBytes. False when it cannot be read so.
bool read_small_file(const std::filesystem::path& path, std::string* out) {
  struct stat st {};
  Result<int> opened = open_regular_file(path.string(), &st);
  if (!opened) return false;  // why is not said: a node whose properties cannot be read is skipped
  int fd = *opened;
  out->clear();
  char buf[4096];
  bool ok = true;
  while (ok) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
    ok = out->size() <= kMaxPropertiesBytes;
  }
  ::close(fd);
  return ok;
}
}  // namespace

KfdNode parse_kfd_properties(std::string_view text) {
  KfdNode n;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    std::string_view key = line.substr(0, sp), value = line.substr(sp + 1);
    uint64_t v;
    if (!parse_u64(value, &v)) continue;
    if (key == "gfx_target_version") n.gfx_target_version = v;
    else if (key == "lds_size_in_kb") n.lds_size_in_kb = v;
    else if (key == "wave_front_size") n.wave_front_size = v;
    else if (key == "simd_count") n.simd_count = v;
    else if (key == "capability") n.capability = v;
  }
  return n;
}

namespace {

// The GPU nodes of the KFD topology under `sysfs_root`, by node number (CPU nodes left out).
std::vector<KfdNode> kfd_gpu_nodes(const std::string& sysfs_root) {
  namespace fs = std::filesystem;
  std::vector<KfdNode> gpus;
  fs::path nodes = fs::path(sysfs_root) / "class/kfd/kfd/topology/nodes";
  std::error_code ec;
  if (!fs::is_directory(nodes, ec)) return gpus;
  for (const auto& entry : fs::directory_iterator(nodes, ec)) {
    uint64_t num = 0;
    if (!parse_u64(entry.path().filename().string(), &num) || num > 1u << 20) continue;
    std::string text;
    if (!read_small_file(entry.path() / "properties", &text)) continue;
    KfdNode n = parse_kfd_properties(text);
    n.node = static_cast<unsigned>(num);
    if (n.simd_count == 0 || n.gfx_target_version == 0) continue;  // CPU node
    gpus.push_back(n);
  }
  std::sort(gpus.begin(), gpus.end(), [](const KfdNode& a, const KfdNode& b) { return a.node < b.node; });
  return gpus;
}

// The runtime's settings that apply to every GPU, read once: HSA_OVERRIDE_GFX_VERSION
// (maj.min.step replaces every GPU's version, as libhsakmt does), HSA_XNACK, HSA_ENABLE_SRAMECC.
struct DeviceSettings {
  std::optional<uint64_t> override_version;
  const char* xnack = nullptr;
  const char* sramecc = nullptr;
};

DeviceSettings device_settings(const EnvLookup& env) {
  DeviceSettings s;
  if (const char* o = env("HSA_OVERRIDE_GFX_VERSION"); o && *o) {
    unsigned maj, min, step;
    if (sscanf(o, "%u.%u.%u", &maj, &min, &step) == 3) s.override_version = maj * 10000ull + min * 100 + step;
  }
  s.xnack = env("HSA_XNACK");
  s.sramecc = env("HSA_ENABLE_SRAMECC");
  return s;
}

// One GPU node as the runtime sees it: its processor, LDS, and the sramecc and xnack modes.
Device device_of(const KfdNode& n, unsigned index, const DeviceSettings& settings) {
  uint64_t v = settings.override_version.value_or(n.gfx_target_version);
  const ProcessorInfo* p =
      find_processor_by_version(unsigned(v / 10000 % 100), unsigned(v / 100 % 100), unsigned(v % 100));
  Device d;
  d.index = index;
  d.node = n.node;
  // A value no GPU has (KFD reports at most a few hundred KiB) is ignored, not
  // multiplied into an overflow that would shrink the limit.
  d.lds_bytes = n.lds_size_in_kb <= kMaxLdsKib ? n.lds_size_in_kb * 1024 : 0;
  d.target.lds_bytes = d.lds_bytes;
  if (!p) {
    d.target.processor = "gfx-unknown-" + std::to_string(v);
    return d;
  }
  d.target.processor = std::string(p->name);
  d.target.sramecc = Feature::Unsupported;
  d.target.xnack = Feature::Unsupported;
  const char* xnack_env = settings.xnack;
  const char* sramecc_env = settings.sramecc;
  if (p->sramecc) {
    bool on = (n.capability & kCapSramEdc) != 0;
    if (sramecc_env && std::string_view(sramecc_env) == "0") on = false;
    if (sramecc_env && std::string_view(sramecc_env) == "1") on = true;
    d.target.sramecc = on ? Feature::On : Feature::Off;
  }
  if (p->xnack) {
    // Without HSA_XNACK the process gets the driver's mode (the processor
    // table's default_xnack: off where amdgpu's noretry defaults to 1).
    d.target.xnack = p->default_xnack;
    if (xnack_env && std::string_view(xnack_env) == "1") d.target.xnack = Feature::On;
    if (xnack_env && std::string_view(xnack_env) == "0") d.target.xnack = Feature::Off;
  }
  return d;
}

// The devices a visibility variable (a list of indices) selects, in its
// order; the list stops at the first entry that is not a valid index (as the
// runtimes do). Unset: all of them.
void select_visible(std::vector<Device>& devs, const char* list_or_null) {
  if (!list_or_null) return;
  std::vector<Device> chosen;
  std::string_view list(list_or_null);
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string_view item = list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? list.size() + 1 : comma + 1;
    uint64_t idx;
    if (!parse_u64(item, &idx) || idx >= devs.size()) break;
    chosen.push_back(devs[idx]);
  }
  devs = std::move(chosen);
}

}  // namespace

std::vector<Device> discover_devices(const std::string& sysfs_root, const EnvLookup& env) {
  std::vector<Device> out;
  DeviceSettings settings = device_settings(env);
  unsigned index = 0;
  for (const KfdNode& n : kfd_gpu_nodes(sysfs_root)) out.push_back(device_of(n, index++, settings));
  // ROCR_VISIBLE_DEVICES selects among the KFD GPUs, then HIP_VISIBLE_DEVICES
  // (or CUDA_VISIBLE_DEVICES) among those.
  select_visible(out, env("ROCR_VISIBLE_DEVICES"));
  select_visible(out, env("HIP_VISIBLE_DEVICES") ? env("HIP_VISIBLE_DEVICES") : env("CUDA_VISIBLE_DEVICES"));
  for (size_t i = 0; i < out.size(); ++i) out[i].index = static_cast<unsigned>(i);
  return out;
}

}  // namespace hipguard
