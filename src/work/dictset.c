/* The files of earlier releases and a file's predecessor among them
 * (dictset.h). Listed through no symlink: a directory below a
 * --dictionary-from DIR is entered only as a directory (O_NOFOLLOW), and a
 * symlink is kept as a name the worker refuses to read (PC_DSKIP_LINK),
 * so that the pairing is the same whatever the link points to. Each file
 * keeps who could read it as listed (reach.h), from DIR down: what a
 * rerun's incremental check and the memory estimate go by; the worker
 * judges again on the descriptors it reads.
 */
#include "work/dictset.h"

#include "codec/delta.h"
#include "codec/dictname.h"
#include "common/names.h"
#include "fs/resolve.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deeper than this is a tree no release has: told, not listed. */
#define DEPTH_MAX 64

typedef struct lister {
  pc__dictset_t *s;
  unsigned dir;
  pc__dictset_err_t err;
  void *ctx;
  const char *top; /* the directory as given, for messages */
} lister_t;

static void tell(const lister_t *l, const char *rel, int code) {
  char *p = rel[0] != '\0' ? pc__path_join(l->top, rel) : NULL;
  l->err(l->ctx, p != NULL ? p : l->top, code);
  free(p);
}

/* A name of ours, or one no release serves as itself: not a dictionary. */
static int not_a_source(const char *name) {
  size_t n = strlen(name), b;
  return pc__is_temp_name(name) || pc__output_format_of(name, n) >= 0 ||
         pc__delta_output_name(name, n, &b, NULL, NULL);
}

/* What a malloc'd string costs, its allocator's overhead counted. */
static uint64_t str_mem(const char *p) { return strlen(p) + 1 + 16; }

static int add(const lister_t *l, const char *rel, const char *name,
               const struct stat *st, const pc__reach_t *dir, int link) {
  pc__dictset_t *s = l->s;
  pc__dictfile_t *f;
  char k[NAME_MAX + 1];
  int kl;

  if (PC__GROW(s->files, s->n, s->cap, 256) != 0)
    return -ENOMEM;
  f = &s->files[s->n];
  memset(f, 0, sizeof(*f));
  kl = pc__dictname_key(s->tmpls, s->ntmpls, name, k, sizeof(k));
  if ((f->rel = pc__path_join(rel, name)) == NULL ||
      (f->key = pc__path_join(rel, kl > 0 ? k : name)) == NULL) {
    free(f->rel);
    return -ENOMEM;
  }
  f->dir = l->dir;
  f->link = (unsigned char)link;
  f->size = link ? 0 : (uint64_t)st->st_size;
  f->mtime_ns = pc__ns(st->st_mtim);
  f->reach = *dir;
  pc__reach_file(&f->reach, st);
  s->mem += str_mem(f->rel) + str_mem(f->key);
  s->n++;
  return 0;
}

/* Lists the directory open at fd (taken: closed here), rel below the top;
 * `up` who could reach it, its own bits not counted yet.
 */
static int list(const lister_t *l, int fd, const char *rel, int depth,
                const pc__reach_t *up) {
  DIR *d = fdopendir(fd);
  struct dirent *e;
  struct stat dst;
  pc__reach_t reach = *up;
  int err = 0;

  if (d == NULL || fstat(fd, &dst) != 0) {
    tell(l, rel, PC__ERRNO());
    if (d != NULL)
      closedir(d);
    else
      close(fd);
    return 0;
  }
  pc__reach_dir(&reach, &dst);
  while (err == 0 && (errno = 0, e = readdir(d)) != NULL) {
    struct stat st;
    const char *name = e->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || not_a_source(name))
      continue;
    if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      char *p = pc__path_join(rel, name);
      if (errno != ENOENT) /* gone since readdir: nothing to pair */
        tell(l, p != NULL ? p : rel, PC__ERRNO());
      free(p);
      continue;
    }
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
      err = add(l, rel, name, &st, &reach, S_ISLNK(st.st_mode));
    } else if (S_ISDIR(st.st_mode)) {
      char *sub = pc__path_join(rel, name);
      int sfd;
      if (sub == NULL) {
        err = -ENOMEM;
      } else if (depth >= DEPTH_MAX) {
        tell(l, sub, -ELOOP);
      } else if ((sfd = openat(dirfd(d), name,
                               O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                   O_CLOEXEC)) < 0) {
        tell(l, sub, PC__ERRNO());
      } else {
        err = list(l, sfd, sub, depth + 1, &reach);
      }
      free(sub);
    }
  }
  if (err == 0 && errno != 0)
    tell(l, rel, PC__ERRNO());
  closedir(d);
  return err;
}

