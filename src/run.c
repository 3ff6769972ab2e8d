/* pc_run(): the loop thread's side of a run.
 *
 * The loop thread owns every piece of shared state here: the walk, the
 * heaps of pending units, the results and the counters. A unit is one file,
 * or up to PC__BATCH_FILES small files of one directory chained on the first.
 * Workers get one unit each through uv_queue_work() and touch nothing else;
 * after_work() brings it back to this thread, which records its files and
 * submits the next unit. libuv's queue is unbounded and first-in
 * first-out, so we keep at most `jobs` units in it and choose the next
 * ourselves (schedule.h: largest first, small files in units, within the
 * memory limit); schedule() here only hands what it picks to the pool.
 */
#include "run.h"

#include "store.h"
#include "codec.h"
#include "incremental.h"
#include "machine.h"
#include "out.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entries visited per loop iteration: small enough that finished jobs are
 * collected promptly while a huge directory is walked.
 */
#define WALK_BUDGET 256
#define PROGRESS_MS 200
/* Peak memory of a job (encoders and buffers) on the file alone. */
static uint64_t job_mem(const pc__run_t *r, const pc__job_t *j) {
  return pc__job_mem(&r->cfg, j->size);
}

static void progress(pc__run_t *r) {
  if (r->opts->on_progress != NULL)
    r->opts->on_progress(r->opts->data, &r->progress);
}

/* Counts a finished file, keeps its manifest line, tells the caller. Takes
 * ownership of rec->path.
 */
static void record(pc__run_t *r, pc__rec_t *rec, const char *full,
                   const char *err_path) {
  pc_totals_t *t = &r->totals;
  int f, kept = 0;

  t->files++;
  t->bytes += rec->size;
  for (f = 0; f < PC_NFORMATS; f++) {
    const pc_output_t *o = &rec->out[f];
    if (o->state == PC_OUT_KEPT) {
      kept = 1;
      t->fmt[f].files++;
      t->fmt[f].bytes_in += rec->size;
      t->fmt[f].bytes_out += o->size;
    }
    if (o->action == PC_ACT_CREATE || o->action == PC_ACT_REPLACE ||
        o->action == PC_ACT_REMOVE)
      t->changes++;
    if (o->action == PC_ACT_REMOVE)
      t->removed++;
  }
  if (rec->err != 0)
    t->failed++;
  else if (rec->unchanged)
    t->unchanged++;
  else if (rec->skip != PC_SKIP_NONE)
    t->skipped[rec->skip]++;
  else if (kept) {
    t->compressed++;
    t->deduped += rec->deduped != 0;
    t->cached += rec->cached != 0;
  } else
    t->skipped[PC_SKIP_RATIO]++;
  r->progress.files_done++;

  if (r->opts->on_file != NULL) {
    pc_file_t file;
    memset(&file, 0, sizeof(file)); /* out[] past PC_NFORMATS: unused */
    file.root = r->roots[rec->root].label;
    file.path = rec->path;
    file.fullpath = full;
    file.size = rec->size;
    file.mtime_ns = rec->mtime_ns;
    file.skip = rec->skip;
    file.unchanged = rec->unchanged;
    file.deduped = rec->deduped;
    file.cached = rec->cached;
    file.alone = rec->alone;
    file.err = rec->err;
    file.err_path = err_path;
    memcpy(file.out, rec->out, sizeof(rec->out));
    r->opts->on_file(r->opts->data, &file);
  }

  if ((r->opts->manifest == NULL && r->opts->manifest_write == NULL) ||
      r->cfg.dry_run) {
    if (!rec->borrowed)
      free(rec->path);
    return;
  }
  if (r->nrecs == r->caprecs) {
    size_t ncap = r->caprecs ? r->caprecs * 2 : 1024;
    pc__rec_t *n = realloc(r->recs, ncap * sizeof(*n));
    if (n == NULL) {
      if (!rec->borrowed)
        free(rec->path);
      r->fatal = -ENOMEM;
      return;
    }
    r->recs = n;
    r->caprecs = ncap;
  }
  r->recs[r->nrecs++] = *rec;
}

/* A file that gets no job (skipped, or failed before it could start).
 * Takes ownership of rel.
 */
static void skip_file(pc__run_t *r, uint32_t root, char *rel, const char *full,
                      pc_skip_t skip, const struct stat *st, int err) {
  pc__rec_t rec;

  memset(&rec, 0, sizeof(rec));
  rec.path = rel;
  rec.root = root;
  rec.skip = skip;
  rec.err = err;
  if (st != NULL && skip != PC_SKIP_SPECIAL) {
    rec.size = (uint64_t)st->st_size;
    rec.mtime_ns = pc__ns(st->st_mtim);
  }
  if (err != 0) {
    int f;
    for (f = 0; f < PC_NFORMATS; f++)
      if (r->cfg.formats & PC_FMT_BIT(f))
        rec.out[f].state = PC_OUT_FAILED;
  }
  r->progress.files_total++;
  record(r, &rec, full, full);
}

/* A file whose outputs are current per `prev`, the earlier manifest's
 * record: its line names the file by the record's own path.
 */
static void unchanged_file(pc__run_t *r, uint32_t root, const char *full,
                           const pc__prev_rec_t *prev) {
  pc__rec_t rec;
  int f;

  memset(&rec, 0, sizeof(rec));
  /* The same bytes as the walk's relative name: that is how it was found. */
  rec.path = (char *)pc__prev_path(r->prev, prev);
  rec.borrowed = 1;
  rec.root = root;
  rec.unchanged = 1;
  rec.size = prev->size;
  rec.mtime_ns = prev->mtime_ns;
  for (f = 0; f < PC_NFORMATS; f++) {
    rec.out[f].state = prev->out[f].state;
    rec.out[f].size = prev->out[f].size;
  }
  r->progress.files_total++;
  record(r, &rec, full, full);
}

/* An error about no one file (a directory that cannot be read). */
static void report_error(pc__run_t *r, const char *path, int err) {
  r->totals.errors++;
  if (r->opts->on_error != NULL)
    r->opts->on_error(r->opts->data, path, err);
}

