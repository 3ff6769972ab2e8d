/* Table-driven argv parser (see args.h). Nothing here prints or exits. */
#include "args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum opt_id {
  OPT_NO_GZIP,
  OPT_NO_BROTLI,
  OPT_ZSTD,
  OPT_FORMATS,
  OPT_GZIP_LEVEL,
  OPT_BROTLI_QUALITY,
  OPT_ZSTD_LEVEL,
  OPT_MAX_RATIO,
  OPT_MIN_SIZE,
  OPT_SKIP_EXT,
  OPT_INCLUDE,
  OPT_EXCLUDE,
  OPT_FILES_FROM,
  OPT_FOLLOW,
  OPT_FORCE,
  OPT_FSYNC,
  OPT_GZIP_ENGINE,
  OPT_SHARD,
  OPT_CACHE_DIR,
  OPT_CACHE_MAX_SIZE,
  OPT_CACHE_URL,
  OPT_CACHE_AUTH_FILE,
  OPT_CACHE_URL_READ_ONLY,
  OPT_CACHE_URL_TIMEOUT,
  OPT_JOBS,
  OPT_MEMORY_LIMIT,
  OPT_MANIFEST,
  OPT_OUTPUT_DIR,
  OPT_DICTIONARY_FROM,
  OPT_DICTIONARY_NAME,
  OPT_DJANGO_MANIFEST,
  OPT_DELTAS,
  OPT_DRY_RUN,
  OPT_CHECK,
  OPT_QUIET,
  OPT_VERBOSE,
  OPT_PROGRESS,
  OPT_JSON,
  OPT_JSON_LINES,
  OPT_HELP,
  OPT_VERSION
} opt_id_t;

typedef struct opt_def {
  const char *name; /* long name without the dashes */
  char short_name;  /* 0 when there is none */
  int has_value;
  opt_id_t id;
} opt_def_t;

/* Every option the program knows. Long names must be spelled in full: an
 * abbreviation accepted today would break scripts when a new option makes
 * it ambiguous.
 */
static const opt_def_t opt_table[] = {
    {"no-gzip", 0, 0, OPT_NO_GZIP},
    {"no-brotli", 0, 0, OPT_NO_BROTLI},
    {"zstd", 0, 0, OPT_ZSTD},
    {"formats", 0, 1, OPT_FORMATS},
    {"gzip-level", 0, 1, OPT_GZIP_LEVEL},
    {"gzip-engine", 0, 1, OPT_GZIP_ENGINE},
    {"brotli-quality", 0, 1, OPT_BROTLI_QUALITY},
    {"zstd-level", 0, 1, OPT_ZSTD_LEVEL},
    {"max-ratio", 0, 1, OPT_MAX_RATIO},
    {"min-size", 0, 1, OPT_MIN_SIZE},
    {"skip-ext", 0, 1, OPT_SKIP_EXT},
    {"include", 0, 1, OPT_INCLUDE},
    {"exclude", 0, 1, OPT_EXCLUDE},
    {"files-from", 0, 1, OPT_FILES_FROM},
    {"follow", 0, 0, OPT_FOLLOW},
    {"force", 0, 0, OPT_FORCE},
    {"fsync", 0, 0, OPT_FSYNC},
    {"shard", 0, 1, OPT_SHARD},
    {"cache-dir", 0, 1, OPT_CACHE_DIR},
    {"cache-max-size", 0, 1, OPT_CACHE_MAX_SIZE},
    {"cache-url", 0, 1, OPT_CACHE_URL},
    {"cache-auth-file", 0, 1, OPT_CACHE_AUTH_FILE},
    {"cache-url-read-only", 0, 0, OPT_CACHE_URL_READ_ONLY},
    {"cache-url-timeout", 0, 1, OPT_CACHE_URL_TIMEOUT},
    {"jobs", 'j', 1, OPT_JOBS},
    {"memory-limit", 0, 1, OPT_MEMORY_LIMIT},
    {"manifest", 0, 1, OPT_MANIFEST},
    {"output-dir", 0, 1, OPT_OUTPUT_DIR},
    {"dictionary-from", 0, 1, OPT_DICTIONARY_FROM},
    {"dictionary-name", 0, 1, OPT_DICTIONARY_NAME},
    {"django-manifest", 0, 1, OPT_DJANGO_MANIFEST},
    {"deltas", 0, 1, OPT_DELTAS},
    {"dry-run", 'n', 0, OPT_DRY_RUN},
    {"check", 0, 0, OPT_CHECK},
    {"quiet", 'q', 0, OPT_QUIET},
    {"verbose", 'v', 0, OPT_VERBOSE},
    {"progress", 0, 1, OPT_PROGRESS},
    {"json", 0, 0, OPT_JSON},
    {"json-lines", 0, 0, OPT_JSON_LINES},
    {"help", 'h', 0, OPT_HELP},
    {"version", 'V', 0, OPT_VERSION},
};

