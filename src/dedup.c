#include "dedup.h"

#include "index.h"

#include <stdlib.h>
#include <string.h>

struct pc__dedup {
  uv_mutex_t lock;
  uint64_t kept; /* bytes of outputs held, against keep_max */
  uint64_t keep_max;
  pc__content_t **all; /* every content claimed, in claim order */
  size_t n, capall;
  pc__index_t ix;      /* over all[], by (size, hash) */
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
    free(d->all[i]->leader);
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
                    const char *path, pc__content_t **out, pc__claim_t *how) {
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
  if (d->n == d->capall) {
    size_t ncap = d->capall ? d->capall * 2 : 1024;
    pc__content_t **all = realloc(d->all, ncap * sizeof(*all));
    if (all == NULL) {
      err = -ENOMEM;
      goto out;
    }
    d->all = all;
    d->capall = ncap;
  }
  c = calloc(1, sizeof(*c));
  if (c == NULL || (c->leader = pc__strdup(path)) == NULL) {
    free(c);
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
  d->keep_max = mem_limit / 4 < PC__DEDUP_KEEP_MAX ? mem_limit / 4
                                                   : PC__DEDUP_KEEP_MAX;
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
