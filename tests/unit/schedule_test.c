/* The scheduler (src/run/schedule.c) alone: which unit starts, and when, for a
 * given memory limit. Units are bare jobs with a weight and a memory
 * estimate; "running" one is holding it until the test says it is done.
 */
#include "run/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"

#define MIB ((uint64_t)1 << 20)

static pc__job_t *unit(uint64_t weight, uint64_t mem) {
  pc__job_t *j = calloc(1, sizeof(*j));
  if (j == NULL)
    abort();
  j->unit.weight = weight;
  j->unit.mem = mem;
  return j;
}

/* What is in flight, in the order it started. */
static pc__job_t *run[1024];
static unsigned nrun;

static unsigned big_running(void) {
  unsigned k, n = 0;
  for (k = 0; k < nrun; k++)
    n += run[k]->unit.mem > PC__SCHED_SMALL;
  return n;
}

/* Starts what may start; checks that a slot stays empty only when the
 * largest pending unit must wait for memory.
 */
static void fill(pc__sched_t *s) {
  pc__job_t *j;
  while ((j = pc__sched_next(s)) != NULL)
    run[nrun++] = j;
  EXPECT(nrun == s->in_flight);
  if (s->in_flight < s->jobs && pc__sched_pending(s) > 0) {
    const pc__job_t *b = s->big.n ? s->big.v[0] : NULL;
    const pc__job_t *m = s->small.n ? s->small.v[0] : NULL;
    const pc__job_t *top =
        b != NULL && (m == NULL || b->unit.weight >= m->unit.weight) ? b : m;
    EXPECT(s->used + top->unit.mem > s->limit);
  }
  /* Over the limit only with one unit in flight (a unit over it alone). */
  EXPECT(s->in_flight <= 1 || s->used <= s->limit);
}

/* Ends the k-th unit in flight. */
static void finish(pc__sched_t *s, unsigned k) {
  pc__job_t *j = run[k];
  memmove(&run[k], &run[k + 1], (nrun - k - 1) * sizeof(run[0]));
  nrun--;
  pc__sched_done(s, j);
  pc__job_free(j);
}

/* Four big files (two 64 MiB, two 32 MiB, estimated at 76 and 72 MiB)
 * and small units; the oldest in flight finishes first. Returns the most
 * big units that were in flight at once.
 */
static unsigned large_tree(uint64_t limit, unsigned jobs, uint64_t *order,
                           uint64_t *peak) {
  pc__sched_t s;
  unsigned most = 0, k, n = 0;

  pc__sched_init(&s, jobs, limit);
  EXPECT(pc__sched_push(&s, unit(64 * MIB, 76 * MIB)) == 0);
  EXPECT(pc__sched_push(&s, unit(32 * MIB, 72 * MIB)) == 0);
  EXPECT(pc__sched_push(&s, unit(64 * MIB + 1, 76 * MIB)) == 0);
  EXPECT(pc__sched_push(&s, unit(32 * MIB + 1, 72 * MIB)) == 0);
  for (k = 0; k < 40; k++)
    EXPECT(pc__sched_push(&s, unit(200 << 10, 4 * MIB)) == 0);
  fill(&s);
  while (nrun > 0) {
    unsigned b = big_running();
    if (b > most)
      most = b;
    for (k = 0; k < nrun; k++)
      if (run[k]->unit.mem > PC__SCHED_SMALL && order != NULL) {
        /* Record each big unit once, when first seen in flight. */
        unsigned i, seen = 0;
        for (i = 0; i < n; i++)
          seen |= order[i] == run[k]->unit.weight;
        if (!seen)
          order[n++] = run[k]->unit.weight;
      }
    finish(&s, 0);
    fill(&s);
  }
  EXPECT(pc__sched_pending(&s) == 0 && s.in_flight == 0 && s.used == 0 &&
         s.used_fill == 0);
  if (peak != NULL)
    *peak = s.peak;
  pc__sched_drop(&s, 1);
  return most;
}

