/* The worker side of one file.
 *
 * The file is read once, in chunks, and every enabled encoder is fed from
 * the same chunk. Output collects in memory and spills to the format's temp
 * file once it passes SPILL, so memory per job stays near CHUNK + SPILL per
 * format whatever the file's size. A format whose output already exceeds
 * what the keep rule allows is dropped at once: its output only grows.
 */
#include "job.h"

#include "codec.h"
#include "out.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK ((size_t)1 << 20)
#define SPILL ((size_t)1 << 20)

struct fmt_state {
  pc__enc_t *enc;   /* NULL once finished or dropped */
  pc__buf_t buf;    /* output not yet written to the temp file */
  pc__out_t out;    /* the temp file, once output spilled or is kept */
  uint64_t total;   /* output bytes so far, spilled or not */
  char *final;      /* FILE.ext */
  int on;           /* enabled and not dropped */
};

pc__job_t *pc__job_new(char *fullpath, size_t rel_off, uint32_t root,
                       const struct stat *st, int via_link,
                       const pc__cfg_t *cfg) {
  pc__job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) {
    free(fullpath);
    return NULL;
  }
  j->fullpath = fullpath;
  j->rel_off = rel_off;
  j->root = root;
  j->size = (uint64_t)st->st_size;
  j->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  j->via_link = via_link;
  j->cfg = cfg;
  return j;
}

void pc__job_free(pc__job_t *j) {
  if (j == NULL)
    return;
  free(j->fullpath);
  free(j->err_path);
  free(j);
}

/* Records the first error and the name it is about. */
static void fail(pc__job_t *j, int err, const char *path) {
  if (j->err != 0)
    return;
  j->err = err;
  if (path != NULL && path != j->fullpath)
    j->err_path = pc__strdup(path);
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
  if (s->out.fd < 0 && (err = pc__out_open(&s->out, s->final)) != 0)
    return err;
  err = pc__out_write(&s->out, s->buf.data, s->buf.len);
  s->buf.len = 0;
  return err;
}

static void drop(struct fmt_state *s) {
  pc__enc_free(s->enc);
  s->enc = NULL;
  pc__out_discard(&s->out);
  pc__buf_free(&s->buf);
  s->on = 0;
}

/* Reads the whole source, feeding every format. 0 or a negative code. */
static int compress_all(pc__job_t *j, int fd, struct fmt_state *fs,
                        uint64_t limit) {
  size_t bufsize = j->st.st_size < (off_t)CHUNK ? (size_t)j->st.st_size : CHUNK;
  uint64_t done = 0, size = (uint64_t)j->st.st_size;
  unsigned char *buf = malloc(bufsize ? bufsize : 1);
  int err = 0, f;

  if (buf == NULL)
    return -ENOMEM;
  while (done < size) {
    size_t want = size - done < bufsize ? (size_t)(size - done) : bufsize;
    size_t got = 0;
    while (got < want) {
      ssize_t r = read(fd, buf + got, want - got);
      if (r < 0) {
        if (errno == EINTR)
          continue;
        err = PC__ERRNO();
        goto out;
      }
      if (r == 0) {
        err = PC_ECHANGED; /* truncated while we read it */
        goto out;
      }
      got += (size_t)r;
    }
    done += got;
    if (atomic_load_explicit(&((pc__cfg_t *)j->cfg)->stop, memory_order_relaxed)) {
      err = PC_EINTERRUPTED;
      goto out;
    }
    for (f = 0; f < PC_NFORMATS; f++) {
      struct fmt_state *s = &fs[f];
      size_t before;
      if (!s->on)
        continue;
      before = s->buf.len;
      if ((err = pc__enc_feed(s->enc, buf, got, done == size, &s->buf)) != 0)
        goto out;
      s->total += s->buf.len - before;
      if (s->total > limit) {
        drop(s);
        continue;
      }
      if (s->buf.len >= SPILL && (err = spill(j, s)) != 0) {
        fail(j, err, s->out.tmp != NULL ? s->out.tmp : s->final);
        goto out;
      }
    }
  }
out:
  free(buf);
  return err;
}

