#include "dedup.h"

#include <stdlib.h>
#include <string.h>

struct pc__dedup {
  uv_mutex_t lock;
  uint64_t kept; /* bytes of outputs held, against keep_max */
  uint64_t keep_max;
  pc__content_t **slots; /* open addressing, power-of-two size */
  size_t cap, n;
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
  for (i = 0; i < d->cap; i++) {
    if (d->slots[i] != NULL) {
      int f;
      for (f = 0; f < PC_NFORMATS; f++)
        free(d->slots[i]->bytes[f]);
      free(d->slots[i]->leader);
      free(d->slots[i]);
    }
  }
  free(d->slots);
  uv_mutex_destroy(&d->lock);
  free(d);
}

static size_t slot_of(const pc__dedup_t *d, uint64_t size, const uint64_t *h) {
  size_t i = (size_t)(h[0] ^ size) & (d->cap - 1);
  for (; d->slots[i] != NULL; i = (i + 1) & (d->cap - 1)) {
    const pc__content_t *c = d->slots[i];
    if (c->size == size && c->h[0] == h[0] && c->h[1] == h[1])
      break;
  }
  return i;
}

static int grow(pc__dedup_t *d) {
  size_t ncap = d->cap ? d->cap * 2 : 1024, i;
  pc__dedup_t g;
  g.cap = ncap;
  g.slots = calloc(ncap, sizeof(*g.slots));
  if (g.slots == NULL)
    return -ENOMEM;
  for (i = 0; i < d->cap; i++) {
    pc__content_t *c = d->slots[i];
    if (c != NULL)
      g.slots[slot_of(&g, c->size, c->h)] = c;
  }
  free(d->slots);
  d->slots = g.slots;
  d->cap = ncap;
  return 0;
}

int pc__dedup_claim(pc__dedup_t *d, uint64_t size, const uint64_t h[2],
                    const char *path, pc__content_t **out, pc__claim_t *how) {
  pc__content_t *c;
  size_t i;
  int err = 0;

  *out = NULL;
  uv_mutex_lock(&d->lock);
  if ((d->n + 1) * 2 > d->cap && (err = grow(d)) != 0)
    goto out;
  i = slot_of(d, size, h);
  if ((c = d->slots[i]) != NULL) {
    *how = c->done ? PC__CLAIM_COPY : PC__CLAIM_WAIT;
    *out = c;
    goto out;
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
  d->slots[i] = c;
  d->n++;
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
