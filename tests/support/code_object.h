// Minimal AMDGPU code objects (ELF-64 + NT_AMDGPU_METADATA MessagePack), from a spec or from raw metadata.
//
// Written from the specifications, not from hipguard's parser: ELF from the
// ELF-64 gABI, e_flags and the NT_AMDGPU_METADATA note from LLVM AMDGPUUsage,
// kernel descriptors from AMDHSAKernelDescriptor.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bytes.h"

namespace hgtest {

// ---- Minimal AMDGPU code objects ---------------------------------------------

// e_flags fields (AMDGPUUsage "AMDGPU ELF Header"; code object v4+).
inline constexpr uint32_t kXnackAny = 0x100, kXnackOff = 0x200, kXnackOn = 0x300;
inline constexpr uint32_t kSrameccAny = 0x400, kSrameccOff = 0x800, kSrameccOn = 0xc00;

struct ArgSpec {
  std::string name;
  std::string value_kind;
  uint64_t offset, size;
};

struct KernelSpec {
  std::string name = "k";
  uint64_t lds = 0, private_size = 0, kernarg_size = 16, kernarg_align = 8, wavefront = 64;
  uint64_t sgpr = 16, vgpr = 8, max_flat = 256;
  std::optional<uint64_t> agpr;
  bool uses_dynamic_stack = false;
  std::optional<std::array<uint64_t, 3>> reqd;
  std::vector<ArgSpec> args = {{"a", "global_buffer", 0, 8}, {"b", "global_buffer", 8, 8}};
  std::set<std::string> omit;  // metadata keys to leave out
  bool metadata = true;        // has an amdhsa.kernels entry
  bool descriptor = true;      // has a "<name>.kd" STT_OBJECT symbol
  // Kernel descriptor fields; unset = agree with the metadata.
  std::optional<uint32_t> kd_lds, kd_private, kd_kernarg;
  std::optional<uint16_t> kd_properties;
};

struct CodeObjectSpec {
  uint32_t mach = 0x04c;                        // gfx942
  uint32_t features = kXnackAny | kSrameccAny;  // e_flags feature bits
  unsigned version = 5;                         // code object version; EI_ABIVERSION = version - 2
  unsigned generic_version = 0;                 // e_flags bits 24..31 (v6)
  uint16_t machine = 224;                       // EM_AMDGPU
  uint8_t osabi = 64;                           // ELFOSABI_AMDGPU_HSA
  std::string target = "amdgcn-amd-amdhsa--gfx942";
  std::vector<KernelSpec> kernels = {KernelSpec{}};
  std::vector<std::string> device_functions;  // extra STT_FUNC symbols
  bool note = true;                           // emit the NT_AMDGPU_METADATA note
  std::optional<std::string> raw_metadata;    // note payload instead of the generated msgpack
  std::vector<std::string> extra_notes;       // more NT_AMDGPU_METADATA payloads after it, same section
};

// Encodes the amdhsa metadata map as MessagePack (defined in code_object.cpp with llvm::msgpack).
std::string metadata_blob(const CodeObjectSpec& spec);

// An ELF64 LSB ET_DYN with sections: null, .note, .rodata (descriptors), .text,
// .symtab, .strtab, .shstrtab; section headers at the end of the file.
ByteVec make_code_object(const CodeObjectSpec& spec);

// A code object with nothing but one SHT_NOTE section holding an
// NT_AMDGPU_METADATA note whose descriptor is `metadata` (any bytes), a
// .shstrtab, and the section header table at the end (ET_DYN, EM_AMDGPU,
// ELFOSABI_AMDGPU_HSA; EI_ABIVERSION `abi_version`, 3 = code object v5).
ByteVec make_note_only_code_object(std::string_view metadata,
                                   uint32_t e_flags = 0x04c /*gfx942*/ | kXnackAny | kSrameccAny,
                                   uint8_t abi_version = 3);

}  // namespace hgtest
