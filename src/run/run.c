/* pc_run(): the loop thread's side of a run.
 *
 * The loop thread owns every piece of shared state here: the walk, the
 * heaps of pending units, the results and the counters. A unit is one file,
 * or up to PC__BATCH_FILES small files of one directory chained on the first.
 * Workers get one unit each through uv_queue_work() and touch nothing else;
 * after_work() brings it back to this thread, which records its files and
 * submits the next unit. libuv's queue is unbounded and first-in
 * first-out, so we keep at most `jobs` units in it and choose the next
 * ourselves (schedule.h: largest first, small files in units, within the
 * memory limit); schedule() here only hands what it picks to the pool.
 *
 * The run's other parts are files of their own (run.h): its setup
 * (setup.c), the walk's entries dispatched (dispatch.c), the records and
 * totals (record.c). Of the run's state this file writes the `run` part:
 * the loop, the schedule, the stop.
 */
#include "run/run.h"

#include "codec/codec.h"
#include "store/remote.h"

#include "store/store.h"
#include "work/worker.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entries visited per loop iteration: small enough that finished jobs are
 * collected promptly while a huge directory is walked.
 */
#define WALK_BUDGET 256
#define PROGRESS_MS 200
/* Peak memory of a job (encoders and buffers) on the file alone. */
static uint64_t job_mem(const pc__run_t *r, const pc__job_t *j) {
  (void)r;
  return pc__work_mem(j);
}

/* Into the scheduler; a unit it cannot take is freed and the run ends
 * with ENOMEM.
 */
static void requeue(pc__run_t *r, pc__job_t *j) {
  if (pc__sched_push(&r->run.sched, j) != 0) {
    pc__job_free(j);
    pc__record_fatal(r, -ENOMEM);
  }
}

/* A file to compress from the walk (dispatch.c's pc__take_fn), into the
 * scheduler's units. Takes ownership of j.
 */
static void take_job(pc__run_t *r, pc__job_t *j) {
  if (pc__sched_add(&r->run.sched, j) != 0)
    pc__record_fatal(r, -ENOMEM);
}

/* Hands the gathered small files on as one unit. */
static void flush_batch(pc__run_t *r) {
  if (pc__sched_flush(&r->run.sched) != 0)
    pc__record_fatal(r, -ENOMEM);
}

static void work_cb(uv_work_t *req) {
  pc__work_unit(PC__CONTAINER_OF(req, pc__slot_t, req)->head);
}

static void maybe_finish(pc__run_t *r);
static void schedule(pc__run_t *r);

/* A job the walk handed on unstat'ed, settled by its check (job.h). The
 * push counted it as a file to compress of its recorded size.
 */
static void finish_check(pc__run_t *r, pc__job_t *j) {
  /* pc__record_unchanged() counts it anew; resized, it is pushed anew. */
  pc__record_unqueued(r, j->prev->size);
  if (j->res.outcome == PC__CHECK_RESIZED) {
    pc__record_queued(r, j->size);
    j->res.outcome = PC__CHECK_NONE;
    j->prev = NULL;
    j->unit.weight = j->size;
    j->unit.mem = job_mem(r, j);
    requeue(r, j);
    return;
  }
  if (j->res.outcome != PC__CHECK_GONE)
    pc__record_unchanged(r, j->root, j->fullpath, j->prev);
  pc__job_free(j);
}

/* One job of a unit back from the pool. */
static void finish_job(pc__run_t *r, pc__job_t *j, int status) {
  pc__dedup_ref_t *w, *next;

  if (j->res.outcome != PC__CHECK_NONE && status == 0) {
    finish_check(r, j);
    return;
  }

  if (j->dd.wait && status == 0) {
    /* Its content's leader is still at work: parked until the leader's
     * own after_work (this thread) wakes it, unless the leader finished
     * since the worker looked.
     */
    if (pc__dedup_park(r->cfg.dedup, &j->dd))
      requeue(r, j);
    return;
  }
  for (w = pc__dedup_wake(&j->dd); w != NULL; w = next) {
    next = w->next_parked;
    requeue(r, PC__CONTAINER_OF(w, pc__job_t, dd));
  }
  pc__record_ran(r, j->size);
  r->run.cache_puts += j->res.cache_puts;
  if (status == UV_ECANCELED || j->res.err == PC_EINTERRUPTED) {
    /* Stopped by a signal before it finished: not a result. */
    pc__record_unqueued(r, 0);
    pc__job_free(j);
    return;
  }
  pc__record_job(r, j);
  pc__job_free(j);
}

