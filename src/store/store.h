/* The content cache's store (--cache-dir): compressed results stored by
 * content hash and the options that shape the bytes, so a fresh checkout in
 * CI whose files were compressed by an earlier run copies them instead of
 * compressing again. This file is the store alone; when a job looks up and
 * fills it is the cache's worker side's business (cache.c).
 *
 * One SQLite store, DIR/cache.sqlite (WAL mode, so runs sharing it read
 * while one writes). Why SQLite and not LMDB, and the figures: bench/README.
 *
 * Threads: workers look entries up (a pooled read-only connection each,
 * for the life of a hit) and queue what they compressed; one writer thread
 * of the cache's own commits the queue in batches (a run of 100,000 files
 * makes a handful of transactions), so no worker waits on the store's write
 * lock and the loop thread never touches it.
 *
 * Every entry is bound to its key: its checksum (XXH3-128) covers the key
 * (content hash, size, format, level, engine, codec library versions), the
 * rejection limit and the payload, so an entry moved under another key,
 * truncated or flipped is a miss (and removed), never an output.
 */
#ifndef PC_STORE_H
#define PC_STORE_H

#include "common/common.h"

typedef struct pc__store pc__store_t;

/* Opens (creating) the cache under dir. `budget` bounds the bytes of
 * entries queued for the writer at once (an entry that does not fit is
 * not stored: a miss next time, never a wait). With read_only (a dry run)
 * nothing is created, refreshed, removed or written, not even the
 * engine's lock files. 0 or a negative code: PC_EUNSAFE for a directory or
 * store another user owns or others can write, -ENOENT read_only and no
 * store there.
 */
int pc__store_open(pc__store_t **out, const char *dir, int read_only,
                   uint64_t budget);
/* Commits what is queued, then closes. Call from the thread that opened. */
void pc__store_close(pc__store_t *c);

/* What shapes an output's bytes: its entry's key. */
typedef struct pc__store_key {
  uint64_t h[2]; /* XXH3-128 of the content */
  uint64_t size;
  pc_format_t format;
  int level;
  pc_gzip_engine_t engine;
} pc__store_key_t;

/* A looked-up entry. Holds a read snapshot of the store until released,
 * so the payload verified is the payload copied. Zeroed: no hit.
 */
typedef struct pc__store_hit {
  struct pc__store_reader *rd; /* NULL when there is nothing to read */
  /* A small payload, in memory until the release (write it from here, no
   * copy); NULL: read it with pc__store_read.
   */
  const unsigned char *mem;
  uint64_t len; /* payload length */
  int rejected; /* output known to exceed `limit` */
  uint64_t limit;
} pc__store_hit_t;

/* Looks k up. Returns 1 on a hit whose payload was verified against the key
 * (hit->rd set, to read then release) or a rejection (nothing to release),
 * 0 on a miss. Never fails: an unreadable or corrupt entry is a miss, and
 * one that does not verify is queued for removal. Any thread.
 */
int pc__store_get(pc__store_t *c, const pc__store_key_t *k,
                  pc__store_hit_t *hit);

/* Gives the calling thread's lookups one read snapshot until
 * pc__store_unpin(c): a worker's unit of small files. Each lookup on its
 * own began and ended a read transaction, and the two workers met on
 * SQLite's lock of the WAL index for each (futex waits, a tenth of a warm
 * run's time). One hit at a time uses the snapshot; a second one held at
 * once (another format of the file) takes a pooled connection as without
 * a pin. A snapshot keeps the WAL from being checkpointed past it and
 * misses what commits meanwhile: hold it for a unit, at most 64 files and
 * 256 KiB (schedule.h), which is milliseconds when its files are cached
 * and up to a few tenths of a second of brotli 11 when they miss. NULL c:
 * nothing.
 */
void pc__store_pin(pc__store_t *c);
/* Ends the pin (every hit released first). Same thread as the pin. */
void pc__store_unpin(pc__store_t *c);

/* Reads n payload bytes at off. 0 or a negative code. */
int pc__store_read(pc__store_hit_t *hit, uint64_t off, void *buf, size_t n);

/* Ends the hit's snapshot and gives its connection back. Safe on a zeroed
 * or already released hit.
 */
void pc__store_release(pc__store_t *c, pc__store_hit_t *hit);

/* Queues the result for k for the writer: a kept output of `len` bytes,
 * copied now from `mem` when not NULL, else read from `fd` with pread from
 * offset 0 (the output's own temp file, never a name); or, when !kept, a
 * rejection above `limit`. Best effort: 1 when queued, 0 when not (over the
 * budget, no memory, a read-only cache). Any thread.
 */
int pc__store_put(pc__store_t *c, const pc__store_key_t *k, int kept,
                  const unsigned char *mem, int fd, uint64_t len,
                  uint64_t limit);

/* Asks the writer to commit what is queued and checkpoint the WAL now,
 * without waiting: the run calls it when its last files are in flight and
 * a core is free, so that the end of the run (pc__store_close) has little
 * left to do alone. Any thread; NULL or a read-only cache: nothing.
 */
void pc__store_kick(pc__store_t *c);

/* Commits the queue, then removes least recently used entries until the
 * payloads total at most max_bytes, and compacts the store when that freed
 * more than a quarter of it. 0 or a negative code.
 */
int pc__store_trim(pc__store_t *c, uint64_t max_bytes);

#endif /* PC_STORE_H */
