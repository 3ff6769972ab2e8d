/* libFuzzer target: the earlier-manifest reader (src/manifest/prev.c over the
 * one manifest reader, src/manifest/manifest_read.c: a framing layer over the
 * top-level object and the "files" array, each key, value and line of which
 * jansson parses on its own).
 *
 * The input is written to a memfd and read back through /proc/self/fd/N by
 * pc__prev_load(), with this run's settings as the program's defaults:
 * formats gz and br, levels 9/11/19, ratio 95/100, one root labelled
 * "site"; then once more with zst added and two roots; then as the first,
 * but with "files" split into parts parsed on up to 16 threads (any line
 * after a newline may start one). Each loaded table is
 * searched for a few fixed names and for every "path" (and decoded
 * "path_hex") the input holds, then freed. Besides "no crash, no UB, no
 * leak", it checks:
 *  - the status is 0, PC_EBADMANIFEST, PC_ENOTMANIFEST or -ENOMEM, and
 *    *out is NULL unless it is 0;
 *  - input that is not JSON at all is PC_EBADMANIFEST (never trusted in
 *    part), JSON that is not a manifest PC_ENOTMANIFEST;
 *  - pc__prev_parse() with no table (how a manifest name is judged before
 *    it is replaced) says "ours" exactly for JSON that is an object with a
 *    "precompress" member;
 *  - a record found has, per enabled format, KEPT with a size above 0 or
 *    RATIO, and OFF for every other format;
 *  - against a reference, the reader as it was before (a jansson document
 *    of the whole input, flags 0, read the same way): the same status, a
 *    table exactly when it has one, and for every name looked up under
 *    every root, the same record or none. So the framing layer accepts
 *    exactly what jansson does but for the two edges below, and each line
 *    is read as json_object_get() saw it (a key given twice counts by its
 *    last value), a top-level key given twice by its last value wherever
 *    it is.
 * The two edges, where the reference is adjusted to what is now true:
 *  - a NUL byte anywhere: refused (see LLVMFuzzerTestOneInput());
 *  - nesting: jansson's limit (2048 values deep) counts from each value it
 *    is given, so the reader takes a top-level value one level, and a line
 *    of "files" two levels, deeper than a whole-document parse does. Where
 *    the reference stopped at that limit (json_error_stack_overflow), only
 *    the checks that need no reference are made: the reader may take the
 *    input or refuse it.
 */
#include "manifest/prev.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LOOKUPS 256

static void check(int cond) {
  if (!cond)
    abort();
}

static int fd = -1;
static char fd_path[64];

static const int level[PC_NFORMATS] = {9, 11, 19};

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* pc__unhex() as it was: NULL for an odd length, a digit that is not hex
 * or a NUL byte.
 */
static char *ref_unhex(const char *h) {
  size_t n = strlen(h), i;
  char *s;

  if (n % 2 != 0 || (s = malloc(n / 2 + 1)) == NULL)
    return NULL;
  for (i = 0; i < n / 2; i++) {
    int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
    if (hi < 0 || lo < 0 || (hi | lo) == 0) {
      free(s);
      return NULL;
    }
    s[i] = (char)(hi << 4 | lo);
  }
  s[n / 2] = '\0';
  return s;
}

/* The reference: pc__prev_load() as it was, on a jansson document. */
typedef struct ref {
  int err;       /* what pc__prev_load() must return */
  int has_table; /* whether *out must be a table */
  json_t *files;
  uint32_t *map; /* manifest root index -> ours, or UINT32_MAX */
  size_t nmap;
  unsigned formats;
  int unknown; /* no reference: it stopped at its depth limit */
} ref_t;

static int ref_same_options(json_t *opt, unsigned formats) {
  static const char *const level_key[PC_NFORMATS] = {
      "gzip_level", "brotli_quality", "zstd_level"};
  json_t *fl = json_object_get(opt, "formats"), *v;
  unsigned seen = 0;
  size_t i;
  int f;

  if (!json_is_array(fl))
    return 0;
  json_array_foreach(fl, i, v) {
    const char *s = json_string_value(v);
    for (f = 0; s != NULL && f < PC_NFORMATS; f++)
      if (strcmp(s, pc_format_ext((pc_format_t)f)) == 0)
        seen |= PC_FMT_BIT(f);
  }
  if (seen != formats)
    return 0;
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(formats & PC_FMT_BIT(f)))
      continue;
    v = json_object_get(opt, level_key[f]);
    if (!json_is_integer(v) || json_integer_value(v) != level[f])
      return 0;
  }
  if (formats & PC_FMT_BIT(PC_GZ)) {
    const char *e = json_string_value(json_object_get(opt, "gzip_engine"));
    if (strcmp(e != NULL ? e : "zlib", "zlib") != 0)
      return 0;
  }
  /* Written in place (no --output-dir), as this run is. */
  if (json_object_get(opt, "output_dir") != NULL)
    return 0;
  v = json_object_get(opt, "max_ratio");
  return json_is_number(v) && fabs(json_number_value(v) - 0.95) < 1e-12;
}

