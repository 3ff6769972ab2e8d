/* Glob matching for --include and --exclude.
 *
 * '*' and '?' never match '/'; '**' matches across directories, and "**" +
 * "/" also matches no directory at all, so "**" "/x.js" matches "x.js" and
 * "a/b/x.js". A glob with no '/' is matched against the base name, the way
 * .gitignore and rsync treat such patterns. '\' quotes the next character.
 */
#include "common.h"

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

static int match(const char *p, const char *s) {
  for (;;) {
    switch (*p) {
    case '\0':
      return *s == '\0';
    case '*':
      if (p[1] == '*') {
        const char *q = p + 2;
        while (*q == '*')
          q++;
        if (*q == '/') {
          /* "**" "/": zero or more whole directories. */
          if (match(q + 1, s))
            return 1;
          for (; *s != '\0'; s++)
            if (*s == '/' && match(q + 1, s + 1))
              return 1;
          return 0;
        }
        for (;; s++) {
          if (match(q, s))
            return 1;
          if (*s == '\0')
            return 0;
        }
      }
      p++;
      for (;; s++) {
        if (match(p, s))
          return 1;
        if (*s == '\0' || *s == '/')
          return 0;
      }
    case '?':
      if (*s == '\0' || *s == '/')
        return 0;
      p++;
      s++;
      break;
    case '[': {
      const char *end;
      int hit;
      if (*s == '\0')
        return 0;
      hit = match_class(p + 1, (unsigned char)*s, &end);
      if (end == NULL) {
        if (*s != '[')
          return 0;
        p++;
        s++;
        break;
      }
      if (!hit)
        return 0;
      p = end;
      s++;
      break;
    }
    case '\\':
      if (p[1] != '\0')
        p++;
      /* fall through */
    default:
      if (*p != *s)
        return 0;
      p++;
      s++;
      break;
    }
  }
}

int pc_glob_match(const char *glob, const char *path) {
  if (strchr(glob, '/') == NULL) {
    const char *base = strrchr(path, '/');
    return match(glob, base != NULL ? base + 1 : path);
  }
  /* A leading "/" anchors at the root, which every glob with '/' is. */
  if (glob[0] == '/')
    glob++;
  return match(glob, path);
}
