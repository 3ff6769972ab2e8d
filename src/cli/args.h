/* Command-line parsing for the precompress program.
 *
 * cli_args_parse() turns argv into a pc_options_t plus the settings only the
 * program has (verbosity, progress, JSON). It never prints and never exits:
 * it returns a status and leaves a one-line phrase in args->err, so main()
 * decides what to print and a fuzzer can drive it with any argv.
 */
#ifndef PC_CLI_ARGS_H
#define PC_CLI_ARGS_H

#include "precompress.h"
#include "values.h"

typedef enum cli_status {
  CLI_OK = 0,
  CLI_EUSAGE,  /* bad usage: err holds the problem, exit 2 with a hint */
  CLI_ENOZSTD, /* zstd asked for but not built in: err holds the message */
  CLI_ENOMEM   /* out of memory */
} cli_status_t;

typedef enum cli_action {
  CLI_ACTION_RUN = 0,
  CLI_ACTION_HELP,       /* --help: every option */
  CLI_ACTION_HELP_SHORT, /* -h: the common ones */
  CLI_ACTION_VERSION
} cli_action_t;

typedef enum cli_progress {
  CLI_PROGRESS_AUTO = 0,
  CLI_PROGRESS_ALWAYS,
  CLI_PROGRESS_NEVER
} cli_progress_t;

#define CLI_ERR_SIZE 512

typedef struct cli_args {
  /* What to hand to pc_run(). Its lists point into the storage below or
   * into argv, so argv must outlive this struct.
   */
  pc_options_t opts;

  cli_action_t action;
  int quiet;
  int verbose;
  int json;
  int json_lines; /* --json-lines: one JSON object per file, then the
                     summary; not with -v or --json */
  int check;      /* --check; opts.dry_run is set too */
  cli_progress_t progress;
  /* --shard auto or auto/N: opts.shard_index and shard_count are left 0
   * for main() to fill in from the environment (shard_env.h);
   * shard_auto_count is N, 0 when not given.
   */
  int shard_auto;
  uint32_t shard_auto_count;
  /* Where the shard came from, for -v and --json: the variables read
   * ("CI_NODE_INDEX=2 CI_NODE_TOTAL=4"); empty for --shard K/N.
   */
  char shard_from[128];

  /* Storage owned by this struct, released by cli_args_free(). */
  const char **paths;
  const char **include;
  const char **exclude;
  const char **dicts;          /* --dictionary-from, then (dict_names) */
  const char **dict_names;     /* --dictionary-name: in dicts' allocation */
  const char **dict_manifests; /* --django-manifest, by dicts' index:
                                  in dicts' allocation */
  const char **skip_ext;
  char *skip_buf;
  /* --files-from FILE, read by main() into `only` (names in only_buf),
   * which opts.only then points at. */
  const char *files_from;
  const char **only;
  char *only_buf;
  /* --cache-auth-file FILE, read by main(); the credential it or the
   * environment gave (owned, wiped when freed), which opts.cache_token or
   * opts.cache_userpass points at.
   */
  const char *cache_auth_file;
  char *cache_secret;

  char err[CLI_ERR_SIZE]; /* the problem, when the status is not CLI_OK */
} cli_args_t;

/* Parses argv[1..argc-1] into args, which needs no initialisation. Options
 * apply in the order given. On CLI_OK with action CLI_ACTION_RUN, at least
 * one PATH and one format are set and pc_options_check() accepts the
 * options. Whatever the status, call cli_args_free() afterwards.
 */
cli_status_t cli_args_parse(cli_args_t *args, int argc, char *const *argv);

/* Releases what cli_args_parse() allocated. Safe to call twice. */
void cli_args_free(cli_args_t *args);

#endif /* PC_CLI_ARGS_H */
