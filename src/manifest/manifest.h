/* The manifest: its records, its schema, its writer (manifest.c) and its
 * one reader (manifest_read.c).
 *
 * The schema, in the order the writer puts it:
 *
 *   {"precompress": 1,              the version; 1 is the only one
 *    "incomplete": true,            only when the run was stopped
 *    "options": {...},              the run's settings (spec.h): the
 *                                   fields of pc__spec_fields, in its
 *                                   order, each under its key: the
 *                                   formats (a list, in pc_format_t
 *                                   order), each enabled format's level,
 *                                   the gzip engine (only when not zlib),
 *                                   max_ratio, min_size, output_dir (only
 *                                   with --output-dir, DIR as given)
 *    "roots": ["LABEL", ...],       only with more than one root
 *    "dictionaries": ["DIR", ...],  only with --dictionary-from, as given
 *    "files": [                     sorted by (root, path bytes)
 *      {"root": K,                  only with more than one root
 *       "path": "P",
 *       "path_hex": "HEX",          only when P is not UTF-8
 *       "size": N,
 *       "mtime_ns": T,              only when not 0
 *       "skipped": "REASON",        pc_skip_name()
 *       "gz": {"size": N} | {"skipped": "ratio"}, ...  per format written
 *       "deltas": [{"format": "dcz", "from": K, "dictionary": "P",
 *                   "sha256": "HEX", "size": N | "skipped": "WHY"}, ...]
 *                                   with a predecessor (docs/deltas.md)
 *       "error": "MESSAGE"},
 *      ...],
 *    "totals": {...}}               computed from the lines; never read
 *
 * The reader tells an absent key from a wrong one and judges nothing, so
 * each user decides what a manifest without a key means (prev.c: no
 * gzip_engine is zlib; merge.c: no min_size is not a manifest it can
 * merge), as it did before there was one reader.
 */
#ifndef PC_MANIFEST_H
#define PC_MANIFEST_H

#include "common/common.h"
#include "manifest/spec.h"

#include <sys/types.h>

/* A delta's predecessor as it was read: its size and mtime, what the
 * incremental check compares. The library's alone, so beside the public
 * pc_delta_t, one per delta; zero for a predecessor not read.
 */
typedef struct pc__dstat {
  uint64_t size;
  int64_t mtime_ns;
} pc__dstat_t;

/* One file's line in the manifest. */
typedef struct pc__rec {
  char *path;    /* relative to its root; owned unless `borrowed` */
  int borrowed;  /* path is the earlier manifest's (prev.c's, lives as long) */
  char *err_msg; /* owned; set only for lines read from a manifest */
  uint32_t root;
  pc_skip_t skip;
  int err;
  int unchanged;
  int deduped;
  int cached;
  int alone;
  unsigned remote_hits;     /* formats from the remote cache (this run's) */
  unsigned remote_rejected; /* formats whose remote entry was rejected */
  uint64_t size;
  int64_t mtime_ns;
  pc_output_t out[PC_NFORMATS];
  pc_delta_t *deltas;  /* owned (this run's lines only); their dictionary
                          names are the run's dictset's */
  pc__dstat_t *dstats; /* owned: deltas[k]'s predecessor as read */
  unsigned ndeltas;
} pc__rec_t;

/* What is at a manifest's name before one is written there. */
typedef struct pc__mold {
  int regular; /* a regular file: the fields below are its */
  dev_t dev;
  ino_t ino;
  mode_t mode;
  uint64_t size;
} pc__mold_t;

/* What a manifest says, whoever wrote it (a run, or a merge). */
typedef struct pc__mdoc {
  pc__spec_t spec;     /* its "options" */
  char *const *labels; /* root labels; printed when more than one */
  uint32_t nroots;
  pc__rec_t *recs; /* sorted in place */
  size_t nrecs;
  int incomplete;
  const char *const *dicts; /* --dictionary-from DIRs, as given */
  unsigned ndicts;
} pc__mdoc_t;

/* Where pc__manifest_write_doc() writes: a file at `path` (temp + rename,
 * left alone when it holds the same bytes already), or, with path NULL,
 * the caller's `write`.
 */
