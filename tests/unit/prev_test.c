/* pc__prev_load (src/manifest/prev.c, over src/manifest/manifest_read.c) with
 * "files" parsed in parts on threads: the table must be the one a single pass
 * makes, whatever the parts' guessed starts hit (a line, a nested object on a
 * line of its own, something after the array) and wherever a bad line or a
 * duplicate falls.
 */
#include "manifest/prev.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect.h"

static char path[] = "/tmp/pc_prev_test.XXXXXX";
static const int level[PC_NFORMATS] = {9, 11, 19};
static char site[] = "site";
static char *labels[] = {site};

/* A growable text. */
static char *doc;
static size_t len, cap;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...) {
  va_list ap;
  int n;
  for (;;) {
    va_start(ap, fmt);
    n = vsnprintf(doc + len, cap - len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < cap - len)
      break;
    cap = cap ? cap * 2 : 4096;
    if ((doc = realloc(doc, cap)) == NULL)
      abort();
  }
  len += (size_t)n;
}

static void head(void) {
  len = 0;
  put("{\n  \"precompress\": 1,\n  \"options\": {\"formats\": [\"gz\"], "
      "\"gzip_level\": 9, \"max_ratio\": 0.95},\n  \"files\": [\n");
}

/* Lines f<from>..f<to - 1> of one shape, each followed by a comma but the
 * last unless `comma_after_last`.
 */
static void lines(size_t from, size_t to, int comma_after_last) {
  size_t k;
  for (k = from; k < to; k++)
    put("    {\"path\": \"f%zu\", \"size\": 2, \"mtime_ns\": 3, "
        "\"gz\": {\"size\": 1}}%s\n",
        k, k + 1 < to || comma_after_last ? "," : "");
}

static int load(pc__prev_t **p, unsigned threads, size_t min_part) {
  FILE *f = fopen(path, "wb");
  pc__spec_t spec;

  if (f == NULL || fwrite(doc, 1, len, f) != len || fclose(f) != 0)
    abort();
  memset(&spec, 0, sizeof(spec));
  spec.formats = PC_FMT_BIT(PC_GZ);
  memcpy(spec.level, level, sizeof(spec.level));
  spec.gzip_engine = PC_GZIP_ZLIB;
  spec.ratio_num = 95;
  spec.ratio_den = 100;
  return pc__prev_load(p, path, &spec, labels, 1, threads, min_part);
}

/* The same status and, for every name f0..f(n-1) and `extra`, the same
 * record from one pass and from parts on 1..8 threads, parts as small as 1
 * and 64 bytes.
 */
static void same(const char *name, size_t n, const char *extra, int want_err) {
  static const size_t mins[] = {1, 64, 700};
  pc__prev_t *one = NULL;
  int err1 = load(&one, 1, PC__PREV_MIN_PART);
  unsigned t;
  size_t m, k;

  cur = name;
  EXPECT(err1 == want_err);
  for (t = 2; t <= 8; t++) {
    for (m = 0; m < sizeof(mins) / sizeof(mins[0]); m++) {
      pc__prev_t *many = NULL;
      int err = load(&many, t, mins[m]);
      EXPECT(err == err1);
      EXPECT((many == NULL) == (one == NULL));
      for (k = 0; k <= n && one != NULL && many != NULL; k++) {
        char key[32];
        const char *q = key;
        const pc__prev_rec_t *a, *b;
        if (k == n)
          q = extra;
        else
          snprintf(key, sizeof(key), "f%zu", k);
        if (q == NULL)
          continue;
        a = pc__prev_find(one, 0, q);
        b = pc__prev_find(many, 0, q);
        EXPECT((a == NULL) == (b == NULL));
        if (a != NULL && b != NULL)
          EXPECT(a->size == b->size && a->mtime_ns == b->mtime_ns &&
                 a->out[PC_GZ].state == b->out[PC_GZ].state &&
                 a->out[PC_GZ].size == b->out[PC_GZ].size);
      }
      pc__prev_free(many);
    }
  }
  pc__prev_free(one);
}

