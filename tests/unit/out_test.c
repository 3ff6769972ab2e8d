/* The output protocol (src/fs/out.c), on a scratch directory: a named temp
 * and an unnamed one each end as the final name with the source's
 * permission bits and times and the bytes written, nothing else left in
 * the directory; a symlink at the final name is replaced, its target
 * untouched; a failed commit leaves no temp; a name at NAME_MAX gets a
 * temp cut to fit; a killed run's temp is reaped and a live one is not;
 * --output-dir's descent makes what is missing and follows no symlink.
 */
#include "fs/out.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"

static char dir[PATH_MAX];
static int dfd;

/* The names in the scratch directory, but "." and "..", joined by ' '. */
static void names(char *out, size_t cap) {
  DIR *d = opendir(dir);
  struct dirent *e;

  out[0] = '\0';
  while (d != NULL && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (out[0])
      strncat(out, " ", cap - strlen(out) - 1);
    strncat(out, e->d_name, cap - strlen(out) - 1);
  }
  if (d != NULL)
    closedir(d);
}

static int content_is(const char *name, const char *want) {
  char buf[256];
  ssize_t n;
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW);

  if (fd < 0)
    return 0;
  n = read(fd, buf, sizeof(buf));
  close(fd);
  return n == (ssize_t)strlen(want) && memcmp(buf, want, (size_t)n) == 0;
}

static void clean(void) {
  char all[4096], *p, *save = NULL;
  names(all, sizeof(all));
  for (p = strtok_r(all, " ", &save); p; p = strtok_r(NULL, " ", &save))
    unlinkat(dfd, p, 0);
}

/* The source's mode and times, as a worker has them. */
static struct stat source(void) {
  struct stat st;
  memset(&st, 0, sizeof(st));
  st.st_mode = S_IFREG | 0640;
  st.st_uid = geteuid();
  st.st_gid = getegid();
  st.st_atim.tv_sec = 1600000000;
  st.st_atim.tv_nsec = 5;
  st.st_mtim.tv_sec = 1700000000;
  st.st_mtim.tv_nsec = 123456789;
  return st;
}

