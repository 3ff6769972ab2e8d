/* Which symlinked files a run follows (linkrule.c). Worker side.
 *
 * A link to a file is compressed as the file, and its outputs are written
 * beside the link. When another account made the link, that would copy a
 * file it cannot read (protected by a directory it cannot enter) to where
 * it can: `ln -s /root-only/secret.env leak.css` in a tree root compresses
 * gave it leak.css.gz. A link is followed only when one of these holds:
 *
 * 1. the link is the run's own user's (its effective uid): no one else
 *    made it;
 * 2. the link's owner owns the file too (Apache's SymLinksIfOwnerMatch,
 *    nginx's `disable_symlinks if_not_owner`): it exposes only its own;
 * 3. the file lies in the link's own directory or in one above it, within
 *    the PATH: whoever reaches the link passes through the file's
 *    directory, and the outputs get the file's permission bits, so they
 *    show no one more than the file does.
 *
 * Else the file is skipped ("link-owner") without being read. Judged on
 * what is opened: the link itself by a descriptor (Linux; elsewhere by
 * its name, looked at before and after the open), the file by the
 * descriptor it is read from, so a link swapped meanwhile changes nothing.
 */
#ifndef PC_LINKRULE_H
#define PC_LINKRULE_H

#include "common/common.h"

#include <sys/stat.h>

/* Opens what the symlink `name` in `pdir` leads to, with open(2) `flags`,
 * into *fd (fstat'ed into *st; the caller's to close) when the rule lets
 * it be followed; *fd is -1 when it does not (nothing read). 0, or a
 * negative code (PC_ECHANGED when `name` is no longer a link). `root_fd`
 * is the PATH's directory.
 */
int pc__link_open(int pdir, const char *name, int root_fd, int flags, int *fd,
                  struct stat *st);

#endif /* PC_LINKRULE_H */
