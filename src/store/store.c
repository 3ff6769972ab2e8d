/* The cache's store (store.h): opened, with its writer's connection and
 * thread, and closed. Lookups are storeread.c's, the queue and the writer
 * thread storewrite.c's, what the file is and whether it is safe to use
 * storeid.c's.
 */
#include "store/storeint.h"

#include "fs/cachedir.h"
#include "store/storeid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int prepare_writer(pc__store_t *c) {
  static const struct {
    size_t off;
    const char *sql;
  } st[] = {
      {offsetof(pc__store_t, find), "SELECT id FROM entry WHERE key = ?1"},
      {offsetof(pc__store_t, del_e), "DELETE FROM entry WHERE id = ?1"},
      {offsetof(pc__store_t, del_p), "DELETE FROM payload WHERE id = ?1"},
      {offsetof(pc__store_t, ins_e),
       "INSERT INTO entry(key, used, bytes) VALUES(?1, ?2, ?3)"
       " ON CONFLICT(key) DO NOTHING"},
      {offsetof(pc__store_t, ins_p),
       "INSERT INTO payload(id, lim, sum, data) VALUES(?1, ?2, ?3, ?4)"},
      {offsetof(pc__store_t, touch),
       "UPDATE entry SET used = ?2 WHERE id = ?1"},
      {offsetof(pc__store_t, drop),
       "DELETE FROM entry WHERE id = ?1 AND key = ?2"},
  };
  size_t i;

  for (i = 0; i < PC__ARRAY_SIZE(st); i++) {
    sqlite3_stmt **s = (sqlite3_stmt **)((char *)c + st[i].off);
    int rc = sqlite3_prepare_v3(c->wdb, st[i].sql, -1,
                                SQLITE_PREPARE_PERSISTENT, s, NULL);
    if (rc != SQLITE_OK)
      return pc__store_err(c->wdb, rc);
  }
  return 0;
}

/* Loads the keys' prefixes (c->keys). Best effort: without them every key
 * is looked up.
 */
static void load_keys(pc__store_t *c, sqlite3 *db) {
  sqlite3_stmt *s;
  size_t cap = 0;

  if (sqlite3_prepare_v2(db, "SELECT key FROM entry", -1, &s, NULL) !=
      SQLITE_OK)
    return;
  while (sqlite3_step(s) == SQLITE_ROW) {
    const unsigned char *k = sqlite3_column_blob(s, 0);
    if (k == NULL || sqlite3_column_bytes(s, 0) != PC__STORE_KEYLEN)
      continue;
    if (PC__GROW(c->keys, c->nkeys, cap, 4096) != 0)
      goto fail;
    c->keys[c->nkeys++] = pc__store_key_prefix(k);
  }
  sqlite3_finalize(s);
  if (c->nkeys > 0) /* qsort(NULL, 0) is undefined, however harmless */
    qsort(c->keys, c->nkeys, sizeof(*c->keys), pc__store_cmp_u64);
  c->keys_loaded = 1;
  return;
fail:
  sqlite3_finalize(s);
  free(c->keys);
  c->keys = NULL;
  c->nkeys = 0;
}

/* The writer's connection, on a file pc__store_identify() found to be a
 * store: an unstamped one stamped first, before any other statement
 * writes (storeid.h).
 */
