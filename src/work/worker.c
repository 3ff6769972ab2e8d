/* The worker side of one unit of files, each as phases (job_run); the
 * incremental check, dedupe, the cache and settling are each their own
 * file's. The job's state while it runs is a pc__work_t on this stack
 * (work.h), never in the job.
 *
 * The file is read once, in chunks, and every enabled encoder is fed from
 * the same chunk. Output collects in memory and spills to the format's temp
 * file once it passes PC__SPILL, so memory per job stays near PC__CHUNK +
 * PC__SPILL per format whatever the file's size. A format whose output
 * already exceeds what the keep rule allows is dropped at once: its output
 * only grows.
 *
 * Before compressing, the file is hashed and its content claimed (dedup.h).
 * A file up to PC__CHUNK is read whole for that and compressed from the same
 * buffer; a larger one is hashed in a first pass and read again to
 * compress (from the page cache: cheap beside the codecs). That second read
 * is hashed too, and must give the first one's hash before anything is
 * stored in the cache, published to identical files or renamed into place:
 * whoever owns the file could rewrite it between the two reads and put its
 * mtime back, and the outputs of their bytes would then stand for the
 * bytes hashed.
 */
#include "work/worker.h"

#include "work/cache.h"
#include "work/dedup.h"
#include "fs/below.h"
#include "work/deltajob.h"
#include "work/incremental.h"
#include "fs/linkrule.h"
#include "work/settle.h"
#include "work/work.h"

#include <fcntl.h>
#if PC_HAVE_OPENAT2
#include <linux/openat2.h>
#include <sys/syscall.h>
#endif
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

uint64_t pc__work_mem(const pc__job_t *j) {
  const pc__cfg_t *cfg = j->cfg;
  uint64_t size = j->size;
  uint64_t m = pc__deltas_mem(j), in = size < PC__CHUNK ? size : PC__CHUNK;
  uint64_t out = size < PC__SPILL ? size : PC__SPILL;
  int f;

  /* The file's bytes (whole, or one chunk of the hashing pass and one of
   * the compressing pass: counted twice, though one is freed before the
   * other is taken), and per format its encoder and the output held
   * until it spills, which pc__buf_reserve() may have doubled past PC__SPILL.
   */
  m += 2 * in;
  for (f = 0; f < PC_NFORMATS; f++)
    if (cfg->spec.formats & PC_FMT_BIT(f))
      m += pc__enc_mem((pc_format_t)f, cfg->spec.level[f],
                       cfg->spec.gzip_engine, size) +
           2 * out + ((uint64_t)64 << 10);
  return m;
}

/* Opens the directory holding the file into *pdir, below its root and,
 * unless --follow made symlinked directories part of the tree, through no
 * symlink: a directory swapped for a link since the walk must not send
 * reads or writes outside the tree. Every name the job uses is then
 * relative to it, which also lifts PATH_MAX from temp names; a directory
 * deeper than PATH_MAX is opened a piece of its path at a time, each
 * piece below the last. A file at the top of its root gets the root's own
 * descriptor, borrowed; else *pdir owns what was opened.
 */
static int open_pdir(const pc__job_t *j, pc__dirfd_t *pdir) {
  const char *rel = j->fullpath + j->rel_off;
  const char *slash = strrchr(rel, '/');
  pc__dirfd_t base = {j->root_fd, 0};
  char *dir, *p;
  int err = 0;

  if (slash == NULL) {
    *pdir = base;
    return 0;
  }
  if ((dir = malloc((size_t)(slash - rel) + 1)) == NULL)
    return -ENOMEM;
  memcpy(dir, rel, (size_t)(slash - rel));
  dir[slash - rel] = '\0';
  for (p = dir; *p != '\0';) {
    size_t n = strlen(p);
    char *next = p + n;
    int fd;
    if (n >= PATH_MAX) {
      /* The longest piece that ends at a '/' and fits. */
      char *cut = p + PATH_MAX - 1;
      while (cut > p && *cut != '/')
        cut--;
      if (cut == p) {
        err = -ENAMETOOLONG;
        break;
      }
      *cut = '\0';
      next = cut + 1;
    }
    fd = pc__open_below(base.fd, p, j->cfg->follow);
    pc__dirfd_close(&base);
    if (fd < 0) {
      err = fd;
      break;
    }
    base.fd = fd;
    base.own = 1;
    p = next;
  }
  free(dir);
  if (err != 0)
    return err; /* base closed above */
  *pdir = base;
  return 0;
}

