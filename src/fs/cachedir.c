/* --cache-dir, resolved one component at a time (cachedir.h): the walk of
 * resolve.h, with every directory on the way judged, then DIR itself.
 */
#include "fs/cachedir.h"

#include "fs/resolve.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int pc__cache_dir(const char *dir, int create, char **canon) {
  struct stat st;
  int fd, err;

  err = pc__resolve_dir(
      dir, PC__RESOLVE_OURS | (create ? PC__RESOLVE_CREATE : 0), &fd, canon);
  /* A link the walk refused is, for the cache, one more thing another
   * account could change under it: the cache's one refusal.
   */
  if (err == PC_EUNSAFELINK)
    return PC_EUNSAFE;
  if (err != 0)
    return err;
  /* DIR itself: ours, and no one else may write it. */
  if (fstat(fd, &st) != 0)
    err = PC__ERRNO();
  else if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
    err = PC_EUNSAFE;
  close(fd);
  if (err != 0) {
    free(*canon);
    *canon = NULL;
  }
  return err;
}
