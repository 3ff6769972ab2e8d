/* The store's identity (storeid.h): what the file at DIR/cache.sqlite is,
 * found before anything writes to it, and the making of a new store.
 *
 * Nothing is written until this file has said what the file is, through a
 * connection that cannot write: were the writer's first statements
 * `journal_mode = WAL` and `CREATE TABLE IF NOT EXISTS`, another program's
 * database named cache.sqlite would get our tables and WAL mode before the
 * format check said it was not ours.
 */
#include "store/storeid.h"

#include "common/names.h"
#include "fs/out.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The schema. `entry` is small (key, last use, payload length) so that
 * refreshing a last use rewrites a few pages, never a payload; `payload`
 * is filled in rowid order (new ids only grow), which packs its pages.
 * `lim` is the rejection limit, or -1 for a payload. `meta` says format 1
 * as 0.9.0's stores do (which had no other mark). Bump PC__STORE_VERSION
 * for any change: a store of another version is refused, not misread.
 * The text is 0.9.0's, byte for byte: its stores are known by it.
 */
#define SCHEMA                                                                 \
  "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v INTEGER);"            \
  "INSERT OR IGNORE INTO meta VALUES('format', 1);"                            \
  "CREATE TABLE IF NOT EXISTS entry(id INTEGER PRIMARY KEY,"                   \
  " key BLOB NOT NULL UNIQUE, used INTEGER NOT NULL, bytes INTEGER NOT NULL);" \
  "CREATE TABLE IF NOT EXISTS payload(id INTEGER PRIMARY KEY,"                 \
  " lim INTEGER NOT NULL, sum BLOB NOT NULL, data BLOB NOT NULL);"

/* 16 KiB pages: a 1 KiB payload wastes less of a page's end than at 4 KiB
 * (store 1.15x its payload against 1.31x on 100,000 small .gz; 64 KiB
 * gains 3% more and reads slower). Only a new store takes it.
 */
#define DB_PAGE_SIZE "16384"

/* The id and the version, in the header's own fields. */
#define STAMP                                                                  \
  "PRAGMA application_id = " PC__STR(                                          \
      PC__STORE_APP_ID) ";"                                                    \
                        "PRAGMA user_version = " PC__STR(                      \
                            PC__STORE_VERSION) ";"

int pc__store_err(sqlite3 *db, int rc) {
  int sys = db != NULL ? sqlite3_system_errno(db) : 0;

  /* A failed system call says what it was (EMFILE, EIO): "damaged" only
   * when none did. SQLite records the errno of reads and writes, not of
   * every call (an unlink), hence errno as the fallback.
   */
  if (sys <= 0 && (rc & 0xff) != SQLITE_CORRUPT && (rc & 0xff) != SQLITE_NOTADB)
    sys = errno;

  switch (rc & 0xff) {
  case SQLITE_NOMEM:
    return -ENOMEM;
  case SQLITE_FULL:
    return -ENOSPC;
  case SQLITE_PERM:
  case SQLITE_AUTH:
  case SQLITE_READONLY:
    return -EACCES;
  case SQLITE_CANTOPEN:
  case SQLITE_IOERR:
    return sys > 0 ? -sys : -EIO;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return -EBUSY;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB:
    return PC_ESTORE;
  default:
    return sys > 0 ? -sys : PC_ESTORE;
  }
}

char *pc__store_ro_uri(const char *path) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(path), i;
  char *u = malloc(3 * n + 32), *p;

  if (u == NULL)
    return NULL;
  p = u + sprintf(u, "file:");
  for (i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)path[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
        (ch >= '0' && ch <= '9') || strchr("/-._~", ch) != NULL) {
      *p++ = (char)ch;
    } else {
      *p++ = '%';
      *p++ = hex[ch >> 4];
      *p++ = hex[ch & 15];
    }
  }
  strcpy(p, "?immutable=1");
  return u;
}

int pc__store_query_int(sqlite3 *db, const char *sql, int64_t *v) {
  sqlite3_stmt *s;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);

  *v = 0;
  if (rc != SQLITE_OK)
    return rc;
  if ((rc = sqlite3_step(s)) == SQLITE_ROW)
    *v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* What the database's schema holds, every object's kind, names and SQL
 * text, in name order, as one string into *out. An SQLite result code.
 */
