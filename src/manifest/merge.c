/* pc_merge_manifests(): the manifests of shards (--shard K/N) of one tree
 * put back together, byte for byte what one run over the whole tree would
 * have written. Each is read by the one reader (manifest_read.c), its
 * lines turned back into records (manifest_line.c, as prev.c's are), and
 * written by the same code a run uses; the totals are computed from the
 * lines.
 *
 * Which error is reported, and for which input, is as when every input
 * was read whole first: an input that cannot be read, is not JSON or is
 * not a manifest, or is not a shard of the first one's job, comes before
 * the first one's options being unusable, which comes before a line that
 * is not a manifest's. So a bad line is noted, not reported, until every
 * input has been read to its end.
 */
#include "manifest/manifest.h"

#include "common/json.h"
#include "manifest/manifest_line.h"

#include <stdlib.h>
#include <string.h>

/* A skip reason by its name into *out. 0 or PC_ENOTMANIFEST. */
static int parse_skip(const char *name, pc_skip_t *out) {
  int k;
  for (k = PC_SKIP_NONE + 1; k < PC_SKIP_MAX_; k++) {
    if (strcmp(name, pc_skip_name((pc_skip_t)k)) == 0) {
      *out = (pc_skip_t)k;
      return 0;
    }
  }
  return PC_ENOTMANIFEST;
}

/* A line's root into rec. 0 or PC_ENOTMANIFEST. */
static int line_root(const pc__mline_t *l, uint32_t nroots, pc__rec_t *rec) {
  if (l->has_root) {
    if (!l->root_int || l->root < 0 || l->root >= nroots || nroots < 2)
      return PC_ENOTMANIFEST;
    rec->root = (uint32_t)l->root;
  } else if (nroots > 1) {
    return PC_ENOTMANIFEST;
  }
  return 0;
}

/* Entry md of a line's "deltas" into x (its dictionary's name copied). 0,
 * PC_ENOTMANIFEST or -ENOMEM.
 */
static int parse_delta(const pc__mdelta_t *md, pc_delta_t *x, pc__dstat_t *ds) {
  int err = pc__mline_delta_rec(md, PC_DICT_DIRS_MAX,
                                PC_DELTA_BIT(PC_NDELTAS) - 1, x, ds);

  if (err != 0)
    return err;
  x->dictionary = pc__strdup(x->dictionary);
  return x->dictionary != NULL ? 0 : -ENOMEM;
}

/* A line's "deltas" into rec (owned: free_deltas()). */
static int parse_deltas(const pc__mline_t *l, pc__rec_t *rec) {
  size_t n = pc__mline_ndeltas(l), k;
  int err;

  if (!l->has_deltas)
    return 0;
  if (l->deltas == NULL || n == 0 || n > PC__MLINE_DELTAS_MAX)
    return PC_ENOTMANIFEST;
  if ((rec->deltas = calloc(n, sizeof(*rec->deltas))) == NULL ||
      (rec->dstats = calloc(n, sizeof(*rec->dstats))) == NULL)
    return -ENOMEM;
  for (k = 0; k < n; k++) {
    pc__mdelta_t md;
    pc__mline_delta(l, k, &md);
    if ((err = parse_delta(&md, &rec->deltas[k], &rec->dstats[k])) != 0)
      return err;
    rec->ndeltas++;
  }
  return 0;
}

static void free_deltas(pc__rec_t *rec) {
  unsigned k;

  for (k = 0; k < rec->ndeltas; k++)
    free((char *)rec->deltas[k].dictionary);
  free(rec->deltas);
  free(rec->dstats);
  rec->deltas = NULL;
  rec->dstats = NULL;
  rec->ndeltas = 0;
}

/* One "files" line back into a record. 0 or PC_ENOTMANIFEST (JSON, but
 * not a manifest's line).
 */
static int parse_line(const pc__mline_t *l, unsigned formats, uint32_t nroots,
                      pc__rec_t *rec) {
  int f, err;

  memset(rec, 0, sizeof(*rec));
  if (pc__mline_stat(l, &rec->size, &rec->mtime_ns) != 0 ||
      line_root(l, nroots, rec) != 0)
    return PC_ENOTMANIFEST;
  if (l->skipped != NULL && parse_skip(l->skipped, &rec->skip) != 0)
    return PC_ENOTMANIFEST;
  for (f = 0; f < PC_NFORMATS; f++) {
    if (!l->out[f].has)
      continue;
    if (!(formats & PC_FMT_BIT(f)) || pc__mline_output(l, f, &rec->out[f]) != 0)
      return PC_ENOTMANIFEST;
  }
  if (l->error != NULL) {
    rec->err = PC_ECODEC; /* any nonzero: the message is what is kept */
    if ((rec->err_msg = pc__strdup(l->error)) == NULL)
      return -ENOMEM;
  }
  if ((err = parse_deltas(l, rec)) != 0)
    return err;
  /* The raw name: path_hex when present (a name that is not UTF-8). */
  rec->path = l->hex != NULL    ? pc__unhex(l->hex)
              : l->path != NULL ? pc__strdup(l->path)
                                : NULL;
  return rec->path != NULL ? 0 : PC_ENOTMANIFEST;
}

