/* Deltas shared within a run (deltashare.h): a chained hash table of
 * results under one lock. Entries live until the run ends.
 */
#include "work/deltashare.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define BUCKETS 4096 /* a power of two */

typedef struct entry {
  struct entry *next;
  pc__store_key_t key;
  int kept;
  uint64_t limit;
  size_t n;
  unsigned char bytes[]; /* n of them, when kept */
} entry_t;

struct pc__dshare {
  uv_mutex_t lock;
  uint64_t budget, used;
  entry_t *bucket[BUCKETS];
};

static int same(const pc__store_key_t *a, const pc__store_key_t *b) {
  return a->h[0] == b->h[0] && a->h[1] == b->h[1] && a->size == b->size &&
         a->format == b->format && a->level == b->level;
}

static entry_t **slot(pc__dshare_t *s, const pc__store_key_t *k) {
  return &s->bucket[k->h[0] & (BUCKETS - 1)];
}

int pc__dshare_new(pc__dshare_t **out, uint64_t budget) {
  pc__dshare_t *s = calloc(1, sizeof(*s));

  *out = NULL;
  if (s == NULL)
    return -ENOMEM;
  if (uv_mutex_init(&s->lock) != 0) {
    free(s);
    return -ENOMEM;
  }
  s->budget = budget;
  *out = s;
  return 0;
}

void pc__dshare_free(pc__dshare_t *s) {
  size_t b;

  if (s == NULL)
    return;
  for (b = 0; b < BUCKETS; b++) {
    entry_t *e = s->bucket[b];
    while (e != NULL) {
      entry_t *next = e->next;
      free(e);
      e = next;
    }
  }
  uv_mutex_destroy(&s->lock);
  free(s);
}

int pc__dshare_get(pc__dshare_t *s, const pc__store_key_t *k, int *kept,
                   uint64_t *limit, pc__buf_t *o) {
  const entry_t *e;
  int hit = 0;

  uv_mutex_lock(&s->lock);
  for (e = *slot(s, k); e != NULL && !same(&e->key, k); e = e->next)
    ;
  if (e != NULL) {
    *kept = e->kept;
    *limit = e->limit;
    hit = !e->kept || pc__buf_append(o, e->bytes, e->n) == 0;
  }
  uv_mutex_unlock(&s->lock);
  return hit;
}

void pc__dshare_put(pc__dshare_t *s, const pc__store_key_t *k, int kept,
                    const unsigned char *p, size_t n, uint64_t limit) {
  size_t size = sizeof(entry_t) + (kept ? n : 0);
  entry_t **at, *e;

  uv_mutex_lock(&s->lock);
  for (at = slot(s, k); *at != NULL && !same(&(*at)->key, k); at = &(*at)->next)
    ;
  if (*at == NULL && s->used + size <= s->budget &&
      (e = malloc(size)) != NULL) {
    e->next = NULL;
    e->key = *k;
    e->kept = kept;
    e->limit = limit;
    e->n = kept ? n : 0;
    if (kept)
      memcpy(e->bytes, p, n);
    *at = e;
    s->used += size;
  }
  uv_mutex_unlock(&s->lock);
}
