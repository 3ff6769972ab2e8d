/* The error table: pc_strerror() from PC_ERRNO_MAP (include/precompress.h),
 * and errno's strings for the rest. The generic helpers are buf.c's.
 */
#include "common/common.h"

#include <string.h>

const char *pc_strerror(int err) {
  switch (err) {
#define PC__ERR_CASE(name, val, msg)                                           \
  case PC_##name:                                                              \
    return msg;
    PC_ERRNO_MAP(PC__ERR_CASE)
#undef PC__ERR_CASE
  default:
    break;
  }
  if (err < 0 && err > -4000) {
    /* strerrordesc_np() is thread-safe where glibc's strerror() is not;
     * without it (musl, macOS, the BSDs, -Dportable=true), strerror_r()
     * into this thread's buffer, valid until its next call here: GNU's
     * variant may return a string of its own, XSI's returns 0 or an error.
     */
#if PC_HAVE_STRERRORDESC_NP
    const char *s = strerrordesc_np(-err);
#else
    static _Thread_local char buf[128];
#if PC_STRERROR_R_GNU
    const char *s = strerror_r(-err, buf, sizeof(buf));
#else
    const char *s = strerror_r(-err, buf, sizeof(buf)) == 0 ? buf : NULL;
#endif
#endif
    if (s != NULL)
      return s;
  }
  return err == 0 ? "Success" : "Unknown error";
}