/* Forgets the format's work so far (encoder, buffer, temp file). */
static void drop(const pc__job_t *j, pc__fmt_t *s) {
  if (s->hit.rd != NULL)
    pc__store_release(j->cfg->cache, &s->hit);
  pc__enc_free(s->enc);
  s->enc = NULL;
  free(s->keep); /* not published: a failed leader's */
  s->keep = NULL;
  pc__out_discard(&s->out);
  pc__buf_free(&s->buf);
  s->total = 0;
  s->on = 0;
}

/* Feeds the whole source to every format: from `whole` when the file is in
 * memory (hashed from that very buffer), else read in chunks from fd, each
 * chunk hashed as the encoders get it: `h` (the content's hash, when the
 * job has one) must come out again, or the file changed since it was
 * hashed (PC_ECHANGED), and nothing compressed here may be kept.
 */
static int compress_all(pc__work_t *w, uint64_t limit) {
  pc__job_t *j = w->j;
  const unsigned char *whole = w->whole;
  const uint64_t *h = w->have_hash ? w->h : NULL;
  size_t bufsize = j->size < PC__CHUNK ? (size_t)j->size : PC__CHUNK;
  uint64_t done = 0;
  unsigned char *buf = NULL;
  XXH3_state_t *xs = NULL;
  int err = 0, f;

  if (whole == NULL && ((buf = malloc(bufsize)) == NULL ||
                        (h != NULL && (xs = XXH3_createState()) == NULL))) {
    free(buf);
    return -ENOMEM;
  }
  if (xs != NULL)
    XXH3_128bits_reset(xs);
  while (done < j->size) {
    size_t got = j->size - done < bufsize ? (size_t)(j->size - done) : bufsize;
    const unsigned char *in = whole;
    if (whole == NULL) {
      if ((err = pc__read_full(w->fd, buf, got, -1)) != 0)
        goto out;
      if (xs != NULL)
        XXH3_128bits_update(xs, buf, got);
      in = buf;
    } else {
      got = (size_t)j->size;
    }
    done += got;
    if (pc__job_stopping(j)) {
      err = PC_EINTERRUPTED;
      goto out;
    }
    for (f = 0; f < PC_NFORMATS; f++) {
      pc__fmt_t *s = &w->fs[f];
      size_t before;
      if (!s->on)
        continue;
      before = s->buf.len;
      if ((err = pc__enc_feed(s->enc, in, got, done == j->size, &s->buf)) != 0)
        goto out;
      s->total += s->buf.len - before;
      if (s->total > limit) {
        drop(j, s);
        continue;
      }
      if (s->buf.len >= PC__SPILL && (err = pc__settle_spill(w, s)) != 0) {
        pc__job_fail(j, err, s->final);
        goto out;
      }
    }
  }
  if (xs != NULL) {
    XXH128_hash_t x = XXH3_128bits_digest(xs);
    if (x.low64 != h[0] || x.high64 != h[1])
      err = PC_ECHANGED;
  }
out:
  XXH3_freeState(xs);
  free(buf);
  return err;
}

/* FILE.ext for every enabled format (with --output-dir DIR/REL.ext), and
 * where its base name starts.
 */
static int name_outputs(pc__work_t *w) {
  pc__job_t *j = w->j;
  const char *path = j->fullpath, *dir = j->cfg->spec.output_dir;
  size_t n, dl = 0, base = pc__job_base_off(j);
  int f;

  if (j->cfg->spec.output_dir != NULL) {
    path = j->fullpath + j->rel_off;
    dl = strlen(dir) + 1; /* "DIR/" */
    base = base - j->rel_off + dl;
  }
  n = strlen(path);
  w->named = 1;
  for (f = 0; f < PC_NFORMATS; f++) {
    const char *ext = pc_format_ext((pc_format_t)f);
    char *p;
    if (!(j->cfg->spec.formats & PC_FMT_BIT(f)))
      continue;
    if ((p = w->fs[f].final = malloc(dl + n + 1 + strlen(ext) + 1)) == NULL) {
      pc__job_fail(j, -ENOMEM, NULL);
      return -ENOMEM;
    }
    if (dl > 0) {
      memcpy(p, dir, dl - 1);
      p[dl - 1] = '/';
    }
    memcpy(p + dl, path, n);
    p[dl + n] = '.';
    strcpy(p + dl + n + 1, ext);
    w->fs[f].base = p + base;
    w->fs[f].fresh = (j->absent & PC_FMT_BIT(f)) != 0;
  }
  return 0;
}

