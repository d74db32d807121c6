// The guard itself: the facade. It holds the guard's state (state.h), builds the process's at its
// first use (with its exit and fork handlers), says the set-up findings once, and forwards each
// call to its event handler (events.h) with the parts that handler needs.
#include "runtime/guard.h"

#include <pthread.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include "hipguard/version.h"
#include "runtime/events.h"
#include "runtime/state.h"

namespace hipguard {

std::atomic<unsigned> g_launch_gate{0};

LaunchCache g_launch_cache;

namespace {
std::mutex g_config_mu;
GuardConfig* g_config = nullptr;  // init()'s, until the state takes it
// Set once the process's guard's state exists: the process called HIP. The exit status handler
// does nothing before that.
std::atomic<bool> g_state_ready{false};

GuardState& process_state() {
  static GuardState* s = [] {
    GuardConfig config;
    {
      std::lock_guard lock(g_config_mu);
      if (g_config) config = std::move(*g_config);
    }
    auto* st = new GuardState(std::move(config), &g_launch_gate, &g_launch_cache);
    if (!st->config.report_path.empty()) atexit([] { guarded([] { Guard::get().write_report(); }); });
    // Whatever the settings: a child forked while another thread holds one of the guard's locks
    // (registering, launching) would inherit it held and hang at its first HIP call.
    pthread_atfork(
        [] {
          fork_guarded([] {
            GuardState& p = process_state();
            events::before_fork(p.kernels, p.selection_memo, p.mapped_files);
          });
        },
        [] {
          fork_guarded([] {
            GuardState& p = process_state();
            events::after_fork(p.kernels, p.selection_memo, p.mapped_files, false);
          });
        },
        [] {
          fork_guarded([] {
            GuardState& p = process_state();
            events::after_fork(p.kernels, p.selection_memo, p.mapped_files, true);
          });
        });
    g_state_ready.store(true, std::memory_order_release);
    return st;
  }();
  return *s;
}

// The guard's state: its own, or the process's.
GuardState& state_of(const std::unique_ptr<GuardState>& own) { return own ? *own : process_state(); }
}  // namespace

Guard& Guard::get() {
  static Guard* g = new Guard();  // never destroyed: HIP may call us from atexit handlers
  return *g;
}

Guard& Guard::init(GuardConfig config) {
  std::lock_guard lock(g_config_mu);
  if (!g_config && !g_state_ready.load(std::memory_order_acquire)) g_config = new GuardConfig(std::move(config));
  return get();
}

Guard::Guard() = default;

Guard::Guard(GuardConfig config) : own_(std::make_unique<GuardState>(std::move(config), nullptr, nullptr)) {}

// A guard of its own writes its report when it goes (the process's, at exit).
Guard::~Guard() {
  if (own_ && !own_->config.report_path.empty()) guarded([this] { write_report(); });
}

void events::on_process_exit(int status) {
  if (g_state_ready.load(std::memory_order_acquire)) on_process_exit(Guard::get(), process_state().out, status);
}

const GuardConfig& Guard::config() {
  GuardState& s = state_of(own_);
  // Set-up findings (bad HIPGUARD_TARGET, no target) are said once, at first
  // use; off mode says nothing, as it checks nothing.
  std::call_once(s.setup_said, [&] {
    if (s.config.mode == Mode::Off) return;
    for (const auto& d : s.config.setup_diagnostics) s.out.say(d);
    if (!s.config.targets.empty()) {
      std::string list;
      for (const auto& t : s.config.targets) list += (list.empty() ? "" : ", ") + t.str();
      s.out.log("debug", std::string("hipguard ") + HIPGUARD_VERSION_STRING + ": checking against " + list + " (from " +
                             s.config.target_source + ")");
    }
    const RuntimeInfo& rt = s.config.machine.runtime ? *s.config.machine.runtime : default_runtime();
    s.out.log(
        "debug",
        "selecting code objects as " + runtime_label(rt) + " does (" +
            (s.config.runtime_source.empty() ? std::string("runtime version not known: the newest")
                                             : s.config.runtime_source) +
            ")" +
            (s.config.machine.one_process && s.config.targets.size() > 1 ? ", the targets as one process's GPUs" : ""));
  });
  return s.config;
}

// The calls that said the set-up findings first (config()) still do; every deciding and recording
// call catches its own failures and answers Forward (guard.h, guarded).
Decision Guard::on_register_fatbin(const void* wrapper, PendingFatbinPtr& pending) try {
  config();
  GuardState& s = state_of(own_);
  return events::on_register_fatbin(s.kernels, s.mapped_files, s.selection_memo, wrapper, pending);
} catch (...) {
  return {};  // never let hipguard be the reason a program fails
}

void Guard::on_registered_fatbin(const void* handle, PendingFatbinPtr pending) try {
  events::on_registered_fatbin(state_of(own_).kernels, handle, std::move(pending));
} catch (...) {
}

Decision Guard::on_register_function(const void* handle, const void* host_function, const char* device_name) try {
  return events::on_register_function(state_of(own_).kernels, handle, host_function, device_name);
} catch (...) {
  return {};
}

void Guard::on_unregister_fatbin(const void* handle) try {
  events::on_unregister_fatbin(state_of(own_).kernels, handle);
} catch (...) {
}

Decision Guard::on_module_load_file(const char* path, PendingModulePtr& pending) try {
  config();
  return events::on_module_load_file(*this, state_of(own_).kernels, path, pending);
} catch (...) {
  return {};
}

Decision Guard::on_module_load_data(const void* image, PendingModulePtr& pending, const char* api) try {
  config();
  return events::on_module_load_data(*this, state_of(own_).kernels, image, pending, api);
} catch (...) {
  return {};
}

void Guard::on_module_loaded(const void* module, PendingModulePtr pending) try {
  events::on_module_loaded(state_of(own_).kernels, module, std::move(pending));
} catch (...) {
}

void Guard::on_module_unloaded(const void* module) try {
  events::on_module_unloaded(state_of(own_).kernels, module);
} catch (...) {
}

Decision Guard::before_module_get_function(const void* module, const char* name, const char* api) try {
  if (!name) return {};
  config();
  return events::before_module_get_function(state_of(own_).kernels, module, name, api);
} catch (...) {
  return {};
}

void Guard::on_module_get_function(const void* module, const char* name, const void* function, int result,
                                   const char* api) try {
  events::on_module_get_function(state_of(own_).kernels, module, name, function, result, api);
} catch (...) {
}

Decision Guard::before_kernel_call(const void* key, const char* api, bool say_in_warn) try {
  return events::before_kernel_call(state_of(own_).kernels, key, api, say_in_warn);
} catch (...) {
  return {};
}

void Guard::on_get_func_by_symbol(const void* host_function, int result, const void* function) try {
  events::on_get_func_by_symbol(state_of(own_).kernels, host_function, result, function);
} catch (...) {
}

Decision Guard::on_launch(const void* key, uint64_t dynamic_lds, const char* api, int device) try {
  return events::on_launch(state_of(own_).kernels, key, dynamic_lds, api, device);
} catch (...) {
  return {};  // the state could not be built: forward
}

void Guard::set_probe_functions(const ProbeFunctions& f) { state_of(own_).kernels.probe.set_functions(f); }

void Guard::log(std::string_view level, const std::string& line) { state_of(own_).out.log(level, line); }

Guard::Said Guard::said() {
  const FindingsSink& sink = state_of(own_).out.sink();
  return {sink.said_here(), sink.consequences_here()};
}

void Guard::write_report() try { events::write_report(state_of(own_).kernels); } catch (...) {
}

}  // namespace hipguard
