/* What the machine lets this process use: CPUs (what `nproc` says, capped
 * by a cgroup CPU quota, which nproc ignores but a container's scheduler
 * enforces) and memory (cgroup limits, rlimits, MemAvailable: the smallest
 * that applies).
 *
 * Then the process's own limits on how many jobs it can run (ulimit -n,
 * ulimit -v, threads that start): pc__limit_jobs().
 *
 * Every file is read below a root prefix ("" on a real run) so that the unit
 * test can lay out a /proc and a /sys of its own (tests/unit/machine_test.c).
 */
#include "common/machine.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

/* A cgroup limit at or above this is "no limit" (cgroup v1 writes
 * PAGE_COUNTER_MAX pages, 2^63 rounded down to a page, for none).
 */
#define MEM_UNBOUNDED ((uint64_t)1 << 60)

/* Reads the first line of root + path into buf. 0 or a negative code. */
static int read_line(const char *root, const char *path, char *buf,
                     size_t size) {
  char full[1024];
  FILE *f;
  int ok;

  if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >= sizeof(full))
    return -ENAMETOOLONG;
  if ((f = fopen(full, "re")) == NULL)
    return PC__ERRNO();
  ok = fgets(buf, (int)size, f) != NULL;
  fclose(f);
  return ok ? 0 : -ENODATA;
}

/* This process's cgroup directory relative to the hierarchy's mount point
 * ("" for the root): the v2 line ("0::/a/b") when `controller` is NULL,
 * else the v1 line whose controller list holds it ("4:memory:/a/b").
 * 0, or a negative code (-ENOENT: no such line).
 */
static int cgroup_path(const char *root, const char *controller, char *dir,
                       size_t size) {
  char line[512], full[512];
  FILE *f;
  int found = -ENOENT;

  snprintf(full, sizeof(full), "%s/proc/self/cgroup", root);
  if ((f = fopen(full, "re")) == NULL)
    return PC__ERRNO();
  while (found != 0 && fgets(line, sizeof(line), f) != NULL) {
    char *ctl = strchr(line, ':'), *path;
    size_t n;
    line[strcspn(line, "\n")] = '\0';
    if (ctl == NULL || (path = strchr(ctl + 1, ':')) == NULL)
      continue;
    *path++ = '\0';
    *ctl++ = '\0';
    if (controller == NULL ? strcmp(line, "0") != 0 || *ctl != '\0'
                           : strstr(ctl, controller) == NULL)
      continue;
    /* "/" is the root: no component to add. */
    if (strcmp(path, "/") == 0)
      path = "";
    n = strlen(path);
    if (n < size) {
      memcpy(dir, path, n + 1);
      found = 0;
    }
  }
  fclose(f);
  return found;
}

/* Calls `each` on `mount/dir/file` for dir and every ancestor up to the
 * mount point: the kernel enforces every level's limit, and a container's
 * is often set one level up from the process's own cgroup.
 */
static void each_level(const char *root, const char *mount, const char *dir,
                       const char *file,
                       void (*each)(const char *line, void *arg), void *arg) {
  char d[512], path[1024], line[128];
  size_t n = strlen(dir);

  if (n >= sizeof(d))
    return;
  memcpy(d, dir, n + 1);
  for (;;) {
    char *slash;
    snprintf(path, sizeof(path), "%s%s/%s", mount, d, file);
    if (read_line(root, path, line, sizeof(line)) == 0)
      each(line, arg);
    if ((slash = strrchr(d, '/')) == NULL)
      break;
    *slash = '\0';
  }
}

static void cpu_max_line(const char *line, void *arg) {
  unsigned *best = arg;
  long long q, p;
  if (strncmp(line, "max", 3) != 0 && sscanf(line, "%lld %lld", &q, &p) == 2 &&
      q > 0 && p > 0) {
    unsigned n = (unsigned)((q + p - 1) / p);
    if (*best == 0 || n < *best)
      *best = n;
  }
}

