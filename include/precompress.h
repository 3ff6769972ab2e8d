/* precompress: write FILE.gz, FILE.br and FILE.zst beside static files.
 *
 * The interface of the precompress program's engine, the library its CLI
 * (src/cli) drives, and the only header the CLI includes. Every name here
 * starts with pc_ (macros PC_); the library's internal ones with pc__. The
 * library never prints and never exits: functions return 0 or a negative
 * errno-style code (pc_strerror() names it), and a run reports per file through
 * callbacks made on the calling thread.
 *
 * The library uses libuv's process-global threadpool. pc_run() sets
 * UV_THREADPOOL_SIZE before the pool's first use; an application that uses
 * libuv's pool itself owns that knob and should set it first.
 */
#ifndef PRECOMPRESS_H
#define PRECOMPRESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PC_BUILDING) && defined(__GNUC__)
#define PC_EXTERN __attribute__((visibility("default")))
#else
#define PC_EXTERN
#endif

/* The library is the program's engine, not a product of its own: it is
 * linked into the precompress program (and the tests), never installed,
 * and makes no promise across versions. A program and its library are one
 * release, so the structs here carry no size or version of their own and
 * fields go where they belong.
 */
/* The one place the version is written: meson.build, the Python package and
 * dist/release.sh read these three lines (dist/version.py). */
#define PC_VERSION_MAJOR 0
#define PC_VERSION_MINOR 10
#define PC_VERSION_PATCH 0
#define PC_VERSION_NUMBER                                                      \
  (PC_VERSION_MAJOR * 10000 + PC_VERSION_MINOR * 100 + PC_VERSION_PATCH)
#define PC__QUOTE(x) #x
#define PC__EXPAND_AND_QUOTE(x) PC__QUOTE(x)
#define PC_VERSION_STRING                                                      \
  PC__EXPAND_AND_QUOTE(PC_VERSION_MAJOR.PC_VERSION_MINOR.PC_VERSION_PATCH)

/* Error codes. System errors are negated errno values (-ENOENT, ...), the
 * same numbers libuv uses on Unix. The library's own start at -4000.
 */
#define PC_ERRNO_MAP(XX)                                                       \
  XX(ECHANGED, -4001, "file changed while being read")                         \
  XX(ECODEC, -4002, "compression library failed")                              \
  XX(ENOTREG, -4003, "not a regular file")                                     \
  XX(EOUTDIR, -4004, "output name is taken by a directory")                    \
  XX(ENOZSTD, -4005, "built without zstd support")                             \
  XX(EINTERRUPTED, -4006, "interrupted")                                       \
  XX(EBADMANIFEST, -4007, "not a precompress manifest (invalid JSON)")         \
  XX(ENOENGINE, -4008, "built without that gzip engine")                       \
  XX(ENOTMANIFEST, -4009, "valid JSON but not a precompress manifest")         \
  XX(EREFUSE, -4010, "refusing to replace: not a precompress manifest")        \
  XX(EOUTNAME, -4011,                                                          \
     "refusing to write a manifest under an output's name (.gz, .br, .zst)")   \
  XX(EUNSAFE, -4012, "refusing a cache another user owns or others can write") \
  XX(ESTORE, -4013, "not a precompress cache store, or a damaged one")         \
  XX(EOUTLINK, -4014,                                                          \
     "a symlink or non-directory in the output directory's tree "              \
     "(never followed)")                                                       \
  XX(EOUTSAME, -4015,                                                          \
     "the output directory is a PATH itself (omit --output-dir to write "      \
     "in place)")                                                              \
  XX(EOUTTWICE, -4016,                                                         \
     "a file of an earlier PATH has the same path: its outputs in the "        \
     "output directory are that file's")                                       \
  XX(ENODCB, -4017, "built without brotli 1.1's dictionaries (.dcb)")          \
  XX(EDICTWINDOW, -4018, "the dictionary is over the RFC 9842 window limit")   \
  XX(ENOWRITE, -4019,                                                          \
     "cannot write outputs in this directory: its files are not compressed")   \
  XX(EDJMANIFEST, -4020,                                                       \
     "not a Django staticfiles.json manifest (version 1.x, \"paths\": "        \
     "{name: hashed name}): its files are paired by name only")                \
  XX(EUNSAFELINK, -4021,                                                       \
     "refusing a path through a symlink another account owns or can "          \
     "replace (give the directory it leads to)")                               \
  XX(EDJMEMORY, -4022,                                                         \
     "Django staticfiles.json not read: over its share of the memory limit "   \
     "(a quarter, for all of a run's): its files are paired by name only")     \
  XX(ENOCURL, -4023, "built without libcurl: no remote cache (--cache-url)")

