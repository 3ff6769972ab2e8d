/* One file's work, as a record: filled by the loop thread, run by one
 * worker (worker.h), then read and freed by the loop thread. The worker
 * touches nothing but its job and the read-only config.
 */
#ifndef PC_JOB_H
#define PC_JOB_H

#include "common/common.h"
#include "manifest/manifest.h"
#include "manifest/spec.h"

#include <stdatomic.h>
#include <sys/stat.h>

/* What every job reads and none writes. */
typedef struct pc__cfg {
  pc__spec_t spec; /* the settings that shape the outputs (spec.h) */
  int dry_run;
  int follow;    /* --follow: symlinked directories are part of the tree */
  int fsync;     /* --fsync: outputs durable before and after rename */
  int man_known; /* the manifest exists: never an input (dev, ino) */
  dev_t man_dev;
  ino_t man_ino;
  unsigned jobs;    /* threads for zstd's own multi-threading of big files */
  atomic_int *stop; /* the run's (run.h): set by pc_stop() on SIGINT/SIGTERM */
  struct pc__dedup *dedup;   /* shared, with its own lock; NULL: no dedupe */
  struct pc__spares *spares; /* shared, with its own lock: codec states
                                kept between files, freed with the run */
  struct pc__store *cache;   /* thread-safe (store.h); NULL: no --cache-dir */
  struct pc__remote *remote; /* thread-safe (remote.h); NULL: no
                                --cache-url */
  /* --output-dir (spec.output_dir, which names it in messages): outputs
   * go below out_fd, mirroring each file's path below its root; out_fd is
   * -1 when a dry run found no such directory (every output missing).
   * The run's (setup.c closes it); jobs open below it.
   */
  int out_fd;
  /* --dictionary-from: the earlier releases' files (dictset.h), the run's,
   * and the delta formats to write (PC_DELTA_BIT()s; 0: no deltas).
   */
  const struct pc__dictset *dicts;
  unsigned deltas;
  const struct pc__prev *prev; /* the earlier manifest's records (the
                                  run's, read-only), or NULL */
  struct pc__dshare *dshare;   /* shared, with its own lock: deltas made
                                  this run (deltashare.h), or NULL */
} pc__cfg_t;

/* A job's place in the schedule (schedule.h), the loop thread's alone.
 * Small files of one directory travel as one unit: one pool hand-off and
 * one directory open for the lot (pigz's lesson: per-item overhead, not
 * the codec, bounds many small inputs). The unit's first job, its head,
 * carries the unit: the others are chained on it by `next`.
 */
typedef struct pc__unit {
  struct pc__job *next; /* the next job of this unit, or NULL */
  uint64_t weight;      /* the heap's key: the unit's total size */
  uint64_t mem;         /* its encoders' peak memory (the unit's: the
                           largest of its jobs', run one after another) */
  int filler;           /* started while a larger unit waited for memory;
                           counted in its reserve */
  int alone;            /* over the memory limit by itself, so started with
                           nothing else in flight */
} pc__unit_t;

/* A job's part in dedupe, written by dedup.c (dedup.h): the content it
 * claimed and how, and its place among the followers parked on that
 * content until its leader is done.
 */
typedef struct pc__dedup_ref {
  struct pc__content *content; /* claimed (by the worker), or NULL */
  int wait;                    /* a follower whose leader is still at work:
                                  the worker asks the loop to park it */
  int lead;                    /* compressed it first: others may wait on it */
  struct pc__dedup_ref *next_parked; /* the loop thread's */
} pc__dedup_ref_t;

/* What the job found out and did: written by its worker while it runs,
 * read by the loop thread once it is back. (The order packs the ints in
 * pairs: a pending job's size is docs/memory.md's.)
 */
