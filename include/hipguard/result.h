// A value or a parse error carrying a diagnostic code (see diagnostic.h); Status, the same for a
// function with no value to return. The one way a hipguard function fails: no bool with a
// std::string* error, no optional<std::string> that holds the error.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "hipguard/diagnostic.h"

namespace hipguard {

struct ParseError {
  Code code;            // a code of diagnostics.def, e.g. Code::kMalformedBundle (HG104)
  std::string message;  // what was wrong, with offsets and sizes
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(ParseError error) : v_(std::move(error)) {}
  explicit operator bool() const { return v_.index() == 0; }
  T& operator*() { return std::get<0>(v_); }
  const T& operator*() const { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  const ParseError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ParseError> v_;
};

// Success with nothing to return, or a ParseError (its Code and message): `return ok();` or
// `return ParseError{Code::kMalformedCompressed, "..."};`, and a failed Result<T>'s
// `return r.error();`. The caller tests `if (!s)` and reads s.error().
using Status = Result<std::monostate>;
inline Status ok() { return std::monostate{}; }

}  // namespace hipguard
