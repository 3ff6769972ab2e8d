/* The run's records and totals (run.h): each file's line for the manifest,
 * the counters of the summary, and what the caller is told as it happens
 * (on_file, on_error, on_progress). Loop thread only. It writes the run's
 * `res` part (run.h): the others tell it through pc__record_*().
 */
#include "run/run.h"

#include "store/remote.h"

#include <stdlib.h>
#include <string.h>

void pc__run_progress(pc__run_t *r) {
  if (r->opts->on_progress != NULL)
    r->opts->on_progress(r->opts->data, &r->res.progress);
}

void pc__record_fatal(pc__run_t *r, int err) { r->res.fatal = err; }

void pc__record_queued(pc__run_t *r, uint64_t size) {
  r->res.progress.files_total++;
  r->res.progress.bytes_total += size;
}

void pc__record_unqueued(pc__run_t *r, uint64_t size) {
  r->res.progress.files_total--;
  r->res.progress.bytes_total -= size;
}

void pc__record_ran(pc__run_t *r, uint64_t size) {
  r->res.progress.bytes_done += size;
}

void pc__record_walked(pc__run_t *r) { r->res.progress.walk_done = 1; }

void pc__record_stopped(pc__run_t *r, int signo) {
  r->res.totals.signo = signo > 0 ? signo : 0;
}

/* The remote cache's part of the totals, once what it still had queued
 * is sent (run.c: pc__remote_finish()). Its first failure's words outlive
 * the run (precompress.h): one run at a time.
 */
static void remote_totals(pc__run_t *r) {
  static char why[sizeof(((pc__remote_stats_t *)0)->why)];
  pc__remote_stats_t st;

  pc__remote_stats(r->cfg.remote, &st);
  r->res.totals.remote.on = 1;
  r->res.totals.remote.lookups = st.lookups;
  r->res.totals.remote.hits = st.hits;
  r->res.totals.remote.stored = st.stored;
  r->res.totals.remote.rejected = st.rejected;
  r->res.totals.remote.lost = st.lost;
  r->res.totals.remote.failed = st.failed;
  memcpy(why, st.why, sizeof(why));
  r->res.totals.remote.why = why[0] != '\0' ? why : NULL;
}

void pc__record_end(pc__run_t *r) {
  if (r->cfg.remote != NULL)
    remote_totals(r);
  r->res.totals.mem_dicts = r->dicts.mem;
  r->res.totals.mem_limit = r->run.sched.limit;
  r->res.totals.mem_peak = r->run.sched.peak;
  r->res.totals.ran_alone = r->run.sched.alone;
}

/* A record's deltas in the totals: kept ones by format, the changes, and
 * a dictionary that could not be read as an error.
 */
static void count_deltas(pc_totals_t *t, const pc__rec_t *rec) {
  unsigned k;

  for (k = 0; k < rec->ndeltas; k++) {
    const pc_delta_t *d = &rec->deltas[k];
    /* One error per dictionary, whatever the formats tried on it. */
    if (d->skip == PC_DSKIP_ERROR &&
        (k == 0 || rec->deltas[k - 1].from != d->from))
      t->errors++;
    if (d->skip == PC_DSKIP_NONE) {
      t->delta[d->format].files++;
      t->delta[d->format].bytes_in += rec->size;
      t->delta[d->format].bytes_out += d->size;
    }
    if (d->action == PC_ACT_CREATE || d->action == PC_ACT_REPLACE ||
        d->action == PC_ACT_REMOVE)
      t->changes++;
    if (d->action == PC_ACT_REMOVE)
      t->removed++;
  }
}

/* What became of a file, in the one order of precedence the totals and
 * the caller's pc_file_t share: failed, unchanged, skipped (a reason of
 * its own, or compressed with nothing kept: ratio), copied, cached,
 * compressed. *skip receives a skipped file's reason, else PC_SKIP_NONE.
 */
static pc_outcome_t outcome_of(const pc__rec_t *rec, int kept,
                               pc_skip_t *skip) {
  *skip = PC_SKIP_NONE;
  if (rec->err != 0)
    return PC_OUTCOME_FAILED;
  if (rec->unchanged)
    return PC_OUTCOME_UNCHANGED;
  if (rec->skip != PC_SKIP_NONE || !kept) {
    *skip = rec->skip != PC_SKIP_NONE ? rec->skip : PC_SKIP_RATIO;
    return PC_OUTCOME_SKIPPED;
  }
  if (rec->deduped)
    return PC_OUTCOME_COPIED;
  return rec->cached ? PC_OUTCOME_CACHED : PC_OUTCOME_COMPRESSED;
}

/* What a record owns, freed. */
static void rec_free(pc__rec_t *rec) {
  if (!rec->borrowed)
    free(rec->path);
  free(rec->err_msg);
  free(rec->deltas);
  free(rec->dstats);
}

void pc__record_free(pc__run_t *r) {
  size_t i;

  for (i = 0; i < r->res.nrecs; i++)
    rec_free(&r->res.recs[i]);
  free(r->res.recs);
}

