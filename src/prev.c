/* Reading an earlier manifest. Only what the incremental skip needs is
 * kept: per file its size, mtime and, per format, the output size or that
 * it was not kept. Records with an error or a skip reason are not kept:
 * those files are looked at again.
 *
 * jansson parses it, but never all of it at once: a document of 100,000
 * records costs ten times the file in memory. The file is read into one
 * buffer, and a thin framing layer here walks the top-level object and the
 * "files" array, handing each key, each top-level value and each line of
 * "files" to json_loadb() as a value of its own; a line goes into the table
 * and is freed before the next one is parsed. The framing layer itself
 * looks only at whitespace and at the six bytes { } [ ] : , between
 * values; every key, string, number and word is jansson's.
 *
 * A long "files" array is parsed in parts on as many threads as the run
 * has jobs: nothing else runs yet, and jansson takes about 2 us a line
 * (0.2 s for 100,000). A part starts after a raw newline: JSON escapes
 * every control byte inside a string, so a raw newline is always between
 * tokens, and after it and whitespace, a '{' may be a line of "files".
 * That guess is checked, not trusted: a part's lines count only when the
 * part before it, parsed from a start known to be right, ended exactly
 * where it began. Otherwise the lines from there on are parsed again, in
 * order, on this thread; the table is what one pass would have made.
 *
 * What is kept is what a jansson document of the whole file gave
 * (fuzz_manifest checks the two against each other): any text jansson
 * refuses is PC_EBADMANIFEST, JSON of another shape PC_ENOTMANIFEST, a key
 * given twice in one object counts by its last value, a file given twice
 * by its first usable line. Two
 * differences, both at the edges of JSON:
 *  - a NUL byte anywhere is PC_EBADMANIFEST. RFC 8259 allows none, and
 *    jansson lets one through after a number or a word without counting
 *    it in the position it reports, which the framing relies on.
 *  - jansson's nesting limit (2048) counts from each value parsed, so a
 *    top-level value may be one level deeper, and a line of "files" two,
 *    than in a document of the whole file.
 */
#include "prev.h"

#include "json.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <xxhash.h>

/* The table: records in one array, their paths in one arena, and an open
 * addressing index over them (power-of-two size, at most half full).
 */
typedef struct entry {
  size_t off;    /* of the path (NUL-terminated) in names */
  uint32_t len;  /* of the path */
  uint32_t root;
  pc__prev_rec_t rec;
} entry_t;

typedef struct slot {
  uint32_t hash; /* the low half of the key's hash */
  uint32_t idx;  /* entry + 1; 0 for an empty slot */
} slot_t;

struct pc__prev {
  slot_t *slots;
  size_t cap;
  entry_t *ents;
  size_t n, capents;
  pc__buf_t names;
};

/* Parts of "files" parsed at once, at most. */
#define MAX_PARTS 16

static uint64_t hash_key(uint32_t root, const char *s, size_t n) {
  return XXH3_64bits_withSeed(s, n, root);
}

static slot_t *slot_for(const pc__prev_t *p, uint32_t root, const char *path,
                        size_t n, uint64_t h) {
  size_t i = (size_t)h & (p->cap - 1);
  for (; p->slots[i].idx != 0; i = (i + 1) & (p->cap - 1)) {
    const entry_t *e = &p->ents[p->slots[i].idx - 1];
    if (p->slots[i].hash == (uint32_t)h && e->root == root && e->len == n &&
        memcmp(p->names.data + e->off, path, n) == 0)
      break;
  }
  return &p->slots[i];
}

const pc__prev_rec_t *pc__prev_find(const pc__prev_t *p, uint32_t root,
                                    const char *path) {
  size_t n;
  slot_t *s;
  if (p == NULL || p->n == 0)
    return NULL;
  n = strlen(path);
  s = slot_for(p, root, path, n, hash_key(root, path, n));
  return s->idx != 0 ? &p->ents[s->idx - 1].rec : NULL;
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
  free(p->slots);
  free(p->ents);
  pc__buf_free(&p->names);
  free(p);
}

