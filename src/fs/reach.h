/* Who could read a file through the directories on the way to it, by
 * their owners, groups and permission bits (reach.c): what a delta's
 * dictionary is judged by before it is read (docs/deltas.md).
 *
 * A delta is readable by whoever can read its file's outputs (they get the
 * file's owner, group and permission bits, out.h), and its bytes depend
 * on the dictionary: whoever reads the delta learns the dictionary's
 * SHA-256 and bytes of it. So a dictionary is used only when every reader
 * of the outputs could read it too. Kept simple and, where in doubt,
 * strict:
 *
 * - everyone: a directory with o+x and g+x, a file with o+r and g+r (the
 *   members of its group are held to its group bits, whatever the others'
 *   say; its owner may change its bits at will);
 * - the members of group G: everyone's bits, or the group's with G its
 *   group (membership of another group is not looked up);
 * - the account U: everyone's bits, or the owner's with U its owner.
 *
 * ACLs are not read: a dictionary an ACL opens wider than its bits is
 * judged by its bits. Only the directories from the --dictionary-from DIR
 * down count (DIR's own parents are where the user keeps it, as PATH's
 * are).
 */
#ifndef PC_REACH_H
#define PC_REACH_H

#include "common/common.h"

#include <sys/stat.h>

/* Who could get this far: everyone, else the members of one group
 * (`group`: gid), else one account (`owner`: uid); all three may be 0.
 */
typedef struct pc__reach {
  unsigned char all, group, owner;
  gid_t gid;
  uid_t uid;
} pc__reach_t;

/* Everyone: nothing passed yet. */
void pc__reach_init(pc__reach_t *r);

/* Through directory st (its x bits). */
void pc__reach_dir(pc__reach_t *r, const struct stat *st);

/* Reading file st (its r bits), at the end of the way. */
void pc__reach_file(pc__reach_t *r, const struct stat *st);

/* 1 when every reader of outputs given file st's owner, group and bits
 * could read what r reached: others (o+r) need everyone; the group (g+r)
 * its members; the owner (u+r) its account, unless the outputs are this
 * process's own or root's (out.c gives them the file's owner only when it
 * runs as root). 0 when one of them could not.
 */
int pc__reach_covers(const pc__reach_t *r, const struct stat *file);

#endif /* PC_REACH_H */