/* Into the scheduler; a unit it cannot take is freed and the run ends
 * with ENOMEM.
 */
static void requeue(pc__run_t *r, pc__job_t *j) {
  if (pc__sched_push(&r->sched, j) != 0) {
    pc__job_free(j);
    r->fatal = -ENOMEM;
  }
}

/* A file to compress, into the scheduler's units. Takes ownership of job. */
static void push_job(pc__run_t *r, pc__job_t *j) {
  j->weight = j->size;
  j->mem = job_mem(r, j);
  r->progress.files_total++;
  r->progress.bytes_total += j->size;
  if (pc__sched_add(&r->sched, j) != 0)
    r->fatal = -ENOMEM;
}

/* Hands the gathered small files on as one unit. */
static void flush_batch(pc__run_t *r) {
  if (pc__sched_flush(&r->sched) != 0)
    r->fatal = -ENOMEM;
}

static void work_cb(uv_work_t *req) {
  pc__job_run_unit(PC__CONTAINER_OF(req, pc__slot_t, req)->head);
}

static void maybe_finish(pc__run_t *r);
static void schedule(pc__run_t *r);

/* A job the walk handed on unstat'ed, settled by its check (job.h). The
 * push counted it as a file to compress of its recorded size.
 */
static void finish_check(pc__run_t *r, pc__job_t *j) {
  r->progress.bytes_total -= j->prev->size;
  if (j->outcome == PC__CHECK_RESIZED) {
    r->progress.bytes_total += j->size;
    j->outcome = PC__CHECK_NONE;
    j->prev = NULL;
    j->weight = j->size;
    j->mem = job_mem(r, j);
    requeue(r, j);
    return;
  }
  r->progress.files_total--; /* skip_file and unchanged_file count it */
  if (j->outcome != PC__CHECK_GONE)
    unchanged_file(r, j->root, j->fullpath, j->prev);
  pc__job_free(j);
}

/* One job of a unit back from the pool. */
static void finish_job(pc__run_t *r, pc__job_t *j, int status) {
  pc__dedup_ref_t *w, *next;
  pc__rec_t rec;

  if (j->outcome != PC__CHECK_NONE && status == 0) {
    finish_check(r, j);
    return;
  }

  if (j->dd.wait && status == 0) {
    /* Its content's leader is still at work: parked until the leader's
     * own after_work (this thread) wakes it, unless the leader finished
     * since the worker looked.
     */
    if (pc__dedup_park(r->cfg.dedup, &j->dd))
      requeue(r, j);
    return;
  }
  for (w = pc__dedup_wake(&j->dd); w != NULL; w = next) {
    next = w->next_parked;
    requeue(r, PC__CONTAINER_OF(w, pc__job_t, dd));
  }
  r->progress.bytes_done += j->size;
  r->cache_puts += j->cache_puts;
  if (status == UV_ECANCELED || j->err == PC_EINTERRUPTED) {
    /* Stopped by a signal before it finished: not a result. */
    r->progress.files_total--;
    pc__job_free(j);
    return;
  }
  memset(&rec, 0, sizeof(rec));
  rec.path = pc__strdup(j->fullpath + j->rel_off);
  if (rec.path == NULL) {
    r->fatal = -ENOMEM;
  } else {
    rec.root = j->root;
    rec.err = j->err;
    rec.skip = j->skip;
    /* A link not followed: its target's size is not the run's to tell. */
    rec.size = j->skip == PC_SKIP_LINK_OWNER ? 0 : j->size;
    rec.mtime_ns = j->mtime_ns;
    rec.deduped = j->copied;
    rec.cached = j->cached;
    rec.alone = j->alone;
    memcpy(rec.out, j->out, sizeof(rec.out));
    record(r, &rec, j->fullpath,
           j->err_path != NULL ? j->err_path : j->fullpath);
  }
  pc__job_free(j);
}

static void after_work_cb(uv_work_t *req, int status) {
  pc__slot_t *slot = PC__CONTAINER_OF(req, pc__slot_t, req);
  pc__job_t *j = slot->head;
  pc__run_t *r = slot->run;

  slot->head = NULL;
  slot->next_free = r->free_slots;
  r->free_slots = slot;
  pc__sched_done(&r->sched, j);
  /* From here on each job stands alone (a parked one is requeued by
   * itself): only the head carried the unit's weight and memory.
   */
  j->weight = j->size;
  j->mem = job_mem(r, j);
  while (j != NULL) {
    pc__job_t *next = j->batch;
    j->batch = NULL;
    finish_job(r, j, status);
    j = next;
  }
  progress(r);
  schedule(r);
  maybe_finish(r);
}

/* Fills the pool with what the scheduler lets start (schedule.h). */
static void schedule(pc__run_t *r) {
  pc__job_t *j;
  while (!r->stopping && r->fatal == 0 &&
         (j = pc__sched_next(&r->sched)) != NULL) {
    pc__slot_t *slot = r->free_slots; /* one is: fewer than jobs in flight */
    int err;
    slot->head = j;
    err = uv_queue_work(&r->loop, &slot->req, work_cb, after_work_cb);
    if (err != 0) {
      pc__sched_done(&r->sched, j);
      slot->head = NULL;
      pc__job_free(j);
      r->fatal = err;
      return;
    }
    r->free_slots = slot->next_free;
  }
}

/* The work is over: the loop stops. The stop handle stays open until
 * pc_run() returns: a stop during the manifest still counts.
 */
static void close_handles(pc__run_t *r) {
  uv_handle_t *hs[] = {(uv_handle_t *)&r->idle, (uv_handle_t *)&r->timer};
  size_t k;
  for (k = 0; k < PC__ARRAY_SIZE(hs); k++)
    if (!uv_is_closing(hs[k]))
      uv_close(hs[k], NULL);
  uv_stop(&r->loop);
}

