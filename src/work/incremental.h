/* Unchanged since the earlier manifest? (incremental.c) */
#ifndef PC_INCREMENTAL_H
#define PC_INCREMENTAL_H

#include "work/job.h"
#include "manifest/prev.h"

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

/* On the loop thread, for a file the walk statted: the earlier manifest's
 * record of `rel` below root `root` (pc__prev_next, `hint` its cursor)
 * when it still holds per pc__outputs_current(), else NULL.
 */
const pc__prev_rec_t *pc__incremental_lookup(const pc__prev_t *prev,
                                             size_t *hint, unsigned formats,
                                             uint32_t root, const char *rel,
                                             int dfd, const char *name,
                                             const struct stat *st,
                                             unsigned absent);

struct pc__dictfile;

/* 1 when record p's deltas (of table prev) are what this run would make
 * and find: for each predecessor (preds, the job's, one per
 * --dictionary-from DIR) one per delta format, made against the same
 * dictionary path, whose size and mtime are still as recorded, each kept
 * output FILE.<id>.ext there with its recorded size and the source's
 * mtime, and no other delta output beside the file (old, the listing's,
 * NULL-terminated, or NULL). A stat per kept delta, never a read.
 */
int pc__deltas_current(const pc__prev_t *prev, const pc__prev_rec_t *p,
                       const pc__cfg_t *c,
                       const struct pc__dictfile *const *preds,
                       char *const *old, int dfd, const char *name,
                       const struct stat *st);

struct pc__work;

/* On the worker, for a job the walk handed on unstatted (j->prev): a phase
 * (worker.c), PC__EDONE when that settles it (res.outcome), the job's
 * error, or 0 to compress it now (w->st is then the file's stat).
 */
int pc__incremental_check(struct pc__work *w);

#endif /* PC_INCREMENTAL_H */
