/* The --cache-dir directory, found and made safely (cachedir.c).
 *
 * Whoever can change where DIR leads decides what the cache holds, and so
 * what outputs are copied from it. DIR is resolved one component at a
 * time, from "/" (a relative DIR below the working directory's physical
 * path, getcwd()), as the kernel would (resolve.h), and every step is
 * judged:
 *
 * - every directory entered, whether named in DIR or reached through a
 *   link, must be root's or the user's and writable by no one else unless
 *   sticky (/tmp: then no one else may rename or remove what is ours);
 * - every symlink met must be root's or the user's (in a sticky directory
 *   another user's link is theirs to swap; anywhere else it says where
 *   another account chose to send us);
 * - DIR itself must be the user's and writable by no one else.
 *
 * A missing component is made (0700) with mkdirat() in the directory the
 * walk holds open, then judged like any other: a link planted at its name
 * is never followed by the mkdir (it fails, EEXIST) but judged as a link.
 */
#ifndef PC_CACHEDIR_H
#define PC_CACHEDIR_H

#include "common/common.h"

/* Resolves DIR (making what is missing with `create`). 0 with *canon the
 * physical path of DIR (malloc'd: the name SQLite is then given, every
 * component of it judged above), or PC_EUNSAFE, -ENOENT (missing, without
 * `create`), -ENOTDIR, -ELOOP or another negative code.
 */
int pc__cache_dir(const char *dir, int create, char **canon);

#endif /* PC_CACHEDIR_H */