#define OPT_COUNT (sizeof(opt_table) / sizeof(opt_table[0]))

/* The parse state: the result being built and what an error message needs
 * to name the option.
 */
typedef struct parser {
  cli_args_t *args;
  size_t npaths;
  size_t ninclude;
  size_t nexclude;
  const char *zst_by;     /* the option that last enabled zst */
  const char *formats_by; /* the option that last changed the formats */
  const char *gzip_level; /* --gzip-level's value, checked once the engine
                             is known (its range depends on it) */
} parser_t;

#if defined(__GNUC__)
#define ARGS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ARGS_PRINTF(a, b)
#endif

static cli_status_t fail(cli_args_t *args, cli_status_t status, const char *fmt,
                         ...) ARGS_PRINTF(3, 4);

static cli_status_t fail(cli_args_t *args, cli_status_t status, const char *fmt,
                         ...) {
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(args->err, sizeof(args->err), fmt, ap);
  va_end(ap);
  return status;
}

static cli_status_t set_formats(parser_t *p, const char *value) {
  cli_args_t *args = p->args;
  const char *s = value;
  unsigned formats = 0;
  char buf[80];

  /* Empty items are ignored ("gz,br," is fine); an empty list leaves no
   * format, which the final check reports.
   */
  while (*s != '\0') {
    size_t len = strcspn(s, ",");
    pc_format_t f;

    if (len > 0) {
      if (cli_format_from_name(s, len, &f))
        return fail(args, CLI_EUSAGE,
                    "unknown format '%s' in --formats: use gz, br, zst",
                    cli_shown(buf, sizeof(buf), s, len));
      formats |= PC_FMT_BIT(f);
    }
    s += len;
    if (*s == ',')
      s++;
  }
  args->opts.formats = formats;
  if (formats & PC_FMT_BIT(PC_ZST))
    p->zst_by = "--formats";
  return CLI_OK;
}

/* --skip-ext replaces the list each time it is given, like --formats. The
 * value is copied once and cut in place at the commas.
 */
static cli_status_t set_skip_ext(parser_t *p, const char *value) {
  cli_args_t *args = p->args;
  const char **list;
  char *buf;
  size_t n;

  if (cli_split_exts(value, &buf, &list, &n) != 0)
    return fail(args, CLI_ENOMEM, "out of memory");
  free(args->skip_buf);
  free(args->skip_ext);
  args->skip_buf = buf;
  args->skip_ext = list;
  args->opts.skip_ext = list; /* never NULL now: NULL means the default */
  args->opts.nskip_ext = n;
  return CLI_OK;
}

static cli_status_t bad_value(cli_args_t *args, const char *opt,
                              const char *value, const char *expected) {
  char buf[80];

  return fail(args, CLI_EUSAGE, "invalid %s '%s': expected %s", opt,
              cli_shown(buf, sizeof(buf), value, strlen(value)), expected);
}

/* bad_value() for a value that must be an integer lo..hi. */
static cli_status_t bad_range(cli_args_t *args, const char *opt,
                              const char *value, int lo, int hi) {
  char expected[48];

  snprintf(expected, sizeof(expected), "an integer %d..%d", lo, hi);
  return bad_value(args, opt, value, expected);
}

