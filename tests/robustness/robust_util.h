// Helpers for the robustness tests: inputs, exactly-sized copies, ELF layout
// of the originals (where the parsers look). The CCOB and minimal-ELF builders
// and the file helpers are in tests/support.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm/Support/Compression.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hipguard/bundle.h"
#include "hipguard/check.h"
#include "hipguard/code_object.h"
#include "hipguard/diagnostic.h"
#include "hipguard/target.h"
#include "bytes.h"
#include "ccob.h"
#include "code_object.h"
#include "files.h"
#include "print_code.h"

namespace hgrobust {

namespace fs = std::filesystem;
using hgtest::append;
using hgtest::ByteVec;
using hgtest::make_ccob;
using hgtest::make_note_only_code_object;
using hgtest::read_bytes;
using hgtest::span;

// ---- Inputs -------------------------------------------------------------------

inline fs::path corpus_dir() { return fs::path(HIPGUARD_CORPUS_DIR) / "aiter"; }

inline std::vector<fs::path> corpus_files() {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(corpus_dir(), ec)) return out;
  for (const auto& e : fs::directory_iterator(corpus_dir(), ec))
    if (e.path().extension() == ".co") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// hipcc outputs of this build (tests/apps), "" when hipcc was not found.
inline fs::path apps_dir() { return HIPGUARD_HAVE_APPS ? fs::path(HIPGUARD_APPS_DIR) : fs::path(); }

// Every byte offset is the default (2.2 M truncations of the corpus take ~5 s
// in a RelWithDebInfo build). HIPGUARD_ROBUSTNESS_STRIDE=N samples every N-th
// offset outside the header/table/note regions instead, for quick local runs;
// HIPGUARD_ROBUSTNESS_EXHAUSTIVE=1 forces every offset even then.
inline bool exhaustive() {
  const char* v = std::getenv("HIPGUARD_ROBUSTNESS_EXHAUSTIVE");
  return v && *v && std::string_view(v) != "0";
}
inline uint64_t stride() {
  if (exhaustive()) return 1;
  const char* v = std::getenv("HIPGUARD_ROBUSTNESS_STRIDE");
  uint64_t s = v ? std::strtoull(v, nullptr, 10) : 0;
  return s ? s : 1;
}

// A copy of data[0, n) in a heap block of exactly n bytes: ASan reports any
// read past the end (a std::vector would do too, but value-initialises first).
class Exact {
 public:
  Exact(const uint8_t* data, size_t n) : p_(new uint8_t[n]), n_(n) {
    if (n) std::memcpy(p_.get(), data, n);
  }
  hipguard::Bytes bytes() const { return hipguard::Bytes(p_.get(), n_); }
  uint8_t* data() { return p_.get(); }

 private:
  std::unique_ptr<uint8_t[]> p_;
  size_t n_;
};

// ---- Targets and diagnostics ---------------------------------------------------

inline hipguard::TargetId target(std::string_view s) {
  auto t = hipguard::parse_target_id(s);
  if (!t) ADD_FAILURE() << "bad target " << s << ": " << t.error().message;
  return t ? *t : hipguard::TargetId{};
}

// An error-severity diagnostic whose code is HG1xx (input / framing / ELF) or
// HG4xx (metadata).
inline bool has_structural_error(const hipguard::ImageReport& r) {
  for (const auto& d : r.diagnostics)
    if (d.severity == hipguard::Severity::Error &&
        (hipguard::code_string(d.code).starts_with("HG1") || hipguard::code_string(d.code).starts_with("HG4")))
      return true;
  return false;
}

inline std::string codes(const hipguard::ImageReport& r) {
  std::string s;
  for (const auto& d : r.diagnostics)
    s += (s.empty() ? "" : " ") + std::string(hipguard::code_string(d.code)) +
         (d.target.empty() ? "" : "[" + d.target + "]");
  return s;
}

inline std::string summary(const hipguard::ImageReport& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += "\n    " + hipguard::format_line(d);
  return s;
}

// Invariants every report must satisfy, whatever the input.
inline std::string report_problem(const hipguard::ImageReport& r, size_t targets) {
  if (r.verdicts.size() != targets) return "verdict count " + std::to_string(r.verdicts.size());
  bool structural_error = false;
  for (const auto& d : r.diagnostics) {
    if (hipguard::code_string(d.code).empty())
      return "unknown diagnostic code " + std::to_string(static_cast<unsigned>(d.code));
    if (d.severity == hipguard::Severity::Error && d.target.empty()) structural_error = true;
  }
  if (r.structurally_ok == structural_error) return "structurally_ok disagrees with the diagnostics";
  return "";
}

// Collects failures of a loop over thousands of inputs; reports the first few.
class Failures {
 public:
  void add(const std::string& what) {
    if (count_++ < 10) ADD_FAILURE() << what;
  }
  ~Failures() {
    if (count_ > 10) ADD_FAILURE() << "... and " << (count_ - 10) << " more failures like these";
  }
  size_t count() const { return count_; }

