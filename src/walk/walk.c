/* The walk (walk.h): a stack of directories to read, one read at a time.
 *
 * A directory is read whole and sorted before any of its entries is given
 * out (a snapshot: outputs written into it meanwhile are not walked). Its
 * subdirectories wait on the stack as (parent, name) pairs, holding their
 * parent, so the directories alive are always one chain, from a root to
 * the one being read; each is opened with openat() below its parent's
 * descriptor, O_NOFOLLOW unless --follow.
 *
 * Descriptors: the chain's root, and at most WALK_FDS more, the deepest of
 * the chain. One above those, evicted, is opened again name by name from
 * the nearest one still open when the walk comes back to it, and must be
 * the directory it was (dev, ino), else its subdirectories left are not
 * read (PC_ECHANGED). Trees deeper than WALK_FDS pay a few openat() calls
 * each time the walk climbs back; most trees never do.
 */
#include "walk/walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if PC_HAVE_GETDENTS64
#include <sys/syscall.h>
#endif
#include <unistd.h>

#define WALK_FDS 8
#define DENTS_BUF 32768

typedef struct pc__walk_node {
  struct pc__walk_node *parent; /* NULL: below a root's own descriptor */
  char *name; /* in the parent; NULL for a root's directory itself */
  char *rel;  /* below the root; "" for the root */
  char *full; /* as messages name it */
  uint32_t root;
  int fd; /* -1 while evicted */
  pc__devino_t id;
  size_t refs; /* being read, and each child waiting or being read */
} node_t;

typedef struct pending {
  node_t *parent; /* holds a reference; NULL: below the root's descriptor */
  char *name;     /* owned; NULL: the root's directory itself */
  uint32_t root;
} pending_t;

struct pc__walk {
  const pc__root_t *roots;
  uint32_t nroots;
  int follow;
  uint32_t files_left; /* file PATHs, given first, from the last one */
  int file_fd;         /* the directory of the file PATH just given, or -1 */
  pending_t *stack;
  size_t n, cap;
  node_t *cur;     /* the directory whose entries are given out */
  char **names;    /* its entries, sorted, each d_type after its NUL */
  pc__buf_t arena; /* where they are */
  size_t nnames, capnames, at;
  char *errpath;      /* the directory the last error return is about */
  pc__devino_t *seen; /* directories entered (open-addressing set) */
  size_t nseen, capseen;
  unsigned nfds; /* node descriptors open, roots' aside */
};

/* The record getdents64(2) fills. */
struct dent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t devino_hash(pc__devino_t e, size_t mask) {
  return (size_t)(e.ino * 0x9e3779b97f4a7c15u ^ e.dev) & mask;
}

/* Adds `id` to the set of directories entered: *fresh 1 if it was new, 0
 * if seen already. 0 or -ENOMEM.
 */
static int seen_add(pc__walk_t *w, pc__devino_t id, int *fresh) {
  size_t i, k, mask;

  *fresh = 0;
  if (w->nseen * 2 >= w->capseen) {
    size_t ncap = w->capseen ? w->capseen * 2 : 256;
    pc__devino_t *n = calloc(ncap, sizeof(*n));
    if (n == NULL)
      return -ENOMEM;
    for (k = 0; k < w->capseen; k++) {
      pc__devino_t e = w->seen[k];
      if (e.dev == 0 && e.ino == 0)
        continue;
      for (i = devino_hash(e, ncap - 1); n[i].dev || n[i].ino;
           i = (i + 1) & (ncap - 1))
        ;
      n[i] = e;
    }
    free(w->seen);
    w->seen = n;
    w->capseen = ncap;
  }
  mask = w->capseen - 1;
  for (i = devino_hash(id, mask); w->seen[i].dev || w->seen[i].ino;
       i = (i + 1) & mask)
    if (w->seen[i].dev == id.dev && w->seen[i].ino == id.ino)
      return 0;
  w->seen[i] = id;
  w->nseen++;
  *fresh = 1;
  return 0;
}