/* --gzip-engine NAME: one this build has. */
static cli_status_t set_gzip_engine(cli_args_t *args, const char *opt,
                                    const char *value) {
  int k;

  for (k = PC_GZIP_ZLIB; k <= PC_GZIP_ZOPFLI; k++)
    if (strcmp(value, pc_gzip_engine_name((pc_gzip_engine_t)k)) == 0)
      break;
  if (k > PC_GZIP_ZOPFLI)
    return bad_value(args, opt, value, "zlib, libdeflate or zopfli");
  if (!pc_gzip_engine_available((pc_gzip_engine_t)k))
    return fail(args, CLI_ENOZSTD,
                "--gzip-engine %s: this build of precompress lacks it "
                "(install lib%s-dev and rebuild)",
                value, k == PC_GZIP_ZOPFLI ? "zopfli" : "deflate");
  args->opts.gzip_engine = (pc_gzip_engine_t)k;
  return CLI_OK;
}

/* --shard K/N, 1 <= K <= N: shard K of N. --shard auto or auto/N: K (and
 * N) from the CI engine's environment, read by main() (shard_env.h), not
 * here: the parse depends on argv alone. The last --shard given counts.
 */
static cli_status_t set_shard(cli_args_t *args, const char *opt,
                              const char *value) {
  const char *q = value;
  uint64_t k = 0, count = 0;

  if (strncmp(value, "auto", 4) == 0 && (value[4] == '\0' || value[4] == '/')) {
    q = value + 4;
    if (*q == '/') {
      q++;
      if (cli_parse_u64(&q, &count) || *q != '\0' || count < 1 || count > 65536)
        return bad_value(args, opt, value,
                         "auto/N with 1 <= N <= 65536, or K/N");
    }
    args->shard_auto = 1;
    args->shard_auto_count = (uint32_t)count;
    args->opts.shard_index = 0;
    args->opts.shard_count = 0;
    return CLI_OK;
  }
  if (cli_parse_u64(&q, &k) || *q++ != '/' || cli_parse_u64(&q, &count) ||
      *q != '\0' || count < 1 || count > 65536 || k < 1 || k > count)
    return bad_value(args, opt, value,
                     "K/N with 1 <= K <= N <= 65536, or auto[/N]");
  args->shard_auto = 0;
  args->opts.shard_index = (uint32_t)k;
  args->opts.shard_count = (uint32_t)count;
  return CLI_OK;
}

/* Applies a format, level or keep-rule option (or --skip-ext). *mine is
 * set to 0 for an option of another group.
 */
static cli_status_t apply_format(parser_t *p, const opt_def_t *def,
                                 const char *opt, const char *value,
                                 int *mine) {
  cli_args_t *args = p->args;
  pc_options_t *o = &args->opts;
  long n;

  switch (def->id) {
  case OPT_NO_GZIP:
    o->formats &= ~PC_FMT_BIT(PC_GZ);
    p->formats_by = "--no-gzip";
    break;
  case OPT_NO_BROTLI:
    o->formats &= ~PC_FMT_BIT(PC_BR);
    p->formats_by = "--no-brotli";
    break;
  case OPT_ZSTD:
    o->formats |= PC_FMT_BIT(PC_ZST);
    p->zst_by = "--zstd";
    p->formats_by = "--zstd";
    break;
  case OPT_FORMATS:
    p->formats_by = "--formats";
    return set_formats(p, value);
  case OPT_GZIP_LEVEL:
    p->gzip_level = value;
    break;
  case OPT_GZIP_ENGINE:
    return set_gzip_engine(args, opt, value);
  case OPT_BROTLI_QUALITY:
  case OPT_ZSTD_LEVEL: {
    /* The library's ranges (pc_level_range()). */
    pc_format_t f = def->id == OPT_BROTLI_QUALITY ? PC_BR : PC_ZST;
    int lo = 0, hi = 0;
    pc_level_range(f, PC_GZIP_ZLIB, &lo, &hi, NULL);
    if (cli_parse_int_range(value, lo, hi, &n))
      return bad_range(args, opt, value, lo, hi);
    o->level[f] = (int)n;
    break;
  }
  case OPT_MAX_RATIO:
    if (cli_parse_ratio(value, &o->ratio_num, &o->ratio_den))
      return bad_value(args, opt, value,
                       "a decimal 0 < R <= 1, at most 9 decimals");
    break;
  case OPT_MIN_SIZE:
    if (cli_parse_size(value, &o->min_size))
      return bad_value(args, opt, value, "a byte count such as 512 or 4k");
    break;
  case OPT_SKIP_EXT:
    return set_skip_ext(p, value);
  default:
    *mine = 0;
    break;
  }
  return CLI_OK;
}

