/* The state of one pc_run(): owned and written by the loop thread only. */
#ifndef PC_RUN_H
#define PC_RUN_H

#include "common.h"
#include "dedup.h"
#include "job.h"
#include "outdir.h"
#include "prev.h"
#include "schedule.h"
#include "select.h"
#include "walk.h"

#include <stdatomic.h>
#include <sys/stat.h>
#include <uv.h>

/* One file's line in the manifest. */
typedef struct pc__rec {
  char *path;    /* relative to its root; owned unless `borrowed` */
  int borrowed;  /* path is the earlier manifest's (prev.c's, lives as long) */
  char *err_msg; /* owned; set only for lines read from a manifest */
  uint32_t root;
  pc_skip_t skip;
  int err;
  int unchanged;
  int deduped;
  int cached;
  int alone;
  uint64_t size;
  int64_t mtime_ns;
  pc_output_t out[PC_NFORMATS];
} pc__rec_t;

/* What is at a manifest's name before one is written there. */
typedef struct pc__mold {
  int regular; /* a regular file: the fields below are its */
  dev_t dev;
  ino_t ino;
  mode_t mode;
  uint64_t size;
} pc__mold_t;

/* A place in the pool: libuv's request for one unit in flight. At most
 * `jobs` units are, so the requests live here, not in every pending job.
 */
typedef struct pc__slot {
  uv_work_t req;
  pc__job_t *head;     /* the unit it runs */
  struct pc__run *run; /* the run it belongs to */
  struct pc__slot *next_free;
} pc__slot_t;

typedef struct pc__run {
  uv_loop_t loop;
  const pc_options_t *opts;
  struct timespec start; /* when the run began (CLOCK_REALTIME): a temp
                            file made before it may be a killed run's */
  pc__cfg_t cfg;
  pc__root_t *roots;
  uint32_t nroots;
  pc__select_t sel; /* which entries are sources (select.h) */

  /* Walk. */
  uv_idle_t idle;
  pc__walk_t *walk;
  pc__prev_t *prev;   /* the earlier manifest's records, or NULL */
  size_t prev_hint;   /* where the next lookup may be (pc__prev_next) */
  pc__mold_t man_old; /* what was at the manifest's name at the start */
  int walk_done;
  int cache_kicked;    /* pc__store_kick() called: the run's tail began */
  pc__mirror_t mirror; /* --output-dir: the walk's directory's mirror */
  /* The directory the walk last judged writable or not (out_dir_ok()):
   * its identity and the code its files fail with (0: writable).
   */
  int wdir_known;
  pc__devino_t wdir;
  int wdir_err;
  pc__relset_t rels; /* --output-dir and more than one PATH: the paths
                        below their PATH of the files taken so far */

  /* Schedule: units by size, largest first, within `jobs` and the memory
   * limit (schedule.h); a slot of the pool for each one in flight.
   */
  pc__sched_t sched;
  unsigned jobs;
  pc__slot_t *slots, *free_slots; /* `jobs` of them */

  /* Results. */
  pc__rec_t *recs; /* only with a manifest */
  size_t nrecs, caprecs;
  pc_totals_t totals;
  uint64_t cache_puts; /* entries stored: the cache grew, trim it */
  pc_progress_t progress;
  uv_timer_t timer;
  /* pc_stop() (run.c), from any thread or a signal handler: the first
   * request's signal (-1 when it named none; 0: no request yet), and the
   * handle it wakes the loop with, once stop_on says it is open.
   */
  atomic_int stop_signo;
  atomic_int stop_on;
  uv_async_t stop_async;
  int stopping;
  int fatal; /* a negative code that ends the run (ENOMEM) */
} pc__run_t;

/* manifest.c */
/* What a manifest says, whoever wrote it (a run, or a merge). */
typedef struct pc__mdoc {
  unsigned formats;
  int level[PC_NFORMATS];
  pc_gzip_engine_t gzip_engine;
  uint64_t ratio_num, ratio_den, min_size;
  const char *output_dir; /* --output-dir as given, or NULL */
  char *const *labels;    /* root labels; printed when more than one */
  uint32_t nroots;
  pc__rec_t *recs; /* sorted in place */
  size_t nrecs;
  int incomplete;
} pc__mdoc_t;

/* Where pc__manifest_write_doc() writes: a file at `path` (temp + rename,
 * left alone when it holds the same bytes already), or, with path NULL,
 * the caller's `write`.
 */
typedef struct pc__mdest {
  const char *path;
  int (*write)(void *data, const void *buf, size_t len);
  void *data;
  /* What pc__manifest_check() found at path, or NULL: checked again just
   * before writing, and should a regular file there have been replaced
   * since, looked at anew.
   */
  const pc__mold_t *checked;
  int sync; /* fsync the file and its directory */
} pc__mdest_t;

/* 0 when a manifest may be written at `path` (docs/reference.md, "What the
 * manifest may replace"; precompress.h):
 * PC_EOUTNAME for a name ending in .gz, .br or .zst (any case); 0 for
 * nothing there or a symlink (replaced as a name, never read); for a
 * regular file, 0 when it is empty or a precompress manifest of any
 * version; PC_EREFUSE for anything else, or the error met looking. *old
 * receives what is there. When `text` is not NULL, a regular file's bytes
 * are appended to it and its content is not judged here: the caller does,
 * with pc__manifest_ours(), when it parses them anyway.
 *
 * With `writing` 0 (a dry run: nothing will be replaced), the name is not
 * judged, and what is neither nothing, a symlink nor a regular file is
 * PC_ENOTREG: the earlier manifest is read from regular files only.
 */
int pc__manifest_check(const char *path, int writing, pc__mold_t *old,
                       pc__buf_t *text);

/* 0 when a manifest may replace a regular file of these bytes: it is
 * empty, or `ours` (pc__prev_parse()). Else PC_EREFUSE.
 */
int pc__manifest_ours(size_t len, int ours);

int pc__manifest_write_doc(pc__mdoc_t *d, const pc__mdest_t *to);
int pc__manifest_write(pc__run_t *r, const pc__mdest_t *to);

#endif /* PC_RUN_H */
