/* A line of a manifest's "files" (pc__mline_t, as manifest_read.c decodes
 * it) turned into a record's fields: its size and mtime, an output, a
 * delta. The two that read lines back use these, each keeping its own
 * rules for what a line may lack: prev.c (an earlier run's records, for
 * the incremental skip) and merge.c (shards' records, written again).
 */
#ifndef PC_MANIFEST_LINE_H
#define PC_MANIFEST_LINE_H

#include "common/common.h"
#include "manifest/manifest.h"

/* The most entries a line's "deltas" may list: one per format and
 * --dictionary-from DIR.
 */
#define PC__MLINE_DELTAS_MAX (PC_NDELTAS * PC_DICT_DIRS_MAX)

/* The line's size and mtime (0 when it gives none) into *size and
 * *mtime_ns. 0, or PC_ENOTMANIFEST: not an object, no size that is an
 * integer of 0 or more, or an mtime that is no integer.
 */
int pc__mline_stat(const pc__mline_t *l, uint64_t *size, int64_t *mtime_ns);

/* The line's output of format f into out's state and size: kept with its
 * size, or not kept for the ratio. 0, or PC_ENOTMANIFEST when the format's
 * value is not an object saying one or the other (or is absent).
 */
int pc__mline_output(const pc__mline_t *l, int f, pc_output_t *out);

/* Entry md of a line's "deltas" into *x (cleared first): its format, its
 * DIR's index, its size when kept or why not, and the dictionary's path
 * (x->dictionary: md's string, valid while the line is), and when the
 * dictionary was read (always for a kept one) its SHA-256, and its size
 * and mtime into *ds (cleared first too). The DIR's index is below
 * `ndirs`, the format one of `formats` (PC_DELTA_BIT()s). 0, or
 * PC_ENOTMANIFEST.
 */
int pc__mline_delta_rec(const pc__mdelta_t *md, unsigned ndirs,
                        unsigned formats, pc_delta_t *x, pc__dstat_t *ds);

#endif /* PC_MANIFEST_LINE_H */
