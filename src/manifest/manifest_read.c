/* The one manifest reader (manifest.h), for incremental runs (prev.c) and
 * merge-manifests (merge.c). It decodes; its users judge.
 *
 * jansson parses it, but never all of it at once: a document of 100,000
 * records costs ten times the file in memory. A thin framing layer here
 * walks the top-level object and the "files" array, handing each key, each
 * top-level value and each line of "files" to json_loadb() as a value of
 * its own; a line is decoded, handed on and freed before the next one is
 * parsed. The framing layer itself looks only at whitespace and at the six
 * bytes { } [ ] : , between values; every key, string, number and word is
 * jansson's.
 *
 * A long "files" array may be parsed in parts on threads (when the user
 * gives part_new(): nothing else runs yet, and jansson takes about 2 us a
 * line, 0.2 s for 100,000). A part starts after a raw newline: JSON escapes
 * every control byte inside a string, so a raw newline is always between
 * tokens, and after it and whitespace, a '{' may be a line of "files". That
 * guess is checked, not trusted: a part's lines count only when the part
 * before it, parsed from a start known to be right, ended exactly where it
 * began. Otherwise the lines from there on are parsed again, in order, on
 * this thread; the user receives what one pass would have given it.
 *
 * What is read is what a jansson document of the whole file gave
 * (fuzz_manifest checks the two against each other): any text jansson
 * refuses is PC_EBADMANIFEST, JSON of another shape PC_ENOTMANIFEST, a key
 * given twice in one object counts by its last value. Two differences,
 * both at the edges of JSON:
 *  - a NUL byte anywhere is PC_EBADMANIFEST. RFC 8259 allows none, and
 *    jansson lets one through after a number or a word without counting
 *    it in the position it reports, which the framing relies on.
 *  - jansson's nesting limit (2048) counts from each value parsed, so a
 *    top-level value may be one level deeper, and a line of "files" two,
 *    than in a document of the whole file.
 */
#include "manifest/manifest.h"

#include "common/names.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

/* Parts of "files" parsed at once, at most. */
#define MAX_PARTS 16

/* Where a value starts in the text; NONE: absent. */
#define NONE SIZE_MAX

/* The header members the reader keeps, by where their last value starts:
 * a files() call saw the final header when none of these moved since.
 */
enum { AT_VERSION, AT_INCOMPLETE, AT_OPT, AT_ROOTS, AT_DICTS, AT_FILES, AT_N };

typedef struct reader {
  const char *text;
  size_t len;
  const pc__mread_t *rd; /* never NULL: a check-only one stands in */
  pc__mhead_t h;
  size_t at[AT_N];     /* where each member's last value starts */
  int files_list;      /* the last "files" is a list */
  size_t called[AT_N]; /* `at` at the last files() call; NONE: none */
} reader_t;

/* The spec's fields (spec.h) and their keys in "options", in the order
 * the writer (manifest.c) puts them: each format's level, and the gzip
 * engine after gzip's. Here, with the reader that decodes by it, and not
 * with the writer, which uses the reader: the two files then depend one
 * way (tests/unit/check_structure.py).
 */
const pc__spec_field_t pc__spec_fields[PC__SPEC_NFIELDS] = {
    {PC__SPEC_FORMATS, -1, "formats", PC__SPEC_SAME},
    {PC__SPEC_LEVEL, PC_GZ, "gzip_level", PC__SPEC_BYTES | PC__SPEC_SAME},
    {PC__SPEC_ENGINE, -1, "gzip_engine", PC__SPEC_BYTES | PC__SPEC_SAME},
    {PC__SPEC_LEVEL, PC_BR, "brotli_quality", PC__SPEC_BYTES | PC__SPEC_SAME},
    {PC__SPEC_LEVEL, PC_ZST, "zstd_level", PC__SPEC_BYTES | PC__SPEC_SAME},
    {PC__SPEC_RATIO, -1, "max_ratio", PC__SPEC_SAME},
    {PC__SPEC_MIN_SIZE, -1, "min_size", 0},
    {PC__SPEC_OUTPUT_DIR, -1, "output_dir", PC__SPEC_SAME},
};