static void ref_load(ref_t *ref, json_t *doc, int any, unsigned formats,
                     char *const *labels, uint32_t nlabels) {
  json_t *roots;
  size_t i, k;

  memset(ref, 0, sizeof(*ref));
  ref->formats = formats;
  ref->files = json_object_get(doc, "files");
  if (doc == NULL) {
    ref->err = any ? PC_ENOTMANIFEST : PC_EBADMANIFEST;
    return;
  }
  if (!json_is_object(doc) ||
      json_integer_value(json_object_get(doc, "precompress")) != 1 ||
      !json_is_array(ref->files)) {
    ref->err = PC_ENOTMANIFEST;
    return;
  }
  /* These loads make no deltas: a manifest that names "dictionaries"
   * (of any value) says nothing for them (pc__mhead_same_dicts()).
   */
  if (!ref_same_options(json_object_get(doc, "options"), formats) ||
      json_object_get(doc, "dictionaries") != NULL)
    return;
  ref->has_table = 1;
  roots = json_object_get(doc, "roots");
  ref->nmap = json_is_array(roots) ? json_array_size(roots) : 1;
  ref->map = malloc((ref->nmap ? ref->nmap : 1) * sizeof(*ref->map));
  if (ref->map == NULL)
    abort();
  for (i = 0; i < ref->nmap; i++) {
    const char *l = json_is_array(roots)
                        ? json_string_value(json_array_get(roots, i))
                        : NULL;
    ref->map[i] = UINT32_MAX;
    if (!json_is_array(roots)) {
      if (nlabels == 1)
        ref->map[i] = 0;
      continue;
    }
    for (k = 0; l != NULL && k < nlabels; k++)
      if (strcmp(l, labels[k]) == 0)
        ref->map[i] = (uint32_t)k;
  }
}

static int ref_line(json_t *fe, unsigned formats, pc__prev_rec_t *rec) {
  json_t *size = json_object_get(fe, "size");
  json_t *mtime = json_object_get(fe, "mtime_ns");
  int f;

  memset(rec, 0, sizeof(*rec));
  /* A line with deltas holds only for a run that makes them. */
  if (json_object_get(fe, "error") != NULL ||
      json_object_get(fe, "deltas") != NULL ||
      json_object_get(fe, "skipped") != NULL || !json_is_integer(size) ||
      !json_is_integer(mtime) || json_integer_value(size) < 0)
    return -1;
  rec->size = (uint64_t)json_integer_value(size);
  rec->mtime_ns = (int64_t)json_integer_value(mtime);
  for (f = 0; f < PC_NFORMATS; f++) {
    json_t *o, *osz;
    if (!(formats & PC_FMT_BIT(f)))
      continue;
    o = json_object_get(fe, pc_format_ext((pc_format_t)f));
    if (!json_is_object(o))
      return -1;
    osz = json_object_get(o, "size");
    if (json_is_integer(osz) && json_integer_value(osz) > 0) {
      rec->out[f].state = PC_OUT_KEPT;
      rec->out[f].size = (uint64_t)json_integer_value(osz);
    } else if (json_is_string(json_object_get(o, "skipped"))) {
      rec->out[f].state = PC_OUT_RATIO;
    } else {
      return -1;
    }
  }
  return 0;
}

/* The first usable line for (root, path), as the old table kept it. */
static int ref_find(const ref_t *ref, uint32_t root, const char *path,
                    pc__prev_rec_t *out) {
  json_t *fe;
  size_t i;

  json_array_foreach(ref->files, i, fe) {
    json_t *jr = json_object_get(fe, "root");
    json_int_t ri = json_is_integer(jr) ? json_integer_value(jr) : 0;
    const char *fp = json_string_value(json_object_get(fe, "path"));
    const char *hex = json_string_value(json_object_get(fe, "path_hex"));
    char *raw = NULL;
    int hit;
    if (fp == NULL || ri < 0 || (size_t)ri >= ref->nmap ||
        ref->map[ri] == UINT32_MAX || ref->map[ri] != root)
      continue;
    if (ref_line(fe, ref->formats, out) != 0)
      continue;
    if (hex != NULL && (raw = ref_unhex(hex)) == NULL)
      continue;
    hit = strcmp(raw != NULL ? raw : fp, path) == 0;
    free(raw);
    if (hit)
      return 1;
  }
  return 0;
}

