/* The manifest's one reader (src/manifest/manifest_read.c): what a line
 * and the header decode to, kinds told apart and nothing judged; a key
 * given twice counts by its last value; the refusals (not JSON, a NUL
 * byte, not a manifest); and a "files" list read in parts on several
 * threads hands on the same lines, in order, as one thread does.
 */
#include "manifest/manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"

/* What the callbacks saw: each line's path and size, in order. */
typedef struct seen {
  char text[8192];
  unsigned lines;
  int files_calls;
} seen_t;

static int on_files(void *data, const pc__mhead_t *h, int *want) {
  (void)h;
  ((seen_t *)data)->files_calls++;
  *want = 1;
  return 0;
}

static int on_line(void *sink, const pc__mline_t *l) {
  seen_t *s = sink;
  size_t n = strlen(s->text);
  snprintf(s->text + n, sizeof(s->text) - n, "%s=%lld;",
           l->path != NULL ? l->path : "?", (long long)l->size);
  s->lines++;
  return 0;
}

static void *part_new(void *data) {
  (void)data;
  return calloc(1, sizeof(seen_t));
}

static int part_join(void *data, void *part) {
  seen_t *s = data, *p = part;
  size_t n = strlen(s->text);
  snprintf(s->text + n, sizeof(s->text) - n, "%s", p->text);
  s->lines += p->lines;
  return 0;
}

static void part_free(void *part) { free(part); }

/* The last line read, decoded, its strings copied out. */
static pc__mline_t got;
static char got_path[256], got_skipped[64], got_error[64];
static pc__mdelta_t got_delta;
static char got_delta_format[8];
static size_t got_ndeltas;

static int keep_line(void *sink, const pc__mline_t *l) {
  (void)sink;
  got = *l;
  got_path[0] = got_skipped[0] = got_error[0] = '\0';
  if (l->path)
    snprintf(got_path, sizeof(got_path), "%s", l->path);
  if (l->skipped)
    snprintf(got_skipped, sizeof(got_skipped), "%s", l->skipped);
  if (l->error)
    snprintf(got_error, sizeof(got_error), "%s", l->error);
  got_ndeltas = pc__mline_ndeltas(l);
  if (got_ndeltas > 0) {
    pc__mline_delta(l, 0, &got_delta);
    snprintf(got_delta_format, sizeof(got_delta_format), "%s",
             got_delta.format ? got_delta.format : "");
  }
  return 0;
}

static int read_one(const char *text, pc__mhead_t *h) {
  seen_t s;
  pc__mread_t rd;
  memset(&s, 0, sizeof(s));
  memset(&rd, 0, sizeof(rd));
  rd.files = on_files;
  rd.line = keep_line;
  rd.data = &s;
  return pc__manifest_read(text, strlen(text), &rd, h);
}

static void one_line(void) {
  pc__mhead_t h;
  const char *t =
      "{\"precompress\": 1, \"incomplete\": true,"
      " \"options\": {\"formats\": [\"gz\", \"br\"], \"gzip_level\": 9,"
      " \"brotli_quality\": 11, \"max_ratio\": 0.95, \"min_size\": 1},"
      " \"roots\": [\"a\", \"b\"], \"dictionaries\": [\"prev\"],"
      " \"files\": [{\"root\": 1, \"path\": \"js/app.js\", \"size\": 100,"
      " \"size\": 12000, \"mtime_ns\": 1700000000123456789,"
      " \"gz\": {\"size\": 3100}, \"br\": {\"skipped\": \"ratio\"},"
      " \"deltas\": [{\"format\": \"dcz\", \"from\": 0, \"dictionary\":"
      " \"js/app.1.js\", \"sha256\": \"ab\", \"size\": 207}],"
      " \"error\": \"Permission denied\"}],"
      " \"totals\": {}}";

  cur = "one line";
  memset(&h, 0, sizeof(h));
  EXPECT(read_one(t, &h) == 0);
  EXPECT(h.json && h.has_version && h.incomplete && h.options && h.has_roots &&
         h.roots_list && h.nroots == 2);
  EXPECT(strcmp(pc__mhead_label(&h, 1), "b") == 0);
  EXPECT(strcmp(pc__mhead_dict(&h, 0), "prev") == 0);
  EXPECT(pc__mhead_same_dicts(&h, (const char *const[]){"prev"}, 1));
  EXPECT(!pc__mhead_same_dicts(&h, NULL, 0));
  EXPECT(got.object && got.has_root && got.root_int && got.root == 1);
  EXPECT(strcmp(got_path, "js/app.js") == 0);
  EXPECT(got.size_int && got.size == 12000); /* the last of two */
  EXPECT(got.has_mtime && got.mtime_int && got.mtime_ns == 1700000000123456789);
  EXPECT(got.out[PC_GZ].has && got.out[PC_GZ].sized &&
         got.out[PC_GZ].size == 3100);
  EXPECT(got.out[PC_BR].has && got.out[PC_BR].ratio && !got.out[PC_BR].sized);
  EXPECT(!got.out[PC_ZST].has);
  EXPECT(strcmp(got_error, "Permission denied") == 0 && !got.has_skipped);
  EXPECT(got_ndeltas == 1 && strcmp(got_delta_format, "dcz") == 0 &&
         got_delta.size_int && got_delta.size == 207 && got_delta.from_int &&
         got_delta.from == 0);
  pc__mhead_free(&h);

  cur = "wrong kinds told apart";
  memset(&h, 0, sizeof(h));
  EXPECT(
      read_one("{\"precompress\": 1, \"files\": [{\"path\": 7, \"size\": \"9\","
               " \"gz\": 3, \"skipped\": 1}]}",
               &h) == 0);
  EXPECT(got.object && got.path == NULL && !got.size_int);
  EXPECT(got.out[PC_GZ].has && !got.out[PC_GZ].object);
  EXPECT(got.has_skipped && got_skipped[0] == '\0');
  EXPECT(!h.options && !h.has_roots);
  pc__mhead_free(&h);
}