/* Puts a directory to read on the stack; takes `name`, and a reference to
 * `parent`. 0 or -ENOMEM (name freed).
 */
static int push(pc__walk_t *w, node_t *parent, char *name, uint32_t root) {
  if (PC__GROW(w->stack, w->n, w->cap, 64) != 0) {
    free(name);
    return -ENOMEM;
  }
  w->stack[w->n].parent = parent;
  w->stack[w->n].name = name;
  w->stack[w->n].root = root;
  w->n++;
  if (parent != NULL)
    parent->refs++;
  return 0;
}

static void close_fd(pc__walk_t *w, node_t *n) {
  if (n->fd < 0)
    return;
  close(n->fd);
  n->fd = -1;
  if (n->parent != NULL)
    w->nfds--;
}

/* Drops a reference; a node nobody holds goes, and with it its own
 * reference to its parent.
 */
static void unref(pc__walk_t *w, node_t *n) {
  while (n != NULL && --n->refs == 0) {
    node_t *p = n->parent;
    close_fd(w, n);
    free(n->name);
    free(n->rel);
    free(n->full);
    free(n);
    n = p;
  }
}

/* Closes the descriptor of the highest node above `n` that has one (roots
 * keep theirs): the one the walk needs last. 1 if one was closed.
 */
static int evict_one(pc__walk_t *w, node_t *n) {
  node_t *top = NULL, *a;
  for (a = n->parent; a != NULL && a->parent != NULL; a = a->parent)
    if (a->fd >= 0)
      top = a;
  if (top == NULL)
    return 0;
  close_fd(w, top);
  return 1;
}

/* Counts `n`'s new descriptor and keeps within WALK_FDS. */
static void opened(pc__walk_t *w, node_t *n) {
  if (n->parent == NULL)
    return;
  w->nfds++;
  while (w->nfds > WALK_FDS && evict_one(w, n))
    ;
}

/* The descriptor of `n`, a directory whose subdirectory is to be opened:
 * its own, or, evicted, opened again from the nearest ancestor open, name
 * by name, each step the directory it was. A descriptor or a negative code.
 */
static int node_fd(pc__walk_t *w, node_t *n) {
  int flags =
      PC_O_PATH | O_DIRECTORY | O_CLOEXEC | (w->follow ? 0 : O_NOFOLLOW);
  node_t *a, *s;
  int base, owned = 0;

  if (n->fd >= 0)
    return n->fd;
  for (a = n->parent; a != NULL && a->fd < 0; a = a->parent)
    ;
  if (a == NULL) /* cannot be: a root keeps its descriptor */
    return -EBADF;
  base = a->fd;
  while (a != n) {
    struct stat st;
    int fd, err = 0;
    for (s = n; s->parent != a; s = s->parent)
      ;
    fd = openat(base, s->name, flags);
    if (fd < 0 || fstat(fd, &st) != 0)
      err = PC__ERRNO();
    else if (st.st_dev != s->id.dev || st.st_ino != s->id.ino)
      err = PC_ECHANGED;
    if (owned)
      close(base);
    if (err != 0) {
      if (fd >= 0)
        close(fd);
      return err;
    }
    base = fd;
    owned = 1;
    a = s;
  }
  n->fd = base;
  opened(w, n);
  return n->fd;
}

/* Closes every evictable descriptor but `keep`'s: the process is out of
 * them. 1 if any was closed.
 */
static int evict_all(pc__walk_t *w, node_t *keep) {
  node_t *a;
  int any = 0;
  for (a = keep != NULL ? keep->parent : NULL; a != NULL && a->parent != NULL;
       a = a->parent)
    if (a->fd >= 0) {
      close_fd(w, a);
      any = 1;
    }
  return any;
}

