/* The walk: PATHs -> entries, one at a time (pc__walk_next).
 *
 * It owns the directories still to read (a stack), the set of those
 * entered (a loop, or two links to one directory, is entered once), and
 * the sorted listing of the one being read. It says what is there and
 * nothing more: which entry is a source is select.h's to say, what to do
 * with it run.c's, and a directory is entered only when the run asks
 * (pc__walk_enter), having statted it.
 *
 * Every directory is opened relative to its parent's descriptor, by its
 * name alone, and through no symlink unless --follow asked for that: a
 * directory swapped for a link mid-walk is not entered, and no path the
 * walk opens grows with the tree's depth (no PATH_MAX). Descriptors stay
 * few whatever the depth (walk.c: WALK_FDS).
 */
#ifndef PC_WALK_H
#define PC_WALK_H

#include "common/common.h"
#include "walk/select.h"

/* One PATH, as the run splits them (run.c). */
typedef struct pc__root {
  char *dir;     /* directory to open; "" means the current one */
  char *label;   /* as the manifest names it */
  char *file;    /* for a file PATH: its base name, else NULL */
  int fd;        /* `dir`, O_PATH: the walk and jobs open below it; the
                    run's (setup.c closes it), lent to the walk and jobs */
  int fd_shared; /* fd is an earlier root's (the same dir): not closed */
  int fd_err;    /* why fd is -1: the walk reports it and skips the root */
  int skip;      /* the cache's directory or below it: never walked */
} pc__root_t;

typedef struct pc__walk pc__walk_t;
struct pc__walk_node;

/* One entry, valid until the next pc__walk_next() call. */
typedef struct pc__entry {
  uint32_t root;    /* index of its PATH */
  int dfd;          /* the directory holding it, for *at() calls: the
                       walk's, valid until the next call */
  const char *name; /* its name there */
  size_t len;
  unsigned char dtype; /* the listing's DT_*; DT_UNKNOWN for a file PATH */
  const char *dfull;   /* the directory as messages name it ("site/css") */
  const char *drel;    /* the directory below its root ("css"; "" at top) */
  pc__devino_t dir;    /* the directory's identity */
  pc__listing_t ls;    /* the directory's sorted listing, at this entry */
  int has_ls;          /* 0 for a file PATH: no listing */
  /* On an error return: the directory it is about (the walk goes on), or
   * NULL (it cannot: ENOMEM).
   */
  const char *path;
  unsigned opened;            /* directories opened (or tried) for this call */
  int end;                    /* the walk is over: no entry */
  struct pc__walk_node *node; /* the walk's: for pc__walk_enter() */
} pc__entry_t;

/* A walk over `roots` (kept, not copied: they outlive it). Directory PATHs
 * are walked in their order, after every file PATH; roots marked `skip`
 * are not walked at all. `follow`: symlinks to
 * directories are part of the tree. 0 or -ENOMEM.
 */
int pc__walk_new(pc__walk_t **w, const pc__root_t *roots, uint32_t nroots,
                 int follow);

/* The next entry into *e: 0 with the entry, or with e->end set when the
 * walk is over; or a negative code: about the directory e->path names
 * when that is not NULL (it is not read; the walk goes on), else the walk
 * cannot go on. At most one directory is opened per call: 0 with e->name
 * NULL when it gave nothing (empty, entered before, a symlink by now), so
 * that a tree of empty directories is walked a slice at a time too;
 * e->opened counts it.
 */
int pc__walk_next(pc__walk_t *w, pc__entry_t *e);

/* Asks for the entry last returned, a directory (or with `follow` a link to
 * one), to be walked: after its own directory is done, before the
 * directories asked for before it (a stack). Entered only when it still is
 * a directory reached without a symlink (unless `follow`), and not entered
 * before. 0 or -ENOMEM.
 */
int pc__walk_enter(pc__walk_t *w, const pc__entry_t *e);

/* Closes and frees everything; NULL is fine. */
void pc__walk_free(pc__walk_t *w);

/* 1 if the directory open at fd is `dir` or lies below it (climbing
 * "..", by device and inode), 0 if not or when that cannot be told.
 */
int pc__walk_below(int fd, pc__devino_t dir);

#endif /* PC_WALK_H */
