/* A manifest's line into a record's fields (manifest_line.h): what makes a
 * size, an output or a delta usable is said once, for prev.c and merge.c.
 */
#include "manifest/manifest_line.h"

#include "codec/delta.h"
#include "common/json.h"
#include "common/names.h"

#include <string.h>

int pc__mline_stat(const pc__mline_t *l, uint64_t *size, int64_t *mtime_ns) {
  if (!l->object || !l->size_int || l->size < 0 ||
      (l->has_mtime && !l->mtime_int))
    return PC_ENOTMANIFEST;
  *size = (uint64_t)l->size;
  *mtime_ns = l->has_mtime ? l->mtime_ns : 0;
  return 0;
}

int pc__mline_output(const pc__mline_t *l, int f, pc_output_t *out) {
  if (!l->out[f].object)
    return PC_ENOTMANIFEST;
  if (l->out[f].sized) {
    out->state = PC_OUT_KEPT;
    out->size = (uint64_t)l->out[f].size;
  } else if (l->out[f].ratio) {
    out->state = PC_OUT_RATIO;
  } else {
    return PC_ENOTMANIFEST;
  }
  return 0;
}

int pc__mline_delta_rec(const pc__mdelta_t *md, unsigned ndirs,
                        unsigned formats, pc_delta_t *x, pc__dstat_t *ds) {
  int k;

  memset(x, 0, sizeof(*x));
  memset(ds, 0, sizeof(*ds));
  if (!md->object || md->format == NULL || md->dictionary == NULL ||
      !md->from_int || md->from < 0 || (uint64_t)md->from >= ndirs)
    return PC_ENOTMANIFEST;
  if ((k = pc__delta_format_named(md->format)) < 0 ||
      !(formats & PC_DELTA_BIT(k)))
    return PC_ENOTMANIFEST;
  x->format = (pc_delta_format_t)k;
  x->from = (uint32_t)md->from;
  if (md->skipped == NULL) {
    if (!md->size_int || md->size <= 0)
      return PC_ENOTMANIFEST;
    x->size = (uint64_t)md->size;
  } else {
    if ((k = pc__delta_skip_named(md->skipped)) < 0)
      return PC_ENOTMANIFEST;
    x->skip = (pc_delta_skip_t)k;
  }
  /* What the writer gives every delta whose dictionary was read, and a
   * kept one's was: its hash, size and mtime; a skipped one may have none.
   */
  if (md->sha256 != NULL || x->skip == PC_DSKIP_NONE) {
    if (md->sha256 == NULL ||
        pc__unhex_hash(md->sha256, x->sha256, sizeof(x->sha256)) != 0 ||
        !pc__delta_read(x->sha256) || !md->dsize_int || md->dict_size < 0 ||
        !md->dmtime_int)
      return PC_ENOTMANIFEST;
    ds->size = (uint64_t)md->dict_size;
    ds->mtime_ns = md->dict_mtime_ns;
  }
  x->dictionary = md->dictionary;
  return 0;
}
