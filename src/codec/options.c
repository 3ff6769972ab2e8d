/* Defaults, validation and the names the manifest and the CLI share. */
#include "common/common.h"
#include "codec/dictname.h"

#include <brotli/encode.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <uv.h>
#include <zlib.h>
#if PC_HAVE_ZSTD
#include <zstd.h>
#endif
#if PC_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

/* whitenoise's 27 (Compressor.SKIP_COMPRESS_EXTENSIONS), then formats that
 * are compressed already. One table: --help and the man page print it.
 */
static const char *const default_skip_ext[] = {
    "jpg",  "jpeg", "png",  "gif",  "webp", "zip",  "gz",    "tgz",  "bz2",
    "tbz",  "xz",   "br",   "swf",  "flv",  "woff", "woff2", "3gp",  "3gpp",
    "asf",  "avi",  "m4v",  "mov",  "mp4",  "mpeg", "mpg",   "webm", "wmv",
    "avif", "jxl",  "heic", "heif", "zst",  "zstd", "7z",    "rar",  "lz4",
    "lzma", "mp3",  "ogg",  "oga",  "opus", "m4a",  "aac",   "flac", NULL,
};

static const char *const skip_names[PC_SKIP_MAX_] = {
    [PC_SKIP_NONE] = "none",
    [PC_SKIP_EXTENSION] = "extension",
    [PC_SKIP_EXCLUDED] = "excluded",
    [PC_SKIP_EMPTY] = "empty",
    [PC_SKIP_MIN_SIZE] = "min-size",
    [PC_SKIP_SPECIAL] = "special",
    [PC_SKIP_BROKEN_LINK] = "broken-link",
    [PC_SKIP_RATIO] = "ratio",
    [PC_SKIP_LINK_OWNER] = "link-owner",
};

static const char *const engine_names[] = {"zlib", "libdeflate", "zopfli"};

const char *pc_gzip_engine_name(pc_gzip_engine_t e) {
  return (unsigned)e < PC__ARRAY_SIZE(engine_names) ? engine_names[e] : "?";
}

int pc_gzip_engine_available(pc_gzip_engine_t e) {
  switch (e) {
  case PC_GZIP_ZLIB:
    return 1;
  case PC_GZIP_LIBDEFLATE:
    return PC_HAVE_LIBDEFLATE;
  case PC_GZIP_ZOPFLI:
    return PC_HAVE_ZOPFLI;
  default:
    return 0;
  }
}

const char *const *pc_default_skip_ext(size_t *n) {
  if (n != NULL)
    *n = PC__ARRAY_SIZE(default_skip_ext) - 1;
  return default_skip_ext;
}

const char *pc_skip_name(pc_skip_t s) {
  return (unsigned)s < PC_SKIP_MAX_ ? skip_names[s] : "?";
}

const char *pc_outcome_name(pc_outcome_t o) {
  static const char *const names[PC_OUTCOME_MAX_] = {
      "compressed", "copied", "cached", "unchanged", "skipped", "failed"};

  return (unsigned)o < PC_OUTCOME_MAX_ ? names[o] : "?";
}

int pc_format_available(pc_format_t f) {
  if (f == PC_ZST)
    return PC_HAVE_ZSTD;
  return f == PC_GZ || f == PC_BR;
}

/* The levels each format takes: gzip by engine (pc_gzip_engine_t order),
 * then brotli and zstd. The one table of them: pc_options_check() holds
 * options to it, and the CLI asks pc_level_range() for its ranges and its
 * per-engine defaults.
 */
static const struct level_range {
  int lo, hi, dflt;
  const char *bad; /* pc_options_check()'s message */
} level_ranges[] = {
    {1, 9, 9, "gzip level must be 1..9"},
    {1, 12, 12, "gzip level must be 1..12 with libdeflate"},
    {1, 1000, 15, "gzip level (zopfli iterations) must be 1..1000"},
    {0, 11, 11, "brotli quality must be 0..11"},
    {1, 19, 19, "zstd level must be 1..19"},
};

static const struct level_range *level_range(pc_format_t f,
                                             pc_gzip_engine_t e) {
  if (f == PC_GZ)
    return (unsigned)e <= PC_GZIP_ZOPFLI ? &level_ranges[e] : NULL;
  if (f == PC_BR || f == PC_ZST)
    return &level_ranges[PC_GZIP_ZOPFLI + f];
  return NULL;
}

int pc_level_range(pc_format_t f, pc_gzip_engine_t engine, int *lo, int *hi,
                   int *dflt) {
  const struct level_range *l = level_range(f, engine);

  if (l == NULL)
    return -EINVAL;
  if (lo != NULL)
    *lo = l->lo;
  if (hi != NULL)
    *hi = l->hi;
  if (dflt != NULL)
    *dflt = l->dflt;
  return 0;
}