/* Counts a finished file, keeps its manifest line, tells the caller. Takes
 * ownership of rec->path.
 */
static void record(pc__run_t *r, pc__rec_t *rec, const char *full,
                   const char *err_path) {
  pc_totals_t *t = &r->res.totals;
  pc_outcome_t outcome;
  pc_skip_t skip;
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
  count_deltas(t, rec);
  outcome = outcome_of(rec, kept, &skip);
  switch (outcome) {
  case PC_OUTCOME_FAILED:
    t->failed++;
    break;
  case PC_OUTCOME_UNCHANGED:
    t->unchanged++;
    break;
  case PC_OUTCOME_SKIPPED:
    t->skipped[skip]++;
    break;
  default:
    t->compressed++;
    t->deduped += outcome == PC_OUTCOME_COPIED;
    t->cached += outcome == PC_OUTCOME_CACHED;
  }
  r->res.progress.files_done++;

  if (r->opts->on_file != NULL) {
    pc_file_t file;
    memset(&file, 0, sizeof(file)); /* out[] past PC_NFORMATS: unused */
    file.root = r->roots[rec->root].label;
    file.path = rec->path;
    file.fullpath = full;
    file.size = rec->size;
    file.mtime_ns = rec->mtime_ns;
    file.outcome = outcome;
    file.skip = skip;
    file.remote_hits = rec->remote_hits;
    file.remote_rejected = rec->remote_rejected;
    file.alone = rec->alone;
    file.err = rec->err;
    file.err_path = err_path;
    memcpy(file.out, rec->out, sizeof(rec->out));
    file.deltas = rec->deltas;
    file.ndeltas = rec->ndeltas;
    r->opts->on_file(r->opts->data, &file);
  }

  if ((r->opts->manifest == NULL && r->opts->manifest_write == NULL) ||
      r->cfg.dry_run) {
    rec_free(rec);
  } else if (PC__GROW(r->res.recs, r->res.nrecs, r->res.caprecs, 1024) != 0) {
    rec_free(rec);
    r->res.fatal = -ENOMEM;
  } else {
    r->res.recs[r->res.nrecs++] = *rec;
  }
}

/* A file that gets no job (skipped, or failed before it could start).
 * Takes ownership of rel.
 */
void pc__record_skip(pc__run_t *r, uint32_t root, char *rel, const char *full,
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
      if (r->cfg.spec.formats & PC_FMT_BIT(f))
        rec.out[f].state = PC_OUT_FAILED;
  }
  r->res.progress.files_total++;
  record(r, &rec, full, full);
}

/* An unchanged file's deltas, as the earlier manifest lists them (their
 * dictionary names are its table's, which lives as long as the run). 0 or
 * -ENOMEM.
 */
static int unchanged_deltas(const pc__run_t *r, const pc__prev_rec_t *prev,
                            pc__rec_t *rec) {
  const pc__prev_delta_t *ds = pc__prev_deltas(r->prev, prev);
  uint32_t k;

  if ((rec->deltas = calloc(prev->ndeltas, sizeof(*rec->deltas))) == NULL ||
      (rec->dstats = calloc(prev->ndeltas, sizeof(*rec->dstats))) == NULL) {
    free(rec->deltas);
    return -ENOMEM;
  }
  for (k = 0; k < prev->ndeltas; k++) {
    pc_delta_t *x = &rec->deltas[k];
    x->format = (pc_delta_format_t)ds[k].format;
    x->skip = (pc_delta_skip_t)ds[k].skip;
    x->size = ds[k].size;
    x->from = ds[k].from;
    x->dictionary = pc__prev_dict(r->prev, &ds[k]);
    memcpy(x->sha256, ds[k].sha256, sizeof(x->sha256));
    rec->dstats[k].size = ds[k].dict_size;
    rec->dstats[k].mtime_ns = ds[k].dict_mtime_ns;
  }
  rec->ndeltas = prev->ndeltas;
  return 0;
}

/* The line of the earlier manifest's record `prev` (of root `root`), into
 * rec: the file named by the record's own path. 0 or -ENOMEM.
 */
static int prev_line(const pc__run_t *r, uint32_t root,
                     const pc__prev_rec_t *prev, pc__rec_t *rec) {
  int f;

  memset(rec, 0, sizeof(*rec));
  rec->path = (char *)pc__prev_path(r->prev, prev);
  rec->borrowed = 1;
  rec->root = root;
  rec->unchanged = 1;
  rec->size = prev->size;
  rec->mtime_ns = prev->mtime_ns;
  for (f = 0; f < PC_NFORMATS; f++) {
    rec->out[f].state = prev->out[f].state;
    rec->out[f].size = prev->out[f].size;
  }
  return prev->ndeltas > 0 ? unchanged_deltas(r, prev, rec) : 0;
}

/* A file whose outputs are current per `prev`, the earlier manifest's
 * record: its line names the file by the record's own path (the same
 * bytes as the walk's relative name: that is how it was found).
 */
