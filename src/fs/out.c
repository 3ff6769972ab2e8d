#include "fs/out.h"

#include "common/names.h"

#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#if PC_HAVE_SYS_RANDOM_H
#include <sys/random.h>
#endif
#include <unistd.h>

/* Random bits for temp names: one getrandom() per thread (getentropy()
 * where there is none: macOS, -Dportable=true), then a xorshift.
 * Uniqueness comes from O_EXCL and the retry, not from here.
 */
static uint64_t next_random(void) {
  static _Thread_local uint64_t s;
  if (s == 0) {
#if PC_HAVE_GETRANDOM
    if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s) || s == 0)
#elif PC_HAVE_GETENTROPY
    if (getentropy(&s, sizeof(s)) != 0 || s == 0)
#else
    if (s == 0)
#endif
      s = (uint64_t)getpid() * 0x9e3779b97f4a7c15u ^ (uint64_t)(uintptr_t)&s;
    s |= 1;
  }
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

int pc__out_open(pc__out_t *o, int dirfd, const char *final) {
  return pc__out_open_mode(o, dirfd, final, 0600);
}

int pc__out_open_mode(pc__out_t *o, int dirfd, const char *final, mode_t mode) {
  int tries;

  o->fd = -1;
  o->dirfd = dirfd;
  o->tmp = NULL;
  for (tries = 0; tries < 100; tries++) {
    char *tmp = pc__temp_name(final, next_random());
    int fd;
    if (tmp == NULL)
      return -ENOMEM;
    /* O_RDWR: a leader reads its output back through this descriptor for
     * files with the same bytes (dedup.c), never through a name.
     */
    fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                mode);
    if (fd >= 0) {
      /* Marks the temp live for as long as it is open: another run's walk
       * removes only temps it can lock (pc__out_reap). A new file: no one
       * else can hold it yet.
       */
      (void)flock(fd, LOCK_EX | LOCK_NB);
      o->fd = fd;
      o->tmp = tmp;
      return 0;
    }
    free(tmp);
    if (errno != EEXIST)
      return PC__ERRNO();
  }
  return -EEXIST;
}

#if defined(O_TMPFILE) && !PC_FORCE_PORTABLE
#define PC__ANON 1
#else
#define PC__ANON 0
#endif

#if PC__ANON
/* Set once an unnamed output could not be made (no O_TMPFILE on a file
 * system or in the kernel) or linked (no way to name a descriptor): every
 * output after takes the named temp. Relaxed: a worker that misses the
 * store tries once more and falls back the same way.
 */
static atomic_int no_anon;
/* Set once linkat(AT_EMPTY_PATH) was refused (most kernels want
 * CAP_DAC_READ_SEARCH for it, which root has) and /proc/self/fd named the
 * file instead: the refused call is not made again.
 */
static atomic_int link_by_proc;
#endif

int pc__out_open_new(pc__out_t *o, int dirfd, const char *final) {
#if PC__ANON
  if (!atomic_load_explicit(&no_anon, memory_order_relaxed) &&
      strchr(final, '/') == NULL) {
    int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) {
      o->fd = fd;
      o->dirfd = dirfd;
      o->tmp = NULL;
      o->anon = 1;
      return 0;
    }
    /* EOPNOTSUPP: a file system without it (NFS, FUSE); EISDIR or EINVAL:
     * a kernel before 3.11. Any other error is the directory's, which the
     * named create would meet as well.
     */
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
      return PC__ERRNO();
    atomic_store_explicit(&no_anon, 1, memory_order_relaxed);
  }
#endif
  return pc__out_open(o, dirfd, final);
}

#if PC__ANON
/* Links the unnamed file open at fd as `name` in dirfd, never replacing
 * anything there (EEXIST). ENOENT from both ways: the directory is gone,
 * or this process cannot name a descriptor.
 */
static int link_fd(int fd, int dirfd, const char *name) {
  char proc[48];

  if (!atomic_load_explicit(&link_by_proc, memory_order_relaxed)) {
    if (linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0)
      return 0;
    if (errno != ENOENT)
      return PC__ERRNO();
  }
  snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
  if (linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) != 0)
    return PC__ERRNO();
  atomic_store_explicit(&link_by_proc, 1, memory_order_relaxed);
  return 0;
}

/* The unnamed file's bytes into a named temp of pc__out_open(), which
 * replaces it in o: where no link can be made. Its mode and times are
 * given again by the caller.
 */
