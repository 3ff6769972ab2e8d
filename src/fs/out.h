/* The output protocol: a temp file beside the final name, written, given the
 * source's mode and times through its descriptor, then renamed over the
 * final name, so a reader sees the old file or the new one, never a part.
 */
#ifndef PC_OUT_H
#define PC_OUT_H

#include "common/common.h"

#include <fcntl.h>
#include <sys/stat.h>

/* One output being written. PC__OUT_INIT is "not open". */
typedef struct pc__out {
  int fd;    /* -1 when not open */
  int dirfd; /* the directory names are relative to (not owned) */
  char *tmp; /* malloc'd temp name (relative to dirfd) while it exists */
  int anon;  /* fd is an unnamed file (O_TMPFILE): no tmp, linked at commit */
} pc__out_t;

#define PC__OUT_INIT                                                           \
  { -1, AT_FDCWD, NULL, 0 }

/* Creates the temp file for `final`, a name relative to `dirfd` (or a path,
 * with AT_FDCWD): ".NAME.XXXXXX.tmp" in the same directory,
 * O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600. A NAME too long for that is cut,
 * ending in '~', so the temp name fits NAME_MAX. 0 or a negative code.
 */
int pc__out_open(pc__out_t *o, int dirfd, const char *final);

/* pc__out_open() for a `final` the caller found absent (not in the walk's
 * listing of its directory) and with no directory part: an unnamed file
 * (O_TMPFILE, mode 0600) that pc__out_commit() links at the final name.
 * No temp's directory entry to add, lock and rename away: on a fresh tree
 * the create and the rename were most of the kernel's time per output.
 * Where the file system or the kernel has no O_TMPFILE, or a link cannot
 * be made from the descriptor (no CAP_DAC_READ_SEARCH and no /proc), the
 * named temp of pc__out_open(), from then on for the whole process. A
 * killed run leaves nothing behind. 0 or a negative code.
 */
int pc__out_open_new(pc__out_t *o, int dirfd, const char *final);

/* pc__out_open() with another creation mode (less the umask): for files of
 * our own, such as cache entries, that pc__out_finish() renames as they are.
 */
int pc__out_open_mode(pc__out_t *o, int dirfd, const char *final, mode_t mode);

/* Writes all n bytes, retrying short writes and EINTR. */
int pc__out_write(pc__out_t *o, const void *p, size_t n);

/* Gives the temp the permission bits and atime/mtime of `src`, closes it
 * and renames it over `final` (relative to the dirfd it was opened with);
 * an unnamed one is linked at `final`, or, when something took the name
 * meanwhile, linked under a locked temp name and renamed over it.
 * With `sync`, the data reaches the disk
 * before the rename and the directory entry after it, so that after a power
 * loss the name holds the old file or the new one. On failure the temp is
 * removed. Either way o is closed afterwards.
 */
int pc__out_commit(pc__out_t *o, const char *final, const struct stat *src,
                   int sync);

/* Closes the temp and renames it over `final` as it is: the mode it was
 * created with, the times of its writes. On failure the temp is removed.
 * A named temp only (pc__out_open(), pc__out_open_mode()).
 */
int pc__out_finish(pc__out_t *o, const char *final);

/* Removes `name` (relative to dirfd), a temp file of ours the walk found,
 * when it is a killed run's: created by `before` (this run's start) and
 * not locked, as every temp is while its
 * writer lives. Another run at work in the same tree keeps its temps. 1
 * when removed.
 */
int pc__out_reap(int dirfd, const char *name, const struct timespec *before);

/* Opens the directory rel[0..len) below `base` (--output-dir's mirror of a
 * source directory; len 0: base itself), one component at a time, each
 * O_NOFOLLOW|O_DIRECTORY: a symlink or a non-directory on the way is never
 * followed (PC_EOUTLINK). With `create`, a missing component is made
 * (mkdirat, 0777 less the umask; EEXIST is fine: other workers and other
 * shards make the same ones). `rel` comes from the walk: no "." or "..".
 * A new descriptor (O_RDONLY: it may be listed), or a negative code
 * (-ENOENT without `create` when a component is missing).
 */
int pc__out_dir(int base, const char *rel, size_t len, int create);

/* 0 if this process may create and remove files in the directory open at
 * dirfd (faccessat W_OK|X_OK with the effective ids: modes, ACLs, a
 * read-only mount, an immutable directory), else the negative errno. What
 * finds a directory unwritable before any of its files is read.
 */
int pc__out_writable(int dirfd);

/* Closes and removes the temp, if any (cleanup path; never fails). */
void pc__out_discard(pc__out_t *o);

#endif /* PC_OUT_H */
