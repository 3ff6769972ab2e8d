/* Reading an earlier manifest for the incremental skip. Only what the skip
 * needs is kept: per file its size, mtime and, per format, the output size
 * or that it was not kept. Records with an error or a skip reason are not
 * kept: those files are looked at again.
 *
 * The reading is manifest_read.c's (one streaming reader, decoding; see
 * there for what it accepts and how "files" is parsed in parts on threads).
 * What is decided here: whether the manifest was written with this run's
 * options (else it says nothing about what this run would write), which of
 * its roots are ours, and which lines are usable, into a table of
 * (root, path). A file given twice counts by its first usable line.
 */
#include "manifest/prev.h"

#include "common/index.h"
#include "common/json.h"
#include "manifest/manifest.h"
#include "manifest/manifest_line.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* The table: records in one array, their paths in one arena, and the
 * index (index.h) over them.
 */
typedef struct entry {
  size_t off;   /* of the path (NUL-terminated) in names */
  uint32_t len; /* of the path */
  uint32_t root;
  pc__prev_rec_t rec;
} entry_t;

struct pc__prev {
  pc__index_t ix;
  entry_t *ents;
  size_t n, capents;
  pc__buf_t names;
  pc__prev_delta_t *dels; /* the records' deltas, each record's in a row */
  size_t ndels, capdels;
};

const pc__prev_delta_t *pc__prev_deltas(const pc__prev_t *p,
                                        const pc__prev_rec_t *rec) {
  return rec->ndeltas > 0 ? &p->dels[rec->delta0] : NULL;
}

const char *pc__prev_dict(const pc__prev_t *p, const pc__prev_delta_t *d) {
  return (const char *)p->names.data + d->dict_off;
}

/* Appends n bytes and a NUL to the table's names; *off where. */
static int put_name(pc__prev_t *p, const char *s, size_t n, size_t *off) {
  int err = pc__buf_reserve(&p->names, n + 1);
  if (err != 0)
    return err;
  *off = p->names.len;
  memcpy(p->names.data + p->names.len, s, n);
  p->names.data[p->names.len + n] = '\0';
  p->names.len += n + 1;
  return 0;
}

/* Copies rec's deltas from table `from` into p (rec->delta0 moved). */
static int copy_deltas(pc__prev_t *p, const pc__prev_t *from,
                       pc__prev_rec_t *rec) {
  size_t k, at = p->ndels;
  int err;

  for (k = 0; k < rec->ndeltas; k++) {
    const pc__prev_delta_t *d = &from->dels[rec->delta0 + k];
    const char *dict = pc__prev_dict(from, d);
    if ((err = PC__GROW(p->dels, p->ndels, p->capdels, 64)) != 0)
      return err;
    p->dels[p->ndels] = *d;
    if ((err = put_name(p, dict, strlen(dict), &p->dels[p->ndels].dict_off)) !=
        0)
      return err;
    p->ndels++;
  }
  rec->delta0 = at;
  return 0;
}

/* What a record is looked up by. */
typedef struct name_key {
  uint32_t root;
  const char *path;
  size_t len;
} name_key_t;

static uint64_t hash_key(const name_key_t *k) {
  return XXH3_64bits_withSeed(k->path, k->len, k->root);
}

static int entry_is(const void *ctx, uint32_t item, const void *key) {
  const pc__prev_t *p = ctx;
  const entry_t *e = &p->ents[item];
  const name_key_t *k = key;
  return e->root == k->root && e->len == k->len &&
         memcmp(p->names.data + e->off, k->path, k->len) == 0;
}

const pc__prev_rec_t *pc__prev_find(const pc__prev_t *p, uint32_t root,
                                    const char *path) {
  name_key_t k;
  uint32_t item;
  if (p == NULL || p->n == 0)
    return NULL;
  k.root = root;
  k.path = path;
  k.len = strlen(path);
  item = pc__index_find(&p->ix, hash_key(&k), entry_is, p, &k);
  return item != UINT32_MAX ? &p->ents[item].rec : NULL;
}

size_t pc__prev_count(const pc__prev_t *p) { return p != NULL ? p->n : 0; }

const pc__prev_rec_t *pc__prev_at(const pc__prev_t *p, size_t k,
                                  uint32_t *root) {
  *root = p->ents[k].root;
  return &p->ents[k].rec;
}

size_t pc__prev_index(const pc__prev_t *p, const pc__prev_rec_t *rec) {
  return (size_t)(PC__CONTAINER_OF(rec, entry_t, rec) - p->ents);
}

