/* Unchanged since the earlier manifest? (incremental.c) */
#ifndef PC_INCREMENTAL_H
#define PC_INCREMENTAL_H

#include "job.h"
#include "prev.h"

#include <sys/stat.h>

/* 1 when `p`, the earlier manifest's record of the file named `name` in
 * directory `dfd` and statted as *st, still holds: the same size and mtime,
 * every output it kept there with its recorded size and the source's mtime
 * (as we stamp it), none it did not keep there (`absent`: formats whose
 * output the directory's listing lacks, not stat'ed). A stat per output,
 * never a read.
 */
int pc__outputs_current(unsigned formats, const pc__prev_rec_t *p, int dfd,
                        const char *name, const struct stat *st,
                        unsigned absent);

/* On the worker, for a job the walk handed on unstatted (j->prev): 1 when
 * that settles it (j->outcome, or the job's error), 0 to compress it now.
 */
int pc__incremental_check(pc__job_t *j);

#endif /* PC_INCREMENTAL_H */