 private:
  size_t count_ = 0;
};

// Runs fn(0), ..., fn(count - 1) in a child process, so that a crash (a
// segfault, an ASan/UBSan abort, a leak report at exit) is reported as a
// failure naming the input instead of ending the test binary, and the
// remaining inputs still run: after a crash a new child resumes at the next
// index. fn returns "" or a description of a broken invariant. Returns one
// line per crash or broken invariant, "<index>: <what>".
inline std::vector<std::pair<uint64_t, std::string>> run_isolated(uint64_t count,
                                                                  const std::function<std::string(uint64_t)>& fn) {
  std::vector<std::pair<uint64_t, std::string>> out;
  uint64_t start = 0;
  while (start < count) {
    int fds[2];
    if (pipe(fds) != 0) {
      out.push_back({start, "pipe() failed"});
      return out;
    }
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
      // A hostile input may make the parser allocate gigabytes: cap the child
      // so that shows up as std::bad_alloc instead of swapping a shared
      // machine. (Sanitizer builds cap allocations through
      // max_allocation_size_mb, see robustness_main.cpp.)
      struct rlimit as = {4ull << 30, 4ull << 30};
      setrlimit(RLIMIT_AS, &as);
#endif
      auto say = [&](const std::string& line) {
        std::string l = line;
        std::replace(l.begin(), l.end(), '\n', ' ');
        l += '\n';
        for (size_t done = 0; done < l.size();) {
          ssize_t w = write(fds[1], l.data() + done, l.size() - done);
          if (w <= 0) break;
          done += static_cast<size_t>(w);
        }
      };
      for (uint64_t i = start; i < count; ++i) {
        say("S " + std::to_string(i));
        std::string problem;
        try {
          problem = fn(i);
        } catch (const std::exception& e) {
          problem = std::string("uncaught C++ exception escaped hipguard: ") + e.what();
        } catch (...) {
          problem = "uncaught non-std exception escaped hipguard";
        }
        if (!problem.empty()) say("P " + std::to_string(i) + " " + problem);
      }
      say("D");
      close(fds[1]);
      std::fflush(nullptr);
      std::exit(0);  // exit, not _exit: LeakSanitizer checks at exit
    }
    close(fds[1]);
    std::string text;
    char buf[4096];
    for (ssize_t r; (r = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(r));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    uint64_t last = start;
    bool done = false;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) break;
      std::string line = text.substr(pos, nl - pos);
      pos = nl + 1;
      if (line.rfind("S ", 0) == 0) last = std::strtoull(line.c_str() + 2, nullptr, 10);
      if (line.rfind("P ", 0) == 0) {
        char* rest = nullptr;
        uint64_t i = std::strtoull(line.c_str() + 2, &rest, 10);
        out.push_back({i, rest && *rest ? rest + 1 : ""});
      }
      if (line == "D") done = true;
    }
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (done && clean) break;
    std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                          : "exited with status " + std::to_string(WEXITSTATUS(status));
    if (done) {  // every input ran; the failure came at exit (e.g. a leak report)
      out.push_back({count, "child " + how + " at exit (leak?) after all inputs"});
      break;
    }
    out.push_back({last, "CRASH: " + how + " (sanitizer report, if any, above)"});
    start = last + 1;
  }
  return out;
}

// ---- ELF layout of an original (not of the mutated copies) ---------------------

template <class T>
T rd(const ByteVec& v, uint64_t off) {
  T x{};
  if (off <= v.size() && sizeof(T) <= v.size() - off) std::memcpy(&x, v.data() + off, sizeof(T));
  return x;
}

struct Range {
  uint64_t begin, end;  // [begin, end)
};

