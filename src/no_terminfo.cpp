// LLVMSupport (LLVM 16) asks terminfo whether a terminal has colours
// (sys::Process::FileDescriptorHasColors, reached through raw_ostream). hipguard
// never uses LLVM's colours: the CLI decides on colour itself (isatty,
// NO_COLOR, --color), and the shim must not make every process it is
// preloaded into depend on libtinfo. These definitions answer "no terminfo",
// which LLVM treats as "no colours" (as LLVM 18, which dropped terminfo, does
// for unknown terminals). Hidden: never exported, never in the way of a host
// program's own ncurses.
#define HG_HIDDEN extern "C" __attribute__((visibility("hidden"), used))

struct term;

HG_HIDDEN int setupterm(char*, int, int* errret) {
  if (errret) *errret = -1;  // "the terminfo database could not be found"
  return -1;                 // ERR
}
HG_HIDDEN struct term* set_curterm(struct term*) { return nullptr; }
HG_HIDDEN int del_curterm(struct term*) { return -1; }
HG_HIDDEN int tigetnum(char*) { return -2; }  // "not a numeric capability"
