/* Django's staticfiles.json (ManifestStaticFilesStorage: {"paths":
 * {name: hashed name}, "version": "1.x", ...}), read to pair a file of
 * this release with its predecessor by their one logical name
 * (docs/deltas.md): the file at hashed name H of a PATH whose manifest
 * gives H for name N is paired with the file a --dictionary-from DIR's
 * manifest gives for N. Another program's format, parsed here only, as it
 * is read (a chunk at a time, nothing kept but the names, within a budget
 * of memory: an earlier release is input too, and may be anyone's);
 * anything else, hostile or cut short, is refused whole.
 */
#ifndef PC_DJMANIFEST_H
#define PC_DJMANIFEST_H

#include "common/common.h"

struct pc__root;

/* The name Django writes its manifest under, in STATIC_ROOT. */
#define PC__DJMANIFEST_NAME "staticfiles.json"
/* A manifest over this many bytes is refused (-EFBIG): some 300,000 files. */
#define PC__DJMANIFEST_MAX ((size_t)64 << 20)

typedef struct pc__djpair {
  const char *name;   /* the logical name ("css/app.css"), in pool */
  const char *hashed; /* its hashed name ("css/app.3f2a9c1e4b7d.css") */
} pc__djpair_t;

/* One manifest, read-only once parsed. */
typedef struct pc__djman {
  pc__djpair_t *byname;    /* sorted by name */
  pc__djpair_t **byhashed; /* sorted by hashed name; one given for two
                              names is in neither (no pairing) */
  size_t n, nhashed;
  char *pool;   /* every string, NUL-terminated */
  uint64_t mem; /* what it holds (bytes) */
} pc__djman_t;

/* Parses text[0..len) into *m (zeroed first). 0, PC_EDJMANIFEST (not JSON
 * as RFC 8259 and jansson take it, not an object with "version"
 * "1.<digits>" and "paths" an object of non-empty strings, another member
 * an array or an object, a key given twice in the object or in "paths", a
 * name holding a NUL byte) or -ENOMEM; on failure *m holds nothing.
 */
int pc__djman_parse(pc__djman_t *m, const char *text, size_t len);

/* Reads and parses the manifest at dirfd/name (a regular file, at most
 * PC__DJMANIFEST_MAX bytes; with `nofollow`, its last component not a
 * symlink), as it reads it, taking at most `budget` bytes of memory on
 * the way and after. 0, a negative errno (-ENOENT: none there),
 * PC_ENOTREG, -EFBIG, PC_EDJMEMORY (over the budget: nothing kept), or
 * what pc__djman_parse() returns.
 */
int pc__djman_read(pc__djman_t *m, int dirfd, const char *name, int nofollow,
                   uint64_t budget);

/* The hashed name the manifest gives `name`, or NULL. */
const char *pc__djman_hashed(const pc__djman_t *m, const char *name);

/* The logical name whose hashed name is `hashed`, or NULL. */
const char *pc__djman_name(const pc__djman_t *m, const char *hashed);

void pc__djman_free(pc__djman_t *m);

/* A run's manifests: each --dictionary-from DIR's (its --django-manifest,
 * else DIR/staticfiles.json when there is one) and, when one of those was
 * read, each PATH's: a directory PATH's PATH/staticfiles.json, names its
 * files by their path below it; a file PATH's is ./staticfiles.json, which
 * names it by its path as given (the Django storage runs in STATIC_ROOT
 * with the names Django collected).
 */
typedef struct pc__djset {
  int any;         /* a DIR's manifest was read */
  uint64_t budget; /* the most they may hold together (bytes) */
  uint64_t mem;    /* what they hold */
  pc__djman_t old[PC_DICT_DIRS_MAX];
  pc__djman_t *cur; /* nroots + 1: each directory PATH's, then ./'s */
  uint32_t nroots;
  const struct pc__root *roots; /* the run's, borrowed */
} pc__djset_t;

typedef void (*pc__djset_err_t)(void *ctx, const char *path, int err);

/* Reads the manifests of `o`'s dict_dirs (open at dirfd[], -1 for one not
 * open) and of the run's roots, all of them within `budget` bytes. A
 * manifest that cannot be read, is not one, or is over what is left of
 * the budget (PC_EDJMEMORY) is told to `err` (a DIR/staticfiles.json or
 * PATH's that is absent is not) and left out: those files are paired by
 * name. 0 or -ENOMEM.
 */
int pc__djset_open(pc__djset_t *d, const pc_options_t *o, const int *dirfd,
                   const struct pc__root *roots, uint32_t nroots,
                   uint64_t budget, pc__djset_err_t err, void *ctx);

void pc__djset_free(pc__djset_t *d);

/* The predecessor's path below DIR `dir` of the file at rel below root
 * `root`, by the manifests, or NULL (no manifest names it: the name rules
 * decide).
 */
const char *pc__djset_find(const pc__djset_t *d, unsigned dir, uint32_t root,
                           const char *rel);

#endif /* PC_DJMANIFEST_H */
