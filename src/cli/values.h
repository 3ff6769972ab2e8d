/* The values options take (values.c): what the parser (args.c) and the
 * program (main.c) read from the command line besides the options'
 * names.
 */
#ifndef PC_CLI_VALUES_H
#define PC_CLI_VALUES_H

#include "precompress.h"

#include <stddef.h>
#include <stdint.h>

/* Parses a --max-ratio value: a decimal 0 < R <= 1 with at most 9 decimals,
 * exactly ("0.95" gives 95/100). Returns 0 or -1.
 */
int cli_parse_ratio(const char *s, uint64_t *num, uint64_t *den);

/* Parses a byte count: digits with an optional k, M or G suffix (powers of
 * 1024), which may be followed by B or iB (4k, 4kb, 4KiB: 4096, as zstd
 * reads them), or a lone B. Returns 0 or -1 (malformed or over 2^64 - 1).
 */
int cli_parse_size(const char *s, uint64_t *out);

/* The time left to show, in *left (seconds), when the run has gone on for
 * `elapsed` seconds and done `done` of `total` bytes: 1 once a second has
 * passed and a twentieth of the bytes is done, else 0 (no figure yet). The
 * first files' rate says little of the rest's: the largest, started first,
 * are still running (a 61 s run once first said 16:28).
 */
int cli_eta(double elapsed, uint64_t done, uint64_t total, double *left);

/* Whether a PATH that does not exist looks like a file extension (1 to 10
 * ASCII letters or digits: no slash, no dot), as the positional arguments of
 * `python -m whitenoise.compress ROOT jpg png` are. Returns 1 or 0.
 */
int cli_looks_like_ext(const char *path);

/* Parses the decimal digits at *sp into *out and moves *sp past them.
 * Returns 0, or -1 when there is no digit or the value passes 2^64 - 1.
 */
int cli_parse_u64(const char **sp, uint64_t *out);

/* Parses a decimal integer in lo..hi into *out (no sign, no suffix).
 * Returns 0 or -1.
 */
int cli_parse_int_range(const char *s, long lo, long hi, long *out);

/* The format named s[0..len): gz or gzip, br or brotli, zst or zstd.
 * Returns 0 with *f set, or -1.
 */
int cli_format_from_name(const char *s, size_t len, pc_format_t *f);

/* --deltas LIST: "dcb", "dcz", comma-separated, into PC_DELTA_BIT()s. 0,
 * or -1 for a name it does not know or no name at all.
 */
int cli_parse_deltas(const char *value, unsigned *bits);

/* --skip-ext LIST: a copy of value in *buf, cut at the commas, the
 * non-empty items (leading dots dropped) in *list, NULL-terminated, *n of
 * them; both malloc'd. 0, or -1 (out of memory: both NULL).
 */
int cli_split_exts(const char *value, char **buf, const char ***list,
                   size_t *n);

/* A user-supplied value of len bytes as quoted in a message, in buf (size
 * bytes, at least 4): control bytes become '?' so the message stays on one
 * line, and a long value is cut with "...". Returns buf.
 */
const char *cli_shown(char *buf, size_t size, const char *s, size_t len);

#endif /* PC_CLI_VALUES_H */