static void check_rec(const pc__prev_t *p, const ref_t *ref, uint32_t root,
                      const char *path) {
  const pc__prev_rec_t *r = pc__prev_find(p, root, path);
  pc__prev_rec_t want;
  int f;

  if (r != NULL) {
    for (f = 0; f < PC_NFORMATS; f++) {
      if (ref->formats & PC_FMT_BIT(f))
        check((r->out[f].state == PC_OUT_KEPT && r->out[f].size > 0) ||
              r->out[f].state == PC_OUT_RATIO);
      else
        check(r->out[f].state == PC_OUT_OFF);
    }
  }
  if (p == NULL || ref->unknown)
    return; /* an error, or options not this run's: checked by the caller */
  if (!ref_find(ref, root, path, &want)) {
    check(r == NULL);
    return;
  }
  check(r != NULL);
  check(r->size == want.size && r->mtime_ns == want.mtime_ns);
  for (f = 0; f < PC_NFORMATS; f++)
    check(r->out[f].state == want.out[f].state &&
          r->out[f].action == want.out[f].action &&
          r->out[f].size == want.out[f].size);
}

/* Looks up names the input itself mentions, so lookups also hit. */
static void find_listed(const pc__prev_t *p, const ref_t *ref, json_t *doc,
                        uint32_t nroots) {
  json_t *files = json_object_get(doc, "files"), *fe;
  size_t i;
  uint32_t r;

  json_array_foreach(files, i, fe) {
    const char *path = json_string_value(json_object_get(fe, "path"));
    const char *hex = json_string_value(json_object_get(fe, "path_hex"));
    if (i >= MAX_LOOKUPS)
      break;
    for (r = 0; r < nroots; r++) {
      if (path != NULL)
        check_rec(p, ref, r, path);
      if (hex != NULL) {
        size_t n = strlen(hex) / 2, k;
        char *raw = malloc(n + 1);
        if (raw == NULL)
          abort();
        for (k = 0; k < n; k++) {
          int hi = hexval(hex[2 * k]), lo = hexval(hex[2 * k + 1]);
          if (hi < 0 || lo < 0)
            break;
          raw[k] = (char)(hi << 4 | lo);
        }
        raw[k] = '\0';
        check_rec(p, ref, r, raw);
        free(raw);
      }
    }
  }
}

/* doc: the reference's parse, NULL if it refused the input; deep: it
 * refused it only for jansson's depth limit (see the top).
 */
static void load(json_t *doc, int any, int deep, unsigned formats,
                 char *const *labels, uint32_t nlabels, unsigned threads,
                 size_t min_part) {
  static const char *const names[] = {"index.html", "css/site.css", "js/app.js",
                                      "", "robots.txt"};
  pc__prev_t *p = (pc__prev_t *)&p; /* must be overwritten */
  pc__spec_t spec;
  ref_t ref;
  size_t i;
  uint32_t r;
  int err;

  memset(&spec, 0, sizeof(spec));
  spec.formats = formats;
  memcpy(spec.level, level, sizeof(spec.level));
  spec.gzip_engine = PC_GZIP_ZLIB;
  spec.ratio_num = 95;
  spec.ratio_den = 100;
  err = pc__prev_load(&p, fd_path, &spec, labels, nlabels, threads, min_part);
  check(err == 0 || err == PC_EBADMANIFEST || err == PC_ENOTMANIFEST ||
        err == -ENOMEM);
  if (err != 0)
    check(p == NULL);
  if (doc == NULL && !any && !deep)
    check(err == PC_EBADMANIFEST);
  ref_load(&ref, doc, any, formats, labels, nlabels);
  ref.unknown = deep;
  if (err != -ENOMEM && !deep) {
    check(err == ref.err);
    check((p != NULL) == ref.has_table);
  }
  for (r = 0; r < nlabels + 1; r++)
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
      check_rec(p, &ref, r, names[i]);
  if (doc != NULL)
    find_listed(p, &ref, doc, nlabels + 1);
  pc__prev_free(p);
  free(ref.map);
}

/* Once more for a run with deltas (two --dictionary-from DIRs, both
 * formats): no reference, but the status, and every delta of every record
 * found within what such a run writes (docs/deltas.md).
 */
