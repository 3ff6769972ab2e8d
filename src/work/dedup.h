/* Files with equal content are compressed once.
 *
 * Every job hashes its file (XXH3-128) before compressing and claims the
 * (size, hash) in this table. The first claimant leads: it compresses and
 * publishes what it kept, with a copy of each output's bytes, once its
 * compressing read has given the same hash again (worker.c): what it
 * publishes was made from bytes of that size and hash. A later one whose
 * content was claimed either waits for the leader (back on the loop, not
 * blocking a worker) or, once the leader is done, writes the leader's
 * outputs from that copy instead of compressing. Never from the leader's
 * output files (whoever can write the leader's directory could swap them,
 * and their bytes would land beside another user's file), and never
 * judged by the leader's file as it is now (its owner may have fed the
 * encoders other bytes and put the file back since).
 *
 * This is the one lock in the library: workers claim concurrently, and a
 * round trip through the loop thread for every file would cost more than
 * the few nanoseconds the lock is held. Entries are only added, never
 * removed, until the run ends.
 */
#ifndef PC_DEDUP_H
#define PC_DEDUP_H

#include "common/common.h"
#include "work/job.h"

#include <uv.h>

typedef struct pc__dedup pc__dedup_t;

typedef struct pc__content {
  uint64_t size;
  uint64_t h[2];
  /* Written by the leader's worker under the table lock, before its job
   * returns to the loop; read under the lock.
   */
  int done;
  int ok; /* done, and the outputs below are on disk (or, dry run,
             would be) */
  pc_output_t out[PC_NFORMATS];
  /* The bytes of each kept output (out[f].size of them), owned; NULL when
   * not kept: the output was too big to hold (it spilled to its file) or
   * the table's budget was spent. A follower then compresses alone.
   */
  unsigned char *bytes[PC_NFORMATS];
  /* The loop thread's alone: the followers parked until the leader is
   * done (pc__dedup_park), the last parked first.
   */
  struct pc__dedup_ref *parked;
} pc__content_t;

typedef enum pc__claim {
  PC__CLAIM_LEAD, /* new content: compress it and publish */
  PC__CLAIM_WAIT, /* the leader is still at work */
  PC__CLAIM_COPY  /* the leader is done: copy its outputs if ok */
} pc__claim_t;

int pc__dedup_new(pc__dedup_t **out);
void pc__dedup_free(pc__dedup_t *d);

/* Claims content (size, h). *c receives the entry. */
int pc__dedup_claim(pc__dedup_t *d, uint64_t size, const uint64_t h[2],
                    pc__content_t **c, pc__claim_t *how);

/* Outputs' bytes the table holds at most, all contents together: 128 MiB,
 * or a quarter of the run's memory limit when that is less.
 */
#define PC__DEDUP_KEEP_MAX ((uint64_t)128 << 20)

/* Sets that budget from the run's memory limit (before any claim). */
void pc__dedup_budget(pc__dedup_t *d, uint64_t mem_limit);

/* Takes n bytes of the budget for an output a leader will publish: 1 when
 * there was room, else 0 (the output is then not kept).
 */
int pc__dedup_reserve(pc__dedup_t *d, uint64_t n);
/* Gives back a reservation that was not used. */
void pc__dedup_unreserve(pc__dedup_t *d, uint64_t n);

/* The leader's result. ok = 0 when it failed: followers compress alone.
 * bytes[f] (may be NULL; malloc'd, out[f].size bytes, reserved) holds
 * format f's kept output; the table takes it (and frees it when !ok).
 */
void pc__dedup_publish(pc__dedup_t *d, pc__content_t *c, int ok,
                       const pc_output_t *out, unsigned char **bytes);

/* Reads c->done and, when done, c->ok and c->out under the lock. The
 * bytes (c->bytes) never change once published: read them without it.
 */
int pc__dedup_result(pc__dedup_t *d, pc__content_t *c, int *ok,
                     pc_output_t *out);

/* Loop thread, for a job back from its worker with ref->wait: parks it on
 * its content until the leader is back. 0 when parked; 1 when the leader
 * is done already (it finished since the worker looked: nothing parked,
 * the caller runs the job again now).
 */
int pc__dedup_park(pc__dedup_t *d, pc__dedup_ref_t *ref);

/* Loop thread, for a job back from its worker: when it led, the followers
 * parked on its content (the last parked first, linked by next_parked),
 * handed back to be run again; else NULL.
 */
pc__dedup_ref_t *pc__dedup_wake(pc__dedup_ref_t *ref);

/* --- The worker side (a job: work.h) --- */

struct pc__work;
struct pc__fmt;

/* The job's dedupe phase, its source open (w->fd): hashes the file into
 * w->h (w->whole: the whole file when it fits PC__CHUNK, owned by w; else
 * the descriptor is left at its start) and claims the content; a
 * follower whose leader is done writes the leader's outputs
 * (res.copied) when the leader kept a copy of each. A phase (worker.c):
 * 0 to go on (compressing unless res.copied), the job's error, or
 * PC__EDONE with dd.wait set (park it until the leader is done). A
 * follower back from waiting takes the hash from its claim.
 */
int pc__dedup_step(struct pc__work *w);

/* A leader's copy of its kept output (n bytes) for followers to write
 * from: best effort, within the table's budget.
 */
void pc__dedup_keep(struct pc__work *w, struct pc__fmt *s, uint64_t n);

/* A leader's result, published whether it failed or not (followers wait
 * on it), with the copies kept; nothing for a job that does not lead.
 */
void pc__dedup_lead_done(struct pc__work *w);

#endif /* PC_DEDUP_H */
