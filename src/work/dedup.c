#include "work/dedup.h"

#include "common/index.h"
#include "work/work.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <stdlib.h>
#include <string.h>

struct pc__dedup {
  uv_mutex_t lock;
  uint64_t kept; /* bytes of outputs held, against keep_max */
  uint64_t keep_max;
  pc__content_t **all; /* every content claimed, in claim order */
  size_t n, capall;
  pc__index_t ix; /* over all[], by (size, hash) */
};

int pc__dedup_new(pc__dedup_t **out) {
  pc__dedup_t *d = calloc(1, sizeof(*d));
  *out = NULL;
  if (d == NULL)
    return -ENOMEM;
  if (uv_mutex_init(&d->lock) != 0) {
    free(d);
    return -ENOMEM;
  }
  d->keep_max = PC__DEDUP_KEEP_MAX;
  *out = d;
  return 0;
}

void pc__dedup_free(pc__dedup_t *d) {
  size_t i;
  if (d == NULL)
    return;
  for (i = 0; i < d->n; i++) {
    int f;
    for (f = 0; f < PC_NFORMATS; f++)
      free(d->all[i]->bytes[f]);
    free(d->all[i]);
  }
  free(d->all);
  pc__index_free(&d->ix);
  uv_mutex_destroy(&d->lock);
  free(d);
}

/* A content's key: its size and hash. */
typedef struct content_key {
  uint64_t size;
  const uint64_t *h;
} content_key_t;

static int content_is(const void *ctx, uint32_t item, const void *key) {
  const pc__content_t *c = ((const pc__dedup_t *)ctx)->all[item];
  const content_key_t *k = key;
  return c->size == k->size && c->h[0] == k->h[0] && c->h[1] == k->h[1];
}

int pc__dedup_claim(pc__dedup_t *d, uint64_t size, const uint64_t h[2],
                    pc__content_t **out, pc__claim_t *how) {
  content_key_t k = {size, h};
  pc__content_t *c;
  size_t s;
  int err = 0;

  *out = NULL;
  uv_mutex_lock(&d->lock);
  if ((err = pc__index_reserve(&d->ix)) != 0)
    goto out;
  s = pc__index_slot(&d->ix, h[0] ^ size, content_is, d, &k);
  if (pc__index_item(&d->ix, s) != UINT32_MAX) {
    c = d->all[pc__index_item(&d->ix, s)];
    *how = c->done ? PC__CLAIM_COPY : PC__CLAIM_WAIT;
    *out = c;
    goto out;
  }
  if ((err = PC__GROW(d->all, d->n, d->capall, 1024)) != 0)
    goto out;
  if ((c = calloc(1, sizeof(*c))) == NULL) {
    err = -ENOMEM;
    goto out;
  }
  c->size = size;
  c->h[0] = h[0];
  c->h[1] = h[1];
  d->all[d->n] = c;
  pc__index_put(&d->ix, s, h[0] ^ size, (uint32_t)d->n++);
  *how = PC__CLAIM_LEAD;
  *out = c;
out:
  uv_mutex_unlock(&d->lock);
  return err;
}

void pc__dedup_budget(pc__dedup_t *d, uint64_t mem_limit) {
  /* Copies kept for files that may never come are memory the limit must
   * account for: a quarter of it at most.
   */
  d->keep_max =
      mem_limit / 4 < PC__DEDUP_KEEP_MAX ? mem_limit / 4 : PC__DEDUP_KEEP_MAX;
}

int pc__dedup_reserve(pc__dedup_t *d, uint64_t n) {
  int ok;
  uv_mutex_lock(&d->lock);
  ok = n <= d->keep_max - d->kept;
  if (ok)
    d->kept += n;
  uv_mutex_unlock(&d->lock);
  return ok;
}

void pc__dedup_unreserve(pc__dedup_t *d, uint64_t n) {
  uv_mutex_lock(&d->lock);
  d->kept -= n;
  uv_mutex_unlock(&d->lock);
}

void pc__dedup_publish(pc__dedup_t *d, pc__content_t *c, int ok,
                       const pc_output_t *out, unsigned char **bytes) {
  int f;

  uv_mutex_lock(&d->lock);
  c->ok = ok;
  if (ok)
    memcpy(c->out, out, sizeof(c->out));
  for (f = 0; f < PC_NFORMATS; f++) {
    if (ok) {
      c->bytes[f] = bytes[f];
    } else if (bytes[f] != NULL) {
      d->kept -= out[f].size;
      free(bytes[f]);
    }
    bytes[f] = NULL;
  }
  c->done = 1;
  uv_mutex_unlock(&d->lock);
}

int pc__dedup_result(pc__dedup_t *d, pc__content_t *c, int *ok,
                     pc_output_t *out) {
  int done;
  uv_mutex_lock(&d->lock);
  done = c->done;
  *ok = c->ok;
  memcpy(out, c->out, sizeof(c->out));
  uv_mutex_unlock(&d->lock);
  return done;
}

int pc__dedup_park(pc__dedup_t *d, pc__dedup_ref_t *ref) {
  pc_output_t lo[PC_NFORMATS];
  int ok;

  ref->wait = 0;
  if (pc__dedup_result(d, ref->content, &ok, lo))
    return 1;
  ref->next_parked = ref->content->parked;
  ref->content->parked = ref;
  return 0;
}

pc__dedup_ref_t *pc__dedup_wake(pc__dedup_ref_t *ref) {
  pc__dedup_ref_t *w;

  if (!ref->lead)
    return NULL;
  w = ref->content->parked;
  ref->content->parked = NULL;
  return w;
}

/* --- The worker side ------------------------------------------------- */

/* Hashes the whole file. A file up to PC__CHUNK stays in *whole (malloc'd)
 * to be compressed from; a larger one is read in chunks and the descriptor
 * rewound.
 */
