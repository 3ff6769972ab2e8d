/* JSON string writing for the manifest (RFC 8259). */
#ifndef PC_JSON_H
#define PC_JSON_H

#include "common.h"

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

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
size_t pc__utf8_len(const unsigned char *s, size_t n);

#endif /* PC_JSON_H */
