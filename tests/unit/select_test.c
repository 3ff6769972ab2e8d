/* The filter chain (src/walk/select.c) alone: made-up entries, listings and
 * stats in, verdicts out. No file is touched: select.c never calls the
 * system, and this test would not notice if it tried to, so it gives it
 * nothing that exists.
 */
#include "walk/select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "expect.h"

static const char *const skip_ext[] = {"png", "woff2", NULL};

static pc_options_t opts;
static pc__select_t sel;

/* A fresh chain: gz and br, the two-entry skip list above, no globs. */
static void setup(const char *name) {
  cur = name;
  pc__select_free(&sel);
  pc_options_init(&opts);
  opts.formats = PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR);
  opts.min_size = 1;
  if (pc__select_init(&sel, &opts, skip_ext, 2) != 0)
    abort();
}

/* An entry `rel` (its base name after the last '/') in directory (1, 1),
 * at `at` in the listing `names` (NULL: a file PATH, no listing).
 */
static pc__listing_t ls;
static pc__sel_entry_t entry(const char *rel, char *const *names, size_t n,
                             size_t at) {
  pc__sel_entry_t e;
  const char *slash = strrchr(rel, '/');
  memset(&e, 0, sizeof(e));
  e.rel = rel;
  e.rel_len = strlen(rel);
  e.name = slash != NULL ? slash + 1 : rel;
  e.len = strlen(e.name);
  e.dir.dev = 1;
  e.dir.ino = 1;
  if (names != NULL) {
    ls.names = names;
    ls.n = n;
    ls.at = at;
    e.ls = &ls;
  }
  return e;
}

static struct stat file_stat(mode_t type, dev_t dev, ino_t ino) {
  struct stat st;
  memset(&st, 0, sizeof(st));
  st.st_mode = type | 0644;
  st.st_dev = dev;
  st.st_ino = ino;
  st.st_size = 100;
  return st;
}

static void own_outputs(void) {
  static char *names[] = {"app.js", "app.js.br", "app.js.gz", "lone.gz"};
  pc__sel_entry_t e;
  struct stat st = file_stat(S_IFREG, 9, 9);

  setup("own outputs");
  e = entry("app.js.gz", names, 4, 2);
  EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_OWN_OUTPUT);
  EXPECT(pc__select_early(&sel, &e, 0) == PC__SEL_NEXT); /* not DT_REG */
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_OWN_OUTPUT);
  e = entry("app.js.br", names, 4, 1);
  EXPECT(pc__select_file(&sel, &e, NULL) == PC__SEL_OWN_OUTPUT);
  /* An output's name with no source beside it is a file like any other,
   * left out by its extension (a record, not silence).
   */
  e = entry("lone.gz", names, 4, 3);
  EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_NEXT);
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_EXTENSION);
  e = entry("app.js.gz", NULL, 0, 0); /* a file PATH: no listing */
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_EXTENSION);
  e = entry("app.js", names, 4, 0);
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_SOURCE);
}

/* FILE and FILE.gz more than the neighbour steps apart: the search. */
static void own_output_far(void) {
  static char *names[] = {"a",   "a-0", "a-1", "a-2", "a-3", "a-4",
                          "a-5", "a-6", "a-7", "a-8", "a-9", "a.gz"};
  pc__sel_entry_t e;
  setup("own output far from its source");
  e = entry("a.gz", names, 12, 11);
  EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_OWN_OUTPUT);
}

static void absent_and_size(void) {
  static char *names[] = {"a.js", "a.js.gz", "b.js"};
  pc__sel_entry_t e;

  setup("absent outputs");
  e = entry("a.js", names, 3, 0);
  EXPECT(pc__select_absent(&sel, &e) == PC_FMT_BIT(PC_BR));
  e = entry("b.js", names, 3, 2);
  EXPECT(pc__select_absent(&sel, &e) ==
         (PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR)));
  e = entry("a.js", NULL, 0, 0);
  EXPECT(pc__select_absent(&sel, &e) == 0); /* no listing: none known */

  setup("absent outputs, --output-dir");
  {
    /* The mirror's listing, not the source directory's, decides; it holds
     * no source, so the entry's place in the source listing is no hint.
     */
    static char *sorted_outs[] = {"a.js.br", "b.js.br", "b.js.gz", "z.css.gz"};
    pc__listing_t outs = {sorted_outs, 4, 0}, none = {NULL, 0, 0};
    e = entry("a.js", names, 3, 0);
    e.outs = &outs;
    EXPECT(pc__select_absent(&sel, &e) == PC_FMT_BIT(PC_GZ));
    e = entry("b.js", names, 3, 2);
    e.outs = &outs;
    EXPECT(pc__select_absent(&sel, &e) == 0);
    e = entry("z.css", NULL, 0, 0); /* a file PATH: the mirror still says */
    e.outs = &outs;
    EXPECT(pc__select_absent(&sel, &e) == PC_FMT_BIT(PC_BR));
    e = entry("a.js", names, 3, 0); /* no mirror directory: all absent */
    e.outs = &none;
    EXPECT(pc__select_absent(&sel, &e) ==
           (PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR)));
  }

  setup("size");
  opts.min_size = 10;
  EXPECT(pc__select_size(&sel, 0) == PC_SKIP_EMPTY);
  EXPECT(pc__select_size(&sel, 9) == PC_SKIP_MIN_SIZE);
  EXPECT(pc__select_size(&sel, 10) == PC_SKIP_NONE);
}

