/* The library as a program that embeds it sees it: only precompress.h,
 * linked against the library's archive (tests/meson.build).
 *
 *  1. Its own SIGINT handler survives a run: still installed afterwards
 *     (sigaction query) and still called when SIGINT comes. A second
 *     pc_run() during a run (from a callback) returns -EBUSY.
 *  2. pc_stop() from another thread, and from that SIGINT handler, stops
 *     a run over a larger tree: PC_EINTERRUPTED, fewer files than there
 *     are, no temp file left, the manifest marked incomplete.
 *  3. Resident memory returns near its start after a run over a ~10 MB
 *     file with every format: no codec state outlives pc_run(). Measured
 *     from /proc/self/statm; skipped under ASan and TSan, whose allocators
 *     keep freed memory on purpose.
 *
 * Usage: embed_test FIXTURES (the fixtures/ directory, copied to a temp
 * directory first: a run writes beside its sources).
 */
#include "precompress.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif

/* What the resident set may have grown by across the big run. Without
 * per-run teardown a zstd 19 context for a 10 MB input stays in a pool
 * thread (about 90 MB); a run that frees its codecs measures under 5.
 */
#define RSS_SLACK ((long)20 << 20)

static int failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "embed_test.c:%d: failed: %s\n", __LINE__, #cond);       \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#define CHECK_EQ(a, b)                                                         \
  do {                                                                         \
    long long a_ = (long long)(a), b_ = (long long)(b);                        \
    if (a_ != b_) {                                                            \
      fprintf(stderr, "embed_test.c:%d: %s == %lld, want %s == %lld\n",        \
              __LINE__, #a, a_, #b, b_);                                       \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static volatile sig_atomic_t sigint_seen;
static volatile sig_atomic_t stop_from_handler;

/* The program's own handler: counts, and when asked, stops the run the
 * way a CLI does.
 */
static void on_sigint(int signo) {
  sigint_seen++;
  if (stop_from_handler)
    pc_stop(signo);
}

static char tmp[4096];

/* Copies the tree at `from` to `to` (regular files and directories). */
static int copy_tree(const char *from, const char *to) {
  DIR *d = opendir(from);
  struct dirent *e;
  int err = 0;

  if (d == NULL || mkdir(to, 0755) != 0) {
    if (d != NULL)
      closedir(d);
    return -1;
  }
  while (err == 0 && (e = readdir(d)) != NULL) {
    char a[4096], b[4096];
    struct stat st;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    snprintf(a, sizeof(a), "%s/%s", from, e->d_name);
    snprintf(b, sizeof(b), "%s/%s", to, e->d_name);
    if (lstat(a, &st) != 0) {
      err = -1;
    } else if (S_ISDIR(st.st_mode)) {
      err = copy_tree(a, b);
    } else if (S_ISREG(st.st_mode)) {
      char buf[65536];
      ssize_t n;
      int in = open(a, O_RDONLY), out = open(b, O_WRONLY | O_CREAT, 0644);
      while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
        if (write(out, buf, (size_t)n) != n)
          err = -1;
      if (in < 0 || out < 0)
        err = -1;
      if (in >= 0)
        close(in);
      if (out >= 0 && close(out) != 0)
        err = -1;
    }
  }
  closedir(d);
  return err;
}

/* Writes `size` bytes of text that compresses like real assets do:
 * words from a small vocabulary in a pseudo-random order.
 */
static int write_text(const char *path, size_t size, unsigned seed) {
  static const char *const words[] = {
      "function", "return",  "const",   "var",    "let",    "this",
      "window",   "element", "display", "margin", "border", "padding",
      "color",    "width",   "height",  "class",  "div",    "span",
      "=",        "{",       "}",       "(",      ")",      ";\n"};
  FILE *f = fopen(path, "w");
  uint32_t x = seed * 2654435761u + 1;
  size_t n = 0;

  if (f == NULL)
    return -1;
  while (n < size) {
    const char *w;
    x = x * 1664525u + 1013904223u;
    w = words[(x >> 16) % (sizeof(words) / sizeof(words[0]))];
    n += (size_t)fprintf(f, "%s%u ", w, (x >> 8) % 64);
  }
  return fclose(f) == 0 ? 0 : -1;
}

/* Files whose name holds ".tmp" under dir: a stopped run leaves none. */
static int count_temps(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;

  if (d == NULL)
    return 0;
  while ((e = readdir(d)) != NULL) {
    char p[4096];
    struct stat st;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
      n += count_temps(p);
    else if (strstr(e->d_name, ".tmp") != NULL)
      n++;
  }
  closedir(d);
  return n;
}

static int file_has(const char *path, const char *needle) {
  static char buf[1 << 20];
  FILE *f = fopen(path, "r");
  size_t n;

  if (f == NULL)
    return 0;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, needle) != NULL;
}

static long rss_bytes(void) {
  long size = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL)
    return -1;
  if (fscanf(f, "%ld %ld", &size, &resident) != 2)
    resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Counts files as the run reports them, for the stopper to wait on. */
static volatile int files_seen;

static void on_file(void *data, const pc_file_t *file) {
  (void)data;
  (void)file;
  __atomic_add_fetch(&files_seen, 1, __ATOMIC_SEQ_CST);
}

/* The first file's callback tries a second run while the first is on. */
static int busy_rc = 1;
static const pc_options_t *busy_opts;

static void on_file_busy(void *data, const pc_file_t *file) {
  (void)data;
  (void)file;
  if (busy_rc == 1)
    busy_rc = pc_run(busy_opts, NULL);
}

struct stopper {
  int how; /* 0: pc_stop() from this thread; 1: SIGINT to the process */
};

static void *stopper(void *arg) {
  const struct stopper *s = arg;
  int k;
  /* Mid-run: once the first files are back, well before the last. */
  for (k = 0; k < 3000 && __atomic_load_n(&files_seen, __ATOMIC_SEQ_CST) < 2;
       k++)
    sleep_ms(5);
  if (s->how == 0)
    pc_stop(0);
  else
    kill(getpid(), SIGINT);
  return NULL;
}

static void base_options(pc_options_t *o, const char *const *paths) {
  pc_options_init(o);
  o->paths = paths;
  o->npaths = 1;
  o->jobs = 2;
  o->memory_limit = PC_MEMORY_UNLIMITED;
}

/* 1. A run over the fixtures leaves the program's SIGINT handler be. */
static void test_handler_survives(const char *fixtures) {
  char tree[4200], man[4200];
  const char *paths[1];
  struct sigaction sa, now;
  pc_options_t o;
  pc_totals_t t;
  int rc;

  snprintf(tree, sizeof(tree), "%s/site", tmp);
  snprintf(man, sizeof(man), "%s/small.json", tmp);
  CHECK(copy_tree(fixtures, tree) == 0);

  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGINT, &sa, NULL) == 0);

  paths[0] = tree;
  base_options(&o, paths);
  o.manifest = man;
  o.on_file = on_file_busy;
  busy_opts = &o;
  rc = pc_run(&o, &t);
  CHECK_EQ(rc, 0);
  CHECK(t.files > 0);
  CHECK(t.compressed > 0);
  CHECK_EQ(busy_rc, -EBUSY);

  CHECK(sigaction(SIGINT, NULL, &now) == 0);
  CHECK(now.sa_handler == on_sigint);
  CHECK(raise(SIGINT) == 0);
  CHECK_EQ(sigint_seen, 1);
}

