/* One file's work: read it once, feed every enabled format, keep what pays,
 * write through the output protocol. A job is filled by the loop thread,
 * run by one worker (pc__job_run), then read and freed by the loop thread:
 * the worker touches nothing but its job and the read-only config.
 */
#ifndef PC_JOB_H
#define PC_JOB_H

#include "common.h"
#include "dedup.h"

#include <stdatomic.h>
#include <sys/stat.h>

/* What every job reads and none writes. */
typedef struct pc__cfg {
  unsigned formats;
  int level[PC_NFORMATS];
  pc_gzip_engine_t gzip_engine;
  uint64_t ratio_num, ratio_den;
  int dry_run;
  int follow;        /* --follow: symlinked directories are part of the tree */
  int fsync;         /* --fsync: outputs durable before and after rename */
  uint64_t min_size; /* --min-size: smaller files are skipped */
  int man_known;     /* the manifest exists: never an input (dev, ino) */
  dev_t man_dev;
  ino_t man_ino;
  unsigned jobs;   /* threads for zstd's own multi-threading of big files */
  atomic_int stop; /* set by the loop thread on SIGINT/SIGTERM */
  struct pc__dedup *dedup;   /* shared, with its own lock; NULL: no dedupe */
  struct pc__spares *spares; /* shared, with its own lock: codec states
                                kept between files, freed with the run */
  struct pc__store *cache;   /* thread-safe (store.h); NULL: no --cache-dir */
  /* --output-dir: outputs go below out_fd, mirroring each file's path
   * below its root; out_fd is -1 when a dry run found no such directory
   * (every output missing). out_label names it in messages.
   */
  int outdir;
  int out_fd;
  const char *out_label;
} pc__cfg_t;

/* A job waits in the run's heap from the walk until a worker is free: as
 * many as there are files. What only a running job needs (its stat, libuv's
 * request) lives on the worker's stack or in the run's pool slots.
 */
typedef struct pc__job {
  const pc__cfg_t *cfg;
  uint32_t root;    /* index of the PATH it was found under */
  int root_fd;      /* that root's directory (O_PATH), owned by the run */
  int pdir;         /* while running: the file's directory (O_PATH) */
  int odir;         /* while running: where its outputs go; pdir in place,
                       with --output-dir its mirror below out_fd (-1 while
                       missing: made by the first write, pc__job_out_open) */
  int odir_unit;    /* odir is the unit's, kept for its next job: the
                       mirror is opened (or made) once per directory's unit,
                       not once per file */
  char *fullpath;   /* owned; the name on disk */
  size_t rel_off;   /* the path relative to its root starts here */
  int via_link;     /* the walk saw a symlink to a file: open through it */
  uint64_t size;    /* walk's size (scheduling); fstat's once opened */
  int64_t mtime_ns; /* walk's mtime; fstat's once opened */
  /* Once opened, what its owner cannot put back as it was (mtime and
   * size can be, with utime() and a rewrite): a follower back from
   * waiting on its leader must find the very file it hashed.
   */
  int64_t ctime_ns;
  dev_t dev;
  ino_t ino;

  /* Results, written by the worker. */
  struct stat *st; /* while it runs: the source as opened (the worker's) */
  int err;
  char *err_path; /* owned; NULL means fullpath */
  pc_output_t out[PC_NFORMATS];

  /* Dedupe: the content this job claimed (dedup.h). A follower whose
   * leader is still at work is parked on the loop thread until the leader
   * is done; it then runs again and copies.
   */
  pc__dedup_ref_t dd;
  struct timespec atime0; /* the source's before its first read: what
                             outputs get, even after a wait */
  int copied;             /* outputs copied from an identical file */
  int cached;             /* every format's result came from the cache */
  unsigned cache_puts;    /* entries it stored in the cache */

  /* Small files of one directory travel as one unit: one pool hand-off and
   * one directory open for the lot (pigz's lesson: per-item overhead, not
   * the codec, bounds many small inputs). The head carries the unit.
   */
  struct pc__job *batch; /* the next job of this unit, or NULL */
  uint64_t weight;       /* the heap's key: the unit's total size */
  uint64_t mem;          /* its encoders' peak memory (the unit's: the
                            largest of its jobs', run one after another) */
  int filler;            /* schedule.c: started while a larger unit waited
                            for memory; counted in its reserve */
  int alone;             /* schedule.c: over the memory limit by itself, so
                            started with nothing else in flight */
  unsigned absent;       /* formats whose output name the walk's listing
                            lacked: no stat needed to create it */

  /* A file the earlier manifest records, handed on by the walk without a
   * stat: the worker stats it and its outputs first and compresses only
   * when it changed (the walk's share of an incremental run is then the
   * listing; the stats, one per file and one per output, run on every
   * core). `outcome` says what the check found when it was not that.
   */
  const struct pc__prev_rec *prev; /* read-only, the run's; NULL once the
                                      check found the file to compress */
  int outcome;                     /* PC__CHECK_* */
  pc_skip_t skip; /* empty or under --min-size (by the walk or the
                     check): no output, only stale ones removed */
} pc__job_t;

enum {
  PC__CHECK_NONE = 0, /* compressed (or failed) as any job */
  PC__CHECK_GONE,     /* no longer there, or the manifest: no record */
  PC__CHECK_SAME,     /* unchanged per the earlier manifest */
  PC__CHECK_RESIZED   /* changed size: to be scheduled by its new one */
};

/* Allocates a job owning `fullpath` (freed with the job on failure too).
 * NULL on ENOMEM.
 */
pc__job_t *pc__job_new(char *fullpath, size_t rel_off, uint32_t root,
                       int root_fd, const struct stat *st, int via_link,
                       const pc__cfg_t *cfg);

/* Runs on a worker thread: the job and every job chained on it by `batch`
 * (all in one directory), in order. A job not started because of a stop
 * request gets err PC_EINTERRUPTED.
 */
void pc__job_run_unit(pc__job_t *head);

/* The most a job on a file of `size` bytes takes at once: its encoders
 * (codec.c's estimates) and its read and output buffers.
 */
uint64_t pc__job_mem(const pc__cfg_t *cfg, uint64_t size);

/* Frees the job and the rest of its unit. */
void pc__job_free(pc__job_t *j);

#endif /* PC_JOB_H */
