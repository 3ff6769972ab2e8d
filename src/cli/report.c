/* Messages, per-file lines, the progress line and the summary (report.h). */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t cli_now_ns(void) {
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

char *cli_human_bytes(char *buf, size_t size, uint64_t n) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v;
  size_t u = 0;

  if (n < 1024) {
    snprintf(buf, size, "%" PRIu64 " B", n);
    return buf;
  }
  /* Move up a unit when one decimal would round to 1024.0 ("1.0 MiB" reads
   * better than "1024.0 KiB").
   */
  v = (double)n / 1024.0;
  while (v >= 1023.95 && u + 1 < sizeof(units) / sizeof(units[0])) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, size, "%.1f %s", v, units[u]);
  return buf;
}

void cli_report_init(cli_report_t *r, const cli_args_t *args,
                     uint64_t start_ns) {
  memset(r, 0, sizeof(*r));
  r->args = args;
  r->formats = args->opts.formats;
  r->start_ns = start_ns;
  switch (args->progress) {
  case CLI_PROGRESS_ALWAYS:
    r->progress = 1;
    break;
  case CLI_PROGRESS_NEVER:
    r->progress = 0;
    break;
  case CLI_PROGRESS_AUTO:
    r->progress = !args->quiet && isatty(STDERR_FILENO);
    break;
  }
}

void cli_report_clear(cli_report_t *r) {
  if (r == NULL || r->shown == 0)
    return;
  fprintf(stderr, "\r%*s\r", (int)r->shown, "");
  r->shown = 0;
}

/* Called before a line goes to stdout. Even when stdout is not a terminal
 * it may end up on one (| tee), so the progress line always goes first,
 * and the line is flushed (after_stdout) before the bar is drawn again.
 * --json-lines is flushed too: a script reading the stream sees each file
 * as it finishes, not a block at a time.
 */
static void before_stdout(cli_report_t *r) { cli_report_clear(r); }

static void after_stdout(cli_report_t *r) {
  if (r->progress || r->args->json_lines)
    fflush(stdout);
}

void cli_report_begin(cli_report_t *r) {
  cli_report_clear(r);
  /* Lines already written to a buffered stdout go first, so that a log
   * taking both streams keeps them in order.
   */
  fflush(stdout);
  fputs("precompress: ", stderr);
}

