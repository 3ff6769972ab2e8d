/* Is DIR/cache.sqlite the cache's store? (storeid.c)
 *
 * The store says so itself: SQLite's header carries an application id
 * (PC__STORE_APP_ID, "prec") and a schema version (user_version), both
 * read before anything is written, without a lock and without a file made
 * beside it. Anything else at that name (another program's database, a
 * file that is no database) is left byte for byte as it is: PC_ESTORE.
 *
 * Two other things pass: an empty file (a store just created, by this run
 * or by one killed before it wrote a byte), made a store here; and a store
 * of precompress 0.9.0, which wrote no id: recognised by its schema, the
 * very tables this version makes (compared with an in-memory database made
 * from the same statements), and stamped with the id and version.
 */
#ifndef PC_STOREID_H
#define PC_STOREID_H

#include "common.h"

#include <sqlite3.h>

#define PC__STORE_APP_ID 1886545251 /* 0x70726563, "prec" */
#define PC__STORE_VERSION 1         /* bump with the schema */

typedef enum pc__store_kind {
  PC__STORE_OURS = 0, /* id and version ours */
  PC__STORE_EMPTY,    /* 0 bytes: to be made a store */
  PC__STORE_UNSTAMPED /* an earlier version's store: to be stamped */
} pc__store_kind_t;

/* Looks at the file at `path` (a regular file of ours: store.c checked)
 * through a read-only, lock-free connection (SQLite's immutable mode) that
 * writes nothing anywhere. 0 with *kind set, PC_ESTORE for anything that is
 * not (or not yet) a store of this version, or a negative code.
 */
int pc__store_identify(const char *path, pc__store_kind_t *kind);

/* With `db` open read-write on that file, before any other statement
 * (journal mode included): makes an empty file a store (page size, id,
 * version, tables) or stamps an unstamped one, in one exclusive
 * transaction that looks again first (another run may have done it
 * meanwhile, or put something else there). 0 or a negative code
 * (PC_ESTORE when what it finds is not ours after all).
 */
int pc__store_stamp(sqlite3 *db, pc__store_kind_t kind);

/* Our code for SQLite's rc, called right after the failing call on db. */
int pc__store_err(sqlite3 *db, int rc);

/* "file:PATH?immutable=1": a read that takes no lock and makes no -wal or
 * -shm beside the store. malloc'd, or NULL.
 */
char *pc__store_ro_uri(const char *path);

#endif /* PC_STOREID_H */
