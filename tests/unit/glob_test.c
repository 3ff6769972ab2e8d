/* pc__glob_match: the glob language of --include/--exclude (an internal
 * module: src/ is on this test's include path).
 */
#include <stdio.h>

#include "common/glob.h"

static int failures;
static int checks;

static void expect(const char *glob, const char *path, int want, int line) {
  int got = pc__glob_match(glob, path) != 0;
  checks++;
  if (got != want) {
    failures++;
    fprintf(stderr,
            "glob_test.c:%d: pc__glob_match(\"%s\", \"%s\") = %d, want %d\n",
            line, glob, path, got, want);
  }
}

#define YES(g, p) expect((g), (p), 1, __LINE__)
#define NO(g, p) expect((g), (p), 0, __LINE__)

int main(void) {
  /* literals */
  YES("css/app.css", "css/app.css");
  NO("css/app.css", "css/app.cs");
  NO("css/app.css", "css/app.css2");
  NO("css/app.css",
     "x/css/app.css"); /* a glob with '/' is anchored at the root */

  /* '*' within one component, never across '/' */
  YES("css/*.css", "css/app.css");
  YES("css/*", "css/app.css");
  NO("css/*.css", "css/sub/app.css");
  NO("*/app.css", "a/b/app.css");
  YES("*/app.css", "css/app.css");
  YES("css/a*b*c.js", "css/aXXbYYc.js");
  NO("css/a*b*c.js", "css/aXXbYY/c.js");
  YES("js/*", "js/app.js.map");

  /* '?' is one character, never '/' */
  YES("js/?.js", "js/x.js");
  NO("js/?.js", "js/xy.js");
  NO("js/?.js", "js/.js");
  NO("a?b/c", "a/b/c");
  YES("a?b/c", "axb/c");

  /* '**' spans directories; '**' + '/' may match zero directories */
  YES("**/*.css", "app.css");
  YES("**/*.css", "css/app.css");
  YES("**/*.css", "a/b/c/app.css");
  NO("**/*.css", "a/b/c/app.js");
  YES("a/**/b", "a/b");
  YES("a/**/b", "a/x/b");
  YES("a/**/b", "a/x/y/z/b");
  NO("a/**/b", "a/xb");
  NO("a/**/b", "ab");
  NO("a/**/b", "a/x/bb");
  NO("a/**/b", "xa/b");
  YES("vendor/**", "vendor/lib/deep/x.js");
  YES("vendor/**", "vendor/x.js");
  NO("vendor/**", "vendors/x.js");
  YES("**", "a/b/c");
  YES("**/deep/*.js", "vendor/lib/deep/x.js");
  NO("**/deep/*.js", "vendor/lib/deep/more/x.js");

  /* classes */
  YES("[abc].js", "a.js");
  YES("[abc].js", "c.js");
  NO("[abc].js", "d.js");
  YES("[a-c].js", "b.js");
  NO("[a-c].js", "e.js");
  YES("[!a].js", "b.js");
  NO("[!a].js", "a.js");
  YES("x[0-9][0-9].png", "x42.png");
  NO("x[0-9][0-9].png", "x4a.png");
  NO("a[!x]b/c", "a/b/c"); /* a negated class does not match '/' either */

  /* a glob without '/' is matched against the base name, at any depth */
  YES("*.map", "app.js.map");
  YES("*.map", "js/app.js.map");
  YES("*.map", "a/b/c/d.map");
  NO("*.map", "js/app.js");
  NO("*.map", "maps.d/app.js"); /* a directory name is not the base name */
  YES("app.css", "css/app.css");
  YES("x.js", "vendor/lib/deep/x.js");
  NO("deep", "vendor/lib/deep/x.js");
  YES("read me.txt", "docs/read me.txt");
  YES("caf\xc3\xa9*.css", "docs/caf\xc3\xa9 \xe2\x80\x93 men\xc3\xbc.css");

  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
