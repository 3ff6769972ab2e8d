/* The default memory limit (src/common/machine.c) read from a /proc and a /sys
 * the test lays out itself: cgroup v2 limits at any level, memory.high, cgroup
 * v1, MemAvailable, an rlimit; the smallest wins and the limit is half.
 */
#include "common/machine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expect.h"

#define GIB ((uint64_t)1 << 30)

static char root[] = "/tmp/pc_machine_test.XXXXXX";

/* Writes root/rel, making its directories. */
static void put(const char *rel, const char *text) {
  char path[1024], *p;
  FILE *f;

  snprintf(path, sizeof(path), "%s/%s", root, rel);
  for (p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
    *p = '\0';
    mkdir(path, 0700);
    *p = '/';
  }
  if ((f = fopen(path, "w")) == NULL || fputs(text, f) < 0 || fclose(f))
    abort();
}

static void clear(void) {
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'/proc '%s'/sys", root, root);
  if (system(cmd) != 0)
    abort();
}

/* The smallest rlimit of this process, or 0: the probe counts them too. */
static uint64_t rlimits(void) {
  int which[2] = {RLIMIT_AS, RLIMIT_DATA}, k;
  uint64_t best = 0;
  for (k = 0; k < 2; k++) {
    struct rlimit rl;
    if (getrlimit(which[k], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (best == 0 || rl.rlim_cur < best))
      best = rl.rlim_cur;
  }
  return best;
}

/* Probes, and checks found/source unless an rlimit of the test's own
 * environment is smaller.
 */
static void expect(uint64_t found, const char *source) {
  pc_memlimit_t m;
  uint64_t rl = rlimits();

  pc__memory_limit_at(root, &m);
  if (rl != 0 && (found == 0 || rl < found))
    return;
  EXPECT(m.found == found);
  EXPECT(strcmp(m.source, source) == 0);
  EXPECT(m.limit == (found ? found / 2 : PC_MEMORY_UNLIMITED));
}

int main(void) {
  if (mkdtemp(root) == NULL)
    abort();

  cur = "nothing to read";
  expect(0, "none");

  cur = "MemAvailable";
  put("proc/meminfo", "MemTotal:       24000000 kB\n"
                      "MemFree:         1000000 kB\n"
                      "MemAvailable:    8388608 kB\n");
  expect(8 * GIB, "MemAvailable");

  cur = "cgroup v2: a limit one level up";
  put("proc/self/cgroup", "0::/a/b\n");
  put("sys/fs/cgroup/a/b/memory.max", "max\n");
  put("sys/fs/cgroup/a/memory.max", "2147483648\n");
  expect(2 * GIB, "cgroup memory.max");

  cur = "cgroup v2: memory.high below memory.max";
  put("sys/fs/cgroup/a/b/memory.high", "1610612736\n");
  expect(3 * GIB / 2, "cgroup memory.high");

  cur = "cgroup v2: the process's own memory.max";
  put("sys/fs/cgroup/a/b/memory.max", "1073741824\n");
  expect(GIB, "cgroup memory.max");

  cur = "cgroup v2: garbage is no limit";
  put("sys/fs/cgroup/a/b/memory.max", "12ab\n");
  put("sys/fs/cgroup/a/b/memory.high", "\n");
  put("sys/fs/cgroup/a/memory.max", "max\n");
  expect(8 * GIB, "MemAvailable");

  cur = "cgroup v1: 'no limit' at the process's level, a limit at the root";
  clear();
  put("proc/meminfo", "MemAvailable:    8388608 kB\n");
  put("proc/self/cgroup", "12:cpu,cpuacct:/docker/x\n"
                          "4:memory:/docker/x\n"
                          "0::/\n");
  put("sys/fs/cgroup/memory/docker/x/memory.limit_in_bytes",
      "9223372036854771712\n");
  put("sys/fs/cgroup/memory/memory.limit_in_bytes", "4294967296\n");
  expect(4 * GIB, "cgroup v1 memory.limit_in_bytes");

  cur = "RLIMIT_DATA";
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  /* The sanitizers' runtimes map more than any such limit allows. */
  if (0)
#endif
  {
    /* In a child: the limit must not bind this process's own allocator. */
    pid_t pid = fork();
    int st = 0;
    if (pid == 0) {
      struct rlimit rl = {512u << 20, 512u << 20};
      pc_memlimit_t m;
      struct rlimit old;
      if (getrlimit(RLIMIT_DATA, &old) == 0 && old.rlim_max != RLIM_INFINITY &&
          old.rlim_max < rl.rlim_max)
        _exit(0); /* already below: nothing to show */
      if (setrlimit(RLIMIT_DATA, &rl) != 0)
        _exit(3);
      pc__memory_limit_at(root, &m);
      _exit(m.found == (512u << 20) && strcmp(m.source, "RLIMIT_DATA") == 0 &&
                    m.limit == (256u << 20)
                ? 0
                : 1);
    }
    EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
           WEXITSTATUS(st) == 0);
  }

  cur = "the real machine";
  {
    pc_memlimit_t m;
    pc_default_memory_limit(&m);
    EXPECT(m.source != NULL);
    EXPECT(m.found == 0 ? m.limit == PC_MEMORY_UNLIMITED
                        : m.limit == m.found / 2);
  }

  clear();
  rmdir(root);
  printf("machine_test: %d checks, %d failed\n", checks, failures);
  return failures != 0;
}
