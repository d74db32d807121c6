// The simulated runtime's own minimal, bounds-checked parsing of HIP code
// objects. Deliberately independent of hipguard's core (src/): the tests
// compare the two judgements, so none of this may be shared with it.
//
// Formats (see tests/simrt/README.md for the sources):
//   * HIPF wrapper {u32 magic 0x48495046, u32 version 1, void* binary, void*}
//   * uncompressed clang offload bundle "__CLANG_OFFLOAD_BUNDLE__" + u64 count
//     + entries {u64 offset, u64 size, u64 id_len, id}
//   * AMDGPU ELF64: e_flags (EF_AMDGPU_MACH 0xff, xnack 0x300, sramecc 0xc00
//     for code object v4+), NT_AMDGPU_METADATA (type 32, owner "AMDGPU")
//     msgpack map -> amdhsa.kernels[] -> .name/.symbol/.group_segment_fixed_size
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simrt {

// ---- processors --------------------------------------------------------
struct Processor {
  const char* name;
  uint8_t mach;         // EF_AMDGPU_MACH
  bool xnack;           // xnack is a target-ID feature of this processor
  bool sramecc;         // sramecc is a target-ID feature of this processor
  uint32_t lds;         // LDS bytes available to one workgroup
  const char* generic;  // generic family (CLR-new TargetGenericMap) or nullptr
  bool is_generic;
};

const Processor* find_processor(std::string_view name);
const Processor* find_processor_by_mach(uint32_t mach);

// ---- target IDs ----------------------------------------------------------
// Feature value: 0 = unspecified ("any"), '+' on, '-' off.
struct TargetId {
  std::string processor;
  char sramecc = 0;
  char xnack = 0;
  std::string str() const;  // canonical: gfx942:sramecc+:xnack-
};

// Parses "gfx942:sramecc+:xnack-". Rejects unknown/duplicate features and
// empty processors; does not require the processor to be known.
std::optional<TargetId> parse_target_id(std::string_view s);

// Feature rule (comgr isCompatibleIsaName / CLR Isa::isCompatible / ROCr):
// unspecified code-object feature matches either device value; +/- must equal.
bool features_compatible(const TargetId& code_object, const TargetId& device);

// ---- offload bundle --------------------------------------------------------
struct BundleEntry {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string id;  // e.g. hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-
};

inline constexpr char kBundleMagic[] = "__CLANG_OFFLOAD_BUNDLE__";  // 24 bytes
inline constexpr size_t kBundleMagicLen = 24;
inline constexpr uint32_t kHipfMagic = 0x48495046;  // "HIPF"

bool is_bundle(const uint8_t* p, size_t avail);
bool is_compressed_bundle(const uint8_t* p, size_t avail);  // "CCOB"

// Reads the entry table. `avail` bounds every read (SIZE_MAX when the image
// size is unknown, as for in-memory fat binaries). Entries whose payload does
// not lie inside `avail` are kept but flagged by payload_in_bounds().
bool parse_bundle(const uint8_t* p, size_t avail, std::vector<BundleEntry>* out, std::string* err);
uint64_t bundle_extent(const std::vector<BundleEntry>& entries);  // max(offset+size)

// Splits "<kind>-<arch>-<vendor>-<os>-<env>[-<target-id>]". Returns the
// target ID of a HIP (hip/hipv4/hcc) amdgcn-amd-amdhsa entry, nullopt otherwise.
std::optional<TargetId> hip_entry_target(std::string_view id);

// ---- AMDGPU ELF ----------------------------------------------------------------
struct KernelInfo {
  std::string name;    // .name
  std::string symbol;  // .symbol (normally <name>.kd)
  uint64_t group_segment_fixed_size = 0;
  uint64_t private_segment_fixed_size = 0;
  uint64_t kernarg_segment_size = 0;
  uint64_t max_flat_workgroup_size = 0;  // 0 = not given
  uint64_t vgpr_count = 0;
  uint64_t sgpr_count = 0;
  uint64_t wavefront_size = 0;
};

struct CodeObjectInfo {
  uint32_t e_flags = 0;
  uint8_t abi_version = 0;               // EI_ABIVERSION; code object version = +2
  const Processor* processor = nullptr;  // from EF_AMDGPU_MACH (nullptr: unknown)
  TargetId target;                       // processor + features from e_flags
  uint32_t generic_version = 0;          // e_flags >> 24 (v6+)
  bool has_metadata = false;
  std::vector<KernelInfo> kernels;
};

// Is this an AMDGPU HSA ELF64 (EM_AMDGPU 224, ELFOSABI_AMDGPU_HSA 64)?
bool is_amdgpu_elf(const uint8_t* p, size_t avail);

// Size of an ELF image the way rocclr's amd::Elf::getElfSize computes it:
// max(end of the section header table, end of the section with the highest
// offset). 0 when the header is not readable within `avail`.
uint64_t elf_size(const uint8_t* p, size_t avail);

// Parses e_flags and the metadata note. Returns false (with *err) only for a
// structurally broken ELF or a malformed metadata note; a missing note is fine.
bool parse_code_object(const uint8_t* p, size_t size, CodeObjectInfo* out, std::string* err);

// Exposed for tests: walks a msgpack metadata blob.
bool parse_metadata_msgpack(const uint8_t* p, size_t size, std::vector<KernelInfo>* out, std::string* err);

}  // namespace simrt
