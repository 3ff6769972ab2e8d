/* libFuzzer target: the earlier-manifest reader (src/prev.c).
 *
 * The input is written to a memfd and read back through /proc/self/fd/N by
 * pc__prev_load(), with this run's settings as the program's defaults:
 * formats gz and br, levels 9/11/19, ratio 95/100, one root labelled
 * "site"; then once more with zst added and two roots. Each loaded table is
 * searched for a few fixed names and for every "path" (and decoded
 * "path_hex") the input holds, then freed. Besides "no crash, no UB, no
 * leak", it checks:
 *  - the status is 0, PC_EBADMANIFEST or -ENOMEM, and *out is NULL unless
 *    it is 0;
 *  - input that is not JSON at all is PC_EBADMANIFEST (never trusted in
 *    part);
 *  - a record found has, per enabled format, KEPT with a size above 0 or
 *    RATIO, and OFF for every other format.
 */
#include "prev.h"

#include <jansson.h>
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

static void check_rec(const pc__prev_rec_t *r, unsigned formats) {
  int f;
  if (r == NULL)
    return;
  for (f = 0; f < PC_NFORMATS; f++) {
    if (formats & PC_FMT_BIT(f))
      check((r->out[f].state == PC_OUT_KEPT && r->out[f].size > 0) ||
            r->out[f].state == PC_OUT_RATIO);
    else
      check(r->out[f].state == PC_OUT_OFF);
  }
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Looks up names the input itself mentions, so lookups also hit. */
static void find_listed(const pc__prev_t *p, json_t *doc, unsigned formats,
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
        check_rec(pc__prev_find(p, r, path), formats);
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
        check_rec(pc__prev_find(p, r, raw), formats);
        free(raw);
      }
    }
  }
}

static void load(json_t *doc, unsigned formats, char *const *labels,
                 uint32_t nlabels) {
  static const int level[PC_NFORMATS] = {9, 11, 19};
  static const char *const names[] = {"index.html", "css/site.css",
                                      "js/app.js", "", "robots.txt"};
  pc__prev_t *p = (pc__prev_t *)&p; /* must be overwritten */
  size_t i;
  uint32_t r;
  int err;

  err = pc__prev_load(&p, fd_path, formats, level, PC_GZIP_ZLIB, 95, 100, labels,
                      nlabels);
  check(err == 0 || err == PC_EBADMANIFEST || err == -ENOMEM);
  if (err != 0)
    check(p == NULL);
  if (doc == NULL)
    check(err == PC_EBADMANIFEST);
  for (r = 0; r < nlabels + 1; r++)
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
      check_rec(pc__prev_find(p, r, names[i]), formats);
  if (doc != NULL)
    find_listed(p, doc, formats, nlabels + 1);
  pc__prev_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char site[] = "site", other[] = "other";
  char *one[] = {site}, *two[] = {other, site};
  json_t *doc;
  json_error_t jerr;
  size_t done = 0;

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

  /* The same parse as pc__prev_load's json_load_file (flags 0). */
  doc = json_loadb((const char *)data, size, 0, &jerr);

  load(doc, PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR), one, 1);
  load(doc, PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR) | PC_FMT_BIT(PC_ZST), two,
       2);
  json_decref(doc);
  return 0;
}
