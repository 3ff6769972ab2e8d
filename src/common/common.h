/* Internal declarations shared by the library's files. First include of every
 * library file. Names here are pc__ (not exported: -fvisibility=hidden).
 */
#ifndef PC_COMMON_H
#define PC_COMMON_H

#include "pc_config.h"
#include "precompress.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define PC__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A macro's value as a string literal: PC__STR(PC_JOBS_MAX) is "1024". */
#define PC__STR(x) PC__STR_(x)
#define PC__STR_(x) #x

#define PC__CONTAINER_OF(ptr, type, field)                                     \
  ((type *)((char *)(ptr)-offsetof(type, field)))

/* The library's one convention for results: a function that can fail
 * returns 0 or a negative code (an errno value negated, PC__ERRNO(), or
 * one of precompress.h's PC_E*); one that answers a question (is_, same_,
 * a count) returns its answer and cannot fail; an answer from a function
 * that can fail comes through an out-parameter. No positive status: a
 * stop is a code too, and the only code of the library's own that never
 * leaves it is PC__EDONE below.
 */

/* Descriptors have one owner, who closes them, said where they are kept
 * or handed over: a descriptor given to a function is borrowed (neither
 * closed nor kept past the call) unless its prototype says the function
 * takes it; one a function returns or puts through an out-parameter is
 * the caller's. Where ownership can go either way, a flag says which
 * (pc__root_t.fd_shared, work.h's pc__dirfd_t), never a comparison of
 * two descriptors' values.
 */

/* A worker's phase ended its job here without an error (skipped, settled
 * by the incremental check, parked until its dedupe leader is done): the
 * phases after it do not run. Internal: never a job's error, never
 * returned by a public function; below PC_ERR_MIN_, so no public code is
 * ever this one.
 */
#define PC__EDONE (PC_ERR_MIN_ - 1)

/* Negated errno of the last failed call. Never 0: a call that failed without
 * setting errno still reports a failure.
 */
#define PC__ERRNO() (errno > 0 ? -errno : -EIO)

/* "s" unless n is 1: "%zu file%s", n, PC__PLURAL(n). */
#define PC__PLURAL(n) ((n) == 1 ? "" : "s")

/* A file time in nanoseconds, as the manifest records it. */
static inline int64_t pc__ns(struct timespec t) {
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* 1 when a file's mtime `now` is the `recorded` one, at the precision
 * `now` has: a copy that keeps times to the microsecond (cp -p onto such
 * a file system, Python's copy2 on some) or to the second (cpio -m, tar's
 * ustar) cuts the nanoseconds it cannot keep, and the file is the same.
 * Whole microseconds and whole seconds are told apart only by their zero
 * digits, so a file whose nanoseconds happen to end in zeros is compared
 * at that precision too (one in a thousand, or a million): a file changed
 * within that microsecond (or second), to the same size, would pass.
 */
static inline int pc__mtime_same(int64_t recorded, int64_t now) {
  if (now == recorded)
    return 1;
  if (now % 1000000000 == 0)
    return recorded - recorded % 1000000000 == now;
  return now % 1000 == 0 && recorded - recorded % 1000 == now;
}

/* 128-bit products for the keep rule. __extension__: ISO C has no such
 * type, and -Wpedantic (warning_level=3) says so; gcc and clang have it on
 * every 64-bit target.
 */
__extension__ typedef unsigned __int128 pc__u128;

/* Keep rule: out * den <= in * num, in 128-bit so no product overflows. */
static inline int pc__keep(uint64_t in, uint64_t out, uint64_t num,
                           uint64_t den) {
  return in > 0 && (pc__u128)out * den <= (pc__u128)in * num;
}

/* The largest output that still passes the keep rule for an input of `in`
 * bytes (so a codec can stop early once its output grows past it).
 */
static inline uint64_t pc__keep_limit(uint64_t in, uint64_t num, uint64_t den) {
  pc__u128 lim = (pc__u128)in * num / den;
  return lim > UINT64_MAX ? UINT64_MAX : (uint64_t)lim;
}

/* A file's identity: a directory entered, the manifest, the cache. */
typedef struct pc__devino {
  dev_t dev;
  ino_t ino;
} pc__devino_t;

/* Growable byte buffer. A zeroed struct is an empty buffer. */
typedef struct pc__buf {
  unsigned char *data;
  size_t len;
  size_t cap;
} pc__buf_t;

/* Growable arrays: room for element n of the array *arrp points to (a
 * pointer to elements of `size` bytes, NULL when empty) holding *cap
 * elements. Nothing when n < *cap; else the array is reallocated to twice
 * *cap elements, or `first` when it is empty, and *cap updated. 0, or
 * -ENOMEM with the array and *cap as they were. PC__GROW() is the call
 * every array of the library makes.
 */
int pc__grow(void *arrp, size_t n, size_t *cap, size_t size, size_t first);
#define PC__GROW(arr, n, cap, first)                                           \
  pc__grow(&(arr), (n), &(cap), sizeof(*(arr)), (first))

/* Makes room for `more` bytes past len. 0 or -ENOMEM. */
int pc__buf_reserve(pc__buf_t *b, size_t more);
int pc__buf_append(pc__buf_t *b, const void *p, size_t n);
int pc__buf_puts(pc__buf_t *b, const char *s);
int pc__buf_printf(pc__buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pc__buf_free(pc__buf_t *b);

/* Reads exactly n bytes into buf: at `off` (pread) or, with off -1, from
 * the file's position (read). 0, a negative errno, or PC_ECHANGED when the
 * file ends first (io.c).
 */
int pc__read_full(int fd, void *buf, size_t n, off_t off);

/* malloc'd copy of s, or NULL. */
char *pc__strdup(const char *s);
/* malloc'd "a/b" (or b when a is empty), or NULL. */
char *pc__path_join(const char *a, const char *b);

#endif /* PC_COMMON_H */