/* 2. pc_stop() mid-run, from a thread or from the SIGINT handler. */
static void test_stop(int how) {
  char tree[4200], man[4200], p[4300];
  const char *paths[1];
  struct stopper s = {how};
  pthread_t th;
  pc_options_t o;
  pc_totals_t t;
  int k, rc, seen0 = sigint_seen;

  snprintf(tree, sizeof(tree), "%s/big%d", tmp, how);
  snprintf(man, sizeof(man), "%s/big%d.json", tmp, how);
  CHECK(mkdir(tree, 0755) == 0);
  /* 40 files of 512 KiB at brotli 11: tens of seconds unstopped. */
  for (k = 0; k < 40; k++) {
    snprintf(p, sizeof(p), "%s/f%02d.js", tree, k);
    CHECK(write_text(p, 512 << 10, (unsigned)k + 1) == 0);
  }

  paths[0] = tree;
  base_options(&o, paths);
  o.manifest = man;
  o.on_file = on_file;
  files_seen = 0;
  stop_from_handler = how == 1;
  CHECK(pthread_create(&th, NULL, stopper, &s) == 0);
  rc = pc_run(&o, &t);
  pthread_join(th, NULL);
  stop_from_handler = 0;

  CHECK_EQ(rc, PC_EINTERRUPTED);
  CHECK_EQ(t.signo, how == 1 ? SIGINT : 0);
  CHECK(t.files >= 2);
  CHECK(t.files < 40);
  CHECK_EQ(count_temps(tree), 0);
  CHECK(file_has(man, "\"incomplete\": true"));
  if (how == 1)
    CHECK_EQ(sigint_seen, seen0 + 1);
}

/* 3. The resident set after a run is near what it was before. */
static void test_rss(void) {
  char dir[4200], p[4300];
  const char *paths[1];
  pc_options_t o;
  pc_totals_t t;
  long before, after;
  int rc;

  snprintf(dir, sizeof(dir), "%s/rss", tmp);
  snprintf(p, sizeof(p), "%s/bundle.js", dir);
  CHECK(mkdir(dir, 0755) == 0);
  /* Under a sanitizer the figures mean nothing: a smaller file still
   * takes the teardown through its checks, in a fraction of the time.
   */
  CHECK(write_text(p, UNDER_SANITIZER ? 2 << 20 : 10 << 20, 7) == 0);

  paths[0] = dir;
  base_options(&o, paths);
  o.formats = PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR);
  o.level[PC_BR] =
      5; /* brotli 11 would take minutes; its state is freed per file anyway */
  if (pc_format_available(PC_ZST))
    o.formats |= PC_FMT_BIT(PC_ZST);
  before = rss_bytes();
  rc = pc_run(&o, &t);
  after = rss_bytes();
  CHECK_EQ(rc, 0);
  CHECK_EQ(t.compressed, 1);
  printf("rss: %ld KiB before the run, %ld KiB after (+%ld KiB)\n",
         before >> 10, after >> 10, (after - before) >> 10);
  if (UNDER_SANITIZER) {
    printf("rss: not judged under a sanitizer\n");
    return;
  }
  CHECK(before > 0);
  CHECK(after - before <= RSS_SLACK);
}

int main(int argc, char **argv) {
  const char *base = getenv("TMPDIR");
  char cmd[4300];

  if (argc != 2) {
    fprintf(stderr, "usage: embed_test FIXTURES\n");
    return 2;
  }
  snprintf(tmp, sizeof(tmp), "%s/pc-embed-XXXXXX",
           base != NULL && base[0] != '\0' ? base : "/tmp");
  if (mkdtemp(tmp) == NULL) {
    perror("mkdtemp");
    return 1;
  }

  /* The library reports the version of the header it was built with. */
  CHECK(pc_version() == PC_VERSION_NUMBER);
  CHECK(strcmp(pc_version_string(), PC_VERSION_STRING) == 0);
  test_handler_survives(argv[1]);
  test_stop(0);
  test_stop(1);
  test_rss();

  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp);
  printf("%d failed\n", failures);
  return failures != 0;
}
