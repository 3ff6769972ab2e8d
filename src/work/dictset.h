/* The files of earlier releases (--dictionary-from), listed once at the
 * run's setup on the loop thread, and a file's predecessor in each
 * (docs/deltas.md): the file at the same path, else the one of the same
 * directory whose name has the same key once its content hash is set
 * aside (dictname.h), none when several have it; before both, the file
 * two Django manifests give one name (djmanifest.h). Read-only once built:
 * jobs hold pointers into it for the whole run.
 */
#ifndef PC_DICTSET_H
#define PC_DICTSET_H

#include "common/common.h"
#include "fs/reach.h"
#include "manifest/djmanifest.h"

#include <sys/stat.h>

/* A dictionary more than this many bytes is not used for a file of `size`
 * bytes (PC_DSKIP_LARGE), decided from the listing before it is read: what
 * a delta costs grows with its dictionary, not its file (zstd at level 19
 * takes some 0.8 s per MiB of dictionary, whatever the file's size), so a
 * release whose predecessors are far larger than its files (hard links to
 * one 64 MiB file) would cost seconds per file. Eight times the file is
 * more than a file's own predecessor is in any real release; the 64 KiB
 * leave small files their deltas at some 50 ms each at most.
 */
#define PC__DICT_LARGE(size) ((uint64_t)(size)*8 + ((uint64_t)64 << 10))

typedef struct pc__dictfile {
  char *rel;               /* its path below its directory (owned, but not an
                              ambiguous key's: its first file's) */
  char *key;               /* rel's directory, '/', its name's key (likewise) */
  uint64_t size;           /* as listed: what the memory estimate takes; the
                              worker reads no more (PC_DSKIP_CHANGED) */
  int64_t mtime_ns;        /* as listed: what the incremental check compares */
  uint32_t dir;            /* index in the run's --dictionary-from list */
  uint32_t amb;            /* 1 + the index in `amb` of its key's entry when
                              another file has its key, else 0 */
  unsigned char link;      /* a symlink: never read (PC_DSKIP_LINK) */
  unsigned char ambiguous; /* an ambiguous key's entry (PC_DSKIP_AMBIGUOUS):
                              what pairing by that key gives */
  pc__reach_t reach;       /* who could read it as listed, from DIR down */
} pc__dictfile_t;

typedef struct pc__dictset {
  unsigned ndirs;
  int fd[PC_DICT_DIRS_MAX]; /* O_PATH, the run's; -1 when it failed */
  pc__dictfile_t *files;    /* sorted by (dir, rel) */
  size_t n, cap;
  pc__dictfile_t **bykey; /* sorted by (dir, key, rel) */
  pc__dictfile_t *amb;    /* one per key two files or more have */
  size_t namb;
  uint64_t mem;             /* what the listing and the Django manifests hold */
  const char *const *tmpls; /* the name templates (dictname.h) */
  size_t ntmpls;
  pc__djset_t dj; /* Django's staticfiles.json of the DIRs and PATHs */
} pc__dictset_t;

/* What listing met and could not list (path, code), told as it goes;
 * the rest of the listing goes on.
 */
typedef void (*pc__dictset_err_t)(void *ctx, const char *path, int err);

/* Opens and lists the directories of `o` (dict_dirs, dict_names) into s.
 * Each DIR is resolved as resolve.h says (a symlink on its way another
 * account owns or could replace: PC_EUNSAFELINK). A DIR that does not
 * exist has no files (its fd -1: a first build has no earlier release);
 * one that cannot be opened or is refused fails the whole (*bad: its
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

/* Why predecessor p gets no delta for the file named `base` of `size`
 * bytes, as far as the listing tells before anything of p is read (the
 * worker judges again on what it opens): PC_DSKIP_LINK, _AMBIGUOUS, _NAME,
 * _PRIVATE (by `st`, the file's owner, group and bits; not judged when
 * st is NULL), _LARGE, _WINDOW; else PC_DSKIP_NONE.
 */
pc_delta_skip_t pc__dictset_skip(const pc__dictfile_t *p, const char *base,
                                 uint64_t size, const struct stat *st);

#endif /* PC_DICTSET_H */
