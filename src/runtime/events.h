// The guard's event handlers (internal), one concern per file: Guard (guard.cpp, the facade)
// forwards each HIP event to one of them with the parts of its state that handler needs (config,
// log, said and set_probe_functions reach the parts directly). None
// is entered with Kernels::mu held; each takes it where it needs it.
#pragma once

#include <cstdint>

#include "runtime/guard.h"

namespace hipguard {

class Kernels;      // kernels.h
class Reporting;    // reporting.h
class MappedFiles;  // address.h
class SelectionMemo;

namespace events {

// registration.cpp: fat binaries and their kernels.
Decision on_register_fatbin(Kernels& k, MappedFiles& files, SelectionMemo& memo, const void* wrapper,
                            PendingFatbinPtr& out);
void on_registered_fatbin(Kernels& k, const void* handle, PendingFatbinPtr pending);
Decision on_register_function(Kernels& k, const void* handle, const void* host_function, const char* device_name);
void on_unregister_fatbin(Kernels& k, const void* handle);

// modules.cpp: modules, libraries and lookups. A strict stop for refused settings at a module load
// writes `guard`'s report first.
Decision on_module_load_file(Guard& guard, Kernels& k, const char* path, PendingModulePtr& pending);
Decision on_module_load_data(Guard& guard, Kernels& k, const void* image, PendingModulePtr& pending, const char* api);
void on_module_loaded(Kernels& k, const void* module, PendingModulePtr pending);
void on_module_unloaded(Kernels& k, const void* module);
Decision before_module_get_function(Kernels& k, const void* module, const char* name, const char* api);
void on_module_get_function(Kernels& k, const void* module, const char* name, const void* function, int result,
                            const char* api);
Decision before_kernel_call(Kernels& k, const void* key, const char* api, bool say_in_warn);
void on_get_func_by_symbol(Kernels& k, const void* host_function, int result, const void* function);

// launch_gate.cpp: a launch that missed the fast path.
Decision on_launch(Kernels& k, const void* key, uint64_t dynamic_lds, const char* api, int device);

// report_output.cpp: the report, once per process, and fork(): every lock of the guard's parts
// (and the log's) taken before and released after, in their order.
void write_report(Kernels& k);
void before_fork(Kernels& k, SelectionMemo& memo, MappedFiles& files);
void after_fork(Kernels& k, SelectionMemo& memo, MappedFiles& files, bool child);

// exit_status.cpp: the process's guard sees it exit with `status` (install_exit_status_handler):
// with status 0 and findings at or above config().fail_on, logs HG602, writes `guard`'s report and
// ends the process with config().exit_code.
void on_process_exit(Guard& guard, Reporting& out, int status);
// guard.cpp: the same for the process's guard, when its state exists (the process called HIP).
void on_process_exit(int status);

}  // namespace events
}  // namespace hipguard