static void extensions_and_globs(void) {
  static const char *const exclude[] = {"*.map", "x/*"};
  static const char *const include[] = {"css/*", "*.png"};
  struct stat st = file_stat(S_IFREG, 9, 9);
  pc__sel_entry_t e;

  setup("skip list");
  e = entry("img/logo.PNG", NULL, 0, 0); /* any case */
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_EXTENSION);
  e = entry("font.woff2", NULL, 0, 0);
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_EXTENSION);
  e = entry("png", NULL, 0, 0); /* the extension alone is no extension */
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_SOURCE);
  e = entry("a.zst", NULL, 0, 0); /* an output's, even of a format off */
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_EXTENSION);

  setup("exclude");
  opts.exclude = exclude;
  opts.nexclude = 2;
  e = entry("js/app.js.map", NULL, 0, 0);
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_EXCLUDED);
  e = entry("x/logo.png", NULL, 0, 0); /* exclusion before the skip list */
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_EXCLUDED);
  e = entry("js/app.js", NULL, 0, 0);
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_SOURCE);

  setup("include");
  opts.include = include;
  opts.ninclude = 2;
  e = entry("css/app.css", NULL, 0, 0);
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_SOURCE);
  e = entry("js/app.js", NULL, 0, 0);
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_EXCLUDED);
  e = entry("logo.png", NULL, 0, 0); /* included, then the skip list */
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_EXTENSION);
}

static void specials(void) {
  struct stat fifo = file_stat(S_IFIFO, 9, 9);
  struct stat reg = file_stat(S_IFREG, 9, 9);
  pc__sel_entry_t e;

  setup("special files");
  e = entry("pipe.js", NULL, 0, 0);
  EXPECT(pc__select_file(&sel, &e, &fifo) == PC__SEL_SPECIAL);
  /* A special file is not taken for a temp: only a regular one is. */
  e = entry(".a.js.gz.AbC123.tmp", NULL, 0, 0);
  EXPECT(pc__select_file(&sel, &e, &fifo) == PC__SEL_SPECIAL);
  /* Nor a link to a regular file: its target's stat is no proof. */
  e.link = 1;
  EXPECT(pc__select_file(&sel, &e, &reg) == PC__SEL_SOURCE);
  e.link = 0;
  EXPECT(pc__select_file(&sel, &e, &reg) == PC__SEL_TEMP_OURS);
  EXPECT(pc__select_file(&sel, &e, NULL) == PC__SEL_TEMP_OURS);

  setup("cache directories");
  pc__select_skip(&sel, (pc__devino_t){4, 5});
  reg = file_stat(S_IFDIR, 4, 5);
  EXPECT(pc__select_skip_dir(&sel, &reg));
  reg = file_stat(S_IFDIR, 4, 6);
  EXPECT(!pc__select_skip_dir(&sel, &reg));
}

static void manifest(void) {
  struct stat st = file_stat(S_IFREG, 7, 8);
  pc__sel_entry_t e;

  setup("manifest");
  pc__select_set_manifest(&sel, "m.json", &(pc__devino_t){1, 1});
  e = entry("m.json", NULL, 0, 0);
  EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_MANIFEST);
  EXPECT(pc__select_early(&sel, &e, 0) == PC__SEL_MANIFEST);
  e = entry(".m.json.AbC123.tmp", NULL, 0, 0);
  EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_MANIFEST_TEMP);
  e = entry(".m.json.AbC12.tmp", NULL, 0, 0); /* five: not ours */
  EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_NEXT);
  e = entry(".m.json.AbC-23.tmp", NULL, 0, 0);
  EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_NEXT);
  e = entry("sub/m.json", NULL, 0, 0);
  e.dir.ino = 2; /* the same name in another directory: a file */
  EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_NEXT);
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_SOURCE);
  /* The manifest as it was at the start, under any name (a link to it). */
  pc__select_set_manifest_file(&sel, (pc__devino_t){7, 8});
  e = entry("link.json", NULL, 0, 0);
  EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_MANIFEST);
  EXPECT(pc__select_file(&sel, &e, NULL) == PC__SEL_SOURCE); /* unstatted */
}

