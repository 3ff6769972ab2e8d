/* The manifest's JSON (RFC 8259): writing strings, and helpers for reading
 * it back (the parsing itself is jansson's).
 */
#ifndef PC_JSON_H
#define PC_JSON_H

#include "common/common.h"

/* Appends s[0..n) as a quoted JSON string. Bytes that are not valid UTF-8
 * are written as U+FFFD; *lossy (when not NULL) is set to 1 if any was.
 * 0 or -ENOMEM.
 */
int pc__json_str(pc__buf_t *b, const char *s, size_t n, int *lossy);

/* Appends s[0..n) as a quoted string of lowercase hex digits. */
int pc__json_hex(pc__buf_t *b, const char *s, size_t n);

/* Decodes hex digits (as pc__json_hex writes them, either case) into a
 * malloc'd string. NULL if `h` is not hex or decodes to a NUL byte.
 */
char *pc__unhex(const char *h);

/* The same for the n digits at h, into out (room for n / 2 bytes, no NUL
 * added). 0, or -EINVAL on the same grounds as pc__unhex.
 */
int pc__unhexn(const char *h, size_t n, char *out);

/* A hash written as 2n lower-case hex digits (h, NUL-terminated) into
 * out[0..n), zero bytes too. 0, or -EINVAL for any other text.
 */
int pc__unhex_hash(const char *h, unsigned char *out, size_t n);

/* Reads the whole file at `path` into b (appended). It is opened
 * non-blocking and must be a regular file: anything else (a FIFO, a
 * device) is PC_ENOTREG, never read. 0, or a negative code (from open(),
 * read(), PC_ENOTREG or -ENOMEM).
 */
int pc__json_read_file(const char *path, pc__buf_t *b);

/* The same for a descriptor already open (not closed here). */
int pc__json_read_fd(int fd, pc__buf_t *b);

#endif /* PC_JSON_H */
