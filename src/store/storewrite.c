/* The store's writing (store.h): what workers queue (results, last uses,
 * entries to drop), the writer thread that commits the queue in batches,
 * and the trim. No worker waits on the store's write lock, and the loop
 * thread never touches it.
 */
#include "store/storeint.h"

#include "store/storeid.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Takes op (owned), or frees it when the cache is closing. */
static void enqueue(pc__store_t *c, pc__store_op_t *o) {
  int wake;

  o->next = NULL;
  uv_mutex_lock(&c->mu);
  *c->q_tail = o;
  c->q_tail = &o->next;
  c->q_bytes += o->len;
  c->q_ops++;
  wake = c->q_bytes >= c->flush_bytes || c->q_ops >= PC__STORE_FLUSH_OPS;
  if (wake)
    uv_cond_signal(&c->wake);
  uv_mutex_unlock(&c->mu);
}

void pc__store_queue_small(pc__store_t *c, int kind, int64_t id,
                           const unsigned char key[PC__STORE_KEYLEN]) {
  pc__store_op_t *o;
  if (c->read_only || (o = calloc(1, sizeof(*o))) == NULL)
    return;
  o->kind = kind;
  o->id = id;
  memcpy(o->key, key, PC__STORE_KEYLEN);
  enqueue(c, o);
}

int pc__store_step(sqlite3_stmt *s) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static int apply_put(pc__store_t *c, const pc__store_op_t *o, int64_t now) {
  int64_t id;
  int rc;

  /* A new key is one index descent. Another run (or this one, for a bad
   * entry) may have stored this key: then the new bytes replace it whole.
   */
  sqlite3_bind_blob(c->ins_e, 1, o->key, PC__STORE_KEYLEN, SQLITE_STATIC);
  sqlite3_bind_int64(c->ins_e, 2, now);
  sqlite3_bind_int64(c->ins_e, 3, (sqlite3_int64)o->len);
  if ((rc = pc__store_step(c->ins_e)) != SQLITE_OK)
    return rc;
  if (sqlite3_changes(c->wdb) == 0) {
    sqlite3_bind_blob(c->find, 1, o->key, PC__STORE_KEYLEN, SQLITE_STATIC);
    if ((rc = sqlite3_step(c->find)) == SQLITE_ROW)
      id = sqlite3_column_int64(c->find, 0);
    sqlite3_reset(c->find);
    sqlite3_clear_bindings(c->find);
    if (rc != SQLITE_ROW)
      return rc == SQLITE_DONE ? SQLITE_CORRUPT : rc;
    sqlite3_bind_int64(c->del_e, 1, id);
    sqlite3_bind_int64(c->del_p, 1, id);
    if ((rc = pc__store_step(c->del_e)) != SQLITE_OK ||
        (rc = pc__store_step(c->del_p)) != SQLITE_OK)
      return rc;
    sqlite3_bind_blob(c->ins_e, 1, o->key, PC__STORE_KEYLEN, SQLITE_STATIC);
    sqlite3_bind_int64(c->ins_e, 2, now);
    sqlite3_bind_int64(c->ins_e, 3, (sqlite3_int64)o->len);
    if ((rc = pc__store_step(c->ins_e)) != SQLITE_OK)
      return rc;
  }
  id = sqlite3_last_insert_rowid(c->wdb);
  sqlite3_bind_int64(c->ins_p, 1, id);
  sqlite3_bind_int64(c->ins_p, 2, o->lim);
  sqlite3_bind_blob(c->ins_p, 3, o->sum, 16, SQLITE_STATIC);
  sqlite3_bind_blob64(c->ins_p, 4, o->data != NULL ? (void *)o->data : "",
                      o->len, SQLITE_STATIC);
  return pc__store_step(c->ins_p);
}

static int apply(pc__store_t *c, const pc__store_op_t *o, int64_t now) {
  int rc;

  switch (o->kind) {
  case PC__STORE_OP_PUT:
    return apply_put(c, o, now);
  case PC__STORE_OP_TOUCH:
    sqlite3_bind_int64(c->touch, 1, o->id);
    sqlite3_bind_int64(c->touch, 2, now);
    return pc__store_step(c->touch);
  default: /* PC__STORE_OP_DROP: only if the id still holds that key */
    sqlite3_bind_int64(c->drop, 1, o->id);
    sqlite3_bind_blob(c->drop, 2, o->key, PC__STORE_KEYLEN, SQLITE_STATIC);
    if ((rc = pc__store_step(c->drop)) != SQLITE_OK)
      return rc;
    if (sqlite3_changes(c->wdb) == 0)
      return SQLITE_OK;
    sqlite3_bind_int64(c->del_p, 1, o->id);
    return pc__store_step(c->del_p);
  }
}