/* CPUs allowed by a quota, rounded up, or 0 for no quota. */
static unsigned quota_cpus(const char *root) {
  char dir[512], line[128];
  unsigned best = 0;
  long long q, p;

  if (cgroup_path(root, NULL, dir, sizeof(dir)) == 0) {
    each_level(root, "/sys/fs/cgroup", dir, "cpu.max", cpu_max_line, &best);
    if (best)
      return best;
  }
  /* cgroup v1. */
  if (read_line(root, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", line,
                sizeof(line)) == 0 &&
      sscanf(line, "%lld", &q) == 1 && q > 0 &&
      read_line(root, "/sys/fs/cgroup/cpu/cpu.cfs_period_us", line,
                sizeof(line)) == 0 &&
      sscanf(line, "%lld", &p) == 1 && p > 0)
    return (unsigned)((q + p - 1) / p);
  return 0;
}

unsigned pc_default_jobs(void) {
#if PC_HAVE_SCHED_GETAFFINITY
  cpu_set_t set;
#endif
  unsigned n = 0, q = 0;

  /* Elsewhere (macOS, the BSDs, -Dportable=true) the CPUs online. */
#if PC_HAVE_SCHED_GETAFFINITY
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    n = (unsigned)CPU_COUNT(&set);
#endif
  if (n == 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (unsigned)c : 1;
  }
  if (PC_HAVE_CGROUPS)
    q = quota_cpus("");
  if (q > 0 && q < n)
    n = q;
  return n > PC_JOBS_MAX ? PC_JOBS_MAX : n;
}

/* The smallest bound seen so far and where it came from. */
typedef struct bound {
  uint64_t bytes; /* 0: none yet */
  const char *source;
} bound_t;

static void offer(bound_t *b, uint64_t bytes, const char *source) {
  if (bytes == 0 || bytes >= MEM_UNBOUNDED)
    return;
  if (b->bytes == 0 || bytes < b->bytes) {
    b->bytes = bytes;
    b->source = source;
  }
}

/* A cgroup memory file's value: bytes, or "max" (none). 0 when none. */
static uint64_t mem_value(const char *line) {
  char *end;
  unsigned long long v;
  if (strncmp(line, "max", 3) == 0 || *line < '0' || *line > '9')
    return 0;
  v = strtoull(line, &end, 10);
  return (*end == '\n' || *end == '\0') ? (uint64_t)v : 0;
}

typedef struct level_arg {
  bound_t *b;
  const char *source;
} level_arg_t;

static void mem_line(const char *line, void *arg) {
  level_arg_t *a = arg;
  offer(a->b, mem_value(line), a->source);
}

static void cgroup_mem(const char *root, bound_t *b) {
  char dir[512];
  level_arg_t a;

  a.b = b;
  if (cgroup_path(root, NULL, dir, sizeof(dir)) == 0) {
    a.source = "cgroup memory.max";
    each_level(root, "/sys/fs/cgroup", dir, "memory.max", mem_line, &a);
    /* Past memory.high the kernel throttles and reclaims hard: a run that
     * lives there crawls, so it counts as a limit too.
     */
    a.source = "cgroup memory.high";
    each_level(root, "/sys/fs/cgroup", dir, "memory.high", mem_line, &a);
  }
  if (cgroup_path(root, "memory", dir, sizeof(dir)) == 0) {
    a.source = "cgroup v1 memory.limit_in_bytes";
    each_level(root, "/sys/fs/cgroup/memory", dir, "memory.limit_in_bytes",
               mem_line, &a);
    /* A container often sees its own cgroup as the mount's root. */
    if (dir[0] != '\0')
      each_level(root, "/sys/fs/cgroup/memory", "", "memory.limit_in_bytes",
                 mem_line, &a);
  }
}

static void meminfo(const char *root, bound_t *b) {
  char path[512], line[256];
  FILE *f;

  snprintf(path, sizeof(path), "%s/proc/meminfo", root);
  if ((f = fopen(path, "re")) == NULL)
    return;
  while (fgets(line, sizeof(line), f) != NULL) {
    unsigned long long kib;
    if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
      offer(b, (uint64_t)kib << 10, "MemAvailable");
      break;
    }
  }
  fclose(f);
}