/* Doubles the index. The slot's hash half places it: the index never has
 * 2^32 slots (entries are counted in 32 bits).
 */
static int grow(pc__prev_t *p) {
  size_t cap = p->cap ? p->cap * 2 : 1024, i, j;
  slot_t *slots;

  if (cap > (size_t)UINT32_MAX || (slots = calloc(cap, sizeof(*slots))) == NULL)
    return -ENOMEM;
  for (i = 0; i < p->cap; i++) {
    if (p->slots[i].idx == 0)
      continue;
    for (j = p->slots[i].hash & (cap - 1); slots[j].idx != 0;
         j = (j + 1) & (cap - 1))
      ;
    slots[j] = p->slots[i];
  }
  free(p->slots);
  p->slots = slots;
  p->cap = cap;
  return 0;
}

static int add(pc__prev_t *p, uint32_t root, const char *path, size_t n,
               const pc__prev_rec_t *rec) {
  uint64_t h = hash_key(root, path, n);
  entry_t *e;
  slot_t *s;
  int err;

  if ((p->n + 1) * 2 > p->cap && (err = grow(p)) != 0)
    return err;
  s = slot_for(p, root, path, n, h);
  if (s->idx != 0)
    return 0; /* a duplicate line: the first one stands */
  if (p->n == p->capents) {
    size_t cap = p->capents ? p->capents * 2 : 1024;
    entry_t *ents = realloc(p->ents, cap * sizeof(*ents));
    if (ents == NULL)
      return -ENOMEM;
    p->ents = ents;
    p->capents = cap;
  }
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
  s->hash = (uint32_t)h;
  s->idx = (uint32_t)++p->n;
  return 0;
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

/* The root index map of one "roots" value: manifest root index -> ours,
 * or UINT32_MAX. One root has no "roots" list.
 */
static int make_map(json_t *roots, char *const *labels, uint32_t nlabels,
                    uint32_t **map, size_t *nmap) {
  size_t i, k;

  *nmap = json_is_array(roots) ? json_array_size(roots) : 1;
  if ((*map = malloc((*nmap ? *nmap : 1) * sizeof(**map))) == NULL)
    return -ENOMEM;
  for (i = 0; i < *nmap; i++) {
    const char *l = json_is_array(roots)
                        ? json_string_value(json_array_get(roots, i))
                        : NULL;
    (*map)[i] = UINT32_MAX;
    if (!json_is_array(roots)) {
      if (nlabels == 1)
        (*map)[i] = 0;
      continue;
    }
    for (k = 0; l != NULL && k < nlabels; k++)
      if (strcmp(l, labels[k]) == 0)
        (*map)[i] = (uint32_t)k;
  }
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

/* Where a top-level member's value starts in the text; NONE: absent. */
#define NONE SIZE_MAX

/* One load: the text, the run's settings, what the walk has seen. */
typedef struct load {
  const char *text;
  size_t len;
  unsigned formats;
  const int *level;
  pc_gzip_engine_t engine;
  uint64_t ratio_num, ratio_den;
  char *const *labels;
  uint32_t nlabels;
  unsigned threads; /* that may parse "files" at once */
  size_t min_part;  /* bytes of "files" per thread, at least */
  int check_only;   /* build no table: only say what the text is */
  int json_ok;      /* the whole text was found to be JSON */

  /* The last value of each of these top-level members so far (a key given
   * twice counts by its last value, as in a jansson object), and where it
   * starts in the text.
   */
  json_t *version, *opt, *roots;
  size_t opt_at, roots_at;
  size_t files_at; /* the last "files" */
  int files_arr;   /* whether it is an array */

  /* The table, filled from the "files" at built_files with the "options"
   * and "roots" at built_opt and built_roots (built_files NONE: none).
   */
  pc__prev_t *p;
  size_t built_files, built_opt, built_roots;
  uint32_t *map; /* manifest root index -> ours, or UINT32_MAX */
  size_t nmap;

  pc__buf_t raw; /* a decoded path_hex */
} load_t;

static size_t skip_ws(const load_t *ld, size_t i) {
  while (i < ld->len && (ld->text[i] == ' ' || ld->text[i] == '\t' ||
                         ld->text[i] == '\n' || ld->text[i] == '\r'))
    i++;
  return i;
}

/* The byte at i, or -1 at the end of the text. */
static int byte_at(const load_t *ld, size_t i) {
  return i < ld->len ? (unsigned char)ld->text[i] : -1;
}

/* The JSON value (any kind) that starts at *i, parsed by jansson; *i is
 * moved past it. jansson stops after one value and says in the position
 * of its json_error_t how many bytes it took, exactly: what follows a
 * number or a word is looked at and given back, never counted (tested
 * with jansson 2.14), as long as the text has no NUL byte, which
 * pc__prev_load() made sure of. The position is an int: at most INT_MAX
 * bytes are offered, so a single value over 2 GiB is refused rather than
 * miscounted.
 */
static int value_at(const load_t *ld, size_t *i, json_t **out) {
  size_t n = ld->len - *i;
  json_error_t jerr;

  if (n > (size_t)INT_MAX)
    n = (size_t)INT_MAX;
  *out = json_loadb(ld->text + *i, n, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK,
                    &jerr);
  if (*out == NULL)
    return pc__json_load_failed(&jerr);
  if (jerr.position <= 0 || (size_t)jerr.position > n) {
    json_decref(*out); /* cannot happen: never trust it */
    *out = NULL;
    return PC_EBADMANIFEST;
  }
  *i += (size_t)jerr.position;
  return 0;
}

/* One line of "files" into the table, as the reader of a whole jansson
 * document took it: anything but a usable object is ignored.
 */
static int add_line(load_t *ld, json_t *fe) {
  pc__prev_rec_t rec;
  json_t *jr = json_object_get(fe, "root");
  json_int_t ri = json_is_integer(jr) ? json_integer_value(jr) : 0;
  json_t *jp = json_object_get(fe, "path");
  json_t *jh = json_object_get(fe, "path_hex");
  const char *key = json_string_value(jp);
  size_t nkey = json_string_length(jp);
  int err;

  if (key == NULL || ri < 0 || (size_t)ri >= ld->nmap ||
      ld->map[ri] == UINT32_MAX || parse_file(fe, ld->formats, &rec) != 0)
    return 0;
  /* A name that is not UTF-8 is exact only in path_hex. jansson's strings
   * hold no NUL (\u0000 is refused), so a length is a strlen().
   */
  if (json_is_string(jh)) {
    size_t nh = json_string_length(jh);
    if ((err = pc__buf_reserve(&ld->raw, nh / 2 + 1)) != 0)
      return err;
    if (pc__unhexn(json_string_value(jh), nh, (char *)ld->raw.data) != 0)
      return 0;
    key = (const char *)ld->raw.data;
    nkey = nh / 2;
  }
  /* No file has a name that long. */
  if (nkey >= UINT32_MAX)
    return 0;
  return add(ld->p, ld->map[ri], key, nkey, &rec);
}

/* Lines of "files" from *i (the start of one) into ld->p when `fill`: up
 * to `stop`, the start of a line that another part takes (*ended 0, *i
 * there), or past the array's ']' (*ended 1). Should *i go past `stop`
 * without meeting it, `stop` was no line's start: the lines go on here.
 */
static int read_lines(load_t *ld, size_t *i, size_t stop, int fill,
                      int *ended) {
  json_t *fe = NULL;
  int err = 0, c;

  *ended = 0;
  for (;;) {
    /* After a ',' jansson refuses a ']': no trailing comma. */
    if ((err = value_at(ld, i, &fe)) != 0 ||
        (fill && (err = add_line(ld, fe)) != 0))
      break;
    json_decref(fe);
    fe = NULL;
    *i = skip_ws(ld, *i);
    c = byte_at(ld, *i);
    (*i)++;
    if (c == ']') {
      *ended = 1;
      break;
    }
    if (c != ',') {
      err = PC_EBADMANIFEST;
      break;
    }
    *i = skip_ws(ld, *i);
    if (*i == stop)
      break;
  }
  json_decref(fe);
  return err;
}

/* One part of "files", parsed on a thread of its own into a table of its
 * own: its lines from `start` up to `stop` (see read_lines()).
 */
typedef struct part {
  load_t ld; /* a copy of the load's, with its own p and raw */
  size_t start, stop, end;
  int err, ended, started;
  uv_thread_t tid;
} part_t;

static void part_run(void *arg) {
  part_t *pt = arg;
  pt->end = pt->start;
  pt->err = (pt->ld.p = calloc(1, sizeof(*pt->ld.p))) == NULL
                ? -ENOMEM
                : read_lines(&pt->ld, &pt->end, pt->stop, 1, &pt->ended);
}

/* Where a part may start: a '{' after the first raw newline at or after
 * `from` (and whitespace), before the end; NONE if there is none.
 */
static size_t part_start(const load_t *ld, size_t from) {
  const char *nl = memchr(ld->text + from, '\n', ld->len - from);
  size_t j;
  if (nl == NULL)
    return NONE;
  j = skip_ws(ld, (size_t)(nl - ld->text));
  return byte_at(ld, j) == '{' ? j : NONE;
}

/* The lines of `from`, in the order parsed, into `to` (a duplicate's
 * first line stands, as in one pass).
 */
static int merge_part(pc__prev_t *to, const pc__prev_t *from) {
  size_t k;
  int err;
  for (k = 0; k < from->n; k++) {
    const entry_t *e = &from->ents[k];
    if ((err = add(to, e->root, (const char *)from->names.data + e->off,
                   e->len, &e->rec)) != 0)
      return err;
  }
  return 0;
}

/* The lines of "files" from *i (the start of the first), into ld->p:
 * split into parts on threads when long enough (see the top), else here.
 */
static int fill_lines(load_t *ld, size_t *i) {
  part_t parts[MAX_PARTS];
  size_t np = 0, k, stop = NONE, span = ld->len - *i;
  unsigned want = ld->threads < MAX_PARTS ? ld->threads : MAX_PARTS;
  int err, ended = 0;

  if (want > 1 && ld->min_part > 0 && span / want < ld->min_part)
    want = (unsigned)(span / ld->min_part);
  for (k = 1; k < want; k++) {
    size_t at = part_start(ld, *i + span / want * k);
    if (at == NONE || (np > 0 && at <= parts[np - 1].start))
      continue;
    memset(&parts[np], 0, sizeof(parts[np]));
    parts[np].ld = *ld;
    parts[np].ld.p = NULL;
    memset(&parts[np].ld.raw, 0, sizeof(parts[np].ld.raw));
    parts[np].start = at;
    parts[np].stop = NONE;
    if (np > 0)
      parts[np - 1].stop = at;
    np++;
  }
  /* A part that cannot have its thread is parsed again below, in order. */
  for (k = 0; k < np; k++)
    parts[k].started =
        uv_thread_create(&parts[k].tid, part_run, &parts[k]) == 0;
  if (np > 0)
    stop = parts[0].start;
  err = read_lines(ld, i, stop, 1, &ended);
  for (k = 0; k < np; k++) {
    if (parts[k].started)
      uv_thread_join(&parts[k].tid);
    /* Taken only when the lines before it ended where it starts. */
    if (err == 0 && !ended && parts[k].started && parts[k].err == 0 &&
        *i == parts[k].start) {
      err = merge_part(ld->p, parts[k].ld.p);
      *i = parts[k].end;
      ended = parts[k].ended;
    } else if (err == 0 && !ended) {
      err = read_lines(ld, i, NONE, 1, &ended);
    }
    pc__prev_free(parts[k].ld.p);
    pc__buf_free(&parts[k].ld.raw);
  }
  return err;
}

/* The "files" array at *i ('['), each line parsed and freed in turn; *i
 * is moved past it. With `fill`, the lines go into a new table made with
 * the "options" and "roots" in force; else they are only checked.
 */
static int read_files(load_t *ld, size_t *i, int fill) {
  size_t at = *i;
  int err = 0, ended;

  if (fill) {
    pc__prev_free(ld->p);
    free(ld->map);
    ld->map = NULL;
    ld->built_files = NONE;
    if ((ld->p = calloc(1, sizeof(*ld->p))) == NULL)
      return -ENOMEM;
    if ((err = make_map(ld->roots, ld->labels, ld->nlabels, &ld->map,
                        &ld->nmap)) != 0)
      return err;
  }
  *i = skip_ws(ld, *i + 1);
  if (byte_at(ld, *i) == ']')
    (*i)++;
  else if ((err = fill ? fill_lines(ld, i)
                       : read_lines(ld, i, NONE, 0, &ended)) != 0)
    return err;
  if (fill) {
    ld->built_files = at;
    ld->built_opt = ld->opt_at;
    ld->built_roots = ld->roots_at;
  }
  return 0;
}

/* Replaces *slot (a member given before) by v, and notes where v is. */
static void keep(json_t **slot, size_t *slot_at, json_t *v, size_t at) {
  json_decref(*slot);
  *slot = v;
  if (slot_at != NULL)
    *slot_at = at;
}

/* The whole document: one object, then only whitespace. The table is
 * filled as "files" goes by when the options read before it are this
 * run's; should a later member change what it meant ("options" or "roots"
 * after "files", or a key given twice), the "files" that counts is read
 * again at the end.
 */
static int read_doc(load_t *ld) {
  json_t *key = NULL, *v = NULL;
  size_t i = skip_ws(ld, 0);
  int err = 0, c;

  if (byte_at(ld, i) != '{') {
    /* Not an object: no manifest, but is it JSON at all? Such a text is
     * never a manifest's, so it is parsed whole, once.
     */
    json_error_t jerr;
    json_t *any = json_loadb(ld->text, ld->len, JSON_DECODE_ANY, &jerr);
    err = any != NULL ? PC_ENOTMANIFEST : pc__json_load_failed(&jerr);
    json_decref(any);
    goto out;
  }
  i = skip_ws(ld, i + 1);
  if (byte_at(ld, i) == '}') {
    i++;
  } else {
    for (;;) {
      const char *k;
      size_t at;
      /* A key is a string; after a ',' jansson refuses a '}'. */
      if ((err = value_at(ld, &i, &key)) != 0)
        goto out;
      if ((k = json_string_value(key)) == NULL) {
        err = PC_EBADMANIFEST;
        goto out;
      }
      i = skip_ws(ld, i);
      if (byte_at(ld, i) != ':') {
        err = PC_EBADMANIFEST;
        goto out;
      }
      at = i = skip_ws(ld, i + 1);
      if (strcmp(k, "files") == 0 && byte_at(ld, i) == '[') {
        if ((err = read_files(ld, &i,
                              !ld->check_only &&
                                  same_options(ld->opt, ld->formats,
                                               ld->level, ld->engine,
                                               ld->ratio_num,
                                               ld->ratio_den))) != 0)
          goto out;
        ld->files_at = at;
        ld->files_arr = 1;
      } else {
        /* Any other value is small, or not a manifest's: whole. */
        if ((err = value_at(ld, &i, &v)) != 0)
          goto out;
        if (strcmp(k, "files") == 0) {
          ld->files_at = at;
          ld->files_arr = 0;
        } else if (strcmp(k, "precompress") == 0) {
          keep(&ld->version, NULL, v, at);
          v = NULL;
        } else if (strcmp(k, "options") == 0) {
          keep(&ld->opt, &ld->opt_at, v, at);
          v = NULL;
        } else if (strcmp(k, "roots") == 0) {
          keep(&ld->roots, &ld->roots_at, v, at);
          v = NULL;
        }
        json_decref(v);
        v = NULL;
      }
      json_decref(key);
      key = NULL;
      i = skip_ws(ld, i);
      c = byte_at(ld, i);
      i++;
      if (c == '}')
        break;
      if (c != ',') {
        err = PC_EBADMANIFEST;
        goto out;
      }
      i = skip_ws(ld, i);
    }
  }
  if (skip_ws(ld, i) != ld->len) {
    err = PC_EBADMANIFEST;
    goto out;
  }
  /* JSON, all of it: from here on, whether it is a manifest. */
  ld->json_ok = 1;
  if (json_integer_value(ld->version) != 1 || !ld->files_arr) {
    err = PC_ENOTMANIFEST;
    goto out;
  }
  if (ld->check_only ||
      !same_options(ld->opt, ld->formats, ld->level, ld->engine,
                    ld->ratio_num, ld->ratio_den)) {
    pc__prev_free(ld->p); /* *out NULL: says nothing about this run */
    ld->p = NULL;
    goto out;
  }
  if (ld->built_files != ld->files_at || ld->built_opt != ld->opt_at ||
      ld->built_roots != ld->roots_at) {
    /* Checked once already: only memory can fail it now. */
    i = ld->files_at;
    err = read_files(ld, &i, 1);
  }
out:
  json_decref(key);
  json_decref(v);
  return err;
}

int pc__prev_parse(pc__prev_t **out, int *ours, const char *text,
                   size_t len, unsigned formats, const int *level,
                   pc_gzip_engine_t engine, uint64_t ratio_num,
                   uint64_t ratio_den, char *const *labels, uint32_t nlabels,
                   unsigned threads, size_t min_part) {
  load_t ld;
  int err;

  if (out != NULL)
    *out = NULL;
  if (ours != NULL)
    *ours = 0;
  memset(&ld, 0, sizeof(ld));
  ld.text = text != NULL ? text : "";
  ld.len = len;
  /* See the top: no NUL byte, so that jansson's positions are exact. */
  if (memchr(ld.text, '\0', ld.len) != NULL) {
    err = PC_EBADMANIFEST;
    goto out;
  }
  ld.formats = formats;
  ld.level = level;
  ld.engine = engine;
  ld.ratio_num = ratio_num;
  ld.ratio_den = ratio_den;
  ld.labels = labels;
  ld.nlabels = nlabels;
  ld.threads = threads;
  ld.min_part = min_part;
  ld.check_only = out == NULL;
  ld.opt_at = ld.roots_at = ld.files_at = ld.built_files = NONE;
  err = read_doc(&ld);
  /* Ours: a manifest of any version, even one this build cannot use. */
  if (ours != NULL)
    *ours = ld.json_ok && ld.version != NULL;
  if (err != 0)
    goto out;
  if (out != NULL) {
    *out = ld.p;
    ld.p = NULL;
  }
out:
  pc__prev_free(ld.p);
  free(ld.map);
  json_decref(ld.version);
  json_decref(ld.opt);
  json_decref(ld.roots);
  pc__buf_free(&ld.raw);
  return err;
}

int pc__prev_load(pc__prev_t **out, const char *path, unsigned formats,
                  const int *level, pc_gzip_engine_t engine,
                  uint64_t ratio_num, uint64_t ratio_den,
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
  err = pc__prev_parse(out, NULL, (const char *)text.data, text.len, formats,
                       level, engine, ratio_num, ratio_den, labels, nlabels,
                       threads, min_part);
out:
  pc__buf_free(&text);
  return err;
}
