/* The cache's worker side (cache.c); the store is store.h. */
#ifndef PC_CACHE_H
#define PC_CACHE_H

#include "work/work.h"

/* Takes format f's result for the content (w->h) from the cache when it
 * has one that decides the keep rule at `limit`: 1 when it did (the job's
 * res.out[f] and w->fs[f] are set; a payload to copy stays held in
 * w->fs[f].hit).
 */
int pc__cache_get(pc__work_t *w, int f, uint64_t limit);

/* Copies the held payload (n bytes) into the format's temp file. The hit
 * is released on failure (the job's error is set), else by the caller.
 */
int pc__cache_copy(pc__work_t *w, pc__fmt_t *s, uint64_t n);

/* Marks the format's result as one to store (s->hash = w->h) when this
 * run compressed it and stores: a cache open, the content hashed, not a
 * dry run, not copied from an identical file or taken from the cache.
 */
void pc__cache_mark(const pc__work_t *w, pc__fmt_t *s);

/* Stores a kept output of n bytes from its own bytes (in memory, or
 * through the temp's descriptor before the rename), never from its name.
 */
void pc__cache_put_kept(pc__work_t *w, int f, uint64_t n);

/* Stores a rejection (format f not kept) when it is marked. */
void pc__cache_put_rejected(pc__work_t *w, int f);

#endif /* PC_CACHE_H */