enum {
#define PC__ERR_ENUM(name, val, msg) PC_##name = (val),
  PC_ERRNO_MAP(PC__ERR_ENUM)
#undef PC__ERR_ENUM
      PC_ERR_MIN_ = -4100
};

/* Message for any code this library returns (never NULL; thread-safe). */
PC_EXTERN const char *pc_strerror(int err);

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 where there is
 * none: a stray continuation byte, an overlong form, a UTF-16 surrogate, a
 * code point past U+10FFFF, or a sequence cut short. *cp (when not NULL)
 * receives the code point. The manifest's rule: a name the manifest keeps
 * exact is the one a caller's escaping may keep exact too.
 */
PC_EXTERN size_t pc_utf8_len(const unsigned char *s, size_t n, uint32_t *cp);

/* Output formats, in the order the manifest and the summary list them. */
typedef enum pc_format {
  PC_GZ = 0,
  PC_BR = 1,
  PC_ZST = 2,
  PC_NFORMATS = 3
} pc_format_t;

#define PC_FMT_BIT(f) (1u << (f))

/* File extension of a format without the dot ("gz", "br", "zst"). */
PC_EXTERN const char *pc_format_ext(pc_format_t f);

/* The deflate implementation behind .gz. zlib (the default) gives bytes
 * identical to whitenoise's; libdeflate (levels 1..12) and zopfli (the
 * level is its iteration count) give smaller files for more CPU. The last
 * two are build options and compress each file from one whole buffer.
 */
typedef enum pc_gzip_engine {
  PC_GZIP_ZLIB = 0,
  PC_GZIP_LIBDEFLATE = 1,
  PC_GZIP_ZOPFLI = 2
} pc_gzip_engine_t;

/* The levels format `f` takes, and its default, into *min, *max and *def
 * (each may be NULL). `e` matters for PC_GZ alone: gzip 1..9 (default 9)
 * with zlib, 1..12 (12) with libdeflate, 1..1000 iterations (15) with
 * zopfli; brotli 0..11 (11); zstd 1..19 (19). pc_options_init() sets the
 * defaults for zlib: a program that picks another engine sets
 * level[PC_GZ] from here. 0, or -EINVAL for an unknown format or engine.
 */
PC_EXTERN int pc_level_range(pc_format_t f, pc_gzip_engine_t e, int *min,
                             int *max, int *def);

/* "zlib", "libdeflate", "zopfli". */
PC_EXTERN const char *pc_gzip_engine_name(pc_gzip_engine_t e);
/* 1 if this build has the engine. */
PC_EXTERN int pc_gzip_engine_available(pc_gzip_engine_t e);

/* Why a file got no output at all. PC_SKIP_NONE means it was compressed
 * (each format then says whether its output was kept).
 */
typedef enum pc_skip {
  PC_SKIP_NONE = 0,
  PC_SKIP_EXTENSION,   /* on the skip list, or a .gz/.br/.zst name */
  PC_SKIP_EXCLUDED,    /* --exclude matched, or --include given and none did */
  PC_SKIP_EMPTY,       /* 0 bytes */
  PC_SKIP_MIN_SIZE,    /* smaller than --min-size */
  PC_SKIP_SPECIAL,     /* FIFO, socket or device: never opened */
  PC_SKIP_BROKEN_LINK, /* a symlink whose target cannot be reached */
  PC_SKIP_RATIO,       /* compressed, and no format saved enough (summary) */
  PC_SKIP_LINK_OWNER,  /* a symlink the rule does not follow: another
                          account's, to a file not its owner's and not
                          beside or above it in the PATH (never opened) */
  PC_SKIP_MAX_
} pc_skip_t;

/* Name used in the manifest and the summary ("extension", "ratio", ...). */
PC_EXTERN const char *pc_skip_name(pc_skip_t s);

