/* What the machine lets this process use (machine.c). */
#ifndef PC_MACHINE_H
#define PC_MACHINE_H

#include "common/common.h"

/* pc_default_memory_limit() with every /proc and /sys file read below
 * `root` ("" for the real ones): for tests.
 */
void pc__memory_limit_at(const char *root, pc_memlimit_t *m);

/* Lowers *jobs to what the process's limits allow: descriptors (ulimit -n:
 * FDS_PER_JOB each, and the loop's own), address space (ulimit -v: a pool
 * thread's stack and a brotli 11 job each) and the threads that can start
 * with libuv's pool stack (probed: libuv aborts when its pool cannot start
 * one). 0, -EMFILE when not one job's descriptors fit, -EAGAIN when no
 * thread starts.
 */
int pc__limit_jobs(unsigned *jobs);

#endif /* PC_MACHINE_H */
