/* Settling one file's outputs: keep (create, replace or refresh through
 * the output protocol, out.h), remove a stale one, or, for a file that
 * failed, remove what nothing shows still matches it (a server must
 * never serve an old body for a new file).
 */
#include "work/settle.h"

#include "work/cache.h"
#include "work/dedup.h"
#include "common/names.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

/* Moves buffered output to the temp file (created on first use). In a dry
 * run nothing is written: only the count matters.
 */
int pc__settle_spill(pc__work_t *w, pc__fmt_t *s) {
  int err;

  if (w->j->cfg->dry_run) {
    s->buf.len = 0;
    return 0;
  }
  if (s->out.fd < 0 && (err = pc__work_out_open(w, s)) != 0)
    return err;
  err = pc__out_write(&s->out, s->buf.data, s->buf.len);
  s->buf.len = 0;
  return err;
}

/* Writes (or in a dry run, classifies) format f's output. */
int pc__settle(pc__work_t *w, int f) {
  pc__job_t *j = w->j;
  pc__fmt_t *s = &w->fs[f];
  pc_output_t *o = &j->res.out[f];
  struct stat ost;
  int exists, whole, err;

  /* The walk's listing of the directory lacked the name: it is taken as
   * absent, which saves a failing lookup per output on a fresh tree. Should
   * something create it since, the rename still replaces it atomically (or
   * fails on a directory); only the action reported says "created".
   */
  exists = !(j->absent & PC_FMT_BIT(f)) &&
           fstatat(w->odir.fd, s->base, &ost, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && !(j->absent & PC_FMT_BIT(f)) && errno != ENOENT) {
    pc__job_fail(j, PC__ERRNO(), s->final);
    return j->res.err;
  }
  if (o->state != PC_OUT_KEPT) {
    /* Not kept: an old output there no longer matches the source. A
     * directory is not ours to remove.
     */
    if (!exists || S_ISDIR(ost.st_mode))
      return 0;
    o->action = PC_ACT_REMOVE;
    if (!j->cfg->dry_run && unlinkat(w->odir.fd, s->base, 0) != 0 &&
        errno != ENOENT) {
      pc__job_fail(j, PC__ERRNO(), s->final);
      return j->res.err;
    }
    return 0;
  }
  if (exists && S_ISDIR(ost.st_mode)) {
    pc__job_fail(j, PC_EOUTDIR, s->final);
    return j->res.err;
  }
  if (!exists)
    o->action = PC_ACT_CREATE;
  else if (S_ISREG(ost.st_mode) && (uint64_t)ost.st_size == o->size &&
           ost.st_mtim.tv_sec == w->st.st_mtim.tv_sec &&
           ost.st_mtim.tv_nsec == w->st.st_mtim.tv_nsec)
    o->action = PC_ACT_REFRESH;
  else
    o->action = PC_ACT_REPLACE;
  if (j->cfg->dry_run)
    return 0;
  if (s->hit.rd != NULL && (err = pc__cache_copy(w, s, o->size)) != 0)
    return err;
  whole = s->out.fd < 0 && s->buf.len == o->size;
  if ((err = pc__settle_spill(w, s)) != 0) {
    pc__job_fail(j, err, s->final);
    return err;
  }
  if (whole) /* pc__settle_spill() empties buf but keeps its bytes */
    s->mem = s->buf.data;
  if (s->hit.mem != NULL) /* the store's copy, until the release below */
    s->mem = s->hit.mem;
  if (j->dd.lead)
    pc__dedup_keep(w, s, o->size);
  if (s->hit.rd != NULL) {
    if (s->mem == s->hit.mem)
      s->mem = NULL;
    pc__store_release(j->cfg->cache, &s->hit);
  }
  /* Into the cache from our own bytes (in memory, or through the temp's
   * descriptor before the rename), never from the name: once renamed, the
   * output is in a directory others may write.
   */
  if (s->hash != NULL)
    pc__cache_put_kept(w, f, o->size);
  if ((err = pc__out_commit(&s->out, s->base, &w->st, j->cfg->fsync)) != 0)
    pc__job_fail(j, err, s->final);
  return err;
}

/* A failed file's output that this run did not settle: it was made from
 * the file as it was, and nothing shows it matches the file as it is now
 * (unreadable, changed while read, its new output not written), so it goes:
 * a server must not serve it. Left alone when the file is gone
 * (outputs whose source is gone are never touched), when the run was
 * stopped before deciding, or when it is a directory (not ours).
 */
void pc__settle_unproven(pc__work_t *w, int f) {
  pc__job_t *j = w->j;
  char name[NAME_MAX + 1];
  const char *base = w->fs[f].base;
  struct stat ost;

  /* The job failed building the output names (short of memory): this
   * one's is made here, where nothing may fail. Too long a name has no
   * output to remove.
   */
  if (base == NULL && w->named) {
    const char *src = j->fullpath + pc__job_base_off(j);
    if (pc__output_name(src, strlen(src), (pc_format_t)f, name) == 0)
      base = name;
  }
  if (j->res.err == PC_EINTERRUPTED || j->res.err == -ENOENT ||
      w->odir.fd < 0 || base == NULL || (j->absent & PC_FMT_BIT(f)) ||
      fstatat(w->odir.fd, base, &ost, AT_SYMLINK_NOFOLLOW) != 0 ||
      S_ISDIR(ost.st_mode))
    return;
  if (j->cfg->dry_run || unlinkat(w->odir.fd, base, 0) == 0 || errno == ENOENT)
    j->res.out[f].action = PC_ACT_REMOVE;
}
