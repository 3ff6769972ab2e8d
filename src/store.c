#include "store.h"

#include "cachedir.h"
#include "storeid.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>
#include <xxhash.h>

#define KEYLEN 38
#define CHUNK ((size_t)1 << 16)
/* Payloads up to this size come with the lookup's row, verified and copied
 * from memory; larger ones are streamed through an incremental blob. Opening
 * a blob compiles a statement: on 100,000 small hits it was most of a
 * lookup's CPU, and the row already holds the page.
 */
#define INLINE_MAX 262144
/* A last use is written again only when older than this: warm runs in a
 * row write nothing, and the trim's order is by the hour.
 */
#define TOUCH_AGE 3600
/* The writer commits once this much is queued (or at a flush). */
#define FLUSH_OPS 65536
#define BUSY_MS 30000
#define MMAP_SIZE "268435456"

enum { OP_PUT, OP_TOUCH, OP_DROP };

typedef struct op {
  struct op *next;
  int kind;
  int64_t id; /* OP_TOUCH, OP_DROP */
  unsigned char key[KEYLEN];
  int64_t lim; /* OP_PUT */
  unsigned char sum[16];
  unsigned char *data; /* OP_PUT: len bytes in the op's own block */
  uint64_t len;
} op_t;

typedef struct pc__store_reader {
  sqlite3 *db;
  sqlite3_stmt *get;
  sqlite3_blob *blob; /* the hit's payload, in the open snapshot */
  XXH3_state_t *xs;   /* the checksum's state, kept for the next lookup */
  struct pc__store_reader *next_free, *next_all;
} reader_t;

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
  reader_t *free_readers, *all_readers;
  op_t *q_head, **q_tail;
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

static void put64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void make_key(const pc__store_t *c, const pc__store_key_t *k,
                     unsigned char key[KEYLEN]) {
  put64(key, k->h[0]);
  put64(key + 8, k->h[1]);
  put64(key + 16, k->size);
  key[24] = (unsigned char)k->format;
  put64(key + 25, (uint64_t)(int64_t)k->level); /* low 4 bytes kept */
  key[29] = (unsigned char)k->engine;
  put64(key + 30, c->ver);
}

/* The checksum an entry stores: over its key, its kind and its bytes. */
static void entry_sum_start(XXH3_state_t *s, const unsigned char key[KEYLEN],
                            int64_t lim) {
  unsigned char l[8];
  put64(l, (uint64_t)lim);
  XXH3_128bits_reset(s);
  XXH3_128bits_update(s, key, KEYLEN);
  XXH3_128bits_update(s, l, sizeof(l));
}

static void sum_bytes(const XXH128_hash_t *h, unsigned char out[16]) {
  put64(out, h->low64);
  put64(out + 8, h->high64);
}

/* --- safety of the directory and the store -------------------------- */

/* Refuses (PC_EUNSAFE) what another user owns or others can write: they
 * could plant or swap entries our outputs would be copied from (OpenSSH's
 * StrictModes, for keys). The directory the user named may be reached
 * through a symlink; the store and its engine files may not.
 */
static int check_private(const struct stat *st) {
  if (st->st_uid != geteuid() || (st->st_mode & 022) != 0)
    return PC_EUNSAFE;
  return 0;
}

/* The store and SQLite's files beside it (which it makes with the store's
 * mode and owner): each absent, or a private regular file of ours.
 */
static int check_files(const char *path) {
  static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
  char p[4096];
  size_t i;

  for (i = 0; i < PC__ARRAY_SIZE(sfx); i++) {
    struct stat st;
    if ((size_t)snprintf(p, sizeof(p), "%s%s", path, sfx[i]) >= sizeof(p))
      return -ENAMETOOLONG;
    if (lstat(p, &st) != 0) {
      if (errno == ENOENT)
        continue;
      return PC__ERRNO();
    }
    /* A link is never followed (refused as unsafe); anything else not a
     * regular file (a FIFO would hang a reader) is no store of ours.
     */
    if (S_ISLNK(st.st_mode))
      return PC_EUNSAFE;
    if (!S_ISREG(st.st_mode))
      return PC_ESTORE;
    if (check_private(&st) != 0)
      return PC_EUNSAFE;
  }
  return 0;
}