static int to_named(pc__out_t *o, const char *final) {
  pc__out_t n = PC__OUT_INIT;
  char buf[1 << 14];
  off_t off = 0;
  ssize_t r;
  int err;

  if ((err = pc__out_open(&n, o->dirfd, final)) != 0)
    return err;
  while ((r = pread(o->fd, buf, sizeof(buf), off)) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 || (err = pc__out_write(&n, buf, (size_t)r)) != 0) {
      err = r < 0 ? PC__ERRNO() : err;
      pc__out_discard(&n);
      return err;
    }
    off += r;
  }
  close(o->fd);
  *o = n;
  return 0;
}

/* Puts the unnamed file at `final`: a link where nothing is; where
 * something took the name since the caller found it absent, a link under
 * a temp name, locked as every named temp (pc__out_reap), renamed over it.
 */
static int link_final(pc__out_t *o, const char *final) {
  int tries, err = link_fd(o->fd, o->dirfd, final);

  if (err != -EEXIST)
    return err;
  (void)flock(o->fd, LOCK_EX | LOCK_NB);
  for (tries = 0; tries < 100; tries++) {
    char *tmp = pc__temp_name(final, next_random());
    if (tmp == NULL)
      return -ENOMEM;
    if ((err = link_fd(o->fd, o->dirfd, tmp)) == 0) {
      if (renameat(o->dirfd, tmp, o->dirfd, final) != 0) {
        err = errno == EISDIR ? PC_EOUTDIR : PC__ERRNO();
        unlinkat(o->dirfd, tmp, 0);
      }
      free(tmp);
      return err;
    }
    free(tmp);
    if (err != -EEXIST)
      return err;
  }
  return -EEXIST;
}
#endif

int pc__out_write(pc__out_t *o, const void *p, size_t n) {
  const unsigned char *c = p;

  while (n > 0) {
    ssize_t w = write(o->fd, c, n > (1u << 30) ? (1u << 30) : n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return PC__ERRNO();
    }
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

/* fsync()s the directory holding `path` (relative to dirfd), making a
 * rename in it durable. An O_PATH descriptor cannot be synced: open the
 * directory for reading through it.
 */
static int sync_dir(int dirfd, const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir;
  int fd, err = 0;

  if (slash == NULL)
    dir = pc__strdup(".");
  else if (slash == path)
    dir = pc__strdup("/");
  else if ((dir = malloc((size_t)(slash - path) + 1)) != NULL) {
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
  }
  if (dir == NULL)
    return -ENOMEM;
  fd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0)
    err = PC__ERRNO();
  if (fd >= 0)
    close(fd);
  free(dir);
  return err;
}

#if PC__ANON
/* The end of an unnamed output: `err` 0 when it is linked at `final`.
 * Closing an unnamed file ends it. File systems with O_TMPFILE report
 * write errors at write(), not at close(); one that did all the same
 * takes the name back.
 */
static int finish_anon(pc__out_t *o, const char *final, int err, int sync) {
  if (close(o->fd) != 0 && err == 0) {
    err = PC__ERRNO();
    unlinkat(o->dirfd, final, 0);
  }
  o->fd = -1;
  o->anon = 0;
  if (err == 0 && sync)
    err = sync_dir(o->dirfd, final); /* linked: only durability is left */
  return err;
}
#endif

/* The end of a named temp, for both: close (its error counts), rename unless
 * `err`, remove the temp when anything failed.
 */
static int finish(pc__out_t *o, const char *final, int err, int sync) {
  /* The lock lives on the open file: a copy of the descriptor holds it
   * until the rename is done, so that no other run takes the temp for a
   * killed run's between our close and our rename.
   */
  int hold = dup(o->fd);
  /* close() reports delayed write errors (NFS, quota): check it. */
  if (close(o->fd) != 0 && err == 0)
    err = PC__ERRNO();
  o->fd = -1;
  if (err == 0 && renameat(o->dirfd, o->tmp, o->dirfd, final) != 0)
    err = errno == EISDIR ? PC_EOUTDIR : PC__ERRNO();
  if (hold >= 0)
    close(hold);
  if (err != 0)
    unlinkat(o->dirfd, o->tmp, 0);
  else if (sync)
    err = sync_dir(o->dirfd, final); /* renamed: only durability is left */
  free(o->tmp);
  o->tmp = NULL;
  return err;
}

/* Gives the temp file the source's owner and group: a web server that
 * reads the source through its group (0640 www-data) must read the outputs
 * too. As root both; otherwise the group alone, which the kernel allows
 * only for a group we belong to. Best effort: where ownership cannot be
 * given (EPERM: not ours to give; EINVAL: an id this user namespace cannot
 * map) the output keeps ours: its mode and times are what must be the
 * source's (docs/reference.md, "Output protocol").
 */
static void give_owner(int fd, const struct stat *src) {
  uid_t uid = geteuid() == 0 ? src->st_uid : (uid_t)-1;
  if ((uid == (uid_t)-1 || uid == geteuid()) && src->st_gid == getegid())
    return; /* created with both already */
  if (fchown(fd, uid, src->st_gid) != 0 && uid != (uid_t)-1)
    (void)fchown(fd, (uid_t)-1, src->st_gid);
}

/* Gives fd the source's owner, permission bits and times, and with `sync`
 * sends its data to the disk. 0 or a negative code.
 */
static int give_meta(int fd, const struct stat *src, int sync) {
  struct timespec times[2];

  times[0] = src->st_atim;
  times[1] = src->st_mtim;
  /* Through the descriptor: nothing can swap the file under us between the
   * write and the metadata. The owner first (a chown may clear mode bits),
   * then only permission bits: never set-id bits.
   */
  give_owner(fd, src);
  if (fchmod(fd, src->st_mode & 0777) != 0 || futimens(fd, times) != 0 ||
      (sync && fsync(fd) != 0))
    return PC__ERRNO();
  return 0;
}

int pc__out_commit(pc__out_t *o, const char *final, const struct stat *src,
                   int sync) {
  int err = give_meta(o->fd, src, sync);

#if PC__ANON
  if (o->anon) {
    if (err == 0 && (err = link_final(o, final)) == -ENOENT &&
        to_named(o, final) == 0) {
      /* No way to name a descriptor here (a named temp could be made, so
       * the directory is there): this output and every one after take the
       * named temp.
       */
      atomic_store_explicit(&no_anon, 1, memory_order_relaxed);
      return finish(o, final, give_meta(o->fd, src, sync), sync);
    }
    return finish_anon(o, final, err, sync);
  }
#endif
  return finish(o, final, err, sync);
}

int pc__out_finish(pc__out_t *o, const char *final) {
  return finish(o, final, 0, 0);
}

int pc__out_reap(int dirfd, const char *name, const struct timespec *before) {
  struct stat st;
  int fd, gone = 0;

  fd = openat(dirfd, name,
              O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return 0;
  /* Made by the time this run began (so not in the instant between
   * another run's create and its lock), and no one holds it: its writer
   * is gone.
   */
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      (st.st_ctim.tv_sec < before->tv_sec ||
       (st.st_ctim.tv_sec == before->tv_sec &&
        st.st_ctim.tv_nsec <= before->tv_nsec)) &&
      flock(fd, LOCK_EX | LOCK_NB) == 0) {
    struct stat now;
    /* Still the file we locked under that name. */
    if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        now.st_dev == st.st_dev && now.st_ino == st.st_ino)
      gone = unlinkat(dirfd, name, 0) == 0;
  }
  close(fd);
  return gone;
}