/* 1 when field k of the options block (o) is one a merge can write back:
 * each enabled format's level, a named engine of ours other than zlib
 * (which the writer never names), a ratio the CLI could have parsed, an
 * output directory given as a string; formats and min_size always there.
 */
static int mergeable(size_t k, const pc__mopt_t *o) {
  const pc__spec_field_t *fd = &pc__spec_fields[k];
  int given = (o->given & PC__SPEC_BIT(k)) != 0;
  int valid = (o->valid & PC__SPEC_BIT(k)) != 0;

  switch (fd->kind) {
  case PC__SPEC_LEVEL:
    return !(o->spec.formats & PC_FMT_BIT(fd->format)) || valid;
  case PC__SPEC_ENGINE:
    return !given || (valid && o->spec.gzip_engine != PC_GZIP_ZLIB);
  case PC__SPEC_RATIO:
    /* Back from a double: the shortest decimal that gives the same
     * double is what the CLI parsed.
     */
    return valid && o->ratio_exact;
  case PC__SPEC_OUTPUT_DIR: /* shards of one job have the same one
                               (pc__mhead_same_job()) */
    return !given || valid;
  default: /* PC__SPEC_FORMATS, PC__SPEC_MIN_SIZE */
    return valid;
  }
}

/* The options block into d: the spec as decoded, when a merge can write
 * every field back. 0 or PC_ENOTMANIFEST.
 */
static int parse_options(const pc__mopt_t *o, pc__mdoc_t *d) {
  size_t k;

  for (k = 0; k < PC__SPEC_NFIELDS; k++)
    if (!mergeable(k, o))
      return PC_ENOTMANIFEST;
  d->spec = o->spec;
  return 0;
}

/* The records of all inputs so far, and what the one being read needs. */
typedef struct merge {
  pc__rec_t *recs;
  size_t nrecs, cap;
  size_t first;     /* the input being read: its first record */
  unsigned formats; /* its options' formats, */
  uint32_t nroots;  /* and its number of roots */
  int line_err;     /* its first bad line's error, or 0 */
} merge_t;

static void drop_recs(merge_t *m, size_t from) {
  while (m->nrecs > from) {
    m->nrecs--;
    free(m->recs[m->nrecs].path);
    free(m->recs[m->nrecs].err_msg);
    free_deltas(&m->recs[m->nrecs]);
  }
}

/* A "files" list of the input (manifest.h): its lines replace any read
 * before. With options a merge cannot use, the merge fails before any
 * line counts: they are only checked.
 */
static int on_files(void *data, const pc__mhead_t *h, int *want) {
  merge_t *m = data;
  pc__mdoc_t d;

  *want = 0;
  drop_recs(m, m->first);
  m->line_err = 0;
  memset(&d, 0, sizeof(d));
  if (!h->options || parse_options(&h->opt, &d) != 0 ||
      (h->has_roots && !h->roots_list))
    return 0;
  m->formats = d.spec.formats;
  m->nroots = h->has_roots ? (uint32_t)h->nroots : 1;
  *want = 1;
  return 0;
}

static int on_line(void *data, const pc__mline_t *l) {
  merge_t *m = data;
  int err;

  if (m->line_err != 0)
    return 0; /* the input is only read to its end now */
  if ((err = PC__GROW(m->recs, m->nrecs, m->cap, 1024)) != 0)
    return err;
  err = parse_line(l, m->formats, m->nroots, &m->recs[m->nrecs]);
  if (err == 0) {
    m->nrecs++;
    return 0;
  }
  free(m->recs[m->nrecs].path);
  free(m->recs[m->nrecs].err_msg);
  free_deltas(&m->recs[m->nrecs]);
  if (err != PC_ENOTMANIFEST)
    return err;
  m->line_err = err;
  return 0;
}

/* Reads input `path` into m and *h (freed by the caller). Its errors but
 * a bad line's, which goes to m->line_err.
 */
static int read_input(const char *path, merge_t *m, pc__buf_t *text,
                      pc__mhead_t *h) {
  pc__mread_t rd;
  int err;

  memset(h, 0, sizeof(*h));
  m->first = m->nrecs;
  m->line_err = 0;
  /* Read in one go: jansson reading a file itself takes a getc() a byte. */
  text->len = 0;
  if ((err = pc__json_read_file(path, text)) != 0)
    return err;
  memset(&rd, 0, sizeof(rd));
  rd.files = on_files;
  rd.line = on_line;
  rd.data = m;
  if ((err = pc__manifest_read((const char *)text->data, text->len, &rd, h)) !=
      0)
    return err;
  if (!h->options || (h->has_roots && !h->roots_list))
    return PC_ENOTMANIFEST;
  return 0;
}

/* The first input's "dictionaries" into d (the shards', the same in each:
 * pc__mhead_same_job()), as strings owned by the caller.
 */
