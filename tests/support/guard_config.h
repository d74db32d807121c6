// The in-process guard's configuration for a test, from HIPGUARD_* values
// given here: the guard reads no environment (the shim reads it in a real process).
#pragma once

#include <map>
#include <string>

#include "runtime/config.h"
#include "runtime/guard.h"

namespace hgtest {

inline hipguard::GuardConfig guard_config(const std::map<std::string, std::string>& vars) {
  return hipguard::config_from(
      [&vars](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      /*secure=*/false);
}

// Configures the process's guard (the first call in a process wins).
inline hipguard::Guard& init_guard(const std::map<std::string, std::string>& vars) {
  return hipguard::Guard::init(guard_config(vars));
}

}  // namespace hgtest
