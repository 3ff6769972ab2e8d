/* The open-addressing index (index.h). */
#include "common/index.h"

#include <stdlib.h>

/* Slots of a new index. */
#define FIRST_CAP 1024

int pc__index_reserve(pc__index_t *x) {
  size_t cap, i, j;
  pc__index_slot_t *slots;

  if ((x->n + 1) * 2 <= x->cap)
    return 0;
  cap = x->cap ? x->cap * 2 : FIRST_CAP;
  if (cap > (size_t)UINT32_MAX || (slots = calloc(cap, sizeof(*slots))) == NULL)
    return -ENOMEM;
  for (i = 0; i < x->cap; i++) {
    if (x->slots[i].item == 0)
      continue;
    for (j = x->slots[i].hash & (cap - 1); slots[j].item != 0;
         j = (j + 1) & (cap - 1))
      ;
    slots[j] = x->slots[i];
  }
  free(x->slots);
  x->slots = slots;
  x->cap = cap;
  return 0;
}

size_t pc__index_slot(const pc__index_t *x, uint64_t h, pc__index_eq_t eq,
                      const void *ctx, const void *key) {
  size_t i = (size_t)h & (x->cap - 1);

  for (; x->slots[i].item != 0; i = (i + 1) & (x->cap - 1))
    if (x->slots[i].hash == (uint32_t)h && eq(ctx, x->slots[i].item - 1, key))
      break;
  return i;
}

void pc__index_put(pc__index_t *x, size_t s, uint64_t h, uint32_t item) {
  x->slots[s].hash = (uint32_t)h;
  x->slots[s].item = item + 1;
  x->n++;
}

uint32_t pc__index_find(const pc__index_t *x, uint64_t h, pc__index_eq_t eq,
                        const void *ctx, const void *key) {
  if (x->n == 0)
    return UINT32_MAX;
  return pc__index_item(x, pc__index_slot(x, h, eq, ctx, key));
}

void pc__index_free(pc__index_t *x) {
  free(x->slots);
  x->slots = NULL;
  x->cap = x->n = 0;
}
