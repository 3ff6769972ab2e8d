/* What the program tells the user: per-file lines, error lines, the
 * progress line, the summary (human or JSON).
 *
 * Streams: stdout carries the lines a user asked for (-v, the dry-run and
 * --check listings, --json, --json-lines); stderr carries errors, progress
 * and the human summary. While the progress line is on screen, every other
 * line first clears it, so the two never share a terminal row.
 *
 * Every name in human output goes through cli_put_name() (escape.h): a
 * file name is not ours, and must not be able to forge a line or drive the
 * terminal. With --json (but for -v's lines) or --json-lines, stdout
 * holds JSON only.
 */
#ifndef PC_CLI_REPORT_H
#define PC_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "escape.h"
#include "precompress.h"

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

typedef struct cli_report {
  const cli_args_t *args;
  unsigned formats;  /* enabled formats, from args->opts */
  int progress;      /* 1 when the progress line is drawn */
  size_t shown;      /* columns of the progress line on screen, 0 none */
  uint64_t start_ns; /* when the run started, for the rate */
  uint64_t last_draw_ns;
  uint64_t listed;   /* dry-run / --check lines printed */
  pc_memlimit_t mem; /* the memory limit given to pc_run() and why */
} cli_report_t;

/* Settles args->opts.memory_limit (the machine's default unless given) and
 * says which limit was taken and why: in r->mem, and on stderr with -v.
 */
void cli_report_memory(cli_report_t *r, cli_args_t *args);

/* Monotonic clock in nanoseconds. */
uint64_t cli_now_ns(void);

/* Formats n bytes as "123 B", "1.2 KiB", "300.5 KiB", "3.4 GiB" (1024-based,
 * one decimal above bytes). Returns buf.
 */
char *cli_human_bytes(char *buf, size_t size, uint64_t n);

/* Sets up a report for one run, deciding whether a progress line is drawn
 * (--progress always, or auto with stderr on a terminal and no -q).
 */
void cli_report_init(cli_report_t *r, const cli_args_t *args,
                     uint64_t start_ns);

/* Callbacks for pc_options_t; data is the cli_report_t. */
void cli_report_file(void *data, const pc_file_t *file);
void cli_report_progress(void *data, const pc_progress_t *progress);
void cli_report_error(void *data, const char *path, int err);

/* Prints "precompress: MESSAGE" on stderr, clearing the progress line
 * first. r may be NULL before a report exists. MESSAGE must hold no name:
 * names go through cli_report_name_msg() or cli_report_begin().
 */
void cli_report_msg(cli_report_t *r, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Prints "precompress: NAME: MESSAGE" on stderr, NAME escaped
 * (cli_put_name()). r may be NULL.
 */
void cli_report_name_msg(cli_report_t *r, const char *name, const char *fmt,
                         ...) CLI_PRINTF(3, 4);

/* Starts a message line on stderr for a caller that needs more than one
 * name in it: clears the progress line, flushes stdout and writes
 * "precompress: ". The caller writes the rest to stderr, names through
 * cli_put_name(), and ends it with a newline. r may be NULL.
 */
void cli_report_begin(cli_report_t *r);

/* Removes the progress line, if any. */
void cli_report_clear(cli_report_t *r);

/* Prints the end-of-run summary: the JSON object on stdout with --json
 * (with "type":"summary" first with --json-lines), else the human line on
 * stderr unless -q.
 */
void cli_report_summary(cli_report_t *r, const pc_totals_t *totals,
                        double wall_s, double cpu_s, int exit_status);

#endif /* PC_CLI_REPORT_H */
