/* precompress: the program. Parses argv, checks the PATHs, makes one call
 * to pc_run() and turns its result into messages and an exit status:
 *
 *   0    everything done (files skipped by the rules are not errors)
 *   1    a file failed, or --check found missing, stale or unwanted outputs
 *   2    bad usage, or nothing could run (a --manifest it may not replace)
 *   128+N  stopped by signal N (129 SIGHUP, 130 SIGINT, 141 SIGPIPE,
 *          143 SIGTERM); 141 too when standard output's reader went away
 */
#include "args.h"
#include "options_help.h"
#include "report.h"
#include "shard_env.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXIT_OK 0
#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_PIPE (128 + SIGPIPE)

/* A write to standard output met EPIPE: its reader is gone. Nothing more
 * is written there, and the exit status is 141, as if SIGPIPE had ended
 * the program (it stops the run instead: see pc_run()).
 */
static int stdout_gone;
/* The last error writing the manifest to standard output (--manifest -). */
static int stdout_err;

/* The signals a run stops on. SIGHUP and SIGPIPE only at their default
 * action: `nohup`'s SIG_IGN, or a parent's, stands.
 */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
static struct sigaction old_stop[sizeof(stop_signals) / sizeof(int)];
static int stop_caught[sizeof(stop_signals) / sizeof(int)];
static struct sigaction old_xfsz;
static int xfsz_ignored;
/* The first stop signal that came while ours were installed. */
static volatile sig_atomic_t stop_signo;

static void on_stop_signal(int signo) {
  int saved = errno;

  if (stop_signo == 0)
    stop_signo = signo;
  pc_stop(signo); /* async-signal-safe */
  errno = saved;
}

/* 1 if sa is the default action (not ignored, no handler). */
static int is_default(const struct sigaction *sa) {
  return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_DFL;
}

/* While pc_run() runs: the stop signals call pc_stop(), which stops the
 * run cleanly (incomplete manifest, no temp file left); the exit status
 * is then 128+N. A SIGPIPE from a write of ours to a closed standard
 * output thus ends the run instead of the process; the write itself
 * fails with EPIPE. SIGXFSZ, at its default action, is ignored, so that
 * a write past RLIMIT_FSIZE (`ulimit -f`) fails that file with EFBIG
 * instead of killing the process with temp files left behind.
 */
static void catch_signals(void) {
  struct sigaction sa;
  size_t k;

  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_stop_signal;
  sigfillset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (k = 0; k < sizeof(stop_signals) / sizeof(int); k++) {
    int s = stop_signals[k];
    if (sigaction(s, NULL, &old_stop[k]) != 0)
      continue;
    if ((s == SIGHUP || s == SIGPIPE) && !is_default(&old_stop[k]))
      continue;
    stop_caught[k] = sigaction(s, &sa, NULL) == 0;
  }
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGXFSZ, NULL, &old_xfsz) == 0 && is_default(&old_xfsz) &&
      sigaction(SIGXFSZ, &sa, NULL) == 0)
    xfsz_ignored = 1;
}

/* Puts back what each signal did before the run. */
static void release_signals(void) {
  size_t k;

  for (k = 0; k < sizeof(stop_signals) / sizeof(int); k++) {
    if (stop_caught[k])
      sigaction(stop_signals[k], &old_stop[k], NULL);
    stop_caught[k] = 0;
  }
  if (xfsz_ignored)
    sigaction(SIGXFSZ, &old_xfsz, NULL);
  xfsz_ignored = 0;
}

/* "0.95" for 95/100: exact when den is a power of ten, which is all the
 * parser produces; anything else gets a close decimal.
 */
static void format_ratio(char *buf, size_t size, uint64_t num, uint64_t den) {
  uint64_t scale = 1;
  int digits = 0;

  while (scale < den && digits < 19) {
    scale *= 10;
    digits++;
  }
  if (den == 0 || scale != den) {
    snprintf(buf, size, "%.9g", den != 0 ? (double)num / (double)den : 0.0);
    return;
  }
  if (digits == 0) {
    snprintf(buf, size, "%llu", (unsigned long long)num);
    return;
  }
  snprintf(buf, size, "%llu.%0*llu", (unsigned long long)(num / den), digits,
           (unsigned long long)(num % den));
}

/* The default skip list, wrapped to 78 columns; the help text has put the
 * first line's indent and puts the newline after it.
 */