const pc__prev_rec_t *pc__prev_next(const pc__prev_t *p, uint32_t root,
                                    const char *path, size_t *hint) {
  const pc__prev_rec_t *rec;
  size_t n;
  if (p == NULL || p->n == 0)
    return NULL;
  n = strlen(path);
  if (*hint < p->n) {
    const entry_t *e = &p->ents[*hint];
    if (e->root == root && e->len == n &&
        memcmp(p->names.data + e->off, path, n) == 0) {
      (*hint)++;
      return &e->rec;
    }
  }
  rec = pc__prev_find(p, root, path);
  if (rec != NULL)
    *hint = (size_t)(PC__CONTAINER_OF(rec, entry_t, rec) - p->ents) + 1;
  return rec;
}

const char *pc__prev_path(const pc__prev_t *p, const pc__prev_rec_t *rec) {
  const entry_t *e = PC__CONTAINER_OF(rec, entry_t, rec);
  return (const char *)p->names.data + e->off;
}

void pc__prev_free(pc__prev_t *p) {
  if (p == NULL)
    return;
  pc__index_free(&p->ix);
  free(p->ents);
  pc__buf_free(&p->names);
  free(p->dels);
  free(p);
}

static int add(pc__prev_t *p, uint32_t root, const char *path, size_t n,
               const pc__prev_rec_t *rec) {
  name_key_t k = {root, path, n};
  uint64_t h = hash_key(&k);
  entry_t *e;
  size_t s;
  int err;

  if ((err = pc__index_reserve(&p->ix)) != 0)
    return err;
  s = pc__index_slot(&p->ix, h, entry_is, p, &k);
  if (pc__index_item(&p->ix, s) != UINT32_MAX)
    return 0; /* a duplicate line: the first one stands */
  if ((err = PC__GROW(p->ents, p->n, p->capents, 1024)) != 0)
    return err;
  if ((err = pc__buf_reserve(&p->names, n + 1)) != 0)
    return err;
  e = &p->ents[p->n];
  e->off = p->names.len;
  e->len = (uint32_t)n;
  e->root = root;
  e->rec = *rec;
  memcpy(p->names.data + p->names.len, path, n);
  p->names.data[p->names.len + n] = '\0';
  p->names.len += n + 1;
  pc__index_put(&p->ix, s, h, (uint32_t)p->n++);
  return 0;
}

/* 1 if field k of the manifest's options (o) is what this run's spec
 * (s) has: the records then hold for it.
 */
static int same_field(size_t k, const pc__mopt_t *o, const pc__spec_t *s) {
  const pc__spec_field_t *fd = &pc__spec_fields[k];
  int valid = (o->valid & PC__SPEC_BIT(k)) != 0;

  switch (fd->kind) {
  case PC__SPEC_FORMATS:
    return valid && o->spec.formats == s->formats;
  case PC__SPEC_LEVEL:
    return !(s->formats & PC_FMT_BIT(fd->format)) ||
           (valid && o->spec.level[fd->format] == s->level[fd->format]);
  case PC__SPEC_ENGINE:
    /* No engine named (or not by a string): zlib, as older manifests
     * mean; a string naming none is no engine of ours.
     */
    if (!(s->formats & PC_FMT_BIT(PC_GZ)))
      return 1;
    if (o->engine == NULL)
      return s->gzip_engine == PC_GZIP_ZLIB;
    return valid && o->spec.gzip_engine == s->gzip_engine;
  case PC__SPEC_RATIO:
    return valid &&
           fabs(o->ratio - (double)s->ratio_num / (double)s->ratio_den) < 1e-12;
  case PC__SPEC_OUTPUT_DIR:
    /* Outputs written in place, or under another DIR, say nothing about
     * the ones under this DIR (compared as given: "out" and "./out"
     * differ).
     */
    if (s->output_dir == NULL)
      return !(o->given & PC__SPEC_BIT(k));
    return valid && strcmp(o->spec.output_dir, s->output_dir) == 0;
  default:
    return 1;
  }
}

/* 1 if the manifest's options produce the outputs this run would: every
 * field the table marks PC__SPEC_SAME the same.
 */
static int same_options(const pc__mopt_t *o, const pc__spec_t *s) {
  size_t k;

  for (k = 0; k < PC__SPEC_NFIELDS; k++)
    if ((pc__spec_fields[k].use & PC__SPEC_SAME) && !same_field(k, o, s))
      return 0;
  return 1;
}

/* Where the lines go: a table, with what it takes to judge a line. A part
 * of "files" parsed on a thread has one of its own (manifest.h).
 */
typedef struct sink {
  pc__prev_t *p;
  const uint32_t *map; /* manifest root index -> ours, or UINT32_MAX */
  size_t nmap;
  unsigned formats;
  unsigned ndirs, deltas; /* the run's --dictionary-from DIRs, formats */
  pc__buf_t raw;          /* a decoded path_hex */
} sink_t;