/* A store at path for the writer: what is there judged (storeid.h); made
 * (whole, then renamed in) when nothing is, or when an empty file is.
 * Checked like the directory (check_files) before and after. 0 with *kind,
 * or a negative code.
 */
static int writable_store(const char *path, pc__store_kind_t *kind) {
  struct stat st;
  int err;

  if (lstat(path, &st) != 0) {
    if (errno != ENOENT)
      return PC__ERRNO();
    if ((err = pc__store_make(path, 0)) != 0)
      return err;
  }
  if ((err = check_files(path)) != 0 ||
      (err = pc__store_identify(path, kind)) != 0)
    return err;
  if (*kind != PC__STORE_EMPTY)
    return 0;
  if ((err = pc__store_make(path, 1)) != 0 || (err = check_files(path)) != 0 ||
      (err = pc__store_identify(path, kind)) != 0)
    return err;
  return *kind == PC__STORE_OURS ? 0 : PC_ESTORE;
}

/* --- connections ------------------------------------------------------ */

static int open_db(const pc__store_t *c, int writer, sqlite3 **out) {
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
              (writer ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY);
  char *uri = NULL;
  sqlite3 *db = NULL;
  int rc;

  if (c->read_only) {
    if ((uri = pc__store_ro_uri(c->path)) == NULL)
      return -ENOMEM;
    flags |= SQLITE_OPEN_URI;
  }
  rc = sqlite3_open_v2(uri != NULL ? uri : c->path, &db, flags, NULL);
  free(uri);
  if (rc != SQLITE_OK) {
    int err = pc__store_err(db, rc);
    sqlite3_close(db);
    return err;
  }
  sqlite3_busy_timeout(db, BUSY_MS);
  sqlite3_extended_result_codes(db, 0);
  *out = db;
  return 0;
}

static void reader_free(reader_t *rd) {
  sqlite3_blob_close(rd->blob);
  sqlite3_finalize(rd->get);
  sqlite3_close(rd->db);
  XXH3_freeState(rd->xs);
  free(rd);
}

