/* Which pending unit starts next (schedule.h).
 *
 * Two max-heaps by weight (the unit's bytes): largest first keeps a big
 * file from starting last and finishing alone. Memory is the second
 * resource: a unit starts only while the estimates of the units in flight
 * and its own stay within the limit, so the limit, not a fixed budget, is
 * what makes a unit wait, and below it every core is busy. Small files
 * of one directory are gathered into one unit first (pc__sched_add), so
 * that a pool hand-off carries milliseconds of work, not microseconds.
 */
#include "run/schedule.h"

#include <stdlib.h>
#include <string.h>

static void sift_up(pc__heap_t *h, size_t i, pc__job_t *j) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h->v[p]->unit.weight >= j->unit.weight)
      break;
    h->v[i] = h->v[p];
    i = p;
  }
  h->v[i] = j;
}

static void sift_down(pc__heap_t *h, size_t i, pc__job_t *j) {
  size_t n = h->n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && h->v[c + 1]->unit.weight > h->v[c]->unit.weight)
      c++;
    if (j->unit.weight >= h->v[c]->unit.weight)
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  h->v[i] = j;
}

/* Takes out the unit at index i (the root, or one of its children). */
static pc__job_t *heap_take(pc__heap_t *h, size_t i) {
  pc__job_t *j = h->v[i], *last = h->v[--h->n];
  if (i < h->n) {
    /* `last` came from below i's parent's subtree only if i is the root;
     * for a child it may be larger than i's parent: both ways are tried.
     */
    sift_down(h, i, last);
    if (h->v[i] == last)
      sift_up(h, i, last);
  }
  return j;
}

void pc__sched_init(pc__sched_t *s, unsigned jobs, uint64_t limit) {
  memset(s, 0, sizeof(*s));
  s->jobs = jobs;
  s->limit = limit;
}

void pc__sched_hold(pc__sched_t *s, uint64_t bytes) {
  s->used += bytes;
  if (s->used > s->peak)
    s->peak = s->used;
}

int pc__sched_push(pc__sched_t *s, pc__job_t *unit) {
  pc__heap_t *h = unit->unit.mem > PC__SCHED_SMALL ? &s->big : &s->small;
  int err;

  if ((err = PC__GROW(h->v, h->n, h->cap, 256)) != 0)
    return err;
  unit->unit.filler = 0;
  unit->unit.alone = 0;
  h->n++;
  sift_up(h, h->n - 1, unit);
  return 0;
}

/* 1 if a unit of `mem` bytes may start beside what is in flight. */
static int fits(const pc__sched_t *s, uint64_t mem) {
  return s->in_flight == 0 ||
         (s->used <= s->limit && mem <= s->limit - s->used);
}

static pc__job_t *start(pc__sched_t *s, pc__heap_t *h, size_t i, int filler) {
  pc__job_t *j = heap_take(h, i);
  j->unit.filler = filler;
  j->unit.alone = j->unit.mem > s->limit;
  s->alone += j->unit.alone != 0;
  s->in_flight++;
  s->used += j->unit.mem;
  if (filler)
    s->used_fill += j->unit.mem;
  if (s->used > s->peak)
    s->peak = s->used;
  return j;
}

/* Index of the larger child of the root, or 0 when there is none. */
static size_t second(const pc__heap_t *h) {
  if (h->n < 2)
    return 0;
  return h->n > 2 && h->v[2]->unit.weight > h->v[1]->unit.weight ? 2 : 1;
}