typedef struct pc__mdest {
  const char *path;
  int (*write)(void *data, const void *buf, size_t len);
  void *data;
  /* What pc__manifest_check() found at path, or NULL: checked again just
   * before writing, and should a regular file there have been replaced
   * since, looked at anew.
   */
  const pc__mold_t *checked;
  int sync; /* fsync the file and its directory */
} pc__mdest_t;

/* 0 when a manifest may be written at `path` (precompress.h, at
 * pc_options_t.manifest):
 * PC_EOUTNAME for a name ending in .gz, .br or .zst (any case); 0 for
 * nothing there or a symlink (replaced as a name, never read); for a
 * regular file, 0 when it is empty or a precompress manifest of any
 * version; PC_EREFUSE for anything else, or the error met looking. *old
 * receives what is there. When `text` is not NULL, a regular file's bytes
 * are appended to it and its content is not judged here: the caller does,
 * with pc__manifest_ours(), when it parses them anyway.
 *
 * With `writing` 0 (a dry run: nothing will be replaced), the name is not
 * judged, and what is neither nothing, a symlink nor a regular file is
 * PC_ENOTREG: the earlier manifest is read from regular files only.
 */
int pc__manifest_check(const char *path, int writing, pc__mold_t *old,
                       pc__buf_t *text);

/* 0 when a manifest may replace a regular file of these bytes: it is
 * empty, or `ours` (pc__prev_parse()). Else PC_EREFUSE.
 */
int pc__manifest_ours(size_t len, int ours);

/* Writes the document (its records sorted in place) to `to`. 0 or a
 * negative code.
 */
int pc__manifest_write_doc(pc__mdoc_t *d, const pc__mdest_t *to);

/* The order of "files": by root, then path bytes (strcmp). A qsort()
 * comparator of pc__rec_t; merge.c finds a file two shards both
 * list by it too.
 */
int pc__manifest_cmp_rec(const void *a, const void *b);

/* "options", decoded into a spec field by field (pc__spec_fields): bit k
 * of `given` when field k's key is there, of `valid` when its value is of
 * the field's kind, and then only is the field in `spec` (else 0). The
 * kinds: formats a list (the formats it names; other entries ignored), a
 * level an integer an int holds, the engine a string naming one
 * (pc_gzip_engine_name()), max_ratio a number, min_size an integer (taken
 * as unsigned), output_dir a string. Nothing is judged here: each user has
 * its own rules, with what follows for them.
 */
typedef struct pc__mopt {
  pc__spec_t spec; /* strings point into the header (valid while it is) */
  unsigned given, valid;
  const char *engine; /* the engine's value when a string, else NULL */
  double ratio;       /* max_ratio as written (when valid) */
  int ratio_exact;    /* it is a decimal of at most 9 places, in spec as
                         ratio_num/ratio_den (the shortest such) */
} pc__mopt_t;

/* The bit of field k of pc__spec_fields in pc__mopt_t.given and .valid. */
#define PC__SPEC_BIT(k) (1u << (k))

/* The top-level members of a manifest (for each key the last value given,
 * as in a jansson object). Owned by whoever holds it; pc__mhead_free().
 */
typedef struct pc__mhead {
  int json;        /* the whole text is JSON (known only when the read ends) */
  int has_version; /* a "precompress" member, of any value */
  int incomplete;  /* "incomplete": true */
  int options;     /* "options" is an object */
  pc__mopt_t opt;  /* decoded from it */
  int has_roots;   /* a "roots" member */
  int roots_list;  /* it is a list; nroots entries */
  size_t nroots;
  /* The values themselves (jansson's), for the functions below. */
  struct json_t *j_version, *j_incomplete, *j_opt, *j_roots, *j_dicts;
} pc__mhead_t;

void pc__mhead_free(pc__mhead_t *h);

/* Entry k of "roots" when it is a string, else NULL (valid while h is). */
const char *pc__mhead_label(const pc__mhead_t *h, size_t k);

/* 1 when a and b have the same "options" (an object in both) and the same
 * "roots" or none, value for value: shards of one job.
 */
int pc__mhead_same_job(const pc__mhead_t *a, const pc__mhead_t *b);

/* Entry k of "dictionaries" when it is a string, else NULL (valid while h
 * is).
 */
const char *pc__mhead_dict(const pc__mhead_t *h, size_t k);

/* 1 when the manifest's "dictionaries" are dirs[0..n) (as given, in that
 * order); no "dictionaries" is n == 0.
 */
