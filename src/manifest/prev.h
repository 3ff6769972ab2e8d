/* The manifest of an earlier run, read back so that files unchanged since
 * then are skipped without being read.
 */
#ifndef PC_PREV_H
#define PC_PREV_H

#include "common/common.h"
#include "manifest/spec.h"

typedef struct pc__prev pc__prev_t;

typedef struct pc__prev_rec {
  uint64_t size;
  int64_t mtime_ns;
  pc_output_t out[PC_NFORMATS]; /* state KEPT (with size) or RATIO */
  uint32_t ndeltas;             /* its deltas: pc__prev_deltas() */
  size_t delta0;
} pc__prev_rec_t;

/* One delta a record lists (docs/deltas.md): made, or why not. */
typedef struct pc__prev_delta {
  uint8_t format; /* pc_delta_format_t */
  uint8_t skip;   /* pc_delta_skip_t */
  uint32_t from;  /* index of its --dictionary-from DIR */
  uint64_t size;  /* kept: the output's size */
  uint64_t dict_size;
  int64_t dict_mtime_ns;
  size_t dict_off; /* the dictionary's path, in the table's names */
  unsigned char sha256[32];
} pc__prev_delta_t;

/* The deltas of a record of p: rec->ndeltas of them. */
const pc__prev_delta_t *pc__prev_deltas(const pc__prev_t *p,
                                        const pc__prev_rec_t *rec);

/* The dictionary's path of a delta of p (owned by p). */
const char *pc__prev_dict(const pc__prev_t *p, const pc__prev_delta_t *d);

/* Reads the manifest at `path` (pc__json_read_file(): a regular file, or
 * PC_ENOTREG) and parses it with pc__prev_parse(). No file there is no
 * manifest: *out NULL and 0.
 */
int pc__prev_load(pc__prev_t **out, const char *path, const pc__spec_t *spec,
                  char *const *labels, uint32_t nlabels, unsigned threads,
                  size_t min_part);

/* Parses text[0..len), an earlier manifest. *out is NULL (and 0 returned)
 * when it was written with settings other than this run's `spec` in a
 * field the table marks PC__SPEC_SAME (formats, levels, gzip engine,
 * ratio, output directory: spec.h), or with other "dictionaries" than
 * spec's dict_dirs (none when it has no deltas): its records then say nothing
 * about what this run would write. Records of roots other than `labels` are
 * ignored. Text that is not JSON is
 * PC_EBADMANIFEST, JSON that is not a manifest (not an object, no
 * "precompress": 1, no "files" list) PC_ENOTMANIFEST: never silently
 * trusted in part. Up to `threads` threads parse the "files" list, each at
 * least `min_part` bytes of it (PC__PREV_MIN_PART; tests pass less).
 *
 * With out NULL, no table is made (spec may be NULL): the text is only
 * checked. *ours (when
 * not NULL) receives 1 when the whole text is JSON and an object with a
 * "precompress" member, a manifest of any version (what a manifest name
 * may be replaced over), else 0.
 */
int pc__prev_parse(pc__prev_t **out, int *ours, const char *text, size_t len,
                   const pc__spec_t *spec, char *const *labels,
                   uint32_t nlabels, unsigned threads, size_t min_part);

/* About 10,000 lines: a thread costs far less than parsing them. */
#define PC__PREV_MIN_PART ((size_t)1 << 20)

/* The record of (root, path), or NULL. */
const pc__prev_rec_t *pc__prev_find(const pc__prev_t *p, uint32_t root,
                                    const char *path);

/* pc__prev_find() for a caller that asks in the manifest's own order (the
 * walk: a directory's names sorted, as the manifest's paths are): the
 * record after the one last found, *hint, is looked at first.
 */
const pc__prev_rec_t *pc__prev_next(const pc__prev_t *p, uint32_t root,
                                    const char *path, size_t *hint);

/* The path of a record pc__prev_find() returned: NUL-terminated, owned by
 * `p`, valid until pc__prev_free(p).
 */
const char *pc__prev_path(const pc__prev_t *p, const pc__prev_rec_t *rec);

/* The records, in no order: how many there are (0 for p NULL), the k-th
 * with its root, and the k of a record pc__prev_find() returned. */
size_t pc__prev_count(const pc__prev_t *p);
const pc__prev_rec_t *pc__prev_at(const pc__prev_t *p, size_t k,
                                  uint32_t *root);
size_t pc__prev_index(const pc__prev_t *p, const pc__prev_rec_t *rec);

void pc__prev_free(pc__prev_t *p);

#endif /* PC_PREV_H */
