/* The worker side of one file.
 *
 * The file is read once, in chunks, and every enabled encoder is fed from
 * the same chunk. Output collects in memory and spills to the format's temp
 * file once it passes SPILL, so memory per job stays near CHUNK + SPILL per
 * format whatever the file's size. A format whose output already exceeds
 * what the keep rule allows is dropped at once: its output only grows.
 *
 * Before compressing, the file is hashed and its content claimed (dedup.h).
 * A file up to CHUNK is read whole for that and compressed from the same
 * buffer; a larger one is hashed in a first pass and read again to
 * compress (from the page cache: cheap beside the codecs).
 */
#include "job.h"

#include "store.h"
#include "codec.h"
#include "dedup.h"
#include "out.h"
#include "prev.h"

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

/* Input slice: the unit of reading, of feeding the encoders and of
 * checking for a stop request (brotli 11 takes about a quarter second on
 * one), and the largest file hashed and compressed from one buffer.
 */
#define CHUNK ((size_t)PC__WHOLE_MAX)
#define SPILL ((size_t)1 << 20)
#define COPY_BUF ((size_t)1 << 16)

struct fmt_state {
  pc__enc_t *enc;   /* NULL once finished or dropped */
  pc__buf_t buf;    /* output not yet written to the temp file */
  pc__out_t out;    /* the temp file, once output spilled or is kept */
  uint64_t total;   /* output bytes so far, spilled or not */
  char *final;      /* FILE.ext, the full name (for messages) */
  const char *base; /* its last component, relative to the job's directory */
  int on;           /* enabled and not dropped */
  int cached;       /* the result came from the cache */
  pc__store_hit_t hit; /* a cached payload to copy (hit.rd), or zeroed */
  const unsigned char *mem; /* once settled: all of the output, still in
                               buf (never spilled before), or NULL */
  unsigned char *keep; /* a leader's copy of its kept output for followers
                          to write from (dedup.h), or NULL */
  const uint64_t *hash; /* the content's hash when the result is to go into
                           the cache, else NULL */
};

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
  j->weight = j->size;
  return j;
}