/* One component of pc__out_dir(): `name` below `at`, made first when
 * missing and `create` says so. A descriptor or a negative code.
 */
static int dir_step(int at, const char *name, int create) {
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = openat(at, name, flags);

  if (fd < 0 && errno == ENOENT && create) {
    if (mkdirat(at, name, 0777) != 0 && errno != EEXIST)
      return PC__ERRNO();
    fd = openat(at, name, flags);
  }
  if (fd >= 0)
    return fd;
  /* O_NOFOLLOW on a symlink is ELOOP (ENOTDIR on some systems), and a file
   * at a directory's name ENOTDIR: either way the tree is not ours to
   * follow.
   */
  if (errno == ELOOP || errno == ENOTDIR || errno == EMLINK)
    return PC_EOUTLINK;
  return PC__ERRNO();
}

int pc__out_dir(int base, const char *rel, size_t len, int create) {
  char part[NAME_MAX + 1];
  size_t i = 0;
  int at = -1;

  while (i < len) {
    size_t n = 0;
    int fd;
    while (i + n < len && rel[i + n] != '/')
      n++;
    if (n == 0) {
      i++;
      continue;
    }
    if (n > NAME_MAX) {
      fd = -ENAMETOOLONG;
    } else {
      memcpy(part, rel + i, n);
      part[n] = '\0';
      fd = dir_step(at >= 0 ? at : base, part, create);
    }
    if (at >= 0)
      close(at);
    if (fd < 0)
      return fd;
    at = fd;
    i += n;
  }
  if (at < 0 &&
      (at = openat(base, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    return PC__ERRNO();
  return at;
}

void pc__out_discard(pc__out_t *o) {
  if (o->fd >= 0)
    close(o->fd);
  o->fd = -1;
  o->anon = 0;
  if (o->tmp != NULL) {
    unlinkat(o->dirfd, o->tmp, 0);
    free(o->tmp);
    o->tmp = NULL;
  }
}

int pc__out_writable(int dirfd) {
  return faccessat(dirfd, ".", W_OK | X_OK, AT_EACCESS) == 0 ? 0 : PC__ERRNO();
}
