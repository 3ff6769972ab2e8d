/* The names of the files precompress makes: each one's builder beside its
 * recogniser (names.h).
 */
#include "common/names.h"

#include <stdlib.h>
#include <string.h>

static const char *const format_ext[PC_NFORMATS] = {"gz", "br", "zst"};

static const char *const delta_ext[PC_NDELTAS] = {"dcb", "dcz"};

static const char hex[] = "0123456789abcdef";

/* A temp's X: what pc__temp_name() draws from, and pc__temp_of() takes. */
static const char rand_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

static int is_rand_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

/* The value of a lower-case hex digit, or -1. */
static int lower_hex(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The index of `s` in tab[0..n), or -1. */
static int named(const char *s, const char *const *tab, int n) {
  int i;

  for (i = 0; i < n; i++)
    if (strcmp(s, tab[i]) == 0)
      return i;
  return -1;
}

/* --- outputs --------------------------------------------------------- */

const char *pc_format_ext(pc_format_t f) {
  return (unsigned)f < PC_NFORMATS ? format_ext[f] : "?";
}

int pc__format_named(const char *s) {
  return named(s, format_ext, PC_NFORMATS);
}

int pc__output_name(const char *name, size_t len, pc_format_t f,
                    char out[NAME_MAX + 1]) {
  const char *ext = pc_format_ext(f);
  size_t el = strlen(ext);

  if (len + 1 + el > NAME_MAX)
    return -ENAMETOOLONG;
  memcpy(out, name, len);
  out[len] = '.';
  memcpy(out + len + 1, ext, el + 1);
  return 0;
}

int pc__output_format_of(const char *name, size_t len) {
  int f;

  for (f = 0; f < PC_NFORMATS; f++) {
    size_t el = strlen(format_ext[f]);
    if (len > el + 1 && name[len - el - 1] == '.' &&
        memcmp(name + len - el, format_ext[f], el) == 0)
      return f;
  }
  return -1;
}

int pc__output_format_anycase(const char *name, size_t len) {
  size_t el, i;
  int f;

  for (f = 0; f < PC_NFORMATS; f++) {
    el = strlen(format_ext[f]);
    if (len <= el || name[len - el - 1] != '.')
      continue;
    for (i = 0; i < el && ascii_lower(name[len - el + i]) == format_ext[f][i];
         i++)
      ;
    if (i == el)
      return f;
  }
  return -1;
}

/* --- deltas ---------------------------------------------------------- */

const char *pc_delta_ext(pc_delta_format_t f) {
  return (unsigned)f < PC_NDELTAS ? delta_ext[f] : "?";
}

int pc__delta_format_named(const char *s) {
  return named(s, delta_ext, PC_NDELTAS);
}

int pc__delta_name(const char *name, const unsigned char *hash,
                   pc_delta_format_t f, char *out) {
  size_t n = strlen(name);
  int k;

  if (n + PC__DELTA_NAME_EXTRA > NAME_MAX)
    return -ENAMETOOLONG;
  memcpy(out, name, n);
  out[n] = '.';
  for (k = 0; k < 8; k++) {
    out[n + 1 + 2 * k] = hex[hash[k] >> 4];
    out[n + 2 + 2 * k] = hex[hash[k] & 15];
  }
  out[n + 17] = '.';
  strcpy(out + n + 18, pc_delta_ext(f));
  return 0;
}

int pc__delta_output_name(const char *name, size_t len, size_t *base_len,
                          pc_delta_format_t *f, unsigned char *id) {
  const char *p; /* <id> */
  size_t i;
  int k;

  if (len < PC__DELTA_NAME_EXTRA + 1 || name[len - 4] != '.')
    return 0;
  for (k = 0; k < PC_NDELTAS && memcmp(name + len - 3, delta_ext[k], 3) != 0;
       k++)
    ;
  p = name + len - PC__DELTA_NAME_EXTRA + 1;
  if (k == PC_NDELTAS || p[-1] != '.')
    return 0;
  for (i = 0; i < 16; i++)
    if (lower_hex(p[i]) < 0)
      return 0;
  *base_len = len - PC__DELTA_NAME_EXTRA;
  if (f != NULL)
    *f = (pc_delta_format_t)k;
  for (i = 0; id != NULL && i < 8; i++)
    id[i] = (unsigned char)(lower_hex(p[2 * i]) << 4 | lower_hex(p[2 * i + 1]));
  return 1;
}

/* --- temps ----------------------------------------------------------- */

char *pc__temp_name(const char *final, uint64_t bits) {
  const char *slash = strrchr(final, '/');
  size_t dirlen = slash != NULL ? (size_t)(slash - final) + 1 : 0;
  size_t baselen = strlen(final) - dirlen;
  size_t extra = 1 + 1 + PC__TMP_RAND + sizeof(PC__TMP_SUFFIX) - 1;
  size_t keep = baselen, cut = 0;
  char *p, *q;
  size_t i;

  if (baselen + extra > NAME_MAX) {
    const char *dot = strrchr(final + dirlen, '.');
    size_t extlen = dot != NULL ? strlen(dot) : 0;
    if (NAME_MAX < extra + extlen + 2)
      return NULL;
    cut = baselen + extra + 1 - NAME_MAX; /* +1: PC__TMP_CUT */
    keep = baselen - extlen - cut;
  }
  p = malloc(dirlen + baselen + extra + 2);
  if (p == NULL)
    return NULL;
  memcpy(p, final, dirlen);
  q = p + dirlen;
  *q++ = '.';
  if (cut == 0) {
    memcpy(q, final + dirlen, baselen);
    q += baselen;
  } else {
    memcpy(q, final + dirlen, keep);
    q += keep;
    *q++ = PC__TMP_CUT;
    memcpy(q, final + dirlen + keep + cut, baselen - keep - cut);
    q += baselen - keep - cut;
  }
  *q++ = '.';
  for (i = 0; i < PC__TMP_RAND; i++, bits >>= 8)
    *q++ = rand_chars[(bits & 0xff) % (sizeof(rand_chars) - 1)];
  memcpy(q, PC__TMP_SUFFIX, sizeof(PC__TMP_SUFFIX));
  return p;
}

int pc__temp_of(const char *name, size_t len, size_t *final_len) {
  size_t sl = sizeof(PC__TMP_SUFFIX) - 1, i;
  const char *rand;

  if (len < 1 + 1 + PC__TMP_RAND + sl || name[0] != '.' ||
      memcmp(name + len - sl, PC__TMP_SUFFIX, sl) != 0)
    return 0;
  rand = name + len - sl - PC__TMP_RAND;
  if (rand[-1] != '.')
    return 0;
  for (i = 0; i < PC__TMP_RAND; i++)
    if (!is_rand_char(rand[i]))
      return 0;
  *final_len = (size_t)(rand - 1 - (name + 1));
  return 1;
}

int pc__is_temp_name(const char *name) {
  size_t n, b;

  if (!pc__temp_of(name, strlen(name), &n))
    return 0;
  return pc__output_format_of(name + 1, n) >= 0 ||
         pc__delta_output_name(name + 1, n, &b, NULL, NULL);
}
