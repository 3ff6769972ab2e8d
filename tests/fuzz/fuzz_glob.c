/* libFuzzer target: pc__glob_match().
 *
 * Input: GLOB NUL PATH (no NUL: the whole input is the glob, the path is
 * empty). Besides "no crash, no UB, no leak", it checks what must hold for
 * any path:
 *  - the result is 0 or 1;
 *  - a glob without * ? [ \ and without '/' matches iff it equals the base
 *    name; one with '/' (after one leading '/') iff it equals the path;
 *  - "*" and "**" match every path; "?" repeated once per byte of the base
 *    name matches it;
 *  - the path with every byte quoted by '\' matches itself, also behind
 *    "**" "/"; the base name quoted matches the path.
 */
#include "common/glob.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Long inputs only slow the fuzzer down: names are at most 4 KiB. */
#define MAX_INPUT 8192

static void check(int cond) {
  if (!cond)
    abort();
}

static int has_special(const char *s) { return strpbrk(s, "*?[\\") != NULL; }

/* malloc'd prefix + s with every byte preceded by '\'. */
static char *quoted(const char *prefix, const char *s) {
  size_t pl = strlen(prefix), n = strlen(s), i;
  char *q = malloc(pl + 2 * n + 1), *o;
  if (q == NULL)
    abort();
  memcpy(q, prefix, pl);
  o = q + pl;
  for (i = 0; i < n; i++) {
    *o++ = '\\';
    *o++ = s[i];
  }
  *o = '\0';
  return q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul;
  char *glob, *path, *q;
  const char *base, *slash;
  size_t glen, plen;
  int m;

  if (size > MAX_INPUT)
    return 0;
  nul = memchr(data, '\0', size);
  glen = nul != NULL ? (size_t)(nul - data) : size;
  plen = nul != NULL ? size - glen - 1 : 0;
  glob = malloc(glen + 1);
  path = malloc(plen + 1);
  if (glob == NULL || path == NULL)
    abort();
  memcpy(glob, data, glen);
  glob[glen] = '\0';
  if (plen > 0)
    memcpy(path, nul + 1, plen);
  path[plen] = '\0';
  /* The path's own NULs end it, as they would in a real name. */
  plen = strlen(path);

  slash = strrchr(path, '/');
  base = slash != NULL ? slash + 1 : path;

  m = pc__glob_match(glob, path);
  check(m == 0 || m == 1);

  if (!has_special(glob)) {
    if (strchr(glob, '/') == NULL)
      check(m == (strcmp(glob, base) == 0));
    else
      check(m == (strcmp(glob[0] == '/' ? glob + 1 : glob, path) == 0));
  }

  check(pc__glob_match("*", path) == 1);
  check(pc__glob_match("**", path) == 1);

  if (strlen(base) <= 256) {
    char qs[257];
    memset(qs, '?', strlen(base));
    qs[strlen(base)] = '\0';
    check(pc__glob_match(qs, path) == 1);
  }

  q = quoted("", path);
  check(pc__glob_match(q, path) == 1);
  free(q);
  q = quoted("**/", path);
  check(pc__glob_match(q, path) == 1);
  free(q);
  q = quoted("", base);
  check(pc__glob_match(q, path) == 1);
  free(q);

  free(glob);
  free(path);
  return 0;
}