uint64_t pc__job_mem(const pc__cfg_t *cfg, uint64_t size) {
  uint64_t m = 0, in = size < CHUNK ? size : CHUNK;
  uint64_t out = size < SPILL ? size : SPILL;
  int f;

  /* The file's bytes (whole, or one chunk and its re-read to compare with
   * an identical file's), and per format its encoder and the output held
   * until it spills, which pc__buf_reserve() may have doubled past SPILL.
   */
  m += 2 * in;
  for (f = 0; f < PC_NFORMATS; f++)
    if (cfg->formats & PC_FMT_BIT(f))
      m += pc__enc_mem((pc_format_t)f, cfg->level[f], cfg->gzip_engine,
                       size) +
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

/* Where the file's base name starts in fullpath. */
static size_t base_off(const pc__job_t *j) {
  const char *rel = j->fullpath + j->rel_off;
  const char *slash = strrchr(rel, '/');
  return slash != NULL ? (size_t)(slash + 1 - j->fullpath) : j->rel_off;
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

/* Records the first error and the name it is about. */
static void fail(pc__job_t *j, int err, const char *path) {
  if (j->err != 0)
    return;
  j->err = err;
  if (path != NULL && path != j->fullpath)
    j->err_path = pc__strdup(path);
}

static int stopping(const pc__job_t *j) {
  return atomic_load_explicit(&((pc__cfg_t *)j->cfg)->stop,
                              memory_order_relaxed);
}

/* Moves buffered output to the temp file (created on first use). In a dry
 * run nothing is written: only the count matters.
 */
static int spill(pc__job_t *j, struct fmt_state *s) {
  int err;

  if (j->cfg->dry_run) {
    s->buf.len = 0;
    return 0;
  }
  if (s->out.fd < 0 && (err = pc__out_open(&s->out, j->pdir, s->base)) != 0)
    return err;
  err = pc__out_write(&s->out, s->buf.data, s->buf.len);
  s->buf.len = 0;
  return err;
}

/* Forgets the format's work so far (encoder, buffer, temp file). */
static void drop(const pc__job_t *j, struct fmt_state *s) {
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

/* Hashes the whole file. A file up to CHUNK stays in *whole (malloc'd) to
 * be compressed from; a larger one is read in chunks and the descriptor
 * rewound.
 */
static int hash_file(pc__job_t *j, int fd, unsigned char **whole,
                     uint64_t h[2]) {
  XXH128_hash_t x;
  unsigned char *buf;
  int err = 0;

  *whole = NULL;
  if (j->size <= CHUNK) {
    if ((buf = malloc(j->size)) == NULL)
      return -ENOMEM;
    if ((err = pc__read_full(fd, buf, j->size, -1)) != 0) {
      free(buf);
      return err;
    }
    x = XXH3_128bits(buf, j->size);
    *whole = buf;
  } else {
    XXH3_state_t *st = XXH3_createState();
    uint64_t left = j->size;
    buf = malloc(CHUNK);
    if (st == NULL || buf == NULL) {
      err = -ENOMEM;
      goto big_out;
    }
    XXH3_128bits_reset(st);
    while (left > 0 && err == 0) {
      size_t n = left < CHUNK ? (size_t)left : CHUNK;
      if ((err = pc__read_full(fd, buf, n, -1)) == 0) {
        XXH3_128bits_update(st, buf, n);
        left -= n;
      }
      if (err == 0 && stopping(j))
        err = PC_EINTERRUPTED;
    }
    if (err == 0 && lseek(fd, 0, SEEK_SET) != 0)
      err = PC__ERRNO();
    x = XXH3_128bits_digest(st);
  big_out:
    XXH3_freeState(st);
    free(buf);
    if (err != 0)
      return err;
  }
  h[0] = x.low64;
  h[1] = x.high64;
  return 0;
}

/* Feeds the whole source to every format: from `whole` when the file is in
 * memory, else read in chunks from fd.
 */
static int compress_all(pc__job_t *j, int fd, struct fmt_state *fs,
                        uint64_t limit, const unsigned char *whole) {
  size_t bufsize = j->size < CHUNK ? (size_t)j->size : CHUNK;
  uint64_t done = 0;
  unsigned char *buf = NULL;
  int err = 0, f;

  if (whole == NULL && (buf = malloc(bufsize)) == NULL)
    return -ENOMEM;
  while (done < j->size) {
    size_t got = j->size - done < bufsize ? (size_t)(j->size - done) : bufsize;
    const unsigned char *in = whole;
    if (whole == NULL) {
      if ((err = pc__read_full(fd, buf, got, -1)) != 0)
        goto out;
      in = buf;
    } else {
      got = (size_t)j->size;
    }
    done += got;
    if (stopping(j)) {
      err = PC_EINTERRUPTED;
      goto out;
    }
    for (f = 0; f < PC_NFORMATS; f++) {
      struct fmt_state *s = &fs[f];
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
      if (s->buf.len >= SPILL && (err = spill(j, s)) != 0) {
        fail(j, err, s->final);
        goto out;
      }
    }
  }
out:
  free(buf);
  return err;
}

/* 1 if the file at `other` holds the same bytes as ours (in `whole`, or
 * read from fd, which is rewound), 0 if not, or a negative code for an
 * error reading our own file.
 */
static int same_bytes(pc__job_t *j, int fd, const unsigned char *whole,
                      const char *other) {
  unsigned char *a = NULL, *b = NULL;
  uint64_t left = j->size;
  struct stat st;
  int ofd, ret = 1, err;

  ofd = open(other, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (ofd < 0)
    return 0;
  if (fstat(ofd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (uint64_t)st.st_size != j->size) {
    close(ofd);
    return 0;
  }
  if ((b = malloc(left < CHUNK ? (size_t)left : CHUNK)) == NULL ||
      (whole == NULL && (a = malloc(left < CHUNK ? (size_t)left : CHUNK)) ==
                            NULL)) {
    ret = -ENOMEM;
    goto out;
  }
  while (left > 0 && ret == 1) {
    size_t n = left < CHUNK ? (size_t)left : CHUNK;
    const unsigned char *mine = whole + (j->size - left);
    if (whole == NULL) {
      if ((err = pc__read_full(fd, a, n, -1)) != 0) {
        ret = err;
        break;
      }
      mine = a;
    }
    if (pc__read_full(ofd, b, n, -1) != 0 || memcmp(mine, b, n) != 0)
      ret = 0;
    left -= n;
  }
  if (whole == NULL && ret >= 0 && lseek(fd, 0, SEEK_SET) != 0)
    ret = PC__ERRNO();
out:
  free(a);
  free(b);
  close(ofd);
  return ret;
}

/* Writes the leader's kept outputs into our temp files from the copy the
 * leader published (dedup.h), never from its files. 0 when every kept
 * output was written, 1 when the leader kept no copy of one (too big, or
 * the budget spent): then the caller compresses instead. Negative on our
 * own write errors.
 */
static int copy_outputs(pc__job_t *j, struct fmt_state *fs,
                        const pc_output_t *lo, const pc__content_t *c) {
  int f, err;

  /* Every kept format's bytes must be there, or the follower compresses:
   * a partial copy would mix a copied .gz with a fresh .br for nothing.
   */
  for (f = 0; f < PC_NFORMATS; f++)
    if ((j->cfg->formats & PC_FMT_BIT(f)) && lo[f].state == PC_OUT_KEPT &&
        c->bytes[f] == NULL && !j->cfg->dry_run)
      return 1;
  for (f = 0; f < PC_NFORMATS; f++) {
    struct fmt_state *s = &fs[f];
    if (!(j->cfg->formats & PC_FMT_BIT(f)) || lo[f].state != PC_OUT_KEPT)
      continue;
    s->total = lo[f].size;
    if (j->cfg->dry_run)
      continue; /* nothing to write */
    if ((err = pc__out_open(&s->out, j->pdir, s->base)) != 0 ||
        (err = pc__out_write(&s->out, c->bytes[f], lo[f].size)) != 0) {
      fail(j, err, s->final);
      return err;
    }
  }
  return 0;
}

/* Copies the cached payload (n bytes, verified in the snapshot the hit
 * holds) into the format's temp file. The hit is released on failure, by
 * settle() after use.
 */
static int copy_hit(pc__job_t *j, struct fmt_state *s, uint64_t n) {
  unsigned char *buf = NULL;
  uint64_t off = 0;
  int err = 0;

  /* Recorded like every other failure here: settle() only passes the
   * code on, and a job without j->err counts as done.
   */
  if (s->hit.mem == NULL && (buf = malloc(COPY_BUF)) == NULL) {
    fail(j, -ENOMEM, NULL);
    return -ENOMEM;
  }
  if (s->out.fd < 0 &&
      (err = pc__out_open(&s->out, j->pdir, s->base)) != 0) {
    fail(j, err, s->final);
    goto out;
  }
  if (s->hit.mem != NULL) { /* the store's own copy: no second one */
    if ((err = pc__out_write(&s->out, s->hit.mem, (size_t)n)) != 0)
      fail(j, err, s->final);
    goto out;
  }
  while (off < n) {
    size_t k = n - off < COPY_BUF ? (size_t)(n - off) : COPY_BUF;
    if ((err = pc__store_read(&s->hit, off, buf, k)) != 0) {
      fail(j, err, NULL);
      goto out;
    }
    if ((err = pc__out_write(&s->out, buf, k)) != 0) {
      fail(j, err, s->final);
      goto out;
    }
    off += k;
  }
out:
  free(buf);
  if (err != 0)
    pc__store_release(j->cfg->cache, &s->hit);
  return err;
}

/* The cache's key for format f of this content. */
static void cache_key(const pc__job_t *j, int f, const uint64_t h[2],
                      pc__store_key_t *k) {
  k->h[0] = h[0];
  k->h[1] = h[1];
  k->size = j->size;
  k->format = (pc_format_t)f;
  k->level = j->cfg->level[f];
  k->engine = j->cfg->gzip_engine;
}

/* A leader's copy of its kept output, for files with the same bytes to
 * write from (dedup.h): from memory, or read back through the temp's own
 * descriptor before its rename, never through a name. Best effort, within
 * the table's budget: without it followers compress.
 */
static void keep_for_followers(pc__job_t *j, struct fmt_state *s,
                               uint64_t n) {
  unsigned char *p;
  uint64_t done = 0;

  if (n > SIZE_MAX || !pc__dedup_reserve(j->cfg->dedup, n))
    return;
  if ((p = malloc(n ? (size_t)n : 1)) == NULL)
    goto undo;
  if (s->mem != NULL) {
    memcpy(p, s->mem, (size_t)n);
  } else {
    while (done < n) {
      ssize_t r = pread(s->out.fd, p + done, (size_t)(n - done), (off_t)done);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      done += (uint64_t)r;
    }
    if (done != n) {
      free(p);
      goto undo;
    }
  }
  s->keep = p;
  return;
undo:
  /* Published as not kept: the reservation goes back with it. */
  s->keep = NULL;
  pc__dedup_unreserve(j->cfg->dedup, n);
}

/* Writes (or in a dry run, classifies) format f's output. */
static int settle(pc__job_t *j, int f, struct fmt_state *s) {
  pc_output_t *o = &j->out[f];
  struct stat ost;
  int exists, whole, err;

  /* The walk's listing of the directory lacked the name: it is taken as
   * absent, which saves a failing lookup per output on a fresh tree. Should
   * something create it since, the rename still replaces it atomically (or
   * fails on a directory); only the action reported says "created".
   */
  exists = !(j->absent & PC_FMT_BIT(f)) &&
           fstatat(j->pdir, s->base, &ost, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && !(j->absent & PC_FMT_BIT(f)) && errno != ENOENT) {
    fail(j, PC__ERRNO(), s->final);
    return j->err;
  }
  if (o->state != PC_OUT_KEPT) {
    /* Not kept: an old output there no longer matches the source. A
     * directory is not ours to remove.
     */
    if (!exists || S_ISDIR(ost.st_mode))
      return 0;
    o->action = PC_ACT_REMOVE;
    if (!j->cfg->dry_run && unlinkat(j->pdir, s->base, 0) != 0 &&
        errno != ENOENT) {
      fail(j, PC__ERRNO(), s->final);
      return j->err;
    }
    return 0;
  }
  if (exists && S_ISDIR(ost.st_mode)) {
    fail(j, PC_EOUTDIR, s->final);
    return j->err;
  }
  if (!exists)
    o->action = PC_ACT_CREATE;
  else if (S_ISREG(ost.st_mode) && (uint64_t)ost.st_size == o->size &&
           ost.st_mtim.tv_sec == j->st->st_mtim.tv_sec &&
           ost.st_mtim.tv_nsec == j->st->st_mtim.tv_nsec)
    o->action = PC_ACT_REFRESH;
  else
    o->action = PC_ACT_REPLACE;
  if (j->cfg->dry_run)
    return 0;
  if (s->hit.rd != NULL && (err = copy_hit(j, s, o->size)) != 0)
    return err;
  whole = s->out.fd < 0 && s->buf.len == o->size;
  if ((err = spill(j, s)) != 0) {
    fail(j, err, s->final);
    return err;
  }
  if (whole) /* spill() empties buf but keeps its bytes */
    s->mem = s->buf.data;
  if (s->hit.mem != NULL) /* the store's copy, until the release below */
    s->mem = s->hit.mem;
  if (j->lead)
    keep_for_followers(j, s, o->size);
  if (s->hit.rd != NULL) {
    if (s->mem == s->hit.mem)
      s->mem = NULL;
    pc__store_release(j->cfg->cache, &s->hit);
  }
  /* Into the cache from our own bytes (in memory, or through the temp's
   * descriptor before the rename), never from the name: once renamed, the
   * output is in a directory others may write.
   */
  if (s->hash != NULL) {
    pc__store_key_t k;
    cache_key(j, f, s->hash, &k);
    j->cache_puts += (unsigned)pc__store_put(
        j->cfg->cache, &k, 1, s->mem != NULL ? s->mem : s->keep, s->out.fd,
        o->size, 0);
  }
  if ((err = pc__out_commit(&s->out, s->base, j->st, j->cfg->fsync)) != 0)
    fail(j, err, s->final);
  return err;
}

/* Takes format f's result from the cache when it has one that decides the
 * keep rule: a payload (kept or not by its length), or a rejection above a
 * limit at least ours. 1 when it did.
 */
static int from_cache(pc__job_t *j, int f, const uint64_t h[2],
                      uint64_t limit, struct fmt_state *s) {
  pc__store_key_t k;
  pc__store_hit_t hit;

  cache_key(j, f, h, &k);
  if (!pc__store_get(j->cfg->cache, &k, &hit))
    return 0;
  if (hit.rejected) {
    if (hit.limit < limit)
      return 0; /* rejected above a lower limit: ours may keep it */
    j->out[f].state = PC_OUT_RATIO;
  } else if (pc__keep(j->size, hit.len, j->cfg->ratio_num,
                      j->cfg->ratio_den)) {
    j->out[f].state = PC_OUT_KEPT;
    j->out[f].size = hit.len;
    s->total = hit.len;
    s->hit = hit; /* copied by settle(), released by drop() */
    hit.rd = NULL;
  } else {
    j->out[f].state = PC_OUT_RATIO;
  }
  pc__store_release(j->cfg->cache, &hit);
  s->cached = 1;
  return 1;
}

/* Outputs from an identical file, when the leader succeeded and the bytes
 * really are equal. 1 when done, 0 to compress instead, negative on error.
 */
static int try_copy(pc__job_t *j, int fd, const unsigned char *whole,
                    struct fmt_state *fs) {
  pc_output_t lo[PC_NFORMATS];
  int ok, r, f;

  if (!pc__dedup_result(j->cfg->dedup, j->content, &ok, lo) || !ok)
    return 0;
  if ((r = same_bytes(j, fd, whole, j->content->leader)) != 1)
    return r;
  r = copy_outputs(j, fs, lo, j->content);
  if (r != 0) {
    for (f = 0; f < PC_NFORMATS; f++)
      pc__out_discard(&fs[f].out);
    return r < 0 ? r : 0;
  }
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(j->cfg->formats & PC_FMT_BIT(f)))
      continue;
    j->out[f].state = lo[f].state == PC_OUT_KEPT ? PC_OUT_KEPT : PC_OUT_RATIO;
    j->out[f].size = lo[f].state == PC_OUT_KEPT ? lo[f].size : 0;
  }
  j->copied = 1;
  return 1;
}

int pc__outputs_current(unsigned formats, const pc__prev_rec_t *p, int dfd,
                        const char *name, const struct stat *st,
                        unsigned absent) {
  size_t len = strlen(name);
  char oname[NAME_MAX + 1];
  int f;

  if (p->size != (uint64_t)st->st_size || p->mtime_ns != pc__ns(st->st_mtim))
    return 0;
  for (f = 0; f < PC_NFORMATS; f++) {
    const char *ext = pc_format_ext((pc_format_t)f);
    struct stat ost;
    int there;
    if (!(formats & PC_FMT_BIT(f)))
      continue;
    if (absent & PC_FMT_BIT(f)) {
      if (p->out[f].state == PC_OUT_KEPT)
        return 0;
      continue;
    }
    if (len + 1 + strlen(ext) > NAME_MAX)
      return 0;
    memcpy(oname, name, len);
    oname[len] = '.';
    strcpy(oname + len + 1, ext);
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

/* The walk's part for a file it handed on unstat'ed (j->prev): 1 when that
 * settles it (j->outcome, or an error), 0 to compress it now. The walk saw
 * a regular file in the listing; anything else here was swapped in since.
 */
static int check_prev(pc__job_t *j) {
  const char *base = j->fullpath + base_off(j);
  const pc__cfg_t *c = j->cfg;
  struct stat st;

  if (fstatat(j->pdir, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) /* gone since the listing */
      j->outcome = PC__CHECK_GONE;
    else
      fail(j, PC__ERRNO(), NULL);
    return 1;
  }
  if (!S_ISREG(st.st_mode)) {
    fail(j, PC_ENOTREG, NULL);
    return 1;
  }
  if (c->man_known && st.st_dev == c->man_dev && st.st_ino == c->man_ino) {
    j->outcome = PC__CHECK_GONE; /* the manifest itself: never an input */
    return 1;
  }
  *j->st = st;
  j->size = (uint64_t)st.st_size;
  j->mtime_ns = pc__ns(st.st_mtim);
  if (st.st_size == 0 || (uint64_t)st.st_size < c->min_size) {
    j->skip = st.st_size == 0 ? PC_SKIP_EMPTY : PC_SKIP_MIN_SIZE;
    j->prev = NULL;
    return 0; /* its old outputs are stale now: job_run removes them */
  }
  if (pc__outputs_current(c->formats, j->prev, j->pdir, base, &st,
                          j->absent)) {
    j->outcome = PC__CHECK_SAME;
    return 1;
  }
  /* Scheduled by its recorded size: a new one may belong elsewhere (its
   * own unit, or the memory budget's).
   */
  if (j->size != j->prev->size) {
    j->outcome = PC__CHECK_RESIZED;
    return 1;
  }
  j->prev = NULL; /* checked: a run again (after a dedupe wait) does not */
  return 0;
}

/* A failed file's output that this run did not settle: it was made from
 * the file as it was, and nothing shows it matches the file as it is now
 * (unreadable, changed while read, its new output not written), so it goes:
 * a server must not serve it (DESIGN 2.3). Left alone when the file is gone
 * (outputs whose source is gone are never touched), when the run was
 * stopped before deciding, or when it is a directory (not ours).
 */
static void remove_unproven(pc__job_t *j, int f, const struct fmt_state *s,
                            int named) {
  char name[NAME_MAX + 1];
  const char *base = s->base;
  struct stat ost;

  /* The job failed building the output names (short of memory): this
   * one's is made here, where nothing may fail. Too long a name has no
   * output to remove.
   */
  if (base == NULL && named) {
    const char *src = j->fullpath + base_off(j);
    const char *ext = pc_format_ext((pc_format_t)f);
    size_t n = strlen(src), e = strlen(ext);
    if (n + 1 + e <= NAME_MAX) {
      memcpy(name, src, n);
      name[n] = '.';
      memcpy(name + n + 1, ext, e + 1);
      base = name;
    }
  }
  if (j->err == PC_EINTERRUPTED || j->err == -ENOENT || j->pdir < 0 ||
      base == NULL || (j->absent & PC_FMT_BIT(f)) ||
      fstatat(j->pdir, base, &ost, AT_SYMLINK_NOFOLLOW) != 0 ||
      S_ISDIR(ost.st_mode))
    return;
  if (j->cfg->dry_run || unlinkat(j->pdir, base, 0) == 0 ||
      errno == ENOENT)
    j->out[f].action = PC_ACT_REMOVE;
}

/* One file. j->pdir is its directory when the unit opened it for all its
 * jobs, else -1: the job then opens (and closes) its own.
 */
static void job_run(pc__job_t *j) {
  struct fmt_state fs[PC_NFORMATS];
  struct stat st, after;
  int settled[PC_NFORMATS] = {0};
  unsigned char *whole = NULL;
  int fd = -1, f, err;
  /* A name the walk saw as a regular file must still be one: never follow a
   * symlink that appeared since. O_NONBLOCK: a FIFO swapped in must not
   * block the worker.
   */
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
              (j->via_link ? 0 : O_NOFOLLOW);
  int own_pdir = j->pdir < 0;
  int named = 0; /* the output names were being built: a failure since
                    owes its old outputs' removal */

  memset(fs, 0, sizeof(fs));
  memset(&st, 0, sizeof(st));
  j->st = &st;
  uint64_t h[2] = {0, 0};
  int have_hash = 0;

  for (f = 0; f < PC_NFORMATS; f++) {
    fs[f].out = (pc__out_t)PC__OUT_INIT;
  }

  if (own_pdir && (err = open_pdir(j, &j->pdir)) != 0) {
    fail(j, err, NULL);
    goto out;
  }
  if (j->prev != NULL && check_prev(j))
    goto out;
  named = 1;
  for (f = 0; f < PC_NFORMATS; f++) {
    const char *ext = pc_format_ext((pc_format_t)f);
    size_t n = strlen(j->fullpath);
    if (!(j->cfg->formats & PC_FMT_BIT(f)))
      continue;
    fs[f].final = malloc(n + 1 + strlen(ext) + 1);
    if (fs[f].final == NULL) {
      fail(j, -ENOMEM, NULL);
      goto out;
    }
    memcpy(fs[f].final, j->fullpath, n);
    fs[f].final[n] = '.';
    strcpy(fs[f].final + n + 1, ext);
    fs[f].base = fs[f].final + base_off(j);
  }
  if (j->skip != PC_SKIP_NONE) {
    /* No output now (empty, or under --min-size): outputs made while the
     * file had other content no longer match it and are removed, as any
     * output not kept (DESIGN 2.3: a server must never serve an old body
     * for a new file).
     */
    for (f = 0; f < PC_NFORMATS; f++) {
      if (!(j->cfg->formats & PC_FMT_BIT(f)) || (j->absent & PC_FMT_BIT(f)))
        continue;
      if (settle(j, f, &fs[f]) != 0)
        break;
      settled[f] = 1;
    }
    goto out;
  }
  fd = openat(j->pdir, j->fullpath + base_off(j), flags);
  if (fd < 0) {
    fail(j, PC__ERRNO(), NULL);
    goto out;
  }
  if (fstat(fd, &st) != 0) {
    fail(j, PC__ERRNO(), NULL);
    goto out;
  }
  if (j->content != NULL) {
    /* Back from waiting: the file must be as it was before (size and
     * mtime, kept in the job then), and its outputs get the atime it had
     * then: our own hashing read moved it since.
     */
    if ((uint64_t)st.st_size != j->size || pc__ns(st.st_mtim) != j->mtime_ns) {
      fail(j, PC_ECHANGED, NULL);
      goto out;
    }
    st.st_atim = j->atime0;
  }
  j->atime0 = st.st_atim;
  j->mtime_ns = pc__ns(st.st_mtim);
  if (!S_ISREG(st.st_mode)) {
    fail(j, PC_ENOTREG, NULL);
    goto out;
  }
  j->size = (uint64_t)st.st_size;

  /* Emptied since the walk: nothing to keep, old outputs are stale. */
  for (f = 0; f < PC_NFORMATS; f++)
    if (j->cfg->formats & PC_FMT_BIT(f))
      j->out[f].state = PC_OUT_RATIO;

  if (j->size > 0 && j->cfg->dedup != NULL) {
    int r = 0;
    if (j->content == NULL) {
      pc__claim_t how;
      if ((err = hash_file(j, fd, &whole, h)) != 0 ||
          (err = pc__dedup_claim(j->cfg->dedup, j->size, h, j->fullpath,
                                 &j->content, &how)) != 0) {
        fail(j, err, NULL);
        goto out;
      }
      have_hash = 1;
      if (how == PC__CLAIM_WAIT) {
        j->wait = 1;
        goto out;
      }
      j->lead = how == PC__CLAIM_LEAD;
    }
    if (!j->lead && (r = try_copy(j, fd, whole, fs)) < 0) {
      fail(j, r, NULL);
      goto out;
    }
    if (!j->lead && r == 0 && whole == NULL && lseek(fd, 0, SEEK_SET) != 0) {
      fail(j, PC__ERRNO(), NULL);
      goto out;
    }
  }

  if (j->content != NULL && !have_hash) {
    h[0] = j->content->h[0]; /* a follower back from waiting */
    h[1] = j->content->h[1];
    have_hash = 1;
  }
  if (j->size > 0 && !j->copied) {
    uint64_t limit =
        pc__keep_limit(j->size, j->cfg->ratio_num, j->cfg->ratio_den);
    int any = 0;
    for (f = 0; f < PC_NFORMATS; f++) {
      if (!(j->cfg->formats & PC_FMT_BIT(f)))
        continue;
      if (j->cfg->cache != NULL && have_hash && from_cache(j, f, h, limit, &fs[f]))
        continue;
      if ((err = pc__enc_new(&fs[f].enc, (pc_format_t)f, j->cfg->level[f],
                             j->cfg->gzip_engine, j->size, j->cfg->jobs,
                             j->cfg->spares)) != 0) {
        fail(j, err, NULL);
        goto out;
      }
      fs[f].on = 1;
      any = 1;
    }
    j->cached = !any && j->cfg->cache != NULL;
    if (any && (err = compress_all(j, fd, fs, limit, whole)) != 0) {
      fail(j, err, NULL);
      goto out;
    }
    for (f = 0; f < PC_NFORMATS; f++) {
      if (!(j->cfg->formats & PC_FMT_BIT(f)) || fs[f].cached)
        continue;
      if (fs[f].on && pc__keep(j->size, fs[f].total, j->cfg->ratio_num,
                               j->cfg->ratio_den)) {
        j->out[f].state = PC_OUT_KEPT;
        j->out[f].size = fs[f].total;
      }
    }
  }

  /* The same size and mtime after the read as before it, or what we read
   * may be a mix of two versions.
   */
  if (fstat(fd, &after) != 0) {
    fail(j, PC__ERRNO(), NULL);
    goto out;
  }
  if (after.st_size != st.st_size ||
      after.st_mtim.tv_sec != st.st_mtim.tv_sec ||
      after.st_mtim.tv_nsec != st.st_mtim.tv_nsec) {
    fail(j, PC_ECHANGED, NULL);
    goto out;
  }
  close(fd);
  fd = -1;

  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(j->cfg->formats & PC_FMT_BIT(f)))
      continue;
    /* What was compressed here goes into the cache for the next run: a
     * kept output by settle() from its own bytes, a rejection here.
     */
    if (j->cfg->cache != NULL && have_hash && !fs[f].cached && !j->copied &&
        !j->cfg->dry_run && j->size > 0)
      fs[f].hash = h;
    if (settle(j, f, &fs[f]) != 0)
      break;
    settled[f] = 1;
    if (fs[f].hash != NULL && j->out[f].state != PC_OUT_KEPT) {
      pc__store_key_t k;
      cache_key(j, f, h, &k);
      j->cache_puts += (unsigned)pc__store_put(
          j->cfg->cache, &k, 0, NULL, -1, 0,
          pc__keep_limit(j->size, j->cfg->ratio_num, j->cfg->ratio_den));
    }
  }

out:
  /* Followers wait on this: a leader always publishes, failed or not. */
  if (j->lead)
  {
    unsigned char *keep[PC_NFORMATS];
    for (f = 0; f < PC_NFORMATS; f++) {
      keep[f] = fs[f].keep;
      fs[f].keep = NULL;
    }
    pc__dedup_publish(j->cfg->dedup, j->content, j->err == 0, j->out, keep);
  }
  if (fd >= 0)
    close(fd);
  free(whole);
  for (f = 0; f < PC_NFORMATS; f++) {
    drop(j, &fs[f]);
    /* An output settled before the failure is on disk and valid. */
    if (j->err != 0 && (j->cfg->formats & PC_FMT_BIT(f)) && !settled[f]) {
      j->out[f].state = PC_OUT_FAILED;
      j->out[f].action = PC_ACT_NONE;
      remove_unproven(j, f, &fs[f], named);
    }
    free(fs[f].final);
  }
  /* Last: the temp files above were removed relative to it. */
  if (own_pdir && j->pdir >= 0 && j->pdir != j->root_fd)
    close(j->pdir);
  j->pdir = -1;
  j->st = NULL;
}

void pc__job_run_unit(pc__job_t *head) {
  pc__job_t *j;
  int pdir = -1;

  /* The unit's jobs share a directory: open it once. When that fails, each
   * job tries on its own and reports its own error.
   */
  if (head->batch != NULL && open_pdir(head, &pdir) != 0)
    pdir = -1;
  for (j = head; j != NULL; j = j->batch) {
    if (j != head && stopping(j)) {
      j->err = PC_EINTERRUPTED;
      continue;
    }
    j->pdir = pdir;
    job_run(j);
  }
  if (pdir >= 0 && pdir != head->root_fd)
    close(pdir);
}
