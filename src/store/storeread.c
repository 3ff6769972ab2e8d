/* The store's workers' side (store.h): lookups, each on a pooled
 * read-only connection that holds its snapshot from the lookup to the
 * last byte copied, and the payload's verification against its key.
 */
#include "store/storeint.h"

#include "store/storeid.h"

#include <stdlib.h>
#include <string.h>

static void reader_free(pc__store_reader_t *rd) {
  sqlite3_blob_close(rd->blob);
  sqlite3_finalize(rd->get);
  sqlite3_close(rd->db);
  XXH3_freeState(rd->xs);
  free(rd);
}

static pc__store_reader_t *reader_get(pc__store_t *c) {
  pc__store_reader_t *rd;

  uv_mutex_lock(&c->mu);
  if ((rd = c->free_readers) != NULL)
    c->free_readers = rd->next_free;
  uv_mutex_unlock(&c->mu);
  if (rd != NULL)
    return rd;
  if ((rd = calloc(1, sizeof(*rd))) == NULL)
    return NULL;
  /* Pages mapped, not read: a warm run's lookups were a tenth of its CPU
   * in pread() calls. SQLite falls back to reads past the map or when it
   * cannot map (an address-space limit).
   */
  if ((rd->xs = XXH3_createState()) == NULL ||
      pc__store_connect(c->path, c->read_only, 0, &rd->db) != 0 ||
      sqlite3_exec(rd->db, "PRAGMA mmap_size = " PC__STORE_MMAP_SIZE, NULL,
                   NULL, NULL) != SQLITE_OK ||
      sqlite3_prepare_v3(rd->db,
                         "SELECT e.id, e.used, p.lim, p.sum, length(p.data), "
                         "CASE WHEN length(p.data) <= " PC__STR(
                             PC__STORE_INLINE_MAX) " THEN p.data END "
                                                   "FROM entry e JOIN payload "
                                                   "p ON p.id = e.id "
                                                   "WHERE e.key = ?1",
                         -1, SQLITE_PREPARE_PERSISTENT, &rd->get,
                         NULL) != SQLITE_OK) {
    reader_free(rd);
    return NULL;
  }
  uv_mutex_lock(&c->mu);
  rd->next_all = c->all_readers;
  c->all_readers = rd;
  uv_mutex_unlock(&c->mu);
  return rd;
}

/* Ends the reader's snapshot (the lookup statement, left on its row, held
 * it) and pools it.
 */
static void reader_put(pc__store_t *c, pc__store_reader_t *rd) {
  sqlite3_blob_close(rd->blob);
  rd->blob = NULL;
  sqlite3_reset(rd->get);
  if (rd->pinned) { /* the pin's transaction goes on */
    rd->busy = 0;
    return;
  }
  uv_mutex_lock(&c->mu);
  rd->next_free = c->free_readers;
  c->free_readers = rd;
  uv_mutex_unlock(&c->mu);
}

/* The calling thread's pin: its store and connection. */
static _Thread_local const pc__store_t *pin_store;
static _Thread_local pc__store_reader_t *pin_reader;

