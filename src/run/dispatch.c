/* The walk's entries, dispatched (run.h).
 *
 * walk.h says what is there, select.h what it is; here each entry becomes
 * what it is to the run: a directory handed back to the walk, a job for
 * the scheduler, a record, or nothing (our own outputs and temps, another
 * shard's files). Loop thread only. It writes the run's `walk` part
 * (run.h); a job it makes goes to run.c's pc__take_fn (the schedule is
 * the loop's), anything counted to record.c.
 */
#include "run/run.h"

#include "work/incremental.h"
#include "common/names.h"
#include "fs/out.h"
#include "work/worker.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/* A file to compress, into the scheduler's units. Takes ownership of job. */
static void push_job(pc__run_t *r, pc__job_t *j) {
  j->unit.weight = j->size;
  j->unit.mem = pc__work_mem(j);
  pc__record_queued(r, j->size);
  r->walk.take(r, j);
}

/* A file's predecessor in each --dictionary-from directory, and the delta
 * outputs its directory's listing shows beside it (docs/deltas.md): what
 * the incremental check compares and the job then takes.
 */
typedef struct pairing {
  const pc__dictfile_t *preds[PC_DICT_DIRS_MAX];
  char **old; /* owned, NULL-terminated, or NULL */
} pairing_t;

static void pairing_free(pairing_t *pg) {
  char **n;

  for (n = pg->old; n != NULL && *n != NULL; n++)
    free(*n);
  free(pg->old);
  pg->old = NULL;
}

/* 0 or -ENOMEM. Without deltas too: a file compressed again leaves none
 * of its old deltas (they decode to its old bytes).
 */
static int pair(const pc__run_t *r, pairing_t *pg, uint32_t root,
                const pc__sel_entry_t *se) {
  size_t dirlen = se->rel_len > se->len ? se->rel_len - se->len - 1 : 0;
  unsigned d;

  memset(pg, 0, sizeof(*pg));
  for (d = 0; r->cfg.deltas != 0 && d < r->dicts.ndirs; d++)
    pg->preds[d] =
        pc__dictset_find(&r->dicts, d, root, se->rel, dirlen, se->name);
  return pc__select_old_deltas(se, &pg->old);
}

/* The job takes the pairing. */
static void pairing_give(pairing_t *pg, pc__job_t *j) {
  memcpy(j->preds, pg->preds, sizeof(j->preds));
  j->old_deltas = pg->old;
  pg->old = NULL;
}

/* The earlier manifest's record of this file when it still holds
 * (incremental.h), its deltas too, else NULL.
 */
static const pc__prev_rec_t *
is_unchanged(pc__run_t *r, const pc__entry_t *e, const char *rel,
             const struct stat *st, unsigned absent, const pairing_t *pg) {
  const pc__prev_rec_t *p;
  int odfd = e->dfd;
  if (r->cfg.spec.output_dir != NULL) {
    /* Outputs the mirror cannot tell of are not current. */
    if (r->walk.mirror.state == PC__MIRROR_ERROR)
      return NULL;
    odfd = r->walk.mirror.fd;
  }
  p = pc__incremental_lookup(r->prev, &r->walk.prev_hint, r->cfg.spec.formats,
                             e->root, rel, odfd, e->name, st, absent);
  if (p != NULL && !pc__deltas_current(r->prev, p, &r->cfg, pg->preds, pg->old,
                                       odfd, e->name, st))
    return NULL;
  return p;
}

/* The enabled formats whose output the listing of its outputs' directory
 * lacks (select.h); with --output-dir and a mirror that could not be
 * opened, none: each job looks, and reports why it cannot.
 */
static unsigned absent_of(const pc__run_t *r, const pc__sel_entry_t *se) {
  if (r->cfg.spec.output_dir != NULL &&
      r->walk.mirror.state == PC__MIRROR_ERROR)
    return 0;
  return pc__select_absent(&r->sel, se);
}

/* --output-dir over more than one PATH: 1 when the file at se->rel may
 * have its outputs under DIR, 0 when a file found before under another
 * PATH has that path (the outputs are that one's: this one fails,
 * PC_EOUTTWICE). The walk is the one writer of the set: no race decides.
 */
static int claim_outputs(pc__run_t *r, const pc__sel_entry_t *se) {
  int taken, err;

  if (r->cfg.spec.output_dir == NULL || r->nroots < 2)
    return 1;
  if ((err = pc__relset_claim(&r->walk.rels, se->rel, se->rel_len, &taken)) !=
      0) {
    pc__record_fatal(r, err);
    return 1; /* the run ends: no record either way */
  }
  return taken;
}