static void commit(int anon) {
  pc__out_t o = PC__OUT_INIT;
  struct stat src = source(), st;
  char all[4096];

  cur = anon ? "unnamed" : "named";
  EXPECT((anon ? pc__out_open_new(&o, dfd, "a.js.gz")
               : pc__out_open(&o, dfd, "a.js.gz")) == 0);
  EXPECT(o.fd >= 0);
  EXPECT(pc__out_write(&o, "hello", 5) == 0);
  /* Until the commit the final name does not exist. */
  EXPECT(faccessat(dfd, "a.js.gz", F_OK, AT_SYMLINK_NOFOLLOW) != 0);
  EXPECT(pc__out_commit(&o, "a.js.gz", &src, 0) == 0);
  EXPECT(o.fd == -1 && o.tmp == NULL);
  EXPECT(fstatat(dfd, "a.js.gz", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0640 &&
         st.st_mtim.tv_sec == src.st_mtim.tv_sec &&
         st.st_mtim.tv_nsec == src.st_mtim.tv_nsec);
  EXPECT(content_is("a.js.gz", "hello"));
  names(all, sizeof(all));
  EXPECT(strcmp(all, "a.js.gz") == 0);
  /* Again over the existing file: replaced whole. */
  o = (pc__out_t)PC__OUT_INIT;
  EXPECT(pc__out_open(&o, dfd, "a.js.gz") == 0);
  EXPECT(pc__out_write(&o, "bye", 3) == 0);
  EXPECT(pc__out_commit(&o, "a.js.gz", &src, 1) == 0);
  EXPECT(content_is("a.js.gz", "bye"));
  names(all, sizeof(all));
  EXPECT(strcmp(all, "a.js.gz") == 0);
  clean();
}

static void symlink_replaced(void) {
  pc__out_t o = PC__OUT_INIT;
  struct stat src = source(), st;

  cur = "symlink at the final name";
  EXPECT(symlinkat("target", dfd, "b.js.br") == 0);
  EXPECT(pc__out_open(&o, dfd, "b.js.br") == 0);
  EXPECT(pc__out_write(&o, "x", 1) == 0);
  EXPECT(pc__out_commit(&o, "b.js.br", &src, 0) == 0);
  EXPECT(fstatat(dfd, "b.js.br", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(st.st_mode));
  EXPECT(faccessat(dfd, "target", F_OK, AT_SYMLINK_NOFOLLOW) != 0);
  clean();
}

static void failed_commit(void) {
  pc__out_t o = PC__OUT_INIT;
  struct stat src = source();
  char all[4096];

  cur = "a directory at the final name";
  EXPECT(mkdirat(dfd, "c.js.gz", 0755) == 0);
  EXPECT(pc__out_open(&o, dfd, "c.js.gz") == 0);
  EXPECT(pc__out_write(&o, "x", 1) == 0);
  EXPECT(pc__out_commit(&o, "c.js.gz", &src, 0) != 0);
  names(all, sizeof(all));
  EXPECT(strcmp(all, "c.js.gz") == 0); /* no temp left */
  unlinkat(dfd, "c.js.gz", AT_REMOVEDIR);
  cur = "discard";
  EXPECT(pc__out_open(&o, dfd, "d.js.gz") == 0);
  pc__out_discard(&o);
  names(all, sizeof(all));
  EXPECT(all[0] == '\0');
}

static void long_name(void) {
  char name[NAME_MAX + 1], all[4096];
  pc__out_t o = PC__OUT_INIT;
  struct stat src = source();

  cur = "a final name of NAME_MAX bytes";
  memset(name, 'n', NAME_MAX - 3);
  strcpy(name + NAME_MAX - 3, ".gz");
  EXPECT(strlen(name) == NAME_MAX);
  EXPECT(pc__out_open(&o, dfd, name) == 0);
  EXPECT(o.tmp != NULL && strlen(o.tmp) <= NAME_MAX && o.tmp[0] == '.');
  EXPECT(pc__out_write(&o, "x", 1) == 0);
  EXPECT(pc__out_commit(&o, name, &src, 0) == 0);
  names(all, sizeof(all));
  EXPECT(strcmp(all, name) == 0);
  clean();
}

static void reap(void) {
  pc__out_t live = PC__OUT_INIT;
  struct timespec start;
  struct stat st;
  int fd;

  cur = "reap";
  /* A killed run's temp: made before this run began, not locked. */
  fd = openat(dfd, ".e.js.gz.abcdef.tmp", O_CREAT | O_WRONLY, 0600);
  EXPECT(fd >= 0);
  close(fd);
  {
    struct timespec old[2] = {{1000, 0}, {1000, 0}};
    utimensat(dfd, ".e.js.gz.abcdef.tmp", old, 0);
  }
  clock_gettime(CLOCK_REALTIME, &start);
  EXPECT(pc__out_reap(dfd, ".e.js.gz.abcdef.tmp", &start) == 1);
  EXPECT(fstatat(dfd, ".e.js.gz.abcdef.tmp", &st, 0) != 0 && errno == ENOENT);
  /* A live writer's temp stays. */
  EXPECT(pc__out_open(&live, dfd, "f.js.gz") == 0);
  EXPECT(live.tmp != NULL && pc__out_reap(dfd, live.tmp, &start) == 0);
  EXPECT(fstatat(dfd, live.tmp, &st, 0) == 0);
  pc__out_discard(&live);
  clean();
}

static void out_dir(void) {
  int fd;

  cur = "out_dir";
  fd = pc__out_dir(dfd, "x/y/z", 5, 0);
  EXPECT(fd == -ENOENT);
  fd = pc__out_dir(dfd, "x/y/z", 5, 1);
  EXPECT(fd >= 0);
  if (fd >= 0)
    close(fd);
  EXPECT(faccessat(dfd, "x/y/z", F_OK, 0) == 0);
  /* A symlink on the way is never followed. */
  EXPECT(symlinkat(dir, dfd, "x/link") == 0);
  EXPECT(pc__out_dir(dfd, "x/link/q", 8, 1) == PC_EOUTLINK);
  EXPECT(faccessat(dfd, "q", F_OK, AT_SYMLINK_NOFOLLOW) != 0);
  unlinkat(dfd, "x/link", 0);
  unlinkat(dfd, "x/y/z", AT_REMOVEDIR);
  unlinkat(dfd, "x/y", AT_REMOVEDIR);
  unlinkat(dfd, "x", AT_REMOVEDIR);
  EXPECT(pc__out_writable(dfd) == 0);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof(dir), "%s/pc-out-test-XXXXXX", tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL || (dfd = open(dir, O_RDONLY | O_DIRECTORY)) < 0) {
    perror(dir);
    return 1;
  }
  commit(0);
  commit(1);
  symlink_replaced();
  failed_commit();
  long_name();
  reap();
  out_dir();
  close(dfd);
  rmdir(dir);
  printf("%d checks, %d failures\n", checks, failures);
  return failures != 0;
}
