/* Generic helpers every file may use: growable arrays (pc__grow) and
 * byte buffers (pc__buf_*), strdup and path joining. No state, no system
 * calls beyond malloc.
 */
#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pc__grow(void *arrp, size_t n, size_t *cap, size_t size, size_t first) {
  size_t ncap = *cap ? *cap * 2 : first;
  void *p, *np;

  if (n < *cap)
    return 0;
  if (ncap <= n || ncap > SIZE_MAX / size)
    return -ENOMEM;
  /* arrp points to a pointer to the elements: read and written whole,
   * as bytes, whatever its element type (POSIX: one representation).
   */
  memcpy(&p, arrp, sizeof(p));
  if ((np = realloc(p, ncap * size)) == NULL)
    return -ENOMEM; /* p stands, still the caller's */
  memcpy(arrp, &np, sizeof(np));
  *cap = ncap;
  return 0;
}

int pc__buf_reserve(pc__buf_t *b, size_t more) {
  size_t want, cap;
  unsigned char *p;

  if (more <= b->cap - b->len)
    return 0;
  if (more > SIZE_MAX / 2 - b->len)
    return -ENOMEM;
  want = b->len + more;
  cap = b->cap ? b->cap : 256;
  while (cap < want)
    cap *= 2;
  p = realloc(b->data, cap);
  if (p == NULL)
    return -ENOMEM;
  b->data = p;
  b->cap = cap;
  return 0;
}

int pc__buf_append(pc__buf_t *b, const void *p, size_t n) {
  int err = pc__buf_reserve(b, n);
  if (err)
    return err;
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

int pc__buf_puts(pc__buf_t *b, const char *s) {
  return pc__buf_append(b, s, strlen(s));
}

int pc__buf_printf(pc__buf_t *b, const char *fmt, ...) {
  va_list ap;
  int n, err;

  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return -EINVAL;
  err = pc__buf_reserve(b, (size_t)n + 1);
  if (err)
    return err;
  va_start(ap, fmt);
  vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

void pc__buf_free(pc__buf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

char *pc__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p != NULL)
    memcpy(p, s, n);
  return p;
}

char *pc__path_join(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  int slash = na > 0 && a[na - 1] != '/';
  char *p;

  if (na == 0)
    return pc__strdup(b);
  p = malloc(na + slash + nb + 1);
  if (p == NULL)
    return NULL;
  memcpy(p, a, na);
  if (slash)
    p[na] = '/';
  memcpy(p + na + slash, b, nb + 1);
  return p;
}