/* Applies a cache option (--cache-*). *mine is set to 0 for another. */
static cli_status_t apply_cache(parser_t *p, const opt_def_t *def,
                                const char *opt, const char *value, int *mine) {
  cli_args_t *args = p->args;
  pc_options_t *o = &args->opts;
  long n;

  switch (def->id) {
  case OPT_CACHE_DIR:
    o->cache_dir = value;
    break;
  case OPT_CACHE_MAX_SIZE:
    if (cli_parse_size(value, &o->cache_max_size))
      return bad_value(args, opt, value, "a byte count such as 512M or 2G");
    break;
  case OPT_CACHE_URL:
    o->cache_url = value;
    break;
  case OPT_CACHE_AUTH_FILE:
    args->cache_auth_file = value;
    break;
  case OPT_CACHE_URL_READ_ONLY:
    o->cache_url_read_only = 1;
    break;
  case OPT_CACHE_URL_TIMEOUT:
    if (cli_parse_int_range(value, 1, 3600, &n))
      return bad_range(args, opt, value, 1, 3600);
    o->cache_url_timeout = (unsigned)n;
    break;
  default:
    *mine = 0;
    break;
  }
  return CLI_OK;
}

/* Applies a selection, cache, work or manifest option. *mine is set to 0
 * for an option of another group.
 */
static cli_status_t apply_work(parser_t *p, const opt_def_t *def,
                               const char *opt, const char *value, int *mine) {
  cli_args_t *args = p->args;
  pc_options_t *o = &args->opts;
  long n;

  switch (def->id) {
  case OPT_INCLUDE:
    args->include[p->ninclude++] = value;
    o->include = args->include;
    o->ninclude = p->ninclude;
    break;
  case OPT_EXCLUDE:
    args->exclude[p->nexclude++] = value;
    o->exclude = args->exclude;
    o->nexclude = p->nexclude;
    break;
  case OPT_FOLLOW:
    o->follow = 1;
    break;
  case OPT_FORCE:
    o->force = 1;
    break;
  case OPT_FSYNC:
    o->fsync = 1;
    break;
  case OPT_SHARD:
    return set_shard(args, opt, value);
  case OPT_JOBS:
    if (cli_parse_int_range(value, 1, PC_JOBS_MAX, &n))
      return bad_range(args, opt, value, 1, PC_JOBS_MAX);
    o->jobs = (unsigned)n;
    break;
  case OPT_MEMORY_LIMIT:
    /* 0 is "no limit" here, as with xz --memlimit=0; the library's 0 is
     * "the machine's default", which is what leaving the option out gives.
     */
    if (cli_parse_size(value, &o->memory_limit))
      return bad_value(args, opt, value,
                       "a byte count such as 512M or 2G (0: no limit)");
    if (o->memory_limit == 0)
      o->memory_limit = PC_MEMORY_UNLIMITED;
    break;
  case OPT_MANIFEST:
    if (*value == '\0')
      return fail(args, CLI_EUSAGE, "%s needs a file name", opt);
    o->manifest = value;
    break;
  case OPT_FILES_FROM:
    args->files_from = value;
    break;
  case OPT_OUTPUT_DIR:
    if (*value == '\0')
      return fail(args, CLI_EUSAGE, "%s needs a directory name", opt);
    o->output_dir = value;
    break;
  case OPT_DRY_RUN:
    o->dry_run = 1;
    break;
  case OPT_CHECK:
    args->check = 1;
    o->dry_run = 1;
    break;
  default:
    *mine = 0;
    break;
  }
  return CLI_OK;
}