struct ElfLayout {
  std::vector<Range> dense;       // header, program headers, section headers, notes, section boundaries
  std::vector<Range> structural;  // every byte the parsers interpret: all but executable sections
};

inline ElfLayout elf_layout(const ByteVec& f) {
  ElfLayout l;
  uint64_t n = f.size();
  auto clip = [&](uint64_t b, uint64_t e) -> Range { return {std::min(b, n), std::min(std::max(b, e), n)}; };
  l.dense.push_back(clip(0, 64));
  l.structural.push_back(clip(0, 64));
  uint64_t phoff = rd<uint64_t>(f, 32), shoff = rd<uint64_t>(f, 40);
  uint16_t phnum = rd<uint16_t>(f, 56), shnum = rd<uint16_t>(f, 60);
  if (phoff < n) {
    l.dense.push_back(clip(phoff, phoff + uint64_t(phnum) * 56));
    l.structural.push_back(l.dense.back());
  }
  if (shoff < n) {
    l.dense.push_back(clip(shoff, shoff + uint64_t(shnum) * 64));
    l.structural.push_back(l.dense.back());
    for (uint64_t i = 0; i < shnum; ++i) {
      uint64_t sh = shoff + i * 64;
      uint32_t type = rd<uint32_t>(f, sh + 4);
      uint64_t flags = rd<uint64_t>(f, sh + 8), off = rd<uint64_t>(f, sh + 24), size = rd<uint64_t>(f, sh + 32);
      if (type == 8 /*SHT_NOBITS*/ || type == 0) continue;
      if (off > n) continue;
      uint64_t end = size > n - off ? n : off + size;
      l.dense.push_back(clip(off >= 16 ? off - 16 : 0, off + 16));  // section start
      l.dense.push_back(clip(end >= 16 ? end - 16 : 0, end + 16));  // section end
      if (type == 7 /*SHT_NOTE*/) l.dense.push_back({off, end});
      if (!(flags & 4 /*SHF_EXECINSTR*/)) l.structural.push_back({off, end});
    }
  }
  return l;
}

// Prefix lengths to try for a file of n bytes: every offset inside `dense`
// (and within 64 bytes of `also`, e.g. the image end), every stride-th elsewhere.
inline std::vector<uint64_t> truncation_points(uint64_t n, const std::vector<Range>& dense,
                                               std::vector<uint64_t> also = {}) {
  std::vector<uint8_t> pick(n, 0);
  uint64_t s = stride();
  for (uint64_t k = 0; k < n; k += s) pick[k] = 1;
  for (const auto& r : dense)
    for (uint64_t k = r.begin; k < r.end && k < n; ++k) pick[k] = 1;
  for (uint64_t a : also)
    for (uint64_t k = a >= 64 ? a - 64 : 0; k < a + 64 && k < n; ++k) pick[k] = 1;
  std::vector<uint64_t> out;
  for (uint64_t k = 0; k < n; ++k)
    if (pick[k]) out.push_back(k);
  return out;
}

// ---- Bit flips -------------------------------------------------------------------

// SplitMix64: a fixed, portable sequence for a given seed.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
};

inline uint64_t seed_of(std::string_view name, uint64_t salt) {
  uint64_t h = 1469598103934665603ull ^ salt;  // FNV-1a
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

// Flips 1-8 bits; half of the time each bit lands in `focus` (the bytes the
// parsers interpret), otherwise anywhere. Returns a description for messages.
inline std::string flip_bits(ByteVec& v, Rng& rng, const std::vector<Range>& focus) {
  uint64_t focus_bytes = 0;
  for (const auto& r : focus) focus_bytes += r.end - r.begin;
  unsigned bits = 1 + rng.below(8);
  std::string what;
  for (unsigned i = 0; i < bits && !v.empty(); ++i) {
    uint64_t pos;
    if (focus_bytes && rng.below(2)) {
      uint64_t k = rng.below(focus_bytes);
      pos = 0;
      for (const auto& r : focus) {
        if (k < r.end - r.begin) {
          pos = r.begin + k;
          break;
        }
        k -= r.end - r.begin;
      }
    } else {
      pos = rng.below(v.size());
    }
    unsigned bit = rng.below(8);
    v[pos] ^= uint8_t(1u << bit);
    what += (what.empty() ? "" : ",") + std::to_string(pos) + ":" + std::to_string(bit);
  }
  return what;
}

}  // namespace hgrobust
