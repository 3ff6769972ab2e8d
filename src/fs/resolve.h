/* A directory named by a path, resolved one component at a time as the
 * kernel resolves it, with a descriptor held on the directory reached so
 * far, so that what is judged on the way is what is used (resolve.c).
 *
 * Whoever can change where a path leads decides what is found there. Every
 * symlink met is judged before it is followed: it must be root's or the
 * user's (its effective uid), and so must the directory holding it, which
 * no one else may write unless it is sticky (/tmp: there no one else may
 * rename or remove what is root's or ours). Another account's link, or one
 * in a directory another account can write, says where that account chose
 * to send us: the walk stops there (PC_EUNSAFELINK). Without a link, a
 * directory another account owns leads only to what that account could
 * reach itself: no hard link to a directory, no way to bring another's
 * private directory below its own.
 *
 * The callers: --cache-dir (cachedir.h), which also wants every directory
 * on the way root's or the user's, and --dictionary-from (dictset.h).
 */
#ifndef PC_RESOLVE_H
#define PC_RESOLVE_H

#include "common/common.h"

/* What the walk also does. */
enum {
  PC__RESOLVE_CREATE = 1, /* make a missing component (0700, mkdirat()) */
  PC__RESOLVE_OURS = 2    /* every directory on the way, as named and as
                             reached through a link, root's or the user's
                             and writable by no one else unless sticky
                             (else PC_EUNSAFE) */
};

/* Resolves `dir` from "/" (a relative one below the working directory's
 * physical path, getcwd()). 0 with *fd an O_PATH descriptor of the
 * directory (the caller's) and, when canon is not NULL, *canon its
 * physical path (malloc'd); or PC_EUNSAFELINK, PC_EUNSAFE, -ENOENT,
 * -ENOTDIR, -ELOOP or another negative code.
 */
int pc__resolve_dir(const char *dir, unsigned flags, int *fd, char **canon);

#endif /* PC_RESOLVE_H */