int pc__mhead_same_dicts(const pc__mhead_t *h, const char *const *dirs,
                         unsigned n);

/* One line of "files", decoded, as pc__mopt_t: absent and wrong kinds are
 * told apart, nothing is judged. The strings are the reader's, valid only
 * during the call that receives the line; they hold no NUL byte (jansson
 * refuses \u0000), so their lengths are their strlen().
 */
typedef struct pc__mline {
  int object; /* the line is an object; every other field is 0 if not */
  int has_root, root_int;
  int64_t root;
  const char *path; /* "path" when a string, else NULL */
  size_t path_len;
  const char *hex; /* "path_hex" when a string, else NULL */
  size_t hex_len;
  int size_int;
  int64_t size;
  int has_mtime, mtime_int;
  int64_t mtime_ns;
  int has_skipped;     /* "skipped" is given */
  const char *skipped; /* its value when a string, else NULL */
  int has_error;
  const char *error;
  struct {
    int has;    /* the format's key is given */
    int object; /* its value is an object; then: */
    int sized;  /* its "size" is an integer above 0 (the output kept) */
    int ratio;  /* its "skipped" is a string (not kept) */
    int64_t size;
  } out[PC_NFORMATS];
  int has_deltas;        /* "deltas" is given */
  struct json_t *deltas; /* its value when a list, else NULL: entries
                            through pc__mline_delta() */
} pc__mline_t;

/* One entry of a line's "deltas" (docs/deltas.md), decoded as a line is:
 * absent and wrong kinds told apart, nothing judged; strings valid while
 * the line is.
 */
typedef struct pc__mdelta {
  int object; /* the entry is an object; every other field 0 if not */
  const char *format, *dictionary, *sha256, *skipped; /* when strings */
  int from_int, size_int, dsize_int, dmtime_int;      /* integers given */
  int64_t from, size, dict_size, dict_mtime_ns;
} pc__mdelta_t;

/* How many entries the line's "deltas" list has (0: none, or no list). */
size_t pc__mline_ndeltas(const pc__mline_t *l);

/* Entry k of the line's "deltas" into *d. */
void pc__mline_delta(const pc__mline_t *l, size_t k, pc__mdelta_t *d);

/* What the reader does with a manifest's text. */
typedef struct pc__mread {
  /* Called when a "files" list is reached, with the header read so far,
   * and again at the end whenever a member after it changed the header or
   * another "files" came: the last call is always with the final header,
   * for the "files" that counts. *want 1 to have its lines (each to
   * line()), 0 to have them only checked. 0, or a negative code that ends
   * the read. NULL: only checked.
   */
  int (*files)(void *data, const pc__mhead_t *h, int *want);
  /* One line, to `sink`: `data`, or a part's (below). 0 or a negative
   * code that ends the read.
   */
  int (*line)(void *sink, const pc__mline_t *l);
  /* Optional (NULL: one thread): a long "files" list is read in parts on
   * up to `threads` threads, each at least `min_part` bytes, each into a
   * sink of its own from part_new(data) (NULL: out of memory). The parts
   * that turn out right are given to part_join(data, part) in order, each
   * once; every part is then freed with part_free(). What data receives is
   * what one pass on one thread would have given it.
   */
  void *(*part_new)(void *data);
  int (*part_join)(void *data, void *part);
  void (*part_free)(void *part);
  void *data;
  unsigned threads;
  size_t min_part;
} pc__mread_t;

/* Reads text[0..len), a manifest, streaming: jansson parses each key,
 * top-level value and line of "files" on its own, and a line is handed on
 * and freed before the next is parsed (see manifest_read.c). With rd NULL
 * the text is only checked.
 *
 * Text that is not JSON (a NUL byte anywhere included) is PC_EBADMANIFEST,
 * JSON that is not a manifest (not an object, "precompress" not 1, no
 * "files" list) PC_ENOTMANIFEST; else 0, or the first negative code of a
 * callback, or -ENOMEM. When `head` is not NULL, it receives the final
 * header, also on failure (all 0 when the text is no object): the caller
 * frees it with pc__mhead_free().
 */
int pc__manifest_read(const char *text, size_t len, const pc__mread_t *rd,
                      pc__mhead_t *head);

#endif /* PC_MANIFEST_H */
