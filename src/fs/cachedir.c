/* --cache-dir, resolved one component at a time (cachedir.h).
 *
 * Before issue 23 DIR was checked as realpath() resolved it, then made with
 * mkdir() by name: `att/x -> /root-private` (another account's link)
 * passed, since /root-private is root's, and mkdir made the cache there.
 * Here the path is walked as the kernel walks it, with a descriptor held on
 * the directory reached so far, so that what is judged is what is used.
 */
#include "fs/cachedir.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Symlinks followed at most, as the kernel's own limit. */
#define MAX_LINKS 40

/* A directory on the way: root's or ours, and no one else may write it
 * unless it is sticky.
 */
static int check_on_way(const struct stat *st) {
  if (!S_ISDIR(st->st_mode))
    return -ENOTDIR;
  if ((st->st_uid != 0 && st->st_uid != geteuid()) ||
      ((st->st_mode & 022) != 0 && (st->st_mode & S_ISVTX) == 0))
    return PC_EUNSAFE;
  return 0;
}

/* What is left of the path to walk, and where the walk stands. */
typedef struct walk {
  pc__buf_t rest;  /* the components still to walk, NUL-terminated */
  size_t at;       /* the next one starts here */
  pc__buf_t canon; /* the physical path of `fd` */
  int fd;          /* the directory reached */
  unsigned links;
} walk_t;

/* Goes back to "/": the start, or an absolute link's target. */
static int to_root(walk_t *w) {
  struct stat st;
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
  return fstat(fd, &st) != 0 ? PC__ERRNO() : check_on_way(&st);
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
  struct stat st;
  int fd, err;

  fd = openat(w->fd, name, PC_O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return errno == ELOOP ? PC_EUNSAFE : PC__ERRNO();
  err = fstat(fd, &st) != 0 ? PC__ERRNO() : check_on_way(&st);
  if (err != 0) {
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

/* One component: entered (made first when missing, with `create`), or a
 * link judged and spliced in. 0 or a negative code.
 */
static int step(walk_t *w, const char *name, int create) {
  char target[PATH_MAX];
  struct stat st;
  ssize_t n;
  int tries;

  if (strcmp(name, "..") == 0)
    return enter(w, name);
  for (tries = 0; tries < 3; tries++) {
    if (fstatat(w->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT || !create)
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
    if (st.st_uid != 0 && st.st_uid != geteuid())
      return PC_EUNSAFE; /* another account's link */
    if (++w->links > MAX_LINKS)
      return -ELOOP;
    if ((n = readlinkat(w->fd, name, target, sizeof(target))) < 0)
      return PC__ERRNO();
    if ((size_t)n >= sizeof(target))
      return -ENAMETOOLONG;
    target[n] = '\0';
    return splice_link(w, target);
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

int pc__cache_dir(const char *dir, int create, char **canon) {
  walk_t w;
  struct stat st;
  int err;

  *canon = NULL;
  if (dir[0] == '\0')
    return -ENOENT;
  memset(&w, 0, sizeof(w));
  w.fd = -1;
  err = start(&w, dir);
  while (err == 0) {
    char *p = (char *)w.rest.data + w.at, *end;
    size_t len = strcspn(p, "/");
    if (p[0] == '\0')
      break;
    end = p + len;
    w.at += len + (*end == '/');
    if (len == 0 || (len == 1 && p[0] == '.'))
      continue;
    if (len > NAME_MAX) {
      err = -ENAMETOOLONG;
      break;
    }
    {
      char name[NAME_MAX + 1];
      memcpy(name, p, len);
      name[len] = '\0';
      err = step(&w, name, create);
    }
  }
  /* DIR itself: ours, and no one else may write it. */
  if (err == 0 && fstat(w.fd, &st) != 0)
    err = PC__ERRNO();
  if (err == 0 && (st.st_uid != geteuid() || (st.st_mode & 022) != 0))
    err = PC_EUNSAFE;
  if (err == 0)
    *canon = (char *)w.canon.data;
  else
    pc__buf_free(&w.canon);
  pc__buf_free(&w.rest);
  if (w.fd >= 0)
    close(w.fd);
  return err;
}