/* One load: the run's settings, and the table being made. */
typedef struct load {
  sink_t s;
  uint32_t *map; /* s.map, owned */
  int want;      /* a table is wanted at all (else only checked) */
  const pc__spec_t *spec;
  char *const *labels;
  uint32_t nlabels;
} load_t;

/* The root index map of a manifest's "roots": manifest root index ->
 * ours, or UINT32_MAX. One root has no "roots" list.
 */
static int make_map(load_t *ld, const pc__mhead_t *h) {
  size_t n = h->roots_list ? h->nroots : 1, i, k;

  if ((ld->map = malloc((n ? n : 1) * sizeof(*ld->map))) == NULL)
    return -ENOMEM;
  for (i = 0; i < n; i++) {
    const char *l = h->roots_list ? pc__mhead_label(h, i) : NULL;
    ld->map[i] = UINT32_MAX;
    if (!h->roots_list) {
      if (ld->nlabels == 1)
        ld->map[i] = 0;
      continue;
    }
    for (k = 0; l != NULL && k < ld->nlabels; k++)
      if (strcmp(l, ld->labels[k]) == 0)
        ld->map[i] = (uint32_t)k;
  }
  ld->s.map = ld->map;
  ld->s.nmap = n;
  return 0;
}

/* A "files" list reached (manifest.h): a new table for it when the header
 * says this run's options, else none (the one made before is dropped).
 */
static int on_files(void *data, const pc__mhead_t *h, int *want) {
  load_t *ld = data;
  int err;

  *want = 0;
  pc__prev_free(ld->s.p);
  ld->s.p = NULL;
  free(ld->map);
  ld->map = NULL;
  if (!ld->want || !same_options(&h->opt, ld->spec) ||
      !pc__mhead_same_dicts(h, ld->spec->dict_dirs, ld->spec->n_dict_dirs))
    return 0;
  if ((ld->s.p = calloc(1, sizeof(*ld->s.p))) == NULL)
    return -ENOMEM;
  if ((err = make_map(ld, h)) != 0)
    return err;
  *want = 1;
  return 0;
}

/* Entry md of a line's deltas into *d. 1 if usable, 0 if not. */
static int usable_delta(const sink_t *s, const pc__mdelta_t *md,
                        pc__prev_delta_t *d) {
  pc_delta_t x;
  pc__dstat_t ds;

  memset(d, 0, sizeof(*d));
  if (pc__mline_delta_rec(md, s->ndirs, s->deltas, &x, &ds) != 0)
    return 0;
  d->format = (uint8_t)x.format;
  d->skip = (uint8_t)x.skip;
  d->from = x.from;
  d->size = x.size;
  d->dict_size = ds.size;
  d->dict_mtime_ns = ds.mtime_ns;
  memcpy(d->sha256, x.sha256, sizeof(d->sha256));
  return 1;
}

/* A line's deltas into the sink's table, rec's from there. 1 if usable,
 * 0 if not (nothing kept of them then).
 */
static int usable_deltas(sink_t *s, const pc__mline_t *l, pc__prev_rec_t *rec) {
  size_t n = pc__mline_ndeltas(l), k, at = s->p->ndels;
  pc__prev_t *p = s->p;

  if (!l->has_deltas)
    return 1;
  if (l->deltas == NULL || n > PC__MLINE_DELTAS_MAX || s->deltas == 0)
    return 0;
  for (k = 0; k < n; k++) {
    pc__mdelta_t md;
    pc__prev_delta_t d;
    pc__mline_delta(l, k, &md);
    if (!usable_delta(s, &md, &d) ||
        PC__GROW(p->dels, p->ndels, p->capdels, 64) != 0 ||
        put_name(p, md.dictionary, strlen(md.dictionary), &d.dict_off) != 0) {
      p->ndels = at;
      return 0;
    }
    p->dels[p->ndels++] = d;
  }
  rec->delta0 = at;
  rec->ndeltas = (uint32_t)n;
  return 1;
}

/* Fills rec from a line. 1 if usable, 0 to ignore it. */
static int usable(sink_t *s, const pc__mline_t *l, pc__prev_rec_t *rec) {
  unsigned formats = s->formats;
  int f;

  memset(rec, 0, sizeof(*rec));
  /* A line with an error or a skip reason, or without an mtime, is not
   * used: that file is looked at again.
   */
  if (l->has_error || l->has_skipped || !l->mtime_int ||
      pc__mline_stat(l, &rec->size, &rec->mtime_ns) != 0)
    return 0;
  for (f = 0; f < PC_NFORMATS; f++)
    if ((formats & PC_FMT_BIT(f)) && pc__mline_output(l, f, &rec->out[f]) != 0)
      return 0;
  return usable_deltas(s, l, rec);
}

