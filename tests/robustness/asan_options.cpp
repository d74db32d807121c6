// Sanitizer defaults for the robustness binary: a single allocation above
// 2 GiB is a finding (a small hostile input must not make hipguard allocate
// gigabytes), reported at once instead of zero-filling the machine's memory.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() { return "max_allocation_size_mb=2048"; }
#endif
