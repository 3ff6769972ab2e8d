/* libFuzzer target: cli_args_parse() (src/cli/args.c).
 *
 * Input: the arguments after argv[0], separated by NUL bytes (at most 64;
 * a trailing NUL does not add an empty argument). Besides "no crash, no UB,
 * no leak", it checks what args.h promises:
 *  - a status other than CLI_OK leaves a non-empty message in err, with no
 *    control bytes (one line, whatever the arguments held);
 *  - CLI_OK with action RUN has at least one PATH, a format, and options
 *    that pc_options_check() accepts; every PATH is one of the arguments;
 *  - cli_args_free() is safe to call twice.
 */
#include "cli/args.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

static void check(int cond) {
  if (!cond)
    abort();
}

static int is_arg(char *const *argv, int argc, const char *p) {
  int i;
  for (i = 1; i < argc; i++)
    if (p == argv[i])
      return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf, *argv[MAX_ARGS + 2];
  int argc = 0;
  size_t i, start;
  cli_args_t args;
  cli_status_t st;

  /* One copy, NUL-terminated, cut at the NULs: each argument its own
   * string, as the kernel lays out argv.
   */
  buf = malloc(size + 1);
  if (buf == NULL)
    abort();
  if (size > 0)
    memcpy(buf, data, size);
  buf[size] = '\0';

  argv[argc++] = (char *)"precompress";
  for (start = 0; start < size && argc < MAX_ARGS + 1;) {
    argv[argc++] = buf + start;
    start += strlen(buf + start) + 1;
  }
  argv[argc] = NULL;

  st = cli_args_parse(&args, argc, argv);
  check(st == CLI_OK || st == CLI_EUSAGE || st == CLI_ENOZSTD ||
        st == CLI_ENOMEM);
  check(memchr(args.err, '\0', sizeof(args.err)) != NULL);
  if (st != CLI_OK) {
    check(args.err[0] != '\0');
    for (i = 0; args.err[i] != '\0'; i++)
      check((unsigned char)args.err[i] >= 0x20 && args.err[i] != 0x7f);
  } else if (args.action == CLI_ACTION_RUN) {
    const char *what = NULL;
    check(args.opts.npaths >= 1 && args.opts.paths != NULL);
    check(args.opts.formats != 0);
    for (i = 0; i < args.opts.npaths; i++)
      check(is_arg(argv, argc, args.opts.paths[i]));
    for (i = 0; i < args.opts.nskip_ext; i++)
      check(args.opts.skip_ext[i] != NULL && args.opts.skip_ext[i][0] != '\0');
    if (args.opts.skip_ext != NULL &&
        args.opts.skip_ext == (const char *const *)args.skip_ext)
      check(args.opts.skip_ext[args.opts.nskip_ext] == NULL);
    check(pc_options_check(&args.opts, &what) == 0);
  }
  cli_args_free(&args);
  cli_args_free(&args);
  free(buf);
  return 0;
}