static void print_skip_list(FILE *f) {
  const char *const *ext;
  size_t col = 2;
  size_t n;
  size_t i;

  ext = pc_default_skip_ext(&n);
  for (i = 0; i < n; i++) {
    size_t len = strlen(ext[i]);

    if (col > 2 && col + 1 + len > 78) {
      fputs("\n  ", f);
      col = 2;
    }
    if (col > 2) {
      fputc(' ', f);
      col++;
    }
    fputs(ext[i], f);
    col += len;
  }
}

/* The text comes from man/options.md (see options_help.h); this prints
 * it with the values only the program knows: the library's defaults, the
 * CPUs it may use and what this build lacks.
 */
static void print_help(FILE *f) {
  pc_options_t d;
  char ratio[48];
  const char *sep = "";
  size_t p;
  int i;

  pc_options_init(&d);
  format_ratio(ratio, sizeof(ratio), d.ratio_num, d.ratio_den);
  for (p = 0; p < sizeof(pc__help_pieces) / sizeof(pc__help_pieces[0]); p++) {
    fputs(pc__help_pieces[p].text, f);
    switch (pc__help_pieces[p].value) {
    case PC__HELP_NONE:
      break;
    case PC__HELP_ZSTD_NOTE:
      if (!pc_format_available(PC_ZST))
        fputs(" (not in this build)", f);
      break;
    case PC__HELP_FORMATS:
      for (i = 0; i < PC_NFORMATS; i++) {
        if (d.formats & PC_FMT_BIT(i)) {
          fprintf(f, "%s%s", sep, pc_format_ext((pc_format_t)i));
          sep = ",";
        }
      }
      break;
    case PC__HELP_GZIP_LEVEL:
      fprintf(f, "%d", d.level[PC_GZ]);
      break;
    case PC__HELP_BROTLI_QUALITY:
      fprintf(f, "%d", d.level[PC_BR]);
      break;
    case PC__HELP_ZSTD_LEVEL:
      fprintf(f, "%d", d.level[PC_ZST]);
      break;
    case PC__HELP_MAX_RATIO:
      fputs(ratio, f);
      break;
    case PC__HELP_MIN_SIZE:
      fprintf(f, "%llu", (unsigned long long)d.min_size);
      break;
    case PC__HELP_JOBS:
      fprintf(f, "%u", pc_default_jobs());
      break;
    case PC__HELP_SKIP_LIST:
      print_skip_list(f);
      break;
    }
  }
}

/* Every PATH must exist before any work starts, so that a typo does not
 * leave a half-done run behind. All missing ones are named. Missing ones
 * that look like extensions are whitenoise's positional skip list
 * (`python -m whitenoise.compress DIR jpg png`): one more line says where
 * they go here.
 */
static int check_paths(const cli_args_t *args) {
  struct stat st;
  size_t i;
  int bad = 0;
  char exts[128];
  size_t used = 0;

  exts[0] = '\0';
  for (i = 0; i < args->opts.npaths; i++) {
    const char *path = args->opts.paths[i];
    size_t n = strlen(path);
    int err;
    if (stat(path, &st) == 0)
      continue;
    err = errno;
    cli_report_name_msg(NULL, path, "%s", strerror(err));
    bad = 1;
    if (err == ENOENT && cli_looks_like_ext(path) &&
        used + n + 2 <= sizeof(exts)) {
      used += (size_t)snprintf(exts + used, sizeof(exts) - used, "%s%s",
                               used ? "," : "", path);
    }
  }
  if (used > 0)
    cli_report_msg(NULL,
                   "hint: every argument but the options is a PATH; "
                   "to skip extensions as 'python -m whitenoise.compress "
                   "DIR EXT...' does, use --skip-ext %s",
                   exts);
  /* An earlier release that is not there yet (a project's first build):
   * the run goes on without deltas against it, said in one line. Any
   * other failure to open it is the library's to return, before any work.
   */
  for (i = 0; !bad && !args->quiet && i < args->opts.n_dict_dirs; i++)
    if (stat(args->opts.dict_dirs[i], &st) != 0 && errno == ENOENT)
      cli_report_name_msg(NULL, args->opts.dict_dirs[i],
                          "warning: no such directory (no earlier release "
                          "yet?): no deltas against it");
  return bad;
}