static void after_work_cb(uv_work_t *req, int status) {
  pc__slot_t *slot = PC__CONTAINER_OF(req, pc__slot_t, req);
  pc__job_t *j = slot->head;
  pc__run_t *r = slot->run;

  slot->head = NULL;
  slot->next_free = r->run.free_slots;
  r->run.free_slots = slot;
  pc__sched_done(&r->run.sched, j);
  /* From here on each job stands alone (a parked one is requeued by
   * itself): only the head carried the unit's weight and memory.
   */
  j->unit.weight = j->size;
  j->unit.mem = job_mem(r, j);
  while (j != NULL) {
    pc__job_t *next = j->unit.next;
    j->unit.next = NULL;
    finish_job(r, j, status);
    j = next;
  }
  pc__run_progress(r);
  schedule(r);
  /* A worker left idle (nothing it may start yet, or nothing left): the
   * blocks brotli encoders kept for their next file are counted nowhere,
   * so none stays beside the files that run.
   */
  if (r->run.free_slots != NULL)
    pc__spares_trim(r->cfg.spares);
  maybe_finish(r);
}

/* Fills the pool with what the scheduler lets start (schedule.h). */
static void schedule(pc__run_t *r) {
  pc__job_t *j;
  while (!r->run.stopping && r->res.fatal == 0 &&
         (j = pc__sched_next(&r->run.sched)) != NULL) {
    pc__slot_t *slot =
        r->run.free_slots; /* one is: fewer than jobs in flight */
    int err;
    slot->head = j;
    err = uv_queue_work(&r->run.loop, &slot->req, work_cb, after_work_cb);
    if (err != 0) {
      pc__sched_done(&r->run.sched, j);
      slot->head = NULL;
      pc__job_free(j);
      pc__record_fatal(r, err);
      return;
    }
    r->run.free_slots = slot->next_free;
  }
}

/* The work is over: the loop stops. The stop handle stays open until
 * pc_run() returns: a stop during the manifest still counts.
 */
static void close_handles(pc__run_t *r) {
  uv_handle_t *hs[] = {(uv_handle_t *)&r->run.idle,
                       (uv_handle_t *)&r->run.timer};
  size_t k;
  for (k = 0; k < PC__ARRAY_SIZE(hs); k++)
    if (!uv_is_closing(hs[k]))
      uv_close(hs[k], NULL);
  uv_stop(&r->run.loop);
}

/* Ends the loop once nothing is pending, running or left to walk. */
static void maybe_finish(pc__run_t *r) {
  if (r->res.fatal != 0 || r->run.stopping) {
    /* Drop what waits; what runs must still come back. */
    if (!r->run.walk_done) {
      uv_idle_stop(&r->run.idle);
      r->run.walk_done = 1;
    }
    pc__sched_drop(&r->run.sched, 0);
  }
  if (r->run.walk_done && pc__sched_pending(&r->run.sched) == 0) {
    /* The last files are in flight: the cache's writer takes a free core
     * now rather than the run's end.
     */
    if (r->cfg.cache != NULL && !r->run.cache_kicked &&
        r->run.sched.in_flight < r->run.sched.jobs) {
      pc__store_kick(r->cfg.cache);
      r->run.cache_kicked = 1;
    }
    if (r->run.sched.in_flight == 0)
      close_handles(r);
  }
}

