// Reading a HIP runtime's exports and comparing them with the shim's table (runtime_exports.h).
#include "runtime/runtime_exports.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

#include "hipguard/diagnostic.h"

namespace hipguard {

// The order seal() keeps symbols in: by length, then bytes. Any order serves a binary search, and
// most pairs of names differ in length, decided without reading them.
static bool before(std::string_view a, std::string_view b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

void RuntimeExports::seal() {
  // A stable sort keeps the first of two symbols with one name first, as the table lists them.
  std::stable_sort(symbols.begin(), symbols.end(),
                   [](const Symbol& a, const Symbol& b) { return before(a.name, b.name); });
  symbols.erase(
      std::unique(symbols.begin(), symbols.end(), [](const Symbol& a, const Symbol& b) { return a.name == b.name; }),
      symbols.end());
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
}

const std::string_view* RuntimeExports::node_of(std::string_view name) const {
  auto it = std::lower_bound(symbols.begin(), symbols.end(), name,
                             [](const Symbol& s, std::string_view n) { return before(s.name, n); });
  return it != symbols.end() && it->name == name ? &it->node : nullptr;
}

bool on_a_kernel_path(std::string_view name) {
  static constexpr std::array<std::string_view, 25> kPaths = {
      "Launch",        "ModuleLoad",   "Library",          "KernelNode",    "GraphAddNode",
      "NodeSetParams", "ProcAddress",  "EntryPoint",       "ConfigureCall", "CallConfiguration",
      "SetupArgument", "BeginCapture", "GraphInstantiate", "ChildGraph",    "GraphClone",
      "ExecUpdate",    "GraphUpload",  "GetFunc",          "GetKernel",     "EnumerateKernels",
      "KernelGet",     "LastError",    "FuncGetAttribute", "FuncSet",       "Occupancy"};
  // Graph nodes of other kinds carry no kernel.
  static constexpr std::array<std::string_view, 9> kOtherNodes = {"Memcpy",      "Memset",    "HostNode",
                                                                  "EventRecord", "EventWait", "ExternalSemaphore",
                                                                  "MemAlloc",    "MemFree",   "BatchMemOp"};
  // Each part starts with a capital, so it can only start where the name has one: at each, only the
  // parts starting with that letter are compared (the shim runs this over the runtime's ~500
  // exports inside the program's first HIP call).
  static_assert(kPaths.size() <= 32 && std::all_of(kPaths.begin(), kPaths.end(),
                                                   [](std::string_view p) { return p[0] >= 'A' && p[0] <= 'Z'; }));
  static constexpr std::array<uint32_t, 26> kStartingWith = [] {
    std::array<uint32_t, 26> parts{};
    for (size_t i = 0; i < kPaths.size(); ++i) parts[kPaths[i][0] - 'A'] |= 1u << i;
    return parts;
  }();
  auto on_a_path = [&] {
    for (size_t i = 0; i < name.size(); ++i)
      if (name[i] >= 'A' && name[i] <= 'Z')
        for (uint32_t parts = kStartingWith[name[i] - 'A']; parts; parts &= parts - 1)
          if (std::string_view part = kPaths[std::countr_zero(parts)]; name.substr(i, part.size()) == part) return true;
    return false;
  };
  auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  return on_a_path() && std::none_of(kOtherNodes.begin(), kOtherNodes.end(), has);
}

std::vector<KnownEntryPoint> known_entry_points(const std::vector<TableEntry>& wrapped,
                                                const std::vector<TableEntry>& skipped) {
  std::vector<KnownEntryPoint> out;
  for (const auto& [name, node] : wrapped) out.push_back({name, node, {}, /*wrapped=*/true});
  // "_Z" <length> <C name> ...: the Itanium mangling of a function at namespace scope; only a few
  // entries are spelled so, so each is paired with its C name by one look over the table.
  for (auto& mangled : out) {
    std::string_view rest = mangled.name;
    if (rest.substr(0, 2) != "_Z") continue;
    rest.remove_prefix(2);
    size_t length = 0, digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9' && digits < 4)
      length = length * 10 + static_cast<size_t>(rest[digits++] - '0');
    if (!digits || rest.size() - digits < length) continue;
    std::string_view c_name = rest.substr(digits, length);
    for (auto& plain : out)
      if (plain.name == c_name) {
        plain.alternative = mangled.name;
        mangled.alternative = plain.name;
      }
  }
  for (const auto& [name, node] : skipped) out.push_back({name, node, {}, /*wrapped=*/false});
  return out;
}

std::vector<Diagnostic> audit_runtime_exports(const RuntimeExports& exports, const std::vector<KnownEntryPoint>& known,
                                              const std::string& path) {
  std::vector<std::string_view> placed;
  for (const auto& k : known) placed.push_back(k.name);
  std::sort(placed.begin(), placed.end());
  std::string unknown, missing;
  size_t n_unknown = 0, n_missing = 0;
  auto list = [](std::string& to, size_t& n, std::string_view name, std::string_view node) {
    ((to += n++ ? ", " : "") += name) += node.empty() ? "" : "@";
    to += node;
  };
  std::vector<RuntimeExports::Symbol> unplaced;
  for (const auto& symbol : exports.symbols)
    if (on_a_kernel_path(symbol.name) && !std::binary_search(placed.begin(), placed.end(), symbol.name))
      unplaced.push_back(symbol);
  std::sort(unplaced.begin(), unplaced.end(), [](const auto& a, const auto& b) { return a.name < b.name; });  // by name
  for (const auto& [name, node] : unplaced) list(unknown, n_unknown, name, node);
  for (const auto& k : known) {
    if (!k.wrapped || !exports.defines(k.node) || exports.node_of(k.name)) continue;
    if (!k.alternative.empty() && exports.node_of(k.alternative)) continue;
    list(missing, n_missing, k.name, k.node);
  }
  std::vector<Diagnostic> out;
  if (n_unknown)
    out.push_back(
        make_diagnostic(Code::kRuntimeEntryPoints, path,
                        "the HIP runtime exports " + std::to_string(n_unknown) +
                            " entry point(s) on a kernel's path that this hipguard does not know: " + unknown +
                            "; kernels loaded, looked up or launched through them are not checked",
                        "use a hipguard that knows this runtime (interpose/hip_api.def lists what it wraps)"));
  if (n_missing)
    out.push_back(make_diagnostic(Code::kRuntimeEntryPoints, path,
                                  "the HIP runtime defines the version node but not " + std::to_string(n_missing) +
                                      " entry point(s) hipguard wraps: " + missing +
                                      "; a call to one returns hipErrorNotSupported, as without hipguard",
                                  "check that this libamdhip64 is the one the program was built for"));
  return out;
}

}  // namespace hipguard
