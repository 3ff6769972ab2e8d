/* Which entries of the walk are sources: the one filter chain.
 *
 * Pure: every answer comes from the entry's name, its path below the root,
 * its directory's sorted listing, and what the caller statted, never from
 * a system call. The walk (walk.h) says what is there, this says what it
 * is to the run, and the run (run.c) acts on it: no file is read, made or
 * removed here.
 */
#ifndef PC_SELECT_H
#define PC_SELECT_H

#include "common/common.h"

#include <sys/stat.h>

/* A directory's listing, sorted by name bytes (strcmp), and where in it the
 * entry being looked at is.
 */
typedef struct pc__listing {
  char *const *names;
  size_t n, at;
} pc__listing_t;

/* What the filters know: set up by pc__select_init() from the options, the
 * manifest and cache fields by the setters below once the run has looked
 * at them. Read-only to everyone else.
 */
typedef struct pc__select {
  const pc_options_t *opts; /* include/exclude, --shard, --min-size */
  unsigned formats;         /* enabled formats: their outputs are ours */
  const char *const *skip_ext;
  size_t *skip_len; /* owned: strlen of each skip_ext entry */
  size_t nskip_ext;
  /* The manifest's base name and its directory: a file of that name there,
   * or a temp of it, is never an input. man_base NULL: no manifest file.
   */
  const char *man_base;
  size_t man_base_len;
  pc__devino_t man_dir;
  /* The manifest file as it was at the start (man_known): never an input. */
  int man_known;
  pc__devino_t man;
  /* Directories never entered: the cache's and --output-dir's, should they
   * lie in a PATH.
   */
  pc__devino_t skip_dirs[2];
  size_t nskip_dirs;
  /* The cache's directory (cache_known): when it is a PATH itself, the
   * store's files in it (PC__STORE_FILE and SQLite's -wal, -shm,
   * -journal beside it) are never inputs.
   */
  int cache_known;
  pc__devino_t cache_dir;
  /* pc_options_t.only, sorted (strcmp), each once: owned, the names not. */
  const char **only;
  size_t nonly;
} pc__select_t;

/* What an entry is to the run. */
typedef enum pc__verdict {
  PC__SEL_SOURCE = 0,    /* a file to compress (or check) */
  PC__SEL_OWN_OUTPUT,    /* FILE.gz/.br/.zst beside FILE: ignored */
  PC__SEL_MANIFEST,      /* the manifest itself: ignored */
  PC__SEL_MANIFEST_TEMP, /* a temp of the manifest: reaped when a killed
                            run's, else ignored */
  PC__SEL_CACHE,         /* the cache's store, or a file SQLite keeps
                            beside it: ignored */
  PC__SEL_TEMP,          /* a temp of another shard's output: ignored */
  PC__SEL_TEMP_OURS,     /* a temp of an output of this shard: reaped when a
                            killed run's */
  PC__SEL_OTHER_SHARD,   /* another shard's file: ignored, no record */
  PC__SEL_SPECIAL,       /* not a regular file: a skip record */
  PC__SEL_EXCLUDED,      /* --exclude, or outside --include: a skip record */
  PC__SEL_EXTENSION,     /* skip list, or an output's extension: a record */
  PC__SEL_NEXT           /* pc__select_early(): no verdict yet, stat it */
} pc__verdict_t;

/* One entry as the filters see it. */
typedef struct pc__sel_entry {
  const char *name; /* its base name */
  size_t len;
  const char *rel; /* its path below the root */
  size_t rel_len;
  const pc__listing_t *ls; /* its directory's listing; NULL for a file PATH */
  /* --output-dir: the listing of the directory its outputs go to, searched
   * whole (its `at` is not used); NULL: in place, its own directory's.
   */
  const pc__listing_t *outs;
  pc__devino_t dir; /* the directory holding it */
  int link;         /* a symlink: the stat given is its target's */
} pc__sel_entry_t;

/* Takes the options (kept, not copied) and the skip list in force (the
 * options' or the default one). 0 or -ENOMEM.
 */
int pc__select_init(pc__select_t *s, const pc_options_t *o,
                    const char *const *skip_ext, size_t nskip_ext);
void pc__select_free(pc__select_t *s);

/* The manifest's base name (kept, not copied) and the identity of its
 * directory, where a file of that name or a temp of it is never an input;
 * dir NULL: the directory does not exist, nothing there to meet.
 */
void pc__select_set_manifest(pc__select_t *s, const char *base,
                             const pc__devino_t *dir);

/* The manifest file as it was at the start: never an input, under any
 * name.
 */
void pc__select_set_manifest_file(pc__select_t *s, pc__devino_t id);

/* A directory the walk never enters (--output-dir's). */
void pc__select_skip(pc__select_t *s, pc__devino_t dir);

/* The cache's directory: never entered, and when it is a PATH itself, the
 * store's files in it are never inputs.
 */
void pc__select_set_cache_dir(pc__select_t *s, pc__devino_t dir);

/* Before any stat: PC__SEL_OWN_OUTPUT for a regular file (per the listing's
 * d_type, `is_reg`) named FILE.ext beside FILE (on a tree compressed before,
 * half the entries, each a stat saved), PC__SEL_MANIFEST(_TEMP) for the
 * manifest's name or a temp of it in its directory, PC__SEL_CACHE for the
 * cache store's files in the cache's directory, else PC__SEL_NEXT.
 */
pc__verdict_t pc__select_early(const pc__select_t *s, const pc__sel_entry_t *e,
                               int is_reg);

/* The chain for a file that is not a directory (a symlink to a file comes
 * with its target's stat). `st` NULL: not statted, a regular file per the
 * listing (the manifest's (dev, ino) is then the worker's to check).
 */
pc__verdict_t pc__select_file(const pc__select_t *s, const pc__sel_entry_t *e,
                              const struct stat *st);

/* 1 if the directory statted as `st` is one the walk never enters. */
int pc__select_skip_dir(const pc__select_t *s, const struct stat *st);

/* With pc_options_t.only (--files-from): 1 when the entry at `rel` (its
 * path below the root) may be taken or entered: a name listed (*k: its
 * index in s->only) or a directory on the path of one (*k SIZE_MAX); 0 when
 * it is neither, and the walk passes it by. Without: 1, *k SIZE_MAX.
 */
int pc__select_listed(const pc__select_t *s, const char *rel, size_t *k);

/* 1 if the file at `rel` (its path below the root) is this run's to take:
 * always without --shard.
 */
int pc__select_in_shard(const pc__select_t *s, const char *rel, size_t len);

/* The enabled formats whose output name (NAME.ext) the listing of its
 * outputs' directory (e->outs, else e->ls) lacks; none without a listing
 * (a file PATH in place).
 */
unsigned pc__select_absent(const pc__select_t *s, const pc__sel_entry_t *e);

/* The delta outputs (NAME.<16 hex>.dcb/.dcz) the listing of the entry's
 * outputs' directory holds for it, as a NULL-terminated array the caller
 * owns (each name and the array freed), or NULL when none or no listing.
 * 0 or -ENOMEM.
 */
int pc__select_old_deltas(const pc__sel_entry_t *e, char ***names);

/* Why a source of `size` bytes gets no output: PC_SKIP_EMPTY,
 * PC_SKIP_MIN_SIZE, or PC_SKIP_NONE.
 */
pc_skip_t pc__select_size(const pc__select_t *s, uint64_t size);

#endif /* PC_SELECT_H */
