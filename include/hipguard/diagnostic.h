// Diagnostics: every user-visible finding carries a stable code (listed with
// cause and fix in docs/diagnostics.md), a severity and a subject.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace hipguard {

enum class Severity : uint8_t {
  Note,     // information; never makes a verdict fail
  Warning,  // suspicious, the kernel may still run
  Error,    // the kernel / code object cannot run on the target
};

std::string_view to_string(Severity s);

// Stable diagnostic codes. Never renumber: scripts and CI match on them.
namespace code {
// Input and payload framing.
inline constexpr std::string_view kUnreadable = "HG101";          // file or memory cannot be read
inline constexpr std::string_view kBadFatbinWrapper = "HG102";    // HIPF wrapper magic/version wrong
inline constexpr std::string_view kUnknownPayload = "HG103";      // neither bundle, CCOB nor AMDGPU ELF
inline constexpr std::string_view kMalformedBundle = "HG104";     // offload bundle header/table out of bounds
inline constexpr std::string_view kMalformedCompressed = "HG105"; // CCOB header or decompression failure
inline constexpr std::string_view kMalformedElf = "HG106";        // code object ELF invalid
inline constexpr std::string_view kNoHipFatbin = "HG107";         // a named file holds no GPU code
inline constexpr std::string_view kUnknownProcessor = "HG108";    // e_flags processor not in the table
inline constexpr std::string_view kCodeObjectVersion = "HG109";   // code object version not loadable by ROCm
inline constexpr std::string_view kNothingToCheck = "HG110";      // a directory argument holds no GPU code
inline constexpr std::string_view kBudgetExceeded = "HG111";      // a size or count over hipguard's parser limits (docs/limits.md)
inline constexpr std::string_view kFindingsCapped = "HG112";      // more findings for one code object than hipguard reports
inline constexpr std::string_view kUnreadableArchive = "HG113";   // an archive (.deb, .zip, .tar.*, .a) is damaged or truncated
// What a program loads (hipguard check follows DT_NEEDED; dependencies.h).
inline constexpr std::string_view kLibraryNotFound = "HG120";       // a DT_NEEDED library is nowhere the loader looks
inline constexpr std::string_view kDependencyUnreadable = "HG121";  // an object's dynamic section cannot be read
inline constexpr std::string_view kDependencyLimit = "HG122";       // more objects to load than hipguard follows
inline constexpr std::string_view kKernelDirectoryMissing = "HG123";  // rocBLAS / hipBLASLt without its Tensile files
// Selection against a target.
inline constexpr std::string_view kNoCodeObject = "HG201";        // bundle has nothing for the target
inline constexpr std::string_view kProcessorMismatch = "HG202";   // code object for another processor
inline constexpr std::string_view kFeatureMismatch = "HG203";     // xnack / sramecc setting differs
inline constexpr std::string_view kDeviceChecksSkipped = "HG204"; // no GPU and no HIPGUARD_TARGET
inline constexpr std::string_view kGenericTooOld = "HG205";       // generic version below the minimum
inline constexpr std::string_view kBadTarget = "HG206";           // HIPGUARD_TARGET / --target unparsable
inline constexpr std::string_view kSpirvFallback = "HG207";       // only a SPIR-V entry: runtime JIT, ROCm-version dependent
inline constexpr std::string_view kAmbiguousSelection = "HG208";  // CCOB: several entries fit; runtime order is hash order
inline constexpr std::string_view kKpackNotChecked = "HG209";     // HIPK (kpack) fat binary: code objects not read
inline constexpr std::string_view kHotSwapForwarding = "HG210";   // HSA_TOOLS_LIB's HotSwap tool gets a gfx1250 entry instead of the native one
inline constexpr std::string_view kNoCodeObjectNoKernels = "HG211";  // nothing for the target, but no kernels either: only its variables fail
inline constexpr std::string_view kBatchLookupStarved = "HG212";       // one process: comgr gives an entry to one GPU only
inline constexpr std::string_view kGenericFeaturesRejected = "HG213";  // HIP 7.x asks for <generic>:<device features>, comgr rejects it
inline constexpr std::string_view kLibraryLacksTarget = "HG214";       // a kernel library directory has no code object the target can load
// Kernel resources.
inline constexpr std::string_view kLdsOverLimit = "HG301";        // group segment > device LDS
inline constexpr std::string_view kWavefrontSize = "HG302";       // wave size the processor lacks
inline constexpr std::string_view kRegisterLimit = "HG303";       // VGPR/AGPR/SGPR count over the register file
inline constexpr std::string_view kWorkgroupSize = "HG304";       // max_flat_workgroup_size / reqd_workgroup_size invalid
inline constexpr std::string_view kDynamicStack = "HG305";        // scratch size not known statically
inline constexpr std::string_view kLaunchLds = "HG306";           // static + dynamic LDS of a launch > device LDS
// Metadata.
inline constexpr std::string_view kNoMetadata = "HG401";          // no NT_AMDGPU_METADATA note
inline constexpr std::string_view kBadMetadata = "HG402";         // metadata not a valid msgpack document
inline constexpr std::string_view kBadKernelMetadata = "HG403";   // kernel entry lacks / mistypes a field
inline constexpr std::string_view kDescriptorMismatch = "HG404";  // kernel descriptor disagrees with metadata
inline constexpr std::string_view kKernargLayout = "HG405";       // kernel arguments outside/overlapping kernarg segment
inline constexpr std::string_view kDescriptorMissing = "HG406";   // metadata kernel without its .kd symbol
inline constexpr std::string_view kKernelWithoutMetadata = "HG407"; // .kd symbol without metadata: not launchable
inline constexpr std::string_view kDeviceFunction = "HG408";      // a device function asked for as a kernel
inline constexpr std::string_view kKernelNotInCodeObject = "HG409";  // registered kernel absent from the selected code object
// Runtime events (shim only).
inline constexpr std::string_view kRuntimeRejected = "HG501";     // the runtime rejected a registered kernel (probe)
inline constexpr std::string_view kLaunchWithFindings = "HG502";  // a kernel with findings is being launched
inline constexpr std::string_view kLookupFailed = "HG503";        // hipGetFuncBySymbol / hipModuleGetFunction failed: cause
// Configuration and run-time status (shim only).
inline constexpr std::string_view kBadSetting = "HG601";          // a HIPGUARD_* value is not accepted
inline constexpr std::string_view kExitStatusChanged = "HG602";   // exit status 0 after findings becomes HIPGUARD_EXIT_CODE
inline constexpr std::string_view kReportNotWritten = "HG603";    // HIPGUARD_REPORT cannot be written (not a regular file, write error)
// Kernel databases (kernel_database.h): the manifests rocBLAS, hipBLASLt (Tensile .dat) and AITER (.csv) load kernels by.
inline constexpr std::string_view kDatabaseMissing = "HG701";            // no database the library opens for the processor
inline constexpr std::string_view kDatabaseMalformed = "HG702";          // a database file the library's loader cannot read
inline constexpr std::string_view kDatabaseFileMissing = "HG703";        // a file the database names does not exist
inline constexpr std::string_view kDatabaseCodeObjectMismatch = "HG704"; // the code object it names is not for the target
inline constexpr std::string_view kDatabaseKernelMissing = "HG705";      // the kernel it names is not in that code object
inline constexpr std::string_view kDatabaseHelperMissing = "HG706";      // Tensile's helper Kernels.so-000 code object is missing
inline constexpr std::string_view kDatabaseChecked = "HG707";            // what a database check covered (summary)
}  // namespace code

