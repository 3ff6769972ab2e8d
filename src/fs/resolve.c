/* A path resolved one component at a time (resolve.h).
 *
 * A path checked as realpath() resolves it, then opened by name, lets
 * another account's link pass (`att/x -> /root-private` resolves to a
 * directory of root's) and lets the path change between the check and the
 * use. Here the path is walked as the kernel walks it, with a descriptor
 * held on the directory reached so far: each component is looked at
 * where the walk stands, a link judged and its target put before what is
 * left to walk, a directory entered without following a link (one swapped
 * in since it was looked at is not entered).
 */
#include "fs/resolve.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Symlinks followed at most, as the kernel's own limit. */
#define MAX_LINKS 40

/* Root's or ours, and no one else may write it unless it is sticky. */
static int ours(const struct stat *st) {
  return (st->st_uid == 0 || st->st_uid == geteuid()) &&
         ((st->st_mode & 022) == 0 || (st->st_mode & S_ISVTX) != 0);
}

/* What is left of the path to walk, and where the walk stands. */
typedef struct walk {
  pc__buf_t rest;  /* the components still to walk, NUL-terminated */
  size_t at;       /* the next one starts here */
  pc__buf_t canon; /* the physical path of `fd` */
  int fd;          /* the directory reached */
  struct stat st;  /* its stat */
  unsigned links;
  unsigned flags;
} walk_t;

/* A directory reached (its stat in w->st): judged when every one must be
 * ours.
 */
static int judge_dir(const walk_t *w) {
  if (!S_ISDIR(w->st.st_mode))
    return -ENOTDIR;
  if ((w->flags & PC__RESOLVE_OURS) && !ours(&w->st))
    return PC_EUNSAFE;
  return 0;
}

/* Goes back to "/": the start, or an absolute link's target. */
static int to_root(walk_t *w) {
  int fd = open("/", PC_O_PATH | O_DIRECTORY | O_CLOEXEC);

  if (fd < 0)
    return PC__ERRNO();
  if (w->fd >= 0)
    close(w->fd);
  w->fd = fd;
  w->canon.len = 0;
  if (pc__buf_append(&w->canon, "/", 2) != 0)
    return -ENOMEM;
  w->canon.len = 1;
  return fstat(fd, &w->st) != 0 ? PC__ERRNO() : judge_dir(w);
}

/* Puts `text` (a link's target) before what is left to walk. */
static int splice_link(walk_t *w, const char *text) {
  pc__buf_t n = {0};
  const char *left = (const char *)w->rest.data + w->at;

  if (pc__buf_puts(&n, text) != 0 || pc__buf_puts(&n, "/") != 0 ||
      pc__buf_append(&n, left, strlen(left) + 1) != 0) {
    pc__buf_free(&n);
    return -ENOMEM;
  }
  pc__buf_free(&w->rest);
  w->rest = n;
  w->at = 0;
  return text[0] == '/' ? to_root(w) : 0;
}

/* Enters the directory `name` below w->fd (O_NOFOLLOW: a link swapped in
 * since it was judged is not entered) or, for "..", the one above.
 */
