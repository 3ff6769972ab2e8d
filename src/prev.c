/* Reading an earlier manifest with jansson. Only what the incremental skip
 * needs is kept: per file its size, mtime and, per format, the output size
 * or that it was not kept. Records with an error or a skip reason are not
 * kept: those files are looked at again.
 */
#include "prev.h"

#include "json.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  char *path; /* owned; NULL for an empty slot */
  uint32_t root;
  pc__prev_rec_t rec;
} entry_t;

struct pc__prev {
  entry_t *slots; /* open addressing, power-of-two size */
  size_t cap, n;
};

static uint64_t hash_key(uint32_t root, const char *s) {
  uint64_t h = 1469598103934665603u ^ root; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static entry_t *slot_for(const pc__prev_t *p, uint32_t root,
                         const char *path) {
  size_t i = (size_t)hash_key(root, path) & (p->cap - 1);
  for (; p->slots[i].path != NULL; i = (i + 1) & (p->cap - 1))
    if (p->slots[i].root == root && strcmp(p->slots[i].path, path) == 0)
      break;
  return &p->slots[i];
}

const pc__prev_rec_t *pc__prev_find(const pc__prev_t *p, uint32_t root,
                                    const char *path) {
  entry_t *e;
  if (p == NULL || p->n == 0)
    return NULL;
  e = slot_for(p, root, path);
  return e->path != NULL ? &e->rec : NULL;
}

void pc__prev_free(pc__prev_t *p) {
  size_t i;
  if (p == NULL)
    return;
  for (i = 0; i < p->cap; i++)
    free(p->slots[i].path);
  free(p->slots);
  free(p);
}

/* 1 if the manifest's options produce the bytes this run would. */
static int same_options(json_t *opt, unsigned formats, const int *level,
                        pc_gzip_engine_t engine, uint64_t num, uint64_t den) {
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
    if (strcmp(e != NULL ? e : "zlib", pc_gzip_engine_name(engine)) != 0)
      return 0;
  }
  v = json_object_get(opt, "max_ratio");
  return json_is_number(v) &&
         fabs(json_number_value(v) - (double)num / (double)den) < 1e-12;
}

static int add(pc__prev_t *p, uint32_t root, const char *path,
               const pc__prev_rec_t *rec) {
  entry_t *e;
  if ((p->n + 1) * 2 > p->cap) {
    pc__prev_t grown = {NULL, p->cap ? p->cap * 2 : 1024, 0};
    size_t i;
    grown.slots = calloc(grown.cap, sizeof(*grown.slots));
    if (grown.slots == NULL)
      return -ENOMEM;
    for (i = 0; i < p->cap; i++)
      if (p->slots[i].path != NULL)
        *slot_for(&grown, p->slots[i].root, p->slots[i].path) = p->slots[i];
    free(p->slots);
    p->slots = grown.slots;
    p->cap = grown.cap;
  }
  e = slot_for(p, root, path);
  if (e->path != NULL)
    return 0; /* a duplicate line: the first one stands */
  e->path = pc__strdup(path);
  if (e->path == NULL)
    return -ENOMEM;
  e->root = root;
  e->rec = *rec;
  p->n++;
  return 0;
}

/* Fills rec from one "files" entry. 0 if usable, -1 to ignore it. */
static int parse_file(json_t *fe, unsigned formats, pc__prev_rec_t *rec) {
  json_t *size = json_object_get(fe, "size");
  json_t *mtime = json_object_get(fe, "mtime_ns");
  int f;

  memset(rec, 0, sizeof(*rec));
  if (json_object_get(fe, "error") != NULL ||
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

int pc__prev_load(pc__prev_t **out, const char *path, unsigned formats,
                  const int *level, pc_gzip_engine_t engine,
                  uint64_t ratio_num, uint64_t ratio_den,
                  char *const *labels, uint32_t nlabels) {
  json_error_t jerr;
  json_t *doc, *files, *roots, *fe;
  uint32_t *map = NULL; /* manifest root index -> ours, or UINT32_MAX */
  size_t nmap = 1, i, k;
  pc__prev_t *p = NULL;
  int err = 0;

  *out = NULL;
  doc = json_load_file(path, 0, &jerr);
  if (doc == NULL) {
    FILE *f = fopen(path, "re");
    if (f == NULL)
      return errno == ENOENT ? 0 : PC__ERRNO();
    fclose(f);
    return PC_EBADMANIFEST;
  }
  files = json_object_get(doc, "files");
  if (!json_is_object(doc) ||
      json_integer_value(json_object_get(doc, "precompress")) != 1 ||
      !json_is_array(files)) {
    err = PC_EBADMANIFEST;
    goto done;
  }
  if (!same_options(json_object_get(doc, "options"), formats, level, engine,
                    ratio_num, ratio_den))
    goto done;

  /* Root labels: one root has no "roots" list. */
  roots = json_object_get(doc, "roots");
  if (json_is_array(roots))
    nmap = json_array_size(roots);
  map = malloc((nmap ? nmap : 1) * sizeof(*map));
  if (map == NULL) {
    err = -ENOMEM;
    goto done;
  }
  for (i = 0; i < nmap; i++) {
    const char *l = json_is_array(roots)
                        ? json_string_value(json_array_get(roots, i))
                        : NULL;
    map[i] = UINT32_MAX;
    if (!json_is_array(roots)) {
      if (nlabels == 1)
        map[i] = 0;
      continue;
    }
    for (k = 0; l != NULL && k < nlabels; k++)
      if (strcmp(l, labels[k]) == 0)
        map[i] = (uint32_t)k;
  }

  p = calloc(1, sizeof(*p));
  if (p == NULL) {
    err = -ENOMEM;
    goto done;
  }
  json_array_foreach(files, i, fe) {
    pc__prev_rec_t rec;
    json_t *jr = json_object_get(fe, "root");
    json_int_t ri = json_is_integer(jr) ? json_integer_value(jr) : 0;
    const char *fp = json_string_value(json_object_get(fe, "path"));
    const char *hex = json_string_value(json_object_get(fe, "path_hex"));
    char *raw = NULL;
    if (fp == NULL || ri < 0 || (size_t)ri >= nmap || map[ri] == UINT32_MAX)
      continue;
    if (parse_file(fe, formats, &rec) != 0)
      continue;
    /* A name that is not UTF-8 is exact only in path_hex. */
    if (hex != NULL && (raw = pc__unhex(hex)) == NULL)
      continue;
    err = add(p, map[ri], raw != NULL ? raw : fp, &rec);
    free(raw);
    if (err != 0)
      goto done;
  }
  *out = p;
  p = NULL;

done:
  pc__prev_free(p);
  free(map);
  json_decref(doc);
  return err;
}