struct CodeInfo {
  std::string_view code;
  std::string_view name;  // short kebab-case name, e.g. "lds-over-limit"
  Severity severity;
};
// Every code hipguard can emit, in code order.
std::span<const CodeInfo> all_codes();
const CodeInfo* find_code(std::string_view code);

struct Diagnostic {
  std::string code;        // e.g. "HG301"
  Severity severity = Severity::Error;
  std::string file;        // file path, or the origin of an in-memory image
  std::string entry;       // bundle entry ID, empty for raw code objects
  std::string kernel;      // kernel name, empty when not about one kernel
  std::string target;      // target ID checked against, empty for structural findings
  std::string message;     // what is wrong, with the value and the limit
  std::string fix;         // what to do about it
  std::optional<uint64_t> value;  // the offending number (bytes, version, ...), if any
  std::optional<uint64_t> limit;  // the limit it was checked against, if any
};

// An error about one kernel for which CLR rejects its whole code object, so no
// kernel of it can run: HG403 without .name, .symbol or .max_flat_workgroup_size
// (devprogram.cpp createKernelMetadataMap), HG304 for .max_flat_workgroup_size 0
// (rockernel.cpp postLoad). Errors without a kernel name are about the whole image anyway.
bool rejects_code_object(const Diagnostic& d);

// A diagnostic with the code's severity from the table (Error for unknown codes).
Diagnostic make_diagnostic(std::string_view code, std::string file, std::string message, std::string fix);

// "error HG301 [gfx942] file: entry: kernel 'k': message (fix: ...)" on one
// line, passed through escape_text.
std::string format_line(const Diagnostic& d);

// Text for a terminal, a log line or XML: control characters (newline, ESC,
// ...) and bytes that are not valid UTF-8 become \xNN and a backslash becomes
// \\, so a crafted file or kernel name can neither forge nor hide lines.
std::string escape_text(std::string_view s);

}  // namespace hipguard