static int enter(walk_t *w, const char *name) {
  struct stat st = w->st;
  int fd, err;

  fd = openat(w->fd, name, PC_O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return errno == ELOOP ? PC_EUNSAFELINK : PC__ERRNO();
  err = fstat(fd, &w->st) != 0 ? PC__ERRNO() : judge_dir(w);
  if (err != 0) {
    w->st = st;
    close(fd);
    return err;
  }
  close(w->fd);
  w->fd = fd;
  if (strcmp(name, "..") == 0) {
    char *c = (char *)w->canon.data, *slash = strrchr(c, '/');
    w->canon.len = slash > c ? (size_t)(slash - c) : 1;
    c[w->canon.len] = '\0';
    return 0;
  }
  if ((w->canon.len > 1 && pc__buf_puts(&w->canon, "/") != 0) ||
      pc__buf_append(&w->canon, name, strlen(name) + 1) != 0)
    return -ENOMEM;
  w->canon.len--; /* the NUL stays after it */
  return 0;
}

/* A link met in the directory the walk stands in: root's or ours, and so
 * is that directory, which no one else may write unless it is sticky.
 */
static int follow(walk_t *w, const char *name, const struct stat *st) {
  char target[PATH_MAX];
  ssize_t n;

  if ((st->st_uid != 0 && st->st_uid != geteuid()) || !ours(&w->st))
    return PC_EUNSAFELINK;
  if (++w->links > MAX_LINKS)
    return -ELOOP;
  if ((n = readlinkat(w->fd, name, target, sizeof(target))) < 0)
    return PC__ERRNO();
  if ((size_t)n >= sizeof(target))
    return -ENAMETOOLONG;
  target[n] = '\0';
  return splice_link(w, target);
}

/* One component: entered (made first when missing, with CREATE), or a
 * link judged and spliced in. 0 or a negative code.
 */
static int step(walk_t *w, const char *name) {
  struct stat st;
  int tries;

  if (strcmp(name, "..") == 0)
    return enter(w, name);
  for (tries = 0; tries < 3; tries++) {
    if (fstatat(w->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT || !(w->flags & PC__RESOLVE_CREATE))
        return PC__ERRNO();
      /* Made where the walk stands, by name there alone: nothing it
       * meets is followed (a link at the name: EEXIST, judged next).
       */
      if (mkdirat(w->fd, name, 0700) != 0 && errno != EEXIST)
        return PC__ERRNO();
      continue;
    }
    if (S_ISDIR(st.st_mode))
      return enter(w, name);
    if (!S_ISLNK(st.st_mode))
      return -ENOTDIR;
    return follow(w, name, &st);
  }
  return PC_ECHANGED; /* made and gone again, over and over */
}

/* The whole path, from "/" or the working directory's physical path. */
static int start(walk_t *w, const char *dir) {
  if (dir[0] != '/') {
    char *cwd = getcwd(NULL, 0);
    int err = 0;
    if (cwd == NULL)
      return PC__ERRNO();
    if (pc__buf_puts(&w->rest, cwd) != 0 || pc__buf_puts(&w->rest, "/") != 0)
      err = -ENOMEM;
    free(cwd);
    if (err != 0)
      return err;
  }
  if (pc__buf_append(&w->rest, dir, strlen(dir) + 1) != 0)
    return -ENOMEM;
  return to_root(w);
}

/* Walks what is left, component by component. */
static int walk_all(walk_t *w) {
  int err = 0;

  while (err == 0) {
    char *p = (char *)w->rest.data + w->at, *end;
    char name[NAME_MAX + 1];
    size_t len = strcspn(p, "/");
    if (p[0] == '\0')
      break;
    end = p + len;
    w->at += len + (*end == '/');
    if (len == 0 || (len == 1 && p[0] == '.'))
      continue;
    if (len > NAME_MAX)
      return -ENAMETOOLONG;
    memcpy(name, p, len);
    name[len] = '\0';
    err = step(w, name);
  }
  return err;
}

int pc__resolve_dir(const char *dir, unsigned flags, int *fd, char **canon) {
  walk_t w;
  int err;

  *fd = -1;
  if (canon != NULL)
    *canon = NULL;
  if (dir[0] == '\0')
    return -ENOENT;
  memset(&w, 0, sizeof(w));
  w.fd = -1;
  w.flags = flags;
  if ((err = start(&w, dir)) == 0)
    err = walk_all(&w);
  pc__buf_free(&w.rest);
  if (err != 0) {
    pc__buf_free(&w.canon);
    if (w.fd >= 0)
      close(w.fd);
    return err;
  }
  *fd = w.fd;
  if (canon != NULL)
    *canon = (char *)w.canon.data;
  else
    pc__buf_free(&w.canon);
  return 0;
}
