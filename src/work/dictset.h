/* The files of earlier releases (--dictionary-from), listed once at the
 * run's setup on the loop thread, and a file's predecessor in each
 * (docs/deltas.md): the file at the same path, else the one of the same
 * directory whose name has the same key once its content hash is set
 * aside (dictname.h), the newest by mtime when several have it; before
 * both, the file two Django manifests give one name (djmanifest.h). Read-only
 * once built: jobs hold pointers into it for the whole run.
 */
#ifndef PC_DICTSET_H
#define PC_DICTSET_H

#include "common/common.h"
#include "manifest/djmanifest.h"

typedef struct pc__dictfile {
  char *rel;        /* its path below its directory (owned) */
  char *key;        /* rel's directory, '/', its name's key (owned) */
  uint64_t size;    /* as listed: the worker checks it again */
  int64_t mtime_ns; /* as listed: which of several with one key */
  uint32_t dir;     /* index in the run's --dictionary-from list */
  int link;         /* a symlink: never read (PC_DSKIP_LINK) */
} pc__dictfile_t;

typedef struct pc__dictset {
  unsigned ndirs;
  int fd[PC_DICT_DIRS_MAX]; /* O_PATH, the run's; -1 when it failed */
  pc__dictfile_t *files;    /* sorted by (dir, rel) */
  size_t n, cap;
  pc__dictfile_t **bykey;   /* sorted by (dir, key, newest first, rel) */
  uint64_t mem; /* what the listing and the Django manifests hold */
  const char *const *tmpls; /* the name templates (dictname.h) */
  size_t ntmpls;
  pc__djset_t dj; /* Django's staticfiles.json of the DIRs and PATHs */
} pc__dictset_t;

/* What listing met and could not list (path, code), told as it goes;
 * the rest of the listing goes on.
 */
typedef void (*pc__dictset_err_t)(void *ctx, const char *path, int err);

/* Opens and lists the directories of `o` (dict_dirs, dict_names) into s.
 * A DIR that does not exist has no files (its fd -1: a first build has no
 * earlier release); one that cannot be opened fails the whole (*bad: its
 * index), before any work. What is below a DIR that cannot be listed is
 * told to `err` and left out; the listing goes on. Then reads the Django
 * manifests of the DIRs and of the run's roots (kept, not copied: they
 * outlive s) within `budget` bytes, djmanifest.h. 0 or a negative code.
 */
int pc__dictset_open(pc__dictset_t *s, const pc_options_t *o,
                     const struct pc__root *roots, uint32_t nroots,
                     uint64_t budget, pc__dictset_err_t err, void *ctx,
                     unsigned *bad);

void pc__dictset_free(pc__dictset_t *s);

/* The predecessor in directory `dir` of the file at rel below root `root`
 * (its directory rel[0..dirlen), its base name `base`), or NULL: the file
 * the Django manifests pair it with, else by the name rules.
 */
const pc__dictfile_t *pc__dictset_find(const pc__dictset_t *s, unsigned dir,
                                       uint32_t root, const char *rel,
                                       size_t dirlen, const char *base);

#endif /* PC_DICTSET_H */