static void load_deltas(json_t *doc) {
  static const char *const dirs[] = {"r1", "r2"};
  static char site[] = "site";
  char *one[] = {site};
  pc__prev_t *p = NULL;
  pc__spec_t spec;
  json_t *fe;
  size_t i;
  int err;

  memset(&spec, 0, sizeof(spec));
  spec.formats = PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR);
  memcpy(spec.level, level, sizeof(spec.level));
  spec.ratio_num = 95;
  spec.ratio_den = 100;
  spec.dict_dirs = dirs;
  spec.n_dict_dirs = 2;
  spec.deltas = PC_DELTA_BIT(PC_DCB) | PC_DELTA_BIT(PC_DCZ);
  err = pc__prev_load(&p, fd_path, &spec, one, 1, 1, PC__PREV_MIN_PART);
  check(err == 0 || err == PC_EBADMANIFEST || err == PC_ENOTMANIFEST ||
        err == -ENOMEM);
  json_array_foreach(json_object_get(doc, "files"), i, fe) {
    const char *path = json_string_value(json_object_get(fe, "path"));
    const pc__prev_rec_t *r;
    const pc__prev_delta_t *d;
    uint32_t k;
    if (i >= MAX_LOOKUPS || path == NULL ||
        (r = pc__prev_find(p, 0, path)) == NULL)
      continue;
    check(r->ndeltas <= PC_NDELTAS * PC_DICT_DIRS_MAX);
    d = pc__prev_deltas(p, r);
    for (k = 0; k < r->ndeltas; k++) {
      check(d[k].format < PC_NDELTAS && d[k].from < 2 &&
            d[k].skip < PC_DSKIP_MAX_ && pc__prev_dict(p, &d[k]) != NULL);
      check((d[k].skip == PC_DSKIP_NONE) == (d[k].size > 0));
    }
  }
  pc__prev_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char site[] = "site", other[] = "other";
  char *one[] = {site}, *two[] = {other, site};
  json_t *doc = NULL;
  json_error_t jerr;
  size_t done = 0;
  int deep = 0, any = 0, ours = -1, err;

  if (fd < 0) {
    fd = memfd_create("fuzz_manifest", MFD_CLOEXEC);
    check(fd >= 0);
    snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
  }
  check(ftruncate(fd, 0) == 0);
  while (done < size) {
    ssize_t w = pwrite(fd, data + done, size - done, (off_t)done);
    check(w > 0);
    done += (size_t)w;
  }

  /* The reference's parse: what json_load_file(path, 0) gave, but for
   * one quirk. jansson drops a NUL byte that comes right after a number or
   * a word (its stream_unget() of a 0 reads as an empty buffer), so it
   * takes "5\0," for "5,", and the position it then reports for the
   * value leaves the NUL out. The reader finds where each value ends by
   * that position, so it refuses any NUL byte up front (RFC 8259 has none
   * anywhere): for the reference, such input is not JSON either.
   */
  if (memchr(data, 0, size) == NULL) {
    doc = json_loadb((const char *)data, size, 0, &jerr);
#if JANSSON_VERSION_HEX >= 0x020b00
    deep = doc == NULL && json_error_code(&jerr) == json_error_stack_overflow;
#else
    deep = doc == NULL && strstr(jerr.text, "maximum parsing depth") != NULL;
#endif
    /* JSON that is neither an object nor an array (flags 0 refuse it). */
    if (doc == NULL && !deep) {
      json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr);
      any = v != NULL;
      json_decref(v);
    }
  }

  load(doc, any, deep, PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR), one, 1, 1,
       PC__PREV_MIN_PART);
  load(doc, any, deep,
       PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR) | PC_FMT_BIT(PC_ZST), two, 2, 1,
       PC__PREV_MIN_PART);
  /* "files" in parts on threads, at every newline it may: the parts'
   * guesses, right or wrong, must change nothing.
   */
  load(doc, any, deep, PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR), one, 1, 16, 1);
  load_deltas(doc);
  /* Judged only, as a manifest name is before it is replaced. */
  err = pc__prev_parse(NULL, &ours, (const char *)data, size, NULL, NULL, 0, 1,
                       0);
  check(err == 0 || err == PC_EBADMANIFEST || err == PC_ENOTMANIFEST ||
        err == -ENOMEM);
  check(ours == 0 || ours == 1);
  if (!deep && err != -ENOMEM)
    check(ours ==
          (json_is_object(doc) && json_object_get(doc, "precompress") != NULL));
  json_decref(doc);
  return 0;
}