static int cmp_rel(const void *a, const void *b) {
  const pc__dictfile_t *x = a, *y = b;
  if (x->dir != y->dir)
    return x->dir < y->dir ? -1 : 1;
  return strcmp(x->rel, y->rel);
}

static int cmp_key(const void *a, const void *b) {
  const pc__dictfile_t *x = *(pc__dictfile_t *const *)a;
  const pc__dictfile_t *y = *(pc__dictfile_t *const *)b;
  int c;
  if (x->dir != y->dir)
    return x->dir < y->dir ? -1 : 1;
  if ((c = strcmp(x->key, y->key)) != 0)
    return c;
  return strcmp(x->rel, y->rel);
}

/* 1 when bykey[i] and bykey[i + 1] have one key in one directory. */
static int same_key(const pc__dictset_t *s, size_t i) {
  return i + 1 < s->n && s->bykey[i]->dir == s->bykey[i + 1]->dir &&
         strcmp(s->bykey[i]->key, s->bykey[i + 1]->key) == 0;
}

/* A key two files or more of a directory have pairs with none of them:
 * which one a build tool meant cannot be told (and by mtime, whoever can
 * set a file's mtime would choose). Each such key gets an entry of its own
 * (`amb`), named by its first file, which pairing by the key gives.
 */
static int mark_ambiguous(pc__dictset_t *s) {
  size_t i, k = 0;

  for (i = 0; i < s->n; i++)
    if (same_key(s, i) && (i == 0 || !same_key(s, i - 1)))
      s->namb++;
  if (s->namb == 0)
    return 0;
  if ((s->amb = calloc(s->namb, sizeof(*s->amb))) == NULL)
    return -ENOMEM;
  s->mem += s->namb * sizeof(*s->amb);
  for (i = 0; i < s->n; i++) {
    if (i > 0 && same_key(s, i - 1)) {
      s->bykey[i]->amb = (uint32_t)k;
    } else if (same_key(s, i)) {
      pc__dictfile_t *a = &s->amb[k++];
      a->rel = s->bykey[i]->rel;
      a->key = s->bykey[i]->key;
      a->dir = s->bykey[i]->dir;
      a->ambiguous = 1;
      pc__reach_init(&a->reach);
      s->bykey[i]->amb = (uint32_t)k;
    }
  }
  return 0;
}

/* Opens DIR `d` of `o` and lists it: 0 (or a DIR that does not exist: no
 * files), or the code that fails the run.
 */
