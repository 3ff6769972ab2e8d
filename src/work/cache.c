/* The cache's worker side (--cache-dir): the key of one format of a
 * job's content, taking a result from the store instead of compressing,
 * copying a cached payload into the temp file, and storing what this run
 * compressed. The store itself (SQLite, checksums, the writer thread) is
 * store.c; when a job looks up and when it stores is worker.c's order of
 * phases.
 */
#include "work/cache.h"

#include <stdlib.h>

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

void pc__cache_mark(const pc__work_t *w, pc__fmt_t *s) {
  const pc__job_t *j = w->j;
  if (j->cfg->cache != NULL && w->have_hash && !s->cached && !j->res.copied &&
      !j->cfg->dry_run && j->size > 0)
    s->hash = w->h;
}

void pc__cache_put_kept(pc__work_t *w, int f, uint64_t n) {
  pc__job_t *j = w->j;
  const pc__fmt_t *s = &w->fs[f];
  pc__store_key_t k;

  cache_key(j, f, s->hash, &k);
  j->res.cache_puts += (unsigned)pc__store_put(
      j->cfg->cache, &k, 1, s->mem != NULL ? s->mem : s->keep, s->out.fd, n, 0);
}

void pc__cache_put_rejected(pc__work_t *w, int f) {
  pc__job_t *j = w->j;
  const pc__fmt_t *s = &w->fs[f];
  pc__store_key_t k;

  if (s->hash == NULL || j->res.out[f].state == PC_OUT_KEPT)
    return;
  cache_key(j, f, s->hash, &k);
  j->res.cache_puts += (unsigned)pc__store_put(
      j->cfg->cache, &k, 0, NULL, -1, 0,
      pc__keep_limit(j->size, j->cfg->spec.ratio_num, j->cfg->spec.ratio_den));
}
