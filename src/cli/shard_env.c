/* --shard auto: K/N from a CI engine's environment (see shard_env.h). */
#include "shard_env.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The most shards --shard K/N takes (args.c). */
#define SHARD_MAX 65536u

typedef struct engine {
  const char *name;  /* for messages */
  const char *index; /* the variable holding this job's index */
  const char *total; /* the one holding the number of jobs; NULL: none, N
                        comes from --shard auto/N */
  uint32_t base;     /* the first index: 0 or 1 */
} engine_t;

static const engine_t engines[] = {
    {"GitLab parallel:", "CI_NODE_INDEX", "CI_NODE_TOTAL", 1},
    {"CircleCI parallelism", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 0},
    {"Buildkite parallelism", "BUILDKITE_PARALLEL_JOB",
     "BUILDKITE_PARALLEL_JOB_COUNT", 0},
    {"Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", NULL, 0},
};

#define NENGINES (sizeof(engines) / sizeof(engines[0]))

#if defined(__GNUC__)
#define SHARD_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SHARD_PRINTF(a, b)
#endif

static int fail(char *err, size_t size, const char *fmt, ...)
    SHARD_PRINTF(3, 4);

static int fail(char *err, size_t size, const char *fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(err, size, fmt, ap);
  va_end(ap);
  return -1;
}

/* A variable's value: NULL when it is unset or empty (an empty value says
 * nothing about a shard).
 */
static const char *value(cli_env_get_fn get, const char *name) {
  const char *v;

  if (name == NULL)
    return NULL;
  v = get(name);
  return v != NULL && v[0] != '\0' ? v : NULL;
}

/* A decimal number 0..SHARD_MAX, digits only (no sign, no space). */
static int number(const char *s, uint32_t *out) {
  uint32_t v = 0;

  if (*s == '\0')
    return -1;
  for (; *s != '\0'; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    v = v * 10 + (uint32_t)(*s - '0');
    if (v > SHARD_MAX)
      return -1;
  }
  *out = v;
  return 0;
}

/* A value for a message: not ours, so control bytes become '?' (the message
 * stays one line) and a long one is cut.
 */
static const char *shown(char *buf, size_t size, const char *s) {
  size_t i;

  for (i = 0; s[i] != '\0' && i + 4 < size; i++) {
    unsigned char c = (unsigned char)s[i];
    buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  if (s[i] != '\0') {
    memcpy(buf + i, "...", 3);
    i += 3;
  }
  buf[i] = '\0';
  return buf;
}

/* N: the engine's count variable, or --shard auto/N for one that has none;
 * both, when both are there, must agree.
 */
static int engine_total(cli_env_get_fn get, const engine_t *e, uint32_t count,
                        uint32_t *total, char *err, size_t err_size) {
  const char *tv = value(get, e->total);
  char a[24];

  if (e->total == NULL) {
    if (count == 0)
      return fail(err, err_size,
                  "--shard auto: %s is set but the number of shards is "
                  "not (%s): give --shard auto/N, N the Job's completions",
                  e->index, e->name);
    *total = count;
    return 0;
  }
  if (tv == NULL)
    return fail(err, err_size, "--shard auto: %s is set but %s is not (%s)",
                e->index, e->total, e->name);
  if (number(tv, total) || *total == 0)
    return fail(err, err_size,
                "--shard auto: %s='%s' is not a number of shards 1..%u (%s)",
                e->total, shown(a, sizeof(a), tv), SHARD_MAX, e->name);
  if (count != 0 && count != *total)
    return fail(err, err_size, "--shard auto/%u disagrees with %s=%u (%s)",
                count, e->total, *total, e->name);
  return 0;
}

/* K/N from engine e, whose index variable is set. */
static int from_engine(cli_env_get_fn get, const engine_t *e, uint32_t count,
                       uint32_t *k, uint32_t *n, char *from, size_t from_size,
                       char *err, size_t err_size) {
  const char *iv = value(get, e->index);
  uint32_t index, total = 0;
  char a[24];

  if (number(iv, &index))
    return fail(err, err_size,
                "--shard auto: %s='%s' is not a shard index (%s: a number "
                "from %u)",
                e->index, shown(a, sizeof(a), iv), e->name, e->base);
  if (engine_total(get, e, count, &total, err, err_size))
    return -1;
  if (index < e->base || index - e->base >= total)
    return fail(err, err_size, "--shard auto: %s=%u is not in %u..%u (%s)",
                e->index, index, e->base, total - 1 + e->base, e->name);
  *k = index - e->base + 1;
  *n = total;
  if (e->total != NULL)
    snprintf(from, from_size, "%s=%u %s=%u", e->index, index, e->total, total);
  else
    snprintf(from, from_size, "%s=%u --shard auto/%u", e->index, index, total);
  return 0;
}

/* No engine's index is set. A count of 1 alone is the whole tree as one
 * shard: GitLab sets CI_NODE_TOTAL=1 in a job without parallel:. Any other
 * count alone, or nothing at all, is an error naming what was looked at.
 */
static int without_index(cli_env_get_fn get, uint32_t count, uint32_t *k,
                         uint32_t *n, char *from, size_t from_size, char *err,
                         size_t err_size) {
  size_t i;
  char a[24];

  for (i = 0; i < NENGINES; i++) {
    const engine_t *e = &engines[i];
    const char *tv = value(get, e->total);
    uint32_t total;

    if (tv == NULL)
      continue;
    if (number(tv, &total) || total != 1)
      return fail(err, err_size,
                  "--shard auto: %s='%s' is set but %s is not (%s)", e->total,
                  shown(a, sizeof(a), tv), e->index, e->name);
    if (count > 1)
      return fail(err, err_size,
                  "--shard auto/%u disagrees with %s=1 (%s; %s is not set)",
                  count, e->total, e->name, e->index);
    *k = *n = 1;
    snprintf(from, from_size, "%s=1", e->total);
    return 0;
  }
  return fail(err, err_size,
              "--shard auto: no shard in the environment: none of "
              "CI_NODE_INDEX/CI_NODE_TOTAL (GitLab parallel:), "
              "CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL (CircleCI), "
              "BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT "
              "(Buildkite), JOB_COMPLETION_INDEX (Kubernetes Indexed Job, "
              "with --shard auto/N) is set; elsewhere (a GitHub Actions "
              "matrix) give --shard K/N");
}

int cli_shard_from_env(cli_env_get_fn get, uint32_t count, uint32_t *k,
                       uint32_t *n, char *from, size_t from_size, char *err,
                       size_t err_size) {
  const engine_t *e = NULL;
  size_t i;

  for (i = 0; i < NENGINES; i++) {
    if (value(get, engines[i].index) == NULL)
      continue;
    if (e != NULL)
      return fail(err, err_size,
                  "--shard auto: %s (%s) and %s (%s) are both set: which "
                  "shard is meant? give --shard K/N",
                  e->index, e->name, engines[i].index, engines[i].name);
    e = &engines[i];
  }
  if (e != NULL)
    return from_engine(get, e, count, k, n, from, from_size, err, err_size);
  return without_index(get, count, k, n, from, from_size, err, err_size);
}