static int open_dir(pc__dictset_t *s, const pc_options_t *o, unsigned d,
                    pc__dictset_err_t err, void *ctx) {
  lister_t l = {s, d, err, ctx, o->dict_dirs[d]};
  pc__reach_t everyone;
  int fd, ld, e;

  e = pc__resolve_dir(o->dict_dirs[d], 0, &fd, NULL);
  if (e == -ENOENT)
    return 0; /* no earlier release (a first build): none of its files */
  if (e != 0)
    return e;
  if ((ld = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
    e = PC__ERRNO();
    close(fd);
    return e;
  }
  s->fd[d] = fd;
  pc__reach_init(&everyone);
  return list(&l, ld, "", 0, &everyone);
}

int pc__dictset_open(pc__dictset_t *s, const pc_options_t *o,
                     const struct pc__root *roots, uint32_t nroots,
                     uint64_t budget, pc__dictset_err_t err, void *ctx,
                     unsigned *bad) {
  unsigned d;
  size_t i;
  int e = 0;

  memset(s, 0, sizeof(*s));
  s->ndirs = o->n_dict_dirs;
  for (d = 0; d < PC_DICT_DIRS_MAX; d++)
    s->fd[d] = -1;
  if (o->n_dict_names > 0) {
    s->tmpls = o->dict_names;
    s->ntmpls = o->n_dict_names;
  } else {
    s->tmpls = pc__dictname_defaults;
    for (s->ntmpls = 0; s->tmpls[s->ntmpls] != NULL; s->ntmpls++)
      ;
  }
  for (d = 0; e == 0 && d < s->ndirs; d++)
    if ((e = open_dir(s, o, d, err, ctx)) != 0 && e != -ENOMEM)
      *bad = d;
  if (e == 0 && s->n > 0) {
    qsort(s->files, s->n, sizeof(*s->files), cmp_rel);
    if ((s->bykey = malloc(s->n * sizeof(*s->bykey))) == NULL) {
      e = -ENOMEM;
    } else {
      for (i = 0; i < s->n; i++)
        s->bykey[i] = &s->files[i];
      qsort(s->bykey, s->n, sizeof(*s->bykey), cmp_key);
      e = mark_ambiguous(s);
    }
    s->mem += s->cap * sizeof(*s->files) + s->n * sizeof(*s->bykey);
  }
  if (e == 0)
    e = pc__djset_open(&s->dj, o, s->fd, roots, nroots, budget, err, ctx);
  if (e == 0)
    s->mem += s->dj.mem;
  if (e != 0)
    pc__dictset_free(s);
  return e;
}

void pc__dictset_free(pc__dictset_t *s) {
  size_t i;
  unsigned d;

  for (i = 0; i < s->n; i++) {
    free(s->files[i].rel);
    free(s->files[i].key);
  }
  free(s->files);
  free(s->bykey);
  free(s->amb);
  pc__djset_free(&s->dj);
  for (d = 0; d < s->ndirs; d++) /* a zeroed set has none */
    if (s->fd[d] >= 0)
      close(s->fd[d]);
  memset(s, 0, sizeof(*s));
  for (d = 0; d < PC_DICT_DIRS_MAX; d++)
    s->fd[d] = -1;
}

const pc__dictfile_t *pc__dictset_find(const pc__dictset_t *s, unsigned dir,
                                       uint32_t root, const char *rel,
                                       size_t dirlen, const char *base) {
  pc__dictfile_t probe;
  const pc__dictfile_t *hit, *pp = &probe;
  const char *named = pc__djset_find(&s->dj, dir, root, rel);
  char k[NAME_MAX + 1], key[PATH_MAX];
  size_t lo = 0, hi = s->n;
  int kl;

  if (s->n == 0 || s->fd[dir] < 0)
    return NULL;
  memset(&probe, 0, sizeof(probe));
  probe.dir = dir;
  /* The manifests' pairing first; a name they give that DIR lacks pairs
   * nothing: the name rules decide.
   */
  probe.rel = (char *)(named != NULL ? named : rel);
  if ((hit = bsearch(&probe, s->files, s->n, sizeof(*s->files), cmp_rel)) !=
      NULL)
    return hit;
  probe.rel = (char *)rel;
  if (named != NULL && (hit = bsearch(&probe, s->files, s->n, sizeof(*s->files),
                                      cmp_rel)) != NULL)
    return hit;
  kl = pc__dictname_key(s->tmpls, s->ntmpls, base, k, sizeof(k));
  if (kl <= 0) /* no hash in the name: only the same path pairs */
    return NULL;
  if (dirlen + 1 + (size_t)kl + 1 > sizeof(key))
    return NULL;
  memcpy(key, rel, dirlen);
  key[dirlen] = '/';
  memcpy(key + (dirlen > 0 ? dirlen + 1 : 0), k, (size_t)kl + 1);
  /* The first of (dir, key); the key's own entry when others have it. */
  probe.key = key;
  probe.rel = "";
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_key(&s->bykey[mid], &pp) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < s->n && s->bykey[lo]->dir == dir &&
      strcmp(s->bykey[lo]->key, key) == 0)
    return s->bykey[lo]->amb != 0 ? &s->amb[s->bykey[lo]->amb - 1]
                                  : s->bykey[lo];
  return NULL;
}

pc_delta_skip_t pc__dictset_skip(const pc__dictfile_t *p, const char *base,
                                 uint64_t size, const struct stat *st) {
  if (p->link)
    return PC_DSKIP_LINK;
  if (p->ambiguous)
    return PC_DSKIP_AMBIGUOUS;
  if (strlen(base) + PC__DELTA_NAME_EXTRA > NAME_MAX)
    return PC_DSKIP_NAME;
  if (st != NULL && !pc__reach_covers(&p->reach, st))
    return PC_DSKIP_PRIVATE;
  if (p->size > PC__DICT_LARGE(size))
    return PC_DSKIP_LARGE;
  if (size > PC__DCZ_DICT_MAX || p->size > PC__DCZ_DICT_MAX)
    return PC_DSKIP_WINDOW; /* no window takes the one or the other */
  return PC_DSKIP_NONE;
}