typedef struct pc__result {
  int err;
  int outcome;    /* PC__CHECK_*: what the incremental check found */
  char *err_path; /* owned; NULL means fullpath */
  pc_output_t out[PC_NFORMATS];
  int copied;               /* outputs copied from an identical file */
  int cached;               /* every format's result came from the cache */
  unsigned cache_puts;      /* entries it stored in the cache */
  unsigned remote_hits;     /* formats taken from the remote cache */
  unsigned remote_rejected; /* formats whose remote entry was rejected */
  unsigned ndeltas;         /* entries of deltas and of dstats */
  pc_delta_t *deltas;       /* owned: one per format and distinct dictionary */
  pc__dstat_t *dstats;      /* owned: deltas[k]'s predecessor as read */
} pc__result_t;

/* One file to compress. A job waits in the run's heap from the walk until
 * a worker is free: as many as there are files. What only a running job
 * needs (its descriptors, its stat, its encoders) lives on the worker's
 * stack (work.h), libuv's request in the run's pool slots.
 *
 * Owners: the loop thread fills the file's fields before the job is
 * scheduled; the worker then reads them, updates size, mtime_ns and skip
 * once it has the file open, and writes `seen` and `res`; `unit` is
 * schedule.c's and `dd` dedup.c's. The loop thread frees the job.
 */
typedef struct pc__job {
  const pc__cfg_t *cfg;
  uint32_t root;    /* index of the PATH it was found under */
  int root_fd;      /* that root's directory (O_PATH): the run's, borrowed */
  char *fullpath;   /* owned; the name on disk */
  size_t rel_off;   /* the path relative to its root starts here */
  int via_link;     /* the walk saw a symlink to a file: open through it */
  uint64_t size;    /* walk's size (scheduling); fstat's once opened */
  int64_t mtime_ns; /* walk's mtime; fstat's once opened */
  unsigned absent;  /* formats whose output name the walk's listing
                       lacked: no stat needed to create it */
  pc_skip_t skip;   /* empty or under --min-size (by the walk or the
                       check): no output, only stale ones removed */
  /* A file the earlier manifest records, handed on by the walk without a
   * stat: the worker stats it and its outputs first and compresses only
   * when it changed (the walk's share of an incremental run is then the
   * listing; the stats, one per file and one per output, run on every
   * core). res.outcome says what the check found when it was not that.
   */
  const struct pc__prev_rec *prev; /* read-only, the run's; NULL once the
                                      check found the file to compress */
  /* Once opened, what its owner cannot put back as it was (mtime and size
   * can be, with utime() and a rewrite), and the atime before our first
   * read: a follower back from waiting on its leader must find the very
   * file it hashed, and its outputs get that atime.
   */
  struct {
    struct timespec atime0;
    int64_t ctime_ns;
    dev_t dev;
    ino_t ino;
  } seen;

  /* Its predecessor in each --dictionary-from DIR, or NULL (the run's
   * dictset, read-only), and the delta outputs the walk's listing shows
   * beside it (owned, NULL-terminated, or NULL): set by the loop thread.
   */
  const struct pc__dictfile *preds[PC_DICT_DIRS_MAX];
  char **old_deltas;

  pc__unit_t unit;
  pc__dedup_ref_t dd;
  pc__result_t res;
} pc__job_t;

enum {
  PC__CHECK_NONE = 0, /* compressed (or failed) as any job */
  PC__CHECK_GONE,     /* no longer there, or the manifest: no record */
  PC__CHECK_SAME,     /* unchanged per the earlier manifest */
  PC__CHECK_RESIZED   /* changed size: to be scheduled by its new one */
};

/* Allocates a job owning `fullpath` (freed with the job on failure too);
 * root_fd is borrowed: it must outlive the job. NULL on ENOMEM.
 */
pc__job_t *pc__job_new(char *fullpath, size_t rel_off, uint32_t root,
                       int root_fd, const struct stat *st, int via_link,
                       const pc__cfg_t *cfg);

/* Frees the job and the rest of its unit. */
void pc__job_free(pc__job_t *j);

#endif /* PC_JOB_H */
