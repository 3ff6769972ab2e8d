/* Django's staticfiles.json, and a run's manifests (djmanifest.h). Django
 * writes {"paths": {...}, "version": "1.0"} (3.2) or adds "hash" and
 * "version": "1.1" (4.2 on); Django itself refuses another version, and
 * so does this.
 */
#include "manifest/djmanifest.h"

#include "walk/walk.h"

#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const pc__djpair_t *)a)->name,
                ((const pc__djpair_t *)b)->name);
}

static int cmp_hashed(const void *a, const void *b) {
  return strcmp((*(pc__djpair_t *const *)a)->hashed,
                (*(pc__djpair_t *const *)b)->hashed);
}

/* "1." and at least one digit, nothing else. */
static int version_ok(const json_t *v) {
  const char *s = json_string_value(v);
  size_t n;

  if (s == NULL || strncmp(s, "1.", 2) != 0)
    return 0;
  n = strspn(s + 2, "0123456789");
  return n > 0 && s[2 + n] == '\0';
}

/* The bytes the pool needs for paths' strings, or 0 when one is not a
 * non-empty string without a NUL (the manifest is refused).
 */
static size_t pool_size(json_t *paths) {
  const char *key;
  json_t *v;
  size_t total = 1;

  json_object_foreach(paths, key, v) {
    const char *h = json_string_value(v);
    size_t kl = strlen(key);
    if (h == NULL || kl == 0 || h[0] == '\0' ||
        strlen(h) != json_string_length(v))
      return 0;
    total += kl + 1 + json_string_length(v) + 1;
  }
  return total;
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

static int fill(pc__djman_t *m, json_t *paths) {
  size_t size = pool_size(paths), i = 0, k;
  const char *key;
  char *p;
  json_t *v;

  if (size == 0)
    return PC_EDJMANIFEST;
  m->n = json_object_size(paths);
  m->pool = malloc(size);
  m->byname = calloc(m->n + 1, sizeof(*m->byname));
  m->byhashed = calloc(m->n + 1, sizeof(*m->byhashed));
  if (m->pool == NULL || m->byname == NULL || m->byhashed == NULL)
    return -ENOMEM;
  p = m->pool;
  json_object_foreach(paths, key, v) {
    size_t kl = strlen(key) + 1, hl = json_string_length(v) + 1;
    m->byname[i].name = memcpy(p, key, kl);
    m->byname[i].hashed = memcpy(p + kl, json_string_value(v), hl);
    p += kl + hl;
    i++;
  }
  qsort(m->byname, m->n, sizeof(*m->byname), cmp_name);
  for (k = 0; k < m->n; k++)
    m->byhashed[k] = &m->byname[k];
  qsort(m->byhashed, m->n, sizeof(*m->byhashed), cmp_hashed);
  drop_shared(m);
  return 0;
}

int pc__djman_parse(pc__djman_t *m, const char *text, size_t len) {
  json_t *root, *paths;
  json_error_t jerr;
  int err = PC_EDJMANIFEST;

  memset(m, 0, sizeof(*m));
  /* A key given twice would be read as Python's json reads it (the last),
   * which jansson cannot say: refused, as a manifest no Django wrote.
   */
  root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL)
    return json_error_code(&jerr) == json_error_out_of_memory ? -ENOMEM
                                                              : PC_EDJMANIFEST;
  paths = json_object_get(root, "paths");
  if (json_is_object(root) && json_is_object(paths) &&
      version_ok(json_object_get(root, "version")))
    err = fill(m, paths);
  json_decref(root);
  if (err != 0)
    pc__djman_free(m);
  return err;
}

int pc__djman_read(pc__djman_t *m, int dirfd, const char *name, int nofollow) {
  struct stat st;
  char *text = NULL;
  int fd, err = 0;

  memset(m, 0, sizeof(*m));
  fd = openat(dirfd, name,
              O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                  (nofollow ? O_NOFOLLOW : 0));
  if (fd < 0)
    return errno == ELOOP && nofollow ? PC_ENOTREG : PC__ERRNO();
  if (fstat(fd, &st) != 0)
    err = PC__ERRNO();
  else if (!S_ISREG(st.st_mode))
    err = PC_ENOTREG;
  else if ((uint64_t)st.st_size > PC__DJMANIFEST_MAX)
    err = -EFBIG;
  else if ((text = malloc((size_t)st.st_size + 1)) == NULL)
    err = -ENOMEM;
  else if ((err = pc__read_full(fd, text, (size_t)st.st_size, 0)) == 0)
    err = pc__djman_parse(m, text, (size_t)st.st_size);
  free(text);
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

/* Reads one manifest of the run: 0 (read, or absent where absence is no
 * news: `quiet`), or -ENOMEM; anything else is told.
 */
static int read_one(pc__djman_t *m, int dirfd, const char *dir,
                    const char *name, int quiet, pc__djset_err_t err,
                    void *ctx) {
  int e = pc__djman_read(m, dirfd, name, dir != NULL);

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
      e = read_one(&d->cur[r], root->fd, root->label, PC__DJMANIFEST_NAME, 1,
                   err, ctx);
  }
  if (e == 0 && any_file)
    e = read_one(&d->cur[d->nroots], AT_FDCWD, ".", PC__DJMANIFEST_NAME, 1, err,
                 ctx);
  return e;
}

int pc__djset_open(pc__djset_t *d, const pc_options_t *o, const int *dirfd,
                   const struct pc__root *roots, uint32_t nroots,
                   pc__djset_err_t err, void *ctx) {
  unsigned k;
  int e = 0;

  memset(d, 0, sizeof(*d));
  d->roots = roots;
  d->nroots = nroots;
  for (k = 0; e == 0 && k < o->n_dict_dirs && k < PC_DICT_DIRS_MAX; k++) {
    const char *given = o->dict_manifests ? o->dict_manifests[k] : NULL;
    if (given != NULL)
      e = read_one(&d->old[k], AT_FDCWD, NULL, given, 0, err, ctx);
    else if (dirfd[k] >= 0)
      e = read_one(&d->old[k], dirfd[k], o->dict_dirs[k], PC__DJMANIFEST_NAME,
                   1, err, ctx);
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