/* Applies an output or action option: the last group, every option left
 * is one.
 */
static cli_status_t apply_output(parser_t *p, const opt_def_t *def,
                                 const char *opt, const char *value) {
  cli_args_t *args = p->args;

  switch (def->id) {
  case OPT_QUIET:
    args->quiet = 1;
    break;
  case OPT_VERBOSE:
    args->verbose = 1;
    break;
  case OPT_PROGRESS:
    if (strcmp(value, "auto") == 0)
      args->progress = CLI_PROGRESS_AUTO;
    else if (strcmp(value, "always") == 0)
      args->progress = CLI_PROGRESS_ALWAYS;
    else if (strcmp(value, "never") == 0)
      args->progress = CLI_PROGRESS_NEVER;
    else
      return bad_value(args, opt, value, "auto, always or never");
    break;
  case OPT_JSON:
    args->json = 1;
    break;
  case OPT_JSON_LINES:
    args->json_lines = 1;
    break;
  case OPT_HELP: /* "-h" short, "--help" whole */
    args->action = opt[1] == '-' ? CLI_ACTION_HELP : CLI_ACTION_HELP_SHORT;
    break;
  case OPT_VERSION:
    args->action = CLI_ACTION_VERSION;
    break;
  default:
    break;
  }
  return CLI_OK;
}

/* Applies a delta option (docs/deltas.md); *mine is 0 for any other. */
static cli_status_t apply_delta(parser_t *p, const opt_def_t *def,
                                const char *opt, const char *value, int *mine) {
  cli_args_t *args = p->args;
  pc_options_t *o = &args->opts;

  switch (def->id) {
  case OPT_DICTIONARY_FROM: /* the library checks DIR (and at most 8) */
    args->dicts[o->n_dict_dirs++] = value;
    o->dict_dirs = args->dicts;
    break;
  case OPT_DICTIONARY_NAME:
    args->dict_names[o->n_dict_names++] = value;
    o->dict_names = args->dict_names;
    break;
  case OPT_DJANGO_MANIFEST: /* the --dictionary-from before it's */
    if (o->n_dict_dirs == 0)
      return fail(args, CLI_EUSAGE, "%s: give it after its --dictionary-from",
                  opt);
    args->dict_manifests[o->n_dict_dirs - 1] = value;
    o->dict_manifests = args->dict_manifests;
    break;
  case OPT_DELTAS:
    if (cli_parse_deltas(value, &o->deltas))
      return bad_value(args, opt, value, "a list of dcb, dcz");
    break;
  default:
    *mine = 0;
    break;
  }
  return CLI_OK;
}

/* Applies one option. opt is the spelling used, for messages. */
static cli_status_t apply(parser_t *p, const opt_def_t *def, const char *opt,
                          const char *value) {
  cli_status_t st;
  int mine = 1;

  st = apply_format(p, def, opt, value, &mine);
  if (mine)
    return st;
  mine = 1;
  st = apply_work(p, def, opt, value, &mine);
  if (mine)
    return st;
  mine = 1;
  st = apply_cache(p, def, opt, value, &mine);
  if (mine)
    return st;
  mine = 1;
  st = apply_delta(p, def, opt, value, &mine);
  if (mine)
    return st;
  return apply_output(p, def, opt, value);
}

static const opt_def_t *find_long(const char *name, size_t len) {
  size_t i;

  for (i = 0; i < OPT_COUNT; i++)
    if (strlen(opt_table[i].name) == len &&
        memcmp(opt_table[i].name, name, len) == 0)
      return &opt_table[i];
  return NULL;
}