static int hash_file(const pc__job_t *j, int fd, unsigned char **whole,
                     uint64_t h[2]) {
  XXH128_hash_t x;
  unsigned char *buf;
  int err = 0;

  *whole = NULL;
  if (j->size <= PC__CHUNK) {
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
    buf = malloc(PC__CHUNK);
    if (st == NULL || buf == NULL) {
      err = -ENOMEM;
      goto big_out;
    }
    XXH3_128bits_reset(st);
    while (left > 0 && err == 0) {
      size_t n = left < PC__CHUNK ? (size_t)left : PC__CHUNK;
      if ((err = pc__read_full(fd, buf, n, -1)) == 0) {
        XXH3_128bits_update(st, buf, n);
        left -= n;
      }
      if (err == 0 && pc__job_stopping(j))
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

/* 1 when the leader kept a copy of every output it kept (else one was
 * too big, or the budget spent): only then does a follower copy. A
 * partial copy would mix a copied .gz with a fresh .br for nothing.
 */
static int copies_whole(const pc__job_t *j, const pc_output_t *lo,
                        const pc__content_t *c) {
  int f;

  for (f = 0; f < PC_NFORMATS; f++)
    if ((j->cfg->spec.formats & PC_FMT_BIT(f)) && lo[f].state == PC_OUT_KEPT &&
        c->bytes[f] == NULL && !j->cfg->dry_run)
      return 0;
  return 1;
}

/* Writes the leader's kept outputs into our temp files from the copy the
 * leader published (dedup.h), never from its files. 0, or the job's error
 * (our own write errors).
 */
static int copy_outputs(pc__work_t *w, const pc_output_t *lo,
                        const pc__content_t *c) {
  pc__job_t *j = w->j;
  int f, err;

  for (f = 0; f < PC_NFORMATS; f++) {
    pc__fmt_t *s = &w->fs[f];
    if (!(j->cfg->spec.formats & PC_FMT_BIT(f)) || lo[f].state != PC_OUT_KEPT)
      continue;
    s->total = lo[f].size;
    if (j->cfg->dry_run)
      continue; /* nothing to write */
    if ((err = pc__work_out_open(w, s)) != 0 ||
        (err = pc__out_write(&s->out, c->bytes[f], lo[f].size)) != 0)
      return pc__job_failed(j, err, s->final);
  }
  return 0;
}

/* Outputs from an identical file, when the leader succeeded. Its outputs
 * were made from bytes of this size and hash (the leader proved it: a
 * second read that hashes otherwise fails it, worker.c), and ours hash so
 * too: the copies are of our bytes as we read them. Never compared with
 * the leader's file as it is now, which its owner may have put back as
 * it was after feeding the encoders other bytes. 0 (res.copied says
 * whether it copied: else the job compresses), or the job's error.
 */
static int try_copy(pc__work_t *w) {
  pc__job_t *j = w->j;
  pc_output_t lo[PC_NFORMATS];
  int ok, err, f;

  if (!pc__dedup_result(j->cfg->dedup, j->dd.content, &ok, lo) || !ok ||
      !copies_whole(j, lo, j->dd.content))
    return 0;
  if ((err = copy_outputs(w, lo, j->dd.content)) != 0) {
    for (f = 0; f < PC_NFORMATS; f++)
      pc__out_discard(&w->fs[f].out);
    return err;
  }
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(j->cfg->spec.formats & PC_FMT_BIT(f)))
      continue;
    j->res.out[f].state =
        lo[f].state == PC_OUT_KEPT ? PC_OUT_KEPT : PC_OUT_RATIO;
    j->res.out[f].size = lo[f].state == PC_OUT_KEPT ? lo[f].size : 0;
  }
  j->res.copied = 1;
  return 0;
}

int pc__dedup_step(pc__work_t *w) {
  pc__job_t *j = w->j;
  int err;

  if (j->size > 0 && j->cfg->dedup != NULL) {
    if (j->dd.content == NULL) {
      pc__claim_t how;
      if ((err = hash_file(j, w->fd, &w->whole, w->h)) != 0 ||
          (err = pc__dedup_claim(j->cfg->dedup, j->size, w->h, &j->dd.content,
                                 &how)) != 0)
        return pc__job_failed(j, err, NULL);
      w->have_hash = 1;
      if (how == PC__CLAIM_WAIT) {
        j->dd.wait = 1;
        return PC__EDONE;
      }
      j->dd.lead = how == PC__CLAIM_LEAD;
    }
    if (!j->dd.lead && (err = try_copy(w)) != 0)
      return pc__job_failed(j, err, NULL);
  }
  if (j->dd.content != NULL && !w->have_hash) {
    w->h[0] = j->dd.content->h[0]; /* a follower back from waiting */
    w->h[1] = j->dd.content->h[1];
    w->have_hash = 1;
  }
  return 0;
}

/* A leader's copy of its kept output, for files with the same bytes to
 * write from (dedup.h): from memory, or read back through the temp's own
 * descriptor before its rename, never through a name. Best effort, within
 * the table's budget: without it followers compress.
 */
void pc__dedup_keep(pc__work_t *w, pc__fmt_t *s, uint64_t n) {
  const pc__job_t *j = w->j;
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

void pc__dedup_lead_done(pc__work_t *w) {
  pc__job_t *j = w->j;
  unsigned char *keep[PC_NFORMATS];
  int f;

  if (!j->dd.lead)
    return;
  for (f = 0; f < PC_NFORMATS; f++) {
    keep[f] = w->fs[f].keep;
    w->fs[f].keep = NULL;
  }
  pc__dedup_publish(j->cfg->dedup, j->dd.content, j->res.err == 0, j->res.out,
                    keep);
}
