/* The pending units of a run and which one starts next: largest first, at
 * most `jobs` in flight, and beside them at most `limit` bytes of their
 * estimated memory (pc__job_t.mem). Loop thread only; no libuv here, so
 * the rules are unit-tested alone (tests/unit/schedule_test.c).
 */
#ifndef PC_SCHEDULE_H
#define PC_SCHEDULE_H

#include "work/job.h"

/* A max-heap of units by weight. */
typedef struct pc__heap {
  pc__job_t **v;
  size_t n, cap;
} pc__heap_t;

typedef struct pc__sched {
  /* Units whose memory is above PC__SCHED_SMALL wait in `big`: they are
   * the ones a limit makes wait, and the only ones worth a reserve.
   */
  pc__heap_t small, big;
  unsigned jobs; /* at most this many in flight */
  unsigned in_flight;
  uint64_t limit;     /* PC_MEMORY_UNLIMITED: none */
  uint64_t used;      /* estimated memory of the units in flight */
  uint64_t used_fill; /* of which fillers' (pc__job_t.filler) */
  uint64_t peak;      /* the most `used` has been */
  uint64_t alone;     /* units started alone, over the limit by themselves */
  /* Small files of the directory being walked, gathered into one unit. */
  struct {
    pc__job_t *head, *tail;
    unsigned n;
  } batch;
} pc__sched_t;

/* Above this a unit's memory is "big": brotli 10..11 on a file it streams
 * (over 256 KiB; codec.c's table). Smaller units fill the cores while big
 * ones wait.
 */
#define PC__SCHED_SMALL ((uint64_t)14 << 20)

/* Files up to PC__BATCH_FILE travel in units of up to PC__BATCH_FILES files or
 * PC__BATCH_BYTES bytes of one directory. A unit of gzip -9 work is then a few
 * milliseconds (brotli 11: a quarter second), far above the cost of a pool
 * hand-off, and still small beside a run: the largest-first order and the
 * balance at the end are kept.
 */
#define PC__BATCH_FILE ((uint64_t)64 << 10)
#define PC__BATCH_BYTES ((uint64_t)256 << 10)
#define PC__BATCH_FILES 64

void pc__sched_init(pc__sched_t *s, unsigned jobs, uint64_t limit);

/* Memory the run holds beside its units from before the first starts to
 * its end (the earlier releases' listings and Django manifests): counted
 * in `used` throughout, so that the units in flight keep to what is left.
 */
void pc__sched_hold(pc__sched_t *s, uint64_t bytes);

/* Adds a unit (its head: weight and mem set). 0, or -ENOMEM with the unit
 * not taken.
 */
int pc__sched_push(pc__sched_t *s, pc__job_t *unit);

/* The unit to start now, counted in flight, or NULL when none may: the
 * pool is full, nothing waits, or what waits must wait for memory.
 *
 * The largest pending unit starts when its memory fits beside what is in
 * flight. When it does not, it keeps its place: a smaller unit may start
 * beside it (a "filler") only while the fillers in flight leave it room,
 * so that it can start as soon as the units ahead of it are done; a unit
 * over the limit by itself starts when nothing is in flight, and then
 * nothing starts beside it.
 */
pc__job_t *pc__sched_next(pc__sched_t *s);

/* A unit from pc__sched_next() is back (or could not be queued): its head's
 * mem and filler must be as they were when it started.
 */
void pc__sched_done(pc__sched_t *s, const pc__job_t *unit);

/* Takes a file to compress (weight and mem set): one above PC__BATCH_FILE
 * is a unit of its own; smaller ones gather into the unit of their
 * directory (same root, same directory), which is handed on when it is
 * full, or when a file of another directory comes. 0, or -ENOMEM with the
 * unit that could not be queued freed.
 */
int pc__sched_add(pc__sched_t *s, pc__job_t *j);

/* Hands the gathered unit on now (the walk is over, or a worker would
 * idle). 0, or -ENOMEM with that unit freed.
 */
int pc__sched_flush(pc__sched_t *s);

/* 1 when a worker would idle: no small unit waits and the pool is not
 * full, so the gathered unit should go now rather than wait to fill.
 */
int pc__sched_idle(const pc__sched_t *s);

/* Units waiting (not counting the unit being gathered). */
size_t pc__sched_pending(const pc__sched_t *s);

/* Frees every waiting unit and the one being gathered; with `all`, the
 * heaps' arrays too.
 */
void pc__sched_drop(pc__sched_t *s, int all);

#endif /* PC_SCHEDULE_H */
