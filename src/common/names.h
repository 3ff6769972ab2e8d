/* The names of the files precompress makes, each built and recognised
 * here side by side, so that what one side writes the other knows:
 *
 *   NAME.gz  NAME.br  NAME.zst      an output (pc_format_ext())
 *   NAME.<id>.dcb  NAME.<id>.dcz    a delta (pc_delta_ext()): <id> is the
 *                                   first 8 bytes of its dictionary's
 *                                   SHA-256 as 16 lower-case hex digits
 *   .FINAL.XXXXXX.tmp               the temp a file named FINAL is written
 *                                   as (fs/out.c), X one of 62 ASCII
 *                                   letters and digits
 *
 * The extensions are also the formats' names in the manifest. A name is
 * recognised byte by byte in ASCII, never by the locale's character
 * classes: it means the same in every locale. pc_format_ext() and
 * pc_delta_ext() (precompress.h) are defined in names.c.
 */
#ifndef PC_NAMES_H
#define PC_NAMES_H

#include "common/common.h"

#include <limits.h>

/* --- outputs: NAME.EXT ---------------------------------------------- */

/* The format named `s` ("gz", "br", "zst"), or -1. */
int pc__format_named(const char *s);

/* NAME.EXT, the output of name[0..len) in format f, into out. 0, or
 * -ENAMETOOLONG when it would be longer than NAME_MAX.
 */
int pc__output_name(const char *name, size_t len, pc_format_t f,
                    char out[NAME_MAX + 1]);

/* The format whose extension name[0..len) ends with, after a dot and a
 * NAME of one byte or more, or -1.
 */
int pc__output_format_of(const char *name, size_t len);

/* As pc__output_format_of(), in any case (ASCII) and with NAME possibly
 * empty (".GZ"): a name a server could take for an output.
 */
int pc__output_format_anycase(const char *name, size_t len);

/* --- deltas: NAME.<id>.dcb, NAME.<id>.dcz ---------------------------- */

/* The delta format named `s` ("dcb", "dcz"), or -1. */
int pc__delta_format_named(const char *s);

/* What a delta's name adds to its file's: ".<id>.dcb" or ".dcz". */
#define PC__DELTA_NAME_EXTRA (1 + 16 + 4)

/* NAME.<id>.dcb or .dcz: the name of the delta in format f of the file
 * named `name`, made against the dictionary whose SHA-256 is `hash`, into
 * out (NAME_MAX + 1 bytes). 0, or -ENAMETOOLONG (a name longer than
 * NAME_MAX - PC__DELTA_NAME_EXTRA).
 */
int pc__delta_name(const char *name, const unsigned char *hash,
                   pc_delta_format_t f, char *out);

/* 1 when name[0..len) is a delta's name, NAME.<id>.dcb or .dcz with NAME
 * not empty: *base_len receives NAME's length and, each when not NULL, *f
 * the format and id[0..8) the bytes <id> spells.
 */
int pc__delta_output_name(const char *name, size_t len, size_t *base_len,
                          pc_delta_format_t *f, unsigned char *id);

/* --- temps: .FINAL.XXXXXX.tmp ---------------------------------------- */

#define PC__TMP_SUFFIX ".tmp"
#define PC__TMP_RAND 6
/* Ends what is left of a FINAL cut to fit NAME_MAX, before its extension. */
#define PC__TMP_CUT '~'

/* The temp's name for `final` (a path: its directory kept), the X drawn
 * from `bits`. When that would pass NAME_MAX, FINAL keeps
 * its extension (".gz": the walk must still know the file for ours) and
 * loses characters before it, PC__TMP_CUT marking the cut. malloc'd, or
 * NULL (no memory, or no room even so).
 */
char *pc__temp_name(const char *final, uint64_t bits);

/* 1 when name[0..len) is a temp's name, ".FINAL.XXXXXX.tmp": *final_len
 * receives FINAL's length (FINAL is at name + 1).
 */
int pc__temp_of(const char *name, size_t len, size_t *final_len);

/* 1 when `name` (a base name) is the temp of an output or a delta. */
int pc__is_temp_name(const char *name);

#endif /* PC_NAMES_H */
