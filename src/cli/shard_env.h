/* --shard auto: which shard this run is, from the environment of the CI
 * engine that started it. The library still takes K/N (pc_options_t's
 * shard_index and shard_count); this only finds them.
 *
 * The engines and their variables (each engine's own documentation):
 *
 *   GitLab `parallel: N`       CI_NODE_INDEX 1..N, CI_NODE_TOTAL N (1 in a
 *                              job without parallel:, with no index)
 *   CircleCI `parallelism: N`  CIRCLE_NODE_INDEX 0..N-1, CIRCLE_NODE_TOTAL
 *   Buildkite `parallelism: N` BUILDKITE_PARALLEL_JOB 0..N-1,
 *                              BUILDKITE_PARALLEL_JOB_COUNT
 *   Kubernetes Indexed Job     JOB_COMPLETION_INDEX 0..N-1; N (the Job's
 *                              completions) is not in the pod's environment:
 *                              --shard auto/N gives it
 *
 * GitHub Actions sets nothing of the kind for a matrix job: there, pass
 * --shard ${{ matrix.shard }}/N. Nothing here prints or exits.
 */
#ifndef PC_CLI_SHARD_ENV_H
#define PC_CLI_SHARD_ENV_H

#include <stddef.h>
#include <stdint.h>

/* Reads one variable: NULL when it is not set. getenv() in the program. */
typedef const char *(*cli_env_get_fn)(const char *name);

/* The shard this run takes. count is N from --shard auto/N, 0 when not
 * given; with it, an engine's own count must agree. On success *k and *n
 * hold K/N (1 <= K <= N <= 65536) and from the variables read, as
 * "CI_NODE_INDEX=2 CI_NODE_TOTAL=4" (ASCII: names and digits only).
 * Returns 0, or -1 with a one-line message in err naming the variables
 * looked at: none set, an index with no count, two engines at once, a value
 * that is not a number in range, counts that disagree.
 */
int cli_shard_from_env(cli_env_get_fn get, uint32_t count, uint32_t *k,
                       uint32_t *n, char *from, size_t from_size, char *err,
                       size_t err_size);

#endif /* PC_CLI_SHARD_ENV_H */
