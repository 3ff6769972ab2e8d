/* The settings that shape a run's outputs: which formats, how each is
 * made, which outputs are kept, where they go. One struct, filled once
 * from the options, read by every user:
 *
 *   - the jobs (pc__cfg_t.spec): what they make and keep;
 *   - the manifest's writer and reader: its "options" (manifest.h);
 *   - the incremental check: an earlier manifest's records hold only for
 *     the same settings (prev.c);
 *   - merge-manifests: the shards' settings, written back (merge.c);
 *   - the cache: an output's key holds the settings that shape its bytes
 *     (cache.c).
 *
 * And one table, pc__spec_fields (manifest_read.c, beside the reader that
 * decodes by it), with each field's key in the manifest's "options", in
 * the order the writer puts them, and what each field is to the users.
 */
#ifndef PC_SPEC_H
#define PC_SPEC_H

#include "common/common.h"

typedef struct pc__spec {
  unsigned formats;              /* PC_FMT_BIT()s */
  int level[PC_NFORMATS];        /* per format; only enabled ones count */
  pc_gzip_engine_t gzip_engine;  /* counts only with gzip enabled */
  uint64_t ratio_num, ratio_den; /* the keep rule: out * den <= in * num */
  uint64_t min_size;             /* smaller files get no output */
  const char *output_dir;        /* --output-dir as given (not copied), or
                                    NULL: beside each file */
  /* Deltas (docs/deltas.md): the --dictionary-from DIRs as given (not
   * copied) and the delta formats (0: none). Not fields of the table: the
   * manifest says them in its own "dictionaries" and per file, and an
   * earlier one's records hold only for the same list (prev.c).
   */
  const char *const *dict_dirs;
  unsigned n_dict_dirs;
  unsigned deltas;
} pc__spec_t;

typedef enum pc__spec_kind {
  PC__SPEC_FORMATS,
  PC__SPEC_LEVEL, /* one field per format */
  PC__SPEC_ENGINE,
  PC__SPEC_RATIO,
  PC__SPEC_MIN_SIZE,
  PC__SPEC_OUTPUT_DIR
} pc__spec_kind_t;

/* What a field is to its users (pc__spec_field_t.use). */
#define PC__SPEC_BYTES 1u /* shapes an output's bytes: in its cache key */
#define PC__SPEC_SAME                                                          \
  2u /* an earlier manifest's records hold only when                           \
        it was written with the same value */

typedef struct pc__spec_field {
  pc__spec_kind_t kind;
  int format;      /* PC__SPEC_LEVEL: the format; -1 for the others */
  const char *key; /* its key in the manifest's "options" */
  unsigned use;    /* PC__SPEC_* bits */
} pc__spec_field_t;

#define PC__SPEC_NFIELDS (5 + PC_NFORMATS)

/* The fields, in the order the manifest's writer puts them. */
extern const pc__spec_field_t pc__spec_fields[PC__SPEC_NFIELDS];

/* The spec the options ask for (output_dir kept, not copied). */
static inline void pc__spec_of(pc__spec_t *s, const pc_options_t *o) {
  int f;

  s->formats = o->formats;
  for (f = 0; f < PC_NFORMATS; f++)
    s->level[f] = o->level[f];
  s->gzip_engine = o->gzip_engine;
  s->ratio_num = o->ratio_num;
  s->ratio_den = o->ratio_den;
  s->min_size = o->min_size;
  s->output_dir = o->output_dir;
  s->dict_dirs = o->dict_dirs;
  s->n_dict_dirs = o->n_dict_dirs;
  s->deltas = 0; /* the run's (setup.c): what this build can write */
}

#endif /* PC_SPEC_H */
