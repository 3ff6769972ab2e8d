/* A unit of jobs on a worker thread (worker.c): each file read once,
 * every enabled format fed from the same bytes, what pays kept through
 * the output protocol. The loop thread hands a unit over and takes it
 * back (run.c); in between the worker touches nothing but the unit's jobs
 * and the run's read-only config.
 */
#ifndef PC_WORKER_H
#define PC_WORKER_H

#include "work/job.h"

/* Runs the unit's jobs (the head and every job chained on it by
 * unit.next, all in one directory), in order, on this thread. A job not
 * started because of a stop request gets res.err PC_EINTERRUPTED. The
 * unit stays the caller's.
 */
void pc__work_unit(pc__job_t *head);

/* The most the job takes at once: its encoders (codec.c's estimates),
 * its read and output buffers, and its deltas (deltajob.h).
 */
uint64_t pc__work_mem(const pc__job_t *j);

#endif /* PC_WORKER_H */