static const opt_def_t *find_short(char c) {
  size_t i;

  for (i = 0; i < OPT_COUNT; i++)
    if (opt_table[i].short_name != 0 && opt_table[i].short_name == c)
      return &opt_table[i];
  return NULL;
}

/* "--name", "--name=value" or "--name value". *i moves past a value taken
 * from the next argument.
 */
static cli_status_t parse_long(parser_t *p, int argc, char *const *argv,
                               int *i) {
  const char *arg = argv[*i];
  const char *name = arg + 2;
  const char *eq = strchr(name, '=');
  size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
  const opt_def_t *def;
  const char *value = NULL;
  char opt[48];
  char buf[80];

  def = find_long(name, len);
  if (def == NULL)
    return fail(p->args, CLI_EUSAGE, "unknown option '--%s'",
                cli_shown(buf, sizeof(buf), name, len));
  snprintf(opt, sizeof(opt), "--%s", def->name);

  if (def->has_value) {
    if (eq != NULL)
      value = eq + 1;
    else if (*i + 1 < argc)
      value = argv[++*i];
    else
      return fail(p->args, CLI_EUSAGE, "option '%s' needs a value", opt);
  } else if (eq != NULL) {
    return fail(p->args, CLI_EUSAGE, "option '%s' takes no value", opt);
  }
  return apply(p, def, opt, value);
}

/* "-qn", "-j4", "-j 4", "-qj4": flags bundle, and an option taking a value
 * takes the rest of the argument or else the next one.
 */
static cli_status_t parse_short(parser_t *p, int argc, char *const *argv,
                                int *i) {
  const char *s = argv[*i] + 1;
  cli_status_t status = CLI_OK;

  for (; *s != '\0' && status == CLI_OK; s++) {
    const opt_def_t *def = find_short(*s);
    char opt[3] = {'-', *s, '\0'};
    char buf[8];

    if (def == NULL)
      return fail(p->args, CLI_EUSAGE, "unknown option '-%s'",
                  cli_shown(buf, sizeof(buf), s, 1));
    if (!def->has_value) {
      status = apply(p, def, opt, NULL);
      continue;
    }
    if (s[1] != '\0')
      return apply(p, def, opt, s + 1);
    if (*i + 1 >= argc)
      return fail(p->args, CLI_EUSAGE, "option '%s' needs a value", opt);
    return apply(p, def, opt, argv[++*i]);
  }
  return status;
}

/* The checks that need every option first. */
static cli_status_t finish(parser_t *p) {
  cli_args_t *args = p->args;

  if (args->quiet && args->verbose)
    return fail(args, CLI_EUSAGE,
                "-q/--quiet and -v/--verbose cannot be used together");
  /* --json-lines is a stream of JSON objects: a -v line or a second
   * summary object among them would break a reader.
   */
  if (args->json_lines && args->verbose)
    return fail(args, CLI_EUSAGE,
                "--json-lines and -v/--verbose cannot be used together");
  if (args->json_lines && args->json)
    return fail(args, CLI_EUSAGE,
                "--json-lines and --json cannot be used together");
  if (args->opts.formats == 0)
    return fail(args, CLI_EUSAGE, "no output format left after %s",
                p->formats_by != NULL ? p->formats_by : "the options");
  if ((args->opts.formats & PC_FMT_BIT(PC_ZST)) && !pc_format_available(PC_ZST))
    return fail(args, CLI_ENOZSTD,
                "%s: this build of precompress lacks zstd support "
                "(install libzstd-dev and rebuild)",
                p->zst_by != NULL ? p->zst_by : "--zstd");
  {
    /* gzip's level: 1..9 for zlib, 1..12 for libdeflate (default 12, the
     * reason to pick it), iterations 1..1000 for zopfli (default 15, its
     * own default): the library's table (pc_level_range()).
     */
    pc_gzip_engine_t e = args->opts.gzip_engine;
    int lo = 0, hi = 0, dflt = 0;
    long n;
    pc_level_range(PC_GZ, e, &lo, &hi, &dflt);
    if (p->gzip_level == NULL)
      args->opts.level[PC_GZ] = dflt;
    else if (cli_parse_int_range(p->gzip_level, lo, hi, &n)) {
      char q[64];
      return fail(args, CLI_EUSAGE,
                  "--gzip-level: '%s' is not an integer %d..%d (with the %s "
                  "engine)",
                  cli_shown(q, sizeof(q), p->gzip_level, strlen(p->gzip_level)),
                  lo, hi, pc_gzip_engine_name(e));
    } else
      args->opts.level[PC_GZ] = (int)n;
  }
  if (p->npaths == 0)
    return fail(args, CLI_EUSAGE, "no PATH given");
  {
    /* What only the library knows (at most 8 --dictionary-from, the name
     * templates, what this build can write): asked here, so that a parse
     * that returns CLI_OK hands main() options pc_run() takes.
     */
    const char *what = NULL;
    if (pc_options_check(&args->opts, &what) != 0)
      return fail(args, CLI_EUSAGE, "%s",
                  what != NULL ? what : "invalid options");
  }
  return CLI_OK;
}