static reader_t *reader_get(pc__store_t *c) {
  reader_t *rd;

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
  if ((rd->xs = XXH3_createState()) == NULL || open_db(c, 0, &rd->db) != 0 ||
      sqlite3_exec(rd->db, "PRAGMA mmap_size = " MMAP_SIZE, NULL, NULL, NULL) !=
          SQLITE_OK ||
      sqlite3_prepare_v3(
          rd->db,
          "SELECT e.id, e.used, p.lim, p.sum, length(p.data), "
          "CASE WHEN length(p.data) <= " PC__STR(
              INLINE_MAX) " THEN p.data END "
                          "FROM entry e JOIN payload p ON p.id = e.id "
                          "WHERE e.key = ?1",
          -1, SQLITE_PREPARE_PERSISTENT, &rd->get, NULL) != SQLITE_OK) {
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
static void reader_put(pc__store_t *c, reader_t *rd) {
  sqlite3_blob_close(rd->blob);
  rd->blob = NULL;
  sqlite3_reset(rd->get);
  uv_mutex_lock(&c->mu);
  rd->next_free = c->free_readers;
  c->free_readers = rd;
  uv_mutex_unlock(&c->mu);
}

/* --- the queue -------------------------------------------------------- */

/* Takes op (owned), or frees it when the cache is closing. */
static void enqueue(pc__store_t *c, op_t *o) {
  int wake;

  o->next = NULL;
  uv_mutex_lock(&c->mu);
  *c->q_tail = o;
  c->q_tail = &o->next;
  c->q_bytes += o->len;
  c->q_ops++;
  wake = c->q_bytes >= c->flush_bytes || c->q_ops >= FLUSH_OPS;
  if (wake)
    uv_cond_signal(&c->wake);
  uv_mutex_unlock(&c->mu);
}

static void queue_small(pc__store_t *c, int kind, int64_t id,
                        const unsigned char key[KEYLEN]) {
  op_t *o;
  if (c->read_only || (o = calloc(1, sizeof(*o))) == NULL)
    return;
  o->kind = kind;
  o->id = id;
  memcpy(o->key, key, KEYLEN);
  enqueue(c, o);
}

/* --- the writer ------------------------------------------------------- */

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

static int step_done(sqlite3_stmt *s) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static int apply_put(pc__store_t *c, const op_t *o, int64_t now) {
  int64_t id;
  int rc;

  /* A new key is one index descent. Another run (or this one, for a bad
   * entry) may have stored this key: then the new bytes replace it whole.
   */
  sqlite3_bind_blob(c->ins_e, 1, o->key, KEYLEN, SQLITE_STATIC);
  sqlite3_bind_int64(c->ins_e, 2, now);
  sqlite3_bind_int64(c->ins_e, 3, (sqlite3_int64)o->len);
  if ((rc = step_done(c->ins_e)) != SQLITE_OK)
    return rc;
  if (sqlite3_changes(c->wdb) == 0) {
    sqlite3_bind_blob(c->find, 1, o->key, KEYLEN, SQLITE_STATIC);
    if ((rc = sqlite3_step(c->find)) == SQLITE_ROW)
      id = sqlite3_column_int64(c->find, 0);
    sqlite3_reset(c->find);
    sqlite3_clear_bindings(c->find);
    if (rc != SQLITE_ROW)
      return rc == SQLITE_DONE ? SQLITE_CORRUPT : rc;
    sqlite3_bind_int64(c->del_e, 1, id);
    sqlite3_bind_int64(c->del_p, 1, id);
    if ((rc = step_done(c->del_e)) != SQLITE_OK ||
        (rc = step_done(c->del_p)) != SQLITE_OK)
      return rc;
    sqlite3_bind_blob(c->ins_e, 1, o->key, KEYLEN, SQLITE_STATIC);
    sqlite3_bind_int64(c->ins_e, 2, now);
    sqlite3_bind_int64(c->ins_e, 3, (sqlite3_int64)o->len);
    if ((rc = step_done(c->ins_e)) != SQLITE_OK)
      return rc;
  }
  id = sqlite3_last_insert_rowid(c->wdb);
  sqlite3_bind_int64(c->ins_p, 1, id);
  sqlite3_bind_int64(c->ins_p, 2, o->lim);
  sqlite3_bind_blob(c->ins_p, 3, o->sum, 16, SQLITE_STATIC);
  sqlite3_bind_blob64(c->ins_p, 4, o->data != NULL ? (void *)o->data : "",
                      o->len, SQLITE_STATIC);
  return step_done(c->ins_p);
}

static int apply(pc__store_t *c, const op_t *o, int64_t now) {
  int rc;

  switch (o->kind) {
  case OP_PUT:
    return apply_put(c, o, now);
  case OP_TOUCH:
    sqlite3_bind_int64(c->touch, 1, o->id);
    sqlite3_bind_int64(c->touch, 2, now);
    return step_done(c->touch);
  default: /* OP_DROP: only if the id still holds that key */
    sqlite3_bind_int64(c->drop, 1, o->id);
    sqlite3_bind_blob(c->drop, 2, o->key, KEYLEN, SQLITE_STATIC);
    if ((rc = step_done(c->drop)) != SQLITE_OK)
      return rc;
    if (sqlite3_changes(c->wdb) == 0)
      return SQLITE_OK;
    sqlite3_bind_int64(c->del_p, 1, o->id);
    return step_done(c->del_p);
  }
}

/* One transaction for the whole batch. Best effort: a batch that cannot
 * be committed (disk full, another run holding the lock past BUSY_MS) is
 * dropped whole, which the next run sees as misses.
 */
static void commit(pc__store_t *c, op_t *batch) {
  int64_t now = (int64_t)time(NULL);
  int rc;
  op_t *o;

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

/* The first column of sql's first row into *v (-1 when no row). An SQLite
 * result code.
 */
static int query_int(sqlite3 *db, const char *sql, int64_t *v) {
  sqlite3_stmt *s;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);

  *v = -1;
  if (rc != SQLITE_OK)
    return rc;
  if ((rc = sqlite3_step(s)) == SQLITE_ROW)
    *v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Least recently used first (by the hour, TOUCH_AGE; then oldest id)
 * until the payloads fit; then VACUUM when a quarter of the file is free
 * pages, so what CI uploads is near the payload's size. A VACUUM another
 * run's reader blocks is left to a later trim.
 */
static int do_trim(pc__store_t *c, uint64_t max_bytes) {
  sqlite3_stmt *s = NULL;
  int64_t total, pages, free_pages;
  int rc;

  if ((rc = query_int(c->wdb, "SELECT coalesce(sum(bytes), 0) FROM entry",
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
      if ((rc = step_done(c->del_e)) == SQLITE_OK)
        rc = step_done(c->del_p);
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
  if (query_int(c->wdb, "PRAGMA page_count", &pages) == SQLITE_OK &&
      query_int(c->wdb, "PRAGMA freelist_count", &free_pages) == SQLITE_OK &&
      pages > 0 && free_pages * 4 > pages)
    sqlite3_exec(c->wdb, "VACUUM", NULL, NULL, NULL);
  return 0;
}

static void writer_main(void *arg) {
  pc__store_t *c = arg;

  uv_mutex_lock(&c->mu);
  for (;;) {
    op_t *batch, *o;
    uint64_t gen, bytes = 0;
    int trim, kicked;
    while (!c->closing && c->done_gen == c->flush_gen &&
           c->q_bytes < c->flush_bytes && c->q_ops < FLUSH_OPS)
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
      op_t *next = o->next;
      bytes += o->kind == OP_PUT ? o->len : 0;
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

/* --- open and close --------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t key_prefix(const unsigned char *key) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--)
    v = v << 8 | key[i];
  return v;
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
    if (k == NULL || sqlite3_column_bytes(s, 0) != KEYLEN)
      continue;
    if (c->nkeys == cap) {
      size_t ncap = cap ? cap * 2 : 4096;
      uint64_t *n = realloc(c->keys, ncap * sizeof(*n));
      if (n == NULL)
        goto fail;
      c->keys = n;
      cap = ncap;
    }
    c->keys[c->nkeys++] = key_prefix(k);
  }
  sqlite3_finalize(s);
  if (c->nkeys > 0) /* qsort(NULL, 0) is undefined, however harmless */
    qsort(c->keys, c->nkeys, sizeof(*c->keys), cmp_u64);
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
  int rc, err;

  if ((err = open_db(c, 1, &c->wdb)) != 0 ||
      (err = pc__store_stamp(c->wdb, kind)) != 0)
    return err;
  /* WAL: readers (workers, other runs) never wait for the writer, and a
   * commit needs no fsync; NORMAL keeps the store whole through a crash
   * or power loss (the last commits may be lost: misses, never bad bytes).
   */
  rc = sqlite3_exec(c->wdb,
                    "PRAGMA journal_mode = WAL;"
                    "PRAGMA synchronous = NORMAL;"
                    "PRAGMA mmap_size = " MMAP_SIZE ";",
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
    err = check_files(c->path);
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
    if ((err = writable_store(c->path, &kind)) != 0 ||
        (err = open_writer(c, kind)) != 0)
      goto fail;
    if (uv_thread_create(&c->writer, writer_main, c) != 0) {
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
  reader_t *rd;
  size_t i;

  if (c == NULL)
    return;
  if (c->writer_on) {
    uv_mutex_lock(&c->mu);
    c->closing = 1;
    uv_cond_signal(&c->wake);
    uv_mutex_unlock(&c->mu);
    uv_thread_join(&c->writer);
  }
  /* Readers first: the last connection to close checkpoints the WAL into
   * the store and removes the -wal and -shm files.
   */
  while ((rd = c->all_readers) != NULL) {
    c->all_readers = rd->next_all;
    reader_free(rd);
  }
  {
    sqlite3_stmt **st[] = {&c->find,  &c->del_e, &c->del_p, &c->ins_e,
                           &c->ins_p, &c->touch, &c->drop};
    for (i = 0; i < PC__ARRAY_SIZE(st); i++)
      sqlite3_finalize(*st[i]);
  }
  sqlite3_close(c->wdb);
  free(c->keys);
  uv_cond_destroy(&c->wake);
  uv_cond_destroy(&c->done);
  uv_mutex_destroy(&c->mu);
  free(c->path);
  free(c);
}

/* --- workers' side ---------------------------------------------------- */

/* Runs the payload (in memory at mem, else streamed from rd->blob) through
 * the checksum. 1 when it matches.
 */
static int verify(reader_t *rd, const unsigned char key[KEYLEN], int64_t lim,
                  const void *sum, const unsigned char *mem, uint64_t len) {
  unsigned char got[16], *buf = NULL;
  XXH3_state_t *s = rd->xs;
  XXH128_hash_t h;
  uint64_t off;
  int ok = 0;

  entry_sum_start(s, key, lim);
  if (mem != NULL) {
    XXH3_128bits_update(s, mem, (size_t)len);
  } else {
    if (len > 0 && (buf = malloc(CHUNK)) == NULL)
      goto out;
    for (off = 0; off < len;) {
      size_t n = len - off < CHUNK ? (size_t)(len - off) : CHUNK;
      if (sqlite3_blob_read(rd->blob, buf, (int)n, (int)off) != SQLITE_OK)
        goto out;
      XXH3_128bits_update(s, buf, n);
      off += n;
    }
  }
  h = XXH3_128bits_digest(s);
  sum_bytes(&h, got);
  ok = memcmp(got, sum, 16) == 0;
out:
  free(buf);
  return ok;
}

int pc__store_get(pc__store_t *c, const pc__store_key_t *k,
                  pc__store_hit_t *hit) {
  unsigned char key[KEYLEN];
  reader_t *rd;
  int64_t id, used, lim;
  const void *sum;
  const unsigned char *mem = NULL;
  int ok = 0;

  memset(hit, 0, sizeof(*hit));
  make_key(c, k, key);
  if (c->keys_loaded) {
    uint64_t p = key_prefix(key);
    if (c->nkeys == 0 ||
        bsearch(&p, c->keys, c->nkeys, sizeof(*c->keys), cmp_u64) == NULL)
      return 0;
  }
  if ((rd = reader_get(c)) == NULL)
    return 0;
  /* One snapshot from the lookup to the last byte copied: the statement
   * stays on its row (its read transaction open) until the release.
   */
  sqlite3_bind_blob(rd->get, 1, key, KEYLEN, SQLITE_STATIC);
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
  if (hit->len <= INLINE_MAX &&
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
    queue_small(c, OP_DROP, id, key);
    goto out;
  }
  ok = 1;
  if ((int64_t)time(NULL) - used > TOUCH_AGE)
    queue_small(c, OP_TOUCH, id, key);
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

int pc__store_put(pc__store_t *c, const pc__store_key_t *k, int kept,
                  const unsigned char *mem, int fd, uint64_t len,
                  uint64_t limit) {
  op_t *o = NULL;
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
   * (entry_sum_start()'s stream over the same bytes gives the same sum).
   */
  if (!reserved || (o = malloc(sizeof(*o) + KEYLEN + 8 + (size_t)n)) == NULL)
    goto out;
  memset(o, 0, sizeof(*o));
  head = (unsigned char *)(o + 1);
  o->data = n > 0 ? head + KEYLEN + 8 : NULL;
  o->kind = OP_PUT;
  o->len = n;
  o->lim = kept ? -1 : (limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
  make_key(c, k, o->key);
  memcpy(head, o->key, KEYLEN);
  put64(head + KEYLEN, (uint64_t)o->lim);
  if (mem != NULL) {
    memcpy(head + KEYLEN + 8, mem, (size_t)n);
  } else {
    while (done < n) {
      ssize_t r =
          pread(fd, head + KEYLEN + 8 + done, (size_t)(n - done), (off_t)done);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        goto out;
      done += (uint64_t)r;
    }
  }
  h = XXH3_128bits(head, KEYLEN + 8 + (size_t)n);
  sum_bytes(&h, o->sum);
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
