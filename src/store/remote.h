/* The remote cache (--cache-url): the entries the local store holds, on a
 * server that speaks the Bazel HTTP cache layout (GET and PUT of
 * URL/ac/<64 hex>: nginx with WebDAV, bazel-remote), through libcurl.
 *
 * One thread of the remote's own runs a libcurl multi handle: at most
 * PC__REMOTE_CONNS transfers at once over as many reused connections,
 * lookups before stores. Workers hand it lookups and wait for the
 * answers (all formats of a file at once, one round trip); stores go into
 * a queue bounded in bytes and are sent in the background, so no worker
 * waits on a store. What the queue cannot take is dropped and counted.
 *
 * Nothing fetched is trusted: an answer is an entry only when its header
 * names the key it was asked for, and the worker side (work/cache.c)
 * decodes every payload and compares it with its source before using it.
 * A server that fails (no connection, a timeout, an answer other than an
 * entry or 404 to a lookup, a transfer cut short) turns the remote off for
 * the rest of the run: its lookups are misses, its stores dropped; one
 * refusing stores (an error answer to a PUT: a full disk, no right to
 * write) turns storing off. Either costs at most the timeouts.
 */
#ifndef PC_REMOTE_H
#define PC_REMOTE_H

#include "common/common.h"
#include "store/store.h"

typedef struct pc__remote pc__remote_t;

/* Transfers at once, and connections kept open for the run. */
#define PC__REMOTE_CONNS 8
/* The default of pc__remote_cfg_t.timeout_s. */
#define PC__REMOTE_TIMEOUT 5
/* The size of the header before an entry's payload. */
#define PC__REMOTE_HEAD 48

typedef struct pc__remote_cfg {
  const char *url;      /* http:// or https://, without query or userinfo */
  const char *token;    /* a bearer token, or NULL */
  const char *userpass; /* "user:password" for basic, or NULL */
  int read_only;        /* look up only: no store is sent */
  /* Seconds to connect, and without a byte moving; a whole transfer may
   * take ten times as long, and stores still queued at the end are sent
   * for up to twice as long before they are dropped.
   */
  unsigned timeout_s;
  uint64_t budget; /* bytes of stores queued at once */
} pc__remote_cfg_t;

/* What the remote did in a run (pc__remote_stats). */
typedef struct pc__remote_stats {
  uint64_t lookups;  /* keys asked for (made or not) */
  uint64_t hits;     /* answered with an entry of the key */
  uint64_t stored;   /* stores the server took */
  uint64_t rejected; /* answers that were not their key's entry, or whose
                        payload does not decode to its source */
  uint64_t lost;     /* lookups not made or failed, stores dropped or
                        failed: what the server's failure cost */
  int failed;        /* the remote, or its storing, turned off */
  char why[160];     /* the first failure, for one line: "HTTP 500
                        answering a lookup", curl's message */
} pc__remote_stats_t;

/* "libcurl 7.88.1 with OpenSSL/3.0.15", or NULL without libcurl (a build
 * without it, or one whose libcurl cannot be loaded).
 */
const char *pc__remote_version(void);

/* Starts the remote's thread. No request is made before the first lookup
 * or store. 0, -EINVAL (a URL it does not take), PC_ENOCURL, -ENOMEM.
 */
int pc__remote_open(pc__remote_t **out, const pc__remote_cfg_t *cfg);

/* Sends what is still queued, for at most twice the timeout, drops the
 * rest (counted as lost), and stops the thread. Then only
 * pc__remote_stats() and pc__remote_free(). NULL: nothing.
 */
void pc__remote_finish(pc__remote_t *r);

void pc__remote_stats(const pc__remote_t *r, pc__remote_stats_t *st);

void pc__remote_free(pc__remote_t *r);

/* One lookup: the key and the largest payload to take (in); the answer
 * (out). */
typedef struct pc__remote_get {
  pc__store_key_t key;
  uint64_t max;
  int found;    /* an entry of this key (payload or rejection) */
  int bad;      /* an answer that is no entry of this key (another key's, or
                   longer than `max`): rejected */
  int rejected; /* a rejection: the output exceeded `limit` */
  uint64_t limit;
  const unsigned char *data; /* the payload (len bytes) when found and
                                not rejected: inside `body_` */
  size_t len;
  unsigned char *body_; /* the answer, owned: pc__remote_get_free() */
  size_t body_len_;
} pc__remote_get_t;

/* Looks the n keys up at once and waits for every answer (a worker
 * thread). Never fails: anything but an entry of the key is not found.
 */
void pc__remote_get(pc__remote_t *r, pc__remote_get_t *g, size_t n);

/* Frees an answer's body. */
void pc__remote_get_free(pc__remote_get_t *g);

/* What the worker side made of the answers it took: `lookups` of its
 * formats answered (entries or not), `hits` taken (their payloads decoded
 * to their sources), `rejected` that were no entry of their key or did
 * not decode to their source. Counted here, where they are used: answers
 * a unit asked for and no job took (a file copied from an identical one)
 * count nowhere.
 */
void pc__remote_count(pc__remote_t *r, unsigned lookups, unsigned hits,
                      unsigned rejected);

/* Queues a store of the result for k, as pc__store_put() takes it (a kept
 * output from mem, or read from fd, of len bytes; or a rejection above
 * limit). Best effort: 1 when queued, 0 when not (read-only, off, over
 * the queue's budget: counted as lost).
 */
int pc__remote_put(pc__remote_t *r, const pc__store_key_t *k, int kept,
                   const unsigned char *mem, int fd, uint64_t len,
                   uint64_t limit);

#endif /* PC_REMOTE_H */