int main(void) {
  pc__prev_t *p = NULL;
  const pc__prev_rec_t *r;
  size_t k;
  int fd = mkstemp(path);

  if (fd < 0)
    return 1;
  close(fd);

  /* As the writer lays it out: one line per file. */
  head();
  for (k = 0; k < 3000; k++)
    put("    {\"path\": \"f%zu\", \"size\": %zu, \"mtime_ns\": %zu, "
        "\"gz\": {\"size\": %zu}}%s\n",
        k, 100 + k, 1700000000000000000u + k, 50 + k, k + 1 < 3000 ? "," : "");
  put("  ],\n  \"totals\": {\"files\": 3000}\n}\n");
  same("writer's layout", 3000, NULL, 0);
  EXPECT(load(&p, 4, 1) == 0 && p != NULL);
  r = p != NULL ? pc__prev_find(p, 0, "f2999") : NULL;
  EXPECT(r != NULL && r->size == 3099 && r->out[PC_GZ].size == 3049);
  pc__prev_free(p);

  /* A file given twice, far apart: the first line stands. */
  head();
  for (k = 0; k < 2000; k++)
    put("    {\"path\": \"%s\", \"size\": %zu, \"mtime_ns\": 1, "
        "\"gz\": {\"size\": 9}},\n",
        k == 10 || k == 1900 ? "dup" : "x", k + 1);
  put("    {\"path\": \"f0\", \"size\": 5, \"mtime_ns\": 1, "
      "\"gz\": {\"skipped\": \"ratio\"}}\n  ]\n}\n");
  same("duplicate", 1, "dup", 0);
  EXPECT(load(&p, 8, 1) == 0 && p != NULL);
  r = p != NULL ? pc__prev_find(p, 0, "dup") : NULL;
  EXPECT(r != NULL && r->size == 11);
  pc__prev_free(p);

  /* Lines spread over several lines, a nested object alone on one: a part
   * may start at a '{' that is no line of "files".
   */
  head();
  for (k = 0; k < 1500; k++)
    put("    {\n      \"path\": \"f%zu\",\n      \"size\": %zu,\n"
        "      \"mtime_ns\": 7,\n      \"gz\":\n      {\n        \"size\": "
        "%zu\n"
        "      }\n    }%s\n",
        k, 10 + k, 3 + k, k + 1 < 1500 ? "," : "");
  put("  ],\n  \"totals\":\n  {\n    \"files\": 1500\n  }\n}\n");
  same("pretty-printed", 1500, NULL, 0);

  /* Lines holding a list of objects, one per line, that look like lines
   * of "files" (f1000 and up): a part starting at one of them parses a
   * list to its ']' that is none of "files".
   */
  head();
  for (k = 0; k < 1000; k++)
    put("    {\"path\": \"f%zu\", \"size\": 2, \"mtime_ns\": 3, "
        "\"gz\": {\"size\": 1}, \"more\": [\n"
        "      {\"path\": \"f%zu\", \"size\": 2, \"mtime_ns\": 3, "
        "\"gz\": {\"size\": 1}},\n"
        "      {\"path\": \"f%zu\", \"size\": 2, \"mtime_ns\": 3, "
        "\"gz\": {\"size\": 1}}\n    ]}%s\n",
        k, 1000 + 2 * k, 1001 + 2 * k, k + 1 < 1000 ? "," : "");
  put("  ]\n}\n");
  same("nested lists", 3000, NULL, 0);

  /* Short "files", then a long member of lines like its own after it
   * (f5 and up): the parts' starts all lie past the array.
   */
  head();
  lines(0, 5, 0);
  put("  ],\n  \"extra\": [\n");
  lines(5, 2000, 0);
  put("  ]\n}\n");
  same("starts past the array", 2000, NULL, 0);
  EXPECT(load(&p, 4, 1) == 0 && p != NULL);
  EXPECT(p != NULL && pc__prev_find(p, 0, "f4") != NULL &&
         pc__prev_find(p, 0, "f5") == NULL);
  pc__prev_free(p);

  /* A bad line near the end, inside the last part: refused whole. */
  head();
  lines(0, 2000, 1);
  put("    {\"path\": \"bad\", \"size\": }\n  ]\n}\n");
  same("bad last line", 2000, NULL, PC_EBADMANIFEST);

  /* A trailing comma at the very end of the array. */
  head();
  lines(0, 2000, 1);
  put("  ]\n}\n");
  same("trailing comma", 2000, NULL, PC_EBADMANIFEST);

  unlink(path);
  free(doc);
  if (failures != 0) {
    fprintf(stderr, "prev_test: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  printf("prev_test: %d checks passed\n", checks);
  return 0;
}
