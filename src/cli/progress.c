/* The progress line (report.h): files and bytes done, the rate and the
 * time left, on one line of stderr redrawn in place.
 */
#include "report.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Redraw the progress line at most this often (10 times a second). */
#define PROGRESS_INTERVAL_NS 100000000u

static size_t terminal_columns(void) {
  struct winsize ws;

  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 80;
}

static void format_eta(char *buf, size_t size, double s) {
  unsigned long t = (unsigned long)(s + 0.5);

  if (t >= 3600)
    snprintf(buf, size, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(buf, size, "%lu:%02lu", t / 60, t % 60);
}

/* Draws "[####......]  45%  123/456 files   1.2 MiB/3.4 MiB   8.1 MiB/s  ETA
 * 0:04", the bar only when the terminal is wide enough. Until the walk is
 * done the totals still grow, so there is no bar, percentage or ETA, only
 * "scanning".
 */
/* The rate (rate[40]) and what the ETA field says (eta[32]). */
static void rate_and_eta(const cli_report_t *r, const pc_progress_t *p,
                         uint64_t now, char *rate, char *eta) {
  double elapsed = (double)(now - r->start_ns) / 1e9;
  double bps = 0, left;

  if (elapsed >= 0.2 && p->bytes_done > 0) {
    bps = (double)p->bytes_done / elapsed;
    cli_human_bytes(rate, 40, (uint64_t)bps);
  } else {
    strcpy(rate, "-- B");
  }
  if (!p->walk_done) {
    strcpy(eta, "scanning");
  } else if (cli_eta(elapsed, p->bytes_done, p->bytes_total, &left)) {
    memcpy(eta, "ETA ", 4);
    format_eta(eta + 4, 32 - 4, left);
  } else {
    strcpy(eta, "ETA --");
  }
}

/* The line once the walk is done: the percentage, and before it the bar
 * when the terminal has room, then `rest` (n columns). snprintf's result.
 */
static int with_bar(char *line, size_t size, const pc_progress_t *p,
                    size_t cols, const char *rest, size_t n) {
  uint64_t pct_done = p->bytes_total > 0 ? p->bytes_done : p->files_done;
  uint64_t pct_total = p->bytes_total > 0 ? p->bytes_total : p->files_total;
  unsigned pct = pct_total > 0 ? (unsigned)(pct_done * 100 / pct_total) : 100;
  size_t width = 0;
  char bar[24];
  size_t fill;

  if (pct > 100)
    pct = 100;
  /* The bar goes first, 10 to 20 columns, when the terminal has room:
   * "[", "] ", "100%" and "  " take 9 columns more, and the last column
   * stays free.
   */
  if (cols > n + 10)
    width = cols - n - 10;
  if (width > 20)
    width = 20;
  if (width < 10)
    return snprintf(line, size, "%3u%%  %s", pct, rest);
  fill = width * pct / 100;
  memset(bar, '#', fill);
  memset(bar + fill, '.', width - fill);
  bar[width] = '\0';
  return snprintf(line, size, "[%s] %3u%%  %s", bar, pct, rest);
}

static void progress_draw(cli_report_t *r, const pc_progress_t *p,
                          uint64_t now) {
  char line[512];
  char rest[256];
  char done[32];
  char total[32];
  char rate[40];
  char total_files[24];
  char eta[32];
  size_t cols = terminal_columns();
  size_t n;
  int len;

  cli_human_bytes(done, sizeof(done), p->bytes_done);
  cli_human_bytes(total, sizeof(total), p->bytes_total);
  rate_and_eta(r, p, now, rate, eta);

  /* Fixed-width fields keep the line from jittering as the numbers
   * change, and its length stable enough that the bar stays or goes
   * for good.
   */
  len = snprintf(total_files, sizeof(total_files), "%" PRIu64, p->files_total);
  len =
      snprintf(rest, sizeof(rest), "%*" PRIu64 "/%s files  %9s/%s  %9s/s  %-8s",
               len, p->files_done, total_files, done, total, rate, eta);
  n = len > 0 ? (size_t)len : 0;

  if (p->walk_done)
    len = with_bar(line, sizeof(line), p, cols, rest, n);
  else
    len = snprintf(line, sizeof(line), "%s", rest);
  n = len > 0 ? (size_t)len : 0;
  if (n >= sizeof(line))
    n = sizeof(line) - 1;
  /* Never reach the last column: a wrapped line cannot be redrawn. */
  if (cols > 1 && n > cols - 1)
    n = cols - 1;

  fprintf(stderr, "\r%.*s", (int)n, line);
  if (r->shown > n)
    fprintf(stderr, "%*s", (int)(r->shown - n), "");
  r->shown = n;
  r->last_draw_ns = now;
}

void cli_report_progress(void *data, const pc_progress_t *progress) {
  cli_report_t *r = data;
  uint64_t now;

  if (!r->progress)
    return;
  now = cli_now_ns();
  /* A line printed since the last draw removed the bar: bring it back at
   * once, so that it stays below the lines it follows.
   */
  if (r->shown != 0 && now - r->last_draw_ns < PROGRESS_INTERVAL_NS)
    return;
  progress_draw(r, progress, now);
}
