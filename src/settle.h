/* Keep, replace or remove one file's outputs (settle.c). Worker side. */
#ifndef PC_SETTLE_H
#define PC_SETTLE_H

#include "work.h"

/* Moves the format's buffered output to its temp file (created on first
 * use); in a dry run only empties the buffer.
 */
int pc__settle_spill(pc__job_t *j, pc__fmt_t *s);

/* Writes (or in a dry run, classifies) format f's output per j->out[f]:
 * a kept one is committed over its name (j->out[f].action says how), one
 * not kept removes what is there. 0, or the job's error.
 */
int pc__settle(pc__job_t *j, int f, pc__fmt_t *s);

/* After the job failed: removes format f's old output, which nothing shows
 * matches the file now. `named`: the job had begun building output names.
 */
void pc__settle_unproven(pc__job_t *j, int f, const pc__fmt_t *s, int named);

#endif /* PC_SETTLE_H */
