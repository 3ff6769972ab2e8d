/* Keep, replace or remove one file's outputs (settle.c). Worker side. */
#ifndef PC_SETTLE_H
#define PC_SETTLE_H

#include "work/work.h"

/* Moves the format's buffered output to its temp file (created on first
 * use); in a dry run only empties the buffer.
 */
int pc__settle_spill(pc__work_t *w, pc__fmt_t *s);

/* Writes (or in a dry run, classifies) format f's output per
 * res.out[f]: a kept one is committed over its name (res.out[f].action
 * says how), stamped as the source (w->st), one not kept removes what is
 * there. 0, or the job's error.
 */
int pc__settle(pc__work_t *w, int f);

/* After the job failed: removes format f's old output, which nothing shows
 * matches the file now.
 */
void pc__settle_unproven(pc__work_t *w, int f);

#endif /* PC_SETTLE_H */
