/* The cache's worker side (cache.c); the store is store.h. */
#ifndef PC_CACHE_H
#define PC_CACHE_H

#include "work.h"

/* Takes format f's result for the content hashed `h` from the cache when
 * it has one that decides the keep rule at `limit`: 1 when it did (the
 * job's out[f] and *s are set; a payload to copy stays held in s->hit).
 */
int pc__cache_get(pc__job_t *j, int f, const uint64_t h[2], uint64_t limit,
                  pc__fmt_t *s);

/* Copies the held payload (n bytes) into the format's temp file. The hit
 * is released on failure (the job's error is set), else by the caller.
 */
int pc__cache_copy(pc__job_t *j, pc__fmt_t *s, uint64_t n);

/* Marks the format's result as one to store (s->hash = h) when this run
 * compressed it and stores: a cache open, not a dry run, not copied from
 * an identical file or taken from the cache. h may be NULL (no hash).
 */
void pc__cache_mark(const pc__job_t *j, pc__fmt_t *s, const uint64_t *h);

/* Stores a kept output of n bytes from its own bytes (in memory, or
 * through the temp's descriptor before the rename), never from its name.
 */
void pc__cache_put_kept(pc__job_t *j, int f, const pc__fmt_t *s, uint64_t n);

/* Stores a rejection (format f not kept) when it is marked. */
void pc__cache_put_rejected(pc__job_t *j, int f, const pc__fmt_t *s);

#endif /* PC_CACHE_H */
