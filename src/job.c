/* The worker side of one file, as phases (job_run); the incremental
 * check, dedupe, the cache and settling are each their own file's.
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
 * bytes hashed (issue 23).
 */
#include "job.h"

#include "cache.h"
#include "dedup.h"
#include "incremental.h"
#include "linkrule.h"
#include "settle.h"
#include "work.h"

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

pc__job_t *pc__job_new(char *fullpath, size_t rel_off, uint32_t root,
                       int root_fd, const struct stat *st, int via_link,
                       const pc__cfg_t *cfg) {
  pc__job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) {
    free(fullpath);
    return NULL;
  }
  j->fullpath = fullpath;
  j->rel_off = rel_off;
  j->root = root;
  j->root_fd = root_fd;
  j->size = (uint64_t)st->st_size;
  j->mtime_ns = pc__ns(st->st_mtim);
  j->via_link = via_link;
  j->cfg = cfg;
  j->pdir = -1;
  j->odir = -1;
  j->weight = j->size;
  return j;
}

uint64_t pc__job_mem(const pc__cfg_t *cfg, uint64_t size) {
  uint64_t m = 0, in = size < PC__CHUNK ? size : PC__CHUNK;
  uint64_t out = size < PC__SPILL ? size : PC__SPILL;
  int f;

  /* The file's bytes (whole, or one chunk of the hashing pass and one of
   * the compressing pass: counted twice, though one is freed before the
   * other is taken), and per format its encoder and the output held
   * until it spills, which pc__buf_reserve() may have doubled past PC__SPILL.
   */
  m += 2 * in;
  for (f = 0; f < PC_NFORMATS; f++)
    if (cfg->formats & PC_FMT_BIT(f))
      m += pc__enc_mem((pc_format_t)f, cfg->level[f], cfg->gzip_engine, size) +
           2 * out + ((uint64_t)64 << 10);
  return m;
}

void pc__job_free(pc__job_t *j) {
  while (j != NULL) {
    pc__job_t *next = j->batch;
    free(j->fullpath);
    free(j->err_path);
    free(j);
    j = next;
  }
}

/* Opens `dir`, a path below dirfd, O_PATH: through no symlink and not
 * out of dirfd unless --follow made symlinked directories part of the
 * tree. A descriptor, or a negative code.
 */
/* openat2() where the kernel lacks it (ENOSYS: before Linux 5.6) or a
 * seccomp profile refuses it (EPERM: Docker before 20.10, systemd-nspawn),
 * and where there is none (macOS, the BSDs, -Dportable=true):
 * one component at a time, each O_NOFOLLOW, which is what
 * RESOLVE_NO_SYMLINKS does; `dir` comes from the walk, so it holds no "..".
 * A descriptor, or -1 with errno set.
 */
static int open_each(int dirfd, const char *dir) {
  const int flags = PC_O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
  char part[NAME_MAX + 1];
  const char *p = dir;
  int fd = -1, at = dirfd;

  for (;;) {
    size_t n = strcspn(p, "/");
    if (n > NAME_MAX) {
      errno = ENAMETOOLONG;
      break;
    }
    if (n > 0) {
      int next;
      memcpy(part, p, n);
      part[n] = '\0';
      next = openat(at, part, flags);
      if (at != dirfd) {
        int e = errno;
        close(at);
        errno = e;
      }
      if (next < 0) {
        /* A directory at the walk, now a link or a file: as openat2's
         * ELOOP, the tree changed.
         */
        if (errno == ENOTDIR)
          errno = ELOOP;
        return -1;
      }
      at = next;
    }
    if (p[n] == '\0') {
      fd = at == dirfd ? openat(dirfd, ".", flags) : at;
      return fd;
    }
    p += n + 1;
  }
  if (at != dirfd)
    close(at);
  return -1;
}

static int open_beneath(const pc__job_t *j, int dirfd, const char *dir) {
#if PC_HAVE_OPENAT2
  struct open_how how;
#endif
  int fd;

#if PC_HAVE_OPENAT2
  memset(&how, 0, sizeof(how));
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = j->cfg->follow ? 0 : RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
  fd = (int)syscall(SYS_openat2, dirfd, dir, &how, sizeof(how));
  if (fd < 0 && (errno == ENOSYS || errno == EPERM))
#endif
    fd = j->cfg->follow
             ? openat(dirfd, dir, PC_O_PATH | O_DIRECTORY | O_CLOEXEC)
             : open_each(dirfd, dir);
  if (fd < 0)
    return errno == ELOOP || errno == EXDEV ? PC_ECHANGED : PC__ERRNO();
  return fd;
}