/* The job's output directory into w->odir: its own directory, borrowed,
 * in place; with --output-dir the mirror of it below DIR, opened through
 * no symlink (owned), or when that is missing -1 and every output absent
 * (made by the first write). 0, or the job's error.
 */
static int open_odir(pc__work_t *w) {
  pc__job_t *j = w->j;
  const pc__cfg_t *c = j->cfg;
  const char *rel;
  size_t len;
  char *path;
  int fd;

  if (c->spec.output_dir == NULL) {
    w->odir = pc__dirfd_borrow(w->pdir);
    return 0;
  }
  if (w->odir.fd >= 0) /* an earlier job of its unit opened or made it */
    return 0;
  rel = pc__job_reldir(j, &len);
  fd = c->out_fd >= 0 ? pc__out_dir(c->out_fd, rel, len, 0) : -ENOENT;
  if (fd >= 0 || fd == -ENOENT) {
    w->odir.fd = fd;
    w->odir.own = fd >= 0;
    if (fd < 0)
      j->absent |= c->spec.formats;
    return 0;
  }
  /* Named as "DIR/REL-DIR": the directory that is not one to follow. */
  if ((path = malloc(strlen(c->spec.output_dir) + 1 + len + 1)) != NULL) {
    strcpy(path, c->spec.output_dir);
    if (len > 0) {
      strcat(path, "/");
      strncat(path, rel, len);
    }
  }
  pc__job_fail(j, fd, path != NULL ? path : c->spec.output_dir);
  free(path);
  return fd;
}

/* The phases below return 0 to go on, or a negative code: the job's
 * error (recorded), or PC__EDONE (common.h) when it ended without one.
 */

/* Phase 1: the file's directory, the incremental check, the output names.
 * A file skipped now (empty, or under --min-size) ends here: outputs made
 * while the file had other content no longer match it and are removed, as
 * any output not kept (a server must never serve an old body for a new
 * file).
 */
static int prepare(pc__work_t *w) {
  pc__job_t *j = w->j;
  int err, f;

  if (w->pdir.fd < 0 && (err = open_pdir(j, &w->pdir)) != 0)
    return pc__job_failed(j, err, NULL);
  if ((err = open_odir(w)) != 0 ||
      (j->prev != NULL && (err = pc__incremental_check(w)) != 0) ||
      (err = name_outputs(w)) != 0)
    return err;
  if (j->skip == PC_SKIP_NONE)
    return 0;
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(j->cfg->spec.formats & PC_FMT_BIT(f)) || (j->absent & PC_FMT_BIT(f)))
      continue;
    if ((err = pc__settle(w, f)) != 0)
      return err;
    w->settled[f] = 1;
  }
  return PC__EDONE;
}

/* Phase 2: opens the source, still a regular file (never through a symlink
 * that appeared since the walk, nor one the rule does not follow: skipped,
 * linkrule.h; O_NONBLOCK: a FIFO swapped in must not block the worker).
 */
static int open_source(pc__work_t *w) {
  pc__job_t *j = w->j;
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  const char *name = j->fullpath + pc__job_base_off(j);
  int f, err;

  if (j->via_link) {
    /* A symlink: followed only as linkrule.h says, else skipped unread. */
    if ((err = pc__link_open(w->pdir.fd, name, j->root_fd, flags, &w->fd,
                             &w->st)) != 0)
      return pc__job_failed(j, err, NULL);
    if (w->fd < 0) {
      j->skip = PC_SKIP_LINK_OWNER;
      j->mtime_ns = 0;
      return PC__EDONE;
    }
  } else if ((w->fd = openat(w->pdir.fd, name, flags | O_NOFOLLOW)) < 0 ||
             fstat(w->fd, &w->st) != 0) {
    return pc__job_failed(j, PC__ERRNO(), NULL);
  }
  if (j->dd.content != NULL) {
    /* Back from waiting: the file must be the one hashed before (kept in
     * the job then: size and mtime, and what its owner cannot put back,
     * inode and ctime), and its outputs get the atime it had then: our
     * own hashing read moved it since.
     */
    if ((uint64_t)w->st.st_size != j->size ||
        pc__ns(w->st.st_mtim) != j->mtime_ns ||
        pc__ns(w->st.st_ctim) != j->seen.ctime_ns ||
        w->st.st_dev != j->seen.dev || w->st.st_ino != j->seen.ino)
      return pc__job_failed(j, PC_ECHANGED, NULL);
    w->st.st_atim = j->seen.atime0;
  }
  j->seen.atime0 = w->st.st_atim;
  j->mtime_ns = pc__ns(w->st.st_mtim);
  j->seen.ctime_ns = pc__ns(w->st.st_ctim);
  j->seen.dev = w->st.st_dev;
  j->seen.ino = w->st.st_ino;
  if (!S_ISREG(w->st.st_mode))
    return pc__job_failed(j, PC_ENOTREG, NULL);
  j->size = (uint64_t)w->st.st_size;
  /* Emptied since the walk: nothing to keep, old outputs are stale. */
  for (f = 0; f < PC_NFORMATS; f++)
    if (j->cfg->spec.formats & PC_FMT_BIT(f))
      j->res.out[f].state = PC_OUT_RATIO;
  return 0;
}

