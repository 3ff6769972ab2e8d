/* Opening a directory below another through no symlink and not out of it
 * (openat2's RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or one component at a
 * time where there is no openat2): the worker's way to a file's directory
 * and, judging each directory on the way, a dictionary's (deltajob.c).
 */
#ifndef PC_BELOW_H
#define PC_BELOW_H

#include "common/common.h"
#include "fs/reach.h"

/* `dir` below dirfd through no symlink (unless `follow`) and not out of
 * it: an O_PATH descriptor (the caller's), or a negative code (a symlink
 * or a way out met: PC_ECHANGED).
 */
int pc__open_below(int dirfd, const char *dir, int follow);

/* `dir` below dirfd as pc__open_below() opens it without `follow`, one
 * component at a time, each directory passed counted in *reach
 * (pc__reach_dir(): judged by the descriptor opened, so a directory
 * swapped since it was listed is judged as it is).
 */
int pc__open_below_reach(int dirfd, const char *dir, pc__reach_t *reach);

#endif /* PC_BELOW_H */
