/* Reading exactly n bytes: the one loop for it (the cache's entries, a
 * job's input, the old manifest's bytes).
 */
#include "common/common.h"

#include <unistd.h>

int pc__read_full(int fd, void *buf, size_t n, off_t off) {
  unsigned char *p = buf;

  while (n > 0) {
    ssize_t got = off < 0 ? read(fd, p, n) : pread(fd, p, n, off);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return PC__ERRNO();
    }
    if (got == 0)
      return PC_ECHANGED; /* it ended first: truncated since it was sized */
    p += got;
    n -= (size_t)got;
    if (off >= 0)
      off += got;
  }
  return 0;
}