static void options_defaults(pc_options_t *o) {
  int f;

  memset(o, 0, sizeof(*o));
  o->formats = PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR);
  for (f = 0; f < PC_NFORMATS; f++)
    pc_level_range((pc_format_t)f, PC_GZIP_ZLIB, NULL, NULL, &o->level[f]);
  o->ratio_num = 95;
  o->ratio_den = 100;
  o->min_size = 1;
  o->cache_max_size = (uint64_t)1 << 30;
}

void pc_options_init(pc_options_t *o) { options_defaults(o); }

/* What is wrong with the options of deltas (docs/deltas.md), or NULL. */
static const char *deltas_check(const pc_options_t *o) {
  unsigned k, want = o->deltas;
  int f;

  if (o->dict_dirs == NULL || o->n_dict_dirs > PC_DICT_DIRS_MAX)
    return "at most " PC__STR(
        PC_DICT_DIRS_MAX) " --dictionary-from directories";
  for (k = 0; k < o->n_dict_dirs; k++)
    if (o->dict_dirs[k] == NULL || o->dict_dirs[k][0] == '\0')
      return "--dictionary-from needs a directory name";
  for (k = 0; o->dict_manifests != NULL && k < o->n_dict_dirs; k++)
    if (o->dict_manifests[k] != NULL && o->dict_manifests[k][0] == '\0')
      return "--django-manifest needs a file name";
  if (o->n_dict_names > 0 && o->dict_names == NULL)
    return "--dictionary-name needs a template";
  for (k = 0; k < o->n_dict_names; k++)
    if (o->dict_names[k] == NULL || pc__dictname_check(o->dict_names[k]) != 0)
      return "--dictionary-name: a template is [name], then [hash], "
             "[hash:N] or [b64hash:N] (N 4..64), then [ext] at the end";
  if ((want >> PC_NDELTAS) != 0)
    return "no such delta format";
  for (f = 0; f < PC_NDELTAS; f++)
    if ((want & PC_DELTA_BIT(f)) && !pc_delta_available((pc_delta_format_t)f))
      return f == PC_DCB ? "this build cannot write .dcb (it needs brotli 1.1)"
                         : "this build has no zstd support";
  if (want == 0 && !pc_delta_available(PC_DCB) && !pc_delta_available(PC_DCZ))
    return "this build can write no delta (zstd or brotli 1.1 needed)";
  for (f = 0; f < PC_NDELTAS; f++) {
    pc_format_t pf = f == PC_DCB ? PC_BR : PC_ZST;
    const struct level_range *l = level_range(pf, PC_GZIP_ZLIB);
    if ((want == 0 || (want & PC_DELTA_BIT(f))) &&
        pc_delta_available((pc_delta_format_t)f) &&
        (o->level[pf] < l->lo || o->level[pf] > l->hi))
      return l->bad;
  }
  return NULL;
}

/* A name of pc_options_t.only: relative, no empty, "." or ".." component
 * (the walk's paths have none, so it could never be found). */
static int only_name_ok(const char *s) {
  if (s == NULL || s[0] == '/')
    return 0;
  for (;;) {
    size_t n = strcspn(s, "/");
    if (n == 0 || (n == 1 && s[0] == '.') ||
        (n == 2 && s[0] == '.' && s[1] == '.'))
      return 0;
    if (s[n] == '\0')
      return 1;
    s += n + 1;
  }
}

static const char *only_check(const pc_options_t *o) {
  size_t k;

  if (o->npaths != 1)
    return "--files-from takes one PATH: the directory the names are below";
  for (k = 0; k < o->nonly; k++)
    if (!only_name_ok(o->only[k]))
      return "--files-from: a name that is empty, absolute, or has a . or .. "
             "component";
  return NULL;
}

/* What is wrong with the remote cache's options, or NULL. The URL is
 * http:// or https:// with a host, and holds no credentials (they would
 * be in argv, messages and process listings), no query and no fragment
 * (the entries' names are appended to it).
 */
