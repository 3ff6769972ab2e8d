/* Django's staticfiles.json, and a run's manifests (djmanifest.h). Django
 * writes {"paths": {...}, "version": "1.0"} (3.2) or adds "hash" and
 * "version": "1.1" (4.2 on); Django itself refuses another version, and
 * so does this.
 */
#include "manifest/djmanifest.h"

#include "walk/walk.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes read from a descriptor at a time. */
#define CHUNK ((size_t)64 << 10)

/* A pair while the pool may still move (offsets in it), then as the
 * manifest keeps it (pointers): one array, turned over in place.
 */
typedef union slot {
  struct {
    size_t name, hashed;
  } off;
  pc__djpair_t p;
} slot_t;

_Static_assert(sizeof(slot_t) == sizeof(pc__djpair_t),
               "a pair's offsets and its pointers take one slot");

/* The reader: the text (from memory, or from a descriptor a chunk at a
 * time), and what is kept of it, within its budget. Nothing of the text is
 * kept but the strings: a manifest of 64 MiB is read in 64 KiB, and what
 * it holds after costs what its names take and 24 bytes a pair.
 */
typedef struct rd {
  const unsigned char *p, *end;
  int fd;             /* -1: the text is all in [p, end) */
  int back;           /* a byte given back (-2: none) */
  int err;            /* the first error: it ends the parse */
  unsigned char *buf; /* CHUNK bytes, with fd */
  pc__buf_t pool;     /* every string kept, NUL-terminated */
  slot_t *pairs;
  size_t npairs, cappairs;
  union key {
    size_t off;    /* in pool, while it may move */
    const char *p; /* once it is whole */
  } * keys;        /* the top level's keys */
  size_t nkeys, capkeys;
  size_t version; /* offset of "version"'s string, or SIZE_MAX */
  uint64_t budget;
} rd_t;

/* What r holds now, and what its final tables will add. */
static uint64_t rd_mem(const rd_t *r) {
  return (uint64_t)r->pool.cap + (r->fd >= 0 ? CHUNK : 0) +
         (uint64_t)r->cappairs * sizeof(slot_t) +
         (uint64_t)r->capkeys * sizeof(union key);
}

/* -ENOMEM, or PC_EDJMEMORY when r's budget does not hold `more` bytes
 * beside what r has.
 */
static int over(const rd_t *r, uint64_t more) {
  return rd_mem(r) + more > r->budget ? PC_EDJMEMORY : 0;
}

static int fail(rd_t *r, int err) {
  if (r->err == 0)
    r->err = err;
  return -1;
}

/* The next byte, or -1 at the end or on an error (r->err). */
static int next(rd_t *r) {
  if (r->back != -2) {
    int c = r->back;
    r->back = -2;
    return c;
  }
  if (r->p == r->end && r->fd >= 0 && r->err == 0) {
    ssize_t n;
    do
      n = read(r->fd, r->buf, CHUNK);
    while (n < 0 && errno == EINTR);
    if (n < 0)
      return fail(r, PC__ERRNO());
    r->p = r->buf;
    r->end = r->buf + n;
  }
  return r->p < r->end ? *r->p++ : -1;
}

/* The next byte that is not JSON's whitespace. */
static int ws(rd_t *r) {
  int c;

  do
    c = next(r);
  while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
  return c;
}

static int bad(rd_t *r) { return fail(r, PC_EDJMANIFEST); }

static int put(rd_t *r, const void *p, size_t n) {
  if (n > r->pool.cap - r->pool.len) {
    int err = over(r, r->pool.cap + n); /* a doubling, at most */
    if (err == 0)
      err = pc__buf_reserve(&r->pool, n);
    if (err != 0)
      return fail(r, err);
  }
  memcpy(r->pool.data + r->pool.len, p, n);
  r->pool.len += n;
  return 0;
}

static int hex4(rd_t *r) {
  int k, v = 0;

  for (k = 0; k < 4; k++) {
    int c = next(r), d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if ((c | 32) >= 'a' && (c | 32) <= 'f')
      d = (c | 32) - 'a' + 10;
    else
      return -1;
    v = v * 16 + d;
  }
  return v;
}