/* What became of a file: one outcome, derived once by the library. */
typedef enum pc_outcome {
  PC_OUTCOME_COMPRESSED = 0, /* compressed, at least one output kept */
  PC_OUTCOME_COPIED,    /* outputs copied from a file with the same bytes */
  PC_OUTCOME_CACHED,    /* outputs taken from the cache */
  PC_OUTCOME_UNCHANGED, /* outputs current per the earlier manifest: the
                           file was not read; out[] is from that manifest */
  PC_OUTCOME_SKIPPED,   /* no output kept: pc_file_t.skip says why */
  PC_OUTCOME_FAILED,    /* pc_file_t.err says why */
  PC_OUTCOME_MAX_
} pc_outcome_t;

/* "compressed", "copied", "cached", "unchanged", "skipped", "failed": -v's
 * first word and --json-lines' "status".
 */
PC_EXTERN const char *pc_outcome_name(pc_outcome_t o);

/* What happened to one format's output of one file. */
typedef enum pc_out_state {
  PC_OUT_OFF = 0, /* format not enabled, or the file was not compressed */
  PC_OUT_KEPT,    /* output written (or, in a dry run, would be) */
  PC_OUT_RATIO,   /* compressed but not kept: saved too little */
  PC_OUT_FAILED   /* the file failed; see pc_file_t.err */
} pc_out_state_t;

/* What a run does (or, in a dry run, would do) to the output's name. */
typedef enum pc_action {
  PC_ACT_NONE = 0, /* nothing there and nothing wanted */
  PC_ACT_CREATE,   /* output missing: written */
  PC_ACT_REPLACE,  /* output present but stale (mtime or size differs) */
  PC_ACT_REFRESH,  /* output present and current: rewritten all the same */
  PC_ACT_REMOVE    /* output present but no longer kept: removed */
} pc_action_t;

/* Delta formats (RFC 9842): brotli and zstd against a dictionary. */
typedef enum pc_delta_format {
  PC_DCB = 0,
  PC_DCZ = 1,
  PC_NDELTAS = 2
} pc_delta_format_t;

#define PC_DELTA_BIT(f) (1u << (f))

/* The most --dictionary-from directories a run takes. */
#define PC_DICT_DIRS_MAX 8

/* 1 when this build writes delta format f: dcz with zstd, dcb with
 * brotli >= 1.1.
 */
PC_EXTERN int pc_delta_available(pc_delta_format_t f);

/* File extension of a delta format without the dot ("dcb", "dcz"). */
PC_EXTERN const char *pc_delta_ext(pc_delta_format_t f);

/* Why a delta was not kept. */
typedef enum pc_delta_skip {
  PC_DSKIP_NONE = 0,  /* kept */
  PC_DSKIP_RATIO,     /* not small enough beside the best plain output */
  PC_DSKIP_IDENTICAL, /* the predecessor is the file: nothing to send */
  PC_DSKIP_WINDOW,    /* the dictionary is over the format's window */
  PC_DSKIP_LINK,      /* the predecessor is a symlink: never followed */
  PC_DSKIP_ERROR,     /* the predecessor could not be read (err says why) */
  PC_DSKIP_SAME,      /* the predecessor has an earlier DIR's bytes: that
                         DIR's delta serves it */
  PC_DSKIP_PRIVATE,   /* a reader of the file's outputs could not read the
                         predecessor: never read */
  PC_DSKIP_LARGE,     /* the predecessor is far larger than the file: never
                         read (docs/deltas.md says how much) */
  PC_DSKIP_AMBIGUOUS, /* two or more files of the predecessor's directory
                         have the file's key: none is taken */
  PC_DSKIP_NAME,      /* the delta's name would be over NAME_MAX */
  PC_DSKIP_CHANGED,   /* the predecessor grew after it was listed: not read
                         (the memory estimate went by its listed size) */
  PC_DSKIP_MAX_
} pc_delta_skip_t;

/* "ratio", "identical", "window", "link", "error", "same", "private",
 * "large", "ambiguous", "name", "changed"; NULL for PC_DSKIP_NONE. */
PC_EXTERN const char *pc_delta_skip_name(pc_delta_skip_t s);