static const char *remote_check(const pc_options_t *o) {
  const char *u = o->cache_url, *host, *end;

  if (!PC_HAVE_CURL)
    return "--cache-url: this build has no libcurl (built with "
           "-Dcurl=disabled, -Dstatic=true, or without libcurl4-openssl-dev)";
  if (strncmp(u, "http://", 7) == 0)
    host = u + 7;
  else if (strncmp(u, "https://", 8) == 0)
    host = u + 8;
  else
    return "--cache-url: a URL starting with http:// or https://";
  end = host + strcspn(host, "/");
  if (end == host)
    return "--cache-url: the URL has no host";
  if (memchr(host, '@', (size_t)(end - host)) != NULL)
    return "--cache-url: credentials go in PRECOMPRESS_CACHE_TOKEN, "
           "PRECOMPRESS_CACHE_AUTH or --cache-auth-file, not in the URL";
  if (strpbrk(u, "?# \t\r\n") != NULL)
    return "--cache-url: a URL without query, fragment or white space";
  if (o->cache_token != NULL && o->cache_userpass != NULL)
    return "--cache-url: a bearer token or basic credentials, not both";
  if (o->cache_userpass != NULL && strchr(o->cache_userpass, ':') == NULL)
    return "--cache-url: basic credentials are user:password";
  if (o->cache_url_timeout > 3600)
    return "--cache-url-timeout: at most 3600 seconds";
  return NULL;
}

int pc_options_check(const pc_options_t *o, const char **what) {
  const char *bad = NULL;
  int f;

  if (o->npaths == 0 || o->paths == NULL)
    bad = "no PATH given";
  else if ((o->formats & ((1u << PC_NFORMATS) - 1)) == 0 ||
           (o->formats >> PC_NFORMATS) != 0)
    bad = "no output format enabled";
  else if (o->ratio_den == 0 || o->ratio_num == 0 ||
           o->ratio_num > o->ratio_den)
    bad = "max ratio must be above 0 and at most 1";
  else if (o->jobs > PC_JOBS_MAX)
    bad = "jobs must be at most " PC__STR(PC_JOBS_MAX);
  else if (o->shard_count > 0 &&
           (o->shard_index < 1 || o->shard_index > o->shard_count))
    bad = "shard must be K/N with 1 <= K <= N";
  else if (o->manifest != NULL && o->manifest_write != NULL)
    bad = "a manifest file and a manifest function cannot both be given";
  else if (o->output_dir != NULL && o->output_dir[0] == '\0')
    bad = "--output-dir needs a directory name";
  if (bad == NULL && !pc_gzip_engine_available(o->gzip_engine))
    bad = "this build lacks that gzip engine";
  for (f = 0; bad == NULL && f < PC_NFORMATS; f++) {
    const struct level_range *l = level_range((pc_format_t)f, o->gzip_engine);
    if (!(o->formats & PC_FMT_BIT(f)))
      continue;
    if (!pc_format_available((pc_format_t)f))
      bad = "this build has no zstd support";
    else if (o->level[f] < l->lo || o->level[f] > l->hi)
      bad = l->bad;
  }
  if (bad == NULL && o->n_dict_dirs > 0)
    bad = deltas_check(o);
  if (bad == NULL && o->only != NULL)
    bad = only_check(o);
  if (bad == NULL && o->cache_url != NULL)
    bad = remote_check(o);
  if (what != NULL)
    *what = bad;
  return bad == NULL ? 0 : -EINVAL;
}

static char versions[224];
static uv_once_t versions_once = UV_ONCE_INIT;

static void versions_fill(void) {
  uint32_t bv = BrotliEncoderVersion();
  int n = snprintf(versions, sizeof(versions),
                   "zlib %s, brotli %u.%u.%u, libuv %s", zlibVersion(),
                   (unsigned)(bv >> 24), (unsigned)((bv >> 12) & 0xfff),
                   (unsigned)(bv & 0xfff), uv_version_string());
#if PC_HAVE_ZSTD
  if (n > 0 && (size_t)n < sizeof(versions))
    n += snprintf(versions + n, sizeof(versions) - (size_t)n, ", zstd %s",
                  ZSTD_versionString());
#endif
#if PC_HAVE_LIBDEFLATE
  if (n > 0 && (size_t)n < sizeof(versions))
    n += snprintf(versions + n, sizeof(versions) - (size_t)n, ", libdeflate %s",
                  LIBDEFLATE_VERSION_STRING);
#endif
#if PC_HAVE_ZOPFLI
  if (n > 0 && (size_t)n < sizeof(versions))
    n += snprintf(versions + n, sizeof(versions) - (size_t)n, ", zopfli");
#endif
  /* Which RFC 9842 deltas this build writes (docs/deltas.md). */
  if (n > 0 && (size_t)n < sizeof(versions))
    n += snprintf(versions + n, sizeof(versions) - (size_t)n, "; deltas:%s%s",
                  pc_delta_available(PC_DCB) ? " dcb" : "",
                  pc_delta_available(PC_DCZ) ? " dcz" : " none");
  (void)n;
}

unsigned pc_version(void) { return PC_VERSION_NUMBER; }

const char *pc_version_string(void) { return PC_VERSION_STRING; }

const char *pc_library_versions(void) {
  uv_once(&versions_once, versions_fill);
  return versions;
}
