/* What the machine lets this process use (machine.c). */
#ifndef PC_MACHINE_H
#define PC_MACHINE_H

#include "common.h"

/* pc_default_memory_limit() with every /proc and /sys file read below
 * `root` ("" for the real ones): for tests.
 */
void pc__memory_limit_at(const char *root, pc_memlimit_t *m);

#endif /* PC_MACHINE_H */
