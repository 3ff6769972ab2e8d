/* The mirror directory the walk is in (outdir.h). The walk gives out a
 * directory's entries together, so one mirror is open at a time: it
 * changes when the entries' directory does.
 */
#include "walk/outdir.h"

#include "fs/out.h"

#include <xxhash.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads the directory open at fd into m's listing, sorted. 0 or a
 * negative code.
 */
static int list(pc__mirror_t *m, int fd) {
  size_t cap = 0;
  DIR *dir;
  int dfd, err = 0;

  /* closedir() closes the descriptor it is given: a copy, m->fd stays. */
  if ((dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
    return PC__ERRNO();
  if ((dir = fdopendir(dfd)) == NULL) {
    err = PC__ERRNO();
    close(dfd);
    return err;
  }
  for (;;) {
    const struct dirent *d;
    errno = 0;
    if ((d = readdir(dir)) == NULL) {
      err = errno != 0 ? PC__ERRNO() : 0;
      break;
    }
    if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
      continue;
    if ((err = PC__GROW(m->names, m->ls.n, cap, 16)) != 0)
      break;
    if ((m->names[m->ls.n] = pc__strdup(d->d_name)) == NULL) {
      err = -ENOMEM;
      break;
    }
    m->ls.n++;
  }
  closedir(dir);
  if (m->ls.n > 1)
    qsort(m->names, m->ls.n, sizeof(*m->names), cmp_names);
  m->ls.names = m->names;
  return err;
}

void pc__mirror_free(pc__mirror_t *m) {
  size_t k;

  for (k = 0; k < m->ls.n; k++)
    free(m->names[k]);
  free(m->names);
  free(m->drel);
  if (m->fd >= 0)
    close(m->fd);
  *m = (pc__mirror_t)PC__MIRROR_INIT;
}

int pc__mirror_at(pc__mirror_t *m, int out_fd, const char *drel, int *looked) {
  int fd, err;

  *looked = 0;
  if (m->state != PC__MIRROR_NONE && strcmp(m->drel, drel) == 0)
    return 0;
  *looked = 1;
  pc__mirror_free(m);
  if ((m->drel = pc__strdup(drel)) == NULL)
    return -ENOMEM;
  fd = out_fd >= 0 ? pc__out_dir(out_fd, drel, strlen(drel), 0) : -ENOENT;
  if (fd < 0) {
    m->state = fd == -ENOENT ? PC__MIRROR_MISSING : PC__MIRROR_ERROR;
    return 0;
  }
  m->fd = fd;
  m->state = PC__MIRROR_OPEN;
  if ((err = list(m, fd)) != 0) {
    size_t k;
    /* Not known whole: nothing may be taken as absent from a part. */
    for (k = 0; k < m->ls.n; k++)
      free(m->names[k]);
    m->ls.n = 0;
    close(m->fd);
    m->fd = -1;
    m->state = PC__MIRROR_ERROR;
    if (err == -ENOMEM)
      return err;
  }
  return 0;
}

typedef struct rel_key {
  const char *p;
  size_t len;
} rel_key_t;

static int rel_is(const void *ctx, uint32_t item, const void *key) {
  const pc__relset_t *s = ctx;
  const rel_key_t *k = key;
  return strncmp(s->rels[item], k->p, k->len) == 0 &&
         s->rels[item][k->len] == '\0';
}

int pc__relset_claim(pc__relset_t *s, const char *rel, size_t len, int *taken) {
  rel_key_t k = {rel, len};
  uint64_t h = XXH3_64bits(rel, len);
  size_t slot;
  char *copy;

  *taken = 0;
  if (pc__index_reserve(&s->ix) != 0)
    return -ENOMEM;
  slot = pc__index_slot(&s->ix, h, rel_is, s, &k);
  if (pc__index_item(&s->ix, slot) != UINT32_MAX)
    return 0;
  if (PC__GROW(s->rels, s->n, s->cap, 256) != 0 ||
      (copy = malloc(len + 1)) == NULL)
    return -ENOMEM;
  memcpy(copy, rel, len);
  copy[len] = '\0';
  s->rels[s->n] = copy;
  pc__index_put(&s->ix, slot, h, (uint32_t)s->n++);
  *taken = 1;
  return 0;
}

void pc__relset_free(pc__relset_t *s) {
  size_t k;

  for (k = 0; k < s->n; k++)
    free(s->rels[k]);
  free(s->rels);
  pc__index_free(&s->ix);
  memset(s, 0, sizeof(*s));
}