static void refusals(void) {
  static const struct {
    const char *text;
    size_t len; /* 0: strlen */
    int want;
  } cases[] = {
      {"{not json", 0, PC_EBADMANIFEST},
      {"", 0, PC_EBADMANIFEST},
      {"{\"precompress\": 1, \"files\": []} trailing", 0, PC_EBADMANIFEST},
      {"{\"precompress\": 1, \"files\": [\"a\0b\"]}", 33, PC_EBADMANIFEST},
      {"[]", 0, PC_ENOTMANIFEST},
      {"{\"precompress\": 2, \"files\": []}", 0, PC_ENOTMANIFEST},
      {"{\"precompress\": 1}", 0, PC_ENOTMANIFEST},
      {"{\"precompress\": 1, \"files\": {}}", 0, PC_ENOTMANIFEST},
      {"{\"precompress\": 1, \"files\": []}", 0, 0},
  };
  size_t k;

  for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    pc__mhead_t h;
    size_t len = cases[k].len ? cases[k].len : strlen(cases[k].text);
    memset(&h, 0, sizeof(h));
    cur = cases[k].text;
    EXPECT(pc__manifest_read(cases[k].text, len, NULL, &h) == cases[k].want);
    pc__mhead_free(&h);
  }
}

/* 3000 lines, one thread against parts of 4 KiB on 4 threads. */
static void parts(void) {
  size_t cap = 3000 * 64 + 64, n = 0, k;
  char *t = malloc(cap);
  seen_t one, many;
  pc__mread_t rd;

  n += (size_t)snprintf(t + n, cap - n, "{\"precompress\": 1, \"files\": [\n");
  for (k = 0; k < 3000; k++)
    n += (size_t)snprintf(t + n, cap - n,
                          "%s{\"path\": \"f%zu\", \"size\": %zu}\n",
                          k ? "," : "", k, k * 7);
  n += (size_t)snprintf(t + n, cap - n, "]}");
  memset(&one, 0, sizeof(one));
  memset(&many, 0, sizeof(many));
  memset(&rd, 0, sizeof(rd));
  rd.files = on_files;
  rd.line = on_line;
  rd.data = &one;
  cur = "one thread";
  EXPECT(pc__manifest_read(t, n, &rd, NULL) == 0 && one.lines == 3000);
  rd.data = &many;
  rd.part_new = part_new;
  rd.part_join = part_join;
  rd.part_free = part_free;
  rd.threads = 4;
  rd.min_part = 4096;
  cur = "parts on four threads";
  EXPECT(pc__manifest_read(t, n, &rd, NULL) == 0 && many.lines == 3000);
  /* The text of both: the first 8 KiB of lines, in order, the same. */
  EXPECT(strcmp(one.text, many.text) == 0);
  free(t);
}

int main(void) {
  one_line();
  refusals();
  parts();
  printf("%d checks, %d failures\n", checks, failures);
  return failures != 0;
}