pc__job_t *pc__sched_next(pc__sched_t *s) {
  pc__heap_t *th, *oh;
  pc__job_t *top;
  uint64_t reserve;
  size_t k;

  if (s->in_flight >= s->jobs || (s->big.n == 0 && s->small.n == 0))
    return NULL;
  if (s->big.n > 0 && (s->small.n == 0 || s->big.v[0]->unit.weight >=
                                              s->small.v[0]->unit.weight)) {
    th = &s->big;
    oh = &s->small;
  } else {
    th = &s->small;
    oh = &s->big;
  }
  top = th->v[0];
  if (fits(s, top->unit.mem))
    return start(s, th, 0, 0);
  /* Over the limit by itself: it starts once the pool is empty (fits()
   * then says yes), and nothing new starts meanwhile, or it never would.
   */
  if (top->unit.mem > s->limit)
    return NULL;
  /* It waits for the units ahead of it. A filler may start only if, once
   * those are done, the fillers in flight still leave it room: the other
   * heap's largest, or the next in its own heap.
   */
  reserve = s->limit - top->unit.mem;
  if (oh->n > 0 && fits(s, oh->v[0]->unit.mem) &&
      s->used_fill + oh->v[0]->unit.mem <= reserve)
    return start(s, oh, 0, 1);
  if ((k = second(th)) != 0 && fits(s, th->v[k]->unit.mem) &&
      s->used_fill + th->v[k]->unit.mem <= reserve)
    return start(s, th, k, 1);
  return NULL;
}

void pc__sched_done(pc__sched_t *s, const pc__job_t *unit) {
  s->in_flight--;
  s->used -= unit->unit.mem;
  if (unit->unit.filler)
    s->used_fill -= unit->unit.mem;
}

size_t pc__sched_pending(const pc__sched_t *s) { return s->small.n + s->big.n; }

void pc__sched_drop(pc__sched_t *s, int all) {
  pc__heap_t *hs[2] = {&s->small, &s->big};
  int k;

  pc__job_free(s->batch.head);
  s->batch.head = s->batch.tail = NULL;
  s->batch.n = 0;
  for (k = 0; k < 2; k++) {
    while (hs[k]->n > 0)
      pc__job_free(hs[k]->v[--hs[k]->n]);
    if (all) {
      free(hs[k]->v);
      hs[k]->v = NULL;
      hs[k]->cap = 0;
    }
  }
}

/* --- Units: small files of one directory travel together --------------- */

/* 1 if the two jobs' files are in the same directory of the same root. */
static int same_dir(const pc__job_t *a, const pc__job_t *b) {
  const char *ra = a->fullpath + a->rel_off, *rb = b->fullpath + b->rel_off;
  const char *sa = strrchr(ra, '/'), *sb = strrchr(rb, '/');
  size_t la = sa != NULL ? (size_t)(sa - ra) : 0;
  size_t lb = sb != NULL ? (size_t)(sb - rb) : 0;
  return a->root == b->root && la == lb && memcmp(ra, rb, la) == 0;
}

int pc__sched_flush(pc__sched_t *s) {
  pc__job_t *head = s->batch.head;

  if (head == NULL)
    return 0;
  s->batch.head = s->batch.tail = NULL;
  s->batch.n = 0;
  if (pc__sched_push(s, head) != 0) {
    pc__job_free(head);
    return -ENOMEM;
  }
  return 0;
}

int pc__sched_add(pc__sched_t *s, pc__job_t *j) {
  int err = 0;

  if (j->size > PC__BATCH_FILE) {
    if (pc__sched_push(s, j) != 0) {
      pc__job_free(j);
      return -ENOMEM;
    }
    return 0;
  }
  if (s->batch.head != NULL && !same_dir(s->batch.head, j))
    err = pc__sched_flush(s);
  if (s->batch.head == NULL) {
    s->batch.head = j;
  } else {
    s->batch.tail->unit.next = j;
    s->batch.head->unit.weight += j->size;
    if (s->batch.head->unit.mem < j->unit.mem)
      s->batch.head->unit.mem = j->unit.mem;
  }
  s->batch.tail = j;
  if (++s->batch.n >= PC__BATCH_FILES ||
      s->batch.head->unit.weight >= PC__BATCH_BYTES) {
    int e = pc__sched_flush(s);
    if (err == 0)
      err = e;
  }
  return err;
}

int pc__sched_idle(const pc__sched_t *s) {
  return s->small.n == 0 && s->in_flight < s->jobs;
}