static int open_writer(pc__store_t *c, pc__store_kind_t kind) {
  int rc, err, waited;

  if ((err = pc__store_connect(c->path, c->read_only, 1, &c->wdb)) != 0 ||
      (err = pc__store_stamp(c->wdb, kind)) != 0)
    return err;
  /* WAL: readers (workers, other runs) never wait for the writer, and a
   * commit needs no fsync; NORMAL keeps the store whole through a crash
   * or power loss (the last commits may be lost: misses, never bad bytes).
   * Two runs that made the store at once switch it together; as read from
   * SQLite's locking (not reproduced: seen once, as "Device or resource
   * busy" from test_cache's shard runs under load), each holds the shared
   * lock the other's switch waits for, and SQLite breaks that deadlock by
   * failing one at once, its busy handler not called. The other is done in
   * milliseconds: wait for it, as long as for any lock (a run's own retry
   * of the whole open would come too soon).
   */
  for (waited = 0; (rc = sqlite3_exec(c->wdb, "PRAGMA journal_mode = WAL", NULL,
                                      NULL, NULL)) == SQLITE_BUSY &&
                   waited < PC__STORE_BUSY_MS;
       waited += 10)
    uv_sleep(10);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(c->wdb,
                      "PRAGMA synchronous = NORMAL;"
                      "PRAGMA mmap_size = " PC__STORE_MMAP_SIZE ";",
                      NULL, NULL, NULL);
  /* The key index's pages stay in the writer's cache across commits: with
   * SQLite's 2 MiB each batch read them back from the WAL, and pages came
   * mapped rather than read (the writer's kernel time halved on 100,000
   * small files). A share of the cache's memory budget, as its queue.
   */
  if (rc == SQLITE_OK) {
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%llu",
             (unsigned long long)(c->budget / 2048 > 2048 ? c->budget / 2048
                                                          : 2048));
    rc = sqlite3_exec(c->wdb, sql, NULL, NULL, NULL);
  }
  if (rc != SQLITE_OK)
    return pc__store_err(c->wdb, rc);
  load_keys(c, c->wdb);
  return prepare_writer(c);
}

static int cache_open(pc__store_t **out, const char *dir, int read_only,
                      uint64_t budget) {
  pc__store_t *c = calloc(1, sizeof(*c));
  const char *v = pc_library_versions();
  pc__store_kind_t kind;
  char *canon = NULL;
  int err;

  *out = NULL;
  if (c == NULL)
    return -ENOMEM;
  c->read_only = read_only;
  c->budget = budget;
  c->flush_bytes = budget / 4 > 0 ? budget / 4 : 1;
  c->q_tail = &c->q_head;
  c->ver = XXH3_64bits(v, strlen(v));
  uv_mutex_init(&c->mu);
  uv_cond_init(&c->wake);
  uv_cond_init(&c->done);
  /* DIR and the way to it judged, and made when missing (cachedir.h). */
  err = pc__cache_dir(dir, !read_only, &canon);
  if (err == 0 && (c->path = pc__path_join(canon, PC__STORE_FILE)) == NULL)
    err = -ENOMEM;
  if (err == 0)
    err = pc__store_check_files(c->path);
  if (err != 0)
    goto fail;
  if (read_only) {
    /* Nothing to read (no file, or an empty one) is an empty cache;
     * nothing is made for it.
     */
    if ((err = pc__store_identify(c->path, &kind)) == 0 &&
        kind == PC__STORE_EMPTY)
      err = -ENOENT;
    if (err != 0)
      goto fail;
  } else {
    /* What is there says what it is before anything writes to it. */
    pc__store_reap(canon);
    if ((err = pc__store_writable(c->path, &kind)) != 0 ||
        (err = open_writer(c, kind)) != 0)
      goto fail;
    if (uv_thread_create(&c->writer, pc__store_writer_main, c) != 0) {
      err = -EAGAIN;
      goto fail;
    }
    c->writer_on = 1;
  }
  free(canon);
  *out = c;
  return 0;
fail:
  free(canon);
  pc__store_close(c);
  return err;
}

/* Once more after a failure that may pass (EMFILE, EIO, a header read
 * SQLite took for damage): a cache that opens on the second try is worth
 * the run's time; one refused as unsafe is not tried again.
 */
int pc__store_open(pc__store_t **out, const char *dir, int read_only,
                   uint64_t budget) {
  int err = cache_open(out, dir, read_only, budget);
  if (err != 0 && err != PC_EUNSAFE && err != -ENOTDIR &&
      !(read_only && err == -ENOENT))
    err = cache_open(out, dir, read_only, budget);
  return err;
}

void pc__store_close(pc__store_t *c) {
  if (c == NULL)
    return;
  pc__store_writer_stop(c);
  /* Readers first: the last connection to close checkpoints the WAL into
   * the store and removes the -wal and -shm files.
   */
  pc__store_readers_free(c);
  sqlite3_close(c->wdb);
  free(c->keys);
  uv_cond_destroy(&c->wake);
  uv_cond_destroy(&c->done);
  uv_mutex_destroy(&c->mu);
  free(c->path);
  free(c);
}
