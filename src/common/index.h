/* The one open-addressing hash index: from a key to an item the caller
 * keeps elsewhere (an entry of an array, a pointer in one), by the item's
 * number. Linear probing over a power-of-two array of slots, at most half
 * full, so a probe always ends; a slot holds the low half of the key's
 * hash (checked before the caller's eq(), and what places the slot when
 * the index doubles) and the item's number. Used by prev.c (the earlier
 * manifest's records) and dedup.c (contents by hash).
 *
 * walk.c's set of directories entered (dev, ino) is the one other
 * open-addressing table, on purpose: its key is all there is, 16 bytes
 * kept inline, so an index over a separate array would only double its
 * memory and add a step. Not used from a worker, not a place for
 * variable-length keys.
 */
#ifndef PC_INDEX_H
#define PC_INDEX_H

#include "common/common.h"

typedef struct pc__index_slot {
  uint32_t hash; /* the low half of the key's hash */
  uint32_t item; /* the item's number + 1; 0 for an empty slot */
} pc__index_slot_t;

/* A zeroed struct is an empty index. */
typedef struct pc__index {
  pc__index_slot_t *slots;
  size_t cap; /* a power of two, or 0 */
  size_t n;   /* items in it */
} pc__index_t;

/* Whether item number `item` of the caller's (ctx) is `key`. */
typedef int (*pc__index_eq_t)(const void *ctx, uint32_t item, const void *key);

/* Room for one more item (the index doubles when it would pass half
 * full). 0 or -ENOMEM, also for 2^31 items (a slot's hash half places it).
 */
int pc__index_reserve(pc__index_t *x);

/* The slot of key (hash h): the one holding the item eq() says is key, or
 * the empty one where it goes (cap must not be 0: pc__index_reserve()).
 * Valid until the index changes.
 */
size_t pc__index_slot(const pc__index_t *x, uint64_t h, pc__index_eq_t eq,
                      const void *ctx, const void *key);

/* The item in slot s, or UINT32_MAX for an empty slot. */
static inline uint32_t pc__index_item(const pc__index_t *x, size_t s) {
  return x->slots[s].item != 0 ? x->slots[s].item - 1 : UINT32_MAX;
}

/* Puts item number `item` (below UINT32_MAX) in the empty slot s. */
void pc__index_put(pc__index_t *x, size_t s, uint64_t h, uint32_t item);

/* The item that is key (hash h), or UINT32_MAX. */
uint32_t pc__index_find(const pc__index_t *x, uint64_t h, pc__index_eq_t eq,
                        const void *ctx, const void *key);

void pc__index_free(pc__index_t *x);

#endif /* PC_INDEX_H */