static const pc__mread_t check_only = {0};

void pc__mhead_free(pc__mhead_t *h) {
  json_decref(h->j_version);
  json_decref(h->j_incomplete);
  json_decref(h->j_opt);
  json_decref(h->j_roots);
  json_decref(h->j_dicts);
  memset(h, 0, sizeof(*h));
}

const char *pc__mhead_label(const pc__mhead_t *h, size_t k) {
  return json_string_value(json_array_get(h->j_roots, k));
}

int pc__mhead_same_job(const pc__mhead_t *a, const pc__mhead_t *b) {
  return json_equal(a->j_opt, b->j_opt) &&
         ((a->j_roots == NULL && b->j_roots == NULL) ||
          json_equal(a->j_roots, b->j_roots)) &&
         ((a->j_dicts == NULL && b->j_dicts == NULL) ||
          json_equal(a->j_dicts, b->j_dicts));
}

int pc__mhead_same_dicts(const pc__mhead_t *h, const char *const *dirs,
                         unsigned n) {
  size_t k;

  if (h->j_dicts == NULL)
    return n == 0;
  if (!json_is_array(h->j_dicts) || json_array_size(h->j_dicts) != n)
    return 0;
  for (k = 0; k < n; k++) {
    const char *s = json_string_value(json_array_get(h->j_dicts, k));
    if (s == NULL || strcmp(s, dirs[k]) != 0)
      return 0;
  }
  return 1;
}

const char *pc__mhead_dict(const pc__mhead_t *h, size_t k) {
  return json_string_value(json_array_get(h->j_dicts, k));
}

size_t pc__mline_ndeltas(const pc__mline_t *l) {
  return json_array_size(l->deltas);
}

/* An integer member: *v and 1 when it is one, else 0. */
static int int_member(json_t *o, const char *key, int64_t *v) {
  json_t *x = json_object_get(o, key);
  *v = json_integer_value(x);
  return json_is_integer(x);
}

void pc__mline_delta(const pc__mline_t *l, size_t k, pc__mdelta_t *d) {
  json_t *o = json_array_get(l->deltas, k);

  memset(d, 0, sizeof(*d));
  if (!json_is_object(o))
    return;
  d->object = 1;
  d->format = json_string_value(json_object_get(o, "format"));
  d->dictionary = json_string_value(json_object_get(o, "dictionary"));
  d->sha256 = json_string_value(json_object_get(o, "sha256"));
  d->skipped = json_string_value(json_object_get(o, "skipped"));
  d->from_int = int_member(o, "from", &d->from);
  d->size_int = int_member(o, "size", &d->size);
  d->dsize_int = int_member(o, "dictionary_size", &d->dict_size);
  d->dmtime_int = int_member(o, "dictionary_mtime_ns", &d->dict_mtime_ns);
}

/* The formats a list names (other entries ignored). */
static unsigned decode_formats(json_t *fl) {
  unsigned formats = 0;
  json_t *v;
  size_t i;
  int f;

  json_array_foreach(fl, i, v) {
    const char *s = json_string_value(v);
    if (s != NULL && (f = pc__format_named(s)) >= 0)
      formats |= PC_FMT_BIT(f);
  }
  return formats;
}

/* max_ratio as the shortest decimal of at most 9 places that gives the
 * same double (what the CLI parsed), when it is one in (0, 1]. 1 if so.
 */
static int decode_ratio(double r, uint64_t *num, uint64_t *den) {
  uint64_t d;

  if (!(r > 0 && r <= 1))
    return 0;
  for (d = 1; d <= 1000000000u; d *= 10) {
    double n = floor(r * (double)d + 0.5);
    if (n / (double)d == r) {
      *num = (uint64_t)n;
      *den = d;
      return 1;
    }
  }
  return 0;
}

/* One field of "options" (its value v, NULL when absent) into o. 1 when
 * its value is of the field's kind.
 */
