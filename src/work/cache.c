/* The cache's worker side (--cache-dir, --cache-url): the key of one
 * format of a job's content, taking a result from the local store or the
 * remote one instead of compressing, copying a cached payload into the
 * temp file, and storing what this run compressed. The stores themselves
 * are store.c (SQLite, checksums, the writer thread) and remote.c (HTTP,
 * its thread); when a job looks up and when it stores is worker.c's order
 * of phases.
 *
 * The local store is checked against its own checksums, the remote one
 * against the source itself: a payload fetched is decoded (codec/decode.h)
 * and must give exactly the source's bytes before it is used, and only
 * then goes into the local store. A server that anyone else can write
 * thus costs time at worst, never a wrong output.
 */
#include "work/cache.h"

#include "codec/codec.h"
#include "codec/decode.h"
#include "store/remote.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* The cache's key for format f of this content: its hash and size, the
 * format, and the settings the spec's table marks as shaping an output's
 * bytes (PC__SPEC_BYTES: the format's level, the gzip engine; the engine
 * is in every format's key, as it always was).
 */
static void cache_key(const pc__job_t *j, int f, const uint64_t h[2],
                      pc__store_key_t *k) {
  const pc__spec_t *s = &j->cfg->spec;
  size_t i;

  k->h[0] = h[0];
  k->h[1] = h[1];
  k->size = j->size;
  k->format = (pc_format_t)f;
  k->level = 0;
  k->engine = PC_GZIP_ZLIB;
  for (i = 0; i < PC__SPEC_NFIELDS; i++) {
    const pc__spec_field_t *fd = &pc__spec_fields[i];
    if (!(fd->use & PC__SPEC_BYTES))
      continue;
    if (fd->kind == PC__SPEC_LEVEL && fd->format == f)
      k->level = s->level[f];
    else if (fd->kind == PC__SPEC_ENGINE)
      k->engine = s->gzip_engine;
  }
}

/* Takes format f's result from the cache when it has one that decides the
 * keep rule: a payload (kept or not by its length), or a rejection above a
 * limit at least ours. 1 when it did.
 */
int pc__cache_get(pc__work_t *w, int f, uint64_t limit) {
  pc__job_t *j = w->j;
  pc__fmt_t *s = &w->fs[f];
  pc__store_key_t k;
  pc__store_hit_t hit;

  cache_key(j, f, w->h, &k);
  if (!pc__store_get(j->cfg->cache, &k, &hit))
    return 0;
  if (hit.rejected) {
    if (hit.limit < limit)
      return 0; /* rejected above a lower limit: ours may keep it */
    j->res.out[f].state = PC_OUT_RATIO;
  } else if (pc__keep(j->size, hit.len, j->cfg->spec.ratio_num,
                      j->cfg->spec.ratio_den)) {
    j->res.out[f].state = PC_OUT_KEPT;
    j->res.out[f].size = hit.len;
    s->total = hit.len;
    s->hit = hit; /* copied by pc__settle(), released by the job */
    hit.rd = NULL;
  } else {
    j->res.out[f].state = PC_OUT_RATIO;
  }
  pc__store_release(j->cfg->cache, &hit);
  s->cached = 1;
  return 1;
}

/* Copies the cached payload (n bytes, verified in the snapshot the hit
 * holds) into the format's temp file. The hit is released on failure, by
 * pc__settle() after use.
 */
int pc__cache_copy(pc__work_t *w, pc__fmt_t *s, uint64_t n) {
  pc__job_t *j = w->j;
  unsigned char *buf = NULL;
  uint64_t off = 0;
  int err = 0;

  /* Recorded like every other failure here: pc__settle() only passes the
   * code on, and a job without j->err counts as done.
   */
  if (s->hit.mem == NULL && (buf = malloc(PC__COPY_BUF)) == NULL) {
    pc__job_fail(j, -ENOMEM, NULL);
    return -ENOMEM;
  }
  if (s->out.fd < 0 && (err = pc__work_out_open(w, s)) != 0) {
    pc__job_fail(j, err, s->final);
    goto out;
  }
  if (s->hit.mem != NULL) { /* the store's own copy: no second one */
    if ((err = pc__out_write(&s->out, s->hit.mem, (size_t)n)) != 0)
      pc__job_fail(j, err, s->final);
    goto out;
  }
  while (off < n) {
    size_t k = n - off < PC__COPY_BUF ? (size_t)(n - off) : PC__COPY_BUF;
    if ((err = pc__store_read(&s->hit, off, buf, k)) != 0) {
      pc__job_fail(j, err, NULL);
      goto out;
    }
    if ((err = pc__out_write(&s->out, buf, k)) != 0) {
      pc__job_fail(j, err, s->final);
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

/* What a fetched payload is compared with, piece by piece as it decodes:
 * the source in memory (whole), else read again from its descriptor.
 */
typedef struct same_ctx {
  const pc__work_t *w;
  uint64_t off;
  unsigned char *buf; /* PC__COPY_BUF bytes, when read from fd */
} same_ctx_t;

static int same_piece(void *ctx, const unsigned char *p, size_t n) {
  same_ctx_t *c = ctx;
  const pc__work_t *w = c->w;
  size_t done = 0;

  if (n > w->j->size - c->off)
    return PC_ECODEC; /* longer than the source */
  if (w->whole != NULL) {
    if (memcmp(w->whole + c->off, p, n) != 0)
      return PC_ECODEC;
    c->off += n;
    return 0;
  }
  while (done < n) {
    size_t k = n - done < PC__COPY_BUF ? n - done : PC__COPY_BUF;
    if (pc__read_full(w->fd, c->buf, k, (off_t)(c->off + done)) != 0 ||
        memcmp(c->buf, p + done, k) != 0)
      return PC_ECODEC;
    done += k;
  }
  c->off += n;
  return 0;
}

/* 1 when payload[0..len) is format f's output of exactly the source. */
static int decodes_to_source(const pc__work_t *w, int f,
                             const unsigned char *payload, size_t len) {
  same_ctx_t c = {w, 0, NULL};
  int ok;

  if (w->whole == NULL && (c.buf = malloc(PC__COPY_BUF)) == NULL)
    return 0;
  ok = pc__decode((pc_format_t)f, payload, len, same_piece, &c) == 0 &&
       c.off == w->j->size;
  free(c.buf);
  return ok;
}

/* Takes format f's answer g from the remote: a rejection at a limit at
 * least ours, or a payload that decodes to the source (into the format's
 * buffer, as if compressed here, kept or not by the keep rule). 1 when it
 * decided the format.
 */
static int take_fetched(pc__work_t *w, int f, pc__remote_get_t *g,
                        uint64_t limit) {
  pc__job_t *j = w->j;
  pc__fmt_t *s = &w->fs[f];

  if (g->rejected) {
    if (g->limit < limit)
      return 0; /* rejected above a lower limit: ours may keep it */
    j->res.out[f].state = PC_OUT_RATIO;
  } else if (!decodes_to_source(w, f, g->data, g->len)) {
    j->res.remote_rejected |= PC_FMT_BIT(f);
    return 0;
  } else if (pc__keep(j->size, g->len, j->cfg->spec.ratio_num,
                      j->cfg->spec.ratio_den)) {
    /* The body's own block, the payload moved to its start: settled from
     * the buffer as an output compressed here.
     */
    memmove(g->body_, g->data, g->len);
    pc__buf_free(&s->buf);
    s->buf.data = g->body_;
    s->buf.len = g->len;
    s->buf.cap = g->body_len_;
    s->total = g->len;
    g->body_ = NULL;
    j->res.out[f].state = PC_OUT_KEPT;
    j->res.out[f].size = g->len;
  } else {
    j->res.out[f].state = PC_OUT_RATIO;
  }
  s->cached = 1;
  s->fetched = 1;
  j->res.remote_hits |= PC_FMT_BIT(f);
  return 1;
}

int pc__cache_remote_worth(const pc__job_t *j) {
  const pc__spec_t *s = &j->cfg->spec;
  uint64_t us = 0;
  int f;

  if (j->size > PC__REMOTE_MAX)
    return 0;
  for (f = 0; f < PC_NFORMATS; f++)
    if (s->formats & PC_FMT_BIT(f))
      us +=
          pc__enc_cost_us((pc_format_t)f, s->level[f], s->gzip_engine, j->size);
  return us >= PC__REMOTE_WORTH_US;
}

static int same_key(const pc__store_key_t *a, const pc__store_key_t *b) {
  return a->h[0] == b->h[0] && a->h[1] == b->h[1] && a->size == b->size &&
         a->format == b->format && a->level == b->level &&
         a->engine == b->engine;
}

/* The content of a unit's file, hashed as its job will hash it: 1 when
 * read (a regular file, still of the size the walk saw), else 0.
 */
static int prefetch_hash(const pc__job_t *j, int dirfd, unsigned char *buf,
                         uint64_t h[2]) {
  const char *name = j->fullpath + pc__job_base_off(j);
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW,
      fd = -1;
  struct stat st;
  XXH128_hash_t x;
  int ok;

#ifdef O_NOATIME
  /* The job takes the source's atime for its outputs as it finds it: this
   * early read leaves it alone where the kernel lets it (our own files).
   */
  fd = openat(dirfd, name, flags | O_NOATIME);
#endif
  if (fd < 0)
    fd = openat(dirfd, name, flags);
  if (fd < 0)
    return 0;
  ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
       (uint64_t)st.st_size == j->size &&
       pc__read_full(fd, buf, (size_t)j->size, 0) == 0;
  close(fd);
  if (!ok)
    return 0;
  x = XXH3_128bits(buf, (size_t)j->size);
  h[0] = x.low64;
  h[1] = x.high64;
  return 1;
}

void pc__cache_prefetch(const pc__job_t *head, int dirfd, pc__prefetch_t *pf) {
  const pc__cfg_t *c = head->cfg;
  const pc__job_t *j;
  unsigned char *buf = malloc(PC__CHUNK);
  size_t cap = 0;
  int f;

  pf->g = NULL;
  pf->n = 0;
  if (buf == NULL)
    return;
  for (j = head; j != NULL; j = j->unit.next) {
    uint64_t h[2];
    if (j->prev != NULL || j->via_link || j->skip != PC_SKIP_NONE ||
        j->size == 0 || j->size > PC__CHUNK || pc__job_stopping(j) ||
        !pc__cache_remote_worth(j) || !prefetch_hash(j, dirfd, buf, h))
      continue;
    for (f = 0; f < PC_NFORMATS; f++) {
      pc__store_key_t k;
      pc__store_hit_t hit;
      if (!(c->spec.formats & PC_FMT_BIT(f)))
        continue;
      cache_key(j, f, h, &k);
      if (c->cache != NULL && pc__store_get(c->cache, &k, &hit)) {
        pc__store_release(c->cache, &hit); /* its job takes it there */
        continue;
      }
      if (PC__GROW(pf->g, pf->n, cap, 64) != 0)
        goto out;
      memset(&pf->g[pf->n], 0, sizeof(pf->g[pf->n]));
      pf->g[pf->n].key = k;
      pf->g[pf->n].max = j->size; /* a kept output: no longer than it */
      pf->n++;
    }
  }
out:
  free(buf);
  if (pf->n > 0)
    pc__remote_get(c->remote, pf->g, pf->n);
}

void pc__cache_prefetch_free(pc__prefetch_t *pf) {
  size_t i;
  for (i = 0; i < pf->n; i++)
    pc__remote_get_free(&pf->g[i]);
  free(pf->g);
  pf->g = NULL;
  pf->n = 0;
}

/* The unit's answer for k, moved into *g (its body then g's): 1 when
 * the unit asked for k.
 */
static int prefetched(pc__work_t *w, const pc__store_key_t *k,
                      pc__remote_get_t *g) {
  size_t i;

  for (i = 0; w->pf != NULL && i < w->pf->n; i++) {
    pc__remote_get_t *p = &w->pf->g[i];
    if (!same_key(&p->key, k))
      continue;
    *g = *p;
    /* Taken: a second job of the same content (dedupe's follower) asks
     * the server itself, which it never does while its leader is alive.
     */
    memset(p, 0, sizeof(*p));
    return 1;
  }
  return 0;
}

unsigned pc__cache_fetch(pc__work_t *w, unsigned want, uint64_t limit) {
  pc__job_t *j = w->j;
  pc__remote_get_t g[PC_NFORMATS], ask[PC_NFORMATS];
  int fmt[PC_NFORMATS], afmt[PC_NFORMATS];
  size_t n = 0, na = 0, i, k;
  unsigned hits = 0, rejected = 0;
  int f;

  if (!pc__cache_remote_worth(j))
    return want;
  for (f = 0; f < PC_NFORMATS; f++) {
    pc__store_key_t key;
    if (!(want & PC_FMT_BIT(f)))
      continue;
    cache_key(j, f, w->h, &key);
    if (prefetched(w, &key, &g[n])) {
      fmt[n++] = f;
      continue;
    }
    memset(&ask[na], 0, sizeof(ask[na]));
    ask[na].key = key;
    /* A kept output is never longer than its source. */
    ask[na].max = j->size;
    afmt[na++] = f;
  }
  if (na > 0)
    pc__remote_get(j->cfg->remote, ask, na);
  for (k = 0; k < na; k++) {
    g[n] = ask[k];
    fmt[n++] = afmt[k];
  }
  for (i = 0; i < n; i++) {
    if (g[i].bad)
      j->res.remote_rejected |= PC_FMT_BIT(fmt[i]);
    if (g[i].found && take_fetched(w, fmt[i], &g[i], limit)) {
      want &= ~PC_FMT_BIT(fmt[i]);
      hits++;
    }
    pc__remote_get_free(&g[i]);
  }
  for (f = 0; f < PC_NFORMATS; f++)
    rejected += (j->res.remote_rejected >> f) & 1;
  pc__remote_count(j->cfg->remote, (unsigned)n, hits, rejected);
  return want;
}

void pc__cache_mark(const pc__work_t *w, pc__fmt_t *s) {
  const pc__job_t *j = w->j;
  /* A remote hit goes into the local store, not back to the remote. */
  if ((s->fetched ? j->cfg->cache != NULL
                  : j->cfg->cache != NULL || j->cfg->remote != NULL) &&
      w->have_hash && (!s->cached || s->fetched) && !j->res.copied &&
      !j->cfg->dry_run && j->size > 0)
    s->hash = w->h;
}

void pc__cache_put_kept(pc__work_t *w, int f, uint64_t n) {
  pc__job_t *j = w->j;
  const pc__fmt_t *s = &w->fs[f];
  const unsigned char *mem = s->mem != NULL ? s->mem : s->keep;
  pc__store_key_t k;

  cache_key(j, f, s->hash, &k);
  if (j->cfg->cache != NULL)
    j->res.cache_puts +=
        (unsigned)pc__store_put(j->cfg->cache, &k, 1, mem, s->out.fd, n, 0);
  if (j->cfg->remote != NULL && !s->fetched && pc__cache_remote_worth(j))
    pc__remote_put(j->cfg->remote, &k, 1, mem, s->out.fd, n, 0);
}

void pc__cache_put_rejected(pc__work_t *w, int f) {
  pc__job_t *j = w->j;
  const pc__fmt_t *s = &w->fs[f];
  uint64_t lim;
  pc__store_key_t k;

  if (s->hash == NULL || j->res.out[f].state == PC_OUT_KEPT)
    return;
  cache_key(j, f, s->hash, &k);
  lim = pc__keep_limit(j->size, j->cfg->spec.ratio_num, j->cfg->spec.ratio_den);
  if (j->cfg->cache != NULL)
    j->res.cache_puts +=
        (unsigned)pc__store_put(j->cfg->cache, &k, 0, NULL, -1, 0, lim);
  if (j->cfg->remote != NULL && !s->fetched && pc__cache_remote_worth(j))
    pc__remote_put(j->cfg->remote, &k, 0, NULL, -1, 0, lim);
}