typedef struct pc_output {
  pc_out_state_t state;
  pc_action_t action;
  uint64_t size; /* compressed size in bytes, when state is KEPT */
} pc_output_t;

/* One delta of a file (pc_file_t.deltas). */
typedef struct pc_delta {
  pc_delta_format_t format;
  pc_delta_skip_t skip;     /* PC_DSKIP_NONE when kept */
  int err;                  /* PC_DSKIP_ERROR: the code met reading the
                               dictionary (counted in totals.errors) */
  pc_action_t action;       /* what was done to FILE.<id>.ext */
  uint64_t size;            /* the output's size, when kept */
  uint32_t from;            /* index in pc_options_t.dict_dirs */
  const char *dictionary;   /* the predecessor's path below that directory */
  unsigned char sha256[32]; /* the predecessor's SHA-256 */
} pc_delta_t;

/* One file's record, passed to on_file. Pointers are valid only during the
 * callback.
 */
typedef struct pc_file {
  const char *root;     /* the PATH this file was found under */
  const char *path;     /* relative to root; the base name for a file PATH */
  const char *fullpath; /* the name on disk */
  uint64_t size;
  int64_t mtime_ns; /* 0 when unknown (special files, broken links) */
  pc_outcome_t outcome;
  pc_skip_t skip; /* PC_OUTCOME_SKIPPED's reason (PC_SKIP_RATIO: compressed,
                     nothing kept), else PC_SKIP_NONE */
  int err;        /* PC_OUTCOME_FAILED's code, else 0 */
  const char *err_path; /* the name the error is about (source or output) */
  pc_output_t out[PC_NFORMATS];
  int alone; /* its encoders' estimate passed the memory limit
                by itself: it ran with no other file beside it */
  /* Its deltas against its predecessors (--dictionary-from), ndeltas of
   * them: one per format and distinct dictionary, kept or not.
   */
  const struct pc_delta *deltas;
  unsigned ndeltas;
  /* With a remote cache (pc_options_t.cache_url): the formats
   * (PC_FMT_BIT()s) taken from it, and those whose entry there was
   * rejected (not this file's output: compressed here instead).
   */
  unsigned remote_hits;
  unsigned remote_rejected;
} pc_file_t;

/* Live figures for a progress display. Totals grow while the walk runs. */
typedef struct pc_progress {
  uint64_t files_done;  /* files finished (compressed, skipped or failed) */
  uint64_t files_total; /* files found so far */
  uint64_t bytes_done;  /* source bytes finished, of files to compress */
  uint64_t bytes_total; /* source bytes found so far, of files to compress */
  int walk_done;        /* 1 once the totals are final */
} pc_progress_t;

/* Totals of a run: pc_run() fills every field. */
typedef struct pc_totals {
  uint64_t files;      /* files recorded (everything but our own outputs) */
  uint64_t bytes;      /* their total size */
  uint64_t compressed; /* files compressed, at least one output kept */
  uint64_t unchanged;  /* files left alone: unchanged since the manifest */
  uint64_t deduped;    /* of `compressed`: outputs copied from a file with
                          the same bytes instead of compressing again */
  uint64_t cached;     /* of `compressed`: results taken from the cache */
  uint64_t skipped[PC_SKIP_MAX_]; /* files with no output, by reason */
  uint64_t failed;                /* files that failed */
  uint64_t errors;  /* other failures: a directory that cannot be read,
                       the manifest or the cache (see on_error) */
  uint64_t changes; /* outputs created, replaced as stale, or removed */
  uint64_t removed; /* outputs removed (or, dry run, to remove) */
  int signo;        /* the signal pc_stop() named when it stopped the
                       run (see pc_run()), else 0 */
  struct {
    uint64_t files;     /* outputs kept */
    uint64_t bytes_in;  /* source bytes of those files */
    uint64_t bytes_out; /* output bytes kept */
  } fmt[PC_NFORMATS];
  uint64_t mem_limit;   /* the memory limit the run kept to (bytes), or
                           PC_MEMORY_UNLIMITED */
  uint64_t mem_peak;    /* the most the units in flight were estimated to
                           take at once (encoders and buffers, bytes) */
  uint64_t ran_alone;   /* files that ran alone, over the limit by
                           themselves */
  const char *err_path; /* when pc_run() returned an error about a name
                           (the manifest's), that name, else NULL */
  struct {
    uint64_t files;     /* deltas kept */
    uint64_t bytes_in;  /* source bytes of those files */
    uint64_t bytes_out; /* delta bytes kept */
  } delta[PC_NDELTAS];
  uint64_t mem_dicts; /* of mem_peak: what the --dictionary-from listings
                         and the Django manifests held through the run */
  /* The remote cache (pc_options_t.cache_url), when there is one. */
  struct {
    int on;            /* a remote cache was used */
    uint64_t lookups;  /* entries asked for */
    uint64_t hits;     /* answered, and decoded to their source */
    uint64_t stored;   /* entries the server took */
    uint64_t rejected; /* answers that were not their key's entry or did
                          not decode to their source: compressed here */
    uint64_t lost;     /* lookups and stores the server's failure (or the
                          store queue's bound, or the end of the run)
                          cost: not made, failed or dropped */
    int failed;        /* it failed and was turned off (or its storing) */
    const char *why;   /* the first failure, or NULL; valid until the next
                          pc_run() */
  } remote;
} pc_totals_t;

