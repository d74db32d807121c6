// GoogleTest prints a hipguard::Code by its text: a failed EXPECT_EQ(d.code, Code::kLdsOverLimit)
// says "HG301", not the enumerator's bytes. Found by argument-dependent lookup; every test that
// compares codes includes it (through test_util.h, check_util.h, robust_util.h or guard_config.h),
// so each sees the same printer.
#pragma once

#include <ostream>

#include "hipguard/diagnostic.h"

namespace hipguard {

inline void PrintTo(Code c, std::ostream* os) {
  std::string_view text = code_string(c);
  if (text.empty()) *os << "Code(" << static_cast<unsigned>(c) << ")";  // not an enumerator
  else *os << text;
}

}  // namespace hipguard