/* 0 when the outputs of the entry's directory may be written where they
 * go (beside it, or with --output-dir its mirror, when that exists), else
 * PC_ENOWRITE, the code its files fail with before any of them is read.
 * The directory is looked at once, when the walk comes to it, and said
 * once: one line for the directory, before any of its files is compressed,
 * not one per output after compressing them all. A dry run writes nothing,
 * so it finds nothing unwritable.
 */
static int out_dir_ok(pc__run_t *r, const pc__entry_t *e) {
  int fd = e->dfd;
  char *label;

  if (r->cfg.dry_run)
    return 0;
  if (r->walk.wdir_known && r->walk.wdir.dev == e->dir.dev &&
      r->walk.wdir.ino == e->dir.ino)
    return r->walk.wdir_err;
  r->walk.wdir_known = 1;
  r->walk.wdir = e->dir;
  r->walk.wdir_err = 0;
  if (r->cfg.spec.output_dir !=
      NULL) /* a mirror still to make is the jobs' to report */
    fd = r->walk.mirror.state == PC__MIRROR_OPEN ? r->walk.mirror.fd : -1;
  if ((fd < 0 && fd != AT_FDCWD) || pc__out_writable(fd) == 0)
    return 0;
  r->walk.wdir_err = PC_ENOWRITE;
  label = r->cfg.spec.output_dir != NULL && e->drel[0]
              ? pc__path_join(r->cfg.spec.output_dir, e->drel)
          : r->cfg.spec.output_dir != NULL
              ? pc__strdup(r->cfg.spec.output_dir)
              : pc__strdup(e->dfull[0] ? e->dfull : ".");
  pc__run_error(r, label, PC_ENOWRITE);
  free(label);
  return r->walk.wdir_err;
}

/* A regular file (per the listing) that the earlier manifest records and
 * that passes every filter: handed to a worker without a stat, which
 * checks it there (job.h). 1 when it was; *full is then the job's.
 */
static int take_unstatted(pc__run_t *r, const pc__entry_t *e,
                          const pc__sel_entry_t *se, char **full) {
  pairing_t pg;
  const pc__prev_rec_t *p;
  struct stat st;
  pc__job_t *j;

  /* The record first: a new file then costs one lookup here, not every
   * filter twice.
   */
  if ((p = pc__prev_next(r->prev, e->root, se->rel, &r->walk.prev_hint)) ==
          NULL ||
      p->size == 0 || pc__select_file(&r->sel, se, NULL) != PC__SEL_SOURCE ||
      out_dir_ok(r, e) != 0) /* statted here: unchanged, or failed */
    return 0;
  /* Its path taken: the statted path records the error. */
  if (!claim_outputs(r, se))
    return 0;
  /* Scheduled by its recorded size and mtime until the worker knows. */
  memset(&st, 0, sizeof(st));
  st.st_size = (off_t)p->size;
  st.st_mtim.tv_sec = (time_t)(p->mtime_ns / 1000000000);
  st.st_mtim.tv_nsec = (long)(p->mtime_ns % 1000000000);
  j = pc__job_new(*full, strlen(*full) - se->rel_len, e->root,
                  r->roots[e->root].fd, &st, 0, &r->cfg);
  *full = NULL; /* the job owns it now, even when NULL came back */
  if (j == NULL) {
    pc__record_fatal(r, -ENOMEM);
    return 1;
  }
  j->prev = p;
  j->absent = absent_of(r, se);
  if (pair(r, &pg, e->root, se) != 0) {
    pc__job_free(j);
    pc__record_fatal(r, -ENOMEM);
    return 1;
  }
  pairing_give(&pg, j);
  push_job(r, j);
  return 1;
}

/* A file that passed every filter, statted as *st: a job, or a record when
 * there is nothing to do. Takes *full and *rel (NULL afterwards when
 * taken).
 */
static void take_source(pc__run_t *r, const pc__entry_t *e,
                        const pc__sel_entry_t *se, const struct stat *st,
                        char **full, char **rel) {
  unsigned absent = absent_of(r, se);
  pc_skip_t why = pc__select_size(&r->sel, (uint64_t)st->st_size);
  const pc__prev_rec_t *prev;
  pairing_t pg;
  pc__job_t *j;

  if (pair(r, &pg, e->root, se) != 0) {
    pc__record_fatal(r, -ENOMEM);
    return;
  }
  /* No output, and none there to remove as stale: a record is all. */
  if (why != PC_SKIP_NONE &&
      (absent & r->cfg.spec.formats) == r->cfg.spec.formats && pg.old == NULL) {
    pc__record_skip(r, e->root, *rel, *full, why, st, 0);
    *rel = NULL;
  } else if (why == PC_SKIP_NONE && r->prev != NULL &&
             (prev = is_unchanged(r, e, *rel, st, absent, &pg)) != NULL) {
    pc__record_unchanged(r, e->root, *full, prev);
  } else if (out_dir_ok(r, e) != 0) { /* said once for its directory */
    pc__record_skip(r, e->root, *rel, *full, PC_SKIP_NONE, st, PC_ENOWRITE);
    *rel = NULL;
  } else {
    j = pc__job_new(*full, strlen(*full) - se->rel_len, e->root,
                    r->roots[e->root].fd, st, se->link, &r->cfg);
    *full = NULL; /* the job owns it now, even when NULL came back */
    if (j == NULL) {
      pc__record_fatal(r, -ENOMEM);
    } else {
      j->absent = absent;
      j->skip = why;
      pairing_give(&pg, j);
      push_job(r, j);
    }
  }
  pairing_free(&pg);
}