typedef struct pc_options {
  /* What to compress: directories (walked) and files. Not copied; must stay
   * valid for the duration of pc_run().
   */
  const char *const *paths;
  size_t npaths;

  unsigned formats;             /* PC_FMT_BIT(PC_GZ) | ...; default gz and br */
  int level[PC_NFORMATS];       /* see pc_level_range(): gzip 1..9 (9),
                                      brotli 0..11 (11), zstd 1..19 (19) */
  pc_gzip_engine_t gzip_engine; /* PC_GZIP_ZLIB; gzip level 1..12 with
                                   libdeflate, 1..1000 iterations with zopfli */

  /* Keep rule: keep an output iff size > 0 and out * ratio_den <= in *
   * ratio_num. Default 95/100, whitenoise's 0.95, exact in integers.
   */
  uint64_t ratio_num;
  uint64_t ratio_den;
  uint64_t min_size; /* files smaller than this get nothing (1) */

  /* Skip list: extensions without the dot, matched case-insensitively at the
   * end of the name. NULL means the default list (pc_default_skip_ext()).
   */
  const char *const *skip_ext;
  size_t nskip_ext;

  /* Globs against the path relative to its root; '*' and '?' stop at '/',
   * '**' spans directories, a glob without '/' is tried on the base name.
   */
  const char *const *include;
  size_t ninclude;
  const char *const *exclude;
  size_t nexclude;

  int follow;    /* enter symlinked directories */
  unsigned jobs; /* files compressed at once, at most PC_JOBS_MAX;
                    0 = pc_default_jobs() */
  /* Write the JSON manifest here (NULL: none). When it exists already and
   * was written with the same formats, levels and ratio, a file whose size
   * and mtime match its record and whose outputs are present with the
   * recorded sizes and the source's mtime is not read again.
   *
   * The name may hold nothing, a symlink (replaced as a name, never
   * written through or read), an empty regular file, or a regular file
   * that is a precompress manifest (a JSON object with a "precompress"
   * member); a rewritten one keeps its permission bits. Anything else (a
   * device, a FIFO, a directory, a source file, other JSON), or a name
   * ending in .gz, .br or .zst, makes pc_run() return PC_EREFUSE or
   * PC_EOUTNAME before any work starts. A dry run writes nothing, so it
   * refuses nothing either.
   */
  const char *manifest;
  int force; /* ignore the earlier manifest: compress every file */
  /* Content cache: results stored by content hash and the options that
   * shape the bytes, reused across runs and trees (NULL: none). Trimmed to
   * cache_max_size bytes (0: no limit), least recently used first.
   */
  const char *cache_dir;
  uint64_t cache_max_size;

  /* Sharding: this run takes the files whose relative path hashes (XXH3)
   * to shard_index - 1 modulo shard_count, so N machines each take a
   * deterministic part; pc_merge_manifests() joins their manifests.
   * shard_count 0: every file.
   */
  uint32_t shard_index; /* 1..shard_count */
  uint32_t shard_count;
  int dry_run; /* do everything but write, replace or remove */
  int fsync;   /* fsync each output before its rename and its
                  directory after, and the manifest likewise */

  /* Callbacks, all made on the thread that called pc_run(). */
  void *data;
  /* Each file once, in completion order. */
  void (*on_file)(void *data, const pc_file_t *file);
  /* Often while files finish, and at least every 200 ms. */
  void (*on_progress)(void *data, const pc_progress_t *progress);
  /* Errors not about one file (a directory that cannot be read, the
   * manifest). path may be NULL.
   */
  void (*on_error)(void *data, const char *path, int err);

  /* What the files in flight may take together, by their encoders' and
   * buffers' estimates (bytes). A file waits only while starting it would
   * pass the limit; one that passes it by itself runs alone. 0 means
   * pc_default_memory_limit(); PC_MEMORY_UNLIMITED, no limit.
   */
  uint64_t memory_limit;
  /* When not NULL, the manifest is handed to this function, in pieces and
   * in order, instead of being written to a file (`manifest` must then be
   * NULL; no earlier manifest is read). It returns 0, or a negative code
   * that ends the manifest: on_error then gets that code with path NULL.
   * Called on the thread that called pc_run(), after the last file.
   */
  int (*manifest_write)(void *data, const void *buf, size_t len);
  /* Write the outputs under this directory instead of beside each file
   * (NULL: in place): PATH/REL gets DIR/REL.gz (REL: the path below its
   * PATH; a file PATH's base name). Nothing is written inside the PATHs;
   * stale outputs are removed under DIR only. DIR is made when missing
   * (not by a dry run); a symlink or non-directory met below it is never
   * followed (that file fails with PC_EOUTLINK). With several PATHs, a
   * file whose path below its PATH a file found before under another one
   * has too fails with PC_EOUTTWICE (the outputs are the first one's). DIR
   * the same directory as a PATH is PC_EOUTSAME, DIR not a directory
   * -ENOTDIR, both before any work.
   */
  const char *output_dir;

  /* RFC 9842 deltas (docs/deltas.md): earlier releases' trees, the most
   * recent first (at most PC_DICT_DIRS_MAX; NULL or 0: no deltas). Each
   * file gets FILE.<id>.dcb/.dcz against its predecessor in each, where
   * <id> is the first 16 hex digits of the predecessor's SHA-256.
   */
  const char *const *dict_dirs;
  unsigned n_dict_dirs;
  /* Name templates that say where a build tool put a content hash
   * ("[name].[hash:12].[ext]"); NULL or 0: the defaults.
   */
  const char *const *dict_names;
  unsigned n_dict_names;
  /* PC_DELTA_BIT()s: the delta formats to write; 0 means every one this
   * build can write (pc_delta_available()).
   */
  unsigned deltas;
  /* Django staticfiles.json manifests of the dict_dirs (docs/deltas.md),
   * parallel to dict_dirs: dict_manifests[k] is the manifest of
   * dict_dirs[k], NULL for DIR/staticfiles.json when there is one. NULL:
   * NULL for each. A file of PATH that PATH's staticfiles.json names by a
   * hashed name is paired with the file the DIR's manifest gives the same
   * name, before the name rules.
   */
  const char *const *dict_manifests;
  /* The files to take, `nonly` of them, by their path below the one PATH,
   * a directory (NULL: every file the walk finds there). The walk enters
   * only the directories on their paths and takes no other file: the rest
   * of the tree is neither compressed, recorded nor removed. A name the
   * walk does not find is an error about it (on_error, -ENOENT). Each is
   * relative, with no empty, "." or ".." component.
   */
  const char *const *only;
  size_t nonly;

  /* Remote cache (docs/remote-cache.md): the entries of the content cache
   * on a server speaking the Bazel HTTP cache layout, GET and PUT of
   * cache_url/ac/<64 hex> (NULL: none). http:// or https://, without
   * user:password@, query or fragment. Looked up after cache_dir (a hit
   * is stored there too); results are stored in the background. Every
   * entry fetched is decoded and compared with its source before it is
   * used. A server that fails costs at most its timeouts: the run goes
   * on without it (totals.remote). PC_ENOCURL in a build without libcurl.
   */
  const char *cache_url;
  const char *cache_token;    /* a bearer token, or NULL */
  const char *cache_userpass; /* "user:password" (basic), or NULL */
  int cache_url_read_only;    /* look up only, never store */
  unsigned cache_url_timeout; /* seconds to connect, and without a byte
                                 moving (0: 5); a transfer may take ten
                                 times as long */
} pc_options_t;

