/* Glob matching for --include and --exclude.
 *
 * '*' and '?' never match '/'; '**' matches across directories, and "**" +
 * "/" also matches no directory at all, so "**" "/x.js" matches "x.js" and
 * "a/b/x.js". A glob with no '/' is matched against the base name, the way
 * .gitignore and rsync treat such patterns. '\' quotes the next character.
 */
#include "common/glob.h"

#include <stdlib.h>
#include <string.h>

/* Matches a bracket class at p (just past '[') against c. Returns the
 * position after ']' in *end, or sets *end NULL when the class is not closed
 * (then '[' is an ordinary character).
 */
static int match_class(const char *p, unsigned char c, const char **end) {
  int neg = 0, hit = 0;
  const char *q = p;

  if (*q == '!' || *q == '^') {
    neg = 1;
    q++;
  }
  /* A ']' right after the opening bracket is a member. */
  if (*q == ']') {
    hit |= c == ']';
    q++;
  }
  while (*q != '\0' && *q != ']') {
    unsigned char lo = (unsigned char)*q, hi;
    if (lo == '\\' && q[1] != '\0')
      lo = (unsigned char)*++q;
    if (q[1] == '-' && q[2] != '\0' && q[2] != ']') {
      hi = (unsigned char)q[2];
      if (hi == '\\' && q[3] != '\0') {
        hi = (unsigned char)q[3];
        q++;
      }
      hit |= c >= lo && c <= hi;
      q += 3;
    } else {
      hit |= c == lo;
      q++;
    }
  }
  if (*q != ']') {
    *end = NULL;
    return 0;
  }
  *end = q + 1;
  return c != '/' && (hit ^ neg);
}

/* The glob is compiled to a small NFA, one state per token, and run over
 * the path with a set of live states: time O(glob x path) whatever the
 * pattern, where backtracking is exponential on globs like "*a*a*a*a*b"
 * (found by the fuzzer).
 */
enum { T_LIT, T_ANY, T_CLASS, T_STAR, T_DSTAR, T_DSLASH };

typedef struct token {
  unsigned char kind;
  unsigned char c; /* T_LIT */
  const char *cls; /* T_CLASS: just past '[' */
} token_t;

/* Compiles p into t (room for strlen(p) tokens). Returns the count. */
static size_t compile(const char *p, token_t *t) {
  size_t n = 0;
  while (*p != '\0') {
    token_t *k = &t[n++];
    switch (*p) {
    case '*':
      if (p[1] == '*') {
        while (*p == '*')
          p++;
        if (*p == '/') {
          k->kind = T_DSLASH; /* zero or more whole directories */
          p++;
        } else {
          k->kind = T_DSTAR;
        }
        continue;
      }
      k->kind = T_STAR;
      p++;
      continue;
    case '?':
      k->kind = T_ANY;
      p++;
      continue;
    case '[': {
      const char *end;
      match_class(p + 1, 0, &end);
      if (end != NULL) {
        k->kind = T_CLASS;
        k->cls = p + 1;
        p = end;
        continue;
      }
      break; /* an unclosed '[' is itself */
    }
    case '\\':
      if (p[1] != '\0')
        p++;
      break;
    default:
      break;
    }
    k->kind = T_LIT;
    k->c = (unsigned char)*p++;
  }
  return n;
}

/* Adds the states reachable without input. A star may match nothing at
 * any time; "**" + "/" may match nothing only where it is entered, not
 * half-way through a directory name: `fresh` marks states entered from
 * their predecessor rather than kept by their own loop.
 */
static void closure(const token_t *t, size_t n, unsigned char *on,
                    unsigned char *fresh) {
  size_t i;
  for (i = 0; i < n; i++) {
    if (on[i] && (t[i].kind == T_STAR || t[i].kind == T_DSTAR ||
                  (t[i].kind == T_DSLASH && fresh[i]))) {
      on[i + 1] = 1;
      fresh[i + 1] = 1;
    }
  }
}

/* One input byte c from the states `cur`: the states it leads to, in
 * next (fnext: entered from their predecessor). 1 when any is on.
 */
static int step_all(const token_t *t, size_t n, unsigned char c,
                    const unsigned char *cur, unsigned char *next,
                    unsigned char *fnext) {
  size_t i;
  int any = 0;

  memset(next, 0, n + 1);
  memset(fnext, 0, n + 1);
  for (i = 0; i < n; i++) {
    const char *end;
    int step = 0;
    if (!cur[i])
      continue;
    switch (t[i].kind) {
    case T_LIT:
      step = t[i].c == c;
      break;
    case T_ANY:
      step = c != '/';
      break;
    case T_CLASS:
      step = match_class(t[i].cls, c, &end);
      break;
    case T_STAR:
      next[i] |= c != '/';
      break;
    case T_DSTAR:
      next[i] = 1;
      break;
    case T_DSLASH:
      next[i] = 1;
      step = c == '/';
      break;
    }
    if (step) {
      next[i + 1] = 1;
      fnext[i + 1] = 1;
    }
  }
  closure(t, n, next, fnext);
  for (i = 0; i <= n && !any; i++)
    any = next[i];
  return any;
}

static int match(const char *p, const char *s) {
  size_t plen = strlen(p), n;
  unsigned char small[4 * 64], *mem = small, *cur, *next, *fcur, *fnext;
  token_t tsmall[64], *t = tsmall;
  int hit = 0;

  if (plen + 1 > 64) {
    mem = malloc(4 * (plen + 1));
    t = malloc(plen * sizeof(*t));
    if (mem == NULL || t == NULL) {
      hit = 0; /* cannot match without memory: treat as no match */
      goto out;
    }
  }
  n = compile(p, t);
  cur = mem;
  next = mem + (plen + 1);
  fcur = mem + 2 * (plen + 1);
  fnext = mem + 3 * (plen + 1);
  memset(cur, 0, n + 1);
  memset(fcur, 0, n + 1);
  cur[0] = fcur[0] = 1;
  closure(t, n, cur, fcur);
  for (; *s != '\0'; s++) {
    unsigned char *tmp;
    if (!step_all(t, n, (unsigned char)*s, cur, next, fnext))
      goto out;
    tmp = cur;
    cur = next;
    next = tmp;
    tmp = fcur;
    fcur = fnext;
    fnext = tmp;
  }
  hit = cur[n];
out:
  if (mem != small)
    free(mem);
  if (t != tsmall)
    free(t);
  return hit;
}

int pc__glob_match(const char *glob, const char *path) {
  if (strchr(glob, '/') == NULL) {
    const char *base = strrchr(path, '/');
    return match(glob, base != NULL ? base + 1 : path);
  }
  /* A leading "/" anchors at the root, which every glob with '/' is. */
  if (glob[0] == '/')
    glob++;
  return match(glob, path);
}
