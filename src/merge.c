/* pc_merge_manifests(): the manifests of shards (--shard K/N) of one tree
 * put back together, byte for byte what one run over the whole tree would
 * have written. The lines are read back into records and written by the
 * same code a run uses; the totals are computed from the lines.
 */
#include "run.h"

#include "json.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The raw name: path_hex when present (a name that is not UTF-8). */
static char *raw_path(json_t *fe) {
  const char *hex = json_string_value(json_object_get(fe, "path_hex"));
  const char *p = json_string_value(json_object_get(fe, "path"));

  if (hex == NULL)
    return p != NULL ? pc__strdup(p) : NULL;
  return pc__unhex(hex);
}

static int parse_skip(const char *name, pc_skip_t *out) {
  int k;
  for (k = PC_SKIP_NONE + 1; k < PC_SKIP_MAX_; k++) {
    if (strcmp(name, pc_skip_name((pc_skip_t)k)) == 0) {
      *out = (pc_skip_t)k;
      return 0;
    }
  }
  return -1;
}

/* One "files" line back into a record. 0 or PC_ENOTMANIFEST (JSON, but
 * not a manifest's line).
 */
static int parse_line(json_t *fe, unsigned formats, uint32_t nroots,
                      pc__rec_t *rec) {
  json_t *size = json_object_get(fe, "size");
  json_t *mtime = json_object_get(fe, "mtime_ns");
  json_t *root = json_object_get(fe, "root");
  const char *skip = json_string_value(json_object_get(fe, "skipped"));
  const char *err = json_string_value(json_object_get(fe, "error"));
  int f;

  memset(rec, 0, sizeof(*rec));
  if (!json_is_object(fe) || !json_is_integer(size) ||
      json_integer_value(size) < 0 || (mtime != NULL && !json_is_integer(mtime)))
    return PC_ENOTMANIFEST;
  if (root != NULL) {
    if (!json_is_integer(root) || json_integer_value(root) < 0 ||
        json_integer_value(root) >= nroots || nroots < 2)
      return PC_ENOTMANIFEST;
    rec->root = (uint32_t)json_integer_value(root);
  } else if (nroots > 1) {
    return PC_ENOTMANIFEST;
  }
  rec->size = (uint64_t)json_integer_value(size);
  rec->mtime_ns = mtime != NULL ? (int64_t)json_integer_value(mtime) : 0;
  if (skip != NULL && parse_skip(skip, &rec->skip) != 0)
    return PC_ENOTMANIFEST;
  for (f = 0; f < PC_NFORMATS; f++) {
    json_t *o = json_object_get(fe, pc_format_ext((pc_format_t)f)), *osz;
    if (o == NULL)
      continue;
    if (!(formats & PC_FMT_BIT(f)) || !json_is_object(o))
      return PC_ENOTMANIFEST;
    osz = json_object_get(o, "size");
    if (json_is_integer(osz) && json_integer_value(osz) > 0) {
      rec->out[f].state = PC_OUT_KEPT;
      rec->out[f].size = (uint64_t)json_integer_value(osz);
    } else if (json_is_string(json_object_get(o, "skipped"))) {
      rec->out[f].state = PC_OUT_RATIO;
    } else {
      return PC_ENOTMANIFEST;
    }
  }
  if (err != NULL) {
    rec->err = PC_ECODEC; /* any nonzero: the message is what is kept */
    if ((rec->err_msg = pc__strdup(err)) == NULL)
      return -ENOMEM;
  }
  if ((rec->path = raw_path(fe)) == NULL)
    return PC_ENOTMANIFEST;
  return 0;
}

/* The options block into d. max_ratio comes back as a double: the
 * shortest decimal that gives the same double is what the CLI parsed.
 */