static int decode_field(const pc__spec_field_t *fd, json_t *v, pc__mopt_t *o) {
  pc__spec_t *s = &o->spec;
  int k;

  switch (fd->kind) {
  case PC__SPEC_FORMATS:
    s->formats = decode_formats(v);
    return json_is_array(v);
  case PC__SPEC_LEVEL:
    if (!json_is_integer(v) || json_integer_value(v) < INT_MIN ||
        json_integer_value(v) > INT_MAX)
      return 0;
    s->level[fd->format] = (int)json_integer_value(v);
    return 1;
  case PC__SPEC_ENGINE:
    o->engine = json_string_value(v);
    for (k = PC_GZIP_ZLIB; o->engine != NULL && k <= PC_GZIP_ZOPFLI; k++)
      if (strcmp(o->engine, pc_gzip_engine_name((pc_gzip_engine_t)k)) == 0) {
        s->gzip_engine = (pc_gzip_engine_t)k;
        return 1;
      }
    return 0;
  case PC__SPEC_RATIO:
    o->ratio = json_number_value(v);
    o->ratio_exact = json_is_number(v) &&
                     decode_ratio(o->ratio, &s->ratio_num, &s->ratio_den);
    return json_is_number(v);
  case PC__SPEC_MIN_SIZE:
    s->min_size = (uint64_t)json_integer_value(v);
    return json_is_integer(v);
  default: /* PC__SPEC_OUTPUT_DIR */
    s->output_dir = json_string_value(v);
    return s->output_dir != NULL;
  }
}

static void decode_options(json_t *opt, pc__mopt_t *o) {
  size_t k;

  memset(o, 0, sizeof(*o));
  for (k = 0; k < PC__SPEC_NFIELDS; k++) {
    json_t *v = json_object_get(opt, pc__spec_fields[k].key);
    if (v != NULL)
      o->given |= PC__SPEC_BIT(k);
    if (decode_field(&pc__spec_fields[k], v, o))
      o->valid |= PC__SPEC_BIT(k);
  }
}

/* The decoded fields of h from its values. */
static void decode_head(pc__mhead_t *h) {
  h->has_version = h->j_version != NULL;
  h->incomplete = json_is_true(h->j_incomplete);
  h->options = json_is_object(h->j_opt);
  decode_options(h->j_opt, &h->opt);
  h->has_roots = h->j_roots != NULL;
  h->roots_list = json_is_array(h->j_roots);
  h->nroots = json_array_size(h->j_roots);
}

static void decode_line(json_t *fe, pc__mline_t *l) {
  json_t *v;
  int f;

  memset(l, 0, sizeof(*l));
  if (!json_is_object(fe))
    return;
  l->object = 1;
  v = json_object_get(fe, "root");
  l->has_root = v != NULL;
  l->root_int = json_is_integer(v);
  l->root = json_integer_value(v);
  v = json_object_get(fe, "path");
  l->path = json_string_value(v);
  l->path_len = json_string_length(v);
  v = json_object_get(fe, "path_hex");
  l->hex = json_string_value(v);
  l->hex_len = json_string_length(v);
  v = json_object_get(fe, "size");
  l->size_int = json_is_integer(v);
  l->size = json_integer_value(v);
  v = json_object_get(fe, "mtime_ns");
  l->has_mtime = v != NULL;
  l->mtime_int = json_is_integer(v);
  l->mtime_ns = json_integer_value(v);
  v = json_object_get(fe, "skipped");
  l->has_skipped = v != NULL;
  l->skipped = json_string_value(v);
  v = json_object_get(fe, "error");
  l->has_error = v != NULL;
  l->error = json_string_value(v);
  for (f = 0; f < PC_NFORMATS; f++) {
    json_t *o = json_object_get(fe, pc_format_ext((pc_format_t)f));
    l->out[f].has = o != NULL;
    l->out[f].object = json_is_object(o);
    v = json_object_get(o, "size");
    l->out[f].sized = json_is_integer(v) && json_integer_value(v) > 0;
    l->out[f].size = json_integer_value(v);
    l->out[f].ratio = json_is_string(json_object_get(o, "skipped"));
  }
  v = json_object_get(fe, "deltas");
  l->has_deltas = v != NULL;
  l->deltas = json_is_array(v) ? v : NULL;
}

