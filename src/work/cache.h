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

/* Sources up to this size are looked up in the remote cache and stored
 * there: a fetched payload is held in memory whole.
 */
#define PC__REMOTE_MAX ((uint64_t)32 << 20)

/* A file is looked up in the remote cache, and stored there, only when
 * compressing its formats takes longer than this (pc__enc_cost_us): a
 * request costs about 0.15 ms of CPU here and on the server (measured on
 * the 100,000-file corpus, nginx beside us), so a cold run of small files
 * gzipped in 0.1 ms each ran 3x as long with the remote as without, and a
 * warm one 1.5x. Brotli 11 on anything but the smallest files is past it.
 */
#define PC__REMOTE_WORTH_US 500

/* 1 when the file's enabled formats are worth the remote cache's requests
 * (PC__REMOTE_WORTH_US); never for a source over PC__REMOTE_MAX.
 */
int pc__cache_remote_worth(const pc__job_t *j);

/* The remote answers for a unit of small files, asked for at once before
 * its jobs run (one round trip for the unit, not one per file): the
 * worker's, for its jobs to take by key (pc__cache_fetch).
 */
typedef struct pc__prefetch {
  struct pc__remote_get *g;
  size_t n;
} pc__prefetch_t;

/* Reads and hashes each file of the unit that head starts (in directory
 * dirfd) that will be compressed as it stands (no incremental check
 * pending, not a link, not skipped), and looks every enabled format the
 * local cache lacks up in the remote cache, all at once, into pf. Best
 * effort: a file it cannot read is left to its job. Free with
 * pc__cache_prefetch_free().
 */
void pc__cache_prefetch(const pc__job_t *head, int dirfd, pc__prefetch_t *pf);
void pc__cache_prefetch_free(pc__prefetch_t *pf);

/* Looks the formats in `want` (PC_FMT_BIT()s) up in the remote cache, all
 * at once (in the unit's prefetched answers first, w->pf), and takes each
 * answer that decides the keep rule at `limit` and whose payload decodes
 * to the source (as pc__cache_get() takes a local one; a kept payload is
 * left in w->fs[f].buf). Returns the formats still to compress.
 */
unsigned pc__cache_fetch(pc__work_t *w, unsigned want, uint64_t limit);

/* Copies the held payload (n bytes) into the format's temp file. The hit
 * is released on failure (the job's error is set), else by the caller.
 */
int pc__cache_copy(pc__work_t *w, pc__fmt_t *s, uint64_t n);

/* Marks the format's result as one to store (s->hash = w->h) when this
 * run compressed it and stores: a cache open (local or remote), the
 * content hashed, not a dry run, not copied from an identical file or
 * taken from a cache; or when it came from the remote cache and a local
 * one is open (stored there only).
 */
void pc__cache_mark(const pc__work_t *w, pc__fmt_t *s);

/* Stores a kept output of n bytes from its own bytes (in memory, or
 * through the temp's descriptor before the rename), never from its name:
 * in the local store, and queued for the remote one unless it came from
 * there.
 */
void pc__cache_put_kept(pc__work_t *w, int f, uint64_t n);

/* Stores a rejection (format f not kept) when it is marked. */
void pc__cache_put_rejected(pc__work_t *w, int f);

#endif /* PC_CACHE_H */
