/* Is DIR/cache.sqlite the cache's store? (storeid.c)
 *
 * The store says so itself: SQLite's header carries an application id
 * (PC__STORE_APP_ID, "prec") and a schema version (user_version), both
 * read before anything is written, without a lock and without a file made
 * beside it. Anything else at that name (another program's database, a
 * file that is no database) is left byte for byte as it is: PC_ESTORE.
 *
 * Two other things pass: an empty file (which holds nothing: 0.9.0 made
 * the store's file empty first, and a run killed then left it so),
 * replaced by a new store; and a store of precompress 0.9.0, which wrote
 * no id: recognised by its schema, the very tables this version makes
 * (compared with an in-memory database made from the same statements),
 * and stamped with the id and version. A new store is made whole in a temp
 * file and renamed into place (pc__store_make), never made in place.
 */
#ifndef PC_STOREID_H
#define PC_STOREID_H

#include "common/common.h"

#include <sqlite3.h>

#define PC__STORE_APP_ID 1886545251 /* 0x70726563, "prec" */
#define PC__STORE_VERSION 1         /* bump with the schema */

/* The store's file name inside --cache-dir. */
#define PC__STORE_FILE "cache.sqlite"

typedef enum pc__store_kind {
  PC__STORE_OURS = 0, /* id and version ours */
  PC__STORE_EMPTY,    /* 0 bytes: to be replaced by a new store */
  PC__STORE_UNSTAMPED /* an earlier version's store: to be stamped */
} pc__store_kind_t;

/* Looks at the file at `path` (a regular file of ours: store.c checked)
 * through a read-only, lock-free connection (SQLite's immutable mode) that
 * writes nothing anywhere. 0 with *kind set, PC_ESTORE for anything that is
 * not (or not yet) a store of this version, or a negative code.
 */
int pc__store_identify(const char *path, pc__store_kind_t *kind);

/* With `db` open read-write on that file, before any other statement
 * (journal mode included): stamps an unstamped store with the id and
 * version, in one exclusive transaction that looks again first (another
 * run may have done it meanwhile). Nothing for any other kind. 0 or a
 * negative code (PC_ESTORE when what it finds is not ours after all).
 */
int pc__store_stamp(sqlite3 *db, pc__store_kind_t kind);

/* Makes a new store at `path`, whole before it has the name: made in a
 * temp file beside it (".cache.sqlite.XXXXXX.tmp", locked while it
 * lives), page size, id, version and tables in one transaction with no
 * journal, synced, then renamed to `path`: over what is there with
 * `replace` (an empty file), else only where nothing is (another run's
 * store made meanwhile is kept, ours dropped). A store thus never exists
 * half made under its name, and its id is in the file itself, not only
 * in a WAL. 0 or a negative code.
 */
int pc__store_make(const char *path, int replace);

/* Removes temps of pc__store_make() that a killed run left in `dir`
 * (unlocked, made before now). Best effort.
 */
void pc__store_reap(const char *dir);

/* The first column of sql's first row into *v (0 when no row). An SQLite
 * result code.
 */
int pc__store_query_int(sqlite3 *db, const char *sql, int64_t *v);

/* Our code for SQLite's rc, called right after the failing call on db. */
int pc__store_err(sqlite3 *db, int rc);

/* "file:PATH?immutable=1": a read that takes no lock and makes no -wal or
 * -shm beside the store. malloc'd, or NULL.
 */
char *pc__store_ro_uri(const char *path);

/* The store and SQLite's files beside it (which it makes with the store's
 * mode and owner): each absent, or a regular file of ours that others
 * cannot write. 0, PC_EUNSAFE (a link, or another's or others' file: they
 * could plant or swap entries our outputs would be copied from),
 * PC_ESTORE (not a regular file), or the error met looking.
 */
int pc__store_check_files(const char *path);

/* A store at path for the writer: what is there judged
 * (pc__store_identify); made (whole, then renamed in) when nothing is, or
 * when an empty file is. Checked (pc__store_check_files) before and
 * after. 0 with *kind, or a negative code.
 */
int pc__store_writable(const char *path, pc__store_kind_t *kind);

/* How long a connection waits for another run's lock before giving up. */
#define PC__STORE_BUSY_MS 30000

/* A connection to the store at `path`: read-write for the writer, else
 * read-only; with read_only (a dry run) immutable, taking no lock and
 * making no file (pc__store_ro_uri). Never follows a link. 0 or a
 * negative code.
 */
int pc__store_connect(const char *path, int read_only, int writer,
                      sqlite3 **out);

#endif /* PC_STOREID_H */
