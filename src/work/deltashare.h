/* Deltas made once per run for the same content and the same dictionary:
 * two files with one content and one predecessor content (Django's
 * collectstatic keeps app.js beside app.3f2a9c1e4b7d.js, and the last
 * release both of theirs) share the first one's delta. A table of results
 * by the cache's key (deltajob.c's delta_key()), under one lock, its bytes
 * within a budget; no one waits on it: a file that finds nothing makes its
 * own. Any thread.
 */
#ifndef PC_DELTASHARE_H
#define PC_DELTASHARE_H

#include "common/common.h"
#include "store/store.h"

typedef struct pc__dshare pc__dshare_t;

/* A table that keeps at most `budget` bytes of deltas. 0 or -ENOMEM. */
int pc__dshare_new(pc__dshare_t **out, uint64_t budget);

void pc__dshare_free(pc__dshare_t *s);

/* The result for k, when one was put: 1 with *kept; a kept delta's bytes
 * appended to `o` (0 if that fails: nothing appended), a rejection's
 * limit in *limit. 0 when none.
 */
int pc__dshare_get(pc__dshare_t *s, const pc__store_key_t *k, int *kept,
                   uint64_t *limit, pc__buf_t *o);

/* Records the result for k: a kept delta's n bytes at p (copied), or a
 * rejection above `limit`. The first result for a key stands; one past
 * the budget is not kept.
 */
void pc__dshare_put(pc__dshare_t *s, const pc__store_key_t *k, int kept,
                    const unsigned char *p, size_t n, uint64_t limit);

#endif /* PC_DELTASHARE_H */