static void on_idle(uv_idle_t *h) {
  pc__run_t *r = PC__CONTAINER_OF(h, pc__run_t, run.idle);
  if (pc__dispatch_walk(r, WALK_BUDGET)) {
    uv_idle_stop(&r->run.idle);
    r->run.walk_done = 1;
    pc__record_walked(r);
    flush_batch(r);
    pc__run_progress(r);
  }
  /* A worker would idle: hand on what is gathered rather than wait. */
  if (pc__sched_idle(&r->run.sched))
    flush_batch(r);
  schedule(r);
  maybe_finish(r);
}

static void on_timer(uv_timer_t *h) {
  pc__run_progress(PC__CONTAINER_OF(h, pc__run_t, run.timer));
}

/* The run in progress, for pc_stop(): at most one (pc_run() in
 * precompress.h), registered before its set-up so that a stop during it
 * counts.
 */
static _Atomic(pc__run_t *) active;

/* pc_stop() calls between their look at `active` and their last touch of
 * that run. pc_run() clears `active`, then waits for this to be 0 before
 * it closes the handle and frees the run (both seq_cst: either a stopper
 * sees NULL, or pc_run() sees the stopper).
 */
static atomic_int stoppers;

/* Async-signal-safe: atomics and uv_async_send() only. */
void pc_stop(int signo) {
  pc__run_t *r;
  int none = 0;

  atomic_fetch_add(&stoppers, 1);
  r = atomic_load(&active);
  if (r != NULL) {
    /* The first request names the signal; workers see the flag at their
     * next slice without waiting for the loop.
     */
    atomic_compare_exchange_strong(&r->run.stop_signo, &none,
                                   signo > 0 ? signo : -1);
    atomic_store(&r->run.stop, 1);
    if (atomic_load(&r->run.stop_on))
      uv_async_send(&r->run.stop_async);
  }
  atomic_fetch_sub(&stoppers, 1);
}

/* The loop's side of pc_stop(): what a signal did when the run caught it. */
static void on_stop(uv_async_t *h) {
  pc__run_t *r = PC__CONTAINER_OF(h, pc__run_t, run.stop_async);
  int signo = atomic_load(&r->run.stop_signo);
  if (signo != 0 && !r->run.stopping) {
    r->run.stopping = 1;
    pc__record_stopped(r, signo);
  }
  maybe_finish(r);
}

/* Closes every handle still open (the loop runs until they are). The
 * run is no longer `active` and no pc_stop() is still at the stop handle.
 */
static void release_handles(pc__run_t *r) {
  uv_handle_t *hs[] = {(uv_handle_t *)&r->run.idle,
                       (uv_handle_t *)&r->run.timer,
                       (uv_handle_t *)&r->run.stop_async};
  size_t k;

  for (k = 0; k < PC__ARRAY_SIZE(hs); k++)
    if (!uv_is_closing(hs[k]))
      uv_close(hs[k], NULL);
  uv_run(&r->run.loop, UV_RUN_DEFAULT);
}

/* libuv sizes its pool once, at first use, from UV_THREADPOOL_SIZE. */
static void size_pool(unsigned jobs) {
  char buf[16];
  snprintf(buf, sizeof(buf), "%u", jobs);
  uv_os_setenv("UV_THREADPOOL_SIZE", buf);
}

/* The loop: its handles, then the walk and every job until both are done.
 * *loop_open is set once the loop is open (it then ran): the result is the
 * run's so far (0, PC_EINTERRUPTED or a fatal error); before, the loop's
 * own error.
 */