/* Fills every field with its default. */
PC_EXTERN void pc_options_init(pc_options_t *opts);

/* The default skip list (NULL-terminated); *n receives its length. */
PC_EXTERN const char *const *pc_default_skip_ext(size_t *n);

/* The most files compressed at once (pc_options_t.jobs). */
#define PC_JOBS_MAX 1024

/* CPUs this process may use: the affinity mask, capped by a cgroup CPU
 * quota (v2 cpu.max or v1 cfs_quota/period), at least 1, at most
 * PC_JOBS_MAX.
 */
PC_EXTERN unsigned pc_default_jobs(void);

/* No memory limit (pc_options_t.memory_limit, pc_memlimit_t.limit). */
#define PC_MEMORY_UNLIMITED UINT64_MAX

/* The default memory limit and why. */
typedef struct pc_memlimit {
  uint64_t limit;     /* half of `found`; PC_MEMORY_UNLIMITED if none */
  uint64_t found;     /* the smallest bound that applies (bytes), or 0 */
  const char *source; /* static: "cgroup memory.max", "cgroup memory.high",
                         "cgroup v1 memory.limit_in_bytes", "RLIMIT_AS",
                         "RLIMIT_DATA", "MemAvailable", or "none" */
} pc_memlimit_t;

/* The memory a run may use by default: half of the smallest of this
 * process's cgroup v2 memory.max and memory.high (its own cgroup and every
 * ancestor), the cgroup v1 memory.limit_in_bytes, RLIMIT_AS, RLIMIT_DATA and
 * /proc/meminfo's MemAvailable.
 */