/* Opens the directory holding the file into *pdir, below its root and,
 * unless --follow made symlinked directories part of the tree, through no
 * symlink: a directory swapped for a link since the walk must not send
 * reads or writes outside the tree. Every name the job uses is then
 * relative to it, which also lifts PATH_MAX from temp names; a directory
 * deeper than PATH_MAX is opened a piece of its path at a time, each
 * piece below the last. A file at the top of its root gets the root's own
 * descriptor: not to be closed.
 */
static int open_pdir(const pc__job_t *j, int *pdir) {
  const char *rel = j->fullpath + j->rel_off;
  const char *slash = strrchr(rel, '/');
  int base = j->root_fd, err = 0;
  char *dir, *p;

  if (slash == NULL) {
    *pdir = j->root_fd;
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
    fd = open_beneath(j, base, p);
    if (base != j->root_fd)
      close(base);
    base = j->root_fd;
    if (fd < 0) {
      err = fd;
      break;
    }
    base = fd;
    p = next;
  }
  free(dir);
  if (err != 0) {
    if (base != j->root_fd)
      close(base);
    return err;
  }
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
static int compress_all(pc__job_t *j, int fd, pc__fmt_t *fs, uint64_t limit,
                        const unsigned char *whole, const uint64_t *h) {
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
      if ((err = pc__read_full(fd, buf, got, -1)) != 0)
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
      pc__fmt_t *s = &fs[f];
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
      if (s->buf.len >= PC__SPILL && (err = pc__settle_spill(j, s)) != 0) {
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

/* What job_run()'s phases share. */
typedef struct job_ctx {
  pc__fmt_t fs[PC_NFORMATS];
  int settled[PC_NFORMATS]; /* on disk and valid, whatever fails later */
  struct stat st;           /* the source as opened */
  unsigned char *whole;     /* the whole file, when hashed from memory */
  int fd;                   /* the source, while it is read */
  uint64_t h[2];            /* the content's hash, when have_hash */
  int have_hash;
  int own_pdir; /* the job opened its directory itself (not its unit) */
  int named;    /* the output names were being built: a failure since
                   owes its old outputs' removal */
} job_ctx_t;

/* FILE.ext for every enabled format (with --output-dir DIR/REL.ext), and
 * where its base name starts.
 */
static int name_outputs(pc__job_t *j, job_ctx_t *c) {
  const char *path = j->fullpath, *dir = j->cfg->out_label;
  size_t n, dl = 0, base = pc__job_base_off(j);
  int f;

  if (j->cfg->outdir) {
    path = j->fullpath + j->rel_off;
    dl = strlen(dir) + 1; /* "DIR/" */
    base = base - j->rel_off + dl;
  }
  n = strlen(path);
  c->named = 1;
  for (f = 0; f < PC_NFORMATS; f++) {
    const char *ext = pc_format_ext((pc_format_t)f);
    char *p;
    if (!(j->cfg->formats & PC_FMT_BIT(f)))
      continue;
    if ((p = c->fs[f].final = malloc(dl + n + 1 + strlen(ext) + 1)) == NULL) {
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
    c->fs[f].base = p + base;
  }
  return 0;
}

/* The job's output directory into j->odir: its own directory in place;
 * with --output-dir the mirror of it below DIR, opened through no symlink,
 * or when that is missing -1 and every output absent (made by the first
 * write). 0, or the job's error.
 */
static int open_odir(pc__job_t *j) {
  const pc__cfg_t *c = j->cfg;
  const char *rel;
  size_t len;
  char *path;
  int fd;

  if (!c->outdir) {
    j->odir = j->pdir;
    return 0;
  }
  if (j->odir >= 0) /* an earlier job of its unit opened or made it */
    return 0;
  rel = pc__job_reldir(j, &len);
  fd = c->out_fd >= 0 ? pc__out_dir(c->out_fd, rel, len, 0) : -ENOENT;
  if (fd >= 0 || fd == -ENOENT) {
    j->odir = fd;
    if (fd < 0)
      j->absent |= c->formats;
    return 0;
  }
  /* Named as "DIR/REL-DIR": the directory that is not one to follow. */
  if ((path = malloc(strlen(c->out_label) + 1 + len + 1)) != NULL) {
    strcpy(path, c->out_label);
    if (len > 0) {
      strcat(path, "/");
      strncat(path, rel, len);
    }
  }
  pc__job_fail(j, fd, path != NULL ? path : c->out_label);
  free(path);
  return fd;
}

/* Phase 1: the file's directory, the incremental check, the output names.
 * A file skipped now (empty, or under --min-size) ends here: outputs made
 * while the file had other content no longer match it and are removed, as
 * any output not kept (DESIGN 2.3). 1 when the job is done.
 */
static int prepare(pc__job_t *j, job_ctx_t *c) {
  int err, f;

  if (c->own_pdir && (err = open_pdir(j, &j->pdir)) != 0) {
    pc__job_fail(j, err, NULL);
    return 1;
  }
  if (open_odir(j) != 0)
    return 1;
  if (j->prev != NULL && pc__incremental_check(j))
    return 1;
  if (name_outputs(j, c) != 0)
    return 1;
  if (j->skip == PC_SKIP_NONE)
    return 0;
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(j->cfg->formats & PC_FMT_BIT(f)) || (j->absent & PC_FMT_BIT(f)))
      continue;
    if (pc__settle(j, f, &c->fs[f]) != 0)
      break;
    c->settled[f] = 1;
  }
  return 1;
}

/* Phase 2: opens the source, still a regular file (never through a symlink
 * that appeared since the walk, nor one the rule does not follow: skipped,
 * linkrule.h; O_NONBLOCK: a FIFO swapped in must not block the worker). 1
 * when the job fails or ends here.
 */
static int open_source(pc__job_t *j, job_ctx_t *c) {
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  const char *name = j->fullpath + pc__job_base_off(j);
  int f, r;

  if (j->via_link) {
    /* A symlink: followed only as linkrule.h says, else skipped unread. */
    if ((r = pc__link_open(j->pdir, name, j->root_fd, flags, &c->fd, &c->st)) <
        0) {
      pc__job_fail(j, r, NULL);
      return 1;
    }
    if (r == 0) {
      j->skip = PC_SKIP_LINK_OWNER;
      j->mtime_ns = 0;
      return 1;
    }
  } else if ((c->fd = openat(j->pdir, name, flags | O_NOFOLLOW)) < 0 ||
             fstat(c->fd, &c->st) != 0) {
    pc__job_fail(j, PC__ERRNO(), NULL);
    return 1;
  }
  if (j->dd.content != NULL) {
    /* Back from waiting: the file must be the one hashed before (kept in
     * the job then: size and mtime, and what its owner cannot put back,
     * inode and ctime), and its outputs get the atime it had then: our
     * own hashing read moved it since.
     */
    if ((uint64_t)c->st.st_size != j->size ||
        pc__ns(c->st.st_mtim) != j->mtime_ns ||
        pc__ns(c->st.st_ctim) != j->ctime_ns || c->st.st_dev != j->dev ||
        c->st.st_ino != j->ino) {
      pc__job_fail(j, PC_ECHANGED, NULL);
      return 1;
    }
    c->st.st_atim = j->atime0;
  }
  j->atime0 = c->st.st_atim;
  j->mtime_ns = pc__ns(c->st.st_mtim);
  j->ctime_ns = pc__ns(c->st.st_ctim);
  j->dev = c->st.st_dev;
  j->ino = c->st.st_ino;
  if (!S_ISREG(c->st.st_mode)) {
    pc__job_fail(j, PC_ENOTREG, NULL);
    return 1;
  }
  j->size = (uint64_t)c->st.st_size;
  /* Emptied since the walk: nothing to keep, old outputs are stale. */
  for (f = 0; f < PC_NFORMATS; f++)
    if (j->cfg->formats & PC_FMT_BIT(f))
      j->out[f].state = PC_OUT_RATIO;
  return 0;
}

/* Phase 4: every format's result, from the cache or compressed here, and
 * the keep rule. 1 when the job fails here.
 */
static int compress(pc__job_t *j, job_ctx_t *c) {
  uint64_t limit;
  int any = 0, f, err;

  if (j->size == 0 || j->copied)
    return 0;
  limit = pc__keep_limit(j->size, j->cfg->ratio_num, j->cfg->ratio_den);
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(j->cfg->formats & PC_FMT_BIT(f)))
      continue;
    if (j->cfg->cache != NULL && c->have_hash &&
        pc__cache_get(j, f, c->h, limit, &c->fs[f]))
      continue;
    if ((err = pc__enc_new(&c->fs[f].enc, (pc_format_t)f, j->cfg->level[f],
                           j->cfg->gzip_engine, j->size, j->cfg->jobs,
                           j->cfg->spares)) != 0) {
      pc__job_fail(j, err, NULL);
      return 1;
    }
    c->fs[f].on = 1;
    any = 1;
  }
  j->cached = !any && j->cfg->cache != NULL;
  if (any && (err = compress_all(j, c->fd, c->fs, limit, c->whole,
                                 c->have_hash ? c->h : NULL)) != 0) {
    pc__job_fail(j, err, NULL);
    return 1;
  }
  for (f = 0; f < PC_NFORMATS; f++) {
    const pc__fmt_t *s = &c->fs[f];
    if (!(j->cfg->formats & PC_FMT_BIT(f)) || s->cached)
      continue;
    if (s->on &&
        pc__keep(j->size, s->total, j->cfg->ratio_num, j->cfg->ratio_den)) {
      j->out[f].state = PC_OUT_KEPT;
      j->out[f].size = s->total;
    }
  }
  return 0;
}