/* Phase 4: every format's result, from the cache or compressed here, and
 * the keep rule.
 */
static int compress(pc__work_t *w) {
  pc__job_t *j = w->j;
  uint64_t limit;
  unsigned want = 0;
  int any = 0, f, err;

  if (j->size == 0 || j->res.copied)
    return 0;
  limit =
      pc__keep_limit(j->size, j->cfg->spec.ratio_num, j->cfg->spec.ratio_den);
  /* The local cache first, then the remote one for what it lacks (every
   * format in one round trip).
   */
  for (f = 0; f < PC_NFORMATS; f++)
    if ((j->cfg->spec.formats & PC_FMT_BIT(f)) &&
        !(j->cfg->cache != NULL && w->have_hash && pc__cache_get(w, f, limit)))
      want |= PC_FMT_BIT(f);
  if (want != 0 && j->cfg->remote != NULL && w->have_hash)
    want = pc__cache_fetch(w, want, limit);
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(want & PC_FMT_BIT(f)))
      continue;
    if ((err = pc__enc_new(&w->fs[f].enc, (pc_format_t)f, j->cfg->spec.level[f],
                           j->cfg->spec.gzip_engine, j->size, j->cfg->jobs,
                           j->cfg->spares)) != 0)
      return pc__job_failed(j, err, NULL);
    w->fs[f].on = 1;
    any = 1;
  }
  j->res.cached = !any && (j->cfg->cache != NULL || j->cfg->remote != NULL);
  if (any && (err = compress_all(w, limit)) != 0)
    return pc__job_failed(j, err, NULL);
  for (f = 0; f < PC_NFORMATS; f++) {
    const pc__fmt_t *s = &w->fs[f];
    if (!(j->cfg->spec.formats & PC_FMT_BIT(f)) || s->cached)
      continue;
    if (s->on && pc__keep(j->size, s->total, j->cfg->spec.ratio_num,
                          j->cfg->spec.ratio_den)) {
      j->res.out[f].state = PC_OUT_KEPT;
      j->res.out[f].size = s->total;
    }
  }
  return 0;
}

/* Phase 5: the same size, mtime and ctime after the read as before it, or
 * what was read may be a mix of two versions. The ctime because the
 * file's owner can put size and mtime back (utime()) and not it. The hash
 * check of compress_all() is what proves the bytes; this one also covers
 * outputs copied or taken from the cache (no second read). Closes the
 * source.
 */
static int check_unchanged(pc__work_t *w) {
  pc__job_t *j = w->j;
  struct stat after;

  if (fstat(w->fd, &after) != 0)
    return pc__job_failed(j, PC__ERRNO(), NULL);
  if (after.st_size != w->st.st_size ||
      pc__ns(after.st_mtim) != pc__ns(w->st.st_mtim) ||
      pc__ns(after.st_ctim) != pc__ns(w->st.st_ctim))
    return pc__job_failed(j, PC_ECHANGED, NULL);
  close(w->fd);
  w->fd = -1;
  return 0;
}

/* Phase 6: every format's output settled (settle.h). What was compressed
 * here goes into the cache for the next run: a kept output by pc__settle()
 * from its own bytes, a rejection here.
 */
static void settle_outputs(pc__work_t *w) {
  int f;

  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(w->j->cfg->spec.formats & PC_FMT_BIT(f)))
      continue;
    pc__cache_mark(w, &w->fs[f]);
    if (pc__settle(w, f) != 0)
      break;
    w->settled[f] = 1;
    pc__cache_put_rejected(w, f);
  }
}