PC_EXTERN void pc_default_memory_limit(pc_memlimit_t *m);

/* 1 if this build can write f. */
PC_EXTERN int pc_format_available(pc_format_t f);

/* The library's own version, as it was built: PC_VERSION_NUMBER and
 * PC_VERSION_STRING of the header it was built with, which a program may
 * compare with the header it was built against. Static storage.
 */
PC_EXTERN unsigned pc_version(void);
PC_EXTERN const char *pc_version_string(void);

/* Version strings of the libraries linked in ("zlib 1.2.13, brotli 1.0.9,
 * libuv 1.44.2, zstd 1.5.4"). Static storage.
 */
PC_EXTERN const char *pc_library_versions(void);

/* What the remote cache goes through ("libcurl 7.88.1 with OpenSSL/3.0.15"),
 * or NULL when this build has none (pc_options_t.cache_url is then
 * PC_ENOCURL). Static storage.
 */
PC_EXTERN const char *pc_remote_version(void);

/* Runs the whole job: walk, compress, write, manifest.
 *
 * Returns 0 when the run completed (files may still have failed: see
 * totals->failed and on_file), PC_EINTERRUPTED when pc_stop() stopped it
 * (totals then hold what was done, totals->signo the signal it named), or
 * another negative code when nothing could run (invalid options, -EBUSY:
 * another run is in progress, no loop, a manifest name it may not
 * replace: PC_EREFUSE, PC_EOUTNAME, or the error met reading what is
 * there, with totals->err_path set to the name). totals may be NULL.
 *
 * Signals. pc_run() installs no signal handler and changes no signal's
 * disposition: signals are the program's. To stop a run on SIGINT (and
 * SIGTERM, SIGHUP, SIGPIPE...), the program's own handler calls
 * pc_stop(), as the precompress program does. A write past RLIMIT_FSIZE
 * (`ulimit -f`) raises SIGXFSZ, which at its default action ends the
 * process: a program that would rather have that file fail with EFBIG
 * ignores SIGXFSZ first (the precompress program does, while it runs).
 *
 * One run at a time. libuv's threadpool, which pc_run() sizes and fills,
 * is the process's, so a call made while another pc_run() is in progress
 * (on any thread) returns -EBUSY at once and changes nothing. Every other
 * function here may be called from any thread at any time, also during a
 * run; the callbacks are made on the thread that called pc_run().
 *
 * What a run allocates, codec state included, is freed before it returns:
 * libuv's pool threads keep only their stacks.
 */
