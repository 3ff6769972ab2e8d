/* Preloaded by tests/outputs/test_unnamed.py (never part of the program):
 * stands in for the file systems and kernels the output protocol's unnamed
 * files (src/fs/out.c, O_TMPFILE + linkat) must fall back on, which this
 * machine's ext4 and tmpfs are not. Each behaviour is asked for by the
 * environment:
 *
 *   PC_FAULT_NO_TMPFILE  openat(O_TMPFILE) fails with EOPNOTSUPP, as on
 *                        NFS or a FUSE file system without it;
 *   PC_FAULT_NO_LINK     every linkat() fails with ENOENT, as for a user
 *                        without CAP_DAC_READ_SEARCH where /proc is not
 *                        mounted (no way to name a descriptor);
 *   PC_FAULT_LINK_RACE   before each linkat() to a name not ending in
 *                        ".tmp", a file with the bytes "planted" is made at
 *                        that name: another writer that took the name
 *                        between the walk's listing and the link;
 *   PC_FAULT_FS_LOG      a file to which each refusal above adds a line,
 *                        "tmpfile" or "link" (strace never sees them: no
 *                        system call is made).
 *
 * No sanitizer in it: it goes into sanitizer builds too.
 */
/* openat and openat64 both defined here: neither redirected to the other. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The project builds with -fvisibility=hidden: these must be seen. */
#define PC_FAULT_EXPORT __attribute__((visibility("default")))

/* The real calls, made as system calls: no dlsym() (whose object pointer
 * ISO C does not let us call), nothing of libc's to go around.
 */
static int real_openat(int dirfd, const char *path, int flags, mode_t mode) {
  return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

static int real_linkat(int olddirfd, const char *oldpath, int newdirfd,
                       const char *newpath, int flags) {
  return (int)syscall(SYS_linkat, olddirfd, oldpath, newdirfd, newpath, flags);
}

/* One line per refusal, written by one write(): two workers refusing at once
 * append whole lines (O_APPEND), never one's word inside the other's line. */
static void note(const char *what) {
  const char *log = getenv("PC_FAULT_FS_LOG");
  char line[64];
  int fd, n, e = errno;

  n = snprintf(line, sizeof line, "%s\n", what);
  if (log == NULL || n < 0 || (size_t)n >= sizeof line ||
      (fd = real_openat(AT_FDCWD, log,
                        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
    return;
  if (write(fd, line, (size_t)n) < 0) {
  }
  close(fd);
  errno = e;
}

static int tmpfile_refused(int flags) {
  return (flags & O_TMPFILE) == O_TMPFILE &&
         getenv("PC_FAULT_NO_TMPFILE") != NULL;
}

PC_FAULT_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  if (tmpfile_refused(flags)) {
    note("tmpfile");
    errno = EOPNOTSUPP;
    return -1;
  }
  return real_openat(dirfd, path, flags, mode);
}

/* The same call under its large-file name, which a program built with
 * _FILE_OFFSET_BITS=64 on a 32-bit system calls.
 */
PC_FAULT_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
    __attribute__((alias("openat")));

PC_FAULT_EXPORT int linkat(int olddirfd, const char *oldpath, int newdirfd,
                           const char *newpath, int flags) {
  size_t n = strlen(newpath);

  if (getenv("PC_FAULT_NO_LINK") != NULL) {
    note("link");
    errno = ENOENT;
    return -1;
  }
  if (getenv("PC_FAULT_LINK_RACE") != NULL &&
      !(n >= 4 && strcmp(newpath + n - 4, ".tmp") == 0)) {
    int fd = real_openat(newdirfd, newpath,
                         O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ssize_t w = write(fd, "planted", 7);
      (void)w;
      close(fd);
    }
  }
  return real_linkat(olddirfd, oldpath, newdirfd, newpath, flags);
}
