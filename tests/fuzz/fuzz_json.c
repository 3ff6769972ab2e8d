/* libFuzzer target: the manifest's JSON string writers (src/common/json.c).
 *
 * pc__json_str() on the input, then an independent strict check of what it
 * wrote:
 *  - one JSON string literal (RFC 8259): quotes, only the escapes JSON has,
 *    no raw control byte, every raw byte sequence valid UTF-8 (no overlong
 *    form, no surrogate, nothing past U+10FFFF), no \u escape of a
 *    surrogate;
 *  - decoded, it gives back the input exactly when the input is valid
 *    UTF-8 (and then *lossy stays 0); otherwise *lossy is 1 and it gives the
 *    input with each byte that starts no valid sequence replaced by U+FFFD;
 *  - jansson reads the literal back as the same string;
 *  - appending goes after what the buffer held; lossy may be NULL.
 * pc__json_hex(): '"', two lowercase hex digits per byte, '"', decoding to
 * the input.
 */
#include "common/json.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

/* Length of the valid UTF-8 sequence at s, or 0 (Unicode 15, table 3-7). */
static size_t utf8_seq(const uint8_t *s, size_t n) {
  uint8_t c = s[0];
  uint8_t lo = 0x80, hi = 0xbf;
  size_t len, i;

  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4;
  else
    return 0;
  if (c == 0xe0)
    lo = 0xa0;
  else if (c == 0xed)
    hi = 0x9f;
  else if (c == 0xf0)
    lo = 0x90;
  else if (c == 0xf4)
    hi = 0x8f;
  if (n < len)
    return 0;
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return len;
}