/* Ends the loop once nothing is pending, running or left to walk. */
static void maybe_finish(pc__run_t *r) {
  if (r->fatal != 0 || r->stopping) {
    /* Drop what waits; what runs must still come back. */
    if (!r->walk_done) {
      uv_idle_stop(&r->idle);
      r->walk_done = 1;
    }
    pc__sched_drop(&r->sched, 0);
  }
  if (r->walk_done && pc__sched_pending(&r->sched) == 0) {
    /* The last files are in flight: the cache's writer takes a free core
     * now rather than the run's end.
     */
    if (r->cfg.cache != NULL && !r->cache_kicked &&
        r->sched.in_flight < r->sched.jobs) {
      pc__store_kick(r->cfg.cache);
      r->cache_kicked = 1;
    }
    if (r->sched.in_flight == 0)
      close_handles(r);
  }
}

/* --- The walk's entries, dispatched -------------------------------------
 *
 * walk.h says what is there, select.h what it is; here each entry becomes
 * what it is to the run: a directory handed back to the walk, a job, a
 * record, or nothing (our own outputs and temps, another shard's files).
 */

/* The earlier manifest's record of this file when it still holds
 * (incremental.h), else NULL.
 */
static const pc__prev_rec_t *is_unchanged(pc__run_t *r, const pc__entry_t *e,
                                          const char *rel,
                                          const struct stat *st,
                                          unsigned absent) {
  int odfd = e->dfd;
  if (r->cfg.outdir) {
    /* Outputs the mirror cannot tell of are not current. */
    if (r->mirror.state == PC__MIRROR_ERROR)
      return NULL;
    odfd = r->mirror.fd;
  }
  return pc__incremental_lookup(r->prev, &r->prev_hint, r->cfg.formats, e->root,
                                rel, odfd, e->name, st, absent);
}

/* The enabled formats whose output the listing of its outputs' directory
 * lacks (select.h); with --output-dir and a mirror that could not be
 * opened, none: each job looks, and reports why it cannot.
 */
static unsigned absent_of(const pc__run_t *r, const pc__sel_entry_t *se) {
  if (r->cfg.outdir && r->mirror.state == PC__MIRROR_ERROR)
    return 0;
  return pc__select_absent(&r->sel, se);
}

/* --output-dir over more than one PATH: 1 when the file at se->rel may
 * have its outputs under DIR, 0 when a file found before under another
 * PATH has that path (the outputs are that one's: this one fails,
 * PC_EOUTTWICE). The walk is the one writer of the set: no race decides.
 */
static int claim_outputs(pc__run_t *r, const pc__sel_entry_t *se) {
  int ret;

  if (!r->cfg.outdir || r->nroots < 2)
    return 1;
  if ((ret = pc__relset_claim(&r->rels, se->rel, se->rel_len)) < 0) {
    r->fatal = ret;
    return 1; /* the run ends: no record either way */
  }
  return ret;
}

/* 0 when the outputs of the entry's directory may be written where they
 * go (beside it, or with --output-dir its mirror, when that exists), else
 * PC_ENOWRITE, the code its files fail with before any of them is read.
 * The directory is looked at once, when the walk comes to it, and said
 * once (issue 23: not one line per output after compressing them all). A
 * dry run writes nothing, so it finds nothing unwritable.
 */
static int out_dir_ok(pc__run_t *r, const pc__entry_t *e) {
  int fd = e->dfd;
  char *label;

  if (r->cfg.dry_run)
    return 0;
  if (r->wdir_known && r->wdir.dev == e->dir.dev && r->wdir.ino == e->dir.ino)
    return r->wdir_err;
  r->wdir_known = 1;
  r->wdir = e->dir;
  r->wdir_err = 0;
  if (r->cfg.outdir) /* a mirror still to make is the jobs' to report */
    fd = r->mirror.state == PC__MIRROR_OPEN ? r->mirror.fd : -1;
  if ((fd < 0 && fd != AT_FDCWD) || pc__out_writable(fd) == 0)
    return 0;
  r->wdir_err = PC_ENOWRITE;
  label = r->cfg.outdir && e->drel[0] ? pc__path_join(r->cfg.out_label, e->drel)
          : r->cfg.outdir             ? pc__strdup(r->cfg.out_label)
                          : pc__strdup(e->dfull[0] ? e->dfull : ".");
  report_error(r, label, PC_ENOWRITE);
  free(label);
  return r->wdir_err;
}

/* A regular file (per the listing) that the earlier manifest records and
 * that passes every filter: handed to a worker without a stat, which
 * checks it there (job.h). 1 when it was; *full is then the job's.
 */