/* A \u escape's code point (the backslash and the u read), a surrogate
 * pair taken whole; -1 when it is none (a lone surrogate, U+0000: jansson
 * refuses both, as Django's names cannot hold them).
 */
static long code_point(rd_t *r) {
  long v = hex4(r), lo;

  if (v <= 0 || (v >= 0xDC00 && v <= 0xDFFF))
    return -1;
  if (v < 0xD800 || v > 0xDBFF)
    return v;
  if (next(r) != '\\' || next(r) != 'u' || (lo = hex4(r)) < 0xDC00 ||
      lo > 0xDFFF)
    return -1;
  return 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
}

static int put_utf8(rd_t *r, long v) {
  unsigned char u[4];
  size_t n;

  if (v < 0x80) {
    u[0] = (unsigned char)v;
    n = 1;
  } else if (v < 0x800) {
    u[0] = (unsigned char)(0xC0 | (v >> 6));
    u[1] = (unsigned char)(0x80 | (v & 0x3F));
    n = 2;
  } else if (v < 0x10000) {
    u[0] = (unsigned char)(0xE0 | (v >> 12));
    u[1] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
    u[2] = (unsigned char)(0x80 | (v & 0x3F));
    n = 3;
  } else {
    u[0] = (unsigned char)(0xF0 | (v >> 18));
    u[1] = (unsigned char)(0x80 | ((v >> 12) & 0x3F));
    u[2] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
    u[3] = (unsigned char)(0x80 | (v & 0x3F));
    n = 4;
  }
  return put(r, u, n);
}

/* A raw UTF-8 sequence whose first byte is c (>= 0x80): shortest form, no
 * surrogate, at most U+10FFFF, as jansson checks it.
 */
static int put_raw(rd_t *r, int c) {
  unsigned char u[4];
  int n, k, lo = 0x80, hi = 0xBF;

  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return bad(r);
  if (c == 0xE0)
    lo = 0xA0;
  else if (c == 0xED)
    hi = 0x9F;
  else if (c == 0xF0)
    lo = 0x90;
  else if (c == 0xF4)
    hi = 0x8F;
  u[0] = (unsigned char)c;
  for (k = 1; k < n; k++) {
    int d = next(r);
    if (d < lo || d > hi)
      return bad(r);
    u[k] = (unsigned char)d;
    lo = 0x80;
    hi = 0xBF;
  }
  return put(r, u, (size_t)n);
}

/* A string, its opening quote read, decoded into the pool with a NUL
 * after it: 0 with *off where it starts, or -1. Escapes and raw bytes as
 * RFC 8259 and jansson take them.
 */
static int string(rd_t *r, size_t *off) {
  static const char esc[] = "\"\\/bfnrt", val[] = "\"\\/\b\f\n\r\t";

  *off = r->pool.len;
  for (;;) {
    int c = next(r);
    const char *e;
    if (c == '"')
      return put(r, "", 1);
    if (c < 0x20) /* the end, or a control byte */
      return bad(r);
    if (c >= 0x80) {
      if (put_raw(r, c) != 0)
        return -1;
    } else if (c != '\\') {
      unsigned char b = (unsigned char)c;
      if (put(r, &b, 1) != 0)
        return -1;
    } else if ((c = next(r)) == 'u') {
      long v = code_point(r);
      if (v < 0 || put_utf8(r, v) != 0)
        return bad(r);
    } else if (c > 0 && (e = strchr(esc, c)) != NULL) {
      if (put(r, &val[e - esc], 1) != 0)
        return -1;
    } else {
      return bad(r);
    }
  }
}

static int digits(rd_t *r, int *c) {
  int n = 0;

  while (*c >= '0' && *c <= '9') {
    unsigned char b = (unsigned char)*c;
    if (put(r, &b, 1) != 0)
      return -1;
    *c = next(r);
    n++;
  }
  return n;
}

/* A number whose first byte is c, as jansson reads one: RFC 8259's
 * grammar, and refused when an integer is out of int64_t's range or a
 * real out of a double's (jansson's "too big integer", "real number
 * overflow"). Its text goes to the pool's end and is dropped.
 */
/* Digits after a '.' or an exponent's sign: at least one. */
static int some_digits(rd_t *r, int *c) {
  int n = digits(r, c);
  return n == 0 ? bad(r) : n < 0 ? -1 : 0;
}

