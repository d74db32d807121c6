// deps_list [--sysroot DIR] [--processor P]... FILE: what find_dependencies resolves for FILE, one
// line per object ("needed|opened|kernel<TAB>name<TAB>path<TAB>needed by"), then its findings
// ("finding<TAB>code<TAB>file<TAB>message"); rocm_test.py compares the "needed" lines with ldd.
#include "hipguard/dependencies.h"

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  hipguard::DependencyOptions o;
  const char* file = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--sysroot") && i + 1 < argc) o.sysroot = argv[++i];
    else if (!strcmp(argv[i], "--processor") && i + 1 < argc) o.processors.push_back(argv[++i]);
    else file = argv[i];
  }
  if (!file) {
    fprintf(stderr, "usage: deps_list [--sysroot DIR] [--processor P]... FILE\n");
    return 2;
  }
  hipguard::Dependencies d = hipguard::find_dependencies(file, o);
  for (const auto& x : d.objects) {
    const char* kind = x.kind == hipguard::Dependency::Kind::Needed   ? "needed"
                       : x.kind == hipguard::Dependency::Kind::Opened ? "opened"
                                                                      : "kernel";
    printf("%s\t%s\t%s\t%s\n", kind, x.name.c_str(), x.path.c_str(), x.needed_by.c_str());
  }
  for (const auto& x : d.diagnostics)
    printf("finding\t%s\t%s\t%s\n", std::string(hipguard::code_string(x.code)).c_str(), x.file.c_str(),
           x.message.c_str());
  return 0;
}
