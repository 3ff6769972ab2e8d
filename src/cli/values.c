/* The values options take (values.h): sizes, ratios, ranges, format
 * names, and how a value is shown in a message. Nothing here prints.
 */
#include "values.h"

#include <stdlib.h>
#include <string.h>

/* Copies a user-supplied string for quoting in a message: control bytes
 * become '?' so the message stays on one line, and long values are cut.
 */
const char *cli_shown(char *buf, size_t size, const char *s, size_t len) {
  size_t i;
  size_t n;

  n = len < size - 4 ? len : size - 4;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  if (n < len) {
    memcpy(buf + n, "...", 3);
    n += 3;
  }
  buf[n] = '\0';
  return buf;
}

int cli_parse_u64(const char **sp, uint64_t *out) {
  const char *s = *sp;
  uint64_t v = 0;

  if (*s < '0' || *s > '9')
    return -1;
  for (; *s >= '0' && *s <= '9'; s++) {
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  *sp = s;
  *out = v;
  return 0;
}

int cli_parse_size(const char *s, uint64_t *out) {
  uint64_t v;
  unsigned shift = 0;

  if (cli_parse_u64(&s, &v))
    return -1;
  switch (*s) {
  case '\0':
    break;
  case 'k':
  case 'K':
    shift = 10;
    s++;
    break;
  case 'm':
  case 'M':
    shift = 20;
    s++;
    break;
  case 'g':
  case 'G':
    shift = 30;
    s++;
    break;
  default:
    break;
  }
  /* As zstd reads them: K, KB, KiB (any case) are all 1024; B alone is
   * bytes. */
  if (shift && (*s == 'i' || *s == 'I'))
    s++;
  if (*s == 'b' || *s == 'B')
    s++;
  if (*s != '\0')
    return -1;
  if (shift && v > (UINT64_MAX >> shift))
    return -1;
  *out = v << shift;
  return 0;
}

int cli_parse_ratio(const char *s, uint64_t *num, uint64_t *den) {
  uint64_t ip = 0;
  uint64_t frac = 0;
  uint64_t scale = 1;
  int nint = 0;
  int nfrac = 0;

  /* The integer part saturates at 2: any value above 1 is refused, and
   * saturating keeps "000001" exact without overflow.
   */
  for (; *s >= '0' && *s <= '9'; s++, nint++) {
    ip = ip * 10 + (uint64_t)(*s - '0');
    if (ip > 1)
      ip = 2;
  }
  if (*s == '.') {
    for (s++; *s >= '0' && *s <= '9'; s++, nfrac++) {
      if (nfrac == 9)
        return -1;
      frac = frac * 10 + (uint64_t)(*s - '0');
      scale *= 10;
    }
    if (nfrac == 0)
      return -1;
  }
  if (*s != '\0' || (nint == 0 && nfrac == 0) || ip > 1)
    return -1;
  /* Not reduced: 0.95 stays 95/100, which reads back as written. */
  *num = ip * scale + frac;
  *den = scale;
  if (*num == 0 || *num > *den)
    return -1;
  return 0;
}

int cli_parse_int_range(const char *s, long lo, long hi, long *out) {
  uint64_t v;

  if (cli_parse_u64(&s, &v) || *s != '\0')
    return -1;
  if (v < (uint64_t)lo || v > (uint64_t)hi)
    return -1;
  *out = (long)v;
  return 0;
}

int cli_format_from_name(const char *s, size_t len, pc_format_t *f) {
  static const struct {
    const char *name;
    pc_format_t format;
  } names[] = {
      {"gz", PC_GZ},     {"gzip", PC_GZ}, {"br", PC_BR},
      {"brotli", PC_BR}, {"zst", PC_ZST}, {"zstd", PC_ZST},
  };
  size_t i;

  for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    if (strlen(names[i].name) == len && memcmp(names[i].name, s, len) == 0) {
      *f = names[i].format;
      return 0;
    }
  }
  return -1;
}

int cli_parse_deltas(const char *value, unsigned *bits) {
  const char *s = value;
  unsigned b = 0;

  while (*s != '\0') {
    size_t len = strcspn(s, ",");
    if (len == 3 && memcmp(s, "dcb", 3) == 0)
      b |= PC_DELTA_BIT(PC_DCB);
    else if (len == 3 && memcmp(s, "dcz", 3) == 0)
      b |= PC_DELTA_BIT(PC_DCZ);
    else if (len > 0)
      return -1;
    s += len + (s[len] == ',');
  }
  if (b == 0)
    return -1;
  *bits = b;
  return 0;
}

int cli_looks_like_ext(const char *path) {
  size_t n = 0;

  for (; path[n] != '\0'; n++) {
    char c = path[n];
    if (n == 10 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     (c >= '0' && c <= '9')))
      return 0;
  }
  return n > 0;
}

int cli_split_exts(const char *value, char **buf, const char ***list,
                   size_t *n) {
  char *s;

  /* n items need n - 1 commas between them, so len / 2 + 1 items at most,
   * plus the terminating NULL.
   */
  *n = 0;
  *buf = strdup(value);
  *list = calloc(strlen(value) / 2 + 2, sizeof(**list));
  if (*buf == NULL || *list == NULL) {
    free(*buf);
    free(*list);
    *buf = NULL;
    *list = NULL;
    return -1;
  }
  for (s = *buf;;) {
    char *end = s + strcspn(s, ",");
    int last = *end == '\0';

    *end = '\0';
    while (*s == '.')
      s++;
    if (*s != '\0')
      (*list)[(*n)++] = s;
    if (last)
      break;
    s = end + 1;
  }
  (*list)[*n] = NULL;
  return 0;
}

int cli_eta(double elapsed, uint64_t done, uint64_t total, double *left) {
  if (elapsed < 1.0 || done == 0 || done > total || done * 20 < total)
    return 0;
  *left = (double)(total - done) / ((double)done / elapsed);
  return 1;
}