cli_status_t cli_args_parse(cli_args_t *args, int argc, char *const *argv) {
  parser_t p;
  cli_status_t status = CLI_OK;
  size_t cap;
  int only_paths = 0;
  int i;

  memset(args, 0, sizeof(*args));
  pc_options_init(&args->opts);
  memset(&p, 0, sizeof(p));
  p.args = args;

  /* No list can hold more entries than there are arguments. */
  cap = argc > 0 ? (size_t)argc : 1;
  args->paths = calloc(cap, sizeof(*args->paths));
  args->include = calloc(cap, sizeof(*args->include));
  args->exclude = calloc(cap, sizeof(*args->exclude));
  args->dicts = calloc(3 * cap, sizeof(*args->dicts));
  args->dict_names = args->dicts != NULL ? args->dicts + cap : NULL;
  args->dict_manifests = args->dicts != NULL ? args->dicts + 2 * cap : NULL;
  if (args->paths == NULL || args->include == NULL || args->exclude == NULL ||
      args->dicts == NULL)
    return fail(args, CLI_ENOMEM, "out of memory");

  for (i = 1; i < argc && status == CLI_OK; i++) {
    const char *arg = argv[i];

    if (only_paths || arg[0] != '-' || arg[1] == '\0') {
      /* A lone "-" is a name like any other: there is no stdin mode. */
      args->paths[p.npaths++] = arg;
    } else if (strcmp(arg, "--") == 0) {
      only_paths = 1;
    } else if (arg[1] == '-') {
      status = parse_long(&p, argc, argv, &i);
    } else {
      status = parse_short(&p, argc, argv, &i);
    }
    /* --help and --version end the parse: what follows does not matter. */
    if (status == CLI_OK && args->action != CLI_ACTION_RUN)
      return CLI_OK;
  }
  if (status != CLI_OK)
    return status;

  args->opts.paths = args->paths;
  args->opts.npaths = p.npaths;
  return finish(&p);
}

void cli_args_free(cli_args_t *args) {
  if (args->cache_secret != NULL) {
    volatile char *c = args->cache_secret;
    while (*c != '\0')
      *c++ = '\0';
    free(args->cache_secret);
    args->cache_secret = NULL;
  }
  free(args->paths);
  free(args->include);
  free(args->exclude);
  free(args->dicts);
  args->dicts = args->dict_names = args->dict_manifests = NULL;
  args->opts.dict_dirs = args->opts.dict_names = args->opts.dict_manifests =
      NULL;
  free(args->skip_ext);
  free(args->skip_buf);
  free(args->only);
  free(args->only_buf);
  args->only = NULL;
  args->only_buf = NULL;
  args->opts.only = NULL;
  args->paths = NULL;
  args->include = NULL;
  args->exclude = NULL;
  args->skip_ext = NULL;
  args->skip_buf = NULL;
  args->opts.paths = NULL;
  args->opts.include = NULL;
  args->opts.exclude = NULL;
  args->opts.skip_ext = NULL;
}