/* Writes (or in a dry run, classifies) format f's output. */
static int settle(pc__job_t *j, int f, struct fmt_state *s) {
  pc_output_t *o = &j->out[f];
  struct stat ost;
  int exists, err;

  exists = lstat(s->final, &ost) == 0;
  if (!exists && errno != ENOENT) {
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
    if (!j->cfg->dry_run && unlink(s->final) != 0 && errno != ENOENT) {
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
           ost.st_mtim.tv_sec == j->st.st_mtim.tv_sec &&
           ost.st_mtim.tv_nsec == j->st.st_mtim.tv_nsec)
    o->action = PC_ACT_REFRESH;
  else
    o->action = PC_ACT_REPLACE;
  if (j->cfg->dry_run)
    return 0;
  if ((err = spill(j, s)) != 0) {
    fail(j, err, s->out.tmp != NULL ? s->out.tmp : s->final);
    return err;
  }
  if ((err = pc__out_commit(&s->out, s->final, &j->st)) != 0)
    fail(j, err, s->final);
  return err;
}

void pc__job_run(pc__job_t *j) {
  struct fmt_state fs[PC_NFORMATS];
  struct stat after;
  int settled[PC_NFORMATS] = {0};
  uint64_t limit;
  int fd = -1, f, err;
  /* A name the walk saw as a regular file must still be one: never follow a
   * symlink that appeared since. O_NONBLOCK: a FIFO swapped in must not
   * block the worker.
   */
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
              (j->via_link ? 0 : O_NOFOLLOW);

  memset(fs, 0, sizeof(fs));
  for (f = 0; f < PC_NFORMATS; f++)
    fs[f].out = (pc__out_t)PC__OUT_INIT;

  fd = open(j->fullpath, flags);
  if (fd < 0) {
    fail(j, PC__ERRNO(), NULL);
    goto out;
  }
  if (fstat(fd, &j->st) != 0) {
    fail(j, PC__ERRNO(), NULL);
    goto out;
  }
  j->stat_ok = 1;
  j->mtime_ns =
      (int64_t)j->st.st_mtim.tv_sec * 1000000000 + j->st.st_mtim.tv_nsec;
  if (!S_ISREG(j->st.st_mode)) {
    fail(j, PC_ENOTREG, NULL);
    goto out;
  }
  /* Back to blocking reads (a regular file ignores it, but be plain). */
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  j->size = (uint64_t)j->st.st_size;
  if (j->size == 0) {
    /* Emptied since the walk: nothing to compress, old outputs are stale. */
    for (f = 0; f < PC_NFORMATS; f++)
      if (j->cfg->formats & PC_FMT_BIT(f))
        j->out[f].state = PC_OUT_RATIO;
  }

  limit = pc__keep_limit(j->size, j->cfg->ratio_num, j->cfg->ratio_den);
  for (f = 0; f < PC_NFORMATS; f++) {
    struct fmt_state *s = &fs[f];
    const char *ext = pc_format_ext((pc_format_t)f);
    size_t n = strlen(j->fullpath);
    if (!(j->cfg->formats & PC_FMT_BIT(f)))
      continue;
    s->final = malloc(n + 1 + strlen(ext) + 1);
    if (s->final == NULL) {
      fail(j, -ENOMEM, NULL);
      goto out;
    }
    memcpy(s->final, j->fullpath, n);
    s->final[n] = '.';
    strcpy(s->final + n + 1, ext);
    if (j->size == 0)
      continue;
    if ((err = pc__enc_new(&s->enc, (pc_format_t)f, j->cfg->level[f],
                           j->size)) != 0) {
      fail(j, err, NULL);
      goto out;
    }
    s->on = 1;
  }

  if (j->size > 0 && (err = compress_all(j, fd, fs, limit)) != 0) {
    fail(j, err, NULL);
    goto out;
  }
  /* The same size and mtime after the read as before it, or what we read
   * may be a mix of two versions.
   */
  if (fstat(fd, &after) != 0) {
    fail(j, PC__ERRNO(), NULL);
    goto out;
  }
  if (after.st_size != j->st.st_size ||
      after.st_mtim.tv_sec != j->st.st_mtim.tv_sec ||
      after.st_mtim.tv_nsec != j->st.st_mtim.tv_nsec) {
    fail(j, PC_ECHANGED, NULL);
    goto out;
  }
  close(fd);
  fd = -1;

  for (f = 0; f < PC_NFORMATS; f++) {
    struct fmt_state *s = &fs[f];
    if (!(j->cfg->formats & PC_FMT_BIT(f)))
      continue;
    if (s->on && pc__keep(j->size, s->total, j->cfg->ratio_num,
                          j->cfg->ratio_den)) {
      j->out[f].state = PC_OUT_KEPT;
      j->out[f].size = s->total;
    } else {
      j->out[f].state = PC_OUT_RATIO;
    }
  }
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(j->cfg->formats & PC_FMT_BIT(f)))
      continue;
    if (settle(j, f, &fs[f]) != 0)
      break;
    settled[f] = 1;
  }

out:
  if (fd >= 0)
    close(fd);
  for (f = 0; f < PC_NFORMATS; f++) {
    drop(&fs[f]);
    free(fs[f].final);
    /* An output settled before the failure is on disk and valid. */
    if (j->err != 0 && (j->cfg->formats & PC_FMT_BIT(f)) && !settled[f]) {
      j->out[f].state = PC_OUT_FAILED;
      j->out[f].action = PC_ACT_NONE;
    }
  }
}
