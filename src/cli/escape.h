/* How the program writes names it did not choose: file names come from
 * whoever wrote the tree, and may hold newlines, terminal escapes or bytes
 * that are not UTF-8.
 *
 * Human output (-v, the dry-run listing, error lines) escapes them the way
 * GNU `ls -b` does, so that a name can neither forge a line nor reach the
 * terminal as a control sequence. Machine output (--json-lines) writes them
 * as JSON strings. Only the public header is used here: the library's own
 * JSON writer is internal to it.
 */
#ifndef PC_CLI_ESCAPE_H
#define PC_CLI_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Writes name to f as `ls -b` (quoting style "escape") would:
 *
 *   - printable ASCII, space included, as it is;
 *   - a backslash as \\;
 *   - \a \b \t \n \v \f \r as those two-character escapes;
 *   - every other control byte, DEL, and every byte that is not part of a
 *     valid UTF-8 sequence as a three-digit octal escape (\033, \377);
 *   - a valid UTF-8 character as it is, except the C1 controls U+0080..
 *     U+009F, whose two bytes are escaped in octal (\302\205).
 *
 * The result is printable, holds no line break, and reads back to the same
 * bytes. Errors are left to the stream (ferror()).
 */
void cli_put_name(FILE *f, const char *name);

/* Writes s[0..n) to f as a quoted JSON string (RFC 8259). Control
 * characters (C0, DEL, C1) and U+2028/U+2029 are \u escapes, so the line
 * is safe on a terminal and in JavaScript; bytes that are not valid UTF-8
 * are written as U+FFFD. Returns 1 if any byte was replaced (the caller
 * then adds the exact bytes with cli_put_json_hex()), else 0.
 */
int cli_put_json_str(FILE *f, const char *s, size_t n);

/* Writes s[0..n) to f as a quoted string of lowercase hex digits. */
void cli_put_json_hex(FILE *f, const char *s, size_t n);

#endif /* PC_CLI_ESCAPE_H */
