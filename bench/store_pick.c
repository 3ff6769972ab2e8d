/* Which embedded store for the content cache? Loads the same
 * payloads (the .gz outputs of a corpus, one per line on stdin) into LMDB
 * and into SQLite the way the cache would (16-byte content key plus the
 * shaping options, a checksum over key and payload, commits in batches),
 * then reads every entry back in another order, and reports the time of
 * each phase and the store's size on disk against the payload.
 *
 *   find DIR -name '*.gz' | store_pick lmdb|sqlite|sqlite-hashid|sqlite-norowid
 * STOREDIR
 *
 * Build: cc -O2 bench/store_pick.c -llmdb -lsqlite3 -lxxhash
 */
#include <fcntl.h>
#include <lmdb.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define BATCH_BYTES ((size_t)32 << 20)

typedef struct item {
  unsigned char key[24];
  unsigned char *val; /* 16-byte sum, then the payload */
  size_t len;
} item_t;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what, const char *why) {
  fprintf(stderr, "store_pick: %s: %s\n", what, why);
  exit(1);
}

static item_t *load(size_t *n, size_t *payload) {
  char line[4096];
  size_t cap = 0;
  item_t *v = NULL;
  *n = *payload = 0;
  while (fgets(line, sizeof(line), stdin) != NULL) {
    struct stat st;
    int fd;
    XXH128_hash_t h, sum;
    line[strcspn(line, "\n")] = '\0';
    if ((fd = open(line, O_RDONLY)) < 0 || fstat(fd, &st) != 0)
      die(line, "open");
    if (*n == cap) {
      cap = cap ? cap * 2 : 1024;
      if ((v = realloc(v, cap * sizeof(*v))) == NULL)
        die("realloc", "no memory");
    }
    h = XXH3_128bits(line, strlen(line));
    memcpy(v[*n].key, &h, 16);
    memcpy(v[*n].key + 16, "gz9-1234", 8);
    v[*n].len = 16 + (size_t)st.st_size;
    if ((v[*n].val = malloc(v[*n].len)) == NULL ||
        read(fd, v[*n].val + 16, (size_t)st.st_size) != st.st_size)
      die(line, "read");
    {
      XXH3_state_t *s = XXH3_createState();
      XXH3_128bits_reset(s);
      XXH3_128bits_update(s, v[*n].key, 24);
      XXH3_128bits_update(s, v[*n].val + 16, (size_t)st.st_size);
      sum = XXH3_128bits_digest(s);
      XXH3_freeState(s);
    }
    memcpy(v[*n].val, &sum, 16);
    *payload += (size_t)st.st_size;
    close(fd);
    (*n)++;
  }
  return v;
}

static int check(const unsigned char *key, const void *val, size_t len) {
  XXH128_hash_t sum;
  XXH3_state_t *s = XXH3_createState();
  int ok;
  XXH3_128bits_reset(s);
  XXH3_128bits_update(s, key, 24);
  XXH3_128bits_update(s, (const unsigned char *)val + 16, len - 16);
  sum = XXH3_128bits_digest(s);
  XXH3_freeState(s);
  ok = len >= 16 && memcmp(val, &sum, 16) == 0;
  return ok;
}

static void run_lmdb(const char *dir, item_t *v, size_t n) {
  MDB_env *env;
  MDB_dbi dbi;
  MDB_txn *t;
  size_t i = 0, bytes;
  double t0;
  int rc;

  if ((rc = mdb_env_create(&env)) != 0 ||
      (rc = mdb_env_set_mapsize(env, (size_t)4 << 30)) != 0 ||
      (rc = mdb_env_open(env, dir, MDB_NOMETASYNC | MDB_NOTLS, 0600)) != 0)
    die("mdb_env_open", mdb_strerror(rc));
  t0 = now();
  while (i < n) {
    mdb_txn_begin(env, NULL, 0, &t);
    mdb_dbi_open(t, NULL, 0, &dbi);
    for (bytes = 0; i < n && bytes < BATCH_BYTES; i++) {
      MDB_val k = {24, v[i].key}, d = {v[i].len, v[i].val};
      if ((rc = mdb_put(t, dbi, &k, &d, 0)) != 0)
        die("mdb_put", mdb_strerror(rc));
      bytes += v[i].len;
    }
    if ((rc = mdb_txn_commit(t)) != 0)
      die("mdb_txn_commit", mdb_strerror(rc));
  }
  printf("lmdb store %.3f s\n", now() - t0);
  t0 = now();
  for (i = n; i-- > 0;) {
    MDB_val k = {24, v[i].key}, d;
    mdb_txn_begin(env, NULL, MDB_RDONLY, &t);
    if (mdb_get(t, dbi, &k, &d) != 0 || !check(v[i].key, d.mv_data, d.mv_size))
      die("mdb_get", "miss");
    mdb_txn_abort(t);
  }
  printf("lmdb read %.3f s\n", now() - t0);
  mdb_env_close(env);
}

