/* The incremental check: is this file unchanged since the earlier
 * manifest (prev.h holds its records)? Its size and mtime as recorded,
 * every output it kept there as recorded and stamped with the source's
 * mtime, none it did not keep. A stat per output, never a read. The walk
 * asks it for a file it statted (run.c), a worker for one handed on
 * unstatted (pc__incremental_check).
 */
#include "work/incremental.h"

#include "codec/delta.h"
#include "common/names.h"
#include "work/dictset.h"
#include "work/work.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>

int pc__outputs_current(unsigned formats, const pc__prev_rec_t *p, int dfd,
                        const char *name, const struct stat *st,
                        unsigned absent) {
  size_t len = strlen(name);
  char oname[NAME_MAX + 1];
  int f;

  if (p->size != (uint64_t)st->st_size ||
      !pc__mtime_same(p->mtime_ns, pc__ns(st->st_mtim)))
    return 0;
  for (f = 0; f < PC_NFORMATS; f++) {
    struct stat ost;
    int there;
    if (!(formats & PC_FMT_BIT(f)))
      continue;
    if (absent & PC_FMT_BIT(f)) {
      if (p->out[f].state == PC_OUT_KEPT)
        return 0;
      continue;
    }
    if (pc__output_name(name, len, (pc_format_t)f, oname) != 0)
      return 0;
    there = fstatat(dfd, oname, &ost, AT_SYMLINK_NOFOLLOW) == 0;
    if (p->out[f].state == PC_OUT_KEPT) {
      if (!there || !S_ISREG(ost.st_mode) ||
          (uint64_t)ost.st_size != p->out[f].size ||
          ost.st_mtim.tv_sec != st->st_mtim.tv_sec ||
          ost.st_mtim.tv_nsec != st->st_mtim.tv_nsec)
        return 0;
    } else if (there || errno != ENOENT) {
      return 0;
    }
  }
  return 1;
}

/* One recorded delta still what this run would make: the same predecessor,
 * refused before it is read for the same reason (a link, an ambiguous key,
 * its readers, its size, ...), or read, refused for none now and
 * unchanged by size and mtime since, its output there as recorded and
 * stamped with its mtime (delta.h). One that could not be read, or grew
 * while it was, is tried again.
 */
