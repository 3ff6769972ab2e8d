/* Who could read a file through the directories on the way (reach.h). */
#include "fs/reach.h"

#include <unistd.h>

void pc__reach_init(pc__reach_t *r) {
  r->all = 1;
  r->group = r->owner = 0;
  r->gid = 0;
  r->uid = 0;
}

/* One step: `every` the bits that let everyone pass (the others' and the
 * group's, both), `g` and `u` the group's and the owner's.
 */
static void pass(pc__reach_t *r, const struct stat *st, mode_t every, mode_t g,
                 mode_t u) {
  int e = (st->st_mode & every) == every;

  if (e)
    return; /* whoever got this far goes on */
  /* Not everyone: only the one group, or the one account, that this step
   * lets through and that got this far.
   */
  r->group =
      (st->st_mode & g) != 0 && (r->all || (r->group && r->gid == st->st_gid));
  r->owner =
      (st->st_mode & u) != 0 && (r->all || (r->owner && r->uid == st->st_uid));
  r->gid = st->st_gid;
  r->uid = st->st_uid;
  r->all = 0;
}

void pc__reach_dir(pc__reach_t *r, const struct stat *st) {
  pass(r, st, S_IXOTH | S_IXGRP, S_IXGRP, S_IXUSR);
}

void pc__reach_file(pc__reach_t *r, const struct stat *st) {
  pass(r, st, S_IROTH | S_IRGRP, S_IRGRP, S_IRUSR);
}

int pc__reach_covers(const pc__reach_t *r, const struct stat *file) {
  uid_t me = geteuid();

  if ((file->st_mode & S_IROTH) && !r->all)
    return 0;
  if ((file->st_mode & S_IRGRP) && !r->all &&
      !(r->group && r->gid == file->st_gid))
    return 0;
  /* The outputs' owner: the file's when this process runs as root (and
   * then root may read anything), else this process, which could read
   * what it reached.
   */
  if ((file->st_mode & S_IRUSR) && me == 0 && file->st_uid != 0 && !r->all &&
      !(r->owner && r->uid == file->st_uid))
    return 0;
  return 1;
}