/* rowid: 0 a WITHOUT ROWID table keyed by the key, 1 a rowid table with a
 * UNIQUE index on the key, 2 the key's 63-bit hash as the rowid (no index;
 * the row keeps the whole key, so a collision is a miss).
 */
static void run_sqlite(const char *dir, item_t *v, size_t n, int rowid) {
  char path[4096];
  sqlite3 *db;
  sqlite3_stmt *ins, *get;
  size_t i = 0, bytes;
  double t0;

  snprintf(path, sizeof(path), "%s/cache.sqlite", dir);
  if (sqlite3_open(path, &db) != SQLITE_OK)
    die(path, sqlite3_errmsg(db));
  {
    char q[128];
    const char *ps = getenv("PAGE_SIZE");
    snprintf(q, sizeof(q), "PRAGMA page_size=%s", ps ? ps : "4096");
    sqlite3_exec(db, q, 0, 0, 0);
  }
  {
    char q[128];
    const char *jm = getenv("JOURNAL");
    snprintf(q, sizeof(q), "PRAGMA journal_mode=%s; PRAGMA synchronous=NORMAL;",
             jm ? jm : "WAL");
    sqlite3_exec(db, q, 0, 0, 0);
  }
  sqlite3_exec(
      db,
      rowid == 1   ? "CREATE TABLE e(id INTEGER PRIMARY KEY, k BLOB UNIQUE, "
                     "used INTEGER, v BLOB)"
      : rowid == 2 ? "CREATE TABLE e(id INTEGER PRIMARY KEY, k BLOB, "
                     "used INTEGER, v BLOB)"
                   : "CREATE TABLE e(k BLOB PRIMARY KEY, used INTEGER, "
                     "v BLOB) WITHOUT ROWID",
      0, 0, 0);
  if (rowid == 2) {
    sqlite3_prepare_v2(
        db, "INSERT OR REPLACE INTO e(id, k, used, v) VALUES(?4,?1,?2,?3)", -1,
        &ins, NULL);
    sqlite3_prepare_v2(db, "SELECT v FROM e WHERE id=?2", -1, &get, NULL);
  } else {
    sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO e(k, used, v) VALUES(?,?,?)",
                       -1, &ins, NULL);
    sqlite3_prepare_v2(db, "SELECT v FROM e WHERE k=?", -1, &get, NULL);
  }
  t0 = now();
  while (i < n) {
    sqlite3_exec(db, "BEGIN", 0, 0, 0);
    for (bytes = 0; i < n && bytes < BATCH_BYTES; i++) {
      sqlite3_bind_blob(ins, 1, v[i].key, 24, SQLITE_STATIC);
      sqlite3_bind_int64(ins, 2, (sqlite3_int64)i);
      sqlite3_bind_blob(ins, 3, v[i].val, (int)v[i].len, SQLITE_STATIC);
      if (rowid == 2)
        sqlite3_bind_int64(ins, 4,
                           (sqlite3_int64)(XXH3_64bits(v[i].key, 24) >> 1));
      if (sqlite3_step(ins) != SQLITE_DONE)
        die("insert", sqlite3_errmsg(db));
      sqlite3_reset(ins);
      bytes += v[i].len;
    }
    if (sqlite3_exec(db, "COMMIT", 0, 0, 0) != SQLITE_OK)
      die("commit", sqlite3_errmsg(db));
  }
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", 0, 0, 0);
  printf("sqlite-%d store %.3f s\n", rowid, now() - t0);
  t0 = now();
  for (i = n; i-- > 0;) {
    if (rowid == 2)
      sqlite3_bind_int64(get, 2,
                         (sqlite3_int64)(XXH3_64bits(v[i].key, 24) >> 1));
    else
      sqlite3_bind_blob(get, 1, v[i].key, 24, SQLITE_STATIC);
    if (sqlite3_step(get) != SQLITE_ROW ||
        !check(v[i].key, sqlite3_column_blob(get, 0),
               (size_t)sqlite3_column_bytes(get, 0)))
      die("select", "miss");
    sqlite3_reset(get);
  }
  printf("sqlite-%d read %.3f s\n", rowid, now() - t0);
  sqlite3_finalize(ins);
  sqlite3_finalize(get);
  sqlite3_close(db);
}

int main(int argc, char **argv) {
  size_t n, payload;
  item_t *v;

  if (argc != 3)
    die("usage",
        "store_pick lmdb|sqlite|sqlite-hashid|sqlite-norowid DIR <list");
  v = load(&n, &payload);
  printf("%zu entries, payload %zu bytes\n", n, payload);
  if (strcmp(argv[1], "lmdb") == 0)
    run_lmdb(argv[2], v, n);
  else
    run_sqlite(argv[2], v, n,
               strcmp(argv[1], "sqlite") == 0          ? 1
               : strcmp(argv[1], "sqlite-hashid") == 0 ? 2
                                                       : 0);
  return 0;
}