/* Phase 5: the same size, mtime and ctime after the read as before it, or
 * what was read may be a mix of two versions. The ctime because the
 * file's owner can put size and mtime back (utime()) and not it. The hash
 * check of compress_all() is what proves the bytes; this one also covers
 * outputs copied or taken from the cache (no second read). Closes the
 * source. 1 when the job fails here.
 */
static int check_unchanged(pc__job_t *j, job_ctx_t *c) {
  struct stat after;

  if (fstat(c->fd, &after) != 0) {
    pc__job_fail(j, PC__ERRNO(), NULL);
    return 1;
  }
  if (after.st_size != c->st.st_size ||
      pc__ns(after.st_mtim) != pc__ns(c->st.st_mtim) ||
      pc__ns(after.st_ctim) != pc__ns(c->st.st_ctim)) {
    pc__job_fail(j, PC_ECHANGED, NULL);
    return 1;
  }
  close(c->fd);
  c->fd = -1;
  return 0;
}

/* Phase 6: every format's output settled (settle.h). What was compressed
 * here goes into the cache for the next run: a kept output by pc__settle()
 * from its own bytes, a rejection here.
 */
static void settle_outputs(pc__job_t *j, job_ctx_t *c) {
  int f;

  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(j->cfg->formats & PC_FMT_BIT(f)))
      continue;
    pc__cache_mark(j, &c->fs[f], c->have_hash ? c->h : NULL);
    if (pc__settle(j, f, &c->fs[f]) != 0)
      break;
    c->settled[f] = 1;
    pc__cache_put_rejected(j, f, &c->fs[f]);
  }
}