static int number(rd_t *r, int c) {
  size_t at = r->pool.len;
  int real = 0, out;
  unsigned char b;

  if (c == '-') {
    if (put(r, "-", 1) != 0)
      return -1;
    c = next(r);
  }
  if (c == '0') {
    if (put(r, "0", 1) != 0)
      return -1;
    if ((c = next(r)) >= '0' && c <= '9')
      return bad(r);
  } else if (some_digits(r, &c) != 0) {
    return -1;
  }
  if (c == '.') {
    real = 1;
    c = next(r);
    if (put(r, ".", 1) != 0 || some_digits(r, &c) != 0)
      return -1;
  }
  if (c == 'e' || c == 'E') {
    real = 1;
    if (put(r, "e", 1) != 0)
      return -1;
    if ((c = next(r)) == '+' || c == '-') {
      b = (unsigned char)c;
      if (put(r, &b, 1) != 0)
        return -1;
      c = next(r);
    }
    if (some_digits(r, &c) != 0)
      return -1;
  }
  r->back = c;
  if (put(r, "", 1) != 0)
    return -1;
  errno = 0;
  if (real) {
    double d = strtod((char *)r->pool.data + at, NULL);
    out = (d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE;
  } else {
    (void)strtoll((char *)r->pool.data + at, NULL, 10);
    out = errno == ERANGE;
  }
  r->pool.len = at;
  return out ? bad(r) : 0;
}

/* The rest of `word`, its first byte read. */
static int literal(rd_t *r, const char *word) {
  for (word++; *word != '\0'; word++)
    if (next(r) != *word)
      return bad(r);
  return 0;
}

/* A value other than "paths"' (first byte c): a string, a number, true,
 * false or null. An array or an object, which Django never writes there,
 * is refused (its bytes could cost what no Django manifest costs).
 */
static int scalar(rd_t *r, int c) {
  size_t off;

  switch (c) {
  case '"':
    if (string(r, &off) != 0)
      return -1;
    r->pool.len = off;
    return 0;
  case 't':
    return literal(r, "true");
  case 'f':
    return literal(r, "false");
  case 'n':
    return literal(r, "null");
  default:
    if (c == '-' || (c >= '0' && c <= '9'))
      return number(r, c);
    return bad(r);
  }
}

/* Room for element n of an array of `size` bytes each, within the
 * budget.
 */
static int grow(rd_t *r, void *arrp, size_t n, size_t *cap, size_t size,
                size_t first) {
  int err = 0;

  if (n >= *cap) {
    uint64_t more = (uint64_t)(*cap ? *cap : first) * size;
    if ((err = over(r, more)) == 0)
      err = pc__grow(arrp, n, cap, size, first);
  }
  return err != 0 ? fail(r, err) : 0;
}

/* "paths"' object, its '{' read: each name and hashed name kept. */
static int paths(rd_t *r) {
  int c = ws(r);

  if (c == '}')
    return 0;
  for (;;) {
    size_t name, hashed;
    if (c != '"' || string(r, &name) != 0 || ws(r) != ':' || ws(r) != '"' ||
        string(r, &hashed) != 0)
      return bad(r);
    if (r->pool.data[name] == '\0' || r->pool.data[hashed] == '\0')
      return bad(r); /* an empty name: none of Django's */
    if (grow(r, &r->pairs, r->npairs, &r->cappairs, sizeof(slot_t), 256) != 0)
      return -1;
    r->pairs[r->npairs].off.name = name;
    r->pairs[r->npairs++].off.hashed = hashed;
    if ((c = ws(r)) == '}')
      return 0;
    if (c != ',')
      return bad(r);
    c = ws(r);
  }
}

/* One member of the top level, its key's opening quote read. */
static int member(rd_t *r) {
  size_t key;
  const char *k;
  int c;

  if (string(r, &key) != 0 || ws(r) != ':' ||
      grow(r, &r->keys, r->nkeys, &r->capkeys, sizeof(*r->keys), 8) != 0)
    return -1;
  r->keys[r->nkeys++].off = key;
  k = (const char *)r->pool.data + key;
  c = ws(r);
  if (strcmp(k, "paths") == 0)
    return c == '{' ? paths(r) : bad(r);
  if (strcmp(k, "version") == 0 && c == '"')
    return string(r, &r->version);
  if (strcmp(k, "version") == 0)
    r->version = SIZE_MAX; /* not a string: refused below */
  return scalar(r, c);
}

static int cmp_key(const void *a, const void *b) {
  return strcmp(((const union key *)a)->p, ((const union key *)b)->p);
}

/* The top level: an object, whitespace only after it, no key twice (a key
 * given twice would be read as Python's json reads it, the last: refused,
 * as a manifest no Django wrote), "version" "1.<digits>", "paths" there.
 */
static int document(rd_t *r) {
  int c = ws(r), paths_seen = 0;
  size_t k;

  if (c != '{')
    return bad(r);
  if ((c = ws(r)) != '}') {
    for (;;) {
      if (c != '"' || member(r) != 0)
        return bad(r);
      if ((c = ws(r)) == '}')
        break;
      if (c != ',')
        return bad(r);
      c = ws(r);
    }
  }
  if (ws(r) != -1 || r->err != 0)
    return bad(r);
  for (k = 0; k < r->nkeys; k++)
    r->keys[k].p = (const char *)r->pool.data + r->keys[k].off;
  if (r->nkeys > 1)
    qsort(r->keys, r->nkeys, sizeof(*r->keys), cmp_key);
  for (k = 0; k < r->nkeys; k++) {
    if (k > 0 && strcmp(r->keys[k - 1].p, r->keys[k].p) == 0)
      return bad(r);
    paths_seen |= strcmp(r->keys[k].p, "paths") == 0;
  }
  if (!paths_seen || r->version == SIZE_MAX)
    return bad(r);
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const pc__djpair_t *)a)->name,
                ((const pc__djpair_t *)b)->name);
}

