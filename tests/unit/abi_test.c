/* A program built against an older header runs with today's library
 * (precompress.h, "Versions"): its pc_options_t and pc_totals_t end earlier,
 * and the library reads and writes them only as far as their `size` says.
 *
 * This file does not include precompress.h: it is the older program. Its
 * structs are today's layouts cut short, as a header from before the last
 * fields were added would have them (options without memory_limit,
 * manifest_write and output_dir; totals without mem_limit, mem_peak,
 * ran_alone and err_path), each followed by canary bytes that the library
 * must leave alone. It also plays a newer program, whose structs are longer
 * than the library's: taken when the bytes the library does not know are
 * zero, -E2BIG when one is set.
 *
 *   abi_test FIXTURES/site
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"

#define FORMATS_MAX 8
#define CANARY 0xA5

typedef struct old_options {
  size_t size;
  const char *const *paths;
  size_t npaths;
  unsigned formats;
  int level[FORMATS_MAX];
  int gzip_engine;
  uint64_t ratio_num;
  uint64_t ratio_den;
  uint64_t min_size;
  const char *const *skip_ext;
  size_t nskip_ext;
  const char *const *include;
  size_t ninclude;
  const char *const *exclude;
  size_t nexclude;
  int follow;
  unsigned jobs;
  const char *manifest;
  int force;
  const char *cache_dir;
  uint64_t cache_max_size;
  uint32_t shard_index;
  uint32_t shard_count;
  int dry_run;
  int fsync;
  void *data;
  void (*on_file)(void *data, const void *file);
  void (*on_progress)(void *data, const void *progress);
  void (*on_error)(void *data, const char *path, int err);
} old_options_t;

typedef struct old_totals {
  size_t size;
  uint64_t files;
  uint64_t bytes;
  uint64_t compressed;
  uint64_t unchanged;
  uint64_t deduped;
  uint64_t cached;
  uint64_t skipped[16];
  uint64_t failed;
  uint64_t errors;
  uint64_t changes;
  uint64_t removed;
  int signo;
  struct {
    uint64_t files;
    uint64_t bytes_in;
    uint64_t bytes_out;
  } fmt[FORMATS_MAX];
} old_totals_t;

/* The library's functions, as the older header declared them. */
void pc_options_init_size(void *opts, size_t size);
int pc_run(const void *opts, void *totals);
int pc_options_check(const void *opts, const char **what);
const char *pc_strerror(int err);

static struct {
  old_options_t o;
  unsigned char canary[256];
} opts;

static struct {
  old_totals_t t;
  unsigned char canary[256];
} totals;

static int files_seen;

static void on_file(void *data, const void *file) {
  (void)data;
  (void)file;
  files_seen++;
}

static int canary_intact(const unsigned char *p, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (p[i] != CANARY)
      return 0;
  return 1;
}

static int exists(const char *dir, const char *rel) {
  char path[4096 + 64];
  struct stat st;
  snprintf(path, sizeof(path), "%s/%s", dir, rel);
  return stat(path, &st) == 0;
}

/* The older program: its smaller structs, defaults for what it lacks. */
static void test_older_program(const char *tree) {
  const char *paths[1];
  const char *what = NULL;
  int rc;

  memset(opts.canary, CANARY, sizeof(opts.canary));
  memset(totals.canary, CANARY, sizeof(totals.canary));
  pc_options_init_size(&opts.o, sizeof(opts.o));
  EXPECT(opts.o.size == sizeof(opts.o));
  EXPECT(canary_intact(opts.canary, sizeof(opts.canary)));
  EXPECT(opts.o.formats == 3u); /* gz and br */
  EXPECT(opts.o.level[0] == 9 && opts.o.level[1] == 11);
  EXPECT(opts.o.ratio_num == 95 && opts.o.ratio_den == 100);

  paths[0] = tree;
  opts.o.paths = paths;
  opts.o.npaths = 1;
  opts.o.jobs = 2;
  opts.o.on_file = on_file;
  EXPECT(pc_options_check(&opts.o, &what) == 0);

  memset(&totals.t, 0, sizeof(totals.t));
  totals.t.size = sizeof(totals.t);
  rc = pc_run(&opts.o, &totals.t);
  EXPECT(rc == 0);
  if (rc != 0)
    fprintf(stderr, "pc_run: %s\n", pc_strerror(rc));
  /* Written as far as the older struct goes, not a byte further. */
  EXPECT(canary_intact(totals.canary, sizeof(totals.canary)));
  EXPECT(canary_intact(opts.canary, sizeof(opts.canary)));
  EXPECT(totals.t.size == sizeof(totals.t));
  EXPECT(totals.t.files == 15);
  EXPECT(totals.t.compressed == 10);
  EXPECT(totals.t.failed == 0);
  EXPECT(totals.t.fmt[0].files == 10); /* .gz kept */
  EXPECT(files_seen == 15);
  EXPECT(exists(tree, "css/app.css.gz") && exists(tree, "css/app.css.br"));
}

/* A newer program: longer structs. Zero past the library's end is "not
 * asked for" and runs; a set byte there is -E2BIG, and nothing is written.
 */
static void test_newer_program(const char *tree) {
  struct {
    unsigned char bytes[4096];
  } big_opts, big_totals;
  old_options_t *o = (old_options_t *)(void *)&big_opts;
  old_totals_t *t = (old_totals_t *)(void *)&big_totals;
  const char *paths[1];

  memset(&big_opts, 0, sizeof(big_opts));
  pc_options_init_size(&big_opts, sizeof(big_opts));
  EXPECT(o->size == sizeof(big_opts));
  EXPECT(big_opts.bytes[sizeof(big_opts) - 1] == 0);
  paths[0] = tree;
  o->paths = paths;
  o->npaths = 1;
  o->dry_run = 1;
  memset(&big_totals, 0, sizeof(big_totals));
  t->size = sizeof(big_totals);
  EXPECT(pc_run(o, t) == 0);
  EXPECT(t->files == 15);
  EXPECT(big_totals.bytes[sizeof(big_totals) - 1] == 0);

  big_opts.bytes[sizeof(big_opts) - 1] = 1; /* a field this library lacks */
  EXPECT(pc_options_check(o, NULL) == -E2BIG);
  memset(&big_totals, CANARY, sizeof(big_totals));
  t->size = sizeof(big_totals);
  big_totals.bytes[sizeof(big_totals) - 1] = 0;
  EXPECT(pc_run(o, t) == -E2BIG);
  EXPECT(big_totals.bytes[100] == CANARY); /* nothing written */

  /* A size too small to hold itself: refused. */
  o->size = 2;
  EXPECT(pc_options_check(o, NULL) == -EINVAL);
}

int main(int argc, char **argv) {
  char tree[4096], cmd[8400];
  const char *base = getenv("TMPDIR");

  if (argc != 2) {
    fprintf(stderr, "usage: abi_test FIXTURES/site\n");
    return 2;
  }
  snprintf(tree, sizeof(tree), "%s/pc-abi-XXXXXX",
           base != NULL && base[0] != '\0' ? base : "/tmp");
  if (mkdtemp(tree) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(cmd, sizeof(cmd), "cp -R '%s/.' '%s/'", argv[1], tree);
  if (system(cmd) != 0) {
    fprintf(stderr, "could not copy %s\n", argv[1]);
    return 1;
  }
  test_older_program(tree);
  test_newer_program(tree);
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tree);
  printf("%d failed\n", failures);
  return failures != 0;
}
