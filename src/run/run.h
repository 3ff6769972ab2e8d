/* One pc_run(): its state, owned by the loop thread only, and the
 * functions its four files share. run.c is the loop (pc_run(), pc_stop(),
 * the pool's callbacks, the schedule); setup.c sets the run up and frees
 * it; dispatch.c turns the walk's entries into jobs and records; record.c
 * keeps the records and totals and tells the caller. Dependencies point
 * one way: run -> setup, dispatch -> record.
 *
 * The rule: each part of the state has one writer, the file it is named
 * for (`run`, `walk`: dispatch.c's, `res`: record.c's); setup.c sets
 * every part up before the loop starts and frees it after, and writes the
 * configuration, which is read-only in between. A file that changes
 * another part asks its writer through a function (pc__record_fatal(),
 * pc__record_queued(), ...), or, against the dependencies' direction, a
 * function the writer handed it (pc__take_fn).
 */
#ifndef PC_RUN_H
#define PC_RUN_H

#include "common/common.h"
#include "work/dedup.h"
#include "work/dictset.h"
#include "work/job.h"
#include "manifest/manifest.h"
#include "walk/outdir.h"
#include "manifest/prev.h"
#include "run/schedule.h"
#include "walk/select.h"
#include "walk/walk.h"

#include <stdatomic.h>
#include <sys/stat.h>
#include <uv.h>

/* A place in the pool: libuv's request for one unit in flight. At most
 * `jobs` units are, so the requests live here, not in every pending job.
 */
typedef struct pc__slot {
  uv_work_t req;
  pc__job_t *head;     /* the unit it runs */
  struct pc__run *run; /* the run it belongs to */
  struct pc__slot *next_free;
} pc__slot_t;

/* What dispatch.c hands a job it made to: run.c's, whose the schedule is. */
typedef void pc__take_fn(struct pc__run *r, pc__job_t *j);

typedef struct pc__run {
  /* The configuration: written by setup.c before the loop starts, read by
   * every file and written by none once it has.
   */
  const pc_options_t *opts;
  struct timespec start; /* when the run began (CLOCK_REALTIME): a temp
                            file made before it may be a killed run's */
  pc__cfg_t cfg;
  pc__root_t *roots;
  uint32_t nroots;
  pc__select_t sel;    /* which entries are sources (select.h) */
  pc__dictset_t dicts; /* --dictionary-from: the earlier releases' files */
  pc__prev_t *prev;    /* the earlier manifest's records, or NULL */
  pc__mold_t man_old;  /* what was at the manifest's name at the start */
  unsigned jobs;       /* units in flight at most: the pool's threads */

  /* The loop, the schedule and the stop: written by run.c; the others
   * only read it (record.c: stopping, the schedule's figures).
   */
  struct {
    uv_loop_t loop;
    uv_idle_t idle; /* walks while there is more (dispatch.c) */
    uv_timer_t timer;
    int walk_done;    /* the walk is over, or was given up */
    int cache_kicked; /* pc__store_kick() called: the run's tail began */
    /* Units by size, largest first, within `jobs` and the memory limit
     * (schedule.h); a slot of the pool for each one in flight.
     */
    pc__sched_t sched;
    pc__slot_t *slots, *free_slots; /* `jobs` of them */
    uint64_t cache_puts; /* entries stored: the cache grew, trim it */
    /* pc_stop(), from any thread or a signal handler: the first
     * request's signal (-1 when it named none; 0: no request yet), the
     * handle it wakes the loop with, once stop_on says it is open, and
     * the flag the workers look at (cfg.stop points to it).
     */
    atomic_int stop_signo;
    atomic_int stop_on;
    uv_async_t stop_async;
    atomic_int stop;
    int stopping; /* the loop took the request: the run is ending */
  } run;

  /* The walk: written by dispatch.c; the others only read it. */
  struct {
    pc__walk_t *it;      /* the walk itself (walk.h) */
    pc__take_fn *take;   /* where each job made goes (run.c's) */
    size_t prev_hint;    /* where the next lookup may be (pc__prev_next) */
    pc__mirror_t mirror; /* --output-dir: the walk's directory's mirror */
    /* The directory the walk last judged writable or not (out_dir_ok()):
     * its identity and the code its files fail with (0: writable).
     */
    int wdir_known;
    pc__devino_t wdir;
    int wdir_err;
    pc__relset_t rels;        /* --output-dir and more than one PATH: the
                                 paths below their PATH of the files taken
                                 so far */
    unsigned char *only_seen; /* --files-from: which of sel.only the walk
                                 found (a file), by index */
  } walk;

  /* The results: written by record.c, the others telling it through its
   * functions (pc__record_*); they only read it.
   */
  struct {
    pc__rec_t *recs; /* only with a manifest */
    size_t nrecs, caprecs;
    pc_totals_t totals;
    pc_progress_t progress;
    int fatal; /* a negative code that ends the run (ENOMEM) */
  } res;
} pc__run_t;