static int cmp_hashed(const void *a, const void *b) {
  return strcmp((*(pc__djpair_t *const *)a)->hashed,
                (*(pc__djpair_t *const *)b)->hashed);
}

/* "1." and at least one digit, nothing else. */
static int version_ok(const char *s) {
  size_t n;

  if (strncmp(s, "1.", 2) != 0)
    return 0;
  n = strspn(s + 2, "0123456789");
  return n > 0 && s[2 + n] == '\0';
}

/* Leaves out of byhashed every hashed name given for two names or more. */
static void drop_shared(pc__djman_t *m) {
  size_t i = 0, j, out = 0;

  while (i < m->n) {
    for (j = i + 1; j < m->n &&
                    strcmp(m->byhashed[j]->hashed, m->byhashed[i]->hashed) == 0;
         j++)
      ;
    if (j == i + 1)
      m->byhashed[out++] = m->byhashed[i];
    i = j;
  }
  m->nhashed = out;
}

/* What r keeps, to its size: held for the whole run, the room left by
 * doubling is not.
 */
static void shrink(rd_t *r) {
  void *p;

  if ((p = realloc(r->pairs, (r->npairs + 1) * sizeof(slot_t))) != NULL) {
    r->pairs = p;
    r->cappairs = r->npairs + 1;
  }
  if (r->pool.len > 0 && (p = realloc(r->pool.data, r->pool.len)) != NULL) {
    r->pool.data = p;
    r->pool.cap = r->pool.len;
  }
}

/* r's pairs into m's tables (m takes r's pool). A name given twice is
 * refused, as a key twice is.
 */
