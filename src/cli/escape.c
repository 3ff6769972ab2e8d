/* Escaped names for people, JSON strings for scripts (escape.h). */
#include "escape.h"

#include "precompress.h"

#include <stdint.h>
#include <string.h>

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
  const unsigned char *s = (const unsigned char *)name;
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
    len = pc_utf8_len(s + i, n - i, &cp);
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

/* Bytes a JSON string holds as they are: printable ASCII but '"', '\\'. */
static int json_plain(unsigned char c) {
  return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

static void put_u_escape(FILE *f, uint32_t cp) {
  static const char hex[] = "0123456789abcdef";

  fputs("\\u", f);
  fputc(hex[(cp >> 12) & 15], f);
  fputc(hex[(cp >> 8) & 15], f);
  fputc(hex[(cp >> 4) & 15], f);
  fputc(hex[cp & 15], f);
}

int cli_put_json_str(FILE *f, const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  int lossy = 0;

  fputc('"', f);
  while (i < n) {
    uint32_t cp;
    size_t len, j;

    for (j = i; j < n && json_plain(s[j]); j++)
      ;
    if (j > i) {
      fwrite(s + i, 1, j - i, f);
      i = j;
      continue;
    }
    len = pc_utf8_len(s + i, n - i, &cp);
    if (len == 0) {
      fputs("\xef\xbf\xbd", f); /* U+FFFD REPLACEMENT CHARACTER */
      lossy = 1;
      i++;
      continue;
    }
    switch (cp) {
    case '"':
      fputs("\\\"", f);
      break;
    case '\\':
      fputs("\\\\", f);
      break;
    case '\b':
      fputs("\\b", f);
      break;
    case '\f':
      fputs("\\f", f);
      break;
    case '\n':
      fputs("\\n", f);
      break;
    case '\r':
      fputs("\\r", f);
      break;
    case '\t':
      fputs("\\t", f);
      break;
    default:
      /* RFC 8259 needs only C0 escaped; DEL and C1 are escaped too so
       * that the stream is safe to read on a terminal, U+2028 and U+2029
       * so that it is valid JavaScript.
       */
      if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 ||
          cp == 0x2029)
        put_u_escape(f, cp);
      else
        fwrite(s + i, 1, len, f);
      break;
    }
    i += len;
  }
  fputc('"', f);
  return lossy;
}

void cli_put_json_hex(FILE *f, const char *str, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  size_t i;

  fputc('"', f);
  for (i = 0; i < n; i++) {
    fputc(hex[s[i] >> 4], f);
    fputc(hex[s[i] & 15], f);
  }
  fputc('"', f);
}
