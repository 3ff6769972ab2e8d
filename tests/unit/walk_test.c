/* The walk (src/walk/walk.c) over a scratch tree, driven as the run drives
 * it (enter every directory it is shown): each file once, with its
 * directory below the root and its sorted listing; a directory entered
 * twice (two roots) once; a symlink to a directory shown as a link and not
 * entered without `follow`, entered with it; a loop of links walked once;
 * an unreadable directory an error about it and the walk going on; a tree
 * deeper than the walk keeps descriptors for.
 */
#include "walk/walk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"

static char top[PATH_MAX];

static void put(const char *rel) {
  char p[2 * PATH_MAX];
  int fd;
  snprintf(p, sizeof(p), "%s/%s", top, rel);
  fd = open(p, O_CREAT | O_WRONLY, 0644);
  if (fd >= 0)
    close(fd);
}

static void dir(const char *rel) {
  char p[2 * PATH_MAX];
  snprintf(p, sizeof(p), "%s/%s", top, rel);
  mkdir(p, 0755);
}

/* Walks the roots, entering every directory (and, with follow, every
 * link to one); the files' paths "ROOT:drel/name" joined by ' ', in the
 * walk's order, into out; the errors' count into *errors. */
static void walk(pc__root_t *roots, uint32_t n, int follow, char *out,
                 size_t cap, int *errors) {
  pc__walk_t *w = NULL;
  pc__entry_t e;
  uint32_t k;
  int r;

  out[0] = '\0';
  *errors = 0;
  for (k = 0; k < n; k++)
    roots[k].fd = open(roots[k].dir, O_RDONLY | O_DIRECTORY);
  EXPECT(pc__walk_new(&w, roots, n, follow) == 0);
  while ((r = pc__walk_next(w, &e)) != 0 || !e.end) {
    struct stat st;
    if (r < 0) {
      EXPECT(e.path != NULL);
      ++*errors;
      continue;
    }
    if (e.name == NULL)
      continue;
    EXPECT(e.has_ls && e.ls.at < e.ls.n &&
           strcmp(e.ls.names[e.ls.at], e.name) == 0);
    if (fstatat(e.dfd, e.name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode)) {
      EXPECT(pc__walk_enter(w, &e) == 0);
      continue;
    }
    snprintf(out + strlen(out), cap - strlen(out), "%s%u:%s%s%s",
             out[0] ? " " : "", e.root, e.drel, e.drel[0] ? "/" : "", e.name);
  }
  pc__walk_free(w);
  for (k = 0; k < n; k++)
    close(roots[k].fd);
}

static pc__root_t root_of(char *d) {
  pc__root_t r;
  memset(&r, 0, sizeof(r));
  r.dir = d;
  r.label = d;
  r.fd = -1;
  return r;
}

int main(void) {
  char out[8192], deep[PATH_MAX] = "", sub[2 * PATH_MAX];
  pc__root_t roots[2];
  int errors, i;

  snprintf(top, sizeof(top), "%s/pc-walk-test-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (mkdtemp(top) == NULL)
    return 1;
  dir("b");
  dir("a");
  dir("a/c");
  put("z.js");
  put("a/y.css");
  put("a/c/x.txt");
  put("b/w.html");
  put("A.js");
  snprintf(sub, sizeof(sub), "%s/link", top);
  EXPECT(symlink("a", sub) == 0);

  cur = "one root";
  roots[0] = root_of(top);
  walk(roots, 1, 0, out, sizeof(out), &errors);
  /* Each directory's names sorted by bytes; a directory after its own. */
  EXPECT(errors == 0);
  EXPECT(strstr(out, "0:A.js") != NULL && strstr(out, "0:z.js") != NULL &&
         strstr(out, "0:a/y.css") != NULL &&
         strstr(out, "0:a/c/x.txt") != NULL &&
         strstr(out, "0:b/w.html") != NULL);
  EXPECT(strstr(out, "link/") == NULL); /* a link to a directory: not entered */
  EXPECT(strlen(out) ==
             strlen("0:A.js 0:link 0:z.js 0:b/w.html 0:a/y.css 0:a/c/x.txt") ||
         strlen(out) ==
             strlen("0:A.js 0:z.js 0:b/w.html 0:a/y.css 0:a/c/x.txt 0:link"));

  cur = "follow";
  walk(roots, 1, 1, out, sizeof(out), &errors);
  EXPECT(errors == 0);
  /* a/ and link/ are one directory: walked once, under the first name met. */
  {
    int ys = 0;
    const char *p = out;
    while ((p = strstr(p, "y.css")) != NULL)
      ys++, p++;
    EXPECT(ys == 1);
  }

  cur = "the same directory as two roots";
  snprintf(sub, sizeof(sub), "%s/a", top);
  roots[0] = root_of(sub);
  roots[1] = root_of(sub);
  walk(roots, 2, 0, out, sizeof(out), &errors);
  EXPECT(strstr(out, "0:y.css") != NULL && strstr(out, "1:y.css") == NULL);

  if (geteuid() != 0) {
    cur = "an unreadable directory";
    snprintf(sub, sizeof(sub), "%s/b", top);
    chmod(sub, 0);
    roots[0] = root_of(top);
    walk(roots, 1, 0, out, sizeof(out), &errors);
    EXPECT(errors == 1 && strstr(out, "w.html") == NULL &&
           strstr(out, "0:a/c/x.txt") != NULL);
    chmod(sub, 0755);
  }

  cur = "deep";
  for (i = 0; i < 200; i++) {
    strcat(deep, i ? "/d" : "d");
    dir(deep);
  }
  strcat(deep, "/leaf.js");
  put(deep);
  roots[0] = root_of(top);
  walk(roots, 1, 0, out, sizeof(out), &errors);
  EXPECT(errors == 0 && strstr(out, "/d/leaf.js") != NULL);

  printf("%d checks, %d failures\n", checks, failures);
  {
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
    if (system(cmd) != 0)
      return 1;
  }
  return failures != 0;
}