static int fill(pc__djman_t *m, rd_t *r) {
  size_t n = r->npairs, k;
  uint64_t more = (uint64_t)(n + 1) * sizeof(*m->byhashed);
  int err;

  if (r->version == SIZE_MAX ||
      !version_ok((const char *)r->pool.data + r->version))
    return PC_EDJMANIFEST;
  if ((err = over(r, more)) != 0)
    return err;
  if (grow(r, &r->pairs, n, &r->cappairs, sizeof(slot_t), 1) != 0)
    return r->err;
  if ((m->byhashed = calloc(n + 1, sizeof(*m->byhashed))) == NULL)
    return -ENOMEM;
  shrink(r);
  m->pool = (char *)r->pool.data;
  r->pool.data = NULL;
  for (k = 0; k < n; k++) {
    slot_t *x = &r->pairs[k];
    size_t name = x->off.name, hashed = x->off.hashed;
    x->p.name = m->pool + name;
    x->p.hashed = m->pool + hashed;
  }
  m->byname = &r->pairs[0].p; /* the slots, turned over: m's now */
  r->pairs = NULL;
  m->n = n;
  m->mem = r->pool.cap + (uint64_t)r->cappairs * sizeof(slot_t) + more;
  qsort(m->byname, m->n, sizeof(*m->byname), cmp_name);
  for (k = 0; k < m->n; k++) {
    if (k > 0 && strcmp(m->byname[k - 1].name, m->byname[k].name) == 0)
      return PC_EDJMANIFEST;
    m->byhashed[k] = &m->byname[k];
  }
  qsort(m->byhashed, m->n, sizeof(*m->byhashed), cmp_hashed);
  drop_shared(m);
  return 0;
}

/* Parses what r reads into *m (zeroed first); frees r's own. */
static int parse(pc__djman_t *m, rd_t *r) {
  int err;

  memset(m, 0, sizeof(*m));
  r->back = -2;
  r->version = SIZE_MAX;
  err = document(r) == 0 ? fill(m, r) : r->err;
  pc__buf_free(&r->pool);
  free(r->pairs);
  free(r->keys);
  if (err != 0)
    pc__djman_free(m);
  return err;
}

int pc__djman_parse(pc__djman_t *m, const char *text, size_t len) {
  rd_t r;

  memset(&r, 0, sizeof(r));
  r.p = (const unsigned char *)text;
  r.end = r.p + len;
  r.fd = -1;
  r.budget = UINT64_MAX;
  return parse(m, &r);
}

int pc__djman_read(pc__djman_t *m, int dirfd, const char *name, int nofollow,
                   uint64_t budget) {
  struct stat st;
  rd_t r;
  int fd, err = 0;

  memset(m, 0, sizeof(*m));
  fd = openat(dirfd, name,
              O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                  (nofollow ? O_NOFOLLOW : 0));
  if (fd < 0)
    return errno == ELOOP && nofollow ? PC_ENOTREG : PC__ERRNO();
  memset(&r, 0, sizeof(r));
  r.fd = fd;
  r.budget = budget;
  if (fstat(fd, &st) != 0)
    err = PC__ERRNO();
  else if (!S_ISREG(st.st_mode))
    err = PC_ENOTREG;
  else if ((uint64_t)st.st_size > PC__DJMANIFEST_MAX)
    err = -EFBIG;
  else if ((err = over(&r, 0)) == 0 && (r.buf = malloc(CHUNK)) == NULL)
    err = -ENOMEM;
  if (err == 0) {
    r.p = r.end = r.buf;
    err = parse(m, &r);
  }
  free(r.buf);
  close(fd);
  return err;
}

const char *pc__djman_hashed(const pc__djman_t *m, const char *name) {
  pc__djpair_t probe = {name, NULL};
  const pc__djpair_t *hit;

  if (m->n == 0)
    return NULL;
  hit = bsearch(&probe, m->byname, m->n, sizeof(*m->byname), cmp_name);
  return hit != NULL ? hit->hashed : NULL;
}

const char *pc__djman_name(const pc__djman_t *m, const char *hashed) {
  pc__djpair_t probe = {NULL, hashed};
  const pc__djpair_t *pp = &probe;
  pc__djpair_t *const *hit;

  if (m->nhashed == 0)
    return NULL;
  hit = bsearch(&pp, m->byhashed, m->nhashed, sizeof(*m->byhashed), cmp_hashed);
  return hit != NULL ? (*hit)->name : NULL;
}

void pc__djman_free(pc__djman_t *m) {
  free(m->byname);
  free(m->byhashed);
  free(m->pool);
  memset(m, 0, sizeof(*m));
}

/* Reads one manifest of the run into m, within what is left of d's
 * budget: 0 (read, or absent where absence is no news: `quiet`), or
 * -ENOMEM; anything else is told.
 */
