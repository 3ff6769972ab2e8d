/* The error table: pc_strerror() from PC_ERRNO_MAP (include/precompress.h),
 * and errno's strings for the rest. The generic helpers are buf.c's.
 */
#include "common.h"

#include <string.h>

const char *pc_strerror(int err) {
  switch (err) {
#define PC__ERR_CASE(name, val, msg)                                          \
  case PC_##name:                                                             \
    return msg;
    PC_ERRNO_MAP(PC__ERR_CASE)
#undef PC__ERR_CASE
  default:
    break;
  }
  if (err < 0 && err > -4000) {
    /* strerrordesc_np() is thread-safe where glibc's strerror() is not;
     * without it (musl, the BSDs), strerror() reads a table.
     */
#if PC_HAVE_STRERRORDESC_NP
    const char *s = strerrordesc_np(-err);
#else
    const char *s = strerror(-err);
#endif
    if (s != NULL)
      return s;
  }
  return err == 0 ? "Success" : "Unknown error";
}