/* --- setup.c ----------------------------------------------------------- */

/* The run's fixed configuration, from the options (kept, not copied):
 * what every job reads.
 */
void pc__setup_init(pc__run_t *r, const pc_options_t *opts);

/* The workers' side of the run: how many (the process's limits), the
 * codec states they share, the pool's slots, the scheduler and dedupe
 * within the memory limit. 0 or a negative code.
 */
int pc__setup_workers(pc__run_t *r);

/* What the walk meets: the filter chain, the roots, --output-dir, the
 * manifest (and the earlier one's records), the cache. 0, or the code
 * that keeps the run from starting; one about a named file puts its name
 * in totals->err_path (totals may be NULL).
 */
int pc__setup_inputs(pc__run_t *r, pc_totals_t *totals);

/* Frees everything setup and the run made (r itself is the caller's). */
void pc__setup_free(pc__run_t *r);

/* --- dispatch.c -------------------------------------------------------- */

/* The walk over the roots opened; each job the walk's entries make is
 * handed to `take`. 0 or a negative code.
 */
int pc__dispatch_open(pc__run_t *r, pc__take_fn *take);

/* Takes up to `budget` entries from the walk (a directory opened counts as
 * one), each dispatched: small enough slices that finished jobs are
 * collected and new ones submitted while a large tree is still being
 * read. 1 when the walk is over (or the run cannot go on: r->fatal).
 */
int pc__dispatch_walk(pc__run_t *r, unsigned budget);

/* --- record.c ---------------------------------------------------------- */

/* Tells the caller the progress (on_progress), when it asked. */
void pc__run_progress(pc__run_t *r);

/* The code that ends the run (res.fatal): the walk and the schedule stop. */
void pc__record_fatal(pc__run_t *r, int err);

/* The progress's count of files to compress and of their bytes: one of
 * `size` bytes handed to the schedule, or taken back from it (a file
 * unchanged after all, or stopped before its result: then size 0, its
 * bytes staying done).
 */
void pc__record_queued(pc__run_t *r, uint64_t size);
void pc__record_unqueued(pc__run_t *r, uint64_t size);

/* A job of `size` bytes back from its worker: bytes done. */
void pc__record_ran(pc__run_t *r, uint64_t size);

/* The walk is over: the progress says so. */
void pc__record_walked(pc__run_t *r);

/* The loop took a stop request of signal signo (-1: none named). */
void pc__record_stopped(pc__run_t *r, int signo);

/* After the loop: the totals' figures of the others' parts (the memory
 * limit, its peak, the dictionaries', the remote cache's, finished).
 */
void pc__record_end(pc__run_t *r);

/* Frees the records (setup.c's teardown). */
void pc__record_free(pc__run_t *r);

/* An error about no one file (a directory that cannot be read): counted,
 * and told to the caller (on_error).
 */
void pc__run_error(pc__run_t *r, const char *path, int err);

/* A file that gets no job (skipped, or failed before it could start): its
 * record. Takes ownership of rel; full names it in messages.
 */
void pc__record_skip(pc__run_t *r, uint32_t root, char *rel, const char *full,
                     pc_skip_t skip, const struct stat *st, int err);

/* A file whose outputs are current per `prev`, the earlier manifest's
 * record: its record names the file by the record's own path.
 */
void pc__record_unchanged(pc__run_t *r, uint32_t root, const char *full,
                          const pc__prev_rec_t *prev);

/* A job back from its worker with a result: its record. The job stays
 * the caller's.
 */
void pc__record_job(pc__run_t *r, const pc__job_t *j);

/* Writes the run's manifest (its options and records) where the options
 * say; a failure is reported (pc__run_error), not returned: the outputs
 * stand whatever the manifest does.
 */
void pc__record_manifest(pc__run_t *r);

#endif /* PC_RUN_H */