static int delta_current(const pc__prev_t *prev, const pc__prev_delta_t *d,
                         const pc__dictfile_t *pred, int dfd, const char *name,
                         const struct stat *st) {
  char oname[NAME_MAX + 1];
  struct stat ost;

  if (pred == NULL || strcmp(pc__prev_dict(prev, d), pred->rel) != 0 ||
      d->skip == PC_DSKIP_ERROR || d->skip == PC_DSKIP_CHANGED)
    return 0;
  if (!pc__delta_read(d->sha256))
    return d->skip == pc__dictset_skip(pred, name, (uint64_t)st->st_size, st);
  if (pc__dictset_skip(pred, name, (uint64_t)st->st_size, st) !=
          PC_DSKIP_NONE ||
      d->dict_size != pred->size ||
      !pc__mtime_same(d->dict_mtime_ns, pred->mtime_ns))
    return 0;
  if (d->skip != PC_DSKIP_NONE)
    return 1;
  return pc__delta_name(name, d->sha256, (pc_delta_format_t)d->format, oname) ==
             0 &&
         fstatat(dfd, oname, &ost, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(ost.st_mode) && (uint64_t)ost.st_size == d->size &&
         pc__ns(ost.st_mtim) ==
             pc__ns(pc__delta_mtime(st->st_mtim, d->from, d->format));
}

int pc__deltas_current(const pc__prev_t *prev, const pc__prev_rec_t *p,
                       const pc__cfg_t *c, const pc__dictfile_t *const *preds,
                       char *const *old, int dfd, const char *name,
                       const struct stat *st) {
  const pc__prev_delta_t *ds = pc__prev_deltas(prev, p);
  unsigned want = 0, f, k, d;
  char oname[NAME_MAX + 1];

  /* As many as this run makes: one per format for each predecessor. */
  for (d = 0; c->deltas != 0 && d < c->dicts->ndirs; d++)
    if (preds[d] != NULL)
      for (f = 0; f < PC_NDELTAS; f++)
        want += (c->deltas & PC_DELTA_BIT(f)) != 0;
  if (p->ndeltas != want)
    return 0;
  for (k = 0; k < p->ndeltas; k++)
    if (!delta_current(prev, &ds[k], preds[ds[k].from], dfd, name, st))
      return 0;
  /* No other delta output beside it: it would be stale. A run asked for
   * no deltas leaves those that fit the file by their mtime alone.
   */
  for (; old != NULL && *old != NULL; old++) {
    struct stat ost;
    for (k = 0; k < p->ndeltas; k++)
      if (ds[k].skip == PC_DSKIP_NONE &&
          pc__delta_name(name, ds[k].sha256, (pc_delta_format_t)ds[k].format,
                         oname) == 0 &&
          strcmp(oname, *old) == 0)
        break;
    if (k < p->ndeltas)
      continue;
    if (c->deltas != 0 || fstatat(dfd, *old, &ost, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(ost.st_mode) ||
        !pc__delta_mtime_fits(st->st_mtim, ost.st_mtim))
      return 0;
  }
  return 1;
}

/* The walk's part for a file it handed on unstat'ed (j->prev), as a
 * phase (worker.c): PC__EDONE when that settles it (res.outcome), the
 * job's error, or 0 to compress it now. The walk saw a regular file in
 * the listing; anything else here was swapped in since.
 */
int pc__incremental_check(pc__work_t *w) {
  pc__job_t *j = w->j;
  const char *base = j->fullpath + pc__job_base_off(j);
  const pc__cfg_t *c = j->cfg;
  struct stat st;

  if (fstatat(w->pdir.fd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT)
      return pc__job_failed(j, PC__ERRNO(), NULL);
    j->res.outcome = PC__CHECK_GONE; /* gone since the listing */
    return PC__EDONE;
  }
  if (!S_ISREG(st.st_mode))
    return pc__job_failed(j, PC_ENOTREG, NULL);
  if (c->man_known && st.st_dev == c->man_dev && st.st_ino == c->man_ino) {
    j->res.outcome = PC__CHECK_GONE; /* the manifest itself: never an input */
    return PC__EDONE;
  }
  w->st = st;
  j->size = (uint64_t)st.st_size;
  j->mtime_ns = pc__ns(st.st_mtim);
  if (st.st_size == 0 || (uint64_t)st.st_size < c->spec.min_size) {
    j->skip = st.st_size == 0 ? PC_SKIP_EMPTY : PC_SKIP_MIN_SIZE;
    j->prev = NULL;
    return 0; /* its old outputs are stale now: the job removes them */
  }
  if (pc__outputs_current(c->spec.formats, j->prev, w->odir.fd, base, &st,
                          j->absent) &&
      pc__deltas_current(c->prev, j->prev, c, j->preds, j->old_deltas,
                         w->odir.fd, base, &st)) {
    j->res.outcome = PC__CHECK_SAME;
    return PC__EDONE;
  }
  /* Scheduled by its recorded size: a new one may belong elsewhere (its
   * own unit, or the memory budget's).
   */
  if (j->size != j->prev->size) {
    j->res.outcome = PC__CHECK_RESIZED;
    return PC__EDONE;
  }
  j->prev = NULL; /* checked: a run again (after a dedupe wait) does not */
  return 0;
}

const pc__prev_rec_t *pc__incremental_lookup(const pc__prev_t *prev,
                                             size_t *hint, unsigned formats,
                                             uint32_t root, const char *rel,
                                             int dfd, const char *name,
                                             const struct stat *st,
                                             unsigned absent) {
  const pc__prev_rec_t *p = pc__prev_next(prev, root, rel, hint);
  if (p == NULL || !pc__outputs_current(formats, p, dfd, name, st, absent))
    return NULL;
  return p;
}
