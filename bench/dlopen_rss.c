/* R2 host: dlopen()s each argument (RTLD_NOW) and prints the time taken and VmHWM/RssAnon/RssFile. */
/* Output, one line: "dlopen_ms=<ms> VmHWM=<KiB> RssAnon=<KiB> RssFile=<KiB>"; with
   DLOPEN_RSS_MAPS=1 also the resident KiB of each mapped file (from /proc/self/smaps), largest first. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long status_kib(const char* key) {
  FILE* f = fopen("/proc/self/status", "re");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

struct file_rss {
  char path[512];
  long kib;
};

static int by_kib(const void* a, const void* b) {
  long x = ((const struct file_rss*)a)->kib, y = ((const struct file_rss*)b)->kib;
  return (x < y) - (x > y);
}

/* Resident KiB per mapped file, summed over its mappings, largest first. */
static void print_maps(void) {
  static struct file_rss files[512];
  int nfiles = 0, cur = -1;
  char line[1024];
  FILE* f = fopen("/proc/self/smaps", "re");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char path[512] = "";
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %511s", &lo, &hi, path) >= 2 && strchr(line, '-') < strchr(line, ' ')) {
      cur = -1;
      if (path[0] != '/') continue;
      for (int i = 0; i < nfiles; ++i)
        if (strcmp(files[i].path, path) == 0) cur = i;
      if (cur < 0 && nfiles < 512) {
        cur = nfiles++;
        snprintf(files[cur].path, sizeof files[cur].path, "%s", path);
        files[cur].kib = 0;
      }
    } else if (cur >= 0 && strncmp(line, "Rss:", 4) == 0) {
      files[cur].kib += strtol(line + 4, NULL, 10);
    }
  }
  fclose(f);
  qsort(files, nfiles, sizeof files[0], by_kib);
  for (int i = 0; i < nfiles && i < 8; ++i) printf("  %8ld KiB %s\n", files[i].kib, files[i].path);
}

int main(int argc, char** argv) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 1; i < argc; ++i)
    if (!dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("dlopen_ms=%.1f VmHWM=%ld RssAnon=%ld RssFile=%ld\n",
         (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6, status_kib("VmHWM"), status_kib("RssAnon"),
         status_kib("RssFile"));
  const char* maps = getenv("DLOPEN_RSS_MAPS");
  if (maps && *maps == '1') print_maps();
  fflush(stdout);
  return 0;
}
