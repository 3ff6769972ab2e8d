/* The cache's store inside (store.h is its interface): the state its
 * three files share. store.c opens and closes it, storeread.c is the
 * workers' lookups (a pooled read-only connection each), storewrite.c the
 * queue and the writer thread that commits it. The store's safety checks
 * and identity are storeid.c's, with the SQLite helpers all four use
 * (storeid.h: a connection, a query for one number, our code for an
 * SQLite result).
 * Its names are PC__STORE_ and pc__store_, as every internal of the store.
 */
#ifndef PC_STOREINT_H
#define PC_STOREINT_H

#include "store/store.h"

#include <sqlite3.h>
#include <uv.h>
#include <xxhash.h>

/* An entry's key: the bytes pc__store_make_key() lays out. */
#define PC__STORE_KEYLEN 38
/* A streamed payload is read and verified this much at a time. */
#define PC__STORE_CHUNK ((size_t)1 << 16)
/* Payloads up to this size come with the lookup's row, verified and copied
 * from memory; larger ones are streamed through an incremental blob. Opening
 * a blob compiles a statement: on 100,000 small hits it was most of a
 * lookup's CPU, and the row already holds the page.
 */
#define PC__STORE_INLINE_MAX 262144
/* A last use is written again only when older than this: warm runs in a
 * row write nothing, and the trim's order is by the hour.
 */
#define PC__STORE_TOUCH_AGE 3600
/* The writer commits once this much is queued (or at a flush). */
#define PC__STORE_FLUSH_OPS 65536
#define PC__STORE_MMAP_SIZE "268435456"

enum { PC__STORE_OP_PUT, PC__STORE_OP_TOUCH, PC__STORE_OP_DROP };

typedef struct pc__store_op {
  struct pc__store_op *next;
  int kind;
  int64_t id; /* PC__STORE_OP_TOUCH, PC__STORE_OP_DROP */
  unsigned char key[PC__STORE_KEYLEN];
  int64_t lim; /* PC__STORE_OP_PUT */
  unsigned char sum[16];
  unsigned char *data; /* PC__STORE_OP_PUT: len bytes in the op's own block */
  uint64_t len;
} pc__store_op_t;

typedef struct pc__store_reader {
  sqlite3 *db;
  sqlite3_stmt *get;
  sqlite3_blob *blob; /* the hit's payload, in the open snapshot */
  XXH3_state_t *xs;   /* the checksum's state, kept for the next lookup */
  struct pc__store_reader *next_free, *next_all;
  int pinned; /* its thread's, in an open read transaction (pc__store_pin) */
  int busy;   /* pinned and holding a hit */
} pc__store_reader_t;

struct pc__store {
  char *path; /* DIR/cache.sqlite */
  int read_only;
  uint64_t ver; /* the codec libraries' versions, hashed: their bytes differ */
  uint64_t budget, flush_bytes;
  /* The first 8 bytes of every key the store held at open, sorted: a key
   * not there is a miss without a lookup. Lookups racing the writer's
   * commits re-read pages from the WAL; on a cold run they were most of
   * the cache's cost. NULL (nkeys 0 too): not loaded, every key looked up.
   */
  uint64_t *keys;
  size_t nkeys;
  int keys_loaded;

  uv_mutex_t mu; /* guards everything below */
  pc__store_reader_t *free_readers, *all_readers;
  pc__store_op_t *q_head, **q_tail;
  uint64_t q_bytes, reserved; /* queued; queued or being committed */
  unsigned q_ops;
  uint64_t flush_gen, done_gen; /* flush requests, and the last served */
  int closing;
  int trim_want, trim_err;
  int kicked; /* pc__store_kick(): commit and checkpoint now */
  uint64_t trim_max;
  uv_cond_t wake, done;

  /* The writer thread's alone. */
  int writer_on;
  uv_thread_t writer;
  sqlite3 *wdb;
  sqlite3_stmt *find, *del_e, *del_p, *ins_e, *ins_p, *touch, *drop;
};

static inline void pc__store_put64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static inline void pc__store_make_key(const pc__store_t *c,
                                      const pc__store_key_t *k,
                                      unsigned char key[PC__STORE_KEYLEN]) {
  pc__store_put64(key, k->h[0]);
  pc__store_put64(key + 8, k->h[1]);
  pc__store_put64(key + 16, k->size);
  key[24] = (unsigned char)k->format;
  pc__store_put64(key + 25, (uint64_t)(int64_t)k->level); /* low 4 bytes kept */
  key[29] = (unsigned char)k->engine;
  pc__store_put64(key + 30, c->ver);
}

/* The checksum an entry stores: over its key, its kind and its bytes. */
static inline void pc__store_entry_sum_start(
    XXH3_state_t *s, const unsigned char key[PC__STORE_KEYLEN], int64_t lim) {
  unsigned char l[8];
  pc__store_put64(l, (uint64_t)lim);
  XXH3_128bits_reset(s);
  XXH3_128bits_update(s, key, PC__STORE_KEYLEN);
  XXH3_128bits_update(s, l, sizeof(l));
}

static inline void pc__store_sum_bytes(const XXH128_hash_t *h,
                                       unsigned char out[16]) {
  pc__store_put64(out, h->low64);
  pc__store_put64(out + 8, h->high64);
}

static inline int pc__store_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A key's first 8 bytes, as the prefixes the store loads (c->keys). */
static inline uint64_t pc__store_key_prefix(const unsigned char *key) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--)
    v = v << 8 | key[i];
  return v;
}

/* --- storewrite.c --- */

/* The writer thread's body (arg: the store), started by the open. */
void pc__store_writer_main(void *arg);

/* Stops the writer thread, once it has committed what is queued, and
 * finalizes its statements. Safe when it never started.
 */
void pc__store_writer_stop(pc__store_t *c);

/* Queues a touch (a last use) or a drop (an entry that did not verify)
 * of entry `id` holding `key`; nothing in a read-only store. Any thread.
 */
void pc__store_queue_small(pc__store_t *c, int kind, int64_t id,
                           const unsigned char key[PC__STORE_KEYLEN]);

/* sqlite3_step() on a statement that returns no row the caller wants,
 * then reset and unbound: SQLITE_OK or the error.
 */
int pc__store_step(sqlite3_stmt *s);

/* --- storeread.c --- */

/* Closes every reader's connection (all are back in the pool). */
void pc__store_readers_free(pc__store_t *c);

#endif /* PC_STOREINT_H */
