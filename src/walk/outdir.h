/* --output-dir on the loop thread: the mirror of the source directory the
 * walk is in, listed once (outdir.c). Its listing, not the source
 * directory's, says which outputs are absent and holds the temps a killed
 * run left; the worker side (making the mirror, writing into it) is
 * out.h's pc__out_dir() and work.h's pc__work_out_open().
 */
#ifndef PC_OUTDIR_H
#define PC_OUTDIR_H

#include "common/common.h"
#include "common/index.h"
#include "walk/select.h"

enum {
  PC__MIRROR_NONE = 0, /* not looked at yet */
  PC__MIRROR_MISSING,  /* no such directory: every output is absent */
  PC__MIRROR_OPEN,     /* fd and ls are its */
  PC__MIRROR_ERROR     /* cannot be opened (a symlink planted there, ...):
                          the jobs look for themselves and report it */
};

typedef struct pc__mirror {
  int state;        /* PC__MIRROR_* */
  int fd;           /* the mirror directory while PC__MIRROR_OPEN, else -1:
                       m's (pc__mirror_at() and _free() close it) */
  char *drel;       /* its path below DIR: a source directory's below its root
                       (under any root: one mirror serves every PATH) */
  pc__listing_t ls; /* sorted (strcmp); empty unless PC__MIRROR_OPEN */
  char **names;     /* owned: ls.names */
} pc__mirror_t;

#define PC__MIRROR_INIT                                                        \
  { PC__MIRROR_NONE, -1, NULL, {NULL, 0, 0}, NULL }

/* Points m at the mirror below `out_fd` (-1: there is no DIR, a dry run's)
 * of a source directory at `drel` below its root: opened through no
 * symlink, never made, and listed. *looked 0 when m was there already
 * (file PATHs of one directory, or roots in turn, list it once), 1 when it
 * was just looked at (the caller reaps the temps it lists). 0 or -ENOMEM.
 */
int pc__mirror_at(pc__mirror_t *m, int out_fd, const char *drel, int *looked);

/* Closes and frees; m is PC__MIRROR_INIT again. */
void pc__mirror_free(pc__mirror_t *m);

/* The paths below their PATH of the files whose outputs this run manages,
 * when there is more than one PATH: two files with one such path (css/a.css
 * under two PATHs) would write, refresh and remove the same outputs under
 * DIR. Loop thread only. A zeroed struct is an empty set.
 */
typedef struct pc__relset {
  pc__index_t ix;
  char **rels; /* owned */
  size_t n, cap;
} pc__relset_t;

/* Claims rel[0..len) for one file: *taken 1 when it was free (now taken),
 * 0 when another file has it. 0 or -ENOMEM.
 */
int pc__relset_claim(pc__relset_t *s, const char *rel, size_t len, int *taken);

void pc__relset_free(pc__relset_t *s);

#endif /* PC_OUTDIR_H */