void pc__store_pin(pc__store_t *c) {
  pc__store_reader_t *rd;

  if (c == NULL || pin_reader != NULL || (rd = reader_get(c)) == NULL)
    return;
  /* Deferred: the snapshot is taken by the first lookup. */
  if (sqlite3_exec(rd->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
    reader_put(c, rd);
    return;
  }
  rd->pinned = 1;
  pin_store = c;
  pin_reader = rd;
}

void pc__store_unpin(pc__store_t *c) {
  pc__store_reader_t *rd = pin_reader;

  if (c == NULL || rd == NULL || pin_store != c)
    return;
  pin_reader = NULL;
  pin_store = NULL;
  /* Ends the read transaction (an error ended it already). */
  if (!sqlite3_get_autocommit(rd->db))
    sqlite3_exec(rd->db, "COMMIT", NULL, NULL, NULL);
  rd->pinned = 0;
  rd->busy = 0;
  reader_put(c, rd);
}

/* The connection for a lookup: the thread's pin when it is free. */
static pc__store_reader_t *lookup_reader(pc__store_t *c) {
  if (pin_store == c && pin_reader != NULL && !pin_reader->busy) {
    pin_reader->busy = 1;
    return pin_reader;
  }
  return reader_get(c);
}

void pc__store_readers_free(pc__store_t *c) {
  pc__store_reader_t *rd;

  while ((rd = c->all_readers) != NULL) {
    c->all_readers = rd->next_all;
    reader_free(rd);
  }
}

/* Runs the payload (in memory at mem, else streamed from rd->blob) through
 * the checksum. 1 when it matches.
 */
static int verify(pc__store_reader_t *rd,
                  const unsigned char key[PC__STORE_KEYLEN], int64_t lim,
                  const void *sum, const unsigned char *mem, uint64_t len) {
  unsigned char got[16], *buf = NULL;
  XXH3_state_t *s = rd->xs;
  XXH128_hash_t h;
  uint64_t off;
  int ok = 0;

  pc__store_entry_sum_start(s, key, lim);
  if (mem != NULL) {
    XXH3_128bits_update(s, mem, (size_t)len);
  } else {
    if (len > 0 && (buf = malloc(PC__STORE_CHUNK)) == NULL)
      goto out;
    for (off = 0; off < len;) {
      size_t n =
          len - off < PC__STORE_CHUNK ? (size_t)(len - off) : PC__STORE_CHUNK;
      if (sqlite3_blob_read(rd->blob, buf, (int)n, (int)off) != SQLITE_OK)
        goto out;
      XXH3_128bits_update(s, buf, n);
      off += n;
    }
  }
  h = XXH3_128bits_digest(s);
  pc__store_sum_bytes(&h, got);
  ok = memcmp(got, sum, 16) == 0;
out:
  free(buf);
  return ok;
}

int pc__store_get(pc__store_t *c, const pc__store_key_t *k,
                  pc__store_hit_t *hit) {
  unsigned char key[PC__STORE_KEYLEN];
  pc__store_reader_t *rd;
  int64_t id, used, lim;
  const void *sum;
  const unsigned char *mem = NULL;
  int ok = 0;

  memset(hit, 0, sizeof(*hit));
  pc__store_make_key(c, k, key);
  if (c->keys_loaded) {
    uint64_t p = pc__store_key_prefix(key);
    if (c->nkeys == 0 || bsearch(&p, c->keys, c->nkeys, sizeof(*c->keys),
                                 pc__store_cmp_u64) == NULL)
      return 0;
  }
  if ((rd = lookup_reader(c)) == NULL)
    return 0;
  /* One snapshot from the lookup to the last byte copied: the statement
   * stays on its row (its read transaction open) until the release.
   */
  sqlite3_bind_blob(rd->get, 1, key, PC__STORE_KEYLEN, SQLITE_STATIC);
  if (sqlite3_step(rd->get) != SQLITE_ROW)
    goto out;
  id = sqlite3_column_int64(rd->get, 0);
  used = sqlite3_column_int64(rd->get, 1);
  lim = sqlite3_column_int64(rd->get, 2);
  sum = sqlite3_column_blob(rd->get, 3);
  hit->len = (uint64_t)sqlite3_column_int64(rd->get, 4);
  /* The row's own copy of a small payload; an empty one is "" (not NULL,
   * which would send it down the blob path).
   */
  if (hit->len <= PC__STORE_INLINE_MAX &&
      sqlite3_column_type(rd->get, 5) == SQLITE_BLOB) {
    mem = sqlite3_column_blob(rd->get, 5);
    if (mem == NULL)
      mem = (const unsigned char *)"";
    if ((uint64_t)sqlite3_column_bytes(rd->get, 5) != hit->len)
      mem = NULL, hit->len = UINT64_MAX; /* fails the checks below */
  }
  if (sum == NULL || sqlite3_column_bytes(rd->get, 3) != 16 ||
      (lim >= 0 && hit->len != 0) || hit->len > INT32_MAX ||
      (mem == NULL && (sqlite3_blob_open(rd->db, "main", "payload", "data", id,
                                         0, &rd->blob) != SQLITE_OK ||
                       (uint64_t)sqlite3_blob_bytes(rd->blob) != hit->len)) ||
      !verify(rd, key, lim, sum, mem, hit->len)) {
    pc__store_queue_small(c, PC__STORE_OP_DROP, id, key);
    goto out;
  }
  ok = 1;
  if ((int64_t)time(NULL) - used > PC__STORE_TOUCH_AGE)
    pc__store_queue_small(c, PC__STORE_OP_TOUCH, id, key);
  if (lim >= 0) {
    hit->rejected = 1;
    hit->limit = (uint64_t)lim;
    hit->len = 0;
  } else {
    hit->rd = rd;
    hit->mem = mem;
    rd = NULL;
  }
out:
  if (rd != NULL)
    reader_put(c, rd);
  if (!ok)
    memset(hit, 0, sizeof(*hit));
  return ok;
}

int pc__store_read(pc__store_hit_t *hit, uint64_t off, void *buf, size_t n) {
  int rc;
  if (hit->rd == NULL || off + n > hit->len)
    return -EINVAL;
  if (hit->mem != NULL) {
    memcpy(buf, hit->mem + off, n);
    return 0;
  }
  rc = sqlite3_blob_read(hit->rd->blob, buf, (int)n, (int)off);
  return rc == SQLITE_OK ? 0 : pc__store_err(hit->rd->db, rc);
}

void pc__store_release(pc__store_t *c, pc__store_hit_t *hit) {
  if (hit->rd != NULL)
    reader_put(c, hit->rd);
  hit->rd = NULL;
  hit->mem = NULL;
}
