/* The glob language of --include and --exclude (glob.c has the rules). */
#ifndef PC_GLOB_H
#define PC_GLOB_H

#include "common/common.h"

/* 1 if `path` (relative to its root) matches `glob`, else 0. A glob
 * without '/' is tried on the base name. Internal: the tests reach it
 * through src/ (glob_test, fuzz_glob), programs through include/exclude.
 */
int pc__glob_match(const char *glob, const char *path);

#endif /* PC_GLOB_H */
