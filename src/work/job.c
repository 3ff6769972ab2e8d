/* The job record (job.h): made by the loop thread when the walk finds a
 * file, freed by it once the file's result is recorded.
 */
#include "work/job.h"

#include <stdlib.h>

pc__job_t *pc__job_new(char *fullpath, size_t rel_off, uint32_t root,
                       int root_fd, const struct stat *st, int via_link,
                       const pc__cfg_t *cfg) {
  pc__job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) {
    free(fullpath);
    return NULL;
  }
  j->fullpath = fullpath;
  j->rel_off = rel_off;
  j->root = root;
  j->root_fd = root_fd;
  j->size = (uint64_t)st->st_size;
  j->mtime_ns = pc__ns(st->st_mtim);
  j->via_link = via_link;
  j->cfg = cfg;
  j->unit.weight = j->size;
  return j;
}

void pc__job_free(pc__job_t *j) {
  while (j != NULL) {
    pc__job_t *next = j->unit.next;
    free(j->fullpath);
    free(j->res.err_path);
    free(j->res.deltas);
    free(j->res.dstats);
    if (j->old_deltas != NULL) {
      char **n;
      for (n = j->old_deltas; *n != NULL; n++)
        free(*n);
      free(j->old_deltas);
    }
    free(j);
    j = next;
  }
}
