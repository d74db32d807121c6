// hipguard's HIPGUARD_* environment variables, one entry each (settings.def).
#pragma once

#include <span>
#include <string_view>

namespace hipguard {

enum class Setting {
#define HG_SETTING(id, variable, accepted, fallback) id,
#include "hipguard/settings.def"
#undef HG_SETTING
};

// kSettings[s] is the line of Setting s: both are expanded from settings.def in its order.
struct SettingInfo {
  const char* variable;  // "HIPGUARD_MODE": a C string, for getenv and setenv
  std::string_view accepted, fallback;
};

inline constexpr SettingInfo kSettings[] = {
#define HG_SETTING(id, variable, accepted, fallback) {variable, accepted, fallback},
#include "hipguard/settings.def"
#undef HG_SETTING
};

constexpr std::span<const SettingInfo> all_settings() { return kSettings; }
constexpr const SettingInfo& setting(Setting s) { return kSettings[static_cast<int>(s)]; }
// The variable's name, for getenv and setenv: variable(Setting::Mode) is "HIPGUARD_MODE".
constexpr const char* variable(Setting s) { return setting(s).variable; }

}  // namespace hipguard