static int hexdigit(uint8_t c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static void put(uint8_t *out, size_t *o, size_t cap, uint8_t c) {
  check(*o < cap);
  out[(*o)++] = c;
}

/* Checks that s[0..n) is exactly one strict JSON string literal and writes
 * its decoded bytes (UTF-8) to out. Aborts if it is not.
 */
static size_t decode_literal(const uint8_t *s, size_t n, uint8_t *out,
                             size_t cap) {
  size_t i = 1, o = 0;

  check(n >= 2 && s[0] == '"' && s[n - 1] == '"');
  while (i < n - 1) {
    uint8_t c = s[i];
    if (c == '"')
      abort(); /* an unescaped quote before the end */
    if (c < 0x20)
      abort(); /* raw control byte */
    if (c == '\\') {
      uint32_t cp = 0;
      int k;
      check(i + 1 < n - 1);
      c = s[i + 1];
      switch (c) {
      case '"':
      case '\\':
      case '/':
        put(out, &o, cap, c);
        i += 2;
        continue;
      case 'b':
        put(out, &o, cap, '\b');
        i += 2;
        continue;
      case 'f':
        put(out, &o, cap, '\f');
        i += 2;
        continue;
      case 'n':
        put(out, &o, cap, '\n');
        i += 2;
        continue;
      case 'r':
        put(out, &o, cap, '\r');
        i += 2;
        continue;
      case 't':
        put(out, &o, cap, '\t');
        i += 2;
        continue;
      case 'u':
        check(i + 6 <= n - 1);
        for (k = 0; k < 4; k++) {
          int d = hexdigit(s[i + 2 + k]);
          check(d >= 0);
          cp = cp << 4 | (uint32_t)d;
        }
        /* Our writer never needs surrogate pairs: raw UTF-8 is kept. */
        check(cp < 0xd800 || cp > 0xdfff);
        if (cp < 0x80) {
          put(out, &o, cap, (uint8_t)cp);
        } else if (cp < 0x800) {
          put(out, &o, cap, (uint8_t)(0xc0 | cp >> 6));
          put(out, &o, cap, (uint8_t)(0x80 | (cp & 0x3f)));
        } else {
          put(out, &o, cap, (uint8_t)(0xe0 | cp >> 12));
          put(out, &o, cap, (uint8_t)(0x80 | ((cp >> 6) & 0x3f)));
          put(out, &o, cap, (uint8_t)(0x80 | (cp & 0x3f)));
        }
        i += 6;
        continue;
      default:
        abort(); /* not a JSON escape */
      }
    }
    {
      size_t len = utf8_seq(s + i, n - 1 - i), k;
      check(len > 0);
      for (k = 0; k < len; k++)
        put(out, &o, cap, s[i + k]);
      i += len;
    }
  }
  return o;
}

static void fuzz_str(const uint8_t *data, size_t size) {
  static const char prefix[] = "[1,";
  pc__buf_t b = {0};
  uint8_t *dec, *want;
  size_t dn, wn = 0, i, cap;
  int lossy = 0, valid = 1;
  json_t *j;
  json_error_t jerr;

  /* Something already in the buffer: the literal must go after it. */
  check(pc__buf_puts(&b, prefix) == 0);
  check(pc__json_str(&b, (const char *)data, size, &lossy) == 0);
  check(b.len >= sizeof(prefix) - 1 &&
        memcmp(b.data, prefix, sizeof(prefix) - 1) == 0);
  check(lossy == 0 || lossy == 1);

  /* What the decoded literal must be: the input, each byte that starts no
   * valid sequence replaced by U+FFFD.
   */
  cap = 3 * size + 1;
  want = malloc(cap);
  dec = malloc(6 * size + 8);
  if (want == NULL || dec == NULL)
    abort();
  for (i = 0; i < size;) {
    size_t len = utf8_seq(data + i, size - i);
    if (len == 0) {
      valid = 0;
      memcpy(want + wn, "\xef\xbf\xbd", 3);
      wn += 3;
      i++;
    } else {
      memcpy(want + wn, data + i, len);
      wn += len;
      i += len;
    }
  }
  check(lossy == !valid);
  if (valid)
    check(wn == size && (size == 0 || memcmp(want, data, size) == 0));

  dn = decode_literal(b.data + sizeof(prefix) - 1, b.len - (sizeof(prefix) - 1),
                      dec, 6 * size + 8);
  check(dn == wn && (wn == 0 || memcmp(dec, want, wn) == 0));

  /* A second reader: jansson (which the manifest reader uses) agrees. */
  j = json_loadb((const char *)b.data + sizeof(prefix) - 1,
                 b.len - (sizeof(prefix) - 1), JSON_DECODE_ANY | JSON_ALLOW_NUL,
                 &jerr);
  check(j != NULL && json_is_string(j));
  check(json_string_length(j) == wn &&
        (wn == 0 || memcmp(json_string_value(j), want, wn) == 0));
  json_decref(j);

  /* lossy may be NULL, and the bytes are the same. */
  {
    pc__buf_t b2 = {0};
    check(pc__json_str(&b2, (const char *)data, size, NULL) == 0);
    check(b2.len == b.len - (sizeof(prefix) - 1) &&
          memcmp(b2.data, b.data + sizeof(prefix) - 1, b2.len) == 0);
    pc__buf_free(&b2);
  }

  free(want);
  free(dec);
  pc__buf_free(&b);
}

static void fuzz_hex(const uint8_t *data, size_t size) {
  pc__buf_t b = {0};
  size_t i;

  check(pc__buf_append(&b, "x", 1) == 0);
  check(pc__json_hex(&b, (const char *)data, size) == 0);
  check(b.len == 1 + 2 * size + 2);
  check(b.data[0] == 'x' && b.data[1] == '"' && b.data[b.len - 1] == '"');
  for (i = 0; i < size; i++) {
    uint8_t h = b.data[2 + 2 * i], l = b.data[3 + 2 * i];
    int hi = hexdigit(h), lo = hexdigit(l);
    check(hi >= 0 && lo >= 0 && !(h >= 'A' && h <= 'F') &&
          !(l >= 'A' && l <= 'F'));
    check((uint8_t)(hi << 4 | lo) == data[i]);
  }
  pc__buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t i;

  fuzz_str(data, size);
  fuzz_hex(data, size);
  /* pc_utf8_len agrees with the independent table at every offset. */
  for (i = 0; i < size; i++)
    check(pc_utf8_len(data + i, size - i, NULL) ==
          utf8_seq(data + i, size - i));
  return 0;
}