void pc__record_unchanged(pc__run_t *r, uint32_t root, const char *full,
                          const pc__prev_rec_t *prev) {
  pc__rec_t rec;

  if (prev_line(r, root, prev, &rec) != 0) {
    r->res.fatal = -ENOMEM;
    return;
  }
  r->res.progress.files_total++;
  record(r, &rec, full, full);
}

/* A stopped run's manifest keeps the earlier one's records of the files
 * the run did not reach (a Ctrl-C, a cancelled CI job, `| head`), so the
 * next run reads only what changed, not all the stop left out. They say
 * what they said: the next run trusts one only while the file's size and
 * mtime and its outputs still match it. 0 or -ENOMEM.
 */
static int carry_unreached(pc__run_t *r) {
  size_t n = pc__prev_count(r->prev), k;
  unsigned char *seen;
  int err = 0;

  if (n == 0)
    return 0;
  if ((seen = calloc(n, 1)) == NULL)
    return -ENOMEM;
  for (k = 0; k < r->res.nrecs; k++) {
    const pc__prev_rec_t *p =
        pc__prev_find(r->prev, r->res.recs[k].root, r->res.recs[k].path);
    if (p != NULL)
      seen[pc__prev_index(r->prev, p)] = 1;
  }
  for (k = 0; k < n && err == 0; k++) {
    uint32_t root;
    const pc__prev_rec_t *p;
    if (seen[k])
      continue;
    p = pc__prev_at(r->prev, k, &root);
    if ((err = PC__GROW(r->res.recs, r->res.nrecs, r->res.caprecs, 1024)) ==
            0 &&
        (err = prev_line(r, root, p, &r->res.recs[r->res.nrecs])) == 0)
      r->res.nrecs++;
  }
  free(seen);
  return err;
}

/* An error about no one file (a directory that cannot be read). */
void pc__run_error(pc__run_t *r, const char *path, int err) {
  r->res.totals.errors++;
  if (r->opts->on_error != NULL)
    r->opts->on_error(r->opts->data, path, err);
}

void pc__record_job(pc__run_t *r, const pc__job_t *j) {
  pc__rec_t rec;

  memset(&rec, 0, sizeof(rec));
  rec.path = pc__strdup(j->fullpath + j->rel_off);
  if (rec.path == NULL) {
    r->res.fatal = -ENOMEM;
    return;
  }
  rec.root = j->root;
  rec.err = j->res.err;
  rec.skip = j->skip;
  /* A link not followed: its target's size is not the run's to tell. */
  rec.size = j->skip == PC_SKIP_LINK_OWNER ? 0 : j->size;
  rec.mtime_ns = j->mtime_ns;
  rec.deduped = j->res.copied;
  rec.cached = j->res.cached;
  rec.remote_hits = j->res.remote_hits;
  rec.remote_rejected = j->res.remote_rejected;
  rec.alone = j->unit.alone;
  memcpy(rec.out, j->res.out, sizeof(rec.out));
  if (j->res.ndeltas > 0) {
    size_t n = j->res.ndeltas * sizeof(*rec.deltas);
    size_t ns = j->res.ndeltas * sizeof(*rec.dstats);
    if ((rec.deltas = malloc(n)) == NULL || (rec.dstats = malloc(ns)) == NULL) {
      free(rec.deltas);
      free(rec.path);
      r->res.fatal = -ENOMEM;
      return;
    }
    memcpy(rec.deltas, j->res.deltas, n);
    memcpy(rec.dstats, j->res.dstats, ns);
    rec.ndeltas = j->res.ndeltas;
  }
  record(r, &rec, j->fullpath,
         j->res.err_path != NULL ? j->res.err_path : j->fullpath);
}

/* The run's manifest: its options and its records, to `to`. */
static int write_manifest(pc__run_t *r, const pc__mdest_t *to) {
  pc__mdoc_t d;
  char **labels = malloc((r->nroots ? r->nroots : 1) * sizeof(*labels));
  uint32_t k;
  int err;

  if (labels == NULL)
    return -ENOMEM;
  for (k = 0; k < r->nroots; k++)
    labels[k] = r->roots[k].label;
  memset(&d, 0, sizeof(d));
  d.spec = r->cfg.spec;
  d.labels = labels;
  d.nroots = r->nroots;
  d.recs = r->res.recs;
  d.nrecs = r->res.nrecs;
  d.incomplete = r->run.stopping;
  d.dicts = r->opts->dict_dirs;
  d.ndicts = r->cfg.deltas != 0 ? r->opts->n_dict_dirs : 0;
  err = pc__manifest_write_doc(&d, to);
  free(labels);
  return err;
}

void pc__record_manifest(pc__run_t *r) {
  const pc_options_t *opts = r->opts;
  pc__mdest_t to;
  int err;

  memset(&to, 0, sizeof(to));
  to.path = opts->manifest;
  to.write = opts->manifest_write;
  to.data = opts->data;
  to.checked = &r->man_old;
  to.sync = r->cfg.fsync;
  if ((r->run.stopping && (err = carry_unreached(r)) != 0) ||
      (err = write_manifest(r, &to)) != 0)
    pc__run_error(r, opts->manifest, err);
}
