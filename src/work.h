/* A job on its worker: the state its phases share (job.c runs them; the
 * incremental check, dedupe, the cache and settling each have their own
 * file) and the helpers every phase uses. Worker side only: the loop
 * thread never sees a pc__fmt_t.
 */
#ifndef PC_WORK_H
#define PC_WORK_H

#include "common.h"
#include "codec.h"
#include "job.h"
#include "out.h"
#include "store.h"

#include <stdatomic.h>
#include <string.h>

/* Input slice: the unit of reading, of feeding the encoders and of
 * checking for a stop request (brotli 11 takes about a quarter second on
 * one), and the largest file hashed and compressed from one buffer.
 */
#define PC__CHUNK ((size_t)PC__WHOLE_MAX)
#define PC__SPILL ((size_t)1 << 20)
#define PC__COPY_BUF ((size_t)1 << 16)

/* One format of the job on its worker: what the phases (job.c, cache.c,
 * dedup.c, settle.c) hand each other. The worker's alone.
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
  pc__store_hit_t hit; /* a cached payload to copy (hit.rd), or zeroed */
  const unsigned char *mem; /* once settled: all of the output, still in
                               buf (never spilled before), or NULL */
  unsigned char *keep;      /* a leader's copy of its kept output for followers
                               to write from (dedup.h), or NULL */
  const uint64_t *hash;     /* the content's hash when the result is to go into
                               the cache, else NULL */
} pc__fmt_t;

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
 * output written into it: a file that keeps nothing makes no directory.
 */
static inline int pc__job_out_open(pc__job_t *j, pc__fmt_t *s) {
  if (j->odir < 0) {
    size_t len;
    const char *rel = pc__job_reldir(j, &len);
    int fd = j->cfg->out_fd >= 0 ? pc__out_dir(j->cfg->out_fd, rel, len, 1)
                                 : -ENOENT;
    if (fd < 0)
      return fd;
    j->odir = fd;
  }
  return pc__out_open(&s->out, j->odir, s->base);
}

/* Records the first error and the name it is about. */
static inline void pc__job_fail(pc__job_t *j, int err, const char *path) {
  if (j->err != 0)
    return;
  j->err = err;
  if (path != NULL && path != j->fullpath)
    j->err_path = pc__strdup(path);
}

static inline int pc__job_stopping(const pc__job_t *j) {
  return atomic_load_explicit(&((pc__cfg_t *)j->cfg)->stop,
                              memory_order_relaxed);
}

#endif /* PC_WORK_H */
