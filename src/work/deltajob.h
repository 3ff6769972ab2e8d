/* A job's deltas on its worker (docs/deltas.md): made from the source as
 * read for the plain formats (pc__deltas_make, before the unchanged
 * check that proves those bytes), written once the plain outputs are
 * settled, and the delta outputs no longer kept removed
 * (pc__deltas_settle). Worker side.
 */
#ifndef PC_DELTAJOB_H
#define PC_DELTAJOB_H

#include "work/work.h"

/* Compresses the source against each predecessor (j->preds) in each delta
 * format, into memory, and decides what is kept: res.deltas. 0, or the
 * job's error (a dictionary that cannot be read is the delta's reason,
 * not the job's).
 */
int pc__deltas_make(pc__work_t *w);

/* Writes the kept deltas (when the job has no error) and removes the delta
 * outputs beside the file that are not kept (j->old_deltas): all of them
 * when the job failed, was skipped or has no predecessor left. Never
 * fails the plain outputs already settled; a delta's error is the job's.
 */
void pc__deltas_settle(pc__work_t *w);

/* Frees what pc__deltas_make() kept in w. */
void pc__deltas_free(pc__work_t *w);

/* What the job's deltas take at their peak, beside its plain formats:
 * the source whole, a dictionary, an encoder and the outputs kept. 0
 * without predecessors.
 */
uint64_t pc__deltas_mem(const pc__job_t *j);

#endif /* PC_DELTAJOB_H */
