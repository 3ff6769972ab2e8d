/* Escaped names for people (escape.h). */
#include "escape.h"

#include <stdint.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one:
 * a stray continuation byte, an overlong form, a UTF-16 surrogate, a code
 * point past U+10FFFF, or a sequence cut short. *cp receives the code
 * point. The same rule as the manifest's writer, so that a name the
 * manifest keeps exact is written exact here too.
 */
static size_t utf8_len(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned c = s[0];
  size_t len, i;
  uint32_t v;

  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    v = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    v = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    v = c & 0x07;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) ||
      (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff)
    return 0;
  *cp = v;
  return len;
}

/* Printable ASCII but the backslash: the bytes `ls -b` leaves alone. */
static int name_plain(unsigned char c) {
  return c >= 0x20 && c < 0x7f && c != '\\';
}

static void put_octal(FILE *f, unsigned char c) {
  fputc('\\', f);
  fputc('0' + (c >> 6), f);
  fputc('0' + ((c >> 3) & 7), f);
  fputc('0' + (c & 7), f);
}

void cli_put_name(FILE *f, const char *name) {
  const unsigned char *s = (const unsigned char *) name;
  size_t n = strlen(name);
  size_t i = 0;

  while (i < n) {
    unsigned char c = s[i];
    uint32_t cp;
    size_t len, j;

    /* A run of bytes that stand for themselves, in one write. */
    for (j = i; j < n && name_plain(s[j]); j++)
      ;
    if (j > i) {
      fwrite(s + i, 1, j - i, f);
      i = j;
      continue;
    }
    if (c < 0x80) {
      static const char letters[] = "abtnvfr"; /* for 0x07..0x0d */

      if (c == '\\')
        fputs("\\\\", f);
      else if (c >= 0x07 && c <= 0x0d) {
        fputc('\\', f);
        fputc(letters[c - 0x07], f);
      } else
        put_octal(f, c); /* other C0 controls, DEL */
      i++;
      continue;
    }
    len = utf8_len(s + i, n - i, &cp);
    if (len == 0) {
      put_octal(f, c); /* this byte alone: the next may start a character */
      i++;
    } else if (cp <= 0x9f) {
      for (j = 0; j < len; j++)
        put_octal(f, s[i + j]); /* a C1 control, as ls -b escapes it */
      i += len;
    } else {
      fwrite(s + i, 1, len, f);
      i += len;
    }
  }
}