static int take_dicts(const pc__mhead_t *h, pc__mdoc_t *d, char ***dicts) {
  unsigned k;

  *dicts = NULL;
  for (d->ndicts = 0;
       d->ndicts < PC_DICT_DIRS_MAX && pc__mhead_dict(h, d->ndicts) != NULL;
       d->ndicts++)
    ;
  if (d->ndicts == 0)
    return 0;
  if ((*dicts = calloc(d->ndicts, sizeof(**dicts))) == NULL)
    return -ENOMEM;
  for (k = 0; k < d->ndicts; k++)
    if (((*dicts)[k] = pc__strdup(pc__mhead_dict(h, k))) == NULL)
      return -ENOMEM;
  d->dicts = (const char *const *)*dicts;
  return 0;
}

/* The first input's roots into d (labels owned by the caller). */
static int take_roots(const pc__mhead_t *h, pc__mdoc_t *d, char ***labels) {
  uint32_t k;

  d->nroots = h->has_roots ? (uint32_t)h->nroots : 1;
  if (!h->has_roots)
    return 0;
  if ((*labels = calloc(d->nroots, sizeof(**labels))) == NULL)
    return -ENOMEM;
  for (k = 0; k < d->nroots; k++) {
    const char *l = pc__mhead_label(h, k);
    if (l == NULL || ((*labels)[k] = pc__strdup(l)) == NULL)
      return l == NULL ? PC_ENOTMANIFEST : -ENOMEM;
  }
  d->labels = *labels;
  return 0;
}

/* Every input into m; the first one's header stays in *first. The input
 * an error is about goes to *at.
 */
static int read_inputs(const char *const *in, size_t nin, merge_t *m,
                       pc__mhead_t *first, size_t *at, size_t *bad_line,
                       int *line_err, int *incomplete) {
  pc__buf_t text = {0};
  pc__mhead_t h;
  size_t i;
  int err = 0;

  for (i = 0; i < nin; i++) {
    *at = i;
    err = read_input(in[i], m, &text, i == 0 ? first : &h);
    /* Shards of one job: the same options and roots, to the byte. */
    if (err == 0 && i > 0 && !pc__mhead_same_job(&h, first))
      err = -EINVAL;
    if (err == 0 && *line_err == 0 && m->line_err != 0) {
      *line_err = m->line_err;
      *bad_line = i;
    }
    *incomplete |= i == 0 ? first->incomplete : h.incomplete;
    if (i > 0)
      pc__mhead_free(&h);
    if (err != 0)
      break;
  }
  pc__buf_free(&text);
  return err;
}

/* Both entry points: into the file `out`, or with out NULL, through
 * `put` (nothing at any name is checked or replaced then).
 */
static int merge(const char *out,
                 int (*put)(void *data, const void *buf, size_t len),
                 void *data, const char *const *in, size_t nin, size_t *bad) {
  pc__mhead_t first;
  char **labels = NULL, **dicts = NULL;
  merge_t m;
  pc__mold_t old;
  pc__mdest_t to;
  pc__mdoc_t d;
  size_t k, at = 0, bad_line = 0;
  int err = 0, line_err = 0;

  memset(&d, 0, sizeof(d));
  memset(&m, 0, sizeof(m));
  memset(&first, 0, sizeof(first));
  if (nin == 0) {
    err = -EINVAL;
    goto out;
  }
  /* What OUT may replace, before anything is read (precompress.h). */
  if (out != NULL && (err = pc__manifest_check(out, 1, &old, NULL)) != 0) {
    at = SIZE_MAX;
    goto out;
  }
  if ((err = read_inputs(in, nin, &m, &first, &at, &bad_line, &line_err,
                         &d.incomplete)) != 0)
    goto out;
  at = 0;
  if ((err = parse_options(&first.opt, &d)) != 0 ||
      (err = take_roots(&first, &d, &labels)) != 0 ||
      (err = take_dicts(&first, &d, &dicts)) != 0)
    goto out;
  if (line_err != 0) {
    at = bad_line;
    err = line_err;
    goto out;
  }
  /* A file in two shards means they overlap: not shards of one run. */
  at = nin - 1;
  d.recs = m.recs;
  d.nrecs = m.nrecs;
  qsort(d.recs, d.nrecs, sizeof(*d.recs), pc__manifest_cmp_rec);
  for (k = 1; k < d.nrecs; k++) {
    if (pc__manifest_cmp_rec(&d.recs[k - 1], &d.recs[k]) == 0) {
      err = -EEXIST;
      goto out;
    }
  }
  at = SIZE_MAX;
  memset(&to, 0, sizeof(to));
  to.path = out;
  to.checked = out != NULL ? &old : NULL;
  to.write = put;
  to.data = data;
  err = pc__manifest_write_doc(&d, &to);

out:
  if (bad != NULL)
    *bad = at;
  drop_recs(&m, 0);
  free(m.recs);
  for (k = 0; labels != NULL && k < d.nroots; k++)
    free(labels[k]);
  free(labels);
  for (k = 0; dicts != NULL && k < d.ndicts; k++)
    free(dicts[k]);
  free(dicts);
  pc__mhead_free(&first);
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
