// Tensile .dat databases (MessagePack, read with LLVM's streaming reader): solutions and placeholder names.
// A placeholder database's "library" (its matching tables) is not read when it follows "solutions": only
// its presence is checked.
#include <llvm/BinaryFormat/MsgPackReader.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBufferRef.h>

#include <unordered_set>

#include "hipguard/tensile_dat.h"
#include "hipguard/diagnostic.h"

namespace hipguard {
namespace {

using Obj = llvm::msgpack::Object;
using Type = llvm::msgpack::Type;

// A cursor over one msgpack document; every failure sets `error` (the first one's text) and stops.
class Cursor {
 public:
  explicit Cursor(std::string_view data)
      : r_(llvm::MemoryBufferRef(llvm::StringRef(data.data(), data.size()), "tensile.dat")) {}
  bool next(Obj& o) {
    auto e = r_.read(o);
    if (!e) return fail("not MessagePack: " + llvm::toString(e.takeError()));
    if (!*e) return fail("truncated MessagePack document");
    return true;
  }
  // Skips what `o` holds (the elements of an array or map).
  bool skip(const Obj& o, int depth) {
    if (o.Kind != Type::Array && o.Kind != Type::Map) return true;
    if (depth > kMaxDatabaseDepth) return fail("nested deeper than " + std::to_string(kMaxDatabaseDepth));
    uint64_t n = o.Kind == Type::Map ? 2 * uint64_t(o.Length) : o.Length;
    for (uint64_t i = 0; i < n; ++i) {
      Obj c;
      if (!next(c) || !skip(c, depth + 1)) return false;
    }
    return true;
  }
  bool key(std::string_view* out) {
    Obj k;
    if (!next(k)) return false;
    if (k.Kind != Type::String) return fail("a map key is not a string");
    *out = std::string_view(k.Raw.data(), k.Raw.size());
    return true;
  }
  bool fail(std::string why) {
    if (error.empty()) error = std::move(why);
    return false;
  }
  std::string error;