/* A file, or a symlink to one (se->link, *st its target's): what the
 * filter chain says it is. Takes *full and *rel as take_source() does.
 */
static void take_file(pc__run_t *r, const pc__entry_t *e,
                      const pc__sel_entry_t *se, const struct stat *st,
                      char **full, char **rel) {
  pc_skip_t why = PC_SKIP_NONE;

  switch (pc__select_file(&r->sel, se, st)) {
  case PC__SEL_SOURCE:
    if (!claim_outputs(r, se)) {
      pc__record_skip(r, e->root, *rel, *full, PC_SKIP_NONE, st, PC_EOUTTWICE);
      *rel = NULL;
      return;
    }
    take_source(r, e, se, st, full, rel);
    return;
  case PC__SEL_TEMP_OURS:
    /* A killed run's is removed; one that another run is writing right
     * now stays (pc__out_reap). With --output-dir the source tree is
     * never written: its temps are reaped in the mirror (mirror_reap).
     */
    if (!r->cfg.dry_run && r->cfg.spec.output_dir == NULL)
      pc__out_reap(e->dfd, e->name, &r->start);
    return;
  case PC__SEL_SPECIAL:
    why = PC_SKIP_SPECIAL;
    break;
  case PC__SEL_EXCLUDED:
    why = PC_SKIP_EXCLUDED;
    break;
  case PC__SEL_EXTENSION:
    why = PC_SKIP_EXTENSION;
    break;
  default: /* ours, or another shard's: no record */
    return;
  }
  pc__record_skip(r, e->root, *rel, *full, why, st, 0);
  *rel = NULL;
}

/* A symlink: a directory behind it is part of the tree only with
 * --follow; a file behind it is taken as the file; a broken one is a
 * record. 1 when that settled it, 0 with *st its target's stat. Takes
 * *rel when it records it.
 */
static int take_link(pc__run_t *r, const pc__entry_t *e,
                     const pc__sel_entry_t *se, struct stat *st, char **rel,
                     const char *full) {
  struct stat t;
  if (fstatat(e->dfd, e->name, &t, 0) != 0) {
    if (pc__select_in_shard(&r->sel, se->rel, se->rel_len)) {
      pc__record_skip(r, e->root, *rel, full, PC_SKIP_BROKEN_LINK, NULL, 0);
      *rel = NULL;
    }
    return 1;
  }
  if (S_ISDIR(t.st_mode)) {
    if (r->opts->follow && !pc__select_skip_dir(&r->sel, &t) &&
        pc__walk_enter(r->walk.it, e) != 0)
      pc__record_fatal(r, -ENOMEM);
    return 1;
  }
  *st = t;
  return 0;
}

/* --output-dir: the temps of ours in the mirror just listed that a
 * killed run left (a live run's stay: pc__out_reap), as the walk reaps
 * them in place. Only this shard's: the filter chain says which.
 */
static void mirror_reap(pc__run_t *r, const pc__entry_t *e) {
  const pc__mirror_t *m = &r->walk.mirror;
  size_t k;

  for (k = 0; k < m->ls.n && !r->cfg.dry_run; k++) {
    const char *name = m->names[k];
    pc__sel_entry_t se;
    char *rel;
    if (!pc__is_temp_name(name))
      continue;
    if ((rel = pc__path_join(e->drel, name)) == NULL) {
      pc__record_fatal(r, -ENOMEM);
      return;
    }
    memset(&se, 0, sizeof(se));
    se.name = name;
    se.len = strlen(name);
    se.rel = rel;
    se.rel_len = strlen(rel);
    if (pc__select_file(&r->sel, &se, NULL) == PC__SEL_TEMP_OURS)
      pc__out_reap(m->fd, name, &r->start);
    free(rel);
  }
}

/* --output-dir: the mirror of the entry's directory, looked at when the
 * walk moves to another directory. 0, or the code that ends the run (in
 * res.fatal too).
 */