static size_t skip_ws(const reader_t *r, size_t i) {
  while (i < r->len && (r->text[i] == ' ' || r->text[i] == '\t' ||
                        r->text[i] == '\n' || r->text[i] == '\r'))
    i++;
  return i;
}

/* The byte at i, or -1 at the end of the text. */
static int byte_at(const reader_t *r, size_t i) {
  return i < r->len ? (unsigned char)r->text[i] : -1;
}

/* The JSON value (any kind) that starts at *i, parsed by jansson; *i is
 * moved past it. jansson stops after one value and says in the position
 * of its json_error_t how many bytes it took, exactly: what follows a
 * number or a word is looked at and given back, never counted (tested
 * with jansson 2.14), as long as the text has no NUL byte, which
 * pc__manifest_read() made sure of. The position is an int: at most
 * INT_MAX bytes are offered, so a single value over 2 GiB is refused
 * rather than miscounted.
 */
/* jansson >= 2.11 says running out of memory in the error's code; a value
 * it could not allocate while parsing returns NULL with no message at
 * all, which no syntax error does.
 */
static int load_failed(const json_error_t *e) {
#if JANSSON_VERSION_HEX >= 0x020b00
  if (json_error_code(e) == json_error_out_of_memory)
    return -ENOMEM;
#endif
  return e->text[0] == '\0' ? -ENOMEM : PC_EBADMANIFEST;
}

static int value_at(const reader_t *r, size_t *i, json_t **out) {
  size_t n = r->len - *i;
  json_error_t jerr;

  if (n > (size_t)INT_MAX)
    n = (size_t)INT_MAX;
  *out = json_loadb(r->text + *i, n, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK,
                    &jerr);
  if (*out == NULL)
    return load_failed(&jerr);
  if (jerr.position <= 0 || (size_t)jerr.position > n) {
    json_decref(*out); /* cannot happen: never trust it */
    *out = NULL;
    return PC_EBADMANIFEST;
  }
  *i += (size_t)jerr.position;
  return 0;
}

/* Lines of "files" from *i (the start of one), each to `sink` when it is
 * not NULL: up to `stop`, the start of a line that another part takes
 * (*ended 0, *i there), or past the array's ']' (*ended 1). Should *i go
 * past `stop` without meeting it, `stop` was no line's start: the lines go
 * on here.
 */
static int read_lines(const reader_t *r, void *sink, size_t *i, size_t stop,
                      int *ended) {
  json_t *fe = NULL;
  pc__mline_t l;
  int err = 0, c;

  *ended = 0;
  for (;;) {
    /* After a ',' jansson refuses a ']': no trailing comma. */
    if ((err = value_at(r, i, &fe)) != 0)
      break;
    if (sink != NULL) {
      decode_line(fe, &l);
      if ((err = r->rd->line(sink, &l)) != 0)
        break;
    }
    json_decref(fe);
    fe = NULL;
    *i = skip_ws(r, *i);
    c = byte_at(r, *i);
    (*i)++;
    if (c == ']') {
      *ended = 1;
      break;
    }
    if (c != ',') {
      err = PC_EBADMANIFEST;
      break;
    }
    *i = skip_ws(r, *i);
    if (*i == stop)
      break;
  }
  json_decref(fe);
  return err;
}

/* One part of "files", parsed on a thread of its own into a sink of its
 * own: its lines from `start` up to `stop` (see read_lines()).
 */
typedef struct part {
  const reader_t *r;
  void *sink;
  size_t start, stop, end;
  int err, ended, started;
  uv_thread_t tid;
} part_t;

static void part_run(void *arg) {
  part_t *pt = arg;
  pt->end = pt->start;
  pt->sink = pt->r->rd->part_new(pt->r->rd->data);
  pt->err = pt->sink == NULL
                ? -ENOMEM
                : read_lines(pt->r, pt->sink, &pt->end, pt->stop, &pt->ended);
}

