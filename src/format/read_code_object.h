// The code object reader without the checks (internal): parse_code_object (checks/) runs them on its output.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <llvm/ADT/DenseMap.h>

#include "format/name_hash.h"
#include "hipguard/code_object.h"

namespace hipguard {

// Reads an AMDGPU code object into a CodeObject: ELF header, its
// NT_AMDGPU_METADATA notes (merged as comgr merges them), symbols and kernel descriptors; reading problems
// are in co.issues, uncapped by the HG112 summary (parse_code_object adds it).
// descriptors_only (Depth::Descriptors): the metadata note is looked for but
// not read; the kernels are the "<name>.kd" objects of the symbol table, with
// their descriptors (HG406 for one outside its section); with only_lds_over,
// only those whose descriptor declares more static LDS than that (bytes);
// UINT64_MAX: none, and the symbol table is not read.
Result<CodeObject> read_code_object(Bytes data, bool descriptors_only = false, uint64_t only_lds_over = 0);

// The ELF header's facts only (version, processor, xnack/sramecc, generic
// version: what selection compares), for deciding how far to read. Fails as
// read_code_object fails on the identification or the processor; the
// sections are not looked at, so a later read may still fail.
Result<CodeObject> read_code_object_header(Bytes data);

// A code object's kernel descriptors by kernel name, from its dynamic symbol
// table (.dynsym: the global symbols, not a Tensile object's 430k local
// labels; .symtab when there is none): each defined STT_OBJECT "<name>.kd"
// once, by a hash of its name (a view into the string table), then one hash
// per lookup. Strict registration asks once per registered kernel
// (rocSOLVER: 22.8 k). It only clears a kernel: a name it does not find, or
// whose descriptor lies outside its section, is for the full read
// (read_code_object, which prefers .symtab) to decide. Views into the image:
// valid while the image is.
class DescriptorLookup {
 public:
  // nullopt when `image` is no 64-bit AMDGPU HSA ELF with a symbol table
  // and string table inside it.
  static std::optional<DescriptorLookup> open(Bytes image);
  // The descriptor of kernel `name` (symbol "<name>.kd").
  std::optional<KernelDescriptor> find(std::string_view name) const;
  Bytes image() const { return image_; }

 private:
  Bytes image_;
  uint64_t sections_ = 0, section_count_ = 0;  // the section header table: offset, entries
  uint64_t symbols_ = 0;                       // the symbol table's offset
  llvm::DenseMap<llvm::StringRef, uint32_t, NameHash> by_name_;  // kernel name -> its descriptor's symbol
};

// The severity of an issue: its own, else its code's.
Severity issue_severity(const CodeObjectIssue& i);

}  // namespace hipguard
