/* Opening a directory below another (below.h). */
#include "fs/below.h"

#include <fcntl.h>
#include <sys/stat.h>
#if PC_HAVE_OPENAT2
#include <linux/openat2.h>
#include <sys/syscall.h>
#endif
#include <limits.h>
#include <string.h>
#include <unistd.h>

/* The code for a failed open below a directory, from its errno: a symlink
 * met where none may be (ELOOP), or a way out of the tree (EXDEV), means
 * the tree changed since the walk.
 */
static int beneath_err(int e) {
  return e == ELOOP || e == EXDEV ? PC_ECHANGED : e > 0 ? -e : -EIO;
}

/* Opens `dir`, a path below dirfd, O_PATH: through no symlink and not
 * out of dirfd unless --follow made symlinked directories part of the
 * tree. A descriptor, or a negative code.
 */
/* openat2() where the kernel lacks it (ENOSYS: before Linux 5.6) or a
 * seccomp profile refuses it (EPERM: Docker before 20.10, systemd-nspawn),
 * and where there is none (macOS, the BSDs, -Dportable=true):
 * one component at a time, each O_NOFOLLOW, which is what
 * RESOLVE_NO_SYMLINKS does; `dir` comes from the walk, so it holds no "..".
 * A descriptor (the caller's), or a negative code (beneath_err()).
 */
static int open_each(int dirfd, const char *dir, pc__reach_t *reach) {
  const int flags = PC_O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
  char part[NAME_MAX + 1];
  const char *p = dir;
  int at = dirfd, own = 0; /* `at` is ours to close once we opened it */

  for (;;) {
    size_t n = strcspn(p, "/");
    if (n > NAME_MAX) {
      if (own)
        close(at);
      return -ENAMETOOLONG;
    }
    if (n > 0) {
      struct stat st;
      int next, e;
      memcpy(part, p, n);
      part[n] = '\0';
      next = openat(at, part, flags);
      e = errno;
      if (own)
        close(at);
      /* A directory at the walk, now a link or a file: as openat2's
       * ELOOP, the tree changed.
       */
      if (next < 0)
        return beneath_err(e == ENOTDIR ? ELOOP : e);
      at = next;
      own = 1;
      if (reach != NULL) {
        if (fstat(at, &st) != 0) {
          e = errno;
          close(at);
          return beneath_err(e);
        }
        pc__reach_dir(reach, &st);
      }
    }
    if (p[n] == '\0') {
      int fd = own ? at : openat(dirfd, ".", flags);
      return fd >= 0 ? fd : beneath_err(errno);
    }
    p += n + 1;
  }
}

/* `dir` below dirfd, as open_each() says, and through any symlink with
 * `follow` (--follow). A descriptor (the caller's), or a negative code.
 */
int pc__open_below(int dirfd, const char *dir, int follow) {
#if PC_HAVE_OPENAT2
  struct open_how how;
#endif
  int fd;

#if PC_HAVE_OPENAT2
  memset(&how, 0, sizeof(how));
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = follow ? 0 : RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
  fd = (int)syscall(SYS_openat2, dirfd, dir, &how, sizeof(how));
  if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
    return fd >= 0 ? fd : beneath_err(errno);
#endif
  if (!follow)
    return open_each(dirfd, dir, NULL);
  fd = openat(dirfd, dir, PC_O_PATH | O_DIRECTORY | O_CLOEXEC);
  return fd >= 0 ? fd : beneath_err(errno);
}

int pc__open_below_reach(int dirfd, const char *dir, pc__reach_t *reach) {
  return open_each(dirfd, dir, reach);
}