static int walk_and_dispatch(pc__run_t *r, int *loop_open) {
  int err;

  size_pool(r->jobs);
  if ((err = uv_loop_init(&r->run.loop)) != 0)
    return err;
  uv_idle_init(&r->run.loop, &r->run.idle);
  uv_timer_init(&r->run.loop, &r->run.timer);
  uv_async_init(&r->run.loop, &r->run.stop_async, on_stop);
  *loop_open = 1;
  /* A request made before the handle was open is acted on now. */
  atomic_store(&r->run.stop_on, 1);
  if (atomic_load(&r->run.stop_signo) != 0)
    uv_async_send(&r->run.stop_async);
  if (r->opts->on_progress != NULL)
    uv_timer_start(&r->run.timer, on_timer, PROGRESS_MS, PROGRESS_MS);

  if ((err = pc__dispatch_open(r, take_job)) != 0) {
    pc__record_fatal(r, err);
    r->run.walk_done = 1;
    close_handles(r);
  } else {
    uv_idle_start(&r->run.idle, on_idle);
  }
  uv_run(&r->run.loop, UV_RUN_DEFAULT);
  if (r->res.fatal != 0)
    return r->res.fatal;
  return r->run.stopping ? PC_EINTERRUPTED : 0;
}

/* After the loop: the manifest, the cache's trim, the totals. `err` is the
 * loop's result; the run's is returned.
 */
static int finish_run(pc__run_t *r, int err, pc_totals_t *totals) {
  const pc_options_t *opts = r->opts;

  pc__record_walked(r);
  pc__run_progress(r);
  if ((err == 0 || err == PC_EINTERRUPTED) &&
      (opts->manifest != NULL || opts->manifest_write != NULL) &&
      !opts->dry_run) {
    pc__record_manifest(r);
    /* A stop that came while it was written (the CLI's on a SIGPIPE from
     * a manifest sent to a closed pipe) counts like any other: its
     * callback runs now.
     */
    uv_run(&r->run.loop, UV_RUN_NOWAIT);
    if (err == 0 && r->run.stopping)
      err = PC_EINTERRUPTED;
  }
  /* Only a run that stored entries can have grown the cache past its
   * limit (each run sharing it trims after its own): listing a cache of
   * 100,000 entries is most of a second run's time.
   */
  if (r->cfg.cache != NULL && opts->cache_max_size > 0 && !opts->dry_run &&
      r->run.cache_puts > 0 && !r->run.stopping) {
    int terr = pc__store_trim(r->cfg.cache, opts->cache_max_size);
    if (terr != 0)
      pc__run_error(r, opts->cache_dir, terr);
  }
  /* What the remote cache still had queued is sent (within its bound). */
  if (r->cfg.remote != NULL)
    pc__remote_finish(r->cfg.remote);
  pc__record_end(r);
  if (totals != NULL)
    *totals = r->res.totals;
  return err;
}

/* pc_run() on this library's own structs (the caller's copied in and out
 * by pc_run(), as far as their sizes go). */
static int run_full(const pc_options_t *opts, pc_totals_t *totals) {
  pc__run_t *r, *none = NULL;
  int err, loop_open = 0;

  if ((err = pc_options_check(opts, NULL)) != 0)
    return err;
  if ((r = calloc(1, sizeof(*r))) == NULL)
    return -ENOMEM;
  pc__setup_init(r, opts);
  /* One run at a time: libuv's pool, which it sizes and fills, is the
   * process's (precompress.h).
   */
  if (!atomic_compare_exchange_strong(&active, &none, r)) {
    free(r);
    return -EBUSY;
  }
  if ((err = pc__setup_workers(r)) == 0 &&
      (err = pc__setup_inputs(r, totals)) == 0) {
    err = walk_and_dispatch(r, &loop_open);
    if (loop_open) /* the loop ran: its result, then the manifest's part */
      err = finish_run(r, err, totals);
  }

  atomic_store(&active, NULL);
  while (atomic_load(&stoppers) != 0)
    sched_yield(); /* a pc_stop() on another thread, a few instructions */
  if (loop_open) {
    release_handles(r);
    uv_loop_close(&r->run.loop);
  }
  pc__setup_free(r);
  free(r);
  return err;
}

int pc_run(const pc_options_t *opts, pc_totals_t *totals) {
  if (totals != NULL)
    memset(totals, 0, sizeof(*totals));
  return run_full(opts, totals);
}