static int schema_text(sqlite3 *db, pc__buf_t *out) {
  sqlite3_stmt *s;
  int rc = sqlite3_prepare_v2(db,
                              "SELECT type, name, tbl_name, sql FROM "
                              "sqlite_master ORDER BY name",
                              -1, &s, NULL);
  int col;

  if (rc != SQLITE_OK)
    return rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    for (col = 0; col < 4; col++) {
      const char *t = (const char *)sqlite3_column_text(s, col);
      if (pc__buf_puts(out, t != NULL ? t : "") != 0 ||
          pc__buf_append(out, "", 1) != 0) {
        sqlite3_finalize(s);
        return SQLITE_NOMEM;
      }
    }
  sqlite3_finalize(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* *is 1 if db holds exactly the tables SCHEMA makes and says format 1: a
 * store of 0.9.0's. 0 or a negative code.
 */
static int unstamped_store(sqlite3 *db, int *is) {
  pc__buf_t want = {0}, have = {0};
  sqlite3 *mem = NULL;
  int64_t format = 0;
  int rc, ret = 0;

  *is = 0;
  rc = sqlite3_open_v2(":memory:", &mem,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(mem, SCHEMA, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = schema_text(mem, &want);
  if (rc != SQLITE_OK) {
    ret = rc == SQLITE_NOMEM ? -ENOMEM : PC_ESTORE;
    goto out;
  }
  if ((rc = schema_text(db, &have)) != SQLITE_OK) {
    ret = pc__store_err(db, rc);
    goto out;
  }
  *is = have.len == want.len && memcmp(have.data, want.data, have.len) == 0 &&
        pc__store_query_int(db, "SELECT v FROM meta WHERE k = 'format'",
                            &format) == SQLITE_OK &&
        format == 1;
out:
  sqlite3_close(mem);
  pc__buf_free(&want);
  pc__buf_free(&have);
  return ret;
}

/* What the open database is: ours (id and version), an unstamped store,
 * or PC_ESTORE. The id first: another program's database with an id of
 * its own is not read further.
 */
static int judge(sqlite3 *db, pc__store_kind_t *kind) {
  int64_t id, version;
  int rc, err, is;

  if ((rc = pc__store_query_int(db, "PRAGMA application_id", &id)) !=
          SQLITE_OK ||
      (rc = pc__store_query_int(db, "PRAGMA user_version", &version)) !=
          SQLITE_OK)
    return pc__store_err(db, rc);
  if (id == PC__STORE_APP_ID) {
    *kind = PC__STORE_OURS;
    return version == PC__STORE_VERSION ? 0 : PC_ESTORE;
  }
  if (id != 0 || version != 0)
    return PC_ESTORE;
  if ((err = unstamped_store(db, &is)) != 0)
    return err;
  *kind = PC__STORE_UNSTAMPED;
  return is ? 0 : PC_ESTORE;
}

int pc__store_identify(const char *path, pc__store_kind_t *kind) {
  sqlite3 *db = NULL;
  struct stat st;
  char *uri;
  int rc, err;

  if (lstat(path, &st) != 0)
    return PC__ERRNO();
  if (st.st_size == 0) {
    *kind = PC__STORE_EMPTY;
    return 0;
  }
  if ((uri = pc__store_ro_uri(path)) == NULL)
    return -ENOMEM;
  rc = sqlite3_open_v2(uri, &db,
                       SQLITE_OPEN_READONLY | SQLITE_OPEN_URI |
                           SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                       NULL);
  free(uri);
  err = rc == SQLITE_OK ? judge(db, kind) : pc__store_err(db, rc);
  sqlite3_close(db);
  return err;
}

int pc__store_stamp(sqlite3 *db, pc__store_kind_t kind) {
  pc__store_kind_t now;
  int rc, err;

  if (kind != PC__STORE_UNSTAMPED)
    return 0;
  if ((rc = sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL)) != SQLITE_OK)
    return pc__store_err(db, rc);
  /* Looked at again inside the lock, WAL included (the identifying read
   * saw the file alone): another run may have stamped it meanwhile.
   */
  if ((err = judge(db, &now)) == 0 && now == PC__STORE_UNSTAMPED &&
      (rc = sqlite3_exec(db, STAMP, NULL, NULL, NULL)) != SQLITE_OK)
    err = pc__store_err(db, rc);
  if (err == 0 &&
      (rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL)) != SQLITE_OK)
    err = pc__store_err(db, rc);
  if (err != 0 && !sqlite3_get_autocommit(db))
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  return err;
}

/* Puts the made store (o's temp) at `path`: over an empty file, or where
 * nothing is, without replacing what another run put there meanwhile
 * (renameat2 RENAME_NOREPLACE; link() and unlink() where there is none).
 * 0, 1 when another run's store was there first (ours removed), or a
 * negative code.
 */
static int place(pc__out_t *o, const char *path, int replace) {
  int r;

  if (replace)
    return pc__out_finish(o, path);
#if defined(RENAME_NOREPLACE) && !PC_FORCE_PORTABLE
  r = renameat2(AT_FDCWD, o->tmp, AT_FDCWD, path, RENAME_NOREPLACE);
  if (r != 0 && (errno == EINVAL || errno == ENOSYS)) /* not on this fs */
#endif
  {
    r = link(o->tmp, path);
    if (r == 0)
      (void)unlink(o->tmp); /* a leftover is reaped: pc__store_reap() */
  }
  if (r != 0) {
    int err = errno == EEXIST ? 1 : PC__ERRNO();
    pc__out_discard(o);
    return err;
  }
  close(o->fd);
  o->fd = -1;
  free(o->tmp);
  o->tmp = NULL;
  return 0;
}

int pc__store_make(const char *path, int replace) {
  pc__out_t o = PC__OUT_INIT;
  sqlite3 *db = NULL;
  int rc, err;

  if ((err = pc__out_open_mode(&o, AT_FDCWD, path, 0600)) != 0)
    return err;
  /* The temp is ours alone: no journal, one transaction, then to disk
   * before it takes the store's name.
   */
  rc = sqlite3_open_v2(
      o.tmp, &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db,
                      "PRAGMA page_size = " DB_PAGE_SIZE ";"
                      "PRAGMA journal_mode = OFF;"
                      "BEGIN;" STAMP SCHEMA "COMMIT;",
                      NULL, NULL, NULL);
  err = rc == SQLITE_OK ? 0 : pc__store_err(db, rc);
  if (sqlite3_close(db) != SQLITE_OK && err == 0)
    err = PC_ESTORE;
  if (err == 0 && fdatasync(o.fd) != 0)
    err = PC__ERRNO();
  if (err != 0) {
    pc__out_discard(&o);
    return err;
  }
  err = place(&o, path, replace);
  return err == 1 ? 0 : err;
}

/* 1 when `name` is the temp of the store, ".cache.sqlite.XXXXXX.tmp". */
static int store_temp(const char *name) {
  size_t n;

  return pc__temp_of(name, strlen(name), &n) &&
         n == sizeof(PC__STORE_FILE) - 1 &&
         memcmp(name + 1, PC__STORE_FILE, n) == 0;
}

void pc__store_reap(const char *dir) {
  struct timespec now;
  struct dirent *d;
  int fd;
  DIR *ds;

  clock_gettime(CLOCK_REALTIME, &now);
  if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    return;
  if ((ds = fdopendir(fd)) == NULL) {
    close(fd);
    return;
  }
  /* Only names of our temps of the store; each removed when a killed
   * run's (pc__out_reap: unlocked, made before now).
   */
  while ((d = readdir(ds)) != NULL)
    if (store_temp(d->d_name))
      pc__out_reap(dirfd(ds), d->d_name, &now);
  closedir(ds);
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
int pc__store_check_files(const char *path) {
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
int pc__store_writable(const char *path, pc__store_kind_t *kind) {
  struct stat st;
  int err;

  if (lstat(path, &st) != 0) {
    if (errno != ENOENT)
      return PC__ERRNO();
    if ((err = pc__store_make(path, 0)) != 0)
      return err;
  }
  if ((err = pc__store_check_files(path)) != 0 ||
      (err = pc__store_identify(path, kind)) != 0)
    return err;
  if (*kind != PC__STORE_EMPTY)
    return 0;
  if ((err = pc__store_make(path, 1)) != 0 ||
      (err = pc__store_check_files(path)) != 0 ||
      (err = pc__store_identify(path, kind)) != 0)
    return err;
  return *kind == PC__STORE_OURS ? 0 : PC_ESTORE;
}

/* --- connections ------------------------------------------------------ */

int pc__store_connect(const char *path, int read_only, int writer,
                      sqlite3 **out) {
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW |
              (writer ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY);
  char *uri = NULL;
  sqlite3 *db = NULL;
  int rc;

  if (read_only) {
    if ((uri = pc__store_ro_uri(path)) == NULL)
      return -ENOMEM;
    flags |= SQLITE_OPEN_URI;
  }
  rc = sqlite3_open_v2(uri != NULL ? uri : path, &db, flags, NULL);
  free(uri);
  if (rc != SQLITE_OK) {
    int err = pc__store_err(db, rc);
    sqlite3_close(db);
    return err;
  }
  sqlite3_busy_timeout(db, PC__STORE_BUSY_MS);
  sqlite3_extended_result_codes(db, 0);
  *out = db;
  return 0;
}