 private:
  llvm::msgpack::Reader r_;
};

// One solution map: "name", "kernelName", "sizeMapping"."sourceKernel".
bool read_solution(Cursor& c, const Obj& m, TensileSolution* s) {
  if (m.Kind != Type::Map) return c.fail("a solution is not a map");
  std::string name, kernel_name;
  bool have_name = false;
  for (size_t i = 0; i < m.Length; ++i) {
    std::string_view k;
    Obj v;
    if (!c.key(&k) || !c.next(v)) return false;
    if ((k == "name" || k == "kernelName") && v.Kind == Type::String) {
      (k == "name" ? name : kernel_name).assign(v.Raw.data(), v.Raw.size());
      if (k == "name") have_name = true;
    } else if (k == "sizeMapping" && v.Kind == Type::Map) {
      for (size_t j = 0; j < v.Length; ++j) {
        std::string_view sk;
        Obj sv;
        if (!c.key(&sk) || !c.next(sv)) return false;
        if (sk == "sourceKernel" && sv.Kind == Type::Boolean) s->source_kernel = sv.Bool;
        else if (!c.skip(sv, 2)) return false;
      }
    } else if (!c.skip(v, 1)) {
      return false;
    }
  }
  if (!have_name)
    return c.fail("a solution has no string \"name\" (required by Tensile's ContractionSolution mapping)");
  s->kernel = kernel_name.empty() ? name : kernel_name;
  return true;
}

// Collects the "value" of every map whose "type" is "Placeholder", below `o`.
bool collect_placeholders(Cursor& c, const Obj& o, int depth, std::vector<std::string>* out,
                          std::unordered_set<std::string>* seen) {
  if (depth > kMaxDatabaseDepth) return c.fail("nested deeper than " + std::to_string(kMaxDatabaseDepth));
  if (o.Kind == Type::Array) {
    for (size_t i = 0; i < o.Length; ++i) {
      Obj e;
      if (!c.next(e) || !collect_placeholders(c, e, depth + 1, out, seen)) return false;
    }
    return true;
  }
  if (o.Kind != Type::Map) return true;
  bool placeholder = false;
  std::string value;
  bool have_value = false;
  for (size_t i = 0; i < o.Length; ++i) {
    std::string_view k;
    Obj v;
    if (!c.key(&k) || !c.next(v)) return false;
    if (k == "type" && v.Kind == Type::String) {
      placeholder = v.Raw == "Placeholder";
    } else if (k == "value" && v.Kind == Type::String) {
      value.assign(v.Raw.data(), v.Raw.size()), have_value = true;
    } else if (!collect_placeholders(c, v, depth + 1, out, seen)) {
      return false;
    }
  }
  if (placeholder) {
    if (!have_value)
      return c.fail("a Placeholder library has no string \"value\" (required by Tensile's PlaceholderLibrary mapping)");
    if (seen->insert(value).second) out->push_back(value);
  }
  return true;
}

ParseError malformed(std::string message) { return {Code::kDatabaseMalformed, std::move(message)}; }

// The root map: `on_key` reads each key's value (or skips it) and says whether to go on. Fails with
// the cursor's first failure, as HG702 (kDatabaseMalformed).
enum class Next { Fail, Continue, Stop };
template <class F>
Status read_root(Cursor& c, F on_key) {
  Obj root;
  bool good = c.next(root);
  if (good && root.Kind != Type::Map) good = c.fail("the document is not a map");
  for (size_t i = 0; good && i < root.Length; ++i) {
    std::string_view k;
    Obj v;
    Next n = c.key(&k) && c.next(v) ? on_key(k, v) : Next::Fail;
    if (n == Next::Stop) break;
    good = n == Next::Continue;
  }
  if (!good) return malformed(c.error);
  return ok();
}

Next go(bool ok) { return ok ? Next::Continue : Next::Fail; }

}  // namespace

Result<std::vector<TensileSolution>> read_tensile_solutions(std::string_view data) {
  Cursor c(data);
  std::vector<TensileSolution> out;
  bool seen = false, library = false;
  Status read = read_root(c, [&](std::string_view k, const Obj& v) {
    if (k == "library" && seen) return library = true, Next::Stop;  // its value is not needed (20 % of the bytes)
    if (k == "library") library = true;
    if (k != "solutions") return go(c.skip(v, 1));
    if (v.Kind != Type::Array) return go(c.fail("\"solutions\" is not an array"));
    seen = true;
    for (size_t i = 0; i < v.Length; ++i) {
      Obj m;
      TensileSolution s;
      if (!c.next(m) || !read_solution(c, m, &s)) return Next::Fail;
      out.push_back(std::move(s));
    }
    return Next::Continue;
  });
  if (!read) return read.error();
  if (!seen) return malformed("no \"solutions\" array (required by Tensile's MasterSolutionLibrary mapping)");
  if (!library) return malformed("no \"library\" (required by Tensile's MasterSolutionLibrary mapping)");
  return out;
}

Result<std::vector<std::string>> read_tensile_placeholders(std::string_view data) {
  Cursor c(data);
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  bool library = false;
  Status read = read_root(c, [&](std::string_view k, const Obj& v) {
    if (k != "library") return go(c.skip(v, 1));
    library = true;
    return go(collect_placeholders(c, v, 1, &out, &seen));
  });
  if (!read) return read.error();
  if (!library) return malformed("no \"library\" (required by Tensile's MasterSolutionLibrary mapping)");
  return out;
}

Result<std::vector<ExtOpEntry>> read_extop_entries(std::string_view data, std::string_view processor) {
  Cursor c(data);
  std::vector<ExtOpEntry> out;
  // { processor: { op: { type: [ { "func_name": s, "co_path": s, ... } ] } } }
  auto entry = [&](const Obj& m) {
    if (m.Kind != Type::Map) return c.fail("an ext op entry is not a map");
    ExtOpEntry e;
    for (size_t i = 0; i < m.Length; ++i) {
      std::string_view k;
      Obj v;
      if (!c.key(&k) || !c.next(v)) return false;
      if ((k == "func_name" || k == "co_path") && v.Kind == Type::String)
        (k == "func_name" ? e.kernel : e.code_object).assign(v.Raw.data(), v.Raw.size());
      else if (!c.skip(v, 4)) return false;
    }
    if (e.kernel.empty() || e.code_object.empty()) return c.fail("an ext op entry has no func_name or co_path");
    out.push_back(std::move(e));
    return true;
  };
  auto level = [&](auto&& self, const Obj& o, int depth) -> bool {  // the op and type maps, then the arrays
    if (depth == 2) {
      if (o.Kind != Type::Array) return c.fail("an ext op list is not an array");
      for (size_t i = 0; i < o.Length; ++i) {
        Obj m;
        if (!c.next(m) || !entry(m)) return false;
      }
      return true;
    }
    if (o.Kind != Type::Map) return c.fail("an ext op level is not a map");
    for (size_t i = 0; i < o.Length; ++i) {
      std::string_view k;
      Obj v;
      if (!c.key(&k) || !c.next(v) || !self(self, v, depth + 1)) return false;
    }
    return true;
  };
  Status read = read_root(
      c, [&](std::string_view k, const Obj& v) { return go(k == processor ? level(level, v, 0) : c.skip(v, 1)); });
  if (!read) return read.error();
  return out;
}

}  // namespace hipguard