static void limits(void) {
  uint64_t order[8] = {0}, peak = 0;

  cur = "room for two big encoders";
  EXPECT(large_tree(256 * MIB, 2, order, &peak) == 2);
  EXPECT(peak >= 76 * MIB + 72 * MIB && peak <= 256 * MIB);
  /* Largest first. */
  EXPECT(order[0] == 64 * MIB + 1 && order[1] == 64 * MIB &&
         order[2] == 32 * MIB + 1 && order[3] == 32 * MIB);

  cur = "room for one big encoder";
  memset(order, 0, sizeof(order));
  EXPECT(large_tree(140 * MIB, 2, order, &peak) == 1);
  EXPECT(peak <= 140 * MIB);
  EXPECT(order[0] == 64 * MIB + 1 && order[1] == 64 * MIB);

  cur = "room for one big encoder, 16 jobs";
  EXPECT(large_tree(140 * MIB, 16, NULL, &peak) == 1);

  cur = "room for the two smaller big encoders only";
  EXPECT(large_tree(150 * MIB, 2, NULL, &peak) == 2);
  EXPECT(peak >= 144 * MIB && peak <= 150 * MIB);

  cur = "no limit";
  EXPECT(large_tree(PC_MEMORY_UNLIMITED, 2, NULL, NULL) == 2);
  EXPECT(large_tree(PC_MEMORY_UNLIMITED, 4, NULL, NULL) == 4);

  cur = "each big encoder over the limit by itself";
  EXPECT(large_tree(64 * MIB, 2, NULL, &peak) == 1);
}

/* A big unit over the limit runs with nothing beside it, and is counted. */
static void alone(void) {
  pc__sched_t s;
  pc__job_t *j;

  cur = "alone";
  pc__sched_init(&s, 2, 64 * MIB);
  EXPECT(pc__sched_push(&s, unit(1 << 20, 2 * MIB)) == 0);
  fill(&s);
  EXPECT(nrun == 1);
  /* The walk finds a big file while a small one runs: it waits for the
   * pool to empty, and the small ones behind it wait too.
   */
  EXPECT(pc__sched_push(&s, unit(64 * MIB, 76 * MIB)) == 0);
  EXPECT(pc__sched_push(&s, unit(1 << 10, 1 * MIB)) == 0);
  fill(&s);
  EXPECT(nrun == 1 && run[0]->unit.weight == 1 << 20);
  finish(&s, 0);
  fill(&s);
  EXPECT(nrun == 1 && run[0]->unit.weight == 64 * MIB && run[0]->unit.alone);
  EXPECT(s.alone == 1);
  finish(&s, 0);
  fill(&s);
  EXPECT(nrun == 1 && !run[0]->unit.alone);
  finish(&s, 0);
  EXPECT((j = pc__sched_next(&s)) == NULL);
  pc__sched_drop(&s, 1);
}

/* While the largest waits, fillers may take only what leaves it room once
 * the units ahead of it are done.
 */
static void reserve(void) {
  pc__sched_t s;
  unsigned k;

  cur = "reserve";
  pc__sched_init(&s, 8, 100 * MIB);
  EXPECT(pc__sched_push(&s, unit(64 * MIB, 76 * MIB)) == 0);
  fill(&s);
  EXPECT(nrun == 1);
  EXPECT(pc__sched_push(&s, unit(60 * MIB, 76 * MIB)) == 0);
  for (k = 0; k < 10; k++)
    EXPECT(pc__sched_push(&s, unit(100 << 10, 10 * MIB)) == 0);
  fill(&s);
  /* 24 MiB left beside the first; the second needs 76, so fillers may
   * take 24 together: two of 10 MiB.
   */
  EXPECT(nrun == 3 && s.used_fill == 20 * MIB);
  finish(&s, 0); /* the first big one */
  fill(&s);
  EXPECT(big_running() == 1 && run[nrun - 1]->unit.weight == 60 * MIB);
  while (nrun > 0) {
    finish(&s, 0);
    fill(&s);
  }
  EXPECT(pc__sched_pending(&s) == 0 && s.used == 0 && s.used_fill == 0);
  pc__sched_drop(&s, 1);
}

/* Random trees, limits, jobs and completion orders: fill() checks the
 * invariants at every step; every unit must finish.
 */
static void random_runs(void) {
  uint64_t x = 0x9e3779b97f4a7c15u;
  int round;

  cur = "random";
  for (round = 0; round < 2000; round++) {
    pc__sched_t s;
    unsigned k, n, steps = 0;
    uint64_t limit;
#define RND() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
    n = 1 + (unsigned)(RND() % 60);
    limit = (RND() % 4 == 0) ? PC_MEMORY_UNLIMITED : (1 + RND() % 300) * MIB;
    pc__sched_init(&s, 1 + (unsigned)(RND() % 8), limit);
    for (k = 0; k < n; k++) {
      uint64_t mem =
          (RND() % 3 == 0) ? (15 + RND() % 70) * MIB : (1 + RND() % 13) * MIB;
      EXPECT(pc__sched_push(&s, unit(1 + RND() % (64 * MIB), mem)) == 0);
      if (RND() % 4 == 0) {
        fill(&s);
        if (nrun > 0 && RND() % 2)
          finish(&s, (unsigned)(RND() % nrun));
      }
    }
    fill(&s);
    while (nrun > 0 && steps++ < 10000) {
      finish(&s, (unsigned)(RND() % nrun));
      fill(&s);
    }
    EXPECT(nrun == 0 && pc__sched_pending(&s) == 0 && s.used == 0 &&
           s.used_fill == 0);
    while (nrun > 0)
      finish(&s, 0);
    pc__sched_drop(&s, 1);
  }
}