static int take_unstatted(pc__run_t *r, const pc__entry_t *e,
                          const pc__sel_entry_t *se, char **full) {
  const pc__prev_rec_t *p;
  struct stat st;
  pc__job_t *j;

  /* The record first: a new file then costs one lookup here, not every
   * filter twice.
   */
  if ((p = pc__prev_next(r->prev, e->root, se->rel, &r->prev_hint)) == NULL ||
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
    r->fatal = -ENOMEM;
    return 1;
  }
  j->prev = p;
  j->absent = absent_of(r, se);
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
  pc__job_t *j;

  /* No output, and none there to remove as stale: a record is all. */
  if (why != PC_SKIP_NONE && (absent & r->cfg.formats) == r->cfg.formats) {
    skip_file(r, e->root, *rel, *full, why, st, 0);
    *rel = NULL;
    return;
  }
  if (why == PC_SKIP_NONE && r->prev != NULL &&
      (prev = is_unchanged(r, e, *rel, st, absent)) != NULL) {
    unchanged_file(r, e->root, *full, prev);
    return;
  }
  if (out_dir_ok(r, e) != 0) { /* said once for its directory */
    skip_file(r, e->root, *rel, *full, PC_SKIP_NONE, st, PC_ENOWRITE);
    *rel = NULL;
    return;
  }
  j = pc__job_new(*full, strlen(*full) - se->rel_len, e->root,
                  r->roots[e->root].fd, st, se->link, &r->cfg);
  *full = NULL; /* the job owns it now, even when NULL came back */
  if (j == NULL) {
    r->fatal = -ENOMEM;
    return;
  }
  j->absent = absent;
  j->skip = why;
  push_job(r, j);
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
      skip_file(r, e->root, *rel, *full, PC_SKIP_NONE, st, PC_EOUTTWICE);
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
    if (!r->cfg.dry_run && !r->cfg.outdir)
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
  skip_file(r, e->root, *rel, *full, why, st, 0);
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
      skip_file(r, e->root, *rel, full, PC_SKIP_BROKEN_LINK, NULL, 0);
      *rel = NULL;
    }
    return 1;
  }
  if (S_ISDIR(t.st_mode)) {
    if (r->opts->follow && !pc__select_skip_dir(&r->sel, &t) &&
        pc__walk_enter(r->walk, e) != 0)
      r->fatal = -ENOMEM;
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
  const pc__mirror_t *m = &r->mirror;
  size_t k;

  for (k = 0; k < m->ls.n && !r->cfg.dry_run; k++) {
    const char *name = m->names[k];
    pc__sel_entry_t se;
    char *rel;
    if (!pc__is_temp_name(name))
      continue;
    if ((rel = pc__path_join(e->drel, name)) == NULL) {
      r->fatal = -ENOMEM;
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
 * walk moves to another directory. 0, or -1 when the run cannot go on.
 */
static int mirror_for(pc__run_t *r, const pc__entry_t *e) {
  int ret = pc__mirror_at(&r->mirror, r->cfg.out_fd, e->drel);
  if (ret < 0) {
    r->fatal = ret;
    return -1;
  }
  if (ret > 0 && r->mirror.state == PC__MIRROR_OPEN)
    mirror_reap(r, e);
  return r->fatal != 0 ? -1 : 0;
}

/* One entry of the walk. */
static void dispatch(pc__run_t *r, const pc__entry_t *e) {
  char *full = NULL, *rel = NULL;
  pc__sel_entry_t se;
  pc__verdict_t v;
  struct stat st;

  memset(&se, 0, sizeof(se));
  se.name = e->name;
  se.len = e->len;
  se.ls = e->has_ls ? &e->ls : NULL;
  se.dir = e->dir;
  if (r->cfg.outdir) {
    if (mirror_for(r, e) != 0)
      return;
    se.outs = &r->mirror.ls;
  }
  v = pc__select_early(&r->sel, &se, e->dtype == DT_REG);
  if (v == PC__SEL_MANIFEST_TEMP && !r->cfg.dry_run)
    pc__out_reap(e->dfd, e->name, &r->start); /* a live one stays */
  if (v != PC__SEL_NEXT)
    return;
  full = pc__path_join(e->dfull, e->name);
  rel = pc__path_join(e->drel, e->name);
  if (full == NULL || rel == NULL) {
    r->fatal = -ENOMEM;
    goto out;
  }
  se.rel = rel;
  se.rel_len = strlen(rel);
  if (e->dtype == DT_REG && r->prev != NULL && take_unstatted(r, e, &se, &full))
    goto out;
  if (fstatat(e->dfd, e->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) /* gone since the listing: nothing to do */
      skip_file(r, e->root, rel, full, PC_SKIP_NONE, NULL, PC__ERRNO()),
          rel = NULL;
    goto out;
  }
  if (S_ISLNK(st.st_mode)) {
    se.link = 1;
    if (take_link(r, e, &se, &st, &rel, full))
      goto out;
  } else if (S_ISDIR(st.st_mode)) {
    if (!pc__select_skip_dir(&r->sel, &st) && pc__walk_enter(r->walk, e) != 0)
      r->fatal = -ENOMEM;
    goto out;
  }
  take_file(r, e, &se, &st, &full, &rel);
out:
  free(full);
  free(rel);
}

/* Takes up to `budget` entries from the walk (a directory opened counts as
 * one): small enough slices that finished jobs are collected and new ones
 * submitted while a large tree is still being read. 1 when the walk is
 * over.
 */
static int walk_step(pc__run_t *r, unsigned budget) {
  while (budget > 0 && r->fatal == 0) {
    pc__entry_t e;
    int ret = pc__walk_next(r->walk, &e);
    budget -= e.opened < budget ? e.opened : budget;
    if (ret == 0)
      return 1;
    if (ret < 0) {
      if (e.path != NULL)
        report_error(r, e.path, ret);
      else
        r->fatal = ret;
      continue;
    }
    if (e.name == NULL)
      continue; /* a directory opened that gave nothing */
    dispatch(r, &e);
    if (budget > 0)
      budget--;
  }
  return r->fatal != 0;
}

static void on_idle(uv_idle_t *h) {
  pc__run_t *r = PC__CONTAINER_OF(h, pc__run_t, idle);
  if (walk_step(r, WALK_BUDGET)) {
    uv_idle_stop(&r->idle);
    r->walk_done = 1;
    r->progress.walk_done = 1;
    flush_batch(r);
    progress(r);
  }
  /* A worker would idle: hand on what is gathered rather than wait. */
  if (pc__sched_idle(&r->sched))
    flush_batch(r);
  schedule(r);
  maybe_finish(r);
}

static void on_timer(uv_timer_t *h) {
  progress(PC__CONTAINER_OF(h, pc__run_t, timer));
}

/* The run in progress, for pc_stop(): at most one (pc_run() in
 * precompress.h), registered before its set-up so that a stop during it
 * counts.
 */
static _Atomic(pc__run_t *) active;
/* pc_stop() calls between their look at `active` and their last touch of
 * that run. pc_run() clears `active`, then waits for this to be 0 before
 * it closes the handle and frees the run (both seq_cst: either a stopper
 * sees NULL, or pc_run() sees the stopper).
 */
static atomic_int stoppers;

/* Async-signal-safe: atomics and uv_async_send() only. */
void pc_stop(int signo) {
  pc__run_t *r;
  int none = 0;

  atomic_fetch_add(&stoppers, 1);
  r = atomic_load(&active);
  if (r != NULL) {
    /* The first request names the signal; workers see the flag at their
     * next slice without waiting for the loop.
     */
    atomic_compare_exchange_strong(&r->stop_signo, &none,
                                   signo > 0 ? signo : -1);
    atomic_store(&r->cfg.stop, 1);
    if (atomic_load(&r->stop_on))
      uv_async_send(&r->stop_async);
  }
  atomic_fetch_sub(&stoppers, 1);
}

/* The loop's side of pc_stop(): what a signal did when the run caught it. */
static void on_stop(uv_async_t *h) {
  pc__run_t *r = PC__CONTAINER_OF(h, pc__run_t, stop_async);
  int signo = atomic_load(&r->stop_signo);
  if (signo != 0 && !r->stopping) {
    r->stopping = 1;
    r->totals.signo = signo > 0 ? signo : 0;
  }
  maybe_finish(r);
}

/* The PATH resolved (realpath), or NULL when it cannot be: the walk then
 * reports the error. malloc'd.
 */
static char *canonical(const char *p) { return realpath(p, NULL); }

/* 1 if `path` is `dir` or lies below it, both canonical. */
static int within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 &&
         (path[n] == '\0' || path[n] == '/' || (n == 1 && dir[0] == '/'));
}

/* Which PATHs to walk: one given twice, or lying inside a directory given
 * too (`ov ov/css ov`), is covered already. Walking it again would record
 * its files under two roots, and the next incremental run, finding them
 * under neither, would compress them all again. keep[k] is 1 for those to
 * walk; the first of equal ones stays.
 */
static int covered_paths(const pc_options_t *o, unsigned char *keep) {
  char **canon = calloc(o->npaths, sizeof(*canon));
  unsigned char *isdir = calloc(o->npaths, 1);
  size_t k, m;
  int err = 0;

  if (canon == NULL || isdir == NULL) {
    err = -ENOMEM;
    goto out;
  }
  for (k = 0; k < o->npaths; k++) {
    struct stat st;
    keep[k] = 1;
    canon[k] = canonical(o->paths[k]);
    isdir[k] = stat(o->paths[k], &st) == 0 && S_ISDIR(st.st_mode);
  }
  for (k = 0; k < o->npaths; k++) {
    for (m = 0; m < o->npaths && keep[k]; m++) {
      if (m == k || !keep[m] || canon[k] == NULL || canon[m] == NULL)
        continue;
      if (strcmp(canon[k], canon[m]) == 0)
        keep[k] = m > k; /* equal: the first stays */
      else if (isdir[m] && within(canon[k], canon[m]))
        keep[k] = 0;
    }
  }
out:
  for (k = 0; canon != NULL && k < o->npaths; k++)
    free(canon[k]);
  free(canon);
  free(isdir);
  return err;
}

/* Closes every handle still open (the loop runs until they are). The
 * run is no longer `active` and no pc_stop() is still at the stop handle.
 */
static void release_handles(pc__run_t *r) {
  uv_handle_t *hs[] = {(uv_handle_t *)&r->idle, (uv_handle_t *)&r->timer,
                       (uv_handle_t *)&r->stop_async};
  size_t k;

  for (k = 0; k < PC__ARRAY_SIZE(hs); k++)
    if (!uv_is_closing(hs[k]))
      uv_close(hs[k], NULL);
  uv_run(&r->loop, UV_RUN_DEFAULT);
}

/* Splits the PATHs into roots: a directory is its own root; a file's root
 * is its directory. Roots in one directory (a shell glob over it) share one
 * descriptor: a run over thousands of file PATHs must not hold one each
 * (ulimit -n).
 */
static int make_roots(pc__run_t *r) {
  const pc_options_t *o = r->opts;
  unsigned char *keep = calloc(o->npaths ? o->npaths : 1, 1);
  size_t k;
  int err;

  r->roots = calloc(o->npaths ? o->npaths : 1, sizeof(*r->roots));
  if (r->roots == NULL || keep == NULL) {
    free(keep);
    return -ENOMEM;
  }
  if ((err = covered_paths(o, keep)) != 0) {
    free(keep);
    return err;
  }
  for (k = 0; k < o->npaths; k++) {
    pc__root_t *root = &r->roots[r->nroots];
    const char *p = o->paths[k];
    struct stat st;
    uint32_t m;
    int is_file;

    if (!keep[k])
      continue;
    r->nroots++;
    root->fd = -1;
    is_file = stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
    if (is_file) {
      const char *slash = strrchr(p, '/');
      size_t dl = slash != NULL ? (size_t)(slash - p) : 0;
      root->file = pc__strdup(slash != NULL ? slash + 1 : p);
      root->dir = malloc(dl + 2);
      if (root->dir != NULL) {
        memcpy(root->dir, p, dl);
        /* "/x" lives in "/", not in "". */
        if (slash == p)
          root->dir[dl++] = '/';
        root->dir[dl] = '\0';
      }
      root->label =
          pc__strdup(root->dir != NULL && root->dir[0] ? root->dir : ".");
    } else {
      root->dir = pc__strdup(p);
      root->label = pc__strdup(p);
    }
    if (root->dir == NULL || root->label == NULL ||
        (is_file && root->file == NULL)) {
      free(keep);
      return -ENOMEM;
    }
    for (m = 0; m + 1 < r->nroots; m++)
      if (r->roots[m].fd >= 0 && strcmp(r->roots[m].dir, root->dir) == 0)
        break;
    if (m + 1 < r->nroots) {
      root->fd = r->roots[m].fd;
      root->fd_shared = 1;
      continue;
    }
    /* Failing here is the walk's to report: without this descriptor no
     * file below the root can be opened, whatever its listing says.
     */
    root->fd = open(root->dir[0] ? root->dir : ".",
                    PC_O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root->fd < 0)
      root->fd_err = PC__ERRNO();
  }
  free(keep);
  return 0;
}

/* The manifest's name, before any work starts (precompress.h): what is
 * there must be something a manifest may replace, unless nothing will be
 * written (a dry run); an earlier manifest's records are read from it. 0,
 * or the code that keeps the run from starting.
 */
static int open_manifest(pc__run_t *r) {
  const pc_options_t *o = r->opts;
  const char *path = o->manifest, *slash;
  int writing = !o->dry_run, err, ours = 0;
  pc__buf_t text = {0};
  char **labels = NULL;
  struct stat st;
  uint32_t k;

  if (path == NULL)
    return 0;
  slash = strrchr(path, '/');
  {
    /* Its directory, to know the name by wherever the walk meets it. */
    char *dir = slash == NULL   ? pc__strdup(".")
                : slash == path ? pc__strdup("/")
                                : malloc((size_t)(slash - path) + 1);
    if (dir == NULL)
      return -ENOMEM;
    if (slash != NULL && slash != path) {
      memcpy(dir, path, (size_t)(slash - path));
      dir[slash - path] = '\0';
    }
    if (stat(dir, &st) == 0) {
      pc__devino_t id = {st.st_dev, st.st_ino};
      pc__select_set_manifest(&r->sel, slash != NULL ? slash + 1 : path, &id);
    }
    free(dir);
  }

  err = pc__manifest_check(path, writing, &r->man_old, &text);
  if (err != 0) {
    if (!writing) {
      /* Nothing will replace it: say why it is not read, and go on. */
      report_error(r, path, err);
      err = 0;
    }
    goto out;
  }
  if (r->man_old.regular) {
    pc__devino_t id = {r->man_old.dev, r->man_old.ino};
    pc__select_set_manifest_file(&r->sel, id);
    r->cfg.man_known = 1;
    r->cfg.man_dev = r->man_old.dev;
    r->cfg.man_ino = r->man_old.ino;
  }
  /* Nothing, a symlink or an empty file: no earlier manifest. */
  if (text.len == 0 || (o->force && !writing))
    goto out;
  if ((labels = malloc(r->nroots * sizeof(*labels))) == NULL) {
    err = -ENOMEM;
    goto out;
  }
  for (k = 0; k < r->nroots; k++)
    labels[k] = r->roots[k].label;
  /* With --force it is only judged: its records are not wanted. */
  err = pc__prev_parse(
      o->force ? NULL : &r->prev, &ours, (const char *)text.data, text.len,
      o->formats, o->level, o->gzip_engine, o->ratio_num, o->ratio_den,
      o->output_dir, labels, r->nroots, r->jobs, PC__PREV_MIN_PART);
  if (err == -ENOMEM)
    goto out;
  if (writing && pc__manifest_ours(text.len, ours) != 0) {
    err = PC_EREFUSE;
    goto out;
  }
  if (err != 0 && !o->force) {
    /* A manifest, but not one this run can use: say so, compress
     * everything, and replace it.
     */
    report_error(r, path, err);
  }
  err = 0;
out:
  free(labels);
  pc__buf_free(&text);
  return err;
}

/* Bytes of results queued for the cache's writer at once: like the copies
 * kept for identical files (dedup.c), a share of the memory limit.
 */
static uint64_t cache_budget(uint64_t limit) {
  uint64_t b = limit / 4;
  return b < ((uint64_t)128 << 20) ? b : (uint64_t)128 << 20;
}

/* Opens the cache, and keeps its whole directory out of the walk: never
 * entered when it lies inside a PATH, never walked when a PATH is it or
 * lies inside it. PC_EUNSAFE (a cache others could write) ends
 * the run before it starts; any other failure is reported and the run
 * goes on without a cache.
 */
static int open_cache(pc__run_t *r) {
  pc__store_t *c;
  struct stat st;
  int err;

  if ((err = pc__store_open(&c, r->opts->cache_dir, r->opts->dry_run,
                            cache_budget(r->sched.limit))) == PC_EUNSAFE)
    return err;
  if (err != 0) {
    /* A cache that cannot be made is no reason not to compress; one a dry
     * run finds missing is an empty one.
     */
    if (!(r->opts->dry_run && err == -ENOENT))
      report_error(r, r->opts->cache_dir, err);
    c = NULL;
  }
  r->cfg.cache = c;
  if (stat(r->opts->cache_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
    pc__devino_t id = {st.st_dev, st.st_ino};
    uint32_t k;
    pc__select_set_cache_dir(&r->sel, id);
    /* A PATH that is the cache's directory or lies in it: nothing there
     * is a source, whatever it holds (an old v1/ tree, files of others).
     * File PATHs of one directory share its descriptor: judged once.
     */
    for (k = 0; k < r->nroots; k++)
      r->roots[k].skip =
          k > 0 && r->roots[k].fd == r->roots[k - 1].fd
              ? r->roots[k - 1].skip
              : r->roots[k].fd >= 0 && pc__walk_below(r->roots[k].fd, id);
  }
  return 0;
}

/* `mkdir -p DIR`: each missing directory on the way made (0777 less the
 * umask), the last one included; ones there already (or made meanwhile by
 * another run) are fine. What is not a directory is left for the open
 * after to report. 0 or a negative code.
 */
static int make_dirs(const char *dir) {
  char *p = pc__strdup(dir), *s;
  int err = 0;

  if (p == NULL)
    return -ENOMEM;
  for (s = p + 1;; s++) {
    if (*s != '/' && *s != '\0')
      continue;
    if (s[-1] != '/') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST)
        err = PC__ERRNO();
      *s = c;
    }
    if (*s == '\0' || err != 0)
      break;
  }
  free(p);
  return err;
}

/* --output-dir: DIR made (not by a dry run, which finds every output
 * missing when there is none) and opened as the user names it (a symlink
 * given is followed, as a PATH's is). The PATH itself is refused (in
 * place has its own spelling); DIR inside the PATH is never walked. 0 or
 * the code that keeps the run from starting.
 */
static int open_output_dir(pc__run_t *r) {
  const char *dir = r->opts->output_dir;
  struct stat st, rst;
  uint32_t k;
  int err;

  if (!r->cfg.dry_run && (err = make_dirs(dir)) != 0 && err != -ENOTDIR)
    return err;
  r->cfg.out_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (r->cfg.out_fd < 0) {
    err = PC__ERRNO();
    return r->cfg.dry_run && err == -ENOENT ? 0 : err;
  }
  if (fstat(r->cfg.out_fd, &st) != 0)
    return PC__ERRNO();
  for (k = 0; k < r->nroots; k++)
    if (r->roots[k].file == NULL && r->roots[k].fd >= 0 &&
        fstat(r->roots[k].fd, &rst) == 0 && rst.st_dev == st.st_dev &&
        rst.st_ino == st.st_ino)
      return PC_EOUTSAME;
  {
    pc__devino_t id = {st.st_dev, st.st_ino};
    pc__select_skip(&r->sel, id);
  }
  return 0;
}

static void free_run(pc__run_t *r) {
  uint32_t k;
  size_t i;

  pc__walk_free(r->walk);
  pc__mirror_free(&r->mirror);
  pc__relset_free(&r->rels);
  if (r->cfg.out_fd >= 0)
    close(r->cfg.out_fd);
  pc__sched_drop(&r->sched, 1);
  free(r->slots);
  for (i = 0; i < r->nrecs; i++) {
    if (!r->recs[i].borrowed)
      free(r->recs[i].path);
    free(r->recs[i].err_msg);
  }
  free(r->recs);
  for (k = 0; k < r->nroots; k++) {
    if (r->roots[k].fd >= 0 && !r->roots[k].fd_shared)
      close(r->roots[k].fd);
    free(r->roots[k].dir);
    free(r->roots[k].label);
    free(r->roots[k].file);
  }
  free(r->roots);
  pc__select_free(&r->sel);
  pc__prev_free(r->prev);
  pc__dedup_free(r->cfg.dedup);
  pc__spares_free(r->cfg.spares);
  pc__store_close((pc__store_t *)r->cfg.cache);
}

/* libuv sizes its pool once, at first use, from UV_THREADPOOL_SIZE. */
static void size_pool(unsigned jobs) {
  char buf[16];
  snprintf(buf, sizeof(buf), "%u", jobs);
  uv_os_setenv("UV_THREADPOOL_SIZE", buf);
}

/* The run's fixed configuration, from the options: what every job reads. */
static void init_cfg(pc__run_t *r, const pc_options_t *opts) {
  int f;

  r->opts = opts;
  /* No file made before this instant has a later ctime (the kernel stamps
   * with the coarse clock, or a finer one, never ahead of this one).
   */
  clock_gettime(CLOCK_REALTIME, &r->start);
  r->cfg.formats = opts->formats;
  for (f = 0; f < PC_NFORMATS; f++)
    r->cfg.level[f] = opts->level[f];
  r->cfg.gzip_engine = opts->gzip_engine;
  r->cfg.ratio_num = opts->ratio_num;
  r->cfg.ratio_den = opts->ratio_den;
  r->cfg.dry_run = opts->dry_run;
  r->cfg.follow = opts->follow;
  r->cfg.min_size = opts->min_size;
  r->cfg.fsync = opts->fsync;
  r->cfg.outdir = opts->output_dir != NULL;
  r->cfg.out_fd = -1;
  r->cfg.out_label = opts->output_dir;
  r->mirror = (pc__mirror_t)PC__MIRROR_INIT;
  atomic_init(&r->cfg.stop, 0);
  atomic_init(&r->stop_signo, 0);
  atomic_init(&r->stop_on, 0);
}

/* The workers' side of the run: how many (the process's limits), the
 * codec states they share, the pool's slots, the scheduler and dedupe
 * within the memory limit.
 */
static int setup_workers(pc__run_t *r) {
  const pc_options_t *opts = r->opts;
  uint64_t limit = opts->memory_limit;
  size_t k;
  int err;

  if ((err = pc__dedup_new(&r->cfg.dedup)) != 0)
    return err;
  r->jobs = opts->jobs ? opts->jobs : pc_default_jobs();
  if ((err = pc__limit_jobs(&r->jobs)) != 0)
    return err;
  r->cfg.jobs = r->jobs;
  if ((err = pc__spares_new(&r->cfg.spares, r->jobs, opts->level[PC_GZ])) != 0)
    return err;
  if ((r->slots = calloc(r->jobs, sizeof(*r->slots))) == NULL)
    return -ENOMEM;
  for (k = r->jobs; k > 0; k--) {
    r->slots[k - 1].run = r;
    r->slots[k - 1].next_free = r->free_slots;
    r->free_slots = &r->slots[k - 1];
  }
  if (limit == 0) {
    pc_memlimit_t m;
    pc_default_memory_limit(&m);
    limit = m.limit;
  }
  pc__sched_init(&r->sched, r->jobs, limit);
  pc__dedup_budget(r->cfg.dedup, limit);
  return 0;
}

/* What the walk meets: the filter chain, the roots, the manifest (and the
 * earlier one's records), the cache. A failure about a named file puts
 * its name in totals->err_path.
 */
static int setup_inputs(pc__run_t *r, pc_totals_t *totals) {
  const pc_options_t *opts = r->opts;
  const char *const *skip = opts->skip_ext;
  size_t nskip = opts->nskip_ext;
  int err;

  if (skip == NULL)
    skip = pc_default_skip_ext(&nskip);
  if ((err = pc__select_init(&r->sel, opts, skip, nskip)) != 0)
    return err;
  if ((err = make_roots(r)) != 0)
    return err;
  if (opts->output_dir != NULL && (err = open_output_dir(r)) != 0) {
    if (totals != NULL)
      totals->err_path = opts->output_dir;
    return err;
  }
  if ((err = open_manifest(r)) != 0) {
    if (totals != NULL)
      totals->err_path = opts->manifest;
    return err;
  }
  if (opts->cache_dir != NULL && (err = open_cache(r)) != 0) {
    if (totals != NULL)
      totals->err_path = opts->cache_dir;
    return err;
  }
  return 0;
}

/* The loop: its handles, then the walk and every job until both are done.
 * *loop_open is set once the loop is open (it then ran): the result is the
 * run's so far (0, PC_EINTERRUPTED or a fatal error); before, the loop's
 * own error.
 */
static int walk_and_dispatch(pc__run_t *r, int *loop_open) {
  int err;

  size_pool(r->jobs);
  if ((err = uv_loop_init(&r->loop)) != 0)
    return err;
  uv_idle_init(&r->loop, &r->idle);
  uv_timer_init(&r->loop, &r->timer);
  uv_async_init(&r->loop, &r->stop_async, on_stop);
  *loop_open = 1;
  /* A request made before the handle was open is acted on now. */
  atomic_store(&r->stop_on, 1);
  if (atomic_load(&r->stop_signo) != 0)
    uv_async_send(&r->stop_async);
  if (r->opts->on_progress != NULL)
    uv_timer_start(&r->timer, on_timer, PROGRESS_MS, PROGRESS_MS);

  if ((err = pc__walk_new(&r->walk, r->roots, r->nroots, r->opts->follow)) !=
      0) {
    r->fatal = err;
    r->walk_done = 1;
    close_handles(r);
  } else {
    uv_idle_start(&r->idle, on_idle);
  }
  uv_run(&r->loop, UV_RUN_DEFAULT);
  if (r->fatal != 0)
    return r->fatal;
  return r->stopping ? PC_EINTERRUPTED : 0;
}

/* The run's manifest: its options and its records, to `to`. */
static int write_manifest(pc__run_t *r, const pc__mdest_t *to) {
  pc__mdoc_t d;
  char **labels = malloc((r->nroots ? r->nroots : 1) * sizeof(*labels));
  uint32_t k;
  int f, err;

  if (labels == NULL)
    return -ENOMEM;
  for (k = 0; k < r->nroots; k++)
    labels[k] = r->roots[k].label;
  memset(&d, 0, sizeof(d));
  d.formats = r->cfg.formats;
  for (f = 0; f < PC_NFORMATS; f++)
    d.level[f] = r->cfg.level[f];
  d.gzip_engine = r->cfg.gzip_engine;
  d.ratio_num = r->cfg.ratio_num;
  d.ratio_den = r->cfg.ratio_den;
  d.min_size = r->opts->min_size;
  d.output_dir = r->opts->output_dir;
  d.labels = labels;
  d.nroots = r->nroots;
  d.recs = r->recs;
  d.nrecs = r->nrecs;
  d.incomplete = r->stopping;
  err = pc__manifest_write_doc(&d, to);
  free(labels);
  return err;
}

/* After the loop: the manifest, the cache's trim, the totals. `err` is the
 * loop's result; the run's is returned.
 */
static int finish_run(pc__run_t *r, int err, pc_totals_t *totals) {
  const pc_options_t *opts = r->opts;

  r->progress.walk_done = 1;
  progress(r);
  if ((err == 0 || err == PC_EINTERRUPTED) &&
      (opts->manifest != NULL || opts->manifest_write != NULL) &&
      !opts->dry_run) {
    pc__mdest_t to;
    int merr;
    memset(&to, 0, sizeof(to));
    to.path = opts->manifest;
    to.write = opts->manifest_write;
    to.data = opts->data;
    to.checked = &r->man_old;
    to.sync = r->cfg.fsync;
    if ((merr = write_manifest(r, &to)) != 0)
      report_error(r, opts->manifest, merr);
    /* A stop that came while it was written (the CLI's on a SIGPIPE from
     * a manifest sent to a closed pipe) counts like any other: its
     * callback runs now.
     */
    uv_run(&r->loop, UV_RUN_NOWAIT);
    if (err == 0 && r->stopping)
      err = PC_EINTERRUPTED;
  }
  /* Only a run that stored entries can have grown the cache past its
   * limit (each run sharing it trims after its own): listing a cache of
   * 100,000 entries is most of a second run's time.
   */
  if (r->cfg.cache != NULL && opts->cache_max_size > 0 && !opts->dry_run &&
      r->cache_puts > 0 && !r->stopping) {
    int terr = pc__store_trim(r->cfg.cache, opts->cache_max_size);
    if (terr != 0)
      report_error(r, opts->cache_dir, terr);
  }
  r->totals.mem_limit = r->sched.limit;
  r->totals.mem_peak = r->sched.peak;
  r->totals.ran_alone = r->sched.alone;
  if (totals != NULL)
    *totals = r->totals;
  return err;
}

/* pc_run() on this library's own structs (the caller's copied in and out
 * by pc_run(), as far as their sizes go). */
static int run_full(const pc_options_t *opts, pc_totals_t *totals) {
  pc__run_t *r, *none = NULL;
  int err, loop_open = 0;

  if ((err = pc_options_check(opts, NULL)) != 0)
    return err;
  if ((r = calloc(1, sizeof(*r))) == NULL)
    return -ENOMEM;
  init_cfg(r, opts);
  /* One run at a time: libuv's pool, which it sizes and fills, is the
   * process's (precompress.h).
   */
  if (!atomic_compare_exchange_strong(&active, &none, r)) {
    free(r);
    return -EBUSY;
  }
  if ((err = setup_workers(r)) == 0 && (err = setup_inputs(r, totals)) == 0) {
    err = walk_and_dispatch(r, &loop_open);
    if (loop_open) /* the loop ran: its result, then the manifest's part */
      err = finish_run(r, err, totals);
  }

  atomic_store(&active, NULL);
  while (atomic_load(&stoppers) != 0)
    sched_yield(); /* a pc_stop() on another thread, a few instructions */
  if (loop_open) {
    release_handles(r);
    uv_loop_close(&r->loop);
  }
  free_run(r);
  free(r);
  return err;
}

int pc_run(const pc_options_t *opts, pc_totals_t *totals) {
  pc_options_t o;
  pc_totals_t t;
  size_t tsize = 0;
  int err;

  if (totals != NULL) {
    tsize = totals->size;
    if ((err = pc__struct_size_ok(totals, tsize, sizeof(t))) != 0)
      return err;
    if (tsize > sizeof(t))
      tsize = sizeof(t); /* a newer program's fields past ours stay 0 */
    memset(totals, 0, tsize);
    totals->size = tsize;
  }
  if ((err = pc__options_copy(&o, opts)) != 0)
    return err;
  memset(&t, 0, sizeof(t));
  err = run_full(&o, totals != NULL ? &t : NULL);
  if (totals != NULL) {
    t.size = tsize;
    memcpy(totals, &t, tsize);
  }
  return err;
}