/* One line into the table: anything but a usable object of one of our
 * roots is ignored.
 */
static int on_line(void *sink, const pc__mline_t *l) {
  sink_t *s = sink;
  pc__prev_rec_t rec;
  int64_t ri = l->root_int ? l->root : 0;
  const char *key = l->path;
  size_t nkey = l->path_len;
  int err;

  if (key == NULL || ri < 0 || (uint64_t)ri >= s->nmap ||
      s->map[ri] == UINT32_MAX || !usable(s, l, &rec))
    return 0;
  /* A name that is not UTF-8 is exact only in path_hex. */
  if (l->hex != NULL) {
    if ((err = pc__buf_reserve(&s->raw, l->hex_len / 2 + 1)) != 0)
      return err;
    if (pc__unhexn(l->hex, l->hex_len, (char *)s->raw.data) != 0)
      return 0;
    key = (const char *)s->raw.data;
    nkey = l->hex_len / 2;
  }
  /* No file has a name that long. */
  if (nkey >= UINT32_MAX)
    return 0;
  return add(s->p, s->map[ri], key, nkey, &rec);
}

static void *part_new(void *data) {
  const load_t *ld = data;
  sink_t *s = calloc(1, sizeof(*s));

  if (s == NULL)
    return NULL;
  *s = ld->s;
  memset(&s->raw, 0, sizeof(s->raw));
  if ((s->p = calloc(1, sizeof(*s->p))) == NULL) {
    free(s);
    return NULL;
  }
  return s;
}

/* A part's lines, in the order parsed, into the load's table (a
 * duplicate's first line stands, as in one pass).
 */
static int part_join(void *data, void *part) {
  load_t *ld = data;
  const pc__prev_t *from = ((sink_t *)part)->p;
  size_t k;
  int err;

  for (k = 0; k < from->n; k++) {
    const entry_t *e = &from->ents[k];
    pc__prev_rec_t rec = e->rec;
    if ((err = copy_deltas(ld->s.p, from, &rec)) != 0 ||
        (err = add(ld->s.p, e->root, (const char *)from->names.data + e->off,
                   e->len, &rec)) != 0)
      return err;
  }
  return 0;
}

static void part_free(void *part) {
  sink_t *s = part;
  pc__prev_free(s->p);
  pc__buf_free(&s->raw);
  free(s);
}

int pc__prev_parse(pc__prev_t **out, int *ours, const char *text, size_t len,
                   const pc__spec_t *spec, char *const *labels,
                   uint32_t nlabels, unsigned threads, size_t min_part) {
  pc__mread_t rd;
  pc__mhead_t h;
  load_t ld;
  int err;

  if (out != NULL)
    *out = NULL;
  memset(&ld, 0, sizeof(ld));
  ld.want = out != NULL;
  ld.s.formats = spec != NULL ? spec->formats : 0;
  ld.s.ndirs = spec != NULL ? spec->n_dict_dirs : 0;
  ld.s.deltas = spec != NULL ? spec->deltas : 0;
  ld.spec = spec;
  ld.labels = labels;
  ld.nlabels = nlabels;
  memset(&rd, 0, sizeof(rd));
  rd.files = on_files;
  rd.line = on_line;
  rd.part_new = part_new;
  rd.part_join = part_join;
  rd.part_free = part_free;
  rd.data = &ld;
  rd.threads = threads;
  rd.min_part = min_part;
  err = pc__manifest_read(text, len, &rd, &h);
  /* Ours: a manifest of any version, even one this build cannot use. */
  if (ours != NULL)
    *ours = h.json && h.has_version;
  pc__mhead_free(&h);
  if (err == 0 && out != NULL) {
    *out = ld.s.p;
    ld.s.p = NULL;
  }
  pc__prev_free(ld.s.p);
  free(ld.map);
  pc__buf_free(&ld.s.raw);
  return err;
}

int pc__prev_load(pc__prev_t **out, const char *path, const pc__spec_t *spec,
                  char *const *labels, uint32_t nlabels, unsigned threads,
                  size_t min_part) {
  pc__buf_t text = {0};
  int err;

  *out = NULL;
  if ((err = pc__json_read_file(path, &text)) != 0) {
    if (err == -ENOENT)
      err = 0; /* no manifest yet */
    goto out;
  }
  err = pc__prev_parse(out, NULL, (const char *)text.data, text.len, spec,
                       labels, nlabels, threads, min_part);
out:
  pc__buf_free(&text);
  return err;
}