/* Where a part may start: a '{' after the first raw newline at or after
 * `from` (and whitespace), before the end; NONE if there is none.
 */
static size_t part_start(const reader_t *r, size_t from) {
  const char *nl = memchr(r->text + from, '\n', r->len - from);
  size_t j;
  if (nl == NULL)
    return NONE;
  j = skip_ws(r, (size_t)(nl - r->text));
  return byte_at(r, j) == '{' ? j : NONE;
}

/* How many parts the lines from i on are parsed in (1: on this thread). */
static unsigned parts_wanted(const reader_t *r, size_t i) {
  const pc__mread_t *rd = r->rd;
  size_t span = r->len - i;
  unsigned want = rd->threads < MAX_PARTS ? rd->threads : MAX_PARTS;

  if (rd->part_new == NULL)
    return 1;
  if (want > 1 && rd->min_part > 0 && span / want < rd->min_part)
    want = (unsigned)(span / rd->min_part);
  return want;
}

/* The lines of "files" from *i (the start of the first), to the user's
 * data: split into parts on threads when long enough (see the top), else
 * here.
 */
static int fill_lines(const reader_t *r, size_t *i) {
  const pc__mread_t *rd = r->rd;
  part_t parts[MAX_PARTS];
  size_t np = 0, k, stop = NONE, span = r->len - *i;
  unsigned want = parts_wanted(r, *i);
  int err, ended = 0;

  for (k = 1; k < want; k++) {
    size_t at = part_start(r, *i + span / want * k);
    if (at == NONE || (np > 0 && at <= parts[np - 1].start))
      continue;
    memset(&parts[np], 0, sizeof(parts[np]));
    parts[np].r = r;
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
  err = read_lines(r, rd->data, i, stop, &ended);
  for (k = 0; k < np; k++) {
    if (parts[k].started)
      uv_thread_join(&parts[k].tid);
    /* Taken only when the lines before it ended where it starts. */
    if (err == 0 && !ended && parts[k].started && parts[k].err == 0 &&
        *i == parts[k].start) {
      err = rd->part_join(rd->data, parts[k].sink);
      *i = parts[k].end;
      ended = parts[k].ended;
    } else if (err == 0 && !ended) {
      err = read_lines(r, rd->data, i, NONE, &ended);
    }
    if (parts[k].sink != NULL)
      rd->part_free(parts[k].sink);
  }
  return err;
}

/* The "files" array at *i ('['), each line parsed and freed in turn; *i
 * is moved past it. Its lines go to the user when files() asks for them.
 * `again`: the array was read (and found to be JSON) before; it is read
 * again only if the user wants its lines.
 */
static int read_files(reader_t *r, size_t *i, int again) {
  int fill = 0, ended;

  memcpy(r->called, r->at, sizeof(r->called));
  if (r->rd->files != NULL) {
    decode_head(&r->h);
    int err = r->rd->files(r->rd->data, &r->h, &fill);
    if (err != 0)
      return err;
  }
  if (again && !fill)
    return 0;
  *i = skip_ws(r, *i + 1);
  if (byte_at(r, *i) == ']') {
    (*i)++;
    return 0;
  }
  return fill ? fill_lines(r, i) : read_lines(r, NULL, i, NONE, &ended);
}

/* One member: the value at *i (after the key `k` and its ':') is read and
 * *i moved past it. The header's members are kept (the last value given
 * counts), a "files" list read line by line; any other value is small, or
 * not a manifest's: parsed whole and dropped.
 */
static int read_member(reader_t *r, const char *k, size_t *i) {
  static const char *const keys[] = {"precompress", "incomplete", "options",
                                     "roots", "dictionaries"};
  json_t **slots[] = {&r->h.j_version, &r->h.j_incomplete, &r->h.j_opt,
                      &r->h.j_roots, &r->h.j_dicts};
  size_t at = *i, m;
  json_t *v = NULL;
  int err;

  if (strcmp(k, "files") == 0) {
    r->at[AT_FILES] = at;
    r->files_list = byte_at(r, at) == '[';
    if (r->files_list)
      return read_files(r, i, 0);
  }
  if ((err = value_at(r, i, &v)) != 0)
    return err;
  for (m = 0; m < PC__ARRAY_SIZE(keys); m++) {
    if (strcmp(k, keys[m]) == 0) {
      json_decref(*slots[m]);
      *slots[m] = v; /* AT_VERSION.. are in the order of keys[] */
      r->at[m] = at;
      return 0;
    }
  }
  json_decref(v);
  return 0;
}

/* The members of the object whose '{' is at *i; *i is moved past its '}'. */
static int read_members(reader_t *r, size_t *i) {
  json_t *key = NULL;
  int err = 0, c;

  *i = skip_ws(r, *i + 1);
  if (byte_at(r, *i) == '}') {
    (*i)++;
    return 0;
  }
  for (;;) {
    /* A key is a string; after a ',' jansson refuses a '}'. */
    if ((err = value_at(r, i, &key)) != 0)
      break;
    if (json_string_value(key) == NULL) {
      err = PC_EBADMANIFEST;
      break;
    }
    *i = skip_ws(r, *i);
    if (byte_at(r, *i) != ':') {
      err = PC_EBADMANIFEST;
      break;
    }
    *i = skip_ws(r, *i + 1);
    if ((err = read_member(r, json_string_value(key), i)) != 0)
      break;
    json_decref(key);
    key = NULL;
    *i = skip_ws(r, *i);
    c = byte_at(r, *i);
    (*i)++;
    if (c == '}')
      break;
    if (c != ',') {
      err = PC_EBADMANIFEST;
      break;
    }
    *i = skip_ws(r, *i);
  }
  json_decref(key);
  return err;
}

/* The whole document: one object, then only whitespace. The lines are
 * handed on as "files" goes by, with the header read before it; should a
 * later member change the header (or a key be given twice), files() is
 * asked again at the end with the final one, and the "files" that counts
 * read again if it wants the lines.
 */
static int read_doc(reader_t *r) {
  size_t i = skip_ws(r, 0);
  int err;

  if (byte_at(r, i) != '{') {
    /* Not an object: no manifest, but is it JSON at all? Such a text is
     * never a manifest's, so it is parsed whole, once.
     */
    json_error_t jerr;
    json_t *any = json_loadb(r->text, r->len, JSON_DECODE_ANY, &jerr);
    err = any != NULL ? PC_ENOTMANIFEST : load_failed(&jerr);
    json_decref(any);
    return err;
  }
  if ((err = read_members(r, &i)) != 0)
    return err;
  if (skip_ws(r, i) != r->len)
    return PC_EBADMANIFEST;
  /* JSON, all of it: from here on, whether it is a manifest. */
  r->h.json = 1;
  decode_head(&r->h);
  if (json_integer_value(r->h.j_version) != 1 || !r->files_list)
    return PC_ENOTMANIFEST;
  if (r->rd->files != NULL && memcmp(r->called, r->at, sizeof(r->at)) != 0) {
    /* Checked once already: only the user's callbacks can fail it now. */
    i = r->at[AT_FILES];
    err = read_files(r, &i, 1);
  }
  return err;
}

int pc__manifest_read(const char *text, size_t len, const pc__mread_t *rd,
                      pc__mhead_t *head) {
  reader_t r;
  size_t k;
  int err;

  memset(&r, 0, sizeof(r));
  r.text = text != NULL ? text : "";
  r.len = len;
  r.rd = rd != NULL ? rd : &check_only;
  for (k = 0; k < AT_N; k++)
    r.at[k] = r.called[k] = NONE;
  /* See the top: no NUL byte, so that jansson's positions are exact. */
  err = memchr(r.text, '\0', r.len) != NULL ? PC_EBADMANIFEST : read_doc(&r);
  if (head != NULL) {
    decode_head(&r.h);
    *head = r.h;
  } else {
    pc__mhead_free(&r.h);
  }
  return err;
}
