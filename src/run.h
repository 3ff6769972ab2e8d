/* The state of one pc_run(): owned and written by the loop thread only. */
#ifndef PC_RUN_H
#define PC_RUN_H

#include "common.h"
#include "dedup.h"
#include "job.h"
#include "manifest.h"
#include "outdir.h"
#include "prev.h"
#include "schedule.h"
#include "select.h"
#include "walk.h"

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

#endif /* PC_RUN_H */
