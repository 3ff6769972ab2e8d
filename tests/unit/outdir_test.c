/* pc__out_dir() (src/fs/out.c), --output-dir's way down its tree, on a real
 * scratch directory: components made only when asked, EEXIST fine, and a
 * symlink or a file on the way never followed (PC_EOUTLINK), whatever it
 * points to.
 */
#include "fs/out.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"

/* 1 if `rel` below base is a directory (not through a symlink). */
static int is_dir(int base, const char *rel) {
  struct stat st;
  return fstatat(base, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISDIR(st.st_mode);
}

/* The directory fd is, as (dev, ino), equals `rel` below base. */
static int same_dir(int fd, int base, const char *rel) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && fstatat(base, rel, &b, 0) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int main(void) {
  char tmpl[] = "/tmp/pc-outdir-test-XXXXXX";
  char *root = mkdtemp(tmpl);
  int base, fd, outside;
  char cmd[PATH_MAX + 16];

  if (root == NULL || (base = open(root, O_RDONLY | O_DIRECTORY)) < 0)
    return 1;

  cur = "missing, not made";
  EXPECT(pc__out_dir(base, "a/b", 3, 0) == -ENOENT);
  EXPECT(!is_dir(base, "a"));

  cur = "made like mkdir -p, then opened again";
  fd = pc__out_dir(base, "a/b/c", 5, 1);
  EXPECT(fd >= 0 && same_dir(fd, base, "a/b/c"));
  if (fd >= 0)
    close(fd);
  fd = pc__out_dir(base, "a/b/c", 5, 1); /* EEXIST all the way: fine */
  EXPECT(fd >= 0 && same_dir(fd, base, "a/b/c"));
  if (fd >= 0)
    close(fd);
  fd = pc__out_dir(base, "a/b/c/d", 3, 0); /* only the first len bytes */
  EXPECT(fd >= 0 && same_dir(fd, base, "a/b"));
  if (fd >= 0)
    close(fd);

  cur = "len 0: the base itself, a descriptor of its own";
  fd = pc__out_dir(base, "", 0, 0);
  EXPECT(fd >= 0 && fd != base && same_dir(fd, base, "."));
  if (fd >= 0)
    close(fd);

  cur = "a symlink on the way is never followed";
  EXPECT(mkdirat(base, "outside", 0777) == 0);
  EXPECT(symlinkat("../outside", base, "a/link") == 0);
  EXPECT(pc__out_dir(base, "a/link", 6, 0) == PC_EOUTLINK);
  EXPECT(pc__out_dir(base, "a/link/x", 8, 1) == PC_EOUTLINK);
  outside = openat(base, "outside", O_RDONLY | O_DIRECTORY);
  EXPECT(outside >= 0 && !is_dir(outside, "x"));
  if (outside >= 0)
    close(outside);
  EXPECT(symlinkat("nowhere", base, "a/dangling") == 0);
  EXPECT(pc__out_dir(base, "a/dangling/x", 12, 1) == PC_EOUTLINK);
  EXPECT(!is_dir(base, "nowhere"));

  cur = "a file on the way is not a directory";
  fd = openat(base, "a/file", O_CREAT | O_WRONLY, 0644);
  EXPECT(fd >= 0);
  if (fd >= 0)
    close(fd);
  EXPECT(pc__out_dir(base, "a/file/x", 8, 1) == PC_EOUTLINK);

  cur = "a component past NAME_MAX";
  {
    char longname[NAME_MAX + 3];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    EXPECT(pc__out_dir(base, longname, strlen(longname), 1) == -ENAMETOOLONG);
  }

  close(base);
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", root);
  printf("outdir_test: %d checks, %d failed\n", checks, failures);
  return failures != 0;
}
