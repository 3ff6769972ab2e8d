/* The manifest's JSON: string writers (pc__json_*) and helpers for
 * reading it back; the parsing itself is jansson's (see manifest_read.c).
 */
#include "common/json.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* 1 for the bytes a string holds as they are: 0x20..0x7f but '"', '\\'. */
static const unsigned char plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20 '"' */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50 '\\' */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x70 */
};

int pc__unhexn(const char *h, size_t n, char *out) {
  size_t i;

  if (n % 2 != 0)
    return -EINVAL;
  for (i = 0; i < n / 2; i++) {
    int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
    if (hi < 0 || lo < 0 || (hi | lo) == 0)
      return -EINVAL;
    out[i] = (char)(hi << 4 | lo);
  }
  return 0;
}

int pc__unhex_hash(const char *h, unsigned char *out, size_t n) {
  size_t i;

  if (strlen(h) != 2 * n)
    return -EINVAL;
  for (i = 0; i < 2 * n; i++) {
    int v = hexval(h[i]);
    if (v < 0 || (h[i] >= 'A' && h[i] <= 'F'))
      return -EINVAL;
    out[i / 2] = (unsigned char)(i % 2 ? out[i / 2] | v : v << 4);
  }
  return 0;
}

char *pc__unhex(const char *h) {
  size_t n = strlen(h);
  char *s;

  if (n % 2 != 0 || (s = malloc(n / 2 + 1)) == NULL)
    return NULL;
  if (pc__unhexn(h, n, s) != 0) {
    free(s);
    return NULL;
  }
  s[n / 2] = '\0';
  return s;
}

size_t pc_utf8_len(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned c = s[0];
  size_t len, i;
  uint32_t v;

  if (c < 0x80) {
    if (cp != NULL)
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
    return 0; /* continuation byte, overlong lead (c0, c1) or above f4 */
  }
  if (n < len)
    return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  /* Overlong forms, UTF-16 surrogates and code points past U+10FFFF. */
  if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) ||
      (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff)
    return 0;
  if (cp != NULL)
    *cp = v;
  return len;
}

int pc__json_str(pc__buf_t *b, const char *str, size_t n, int *lossy) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  int err;

  if ((err = pc__buf_reserve(b, n + 2)) != 0)
    return err;
  b->data[b->len++] = '"';
  while (i < n) {
    unsigned char c = s[i];
    size_t len, j;
    /* A run of bytes that stand for themselves, in one copy. */
    for (j = i; j < n && plain[s[j]]; j++)
      ;
    if (j > i) {
      if ((err = pc__buf_append(b, &s[i], j - i)) != 0)
        return err;
      i = j;
      continue;
    }
    if (c < 0x80) {
      char esc[7];
      const char *e = esc;
      size_t el = 2;
      switch (c) {
      case '"':
        e = "\\\"";
        break;
      case '\\':
        e = "\\\\";
        break;
      case '\n':
        e = "\\n";
        break;
      case '\r':
        e = "\\r";
        break;
      case '\t':
        e = "\\t";
        break;
      case '\b':
        e = "\\b";
        break;
      case '\f':
        e = "\\f";
        break;
      default:
        esc[0] = '\\';
        esc[1] = 'u';
        esc[2] = '0';
        esc[3] = '0';
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        el = 6;
        break;
      }
      if ((err = pc__buf_append(b, e, el)) != 0)
        return err;
      i++;
      continue;
    }
    len = pc_utf8_len(s + i, n - i, NULL);
    if (len == 0) {
      if ((err = pc__buf_append(b, "\xef\xbf\xbd", 3)) != 0)
        return err;
      if (lossy != NULL)
        *lossy = 1;
      i++;
      continue;
    }
    if ((err = pc__buf_append(b, s + i, len)) != 0)
      return err;
    i += len;
  }
  return pc__buf_append(b, "\"", 1);
}

int pc__json_hex(pc__buf_t *b, const char *str, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  size_t i;
  int err;

  if ((err = pc__buf_reserve(b, 2 * n + 2)) != 0)
    return err;
  b->data[b->len++] = '"';
  for (i = 0; i < n; i++) {
    b->data[b->len++] = hex[s[i] >> 4];
    b->data[b->len++] = hex[s[i] & 15];
  }
  b->data[b->len++] = '"';
  return 0;
}

int pc__json_read_fd(int fd, pc__buf_t *b) {
  struct stat st;
  int err;

  if (fstat(fd, &st) != 0)
    return PC__ERRNO();
  /* A FIFO or a device would block, or never end: regular files only. */
  if (!S_ISREG(st.st_mode))
    return PC_ENOTREG;
  /* The size is a hint only: the file may grow. One byte more than it, so
   * that the read() seeing the end needs no growing.
   */
  if (st.st_size > 0 && (err = pc__buf_reserve(b, (size_t)st.st_size + 1)) != 0)
    return err;
  for (;;) {
    ssize_t n;
    if (b->cap - b->len < 4096 && (err = pc__buf_reserve(b, 65536)) != 0)
      return err;
    n = read(fd, b->data + b->len, b->cap - b->len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return PC__ERRNO();
    }
    if (n == 0)
      return 0;
    b->len += (size_t)n;
  }
}

int pc__json_read_file(const char *path, pc__buf_t *b) {
  int fd, err;

  /* O_NONBLOCK: opening a FIFO must not wait for a writer (the fstat
   * after it refuses one). It changes nothing for a regular file.
   */
  if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
    return PC__ERRNO();
  err = pc__json_read_fd(fd, b);
  close(fd);
  return err;
}