/* Last: publishes a leader's result, frees the job's state and, when it
 * failed, the formats not settled are failed and their old outputs go.
 */
static void finish(pc__work_t *w) {
  pc__job_t *j = w->j;
  int f;

  /* Followers wait on this: a leader always publishes, failed or not. */
  pc__dedup_lead_done(w);
  if (w->fd >= 0)
    close(w->fd);
  free(w->whole);
  pc__deltas_free(w);
  for (f = 0; f < PC_NFORMATS; f++) {
    drop(j, &w->fs[f]);
    /* An output settled before the failure is on disk and valid. */
    if (j->res.err != 0 && (j->cfg->spec.formats & PC_FMT_BIT(f)) &&
        !w->settled[f]) {
      j->res.out[f].state = PC_OUT_FAILED;
      j->res.out[f].action = PC_ACT_NONE;
      pc__settle_unproven(w, f);
    }
    free(w->fs[f].final);
  }
  /* Last (the temp files above were removed relative to them): the
   * directories the job owns. One it borrowed is its unit's, or its
   * root's.
   */
  pc__dirfd_close(&w->odir);
  pc__dirfd_close(&w->pdir);
}

/* One file, as phases. `pdir` is its directory when the unit opened it
 * for all its jobs (borrowed), else none: the job then opens (and closes)
 * its own. `odir`, when not NULL, is the unit's output directory, shared
 * by its jobs (--output-dir): the job borrows it, and one it opened or
 * made goes to the unit for the next job.
 */
static void job_run(pc__job_t *j, pc__dirfd_t pdir, pc__dirfd_t *odir,
                    pc__prefetch_t *pf) {
  pc__work_t w;
  int f;

  memset(&w, 0, sizeof(w));
  w.j = j;
  w.pf = pf;
  for (f = 0; f < PC_NFORMATS; f++)
    w.fs[f].out = (pc__out_t)PC__OUT_INIT;
  w.fd = -1;
  w.pdir = pc__dirfd_borrow(pdir);
  w.odir = odir != NULL ? pc__dirfd_borrow(*odir) : (pc__dirfd_t)PC__DIRFD_NONE;
  if (prepare(&w) == 0 && open_source(&w) == 0 && pc__dedup_step(&w) == 0 &&
      compress(&w) == 0 && pc__deltas_make(&w) == 0 && check_unchanged(&w) == 0)
    settle_outputs(&w);
  /* Not for a file the incremental check found unchanged (or gone, or to
   * be scheduled again): its deltas stand as they are; nor for one parked
   * until an identical file's leader is done: it runs again then.
   */
  if ((j->cfg->deltas != 0 || j->old_deltas != NULL) &&
      j->res.outcome == PC__CHECK_NONE && !j->dd.wait)
    pc__deltas_settle(&w);
  if (odir != NULL && w.odir.own) { /* what the job found or made */
    *odir = w.odir;
    w.odir.own = 0;
  }
  finish(&w);
}

void pc__work_unit(pc__job_t *head) {
  pc__dirfd_t pdir = PC__DIRFD_NONE, odir = PC__DIRFD_NONE;
  int shared = head->unit.next != NULL && head->cfg->spec.output_dir != NULL;
  pc__prefetch_t pf = {NULL, 0};
  pc__job_t *j;

  /* The unit's jobs share a directory: open it once. When that fails, each
   * job tries on its own and reports its own error.
   */
  if (head->unit.next != NULL && open_pdir(head, &pdir) != 0)
    pdir = (pc__dirfd_t)PC__DIRFD_NONE;
  /* Small files: their lookups share one read snapshot of the cache. */
  if (head->unit.next != NULL)
    pc__store_pin(head->cfg->cache);
  /* ... and their remote lookups go out together: one round trip for the
   * unit (on the 100,000-file corpus a round trip per file was most of a
   * run's time).
   */
  if (head->unit.next != NULL && head->cfg->remote != NULL && pdir.fd >= 0)
    pc__cache_prefetch(head, pdir.fd, &pf);
  for (j = head; j != NULL; j = j->unit.next) {
    if (j != head && pc__job_stopping(j)) {
      j->res.err = PC_EINTERRUPTED;
      continue;
    }
    job_run(j, pdir, shared ? &odir : NULL, &pf);
  }
  pc__cache_prefetch_free(&pf);
  if (head->unit.next != NULL)
    pc__store_unpin(head->cfg->cache);
  pc__dirfd_close(&odir);
  pc__dirfd_close(&pdir);
}