static int parse_options(json_t *opt, pc__mdoc_t *d) {
  static const char *const level_key[PC_NFORMATS] = {
      "gzip_level", "brotli_quality", "zstd_level"};
  json_t *fl = json_object_get(opt, "formats"), *v;
  double ratio;
  uint64_t den;
  size_t i;
  int f;

  if (!json_is_array(fl))
    return PC_ENOTMANIFEST;
  d->formats = 0;
  json_array_foreach(fl, i, v) {
    const char *s = json_string_value(v);
    for (f = 0; s != NULL && f < PC_NFORMATS; f++)
      if (strcmp(s, pc_format_ext((pc_format_t)f)) == 0)
        d->formats |= PC_FMT_BIT(f);
  }
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!(d->formats & PC_FMT_BIT(f)))
      continue;
    v = json_object_get(opt, level_key[f]);
    if (!json_is_integer(v))
      return PC_ENOTMANIFEST;
    d->level[f] = (int)json_integer_value(v);
  }
  d->gzip_engine = PC_GZIP_ZLIB;
  if ((v = json_object_get(opt, "gzip_engine")) != NULL) {
    const char *e = json_string_value(v);
    int k;
    for (k = PC_GZIP_LIBDEFLATE; e != NULL && k <= PC_GZIP_ZOPFLI; k++)
      if (strcmp(e, pc_gzip_engine_name((pc_gzip_engine_t)k)) == 0)
        d->gzip_engine = (pc_gzip_engine_t)k;
    if (d->gzip_engine == PC_GZIP_ZLIB)
      return PC_ENOTMANIFEST;
  }
  v = json_object_get(opt, "max_ratio");
  if (!json_is_number(v) || !json_is_integer(json_object_get(opt, "min_size")))
    return PC_ENOTMANIFEST;
  d->min_size = (uint64_t)json_integer_value(json_object_get(opt, "min_size"));
  ratio = json_number_value(v);
  if (!(ratio > 0 && ratio <= 1))
    return PC_ENOTMANIFEST;
  for (den = 1; den <= 1000000000u; den *= 10) {
    double num = floor(ratio * (double)den + 0.5);
    if (num / (double)den == ratio) {
      d->ratio_num = (uint64_t)num;
      d->ratio_den = den;
      return 0;
    }
  }
  return PC_ENOTMANIFEST;
}

static int cmp_rec(const void *a, const void *b) {
  const pc__rec_t *x = a, *y = b;
  if (x->root != y->root)
    return x->root < y->root ? -1 : 1;
  return strcmp(x->path, y->path);
}

/* Both entry points: into the file `out`, or with out NULL, through
 * `put` (nothing at any name is checked or replaced then).
 */