/* Last: publishes a leader's result, frees the job's state and, when it
 * failed, the formats not settled are failed and their old outputs go.
 */
static void finish(pc__job_t *j, job_ctx_t *c) {
  int f;

  /* Followers wait on this: a leader always publishes, failed or not. */
  pc__dedup_lead_done(j, c->fs);
  if (c->fd >= 0)
    close(c->fd);
  free(c->whole);
  for (f = 0; f < PC_NFORMATS; f++) {
    drop(j, &c->fs[f]);
    /* An output settled before the failure is on disk and valid. */
    if (j->err != 0 && (j->cfg->formats & PC_FMT_BIT(f)) && !c->settled[f]) {
      j->out[f].state = PC_OUT_FAILED;
      j->out[f].action = PC_ACT_NONE;
      pc__settle_unproven(j, f, &c->fs[f], c->named);
    }
    free(c->fs[f].final);
  }
  /* Last: the temp files above were removed relative to them. */
  if (!j->odir_unit) {
    if (j->odir >= 0 && j->odir != j->pdir)
      close(j->odir);
    j->odir = -1;
  }
  if (c->own_pdir && j->pdir >= 0 && j->pdir != j->root_fd)
    close(j->pdir);
  j->pdir = -1;
  j->st = NULL;
}

/* One file, as phases. j->pdir is its directory when the unit opened it
 * for all its jobs, else -1: the job then opens (and closes) its own.
 */
static void job_run(pc__job_t *j) {
  job_ctx_t c;
  int f;

  memset(&c, 0, sizeof(c));
  for (f = 0; f < PC_NFORMATS; f++)
    c.fs[f].out = (pc__out_t)PC__OUT_INIT;
  c.fd = -1;
  c.own_pdir = j->pdir < 0;
  j->st = &c.st;
  if (!prepare(j, &c) && !open_source(j, &c) &&
      !pc__dedup_step(j, c.fd, &c.whole, c.h, &c.have_hash, c.fs) &&
      !compress(j, &c) && !check_unchanged(j, &c))
    settle_outputs(j, &c);
  finish(j, &c);
}

void pc__job_run_unit(pc__job_t *head) {
  int shared = head->batch != NULL && head->cfg->outdir;
  int pdir = -1, odir = -1;
  pc__job_t *j;

  /* The unit's jobs share a directory: open it once. When that fails, each
   * job tries on its own and reports its own error.
   */
  if (head->batch != NULL && open_pdir(head, &pdir) != 0)
    pdir = -1;
  for (j = head; j != NULL; j = j->batch) {
    if (j != head && pc__job_stopping(j)) {
      j->err = PC_EINTERRUPTED;
      continue;
    }
    j->pdir = pdir;
    j->odir = odir;
    j->odir_unit = shared;
    job_run(j);
    if (shared) /* what the job found or made, for the next one */
      odir = j->odir;
    j->odir = -1;
  }
  if (odir >= 0)
    close(odir);
  if (pdir >= 0 && pdir != head->root_fd)
    close(pdir);
}