static int mirror_for(pc__run_t *r, const pc__entry_t *e) {
  int looked, err;

  if ((err = pc__mirror_at(&r->walk.mirror, r->cfg.out_fd, e->drel, &looked)) !=
      0) {
    pc__record_fatal(r, err);
    return err;
  }
  if (looked && r->walk.mirror.state == PC__MIRROR_OPEN)
    mirror_reap(r, e);
  return r->res.fatal;
}

/* One entry of the walk. */
static void dispatch(pc__run_t *r, const pc__entry_t *e) {
  char *full = NULL, *rel = NULL;
  pc__sel_entry_t se;
  pc__verdict_t v;
  struct stat st;
  size_t listed;

  memset(&se, 0, sizeof(se));
  se.name = e->name;
  se.len = e->len;
  se.ls = e->has_ls ? &e->ls : NULL;
  se.dir = e->dir;
  if (r->cfg.spec.output_dir != NULL) {
    if (mirror_for(r, e) != 0)
      return;
    se.outs = &r->walk.mirror.ls;
  }
  v = pc__select_early(&r->sel, &se, e->dtype == DT_REG);
  if (v == PC__SEL_MANIFEST_TEMP && !r->cfg.dry_run)
    pc__out_reap(e->dfd, e->name, &r->start); /* a live one stays */
  if (v != PC__SEL_NEXT)
    return;
  full = pc__path_join(e->dfull, e->name);
  rel = pc__path_join(e->drel, e->name);
  if (full == NULL || rel == NULL) {
    pc__record_fatal(r, -ENOMEM);
    goto out;
  }
  se.rel = rel;
  se.rel_len = strlen(rel);
  if (!pc__select_listed(&r->sel, rel, &listed))
    goto out; /* --files-from names neither it nor a file below it */
  if (e->dtype == DT_REG && listed != SIZE_MAX)
    r->walk.only_seen[listed] = 1;
  if (e->dtype == DT_REG && r->prev != NULL && take_unstatted(r, e, &se, &full))
    goto out;
  if (fstatat(e->dfd, e->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) /* gone since the listing: nothing to do */
      pc__record_skip(r, e->root, rel, full, PC_SKIP_NONE, NULL, PC__ERRNO()),
          rel = NULL;
    goto out;
  }
  if (listed != SIZE_MAX && !S_ISDIR(st.st_mode))
    r->walk.only_seen[listed] = 1;
  else if (listed == SIZE_MAX && r->sel.only != NULL && !S_ISDIR(st.st_mode))
    goto out; /* a file where --files-from names files below a directory */
  if (S_ISLNK(st.st_mode)) {
    se.link = 1;
    if (take_link(r, e, &se, &st, &rel, full))
      goto out;
  } else if (S_ISDIR(st.st_mode)) {
    if (!pc__select_skip_dir(&r->sel, &st) &&
        pc__walk_enter(r->walk.it, e) != 0)
      pc__record_fatal(r, -ENOMEM);
    goto out;
  }
  take_file(r, e, &se, &st, &full, &rel);
out:
  free(full);
  free(rel);
}

/* --files-from: each name the walk did not find as a file is an error
 * about it, once the walk is over. */
static void unlisted(pc__run_t *r) {
  size_t k;

  for (k = 0; k < r->sel.nonly && r->res.fatal == 0; k++) {
    char *full;
    if (r->walk.only_seen[k])
      continue;
    if ((full = pc__path_join(r->roots[0].dir, r->sel.only[k])) == NULL) {
      pc__record_fatal(r, -ENOMEM);
      return;
    }
    pc__run_error(r, full, -ENOENT);
    free(full);
  }
}

int pc__dispatch_open(pc__run_t *r, pc__take_fn *take) {
  r->walk.take = take;
  return pc__walk_new(&r->walk.it, r->roots, r->nroots, r->opts->follow);
}

/* Takes up to `budget` entries from the walk (a directory opened counts as
 * one): small enough slices that finished jobs are collected and new ones
 * submitted while a large tree is still being read. 1 when the walk is
 * over.
 */
int pc__dispatch_walk(pc__run_t *r, unsigned budget) {
  while (budget > 0 && r->res.fatal == 0) {
    pc__entry_t e;
    int ret = pc__walk_next(r->walk.it, &e);
    budget -= e.opened < budget ? e.opened : budget;
    if (ret == 0 && e.end) {
      unlisted(r);
      return 1;
    }
    if (ret < 0) {
      if (e.path != NULL)
        pc__run_error(r, e.path, ret);
      else
        pc__record_fatal(r, ret);
      continue;
    }
    if (e.name == NULL)
      continue; /* a directory opened that gave nothing */
    dispatch(r, &e);
    if (budget > 0)
      budget--;
  }
  return r->res.fatal != 0;
}