void cli_report_msg(cli_report_t *r, const char *fmt, ...) {
  va_list ap;

  cli_report_begin(r);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void cli_report_name_msg(cli_report_t *r, const char *name, const char *fmt,
                         ...) {
  va_list ap;

  cli_report_begin(r);
  cli_put_name(stderr, name);
  fputs(": ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* Starts a stdout line "WORD NAME", the name escaped. */
static void name_line(cli_report_t *r, const char *word, const char *name) {
  before_stdout(r);
  fputs(word, stdout);
  fputc(' ', stdout);
  cli_put_name(stdout, name);
}

/* Starts a stdout line "WORD NAME" about the file's outputs (NAME without
 * the extension, which the caller adds): beside the file, or with
 * --output-dir under DIR at the file's path below its PATH.
 */
static void output_line(cli_report_t *r, const char *word, const pc_file_t *f) {
  const char *dir = r->args->opts.output_dir;

  if (dir == NULL) {
    name_line(r, word, f->fullpath);
    return;
  }
  name_line(r, word, dir);
  cli_put_name(stdout, "/");
  cli_put_name(stdout, f->path);
}

static void verbose_line(cli_report_t *r, const pc_file_t *f) {
  const char *sep = " ";
  int i;

  name_line(r, pc_outcome_name(f->outcome), f->fullpath);
  if (f->outcome == PC_OUTCOME_UNCHANGED) {
    fputc('\n', stdout);
  } else if (f->skip != PC_SKIP_NONE) {
    printf(" (%s)\n", pc_skip_name(f->skip));
  } else {
    printf(" (%" PRIu64 " ->", f->size);
    for (i = 0; i < PC_NFORMATS; i++) {
      const pc_output_t *o = &f->out[i];

      if (o->state == PC_OUT_KEPT) {
        printf("%s%s %" PRIu64, sep, pc_format_ext((pc_format_t)i), o->size);
        sep = ", ";
      } else if (o->state == PC_OUT_RATIO) {
        printf("%s%s ratio", sep, pc_format_ext((pc_format_t)i));
        sep = ", ";
      }
    }
    fputs(")\n", stdout);
  }
}

/* The dry-run listing says what a real run would do to each output name;
 * --check lists only what a real run would change.
 */
static const char *action_word(pc_action_t a, int check) {
  switch (a) {
  case PC_ACT_CREATE:
    return check ? "missing" : "would write";
  case PC_ACT_REPLACE:
    return check ? "stale" : "would replace";
  case PC_ACT_REFRESH:
    return check ? NULL : "would replace";
  case PC_ACT_REMOVE:
    return check ? "unwanted" : "would remove";
  case PC_ACT_NONE:
    break;
  }
  return NULL;
}

/* With --json or --json-lines stdout is JSON only: the lines are counted
 * (for --check's exit status) but not printed; the summary's "changes" and
 * each output's "action" carry them.
 */
/* ".<id>.dcz": a delta's name after its file's. */
static const char *delta_suffix(const pc_delta_t *d, char buf[24]) {
  static const char hex[] = "0123456789abcdef";
  int k;

  buf[0] = '.';
  for (k = 0; k < 8; k++) {
    buf[1 + 2 * k] = hex[d->sha256[k] >> 4];
    buf[2 + 2 * k] = hex[d->sha256[k] & 15];
  }
  snprintf(buf + 17, 7, ".%s", pc_delta_ext(d->format));
  return buf;
}

static void listing_lines(cli_report_t *r, const pc_file_t *f) {
  int print = !r->args->json && !r->args->json_lines;
  unsigned k;
  char sfx[24];
  int i;

  for (i = 0; i < PC_NFORMATS; i++) {
    const char *word = action_word(f->out[i].action, r->args->check);

    if (word == NULL)
      continue;
    r->listed++;
    if (!print)
      continue;
    output_line(r, word, f);
    printf(".%s\n", pc_format_ext((pc_format_t)i));
  }
  for (k = 0; k < f->ndeltas; k++) {
    const char *word = action_word(f->deltas[k].action, r->args->check);
    if (word == NULL)
      continue;
    r->listed++;
    if (!print)
      continue;
    output_line(r, word, f);
    printf("%s\n", delta_suffix(&f->deltas[k], sfx));
  }
}

/* -v: "removed PATH.gz" for each output this run removed (its format is
 * enabled but the output is no longer kept), which the file's own line
 * does not show. A failed file's outputs were settled before the failure
 * or left alone (their action is then none), so REMOVE means the output is
 * gone. Not in a dry run, whose listing says "would remove".
 */
static void removed_lines(cli_report_t *r, const pc_file_t *f) {
  int i;

  for (i = 0; i < PC_NFORMATS; i++) {
    if (f->out[i].action != PC_ACT_REMOVE)
      continue;
    output_line(r, "removed", f);
    printf(".%s\n", pc_format_ext((pc_format_t)i));
  }
}

/* -v: "rejected PATH.br (...)", one line per format whose entry in the
 * remote cache was not this file's output (compressed here instead).
 */
static void rejected_lines(cli_report_t *r, const pc_file_t *f) {
  int i;

  for (i = 0; i < PC_NFORMATS; i++) {
    if (!(f->remote_rejected & PC_FMT_BIT(i)))
      continue;
    output_line(r, "rejected", f);
    printf(".%s (the remote cache's entry does not decode to the file)\n",
           pc_format_ext((pc_format_t)i));
  }
}

/* --json-lines: ,"remote":{"hits":["gz"],"rejected":["br"]} */
static void remote_json(const cli_report_t *r, const pc_file_t *f) {
  const unsigned bits[2] = {f->remote_hits, f->remote_rejected};
  const char *const names[2] = {"hits", "rejected"};
  int k, i;

  if (r->args->opts.cache_url == NULL)
    return;
  fputs(",\"remote\":{", stdout);
  for (k = 0; k < 2; k++) {
    const char *sep = "";
    printf("%s\"%s\":[", k ? "," : "", names[k]);
    for (i = 0; i < PC_NFORMATS; i++)
      if (bits[k] & PC_FMT_BIT(i)) {
        printf("%s\"%s\"", sep, pc_format_ext((pc_format_t)i));
        sep = ",";
      }
    putchar(']');
  }
  putchar('}');
}

static const char *state_name(pc_out_state_t s) {
  switch (s) {
  case PC_OUT_OFF:
    break;
  case PC_OUT_KEPT:
    return "kept";
  case PC_OUT_RATIO:
    return "ratio";
  case PC_OUT_FAILED:
    return "failed";
  }
  return "off";
}

static const char *action_name(pc_action_t a) {
  switch (a) {
  case PC_ACT_NONE:
    break;
  case PC_ACT_CREATE:
    return "create";
  case PC_ACT_REPLACE:
    return "replace";
  case PC_ACT_REFRESH:
    return "refresh";
  case PC_ACT_REMOVE:
    return "remove";
  }
  return "none";
}

/* ,"KEY":"NAME" and, when NAME is not valid UTF-8 (so the string has
 * U+FFFD in place of some bytes), ,"KEY_hex":"..." with the exact bytes,
 * as the manifest records such a name.
 */
static void json_name_member(const char *key, const char *name) {
  size_t n = strlen(name);

  printf(",\"%s\":", key);
  if (cli_put_json_str(stdout, name, n)) {
    printf(",\"%s_hex\":", key);
    cli_put_json_hex(stdout, name, n);
  }
}

/* Deltas (docs/deltas.md): a line on stderr for a dictionary that could
 * not be read, one per delta with -v, the deltas of a --json-lines line,
 * and their part of the summaries.
 */
static const char *const dir_unknown = "?";

static const char *dir_of(const cli_report_t *r, const pc_delta_t *d) {
  const pc_options_t *o = &r->args->opts;
  return d->from < o->n_dict_dirs ? o->dict_dirs[d->from] : dir_unknown;
}

static void cli_delta_errors(cli_report_t *r, const pc_file_t *f) {
  unsigned k;

  for (k = 0; k < f->ndeltas; k++) {
    const pc_delta_t *d = &f->deltas[k];
    if (d->skip != PC_DSKIP_ERROR || d->format != f->deltas[0].format)
      continue; /* one line per dictionary, not per format */
    cli_report_name_msg(r, f->fullpath, "no delta against %s/%s: %s",
                        dir_of(r, d), d->dictionary, pc_strerror(d->err));
  }
}

static void cli_delta_verbose(const cli_report_t *r, const pc_file_t *f) {
  unsigned k;

  for (k = 0; k < f->ndeltas; k++) {
    const pc_delta_t *d = &f->deltas[k];
    const char *ext = pc_delta_ext(d->format);
    if (d->from == UINT32_MAX) {
      printf("  %s removed: no pairing gives it now\n", ext);
    } else if (d->skip == PC_DSKIP_NONE) {
      printf("  %s %" PRIu64 " against %s/%s\n", ext, d->size, dir_of(r, d),
             d->dictionary);
    } else {
      printf("  %s %s against %s/%s\n", ext, pc_delta_skip_name(d->skip),
             dir_of(r, d), d->dictionary);
    }
  }
}

static void cli_delta_json(const cli_report_t *r, const pc_file_t *f) {
  static const char hex[] = "0123456789abcdef";
  unsigned k;
  int i;

  (void)r;
  if (f->ndeltas == 0)
    return;
  fputs(",\"deltas\":[", stdout);
  for (k = 0; k < f->ndeltas; k++) {
    const pc_delta_t *d = &f->deltas[k];
    printf("%s{\"format\":\"%s\"", k ? "," : "", pc_delta_ext(d->format));
    if (d->from != UINT32_MAX) {
      printf(",\"from\":%" PRIu32 ",\"dictionary\":", d->from);
      cli_put_json_str(stdout, d->dictionary, strlen(d->dictionary));
    }
    /* A dictionary not read has no hash (all zero): none is said. */
    for (i = 0; i < (int)sizeof(d->sha256) && d->sha256[i] == 0; i++)
      ;
    if (d->from != UINT32_MAX && i < (int)sizeof(d->sha256)) {
      fputs(",\"sha256\":\"", stdout);
      for (i = 0; i < (int)sizeof(d->sha256); i++)
        printf("%c%c", hex[d->sha256[i] >> 4], hex[d->sha256[i] & 15]);
      fputc('"', stdout);
    }
    if (d->skip == PC_DSKIP_NONE)
      printf(",\"state\":\"kept\",\"size\":%" PRIu64, d->size);
    else if (d->from != UINT32_MAX)
      printf(",\"state\":\"%s\"", pc_delta_skip_name(d->skip));
    printf(",\"action\":\"%s\"}", action_name(d->action));
  }
  fputc(']', stdout);
}

static void cli_delta_summary(const cli_report_t *r, const pc_totals_t *t,
                              int json) {
  char in[32], out[32];
  int f;

  if (r->args->opts.n_dict_dirs == 0)
    return;
  if (json)
    fputs(",\"deltas\":{", stdout);
  for (f = 0; f < PC_NDELTAS; f++) {
    if (json)
      printf("%s\"%s\":{\"files\":%" PRIu64 ",\"bytes_in\":%" PRIu64
             ",\"bytes_out\":%" PRIu64 "}",
             f ? "," : "", pc_delta_ext((pc_delta_format_t)f),
             t->delta[f].files, t->delta[f].bytes_in, t->delta[f].bytes_out);
    else if (t->delta[f].files > 0)
      fprintf(stderr, ", %s %s -> %s (%" PRIu64 " file%s)",
              pc_delta_ext((pc_delta_format_t)f),
              cli_human_bytes(in, sizeof(in), t->delta[f].bytes_in),
              cli_human_bytes(out, sizeof(out), t->delta[f].bytes_out),
              t->delta[f].files, t->delta[f].files == 1 ? "" : "s");
  }
  if (json)
    fputc('}', stdout);
}

/* --json-lines: one object on one line per file, e.g.
 * {"type":"file","root":"dist","path":"app.js","size":1200,
 *  "mtime_ns":1700000000123456789,"status":"compressed",
 *  "outputs":{"gz":{"state":"kept","size":400,"action":"create"},
 *  "br":{"state":"ratio","action":"none"}}}
 */
static void json_file_line(cli_report_t *r, const pc_file_t *f) {
  const char *sep = "";
  int i;

  before_stdout(r);
  fputs("{\"type\":\"file\"", stdout);
  json_name_member("root", f->root);
  json_name_member("path", f->path);
  printf(",\"size\":%" PRIu64 ",\"mtime_ns\":", f->size);
  /* The library's 0 is "unknown" (special files, broken links). */
  if (f->mtime_ns != 0)
    printf("%" PRId64, f->mtime_ns);
  else
    fputs("null", stdout);
  /* Status, reason and action names are fixed ASCII: no escaping needed. */
  printf(",\"status\":\"%s\"", pc_outcome_name(f->outcome));
  if (f->skip != PC_SKIP_NONE)
    printf(",\"skip\":\"%s\"", pc_skip_name(f->skip));
  if (f->err != 0) {
    const char *msg = pc_strerror(f->err);

    fputs(",\"error\":", stdout);
    cli_put_json_str(stdout, msg, strlen(msg));
  }
  cli_delta_json(r, f);
  remote_json(r, f);
  fputs(",\"outputs\":{", stdout);
  for (i = 0; i < PC_NFORMATS; i++) {
    const pc_output_t *o = &f->out[i];

    if (!(r->formats & PC_FMT_BIT(i)))
      continue;
    printf("%s\"%s\":{\"state\":\"%s\"", sep, pc_format_ext((pc_format_t)i),
           state_name(o->state));
    if (o->state == PC_OUT_KEPT)
      printf(",\"size\":%" PRIu64, o->size);
    printf(",\"action\":\"%s\"}", action_name(o->action));
    sep = ",";
  }
  fputs("}}\n", stdout);
}

/* "11.6 GiB", or "none" for no limit. */
static const char *limit_text(char *buf, size_t size, uint64_t limit) {
  if (limit == PC_MEMORY_UNLIMITED)
    return "none";
  return cli_human_bytes(buf, size, limit);
}

void cli_report_memory(cli_report_t *r, cli_args_t *args) {
  if (args->opts.memory_limit == 0) {
    pc_default_memory_limit(&r->mem);
    args->opts.memory_limit = r->mem.limit;
  } else {
    r->mem.limit = args->opts.memory_limit;
    r->mem.found = 0;
    r->mem.source = "--memory-limit";
  }
}

/* -v's end of the summary: "memory limit 11.6 GiB (half of MemAvailable,
 * 23.1 GiB), peak estimate 152.0 MiB".
 */
static void memory_text(const cli_report_t *r, const pc_totals_t *t) {
  char a[32], b[32];

  if (r->mem.found != 0)
    fprintf(stderr, "; memory limit %s (half of %s, %s)",
            limit_text(a, sizeof(a), r->mem.limit), r->mem.source,
            cli_human_bytes(b, sizeof(b), r->mem.found));
  else if (r->mem.limit == PC_MEMORY_UNLIMITED)
    fprintf(stderr, "; no memory limit (%s)",
            strcmp(r->mem.source, "none") == 0
                ? "none found: no cgroup limit, rlimit or MemAvailable"
                : "--memory-limit 0");
  else
    fprintf(stderr, "; memory limit %s (%s)",
            limit_text(a, sizeof(a), r->mem.limit), r->mem.source);
  fprintf(stderr, ", peak estimate %s",
          cli_human_bytes(a, sizeof(a), t->mem_peak));
  if (t->mem_dicts > 0)
    fprintf(stderr, " (earlier releases' listings and Django manifests %s)",
            cli_human_bytes(a, sizeof(a), t->mem_dicts));
  if (t->ran_alone > 0)
    fprintf(stderr, ", %" PRIu64 " file%s ran alone", t->ran_alone,
            t->ran_alone == 1 ? "" : "s");
}

void cli_report_file(void *data, const pc_file_t *file) {
  cli_report_t *r = data;
  const cli_args_t *a = r->args;

  /* PC_ENOWRITE: its directory's one line said it. */
  if (file->err != 0 && file->err != PC_ENOWRITE)
    cli_report_name_msg(
        r, file->err_path != NULL ? file->err_path : file->fullpath, "%s",
        pc_strerror(file->err));
  if (a->verbose && file->alone) {
    char lim[32];
    cli_report_name_msg(r, file->fullpath,
                        "ran alone: its encoders need "
                        "more than the %s memory limit by themselves",
                        limit_text(lim, sizeof(lim), r->mem.limit));
  }
  cli_delta_errors(r, file);
  if (a->json_lines)
    json_file_line(r, file);
  /* A failed file has its line on stderr already. */
  if (a->verbose && file->err == 0)
    verbose_line(r, file);
  if (a->verbose)
    cli_delta_verbose(r, file);
  if (a->verbose && !a->opts.dry_run)
    removed_lines(r, file);
  if (a->verbose)
    rejected_lines(r, file);
  if (a->opts.dry_run)
    listing_lines(r, file);
  after_stdout(r);
}

void cli_report_error(void *data, const char *path, int err) {
  cli_report_t *r = data;

  if (path != NULL && err == PC_ENOWRITE &&
      faccessat(AT_FDCWD, path, W_OK | X_OK, AT_EACCESS) != 0) {
    /* The library says the directory takes no outputs; why is the
     * system's to say (no write permission, a read-only file system). */
    int why = errno;
    cli_report_name_msg(r, path,
                        "cannot write outputs in this directory (%s): "
                        "its files are not compressed",
                        strerror(why));
  } else if (path != NULL && err == PC_EDJMEMORY &&
             r->mem.limit != PC_MEMORY_UNLIMITED) {
    char lim[32];
    cli_report_name_msg(r, path, "%s (memory limit %s)", pc_strerror(err),
                        limit_text(lim, sizeof(lim), r->mem.limit));
  } else if (path != NULL)
    cli_report_name_msg(r, path, "%s", pc_strerror(err));
  else
    cli_report_msg(r, "%s", pc_strerror(err));
}

/* --shard: which one, and from where: "--shard" (K/N given) or the
 * variables --shard auto read (ASCII names and digits).
 */
static void shard_json(const cli_args_t *a) {
  if (a->opts.shard_count == 0)
    return;
  printf(",\"shard\":{\"index\":%u,\"count\":%u,\"from\":\"%s\"}",
         (unsigned)a->opts.shard_index, (unsigned)a->opts.shard_count,
         a->shard_auto ? a->shard_from : "--shard");
}

static void summary_json(cli_report_t *r, const pc_totals_t *t, double wall_s,
                         double cpu_s, int exit_status) {
  const char *sep = "";
  int i;

  /* With --json-lines the summary is one more object in the stream, told
   * from the file lines by its first member.
   */
  printf("{%s\"files\":%" PRIu64 ",\"bytes\":%" PRIu64
         ",\"compressed\":%" PRIu64 ",\"deduped\":%" PRIu64
         ",\"cached\":%" PRIu64 ",\"unchanged\":%" PRIu64 ",\"skipped\":{",
         r->args->json_lines ? "\"type\":\"summary\"," : "", t->files, t->bytes,
         t->compressed, t->deduped, t->cached, t->unchanged);
  for (i = PC_SKIP_NONE + 1; i < PC_SKIP_MAX_; i++) {
    printf("%s\"%s\":%" PRIu64, sep, pc_skip_name((pc_skip_t)i), t->skipped[i]);
    sep = ",";
  }
  printf("},\"failed\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"changes\":%" PRIu64
         ",\"removed\":%" PRIu64 ",\"formats\":{",
         t->failed, t->errors, t->changes, t->removed);
  sep = "";
  for (i = 0; i < PC_NFORMATS; i++) {
    if (!(r->formats & PC_FMT_BIT(i)))
      continue;
    printf("%s\"%s\":{\"files\":%" PRIu64 ",\"bytes_in\":%" PRIu64
           ",\"bytes_out\":%" PRIu64 "}",
           sep, pc_format_ext((pc_format_t)i), t->fmt[i].files,
           t->fmt[i].bytes_in, t->fmt[i].bytes_out);
    sep = ",";
  }
  putchar('}');
  cli_delta_summary(r, t, 1);
  printf(",\"memory\":{\"limit\":");
  if (t->mem_limit == PC_MEMORY_UNLIMITED)
    fputs("null", stdout);
  else
    printf("%" PRIu64, t->mem_limit);
  /* Sources are fixed ASCII names: no escaping needed. */
  printf(",\"source\":\"%s\",\"found\":",
         r->mem.source != NULL ? r->mem.source : "none");
  if (r->mem.found == 0)
    fputs("null", stdout);
  else
    printf("%" PRIu64, r->mem.found);
  printf(",\"peak_estimate\":%" PRIu64 ",\"ran_alone\":%" PRIu64 "}",
         t->mem_peak, t->ran_alone);
  shard_json(r->args);
  if (t->remote.on) {
    printf(",\"remote\":{\"lookups\":%" PRIu64 ",\"hits\":%" PRIu64
           ",\"stored\":%" PRIu64 ",\"rejected\":%" PRIu64 ",\"lost\":%" PRIu64
           ",\"failed\":%s,\"failure\":",
           t->remote.lookups, t->remote.hits, t->remote.stored,
           t->remote.rejected, t->remote.lost,
           t->remote.failed ? "true" : "false");
    if (t->remote.why != NULL)
      cli_put_json_str(stdout, t->remote.why, strlen(t->remote.why));
    else
      fputs("null", stdout);
    putchar('}');
  }
  /* Where a file's outputs are: DIR/path.EXT, path as its line gives it. */
  if (r->args->opts.output_dir != NULL)
    json_name_member("output_dir", r->args->opts.output_dir);
  printf(",\"dry_run\":%s,\"wall_s\":%.3f,\"cpu_s\":%.3f,\"exit\":%d}\n",
         r->args->opts.dry_run ? "true" : "false", wall_s, cpu_s, exit_status);
}

/* The summary's "; remote cache: 40 of 40 lookups hit, 0 stored" (with
 * ", N rejected" and ", N lost" when not 0), with --cache-url.
 */
static void remote_text(const cli_report_t *r, const pc_totals_t *t) {
  if (!t->remote.on)
    return;
  fprintf(stderr, "; remote cache: %" PRIu64 " of %" PRIu64 " lookup%s hit",
          t->remote.hits, t->remote.lookups, t->remote.lookups == 1 ? "" : "s");
  if (!r->args->opts.cache_url_read_only && !r->args->opts.dry_run)
    fprintf(stderr, ", %" PRIu64 " stored", t->remote.stored);
  if (t->remote.rejected > 0)
    fprintf(stderr, ", %" PRIu64 " rejected", t->remote.rejected);
  if (t->remote.lost > 0)
    fprintf(stderr, ", %" PRIu64 " lost", t->remote.lost);
}

/* "42 files, 30 compressed, 10 skipped (6 extension, 3 ratio, 1 empty),
 * 2 failed, 3 removed; gz 1.2 MiB -> 300.5 KiB, br 1.2 MiB -> 250.1 KiB;
 * 1.23 s".
 * Reasons go largest first, zero counts left out.
 */
static void summary_line(cli_report_t *r, const pc_totals_t *t, double wall_s) {
  char reasons[PC_SKIP_MAX_ * 40];
  char in[32];
  char out[32];
  int used[PC_SKIP_MAX_] = {0};
  uint64_t skipped = 0;
  size_t len = 0;
  const char *sep = "";
  int i;

  reasons[0] = '\0';
  for (i = PC_SKIP_NONE + 1; i < PC_SKIP_MAX_; i++)
    skipped += t->skipped[i];
  for (;;) {
    int best = -1;

    for (i = PC_SKIP_NONE + 1; i < PC_SKIP_MAX_; i++)
      if (!used[i] && t->skipped[i] > 0 &&
          (best < 0 || t->skipped[i] > t->skipped[best]))
        best = i;
    if (best < 0)
      break;
    used[best] = 1;
    len += (size_t)snprintf(reasons + len, sizeof(reasons) - len,
                            "%s%" PRIu64 " %s", sep, t->skipped[best],
                            pc_skip_name((pc_skip_t)best));
    sep = ", ";
  }

  fprintf(stderr, "precompress: %s%" PRIu64 " file%s, %" PRIu64 " compressed",
          r->args->opts.dry_run ? "dry run: " : "", t->files,
          t->files == 1 ? "" : "s", t->compressed);
  if (t->deduped > 0 || t->cached > 0) {
    /* Say how much of "compressed" was not compressed here. */
    fputs(" (", stderr);
    if (t->deduped > 0)
      fprintf(stderr, "%" PRIu64 " copied from identical files%s", t->deduped,
              t->cached > 0 ? ", " : "");
    if (t->cached > 0)
      fprintf(stderr, "%" PRIu64 " from the cache", t->cached);
    fputc(')', stderr);
  }
  fputs(", ", stderr);
  if (t->unchanged > 0)
    fprintf(stderr, "%" PRIu64 " unchanged, ", t->unchanged);
  fprintf(stderr, "%" PRIu64 " skipped%s%s%s, %" PRIu64 " failed", skipped,
          len > 0 ? " (" : "", reasons, len > 0 ? ")" : "", t->failed);
  if (t->errors > 0)
    fprintf(stderr, ", %" PRIu64 " other error%s", t->errors,
            t->errors == 1 ? "" : "s");
  /* A dry run removes nothing: its removals are among its changes. */
  if (t->removed > 0 && !r->args->opts.dry_run)
    fprintf(stderr, ", %" PRIu64 " removed", t->removed);
  if (r->args->opts.dry_run)
    fprintf(stderr, ", %" PRIu64 " change%s", t->changes,
            t->changes == 1 ? "" : "s");
  sep = "; ";
  for (i = 0; i < PC_NFORMATS; i++) {
    if (!(r->formats & PC_FMT_BIT(i)))
      continue;
    fprintf(stderr, "%s%s %s -> %s", sep, pc_format_ext((pc_format_t)i),
            cli_human_bytes(in, sizeof(in), t->fmt[i].bytes_in),
            cli_human_bytes(out, sizeof(out), t->fmt[i].bytes_out));
    sep = ", ";
  }
  cli_delta_summary(r, t, 0);
  if (r->args->verbose && r->args->opts.shard_count != 0)
    fprintf(stderr, "; shard %u/%u (%s)", (unsigned)r->args->opts.shard_index,
            (unsigned)r->args->opts.shard_count,
            r->args->shard_auto ? r->args->shard_from : "--shard");
  remote_text(r, t);
  if (r->args->verbose)
    memory_text(r, t);
  fprintf(stderr, "; %.2f s\n", wall_s);
}

/* One warning line when the remote cache failed or lost requests: the
 * run went on without them (exit status unchanged), and this says what it
 * cost. The URL is printed as given: it holds no credential
 * (pc_options_check() refuses one there).
 */
static void remote_warning(cli_report_t *r, const pc_totals_t *t) {
  if (!t->remote.on || (!t->remote.failed && t->remote.lost == 0))
    return;
  cli_report_name_msg(r, r->args->opts.cache_url,
                      "warning: remote cache %s (%s): %" PRIu64
                      " request%s lost; the run went on without %s",
                      t->remote.failed ? "failed" : "fell behind",
                      t->remote.why != NULL ? t->remote.why : "no reason given",
                      t->remote.lost, t->remote.lost == 1 ? "" : "s",
                      t->remote.lost == 1 ? "it" : "them");
}

void cli_report_summary(cli_report_t *r, const pc_totals_t *totals,
                        double wall_s, double cpu_s, int exit_status) {
  cli_report_clear(r);
  if (!r->args->quiet)
    remote_warning(r, totals);
  if (r->args->json || r->args->json_lines) {
    summary_json(r, totals, wall_s, cpu_s, exit_status);
  } else if (!r->args->quiet) {
    fflush(stdout);
    summary_line(r, totals, wall_s);
  }
}
