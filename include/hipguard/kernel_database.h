// Kernel databases: the manifests a kernel library reads to find its code
// objects at run time (Tensile's TensileLibrary*.dat for rocBLAS and
// hipBLASLt, AITER's hsa/<processor>/**.csv), checked per target as the
// library's own loader would use them: the database it opens, every code
// object file it names, every kernel it looks up.
//
// Rules and their sources (docs/diagnostics.md HG701-HG707 quote the messages):
//  - Which database a processor gets. rocBLAS 6.4 (ROCm/rocBLAS
//    library/src/tensile_host.cpp, TensileHost::initialize): <dir>/<processor>
//    when that directory exists, then TensileLibrary_lazy_<processor>.dat,
//    TensileLibrary_<processor>.dat, TensileLibrary.dat, else "rocBLAS error:
//    Cannot read ..." and rocblas_abort(). hipBLASLt 7.1 (ROCm/rocm-libraries
//    projects/hipblaslt/library/src/amd_detail/rocblaslt/src/tensile_host.cpp,
//    TensileHost::initialize): <dir>/<processor> when it exists, then
//    TensileLibrary_lazy_<processor>.dat only, else "rocblaslt error: Cannot
//    read ..." (no abort; no GEMM finds a solution). <processor> is
//    gcnArchName up to the first ':' (xnack and sramecc left out).
//  - The lazy database's "Placeholder" libraries name <prefix>.dat beside it
//    (Tensile Serialization/PlaceholderLibrary.hpp); a missing one makes
//    LoadLibraryFile return null (Tensile msgpack/MessagePack.cpp,
//    MessagePackLoadLibraryFile: "Failed to open file").
//  - The code object of a solution (Tensile PlaceholderLibrary.hpp
//    getCodeObjectFileName): <prefix>.co; for rocBLAS source kernels
//    (sizeMapping.sourceKernel) <prefix>.hsaco, or <prefix>_<processor>.hsaco
//    when the prefix holds "fallback"; hipBLASLt (tensilelite) always
//    <prefix>.co. The file loaded is the first of <stem><ext>,
//    <stem>-xnack-<ext>, <stem>-xnack+<ext> that hipModuleLoadData accepts
//    (Tensile hip/HipSolutionAdapter.cpp SolutionAdapter::launchKernel), so one
//    must exist and be for the target's processor and xnack setting.
//  - The kernel launched is the solution's "name" (rocBLAS Tensile,
//    Serialization/ContractionSolution.hpp) or "kernelName" (hipBLASLt
//    tensilelite), looked up with hipModuleGetFunction in every loaded module
//    (SolutionAdapter::getKernel): it must be in that code object's metadata
//    or in the helper Kernels.so-000-<processor>.hsaco, which
//    SolutionAdapter::initializeLazyLoading loads (its failure is ignored).
//  - hipBLASLt's extension ops (softmax, layer norm, amax: ROCm/rocm-libraries
//    projects/hipblaslt/library/src/amd_detail/hipblaslt-ext-op.cpp):
//    hipblasltExtOpLibrary.dat beside the Tensile files names, per processor,
//    each kernel (func_name) and its code object (co_path), launched through the
//    same SolutionAdapter: the same file, target and kernel rules.
//  - AITER (ROCm/aiter csrc/include/aiter_hip_common.h AiterAsmKernel::
//    load_hsaco_file, hsa/codegen.py): the code object of a csv row is
//    $AITER_ASM_DIR/<processor>/<csv's directory below hsa/<processor>>/<co_name>,
//    registered with __hipRegisterFatBinary, its kernel <knl_name> looked up
//    with hipGetFuncBySymbol; a csv needs the columns knl_name and co_name.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hipguard/check_paths.h"
#include "hipguard/code_object.h"
#include "hipguard/diagnostic.h"
#include "hipguard/result.h"
#include "hipguard/target.h"
#include "hipguard/tensile_dat.h"

namespace hipguard {

enum class DatabaseKind { Rocblas, Hipblaslt, Aiter };
std::string_view to_string(DatabaseKind k);

// A directory that holds a kernel database: a Tensile library directory (a
// TensileLibrary*.dat in it) or an AITER hsa/ directory (a gfx* directory in
// it with a .csv below).
struct DatabaseDir {
  std::string path;
  DatabaseKind kind;
};
// The database directories at or below `dir` (symlinked directories are not
// walked), sorted by path. Never throws; unreadable directories are skipped.
std::vector<DatabaseDir> find_kernel_databases(const std::string& dir);

// What one target's check covered.
struct DatabaseTargetSummary {
  std::string target;       // target ID (or processor) checked
  size_t databases = 0;     // database files (.dat / .csv) read
  size_t entries = 0;       // solutions / csv rows
  size_t code_objects = 0;  // distinct code object files opened for them
  size_t kernels = 0;       // distinct kernels found in their code objects
  size_t findings = 0;      // error and warning findings (also those past the cap)
};

struct DatabaseReport {
  std::string path;  // the database directory
  DatabaseKind kind = DatabaseKind::Rocblas;
  std::vector<Diagnostic> diagnostics;  // at most kMaxDatabaseFindings per target, then HG707 says how many more
  std::vector<DatabaseTargetSummary> targets;
};
inline constexpr size_t kMaxDatabaseFindings = 200;  // per target and database
// Parser limits (docs/limits.md): a .dat larger than this is HG702, never read.
inline constexpr uint64_t kMaxDatabaseFileBytes = 1ull << 30;

// The facts a database check needs about one code object file: a raw code
// object (one entry) or an offload bundle, compressed or not (hipBLASLt's
// .co files are CCOB bundles; one entry per AMDGPU code object read).
struct CodeObjectFacts {
  struct Entry {
    TargetId target;  // from e_flags
    unsigned generic_version = 0;
    // kernel_name_hash of each metadata kernel name (.name), sorted: 8 bytes a kernel, so the
    // facts of every code object of a library (rocBLAS: 82,000 kernels) stay small.
    std::vector<uint64_t> kernels;
  };
  std::vector<Entry> entries;
  std::string error;  // why nothing could be read
};
// Reads a code object file's facts; the check's own parse (parse_code_object)
// of a file already checked may be handed in instead (see check_kernel_database).
using FactsLookup = std::function<const CodeObjectFacts*(const std::string& path)>;

// Checks the database in `db` for each target (none: every processor the
// database ships, with xnack/sramecc left open). `lookup` may return facts
// already known (null: the file is read here). Never throws.
DatabaseReport check_kernel_database(const DatabaseDir& db, const std::vector<TargetId>& targets,
                                     const FactsLookup& lookup = {});

// check_paths' kernel-database step (CheckPathsOptions::kernel_databases): the databases below the
// directory arguments among `paths`, their .dat files read in a thread of their own while the files are
// checked, each checked after them with the facts of the code objects already parsed, one report each
// (path: the database directory); and the databases inside the archives and container images checked,
// as installed (path: "ARCHIVE!dir", like the members).
std::unique_ptr<DatabaseStep> kernel_database_step(const std::vector<std::string>& paths,
                                                   const std::vector<TargetId>& targets);

// The 64-bit hash kernel names are compared by (std::hash of the name).
uint64_t kernel_name_hash(std::string_view name);
// An entry's facts from a parsed code object.
CodeObjectFacts::Entry facts_of(const CodeObject& co);

}  // namespace hipguard
