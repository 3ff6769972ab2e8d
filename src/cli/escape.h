/* How the program writes names it did not choose: file names come from
 * whoever wrote the tree, and may hold newlines, terminal escapes or bytes
 * that are not UTF-8.
 *
 * Human output (-v, the dry-run listing, error lines) escapes them the way
 * GNU `ls -b` does, so that a name can neither forge a line nor reach the
 * terminal as a control sequence.
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

#endif /* PC_CLI_ESCAPE_H */
