/* Opening a directory below another through no symlink and not out of it
 * (openat2's RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or one component at a
 * time where there is no openat2): the worker's way to a file's directory
 * and a dictionary's (deltajob.c).
 */
#ifndef PC_BELOW_H
#define PC_BELOW_H

#include "common/common.h"

/* `dir` below dirfd through no symlink (unless `follow`) and not out of
 * it: an O_PATH descriptor (the caller's), or a negative code (a symlink
 * or a way out met: PC_ECHANGED).
 */
int pc__open_below(int dirfd, const char *dir, int follow);

#endif /* PC_BELOW_H */
