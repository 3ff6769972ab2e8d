/* How many CPUs this process may use: what `nproc` says, capped by a cgroup
 * CPU quota, which nproc ignores but a container's scheduler enforces.
 */
#include "common.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads the first line of `path` into buf. 0 or -1. */
static int read_line(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "re");
  int ok;

  if (f == NULL)
    return -1;
  ok = fgets(buf, (int)size, f) != NULL;
  fclose(f);
  return ok ? 0 : -1;
}

/* This process's cgroup v2 directory under /sys/fs/cgroup, or "" for the
 * root. 0 or -1.
 */
static int cgroup2_dir(char *dir, size_t size) {
  char line[448];
  FILE *f = fopen("/proc/self/cgroup", "re");
  int found = -1;

  if (f == NULL)
    return -1;
  while (fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, "0::", 3) == 0) {
      line[strcspn(line, "\n")] = '\0';
      int n = snprintf(dir, size, "/sys/fs/cgroup%s", line + 3);
      found = n > 0 && (size_t)n < size ? 0 : -1;
      break;
    }
  }
  fclose(f);
  return found;
}

/* CPUs allowed by a quota, rounded up, or 0 for no quota. Walks from this
 * cgroup up to the root, as the kernel enforces every ancestor's limit.
 */
static unsigned quota_cpus(void) {
  char dir[512], path[544], line[128];
  unsigned best = 0;
  long long q, p;

  if (cgroup2_dir(dir, sizeof(dir)) == 0) {
    for (;;) {
      snprintf(path, sizeof(path), "%s/cpu.max", dir);
      if (read_line(path, line, sizeof(line)) == 0 &&
          strncmp(line, "max", 3) != 0 &&
          sscanf(line, "%lld %lld", &q, &p) == 2 && q > 0 && p > 0) {
        unsigned n = (unsigned)((q + p - 1) / p);
        if (best == 0 || n < best)
          best = n;
      }
      char *slash = strrchr(dir, '/');
      if (slash == NULL || strcmp(dir, "/sys/fs/cgroup") == 0)
        break;
      *slash = '\0';
    }
    if (best)
      return best;
  }
  /* cgroup v1. */
  if (read_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", line, sizeof(line)) ==
          0 &&
      sscanf(line, "%lld", &q) == 1 && q > 0 &&
      read_line("/sys/fs/cgroup/cpu/cpu.cfs_period_us", line, sizeof(line)) ==
          0 &&
      sscanf(line, "%lld", &p) == 1 && p > 0)
    return (unsigned)((q + p - 1) / p);
  return 0;
}

unsigned pc_default_jobs(void) {
  cpu_set_t set;
  unsigned n = 0, q;

  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    n = (unsigned)CPU_COUNT(&set);
  if (n == 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (unsigned)c : 1;
  }
  q = quota_cpus();
  if (q > 0 && q < n)
    n = q;
  return n > 1024 ? 1024 : n;
}