PC_EXTERN int pc_run(const pc_options_t *opts, pc_totals_t *totals);

/* Asks the run in progress to stop: no new file
 * starts, files being compressed stop at their next slice and remove
 * their temp files, the manifest is written marked "incomplete" (with the
 * earlier manifest's records of the files not reached), and
 * pc_run() returns PC_EINTERRUPTED with totals->signo set to `signo`
 * (0 when it is not above 0). Only the first request of a run counts.
 * Async-signal-safe, and callable from any thread; returns at once.
 * With no run in progress it does nothing: a stop is not kept for the
 * next run.
 */
PC_EXTERN void pc_stop(int signo);

/* Merges the manifests of the shards of one job (same options, same
 * roots, no file in two of them) into `out`, written atomically: the same
 * bytes one run over the whole tree writes. `out` may hold what
 * pc_options_t.manifest may (checked before any input is read; a
 * replaced file keeps its permission bits); each input must be a regular
 * file. Returns 0, PC_EBADMANIFEST (an input is not JSON),
 * PC_ENOTMANIFEST (an input is JSON but not a manifest), PC_ENOTREG (an
 * input is not a regular file), -EINVAL (inputs of different jobs),
 * -EEXIST (a file in two inputs), PC_EREFUSE or PC_EOUTNAME (`out` may not
 * be replaced) or an I/O error. *bad (when not NULL) receives the index of
 * the input at fault, or SIZE_MAX when the fault is with `out`.
 */
PC_EXTERN int pc_merge_manifests(const char *out, const char *const *in,
                                 size_t nin, size_t *bad);

/* pc_merge_manifests(), but the merged bytes go to `put`
 * (standard output for "merge-manifests -"), in blocks, only once every
 * input has been read and checked; no name is checked or replaced. A
 * non-zero return of `put` stops the merge and is returned (*bad is
 * then SIZE_MAX).
 */
PC_EXTERN int pc_merge_manifests_write(int (*put)(void *data, const void *buf,
                                                  size_t len),
                                       void *data, const char *const *in,
                                       size_t nin, size_t *bad);

/* Which server configuration pc_server_config() writes. */
typedef enum pc_conf {
  PC_CONF_NGINX_HTTP = 1,     /* nginx: the maps, for http {} */
  PC_CONF_NGINX_LOCATION = 2, /* nginx: `location ^~ PREFIX`, for server {} */
  PC_CONF_APACHE = 3, /* Apache httpd 2.4: for a <VirtualHost> (or the main
                         server), outside <Directory>; `prefix` has no ',' */
  PC_CONF_CADDY = 4   /* Caddy 2: a Caddyfile snippet for the site block,
                         beside file_server { precompressed } */
} pc_conf_t;

/* Writes to `put`, in blocks, once the whole manifest at `manifest` has
 * been read, a server configuration that serves the dictionary-compressed
 * outputs (.dcb, .dcz) its "deltas" list with the right Content-Encoding,
 * Content-Type and Vary, and offers each file it lists as compressed as a
 * dictionary (Use-As-Dictionary), the files being served at the URL
 * `prefix` + their path (`prefix` begins and ends with '/'). `dir`, NULL
 * for the server's document root at `prefix`, is the directory `prefix`
 * serves (Apache's `Alias prefix dir`, nginx's `alias`; not Caddy's):
 * absolute, of the characters a prefix has. Returns 0, PC_EBADMANIFEST (not
 * JSON), PC_ENOTMANIFEST (JSON, not a manifest), -EINVAL (a bad kind, prefix or
 * dir), -ENOMEM, an error reading the manifest, or the first non-zero
 * return of `put`.
 */
PC_EXTERN int pc_server_config(int (*put)(void *data, const void *buf,
                                          size_t len),
                               void *data, const char *manifest, pc_conf_t kind,
                               const char *prefix, const char *dir);

/* Validates options without running. Returns 0 or -EINVAL; *what, when not
 * NULL, receives a static phrase naming the bad field.
 */
PC_EXTERN int pc_options_check(const pc_options_t *opts, const char **what);

#ifdef __cplusplus
}
#endif

#endif /* PRECOMPRESS_H */