/* A file of `size` bytes at `rel` below root 0, as the walk hands it on. */
static pc__job_t *file(const char *rel, uint64_t size) {
  pc__job_t *j = unit(size, MIB);
  size_t n = strlen(rel);
  if ((j->fullpath = malloc(n + 6)) == NULL)
    abort();
  memcpy(j->fullpath, "root/", 5);
  memcpy(j->fullpath + 5, rel, n + 1);
  j->rel_off = 5;
  j->size = size;
  return j;
}

/* Units: small files of one directory travel together, up to
 * PC__BATCH_FILES of them or PC__BATCH_BYTES; a file of another directory
 * closes the unit; a file above PC__BATCH_FILE is a unit alone; the unit
 * weighs its files' bytes and takes the largest of their memory.
 */
static void batching(void) {
  pc__sched_t s;
  pc__job_t *j, *k;
  unsigned n, i;

  cur = "batching";
  pc__sched_init(&s, 4, PC_MEMORY_UNLIMITED);
  EXPECT(pc__sched_add(&s, file("a/1.css", 100)) == 0);
  j = file("a/2.css", 200);
  j->unit.mem = 2 * MIB;
  EXPECT(pc__sched_add(&s, j) == 0);
  EXPECT(pc__sched_pending(&s) == 0); /* still gathering */
  EXPECT(pc__sched_add(&s, file("b/1.css", 50)) == 0);
  EXPECT(pc__sched_pending(&s) == 1); /* a/ closed by b/ */
  EXPECT(pc__sched_add(&s, file("big.js", PC__BATCH_FILE + 1)) == 0);
  EXPECT(pc__sched_pending(&s) == 2); /* alone, b/ still gathering */
  EXPECT(pc__sched_flush(&s) == 0);
  EXPECT(pc__sched_pending(&s) == 3);
  j = pc__sched_next(&s); /* largest first */
  EXPECT(j != NULL && j->unit.next == NULL && j->size == PC__BATCH_FILE + 1);
  k = pc__sched_next(&s);
  EXPECT(k != NULL && k->unit.weight == 300 && k->unit.mem == 2 * MIB &&
         k->unit.next != NULL && k->unit.next->size == 200 &&
         k->unit.next->unit.next == NULL);
  pc__sched_done(&s, j);
  pc__sched_done(&s, k);
  pc__job_free(j);
  pc__job_free(k);
  j = pc__sched_next(&s);
  EXPECT(j != NULL && j->unit.weight == 50 && j->unit.next == NULL);
  pc__sched_done(&s, j);
  pc__job_free(j);

  /* Full by count: PC__BATCH_FILES files of one directory, then a new unit. */
  for (i = 0; i < PC__BATCH_FILES + 1; i++)
    EXPECT(pc__sched_add(&s, file("c/x", 1)) == 0);
  EXPECT(pc__sched_pending(&s) == 1);
  j = pc__sched_next(&s);
  for (n = 0, k = j; k != NULL; k = k->unit.next)
    n++;
  EXPECT(n == PC__BATCH_FILES && j->unit.weight == PC__BATCH_FILES);
  pc__sched_done(&s, j);
  pc__job_free(j);
  /* Full by bytes: the file that reaches PC__BATCH_BYTES closes it. */
  pc__sched_drop(&s, 0); /* the one gathered above */
  for (i = 0; i < 4; i++)
    EXPECT(pc__sched_add(&s, file("d/x", PC__BATCH_BYTES / 4)) == 0);
  EXPECT(pc__sched_pending(&s) == 1);
  /* A worker would idle with nothing small waiting: hand on the unit. */
  EXPECT(!pc__sched_idle(&s));
  j = pc__sched_next(&s);
  EXPECT(j != NULL && j->unit.weight == PC__BATCH_BYTES);
  EXPECT(pc__sched_idle(&s));
  pc__sched_done(&s, j);
  pc__job_free(j);
  pc__sched_drop(&s, 1);
}

int main(void) {
  batching();
  limits();
  alone();
  reserve();
  random_runs();
  printf("schedule_test: %d checks, %d failed\n", checks, failures);
  return failures != 0;
}
