/* Name templates (dictname.h): parsed each time they are used, as a name is
 * matched once per file and templates are a few dozen bytes; no regex
 * library, no allocation. */
#include "codec/dictname.h"

#include <errno.h>
#include <string.h>

const char *const pc__dictname_defaults[] = {"[name].[hash:12].[ext]",
                                             "[name].[hash].[ext]",
                                             "[name]-[b64hash:8].[ext]", NULL};

typedef struct tmpl {
  const char *pre; /* literal between [name] and the hash */
  size_t npre;
  const char *post; /* literal between the hash and [ext] ('.' at least) */
  size_t npost;
  int b64;       /* hash alphabet: base64url, else hex */
  size_t lo, hi; /* hash length range */
} tmpl_t;

static int parse_len(const char *p, const char **end, size_t *n) {
  size_t v = 0;
  if (*p < '0' || *p > '9')
    return -EINVAL;
  while (*p >= '0' && *p <= '9' && v < 1000)
    v = v * 10 + (size_t)(*p++ - '0');
  *end = p;
  *n = v;
  return v >= 4 && v <= 64 ? 0 : -EINVAL;
}

/* "[name]" PRE HASH POST "[ext]": nothing before [name], nothing after
 * [ext], POST ends with '.'. */
static int parse(const char *t, tmpl_t *o) {
  const char *h, *e, *p;

  if (strncmp(t, "[name]", 6) != 0)
    return -EINVAL;
  t += 6;
  if ((h = strchr(t, '[')) == NULL)
    return -EINVAL;
  o->pre = t, o->npre = (size_t)(h - t);
  o->b64 = strncmp(h, "[b64hash", 8) == 0;
  p = h + (o->b64 ? 8 : 5);
  if (!o->b64 && strncmp(h, "[hash", 5) != 0)
    return -EINVAL;
  if (*p == ':') {
    if (parse_len(p + 1, &p, &o->lo) != 0)
      return -EINVAL;
    o->hi = o->lo;
  } else
    o->lo = 8, o->hi = 64;
  if (*p++ != ']' || (e = strstr(p, "[ext]")) == NULL || e[5] != '\0')
    return -EINVAL;
  o->post = p, o->npost = (size_t)(e - p);
  if (o->npost == 0 || p[o->npost - 1] != '.' || memchr(p, '[', o->npost) ||
      memchr(o->pre, '[', o->npre) || memchr(o->pre, ']', o->npre))
    return -EINVAL;
  return 0;
}

int pc__dictname_check(const char *tmpl) {
  tmpl_t t;
  return parse(tmpl, &t);
}

static int in_alphabet(int c, int b64) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
    return 1;
  return b64 && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                 c == '-');
}

/* A base64url hash has an upper-case letter or a digit: "settings" in
 * "app-settings.js" is a word, not Rollup's hash (all lower-case letters
 * in 8 random base64url characters: 1 in 1,300). */
static int looks_random(const char *p, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if ((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9'))
      return 1;
  return 0;
}

/* The hash's start and length in name under t, or -1. The extension is the
 * part after the last dot; the hash ends where POST (without its final
 * dot) begins, right before that dot. */
static long match(const tmpl_t *t, const char *name, size_t *hlen) {
  const char *dot = strrchr(name, '.');
  size_t before, i, len, mid = t->npost - 1; /* POST without its last '.' */

  if (dot == NULL || dot == name || dot[1] == '\0')
    return -1;
  before = (size_t)(dot - name);
  if (before < mid || memcmp(name + before - mid, t->post, mid) != 0)
    return -1;
  before -= mid; /* name[0..before) is [name] PRE [hash] */
  for (len = 0; len < before && len < t->hi &&
                in_alphabet((unsigned char)name[before - 1 - len], t->b64);
       len++)
    ;
  /* The hash is the longest run that leaves PRE and a [name] before it. */
  for (; len >= t->lo; len--) {
    i = before - len; /* the hash starts here */
    if (i >= t->npre + 1 && memcmp(name + i - t->npre, t->pre, t->npre) == 0 &&
        (!t->b64 || looks_random(name + i, len))) {
      *hlen = len;
      return (long)i;
    }
    if (len == 0)
      break;
  }
  return -1;
}

int pc__dictname_key(const char *const *tmpls, size_t n, const char *name,
                     char *key, size_t cap) {
  size_t k, nl = strlen(name);

  for (k = 0; k < n; k++) {
    tmpl_t t;
    size_t hlen;
    long at;
    if (parse(tmpls[k], &t) != 0 || (at = match(&t, name, &hlen)) < 0)
      continue;
    if (nl - hlen + 2 > cap)
      return -ENAMETOOLONG;
    memcpy(key, name, (size_t)at);
    key[at] = '*';
    memcpy(key + at + 1, name + at + hlen, nl - (size_t)at - hlen + 1);
    return (int)(nl - hlen + 1);
  }
  return 0;
}
