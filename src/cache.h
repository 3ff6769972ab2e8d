/* The content cache (--cache-dir): compressed results stored by content
 * hash and the options that shape the bytes, so a fresh checkout in CI
 * whose files were compressed by an earlier run copies them instead of
 * compressing again.
 *
 * One file per (content, format, level, library version), written to a
 * temp name in the cache and renamed into place, so concurrent runs sharing
 * a cache see a whole entry or none. Each entry carries the length and the
 * XXH3-128 of its payload; a truncated or corrupt one is removed and
 * treated as a miss, never copied into the tree. An entry may also say
 * "rejected": the output grew past a limit, so at any limit up to that one
 * it is not kept either.
 */
#ifndef PC_CACHE_H
#define PC_CACHE_H

#include "common.h"

typedef struct pc__cache pc__cache_t;

/* Opens (creating) the cache under dir; with read_only (a dry run) it is
 * only read: never created, refreshed or trimmed, a bad entry left where
 * it is. 0 or a negative code (-ENOENT: read_only and no cache there).
 */
int pc__cache_open(pc__cache_t **out, const char *dir, int read_only);
void pc__cache_close(pc__cache_t *c);

/* The directory the entries live in (below dir; owned by c). */
const char *pc__cache_root(const pc__cache_t *c);

typedef struct pc__cache_hit {
  int fd;          /* positioned at the payload; -1 when not a data hit */
  uint64_t len;    /* payload length */
  int rejected;    /* output known to exceed `limit` */
  uint64_t limit;
} pc__cache_hit_t;

/* Looks (content h, size) up for format f at level. Returns 1 on a hit
 * whose payload was verified (hit->fd open at the payload, the caller
 * closes it) or a rejection, 0 on a miss. Never fails: an unreadable or
 * corrupt entry is a miss.
 */
int pc__cache_get(const pc__cache_t *c, const uint64_t h[2], uint64_t size,
                  pc_format_t f, int level, pc_gzip_engine_t engine,
                  pc__cache_hit_t *hit);

/* Stores a kept output of `len` bytes as the entry: from `mem` when not
 * NULL, else read from `fd` (from offset 0, with pread: the output's own
 * temp file, never a name); or, when !kept, a rejection above `limit`.
 * Best effort: a cache that cannot be written is not an error of the run.
 * 1 when an entry was stored, else 0.
 */
int pc__cache_put(const pc__cache_t *c, const uint64_t h[2], uint64_t size,
                  pc_format_t f, int level, pc_gzip_engine_t engine, int kept,
                  const unsigned char *mem, int fd, uint64_t len,
                  uint64_t limit);

/* Removes least recently used entries until the cache holds at most
 * max_bytes. 0 or a negative code.
 */
int pc__cache_trim(const pc__cache_t *c, uint64_t max_bytes);

#endif /* PC_CACHE_H */