static int read_one(pc__djset_t *d, pc__djman_t *m, int dirfd, const char *dir,
                    const char *name, int quiet, pc__djset_err_t err,
                    void *ctx) {
  int e = pc__djman_read(m, dirfd, name, dir != NULL, d->budget - d->mem);

  d->mem += m->mem;
  if (e == 0 || e == -ENOMEM || (e == -ENOENT && quiet))
    return e == -ENOMEM ? e : 0;
  if (dir != NULL) {
    char *p = pc__path_join(dir, name);
    err(ctx, p != NULL ? p : name, e);
    free(p);
  } else {
    err(ctx, name, e);
  }
  return 0;
}

/* The PATHs' manifests, once a DIR's was read. */
static int open_current(pc__djset_t *d, pc__djset_err_t err, void *ctx) {
  uint32_t r;
  int any_file = 0, e = 0;

  if ((d->cur = calloc((size_t)d->nroots + 1, sizeof(*d->cur))) == NULL)
    return -ENOMEM;
  for (r = 0; e == 0 && r < d->nroots; r++) {
    const pc__root_t *root = &d->roots[r];
    if (root->file != NULL)
      any_file = 1;
    else if (root->fd >= 0 && !root->skip)
      e = read_one(d, &d->cur[r], root->fd, root->label, PC__DJMANIFEST_NAME, 1,
                   err, ctx);
  }
  if (e == 0 && any_file)
    e = read_one(d, &d->cur[d->nroots], AT_FDCWD, ".", PC__DJMANIFEST_NAME, 1,
                 err, ctx);
  return e;
}

int pc__djset_open(pc__djset_t *d, const pc_options_t *o, const int *dirfd,
                   const struct pc__root *roots, uint32_t nroots,
                   uint64_t budget, pc__djset_err_t err, void *ctx) {
  unsigned k;
  int e = 0;

  memset(d, 0, sizeof(*d));
  d->roots = roots;
  d->nroots = nroots;
  d->budget = budget;
  for (k = 0; e == 0 && k < o->n_dict_dirs && k < PC_DICT_DIRS_MAX; k++) {
    const char *given = o->dict_manifests ? o->dict_manifests[k] : NULL;
    if (given != NULL)
      e = read_one(d, &d->old[k], AT_FDCWD, NULL, given, 0, err, ctx);
    else if (dirfd[k] >= 0)
      e = read_one(d, &d->old[k], dirfd[k], o->dict_dirs[k],
                   PC__DJMANIFEST_NAME, 1, err, ctx);
    if (d->old[k].n > 0)
      d->any = 1;
  }
  if (e == 0 && d->any)
    e = open_current(d, err, ctx);
  if (e != 0)
    pc__djset_free(d);
  return e;
}

void pc__djset_free(pc__djset_t *d) {
  unsigned k;
  uint32_t r;

  for (k = 0; k < PC_DICT_DIRS_MAX; k++)
    pc__djman_free(&d->old[k]);
  for (r = 0; d->cur != NULL && r <= d->nroots; r++)
    pc__djman_free(&d->cur[r]);
  free(d->cur);
  memset(d, 0, sizeof(*d));
}

/* A file PATH's directory as given, less "./" ("" for the current one). */
static const char *given_dir(const char *dir) {
  while (dir[0] == '.' && dir[1] == '/') {
    dir += 2;
    while (dir[0] == '/')
      dir++;
  }
  return strcmp(dir, ".") == 0 ? "" : dir;
}

const char *pc__djset_find(const pc__djset_t *d, unsigned dir, uint32_t root,
                           const char *rel) {
  const pc__djman_t *cur;
  const char *name;
  char key[PATH_MAX];

  if (!d->any || dir >= PC_DICT_DIRS_MAX || d->old[dir].n == 0 ||
      root >= d->nroots)
    return NULL;
  if (d->roots[root].file != NULL) {
    const char *gd = given_dir(d->roots[root].dir);
    int n = snprintf(key, sizeof(key), "%s%s%s", gd, gd[0] ? "/" : "", rel);
    if (n < 0 || (size_t)n >= sizeof(key))
      return NULL;
    rel = key;
    cur = &d->cur[d->nroots];
  } else {
    cur = &d->cur[root];
  }
  if ((name = pc__djman_name(cur, rel)) == NULL)
    return NULL;
  return pc__djman_hashed(&d->old[dir], name);
}