/* Opens the directory `n` for reading: below its parent's descriptor (or
 * its root's) by its name alone. A descriptor, a negative code, or
 * -ENOTDIR quietly meant (*link set) when, without --follow, the name is a
 * symlink now: it is not entered, as one seen as a link never is.
 */
static int open_dir(pc__walk_t *w, node_t *n, int *link) {
  const pc__root_t *rt = &w->roots[n->root];
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  int base, fd, retried = 0;
  struct stat st;

  *link = 0;
  if (n->parent == NULL && rt->fd < 0) {
    /* The root could not be opened before: its error, once. Listing it
     * now by its path would hand every job below it no descriptor (each
     * file then failing with EBADF, none saying why).
     */
    return rt->fd_err != 0 ? rt->fd_err : -EBADF;
  }
  base = n->parent != NULL ? node_fd(w, n->parent) : rt->fd;
  if (base < 0)
    return base;
  if (n->name != NULL && !w->follow)
    flags |= O_NOFOLLOW;
  for (;;) {
    fd = openat(base, n->name != NULL ? n->name : ".", flags);
    if (fd >= 0)
      return fd;
    if ((errno != EMFILE && errno != ENFILE) || retried++ ||
        !evict_all(w, n->parent))
      break;
  }
  fd = PC__ERRNO();
  if ((fd == -ENOTDIR || fd == -ELOOP) && (flags & O_NOFOLLOW) &&
      fstatat(base, n->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISLNK(st.st_mode))
    *link = 1;
  return fd;
}

/* Appends one name, its d_type after its NUL, to the listing. While the
 * arena grows, names[] holds offsets into it. 0 or -ENOMEM.
 */
static int add_name(pc__walk_t *w, const char *name, unsigned char type) {
  size_t l = strlen(name);
  if (PC__GROW(w->names, w->nnames, w->capnames, 16) != 0)
    return -ENOMEM;
  if (pc__buf_reserve(&w->arena, l + 2) != 0)
    return -ENOMEM;
  w->names[w->nnames++] = (char *)(uintptr_t)w->arena.len;
  memcpy(w->arena.data + w->arena.len, name, l + 1);
  w->arena.data[w->arena.len + l + 1] = type;
  w->arena.len += l + 2;
  return 0;
}

/* Reads the directory open at fd whole into the listing, sorted. 0 or a
 * negative code (the listing is then empty: a part is no snapshot).
 */
static int read_listing(pc__walk_t *w, int fd) {
#if PC_HAVE_GETDENTS64
  _Alignas(8) char buf[DENTS_BUF];
#else
  DIR *dir = NULL;
  int dfd, retried = 0;
#endif
  size_t k;
  int err = 0;

#if PC_HAVE_GETDENTS64
  for (;;) {
    long got = syscall(SYS_getdents64, fd, buf, sizeof(buf)), off;
    if (got <= 0) {
      if (got < 0)
        err = PC__ERRNO();
      break;
    }
    for (off = 0; off < got && err == 0;) {
      const struct dent64 *d = (const void *)(buf + off);
      off += d->d_reclen;
      if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
        err = add_name(w, d->d_name, d->d_type);
    }
    if (err != 0)
      break;
  }
#else
  /* readdir() on a copy: closedir() closes the descriptor it is given, and
   * fd stays open for the subdirectories (open_dir()). Out of descriptors,
   * the chain's evictable ones go first, as in open_dir().
   */
  while ((dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0 &&
         (errno == EMFILE || errno == ENFILE) && !retried++ &&
         evict_all(w, w->cur))
    ;
  if (dfd < 0 || (dir = fdopendir(dfd)) == NULL) {
    err = PC__ERRNO();
    if (dfd >= 0)
      close(dfd);
  }
  while (dir != NULL) {
    const struct dirent *d;
    errno = 0;
    if ((d = readdir(dir)) == NULL) {
      err = errno != 0 ? PC__ERRNO() : 0;
      break;
    }
    if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0 &&
        (err = add_name(w, d->d_name, d->d_type)) != 0)
      break;
  }
  if (dir != NULL)
    closedir(dir);
#endif
  if (err != 0) {
    free(w->names);
    pc__buf_free(&w->arena);
    w->names = NULL;
    w->nnames = w->capnames = 0;
    return err;
  }
  for (k = 0; k < w->nnames; k++)
    w->names[k] = (char *)w->arena.data + (uintptr_t)w->names[k];
  if (w->nnames > 1)
    qsort(w->names, w->nnames, sizeof(*w->names), cmp_names);
  return 0;
}

/* Done with the directory being read. */
static void drop_cur(pc__walk_t *w) {
  free(w->names);
  pc__buf_free(&w->arena);
  w->names = NULL;
  w->nnames = w->capnames = w->at = 0;
  unref(w, w->cur);
  w->cur = NULL;
}

/* A node for the top of the stack, which it takes. NULL on ENOMEM. */
static node_t *pop_node(pc__walk_t *w) {
  pending_t p = w->stack[--w->n];
  node_t *n = calloc(1, sizeof(*n));
  if (n != NULL) {
    n->rel = p.parent != NULL ? pc__path_join(p.parent->rel, p.name)
                              : pc__strdup(p.name != NULL ? p.name : "");
    n->full =
        n->rel != NULL ? pc__path_join(w->roots[p.root].dir, n->rel) : NULL;
  }
  if (n == NULL || n->full == NULL) {
    if (n != NULL)
      free(n->rel);
    free(n);
    free(p.name);
    unref(w, p.parent);
    return NULL;
  }
  n->parent = p.parent; /* the pending entry's reference */
  n->name = p.name;
  n->root = p.root;
  n->fd = -1;
  n->refs = 1;
  return n;
}

/* Opens the next directory on the stack and reads it: 0 with w->cur set,
 * or 0 with nothing to read there (a link now, entered before), or a
 * negative code (e->path set unless the walk cannot go on).
 */
static int open_next(pc__walk_t *w, pc__entry_t *e) {
  node_t *n = pop_node(w);
  struct stat st;
  int fd, link, fresh, err;

  if (n == NULL)
    return -ENOMEM;
  e->opened++;
  fd = open_dir(w, n, &link);
  if (fd < 0) {
    err = link ? 0 : fd;
    goto fail;
  }
  n->fd = fd;
  opened(w, n);
  if (fstat(fd, &st) != 0) {
    err = PC__ERRNO();
    goto fail;
  }
  n->id.dev = st.st_dev;
  n->id.ino = st.st_ino;
  /* Entered already: a symlink loop, or two links to one directory. */
  if ((err = seen_add(w, n->id, &fresh)) != 0 || !fresh)
    goto fail;
  w->cur = n;
  if ((err = read_listing(w, fd)) != 0) {
    w->cur = NULL;
    goto fail;
  }
  return 0;

fail:
  if (err != 0 && err != -ENOMEM) {
    w->errpath = n->full;
    n->full = NULL;
    e->path = w->errpath;
  }
  unref(w, n);
  return err;
}

/* The file PATH roots[k] as an entry, its directory open for it. */
static int file_entry(pc__walk_t *w, uint32_t k, pc__entry_t *e) {
  const pc__root_t *rt = &w->roots[k];
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC, fd = AT_FDCWD;
  struct stat st;

  if (rt->dir[0]) {
    fd = rt->fd >= 0 ? openat(rt->fd, ".", flags) : open(rt->dir, flags);
    if (fd < 0) {
      e->path = rt->dir;
      return PC__ERRNO();
    }
    w->file_fd = fd;
  }
  if ((fd == AT_FDCWD ? stat(".", &st) : fstat(fd, &st)) == 0) {
    e->dir.dev = st.st_dev;
    e->dir.ino = st.st_ino;
  }
  e->root = k;
  e->dfd = fd;
  e->name = rt->file;
  e->len = strlen(rt->file);
  e->dtype = DT_UNKNOWN;
  e->dfull = rt->dir;
  e->drel = "";
  return 0;
}

int pc__walk_next(pc__walk_t *w, pc__entry_t *e) {
  int err;

  memset(e, 0, sizeof(*e));
  e->dfd = -1;
  free(w->errpath);
  w->errpath = NULL;
  if (w->file_fd >= 0) {
    close(w->file_fd);
    w->file_fd = -1;
  }
  while (w->files_left > 0) {
    uint32_t k = --w->files_left;
    if (w->roots[k].file != NULL && !w->roots[k].skip)
      return file_entry(w, k, e);
  }
  for (;;) {
    if (w->cur != NULL && w->at < w->nnames) {
      const char *nm = w->names[w->at];
      e->root = w->cur->root;
      e->dfd = w->cur->fd;
      e->name = nm;
      e->len = strlen(nm);
      e->dtype = (unsigned char)nm[e->len + 1];
      e->dfull = w->cur->full;
      e->drel = w->cur->rel;
      e->dir = w->cur->id;
      e->ls.names = w->names;
      e->ls.n = w->nnames;
      e->ls.at = w->at++;
      e->has_ls = 1;
      e->node = w->cur;
      return 0;
    }
    if (w->cur != NULL)
      drop_cur(w);
    if (w->n == 0) {
      e->end = 1;
      return 0;
    }
    /* One directory per call at most: a tree of empty directories must
     * not keep the caller from its other work for the whole of it.
     */
    if (e->opened > 0)
      return 0;
    if ((err = open_next(w, e)) != 0)
      return err;
  }
}

int pc__walk_enter(pc__walk_t *w, const pc__entry_t *e) {
  char *name = pc__strdup(e->name);
  if (name == NULL)
    return -ENOMEM;
  return push(w, e->node, name, e->root);
}

int pc__walk_new(pc__walk_t **wp, const pc__root_t *roots, uint32_t nroots,
                 int follow) {
  pc__walk_t *w = calloc(1, sizeof(*w));
  uint32_t k;

  *wp = NULL;
  if (w == NULL)
    return -ENOMEM;
  w->roots = roots;
  w->nroots = nroots;
  w->follow = follow;
  w->files_left = nroots;
  w->file_fd = -1;
  /* Pushed in reverse so the first PATH is walked first. */
  for (k = nroots; k-- > 0;) {
    if (roots[k].file == NULL && !roots[k].skip &&
        push(w, NULL, NULL, k) != 0) {
      pc__walk_free(w);
      return -ENOMEM;
    }
  }
  *wp = w;
  return 0;
}

void pc__walk_free(pc__walk_t *w) {
  if (w == NULL)
    return;
  if (w->cur != NULL)
    drop_cur(w);
  while (w->n > 0) {
    pending_t *p = &w->stack[--w->n];
    free(p->name);
    unref(w, p->parent);
  }
  if (w->file_fd >= 0)
    close(w->file_fd);
  free(w->stack);
  free(w->names);
  pc__buf_free(&w->arena);
  free(w->errpath);
  free(w->seen);
  free(w);
}

int pc__walk_below(int fd, pc__devino_t dir) {
  struct stat st, up;
  int cur = fd, below = 0, depth;

  if (fstat(cur, &st) != 0)
    return 0;
  for (depth = 0; depth < 4096; depth++) {
    int next;
    if (st.st_dev == dir.dev && st.st_ino == dir.ino) {
      below = 1;
      break;
    }
    next = openat(cur, "..", PC_O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cur != fd)
      close(cur);
    cur = next;
    if (cur < 0 || fstat(cur, &up) != 0 ||
        (up.st_dev == st.st_dev && up.st_ino == st.st_ino))
      break; /* "/": its ".." is itself */
    st = up;
  }
  if (cur >= 0 && cur != fd)
    close(cur);
  return below;
}