static double cpu_seconds(void) {
  struct rusage ru;

  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Output the user asked for that did not reach stdout (a full disk, a
 * closed pipe) makes the run a failure. A closed pipe is said by the exit
 * status alone, 141, as for any program whose reader went away.
 */
static int finish_stdout(int status) {
  if (stdout_gone)
    return EXIT_PIPE;
  if (fflush(stdout) == 0 && !ferror(stdout))
    return status;
  if (errno == EPIPE)
    return EXIT_PIPE;
  cli_report_msg(NULL, "error writing to standard output: %s", strerror(errno));
  return status == EXIT_OK ? EXIT_FAILED : status;
}

/* --manifest -: the manifest's bytes, straight to standard output, which
 * nothing else writes to then (main() refuses -v, --json, -n and --check
 * beside it).
 */
static int write_stdout(void *data, const void *buf, size_t len) {
  const char *p = buf;

  (void)data;
  while (len > 0) {
    ssize_t n = write(STDOUT_FILENO, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      stdout_gone = errno == EPIPE;
      stdout_err = -errno;
      return stdout_err;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* cli_report_error(), but an error of the manifest on its way to standard
 * output is named so, and a closed pipe is left to the exit status.
 */
static void report_error(void *data, const char *path, int err) {
  if (path == NULL && err != 0 && err == stdout_err) {
    if (!stdout_gone)
      cli_report_msg(data, "standard output: %s", pc_strerror(err));
    return;
  }
  cli_report_error(data, path, err);
}

/* precompress merge-manifests OUT IN...: the shards' manifests as one.
 * OUT "-" is standard output, as for --manifest.
 */
static int merge_main(int argc, char **argv) {
  int to_stdout = argc > 2 && strcmp(argv[2], "-") == 0;
  size_t bad;
  int err;

  if (argc < 4 || (argv[2][0] == '-' && !to_stdout)) {
    cli_report_msg(NULL, "merge-manifests needs OUT and at least one IN "
                         "(see 'precompress --help')");
    return EXIT_USAGE;
  }
  if (to_stdout)
    err = pc_merge_manifests_write(write_stdout, NULL,
                                   (const char *const *)argv + 3,
                                   (size_t)argc - 3, &bad);
  else
    err = pc_merge_manifests(argv[2], (const char *const *)argv + 3,
                             (size_t)argc - 3, &bad);
  if (err == 0)
    return to_stdout ? finish_stdout(EXIT_OK) : EXIT_OK;
  if (to_stdout && bad == SIZE_MAX) {
    /* Only the writes can fail past the inputs: a closed pipe is 141. */
    report_error(NULL, NULL, err);
    return finish_stdout(EXIT_FAILED);
  }
  if (bad == SIZE_MAX) {
    cli_report_name_msg(NULL, argv[2], "%s", pc_strerror(err));
    /* OUT is looked at before any input is read: nothing could run. */
    return err == PC_EREFUSE || err == PC_EOUTNAME ? EXIT_USAGE : EXIT_FAILED;
  }
  if (err == -EINVAL) {
    cli_report_begin(NULL);
    cli_put_name(stderr, argv[3 + bad]);
    fputs(": written with other options or roots than ", stderr);
    cli_put_name(stderr, argv[3]);
    fputs(": not a shard of the same job\n", stderr);
  } else if (err == -EEXIST) {
    cli_report_msg(NULL, "the manifests list a file twice: shards overlap "
                         "(the same K/N given twice?)");
  } else {
    cli_report_name_msg(NULL, argv[3 + bad], "%s", pc_strerror(err));
  }
  return EXIT_FAILED;
}

/* precompress server-config nginx --part http|location [--location PREFIX]
 * [--alias DIR] MANIFEST, server-config apache [--location PREFIX] [--alias
 * DIR] MANIFEST or server-config caddy [--location PREFIX] MANIFEST: the
 * server configuration that serves the manifest's .dcb/.dcz outputs
 * (pc_server_config(); docs/deltas.md, "Serving"), on standard output.
 */
static const char server_config_usage[] =
    "usage: precompress server-config nginx --part http|location "
    "[--location URL] [--alias DIR] MANIFEST\n"
    "   or: precompress server-config apache [--location URL] [--alias DIR] "
    "MANIFEST\n"
    "   or: precompress server-config caddy [--location URL] MANIFEST";

/* What is wrong with server-config's arguments, as one phrase; NULL when
 * nothing is. *kind receives the configuration asked for. */
static const char *server_config_args(int argc, char **argv, const char **part,
                                      const char **prefix, const char **alias,
                                      const char **manifest, int *kind) {
  const char *server = argc > 2 ? argv[2] : "";
  int i;

  for (i = 3; i < argc; i++) {
    const char **v = strcmp(argv[i], "--location") == 0 ? prefix
                     : strcmp(argv[i], "--part") == 0   ? part
                     : strcmp(argv[i], "--alias") == 0  ? alias
                                                        : NULL;
    if (v != NULL && i + 1 < argc)
      *v = argv[++i];
    else if (v != NULL)
      return "an option without its value";
    else if (argv[i][0] == '-')
      return "an unknown option";
    else if (*manifest != NULL)
      return "one MANIFEST only";
    else
      *manifest = argv[i];
  }
  if (strcmp(server, "nginx") == 0) {
    if (*part == NULL)
      return "nginx needs --part http (for http {}) or --part location (for "
             "server {}): one run for each";
    *kind = strcmp(*part, "http") == 0       ? PC_CONF_NGINX_HTTP
            : strcmp(*part, "location") == 0 ? PC_CONF_NGINX_LOCATION
                                             : 0;
    if (*kind == 0)
      return "--part is http or location";
  } else if (strcmp(server, "apache") == 0 || strcmp(server, "caddy") == 0) {
    *kind = server[0] == 'a' ? PC_CONF_APACHE : PC_CONF_CADDY;
    if (*part != NULL)
      return "--part is nginx's only";
    if (*alias != NULL && *kind == PC_CONF_CADDY)
      return "--alias is nginx's and apache's only";
  } else {
    return argc > 2 ? "the server is nginx, apache or caddy"
                    : "which server: nginx, apache or caddy?";
  }
  return *manifest == NULL ? "MANIFEST is missing" : NULL;
}

static int server_config_main(int argc, char **argv) {
  const char *prefix = "/", *part = NULL, *manifest = NULL, *alias = NULL;
  const char *wrong;
  int err, kind = 0;

  wrong =
      server_config_args(argc, argv, &part, &prefix, &alias, &manifest, &kind);
  if (wrong != NULL) {
    cli_report_msg(NULL, "server-config: %s\n%s", wrong, server_config_usage);
    return EXIT_USAGE;
  }
  err = pc_server_config(write_stdout, NULL, manifest, (pc_conf_t)kind, prefix,
                         alias);
  if (err == -EINVAL) {
    cli_report_msg(NULL,
                   "--location: a URL path that begins and ends with "
                   "'/', of letters, digits and -._~!&,;=@' (no ',' "
                   "for apache)%s",
                   alias == NULL ? ""
                                 : "; --alias: an absolute directory of the "
                                   "same characters, without ..");
    return EXIT_USAGE;
  }
  if (err != 0 && !(stdout_gone || err == stdout_err))
    cli_report_name_msg(NULL, manifest, "%s", pc_strerror(err));
  else if (err != 0)
    report_error(NULL, NULL, err);
  return finish_stdout(err == 0 ? EXIT_OK : EXIT_FAILED);
}

/* Before 0.9 (numbered 1.1.0 then) the cache was a tree of entry files
 * under DIR/v1; the store (DIR/cache.sqlite) does not read it. Said once,
 * and left for the user to remove: deleting a tree recursively is not a
 * cache's business.
 */
static void note_old_cache(const char *dir) {
  char path[4096];
  struct stat st;

  if ((size_t)snprintf(path, sizeof(path), "%s/v1", dir) < sizeof(path) &&
      lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
    cli_report_name_msg(NULL, path,
                        "note: the old per-file cache, no longer read "
                        "(remove it to free its space)");
}

static const char *env_get(const char *name) { return getenv(name); }

/* --shard auto[/N]: K/N from the CI engine's environment (shard_env.h). 1
 * when there is none to be had: a usage error, said.
 */
static int resolve_shard(cli_args_t *args) {
  uint32_t k = 0, n = 0;

  if (cli_shard_from_env(env_get, args->shard_auto_count, &k, &n,
                         args->shard_from, sizeof(args->shard_from), args->err,
                         sizeof(args->err)) != 0) {
    cli_report_msg(NULL, "%s (see 'precompress --help')", args->err);
    return 1;
  }
  args->opts.shard_index = k;
  args->opts.shard_count = n;
  return 0;
}

/* --files-from FILE ('-': standard input) into args->only: one name a
 * line, or NUL-separated when FILE holds a NUL; empty names dropped, and a
 * leading "./". 0, or 1 when it could not be read (said).
 */
static int read_files_from(cli_args_t *args) {
  const char *from = args->files_from;
  int fd = strcmp(from, "-") == 0 ? 0 : open(from, O_RDONLY | O_CLOEXEC);
  size_t len = 0, cap = 0, n = 0, k;
  char *buf = NULL, sep;
  ssize_t got = 1;

  while (fd >= 0 && got > 0) {
    if (len + 65536 + 1 > cap) {
      char *grown = realloc(buf, cap = 2 * cap + 65536 + 1);
      if (grown == NULL) {
        errno = ENOMEM;
        break;
      }
      buf = grown;
    }
    got = read(fd, buf + len, 65536);
    if (got < 0 && errno == EINTR)
      got = 1;
    else if (got > 0)
      len += (size_t)got;
  }
  if (fd < 0 || got != 0) {
    cli_report_name_msg(NULL, from, "%s", strerror(errno));
    free(buf);
    if (fd > 0)
      close(fd);
    return 1;
  }
  if (fd > 0)
    close(fd);
  if (buf == NULL && (buf = malloc(1)) == NULL)
    return 1;
  buf[len] = '\0';
  sep = memchr(buf, '\0', len) != NULL ? '\0' : '\n';
  for (k = 0; k < len; k++)
    n += buf[k] == sep;
  args->only_buf = buf;
  if ((args->only = calloc(n + 2, sizeof(*args->only))) == NULL)
    return 1;
  for (k = 0, n = 0; k <= len;) {
    char *name = buf + k;
    size_t l = sep == '\0' ? strlen(name) : strcspn(name, "\n");
    name[l] = '\0';
    k += l + 1;
    while (name[0] == '.' && name[1] == '/')
      name += 2;
    if (name[0] != '\0')
      args->only[n++] = name;
  }
  args->opts.only = args->only;
  args->opts.nonly = n;
  return 0;
}

/* A yes/no variable: 1 yes ("1", "true", "yes", "on"), 0 no (unset,
 * empty, "0", "false", "no", "off"), -1 anything else.
 */
static int env_flag(const char *name) {
  static const char *const yes[] = {"1", "true", "yes", "on"};
  static const char *const no[] = {"", "0", "false", "no", "off"};
  const char *v = getenv(name);
  size_t i;

  if (v == NULL)
    return 0;
  for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
    if (strcasecmp(v, yes[i]) == 0)
      return 1;
  for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
    if (strcasecmp(v, no[i]) == 0)
      return 0;
  return -1;
}

/* --cache-auth-file FILE: its first line, "bearer TOKEN" or "basic
 * USER:PASSWORD" (the scheme word in any case, as in an Authorization
 * header), into args->cache_secret and the option it fills. Nothing of
 * what it holds is ever printed. 1 on a usage error (said).
 */
static int read_auth_file(cli_args_t *args) {
  const char *path = args->cache_auth_file;
  char buf[4096], *line, *end;
  size_t n = 0;
  ssize_t got;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

  if (fd < 0) {
    cli_report_name_msg(NULL, path, "%s", strerror(errno));
    return 1;
  }
  while (n < sizeof(buf) - 1 &&
         (got = read(fd, buf + n, sizeof(buf) - 1 - n)) != 0) {
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      cli_report_name_msg(NULL, path, "%s", strerror(errno));
      close(fd);
      return 1;
    }
    n += (size_t)got;
  }
  close(fd);
  buf[n] = '\0';
  line = buf;
  end = line + strcspn(line, "\r\n");
  while (end > line && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  *end = '\0';
  if (strncasecmp(line, "bearer ", 7) == 0 && line[7] != '\0') {
    args->cache_secret = strdup(line + 7);
    args->opts.cache_token = args->cache_secret;
  } else if (strncasecmp(line, "basic ", 6) == 0 &&
             strchr(line + 6, ':') != NULL) {
    args->cache_secret = strdup(line + 6);
    args->opts.cache_userpass = args->cache_secret;
  } else {
    memset(buf, 0, sizeof(buf));
    cli_report_name_msg(NULL, path,
                        "the first line must be 'bearer TOKEN' or 'basic "
                        "USER:PASSWORD' (see 'precompress --help')");
    return 1;
  }
  memset(buf, 0, sizeof(buf));
  if (args->cache_secret == NULL) {
    cli_report_msg(NULL, "%s", strerror(ENOMEM));
    return 1;
  }
  return 0;
}

/* The remote cache's settings the environment gives: the URL and
 * read-only mode when the command line left them unset, the credential
 * (never taken from the command line: it would show in process listings
 * and shell histories). 1 on a usage error (said).
 */
static int remote_env(cli_args_t *args) {
  pc_options_t *o = &args->opts;
  const char *url = getenv("PRECOMPRESS_CACHE_URL");
  const char *token = getenv("PRECOMPRESS_CACHE_TOKEN");
  const char *auth = getenv("PRECOMPRESS_CACHE_AUTH");
  int ro;

  if (o->cache_url == NULL && url != NULL && url[0] != '\0')
    o->cache_url = url;
  if (o->cache_url == NULL) {
    if (args->cache_auth_file == NULL && !o->cache_url_read_only &&
        o->cache_url_timeout == 0)
      return 0;
    cli_report_msg(NULL,
                   "%s needs --cache-url (or PRECOMPRESS_CACHE_URL) "
                   "(see 'precompress --help')",
                   args->cache_auth_file != NULL ? "--cache-auth-file"
                   : o->cache_url_read_only      ? "--cache-url-read-only"
                                                 : "--cache-url-timeout");
    return 1;
  }
  if (pc_remote_version() == NULL) {
    cli_report_msg(NULL, "--cache-url: no libcurl (built without it: "
                         "-Dcurl=disabled, -Dstatic=true, no "
                         "libcurl4-openssl-dev; or libcurl.so.4 cannot be "
                         "loaded) (see 'precompress --help')");
    return 1;
  }
  if ((ro = env_flag("PRECOMPRESS_CACHE_READ_ONLY")) < 0) {
    cli_report_msg(NULL, "PRECOMPRESS_CACHE_READ_ONLY: 1 or 0 (see "
                         "'precompress --help')");
    return 1;
  }
  o->cache_url_read_only |= ro;
  if (args->cache_auth_file != NULL)
    return read_auth_file(args);
  if (token != NULL && token[0] != '\0' && auth != NULL && auth[0] != '\0') {
    cli_report_msg(NULL, "PRECOMPRESS_CACHE_TOKEN and PRECOMPRESS_CACHE_AUTH "
                         "are both set: one credential (see 'precompress "
                         "--help')");
    return 1;
  }
  if (token != NULL && token[0] != '\0') {
    o->cache_token = token;
  } else if (auth != NULL && auth[0] != '\0') {
    if (strchr(auth, ':') == NULL) {
      cli_report_msg(NULL, "PRECOMPRESS_CACHE_AUTH: USER:PASSWORD (see "
                           "'precompress --help')");
      return 1;
    }
    o->cache_userpass = auth;
  }
  return 0;
}

/* Everything before the run: argv, the environment, --help and --version,
 * what may write to standard output, the PATHs. 1 when the program ends
 * here with *status.
 */
static int prepare(cli_args_t *args, int argc, char **argv, int *status) {
  *status = EXIT_USAGE;
  switch (cli_args_parse(args, argc, argv)) {
  case CLI_OK:
    break;
  case CLI_EUSAGE:
    cli_report_msg(NULL, "%s (see 'precompress --help')", args->err);
    return 1;
  case CLI_ENOZSTD:
  case CLI_ENOMEM:
    cli_report_msg(NULL, "%s", args->err);
    return 1;
  }

  /* The environment fills in only what the command line left unset. */
  if (args->opts.cache_dir == NULL) {
    const char *env = getenv("PRECOMPRESS_CACHE_DIR");
    if (env != NULL && env[0] != '\0')
      args->opts.cache_dir = env;
  }

  if (args->opts.cache_dir != NULL && !args->quiet)
    note_old_cache(args->opts.cache_dir);

  if (args->action == CLI_ACTION_HELP_SHORT) {
    fputs(pc__help_short, stdout);
    *status = EXIT_OK;
    return 1;
  }
  if (args->action == CLI_ACTION_HELP) {
    print_help(stdout);
    *status = EXIT_OK;
    return 1;
  }
  if (args->action == CLI_ACTION_VERSION) {
    const char *rv = pc_remote_version();
    printf("precompress %s (%s; remote cache: %s)\n", pc_version_string(),
           pc_library_versions(), rv != NULL ? rv : "none, no libcurl");
    *status = EXIT_OK;
    return 1;
  }
  if (remote_env(args))
    return 1;
  if (args->shard_auto && resolve_shard(args))
    return 1;

  if (args->opts.manifest != NULL && strcmp(args->opts.manifest, "-") == 0) {
    /* Standard output carries one thing: the manifest, or the lines. */
    const char *other = args->json           ? "--json"
                        : args->verbose      ? "-v/--verbose"
                        : args->check        ? "--check"
                        : args->opts.dry_run ? "-n/--dry-run"
                                             : NULL;
    if (other != NULL) {
      cli_report_msg(NULL,
                     "--manifest - and %s both write to standard "
                     "output (see 'precompress --help')",
                     other);
      return 1;
    }
    args->opts.manifest = NULL;
    args->opts.manifest_write = write_stdout;
  }
  if (args->files_from != NULL && read_files_from(args))
    return 1;
  return check_paths(args) ? 1 : 0;
}

/* pc_run() with the program's signal handlers around it (see catch_signals).
 * Its result.
 */
static int run_with_signals(cli_args_t *args, pc_totals_t *totals) {
  int rc;

  memset(totals, 0, sizeof(*totals));
  catch_signals();
  rc = pc_run(&args->opts, totals);
  release_signals();
  if (rc == 0 && stop_signo != 0) {
    /* It came when no run was there to stop (just before pc_run() began,
     * or once its work was done): the disposition just put back (the
     * default: death by that signal) gets it now, as it would have then.
     */
    raise(stop_signo);
  }
  return rc;
}

/* The run: callbacks, pc_run(), then the exit status and the summary. */
static int run(cli_args_t *args, uint64_t start_ns) {
  cli_report_t report;
  pc_totals_t totals;
  const char *what = NULL;
  int status, rc;

  cli_report_init(&report, args, cli_now_ns());
  args->opts.data = &report;
  args->opts.on_file = cli_report_file;
  args->opts.on_progress = cli_report_progress;
  args->opts.on_error = report_error;

  if (pc_options_check(&args->opts, &what) != 0) {
    cli_report_msg(NULL, "invalid options: %s (see 'precompress --help')",
                   what != NULL ? what : "unknown");
    return EXIT_USAGE;
  }

  cli_report_memory(&report, args);
  rc = run_with_signals(args, &totals);
  cli_report_clear(&report);
  /* SIGPIPE stopped the run while it ran; from here on a closed standard
   * output is an EPIPE that finish_stdout() turns into 141, never a death
   * by signal.
   */
  signal(SIGPIPE, SIG_IGN);
  if (totals.signo == SIGPIPE)
    stdout_gone = 1;

  if (rc == 0) {
    if (totals.failed > 0 || totals.errors > 0 ||
        (args->check && (totals.changes > 0 || report.listed > 0)))
      status = EXIT_FAILED;
    else
      status = EXIT_OK;
  } else if (rc == PC_EINTERRUPTED) {
    cli_report_msg(&report, "%s", pc_strerror(rc));
    status = 128 + (totals.signo > 0 ? totals.signo : SIGINT);
  } else {
    /* Nothing could run: there is no summary worth printing. */
    if (totals.err_path != NULL)
      cli_report_name_msg(&report, totals.err_path, "%s", pc_strerror(rc));
    else
      cli_report_msg(&report, "%s", pc_strerror(rc));
    return EXIT_USAGE;
  }

  /* --json's summary goes to standard output: not once it is gone. */
  if (!(stdout_gone && args->json))
    cli_report_summary(&report, &totals,
                       (double)(cli_now_ns() - start_ns) / 1e9, cpu_seconds(),
                       status);
  return status;
}

int main(int argc, char **argv) {
  cli_args_t args;
  uint64_t start_ns = cli_now_ns();
  int status;

  if (argc > 1 && strcmp(argv[1], "merge-manifests") == 0)
    return merge_main(argc, argv);
  if (argc > 1 && strcmp(argv[1], "server-config") == 0)
    return server_config_main(argc, argv);
  if (!prepare(&args, argc, argv, &status))
    status = run(&args, start_ns);
  status = finish_stdout(status);
  cli_args_free(&args);
  return status;
}