static void rlimit_mem(int which, const char *source, bound_t *b) {
  struct rlimit rl;
  if (getrlimit(which, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    offer(b, (uint64_t)rl.rlim_cur, source);
}

void pc__memory_limit_at(const char *root, pc_memlimit_t *m) {
  bound_t b = {0, NULL};

  cgroup_mem(root, &b);
  rlimit_mem(RLIMIT_AS, "RLIMIT_AS", &b);
  rlimit_mem(RLIMIT_DATA, "RLIMIT_DATA", &b);
  meminfo(root, &b);
  m->found = b.bytes;
  m->source = b.source != NULL ? b.source : "none";
  /* A half: the rest is for what else runs there (the web server being
   * built, the CI runner, the page cache our own outputs go through).
   */
  m->limit = b.bytes != 0 ? b.bytes / 2 : PC_MEMORY_UNLIMITED;
}

void pc_default_memory_limit(pc_memlimit_t *m) { pc__memory_limit_at("", m); }

/* --- Process limits: how many jobs this process can run ---------------- */

#define FDS_PER_JOB 8
#define POOL_STACK ((size_t)8 << 20) /* libuv's threadpool.c */
#define MEM_PER_JOB ((size_t)64 << 20)
#define MEM_BASE ((size_t)48 << 20)
#define LOOP_FDS 16

static void probe_wait(void *arg) { uv_sem_wait(arg); }

/* How many of `want` threads with libuv's pool stack size can run at once
 * (all are started, then released and joined).
 */
static unsigned probe_threads(unsigned want) {
  uv_thread_t t[PC_JOBS_MAX];
  uv_thread_options_t o;
  uv_sem_t go;
  unsigned n, i;

  if (want > PC__ARRAY_SIZE(t))
    want = PC__ARRAY_SIZE(t);
  if (uv_sem_init(&go, 0) != 0)
    return 0;
  o.flags = UV_THREAD_HAS_STACK_SIZE;
  o.stack_size = POOL_STACK;
  for (n = 0; n < want; n++)
    if (uv_thread_create_ex(&t[n], &o, probe_wait, &go) != 0)
      break;
  for (i = 0; i < n; i++)
    uv_sem_post(&go);
  for (i = 0; i < n; i++)
    uv_thread_join(&t[i]);
  uv_sem_destroy(&go);
  return n;
}

/* A job holds at most FDS_PER_JOB descriptors at once (its source, an
 * identical file, three temp files, three outputs or cache entries to copy
 * from); the loop needs a few of its own. Fewer jobs, not EMFILE failures,
 * under a low `ulimit -n`.
 */
static int limit_fds(unsigned *jobs) {
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    rlim_t room = rl.rlim_cur > LOOP_FDS ? rl.rlim_cur - LOOP_FDS : 0;
    unsigned most = (unsigned)(room / FDS_PER_JOB);
    /* libuv aborts when it cannot make its pipes: refuse first. */
    if (most < 1)
      return -EMFILE;
    if (*jobs > most)
      *jobs = most;
  }
  return 0;
}

/* libbrotlienc aborts when an allocation fails, so under a finite
 * address-space limit (ulimit -v) run only as many jobs as the limit can
 * hold: each a pool thread's stack plus what brotli 11 takes for a file of
 * a few MiB.
 */
static void limit_as(unsigned *jobs) {
  struct rlimit rl;

  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    rlim_t room = rl.rlim_cur > MEM_BASE ? rl.rlim_cur - MEM_BASE : 0;
    unsigned most = (unsigned)(room / (POOL_STACK + MEM_PER_JOB));
    if (most < 1)
      most = 1;
    if (*jobs > most)
      *jobs = most;
  }
}

int pc__limit_jobs(unsigned *jobs) {
  unsigned got;
  int err;

  if ((err = limit_fds(jobs)) != 0)
    return err;
  limit_as(jobs);
  /* libuv aborts when its pool cannot start a thread (each has an 8 MiB
   * stack), as under a low `ulimit -v`: see how many start, and keep half
   * of them when not all did, leaving room for the codecs.
   */
  got = probe_threads(*jobs);
  if (got == 0)
    return -EAGAIN;
  if (got < *jobs)
    *jobs = got / 2 > 0 ? got / 2 : 1;
  return 0;
}