/* The cache directory as a PATH: the store's files in it are not sources;
 * the same names elsewhere, or other names there, are.
 */
static void cache_store(void) {
  static const char *const ours[] = {"cache.sqlite", "cache.sqlite-wal",
                                     "cache.sqlite-shm",
                                     "cache.sqlite-journal"};
  static const char *const not_ours[] = {"cache.sqlite-x", "cache.sqlit",
                                         "cache.sqlite.bak", "README"};
  pc__sel_entry_t e;
  size_t k;

  setup("cache store");
  pc__select_set_cache_dir(&sel, (pc__devino_t){1, 1});
  for (k = 0; k < PC__ARRAY_SIZE(ours); k++) {
    e = entry(ours[k], NULL, 0, 0);
    EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_CACHE);
    e.dir.ino = 2; /* another directory: a file like any */
    EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_NEXT);
  }
  for (k = 0; k < PC__ARRAY_SIZE(not_ours); k++) {
    e = entry(not_ours[k], NULL, 0, 0);
    EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_NEXT);
  }
  setup("cache store unknown");
  e = entry("cache.sqlite", NULL, 0, 0);
  EXPECT(pc__select_early(&sel, &e, 1) == PC__SEL_NEXT);
}

/* Every path in exactly one of three shards, and its temps reaped by that
 * shard alone.
 */
static void shards(void) {
  static const char *const paths[] = {"a.js",       "css/app.css", "js/x/y.js",
                                      "index.html", "b.svg",       "c.txt"};
  struct stat st = file_stat(S_IFREG, 9, 9);
  struct stat fifo = file_stat(S_IFIFO, 9, 9);
  size_t k;
  uint32_t s;

  for (k = 0; k < PC__ARRAY_SIZE(paths); k++) {
    unsigned taken = 0, reaped = 0;
    uint32_t want = (uint32_t)(XXH3_64bits(paths[k], strlen(paths[k])) % 3);
    char tmp[256];
    const char *slash = strrchr(paths[k], '/');
    size_t dl = slash != NULL ? (size_t)(slash + 1 - paths[k]) : 0;
    snprintf(tmp, sizeof(tmp), "%.*s.%s.gz.AbC123.tmp", (int)dl, paths[k],
             paths[k] + dl);
    for (s = 1; s <= 3; s++) {
      pc__sel_entry_t e;
      setup("shards");
      opts.shard_count = 3;
      opts.shard_index = s;
      e = entry(paths[k], NULL, 0, 0);
      if (pc__select_file(&sel, &e, &st) == PC__SEL_SOURCE) {
        taken++;
        EXPECT(s - 1 == want);
      } else {
        EXPECT(pc__select_file(&sel, &e, &st) == PC__SEL_OTHER_SHARD);
        /* another shard's: no record, special or not */
        EXPECT(pc__select_file(&sel, &e, &fifo) == PC__SEL_OTHER_SHARD);
      }
      e = entry(tmp, NULL, 0, 0);
      if (pc__select_file(&sel, &e, NULL) == PC__SEL_TEMP_OURS)
        reaped++;
      else
        EXPECT(pc__select_file(&sel, &e, NULL) == PC__SEL_TEMP);
    }
    EXPECT(taken == 1);
    EXPECT(reaped == 1);
  }

  /* A temp name cut to fit NAME_MAX no longer names its source: only a
   * run without --shard reaps it.
   */
  for (s = 1; s <= 3; s++) {
    pc__sel_entry_t e;
    setup("cut temp");
    opts.shard_count = 3;
    opts.shard_index = s;
    e = entry(".lon~.gz.AbC123.tmp", NULL, 0, 0);
    EXPECT(pc__select_file(&sel, &e, NULL) == PC__SEL_TEMP);
  }
}

int main(void) {
  own_outputs();
  own_output_far();
  absent_and_size();
  extensions_and_globs();
  specials();
  manifest();
  cache_store();
  shards();
  pc__select_free(&sel);
  printf("select_test: %d checks, %d failed\n", checks, failures);
  return failures != 0;
}
