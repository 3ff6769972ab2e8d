/* A job on its worker: the state its phases share (worker.c runs them;
 * the incremental check, dedupe, the cache and settling each have their
 * own file) and the helpers every phase uses. Worker side only: the loop
 * thread never sees a pc__work_t.
 */
#ifndef PC_WORK_H
#define PC_WORK_H

#include "common/common.h"
#include "codec/codec.h"
#include "work/job.h"
#include "fs/out.h"
#include "store/store.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Input slice: the unit of reading, of feeding the encoders and of
 * checking for a stop request (brotli 11 takes about a quarter second on
 * one), and the largest file hashed and compressed from one buffer.
 */
#define PC__CHUNK ((size_t)PC__WHOLE_MAX)
#define PC__SPILL ((size_t)1 << 20)
#define PC__COPY_BUF ((size_t)1 << 16)

/* One format of the job on its worker: what the phases (worker.c,
 * cache.c, dedup.c, settle.c) hand each other. The worker's alone.
 */
typedef struct pc__fmt {
  pc__enc_t *enc;      /* NULL once finished or dropped */
  pc__buf_t buf;       /* output not yet written to the temp file */
  pc__out_t out;       /* the temp file, once output spilled or is kept */
  uint64_t total;      /* output bytes so far, spilled or not */
  char *final;         /* FILE.ext, the full name (for messages) */
  const char *base;    /* its last component, relative to the job's directory */
  int on;              /* enabled and not dropped */
  int cached;          /* the result came from the cache */
  int fetched;         /* ... from the remote cache: stored in the local
                          one only */
  int fresh;           /* `base` not in the walk's listing: written unnamed */
  pc__store_hit_t hit; /* a cached payload to copy (hit.rd), or zeroed */
  const unsigned char *mem; /* once settled: all of the output, still in
                               buf (never spilled before), or NULL */
  unsigned char *keep;      /* a leader's copy of its kept output for followers
                               to write from (dedup.h), or NULL */
  const uint64_t *hash;     /* the content's hash when the result is to go into
                               the cache, else NULL */
} pc__fmt_t;

/* A directory descriptor and whether its holder closes it: `own` says
 * so, never a comparison with another descriptor's value. A borrowed one
 * (a root's, the run's; the unit's) outlives its borrower.
 */
typedef struct pc__dirfd {
  int fd; /* -1: none */
  int own;
} pc__dirfd_t;

#define PC__DIRFD_NONE                                                         \
  { -1, 0 }

/* The same directory, not to be closed by whoever takes this copy. */
static inline pc__dirfd_t pc__dirfd_borrow(pc__dirfd_t d) {
  d.own = 0;
  return d;
}

/* Closes d when its holder owns it; d is none afterwards. */
static inline void pc__dirfd_close(pc__dirfd_t *d) {
  if (d->own && d->fd >= 0)
    close(d->fd);
  d->fd = -1;
  d->own = 0;
}

/* A job on its worker (worker.c runs its phases): the state the phases
 * share, on the worker's stack for as long as the job runs, never in the
 * job itself. The worker's alone.
 */
typedef struct pc__work {
  pc__job_t *j; /* the job: its results go to j->res */
  pc__fmt_t fs[PC_NFORMATS];
  int settled[PC_NFORMATS]; /* on disk and valid, whatever fails later */
  struct stat st;           /* the source as opened (or as the incremental
                               check statted it) */
  unsigned char *whole;     /* owned: the whole file, when hashed from
                               memory */
  int fd;                   /* owned: the source while it is read, or -1 */
  uint64_t h[2];            /* the content's hash, when have_hash */
  int have_hash;
  int named;               /* the output names were being built: a failure since
                              owes its old outputs' removal */
  pc__dirfd_t pdir;        /* the file's directory (O_PATH) */
  struct pc__dwork *dw;    /* owned: the deltas made, until written
                             (deltajob.c), or NULL */
  struct pc__prefetch *pf; /* its unit's remote answers (cache.h), or NULL */
  pc__dirfd_t odir; /* where its outputs go: pdir, borrowed, in place; with
                       --output-dir its mirror below out_fd (fd -1 while
                       missing: made by the first write, pc__work_out_open) */
} pc__work_t;

/* Where the file's base name starts in fullpath. */
static inline size_t pc__job_base_off(const pc__job_t *j) {
  const char *rel = j->fullpath + j->rel_off;
  const char *slash = strrchr(rel, '/');
  return slash != NULL ? (size_t)(slash + 1 - j->fullpath) : j->rel_off;
}

/* The file's directory below its root: rel[0..*len) of the result. */
static inline const char *pc__job_reldir(const pc__job_t *j, size_t *len) {
  size_t b = pc__job_base_off(j);
  *len = b > j->rel_off ? b - j->rel_off - 1 : 0;
  return j->fullpath + j->rel_off;
}

/* Opens format s's temp file in the job's output directory. With
 * --output-dir that directory is made here when missing, by the first
 * output written into it (owned by w from then on): a file that keeps
 * nothing makes no directory.
 */
static inline int pc__work_out_open(pc__work_t *w, pc__fmt_t *s) {
  if (w->odir.fd < 0) {
    size_t len;
    const char *rel = pc__job_reldir(w->j, &len);
    int fd = w->j->cfg->out_fd >= 0
                 ? pc__out_dir(w->j->cfg->out_fd, rel, len, 1)
                 : -ENOENT;
    if (fd < 0)
      return fd;
    w->odir.fd = fd;
    w->odir.own = 1;
  }
  return s->fresh ? pc__out_open_new(&s->out, w->odir.fd, s->base)
                  : pc__out_open(&s->out, w->odir.fd, s->base);
}

/* Records the first error and the name it is about. */
static inline void pc__job_fail(pc__job_t *j, int err, const char *path) {
  if (j->res.err != 0)
    return;
  j->res.err = err;
  if (path != NULL && path != j->fullpath)
    j->res.err_path = pc__strdup(path);
}

/* pc__job_fail(), then err: what a phase returns when the job fails. */
static inline int pc__job_failed(pc__job_t *j, int err, const char *path) {
  pc__job_fail(j, err, path);
  return err;
}

static inline int pc__job_stopping(const pc__job_t *j) {
  return atomic_load_explicit(j->cfg->stop, memory_order_relaxed);
}

#endif /* PC_WORK_H */