static int merge(const char *out,
                 int (*put)(void *data, const void *buf, size_t len),
                 void *data, const char *const *in, size_t nin,
                 size_t *bad) {
  json_t **docs = calloc(nin ? nin : 1, sizeof(*docs));
  pc__buf_t text = {0};
  char **labels = NULL;
  pc__mold_t old;
  pc__mdest_t to;
  pc__mdoc_t d;
  size_t i, k, total = 0, at = 0;
  int err = 0;

  memset(&d, 0, sizeof(d));
  if (bad != NULL)
    *bad = 0;
  if (docs == NULL)
    return -ENOMEM;
  if (nin == 0) {
    err = -EINVAL;
    goto out;
  }
  /* What OUT may replace, before anything is read (precompress.h). */
  if (out != NULL && (err = pc__manifest_check(out, 1, &old, NULL)) != 0) {
    if (bad != NULL)
      *bad = SIZE_MAX;
    goto out;
  }
  for (i = 0; i < nin; i++) {
    json_error_t jerr;
    json_t *files, *roots;
    if (bad != NULL)
      *bad = i;
    /* Read in one go: jansson reading a file itself takes a getc() a byte. */
    text.len = 0;
    if ((err = pc__json_read_file(in[i], &text)) != 0)
      goto out;
    if ((docs[i] = json_loadb((const char *)text.data, text.len,
                              JSON_DECODE_ANY, &jerr)) == NULL) {
      err = pc__json_load_failed(&jerr);
      goto out;
    }
    files = json_object_get(docs[i], "files");
    roots = json_object_get(docs[i], "roots");
    if (json_integer_value(json_object_get(docs[i], "precompress")) != 1 ||
        !json_is_array(files) || (roots != NULL && !json_is_array(roots)) ||
        !json_is_object(json_object_get(docs[i], "options"))) {
      err = PC_ENOTMANIFEST;
      goto out;
    }
    /* Shards of one job: the same options and roots, to the byte. */
    if (i > 0 &&
        (!json_equal(json_object_get(docs[i], "options"),
                     json_object_get(docs[0], "options")) ||
         !((roots == NULL && json_object_get(docs[0], "roots") == NULL) ||
           json_equal(roots, json_object_get(docs[0], "roots"))))) {
      err = -EINVAL;
      goto out;
    }
    total += json_array_size(files);
  }

  if (bad != NULL)
    *bad = 0;
  if ((err = parse_options(json_object_get(docs[0], "options"), &d)) != 0)
    goto out;
  {
    json_t *roots = json_object_get(docs[0], "roots");
    d.nroots = roots != NULL ? (uint32_t)json_array_size(roots) : 1;
    if (roots != NULL) {
      if ((labels = calloc(d.nroots, sizeof(*labels))) == NULL) {
        err = -ENOMEM;
        goto out;
      }
      for (k = 0; k < d.nroots; k++) {
        const char *l = json_string_value(json_array_get(roots, k));
        if (l == NULL || (labels[k] = pc__strdup(l)) == NULL) {
          err = l == NULL ? PC_ENOTMANIFEST : -ENOMEM;
          goto out;
        }
      }
      d.labels = labels;
    }
  }
  if ((d.recs = calloc(total ? total : 1, sizeof(*d.recs))) == NULL) {
    err = -ENOMEM;
    goto out;
  }
  for (i = 0; i < nin; i++) {
    json_t *fe;
    size_t j;
    if (bad != NULL)
      *bad = i;
    if (json_is_true(json_object_get(docs[i], "incomplete")))
      d.incomplete = 1;
    json_array_foreach(json_object_get(docs[i], "files"), j, fe) {
      if ((err = parse_line(fe, d.formats, d.nroots, &d.recs[at])) != 0) {
        free(d.recs[at].path);
        free(d.recs[at].err_msg);
        goto out;
      }
      at++;
    }
  }
  d.nrecs = at;
  /* A file in two shards means they overlap: not shards of one run. */
  qsort(d.recs, d.nrecs, sizeof(*d.recs), cmp_rec);
  for (k = 1; k < d.nrecs; k++) {
    if (cmp_rec(&d.recs[k - 1], &d.recs[k]) == 0) {
      err = -EEXIST;
      goto out;
    }
  }
  if (bad != NULL)
    *bad = SIZE_MAX;
  memset(&to, 0, sizeof(to));
  to.path = out;
  to.checked = out != NULL ? &old : NULL;
  to.write = put;
  to.data = data;
  err = pc__manifest_write_doc(&d, &to);

out:
  for (k = 0; k < at; k++) {
    free(d.recs[k].path);
    free(d.recs[k].err_msg);
  }
  free(d.recs);
  for (k = 0; labels != NULL && k < d.nroots; k++)
    free(labels[k]);
  free(labels);
  for (i = 0; i < nin; i++)
    json_decref(docs[i]);
  free(docs);
  pc__buf_free(&text);
  return err;
}

int pc_merge_manifests(const char *out, const char *const *in, size_t nin,
                       size_t *bad) {
  return merge(out, NULL, NULL, in, nin, bad);
}

int pc_merge_manifests_write(int (*put)(void *data, const void *buf,
                                        size_t len),
                             void *data, const char *const *in, size_t nin,
                             size_t *bad) {
  return merge(NULL, put, data, in, nin, bad);
}
