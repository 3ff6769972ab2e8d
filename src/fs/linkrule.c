/* The rule for symlinked files (linkrule.h). */
#include "fs/linkrule.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The path the open descriptor fd names now (the kernel's own record of
 * it: /proc/self/fd on Linux, F_GETPATH on macOS), malloc'd, or NULL when
 * it cannot be told (no /proc in a chroot): rule 3 then does not apply.
 */
static char *fd_path(int fd) {
  char *p = malloc(PATH_MAX + 1);
#ifdef F_GETPATH
  if (p != NULL && fcntl(fd, F_GETPATH, p) == 0)
    return p;
#else
  char proc[64];
  ssize_t n;
  snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
  if (p != NULL && (n = readlink(proc, p, PATH_MAX)) > 0 && n < PATH_MAX &&
      p[0] == '/') {
    p[n] = '\0';
    return p;
  }
#endif
  free(p);
  return NULL;
}

/* 1 if `path` is `dir` or lies below it. */
static int within(const char *path, const char *dir, size_t n) {
  return strncmp(path, dir, n) == 0 &&
         (path[n] == '\0' || path[n] == '/' || (n == 1 && dir[0] == '/'));
}

/* Rule 3: the file open at fd lies in the directory pdir or in one above
 * it, within the PATH's directory root_fd.
 */
static int beside_or_above(int fd, int pdir, int root_fd) {
  char *file = fd_path(fd), *dir = fd_path(pdir), *root = fd_path(root_fd);
  char *slash;
  int ok = 0;

  if (file != NULL && dir != NULL && root != NULL &&
      (slash = strrchr(file, '/')) != NULL) {
    size_t n = slash > file ? (size_t)(slash - file) : 1; /* its directory */
    ok = within(dir, file, n) && within(file, root, strlen(root)) &&
         n >= strlen(root);
  }
  free(file);
  free(dir);
  free(root);
  return ok;
}

/* Opens the link's target into *fd and its owner into *owner: on Linux
 * through a descriptor of the link itself (its text cannot change), else
 * by name, the link looked at before and after (the same inode both
 * times, or PC_ECHANGED).
 */
static int open_target(int pdir, const char *name, int flags, int *fd,
                       uid_t *owner) {
  struct stat a, b;
#if PC_HAVE_O_PATH
  char text[PATH_MAX];
  ssize_t n;
  int lfd = openat(pdir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), err = 0;

  if (lfd < 0)
    return PC__ERRNO();
  if (fstat(lfd, &a) != 0)
    err = PC__ERRNO();
  else if (!S_ISLNK(a.st_mode))
    err = PC_ECHANGED; /* a link at the walk, something else now */
  else if ((n = readlinkat(lfd, "", text, sizeof(text))) < 0)
    err = PC__ERRNO();
  else if ((size_t)n >= sizeof(text))
    err = -ENAMETOOLONG;
  close(lfd);
  if (err != 0)
    return err;
  text[n] = '\0';
  /* Relative to the link's directory, as the kernel reads it. */
  if ((*fd = openat(pdir, text, flags)) < 0)
    return PC__ERRNO();
  (void)b;
#else
  if (fstatat(pdir, name, &a, AT_SYMLINK_NOFOLLOW) != 0)
    return PC__ERRNO();
  if (!S_ISLNK(a.st_mode))
    return PC_ECHANGED;
  if ((*fd = openat(pdir, name, flags)) < 0)
    return PC__ERRNO();
  if (fstatat(pdir, name, &b, AT_SYMLINK_NOFOLLOW) != 0 ||
      b.st_dev != a.st_dev || b.st_ino != a.st_ino) {
    close(*fd);
    *fd = -1;
    return PC_ECHANGED;
  }
#endif
  *owner = a.st_uid;
  return 0;
}

int pc__link_open(int pdir, const char *name, int root_fd, int flags, int *fd,
                  struct stat *st) {
  uid_t owner;
  int err;

  *fd = -1;
  if ((err = open_target(pdir, name, flags, fd, &owner)) != 0)
    return err;
  if (fstat(*fd, st) != 0) {
    err = PC__ERRNO();
    close(*fd);
    *fd = -1;
    return err;
  }
  if (owner == geteuid() || owner == st->st_uid ||
      beside_or_above(*fd, pdir, root_fd))
    return 0;
  close(*fd); /* not to be followed */
  *fd = -1;
  return 0;
}