/* One transaction for the whole batch. Best effort: a batch that cannot
 * be committed (disk full, another run holding the lock past PC__STORE_BUSY_MS)
 * is dropped whole, which the next run sees as misses.
 */
static void commit(pc__store_t *c, pc__store_op_t *batch) {
  int64_t now = (int64_t)time(NULL);
  int rc;
  pc__store_op_t *o;

  if (batch == NULL)
    return;
  rc = sqlite3_exec(c->wdb, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  for (o = batch; rc == SQLITE_OK && o != NULL; o = o->next)
    rc = apply(c, o, now);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(c->wdb, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK && !sqlite3_get_autocommit(c->wdb))
    sqlite3_exec(c->wdb, "ROLLBACK", NULL, NULL, NULL);
}

/* Least recently used first (by the hour, PC__STORE_TOUCH_AGE; then oldest id)
 * until the payloads fit; then VACUUM when a quarter of the file is free
 * pages, so what CI uploads is near the payload's size. A VACUUM another
 * run's reader blocks is left to a later trim.
 */
static int do_trim(pc__store_t *c, uint64_t max_bytes) {
  sqlite3_stmt *s = NULL;
  int64_t total, pages, free_pages;
  int rc;

  if ((rc = pc__store_query_int(c->wdb,
                                "SELECT coalesce(sum(bytes), 0) FROM entry",
                                &total)) != SQLITE_OK)
    return pc__store_err(c->wdb, rc);
  if ((uint64_t)total > max_bytes) {
    rc = sqlite3_exec(c->wdb, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
      rc = sqlite3_prepare_v2(c->wdb,
                              "SELECT id, bytes FROM entry ORDER BY used, id",
                              -1, &s, NULL);
    /* Deleting rows behind a running SELECT on the same table is safe in
     * SQLite: the cursor has already passed them.
     */
    while (rc == SQLITE_OK && (uint64_t)total > max_bytes &&
           sqlite3_step(s) == SQLITE_ROW) {
      int64_t id = sqlite3_column_int64(s, 0);
      sqlite3_bind_int64(c->del_e, 1, id);
      sqlite3_bind_int64(c->del_p, 1, id);
      if ((rc = pc__store_step(c->del_e)) == SQLITE_OK)
        rc = pc__store_step(c->del_p);
      total -= sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_OK)
      rc = sqlite3_exec(c->wdb, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      if (!sqlite3_get_autocommit(c->wdb))
        sqlite3_exec(c->wdb, "ROLLBACK", NULL, NULL, NULL);
      return pc__store_err(c->wdb, rc);
    }
  }
  if (pc__store_query_int(c->wdb, "PRAGMA page_count", &pages) == SQLITE_OK &&
      pc__store_query_int(c->wdb, "PRAGMA freelist_count", &free_pages) ==
          SQLITE_OK &&
      pages > 0 && free_pages * 4 > pages)
    sqlite3_exec(c->wdb, "VACUUM", NULL, NULL, NULL);
  return 0;
}

void pc__store_writer_main(void *arg) {
  pc__store_t *c = arg;

  uv_mutex_lock(&c->mu);
  for (;;) {
    pc__store_op_t *batch, *o;
    uint64_t gen, bytes = 0;
    int trim, kicked;
    while (!c->closing && c->done_gen == c->flush_gen &&
           c->q_bytes < c->flush_bytes && c->q_ops < PC__STORE_FLUSH_OPS)
      uv_cond_wait(&c->wake, &c->mu);
    batch = c->q_head;
    c->q_head = NULL;
    c->q_tail = &c->q_head;
    c->q_bytes = 0;
    c->q_ops = 0;
    gen = c->flush_gen;
    trim = c->trim_want;
    c->trim_want = 0;
    kicked = c->kicked;
    c->kicked = 0;
    uv_mutex_unlock(&c->mu);

    commit(c, batch);
    /* Passive: never waits for a reader (another run's snapshot); what it
     * cannot copy now the close does.
     */
    if (kicked)
      sqlite3_wal_checkpoint_v2(c->wdb, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                                NULL);
    for (o = batch; o != NULL;) {
      pc__store_op_t *next = o->next;
      bytes += o->kind == PC__STORE_OP_PUT ? o->len : 0;
      free(o);
      o = next;
    }
    if (trim) {
      /* Again after a failure that may pass (see pc__store_open). */
      int err = do_trim(c, c->trim_max);
      if (err != 0)
        err = do_trim(c, c->trim_max);
      uv_mutex_lock(&c->mu);
      c->trim_err = err;
    } else {
      uv_mutex_lock(&c->mu);
    }
    c->reserved -= bytes;
    c->done_gen = gen;
    uv_cond_broadcast(&c->done);
    if (c->closing && c->q_head == NULL)
      break;
  }
  uv_mutex_unlock(&c->mu);
}

void pc__store_writer_stop(pc__store_t *c) {
  sqlite3_stmt **st[] = {&c->find,  &c->del_e, &c->del_p, &c->ins_e,
                         &c->ins_p, &c->touch, &c->drop};
  size_t i;

  if (c->writer_on) {
    uv_mutex_lock(&c->mu);
    c->closing = 1;
    uv_cond_signal(&c->wake);
    uv_mutex_unlock(&c->mu);
    uv_thread_join(&c->writer);
    c->writer_on = 0;
  }
  for (i = 0; i < PC__ARRAY_SIZE(st); i++) {
    sqlite3_finalize(*st[i]);
    *st[i] = NULL;
  }
}

/* Waits until everything queued before the call is committed. */
static void flush(pc__store_t *c) {
  uint64_t gen;
  uv_mutex_lock(&c->mu);
  gen = ++c->flush_gen;
  uv_cond_signal(&c->wake);
  while (c->done_gen < gen)
    uv_cond_wait(&c->done, &c->mu);
  uv_mutex_unlock(&c->mu);
}

void pc__store_kick(pc__store_t *c) {
  if (c == NULL || !c->writer_on)
    return;
  uv_mutex_lock(&c->mu);
  c->kicked = 1;
  c->flush_gen++;
  uv_cond_signal(&c->wake);
  uv_mutex_unlock(&c->mu);
}

int pc__store_put(pc__store_t *c, const pc__store_key_t *k, int kept,
                  const unsigned char *mem, int fd, uint64_t len,
                  uint64_t limit) {
  pc__store_op_t *o = NULL;
  unsigned char *head;
  XXH128_hash_t h;
  uint64_t n = kept ? len : 0, done = 0;
  int ok = 0, reserved = 0;

  if (c->read_only || n > INT32_MAX)
    return 0;
  uv_mutex_lock(&c->mu);
  if (c->reserved + n <= c->budget) {
    c->reserved += n;
    reserved = 1;
  }
  uv_mutex_unlock(&c->mu);
  /* One block for the op and, after it, what the checksum covers laid out
   * in its order (key, lim, bytes): one malloc here, one free on the
   * writer, and the checksum in one call with no state to allocate
   * (pc__store_entry_sum_start()'s stream over the same bytes gives the same
   * sum).
   */
  if (!reserved ||
      (o = malloc(sizeof(*o) + PC__STORE_KEYLEN + 8 + (size_t)n)) == NULL)
    goto out;
  memset(o, 0, sizeof(*o));
  head = (unsigned char *)(o + 1);
  o->data = n > 0 ? head + PC__STORE_KEYLEN + 8 : NULL;
  o->kind = PC__STORE_OP_PUT;
  o->len = n;
  o->lim = kept ? -1 : (limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
  pc__store_make_key(c, k, o->key);
  memcpy(head, o->key, PC__STORE_KEYLEN);
  pc__store_put64(head + PC__STORE_KEYLEN, (uint64_t)o->lim);
  if (mem != NULL) {
    memcpy(head + PC__STORE_KEYLEN + 8, mem, (size_t)n);
  } else {
    while (done < n) {
      ssize_t r = pread(fd, head + PC__STORE_KEYLEN + 8 + done,
                        (size_t)(n - done), (off_t)done);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        goto out;
      done += (uint64_t)r;
    }
  }
  h = XXH3_128bits(head, PC__STORE_KEYLEN + 8 + (size_t)n);
  pc__store_sum_bytes(&h, o->sum);
  enqueue(c, o);
  o = NULL;
  ok = 1;
out:
  free(o);
  if (!ok && reserved) {
    uv_mutex_lock(&c->mu);
    c->reserved -= n;
    uv_mutex_unlock(&c->mu);
  }
  return ok;
}

int pc__store_trim(pc__store_t *c, uint64_t max_bytes) {
  int err;
  if (c->read_only || !c->writer_on)
    return 0;
  uv_mutex_lock(&c->mu);
  c->trim_want = 1;
  c->trim_max = max_bytes;
  c->trim_err = 0;
  uv_mutex_unlock(&c->mu);
  flush(c);
  uv_mutex_lock(&c->mu);
  err = c->trim_err;
  uv_mutex_unlock(&c->mu);
  return err;
}
