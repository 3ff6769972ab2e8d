/* The manifest: one JSON document, sorted by (root, path bytes), with
 * nothing from the run's own clock in it, so the same tree and options give
 * the same bytes at any -j. Written like an output: temp file, rename. The
 * schema is in manifest.h; this is its writer, manifest_read.c its reader.
 */
#include "manifest/manifest.h"

#include "codec/delta.h"
#include "common/json.h"
#include "common/names.h"
#include "fs/out.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 if the base name of `path` ends in .gz, .br or .zst, in any case: a
 * manifest there would be served as a compressed body.
 */
static int output_name(const char *path) {
  const char *base = strrchr(path, '/');

  base = base != NULL ? base + 1 : path;
  return pc__output_format_anycase(base, strlen(base)) >= 0;
}

/* What is at `path`: nothing or a symlink (0, *fd -1), a regular file (0,
 * *fd open on it, *old filled), or anything else (PC_EREFUSE, never
 * opened: opening a device may act on it).
 */
static int look(const char *path, pc__mold_t *old, int *fd) {
  struct stat st;
  int err;

  memset(old, 0, sizeof(*old));
  *fd = -1;
  if (lstat(path, &st) != 0)
    return errno == ENOENT ? 0 : PC__ERRNO();
  if (S_ISLNK(st.st_mode))
    return 0; /* replaced as a name, never read or written through */
  if (!S_ISREG(st.st_mode))
    return PC_EREFUSE;
  /* Not through a symlink and not blocking: it may have been swapped for
   * one, or for a FIFO, since the lstat.
   */
  *fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (*fd < 0)
    return errno == ENOENT || errno == ELOOP ? 0 : PC__ERRNO();
  err = fstat(*fd, &st) != 0   ? PC__ERRNO()
        : !S_ISREG(st.st_mode) ? PC_EREFUSE
                               : 0;
  if (err != 0) {
    close(*fd);
    *fd = -1;
    return err;
  }
  old->regular = 1;
  old->dev = st.st_dev;
  old->ino = st.st_ino;
  old->mode = st.st_mode;
  old->size = (uint64_t)st.st_size;
  return 0;
}

int pc__manifest_ours(size_t len, int ours) {
  return len == 0 || ours ? 0 : PC_EREFUSE;
}

/* Whether the regular file open at fd may be replaced, by its bytes. */
static int judge(int fd) {
  pc__buf_t b = {0};
  pc__mhead_t h;
  int err;

  if ((err = pc__json_read_fd(fd, &b)) == 0) {
    err = pc__manifest_read((const char *)b.data, b.len, NULL, &h);
    err = err == -ENOMEM ? err
                         : pc__manifest_ours(b.len, h.json && h.has_version);
    pc__mhead_free(&h);
  }
  pc__buf_free(&b);
  return err;
}

int pc__manifest_check(const char *path, int writing, pc__mold_t *old,
                       pc__buf_t *text) {
  int fd, err;

  memset(old, 0, sizeof(*old));
  if (writing && output_name(path))
    return PC_EOUTNAME;
  if ((err = look(path, old, &fd)) != 0 || fd < 0)
    return err == PC_EREFUSE && !writing ? PC_ENOTREG : err;
  err = text != NULL ? pc__json_read_fd(fd, text) : judge(fd);
  close(fd);
  return err;
}

int pc__manifest_cmp_rec(const void *a, const void *b) {
  const pc__rec_t *x = a, *y = b;
  if (x->root != y->root)
    return x->root < y->root ? -1 : 1;
  return strcmp(x->path, y->path);
}

/* num/den as a decimal: exact when den divides a power of ten (every ratio
 * the CLI accepts), else the nearest double.
 */
static int put_ratio(pc__buf_t *b, uint64_t num, uint64_t den) {
  uint64_t scale = 1, frac;
  int digits = 0;

  while (digits < 18 && scale % den != 0) {
    scale *= 10;
    digits++;
  }
  if (scale % den != 0)
    return pc__buf_printf(b, "%.17g", (double)num / (double)den);
  if (num % den == 0 || digits == 0)
    return pc__buf_printf(b, "%llu", (unsigned long long)(num / den));
  frac = (num % den) * (scale / den);
  /* Trailing zeros off: 0.50 -> 0.5. */
  while (frac % 10 == 0) {
    frac /= 10;
    digits--;
  }
  return pc__buf_printf(b, "%llu.%0*llu", (unsigned long long)(num / den),
                        digits, (unsigned long long)frac);
}

/* The value of one field of the spec, after its key; nothing when the
 * field is not written (*put 0).
 */
static int put_field(pc__buf_t *b, const pc__spec_field_t *fd,
                     const pc__spec_t *s, int *put) {
  const char *sep = "";
  int f, err;

  *put = 1;
  switch (fd->kind) {
  case PC__SPEC_FORMATS:
    if ((err = pc__buf_puts(b, "[")) != 0)
      return err;
    for (f = 0; f < PC_NFORMATS; f++) {
      if (!(s->formats & PC_FMT_BIT(f)))
        continue;
      if ((err = pc__buf_printf(b, "%s\"%s\"", sep,
                                pc_format_ext((pc_format_t)f))) != 0)
        return err;
      sep = ", ";
    }
    return pc__buf_puts(b, "]");
  case PC__SPEC_LEVEL:
    if ((*put = (s->formats & PC_FMT_BIT(fd->format)) != 0) == 0)
      return 0;
    return pc__buf_printf(b, "%d", s->level[fd->format]);
  case PC__SPEC_ENGINE:
    /* Only when not zlib: default manifests stay as they were. */
    if ((*put = (s->formats & PC_FMT_BIT(PC_GZ)) &&
                s->gzip_engine != PC_GZIP_ZLIB) == 0)
      return 0;
    return pc__buf_printf(b, "\"%s\"", pc_gzip_engine_name(s->gzip_engine));
  case PC__SPEC_RATIO:
    return put_ratio(b, s->ratio_num, s->ratio_den);
  case PC__SPEC_MIN_SIZE:
    return pc__buf_printf(b, "%llu", (unsigned long long)s->min_size);
  default: /* PC__SPEC_OUTPUT_DIR */
    /* Only with --output-dir: in-place manifests stay as they were. */
    if ((*put = s->output_dir != NULL) == 0)
      return 0;
    return pc__json_str(b, s->output_dir, strlen(s->output_dir), NULL);
  }
}

/* "options": the spec's fields (spec.h), in the table's order, each
 * under its key.
 */
static int put_options(pc__buf_t *b, const pc__spec_t *s) {
  size_t k;
  int put, err;

  if ((err = pc__buf_puts(b, "  \"options\": {")) != 0)
    return err;
  for (k = 0; k < PC__SPEC_NFIELDS; k++) {
    size_t at = b->len;
    if ((err = pc__buf_printf(b, "%s\"%s\": ", k > 0 ? ", " : "",
                              pc__spec_fields[k].key)) != 0 ||
        (err = put_field(b, &pc__spec_fields[k], s, &put)) != 0)
      return err;
    if (!put)
      b->len = at; /* not written: its key goes too */
  }
  return pc__buf_puts(b, "},\n");
}

/* The writer appends text with these, no printf per field: a manifest of
 * 100,000 lines is some ten fields each.
 */
static inline int put(pc__buf_t *b, const void *s, size_t n) {
  if (b->cap - b->len < n)
    return pc__buf_append(b, s, n); /* grows it */
  memcpy(b->data + b->len, s, n);
  b->len += n;
  return 0;
}

#define PUT(b, lit) put((b), (lit), sizeof(lit) - 1)

static int put_str(pc__buf_t *b, const char *s) { return put(b, s, strlen(s)); }

/* v in decimal, as "%llu" prints it. */
static int put_u64(pc__buf_t *b, uint64_t v) {
  char d[20], *p = d + sizeof(d);
  do
    *--p = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  return put(b, p, (size_t)(d + sizeof(d) - p));
}

/* v in decimal, as "%lld" prints it. */
static int put_i64(pc__buf_t *b, int64_t v) {
  int err;

  if (v >= 0)
    return put_u64(b, (uint64_t)v);
  if ((err = PUT(b, "-")) != 0)
    return err;
  return put_u64(b, 0 - (uint64_t)v);
}

/* A member of a line: its key (a literal with the comma before it), then
 * v in decimal.
 */
static int put_u64_member(pc__buf_t *b, const char *key, size_t klen,
                          uint64_t v) {
  int err = put(b, key, klen);
  return err != 0 ? err : put_u64(b, v);
}

#define PUT_U64(b, lit, v) put_u64_member((b), (lit), sizeof(lit) - 1, (v))

/* Format f's member of a line, when it has one (kept, or not for the
 * ratio).
 */
static int put_output(pc__buf_t *b, int f, const pc_output_t *o) {
  int err;

  if (o->state != PC_OUT_KEPT && o->state != PC_OUT_RATIO)
    return 0;
  if ((err = PUT(b, ", \"")) != 0 ||
      (err = put_str(b, pc_format_ext((pc_format_t)f))) != 0)
    return err;
  if (o->state != PC_OUT_KEPT)
    return PUT(b, "\": {\"skipped\": \"ratio\"}");
  if ((err = PUT_U64(b, "\": {\"size\": ", o->size)) != 0)
    return err;
  return PUT(b, "}");
}

/* The "deltas" member (docs/deltas.md): each delta with a pairing, kept
 * or not; a stale one removed has none and no line.
 */
static int put_deltas(pc__buf_t *b, const pc__rec_t *e) {
  static const char hex[] = "0123456789abcdef";
  unsigned k, n = 0;
  int err = 0, i;

  for (k = 0; err == 0 && k < e->ndeltas; k++) {
    const pc_delta_t *x = &e->deltas[k];
    char h[2 * sizeof(x->sha256) + 1];
    if (x->from == UINT32_MAX)
      continue;
    for (i = 0; i < (int)sizeof(x->sha256); i++) {
      h[2 * i] = hex[x->sha256[i] >> 4];
      h[2 * i + 1] = hex[x->sha256[i] & 15];
    }
    h[sizeof(h) - 1] = '\0';
    if ((err = n++ ? PUT(b, ", ") : PUT(b, ", \"deltas\": [")) != 0 ||
        (err = PUT(b, "{\"format\": \"")) != 0 ||
        (err = put_str(b, pc_delta_ext(x->format))) != 0 ||
        (err = PUT_U64(b, "\", \"from\": ", x->from)) != 0 ||
        (err = PUT(b, ", \"dictionary\": ")) != 0 ||
        (err = pc__json_str(b, x->dictionary, strlen(x->dictionary), NULL)) !=
            0)
      return err;
    /* A dictionary not read (a link, one that could not be read, one its
     * file's readers could not read, ...) has no hash, size or mtime to
     * give: the manifest says no more of it than its readers may know.
     */
    if (pc__delta_read(x->sha256) &&
        ((err = PUT(b, ", \"sha256\": \"")) != 0 ||
         (err = put_str(b, h)) != 0 || (err = PUT(b, "\"")) != 0))
      return err;
    if (pc__delta_read(x->sha256) &&
        ((err = PUT_U64(b, ", \"dictionary_size\": ", e->dstats[k].size)) !=
             0 ||
         (err = PUT(b, ", \"dictionary_mtime_ns\": ")) != 0 ||
         (err = put_i64(b, e->dstats[k].mtime_ns)) != 0))
      return err;
    if (x->skip == PC_DSKIP_NONE)
      err = PUT_U64(b, ", \"size\": ", x->size);
    else if ((err = PUT(b, ", \"skipped\": \"")) == 0 &&
             (err = put_str(b, pc_delta_skip_name(x->skip))) == 0)
      err = PUT(b, "\"");
    if (err == 0)
      err = PUT(b, "}");
  }
  return err != 0 || n == 0 ? err : PUT(b, "]");
}

/* The members after "size": mtime_ns, skipped, the outputs, error. */
static int put_rest(pc__buf_t *b, const pc__rec_t *e) {
  int f, err;

  if (e->mtime_ns != 0 && ((err = PUT(b, ", \"mtime_ns\": ")) != 0 ||
                           (err = put_i64(b, e->mtime_ns)) != 0))
    return err;
  if (e->skip != PC_SKIP_NONE &&
      ((err = PUT(b, ", \"skipped\": \"")) != 0 ||
       (err = put_str(b, pc_skip_name(e->skip))) != 0 ||
       (err = PUT(b, "\"")) != 0))
    return err;
  for (f = 0; f < PC_NFORMATS; f++)
    if ((err = put_output(b, f, &e->out[f])) != 0)
      return err;
  if (e->ndeltas > 0 && (err = put_deltas(b, e)) != 0)
    return err;
  if (e->err != 0) {
    const char *msg = e->err_msg != NULL ? e->err_msg : pc_strerror(e->err);
    if ((err = PUT(b, ", \"error\": ")) != 0 ||
        (err = pc__json_str(b, msg, strlen(msg), NULL)) != 0)
      return err;
  }
  return 0;
}

static int put_file(pc__buf_t *b, const pc__mdoc_t *r, const pc__rec_t *e) {
  size_t n = strlen(e->path);
  int lossy = 0, err;

  if ((err = PUT(b, "    {")) != 0 ||
      (r->nroots > 1 && ((err = PUT_U64(b, "\"root\": ", e->root)) != 0 ||
                         (err = PUT(b, ", ")) != 0)) ||
      (err = PUT(b, "\"path\": ")) != 0 ||
      (err = pc__json_str(b, e->path, n, &lossy)) != 0 ||
      (lossy && ((err = PUT(b, ", \"path_hex\": ")) != 0 ||
                 (err = pc__json_hex(b, e->path, n)) != 0)) ||
      (err = PUT_U64(b, ", \"size\": ", e->size)) != 0 ||
      (err = put_rest(b, e)) != 0)
    return err;
  return PUT(b, "}");
}

/* Totals from the lines themselves, so a merged manifest adds up exactly
 * like a single run's.
 */
static int put_totals(pc__buf_t *b, const pc__mdoc_t *r) {
  uint64_t files = r->nrecs, bytes = 0, failed = 0;
  uint64_t ff[PC_NFORMATS] = {0}, fb[PC_NFORMATS] = {0};
  size_t i;
  int f, err;

  for (i = 0; i < r->nrecs; i++) {
    const pc__rec_t *e = &r->recs[i];
    bytes += e->size;
    failed += e->err != 0;
    for (f = 0; f < PC_NFORMATS; f++) {
      if (e->out[f].state == PC_OUT_KEPT) {
        ff[f]++;
        fb[f] += e->out[f].size;
      }
    }
  }

  if ((err = pc__buf_printf(
           b, "  \"totals\": {\"files\": %llu, \"bytes\": %llu",
           (unsigned long long)files, (unsigned long long)bytes)) != 0)
    return err;
  for (f = 0; f < PC_NFORMATS; f++)
    if ((r->spec.formats & PC_FMT_BIT(f)) &&
        (err = pc__buf_printf(b, ", \"%s\": {\"files\": %llu, \"bytes\": %llu}",
                              pc_format_ext((pc_format_t)f),
                              (unsigned long long)ff[f],
                              (unsigned long long)fb[f])) != 0)
      return err;
  return pc__buf_printf(b, ", \"failed\": %llu}", (unsigned long long)failed);
}

/* The text goes to the temp file in blocks of about this size, so the
 * buffer stays small whatever the number of lines. The final name is only
 * ever renamed over once all of it is written (and synced, with --fsync);
 * on any failure the temp is removed and the old manifest stands.
 */
#define BLOCK (512u << 10)

/* Where the blocks go. While they match the manifest already at the path
 * (`old`), nothing is written: a run that changed nothing leaves the file
 * as it was, its mtime too (make, CI caches). At the first difference the
 * temp is opened, the equal part copied into it from the old file, and
 * the rest written as it comes.
 */
typedef struct sink {
  const pc__mdest_t *to;
  int old; /* the old manifest, or -1: no match to look for */
  off_t old_size;
  off_t same;                /* bytes so far, all equal to the old file's */
  struct timespec old_ctime; /* must not move while its bytes count */
  pc__buf_t cmp;             /* the old file's bytes of one block */
  pc__out_t out;             /* the temp, once opened */
  int writing;
} sink_t;

static int sink_open(sink_t *k) {
  struct stat st;
  off_t at = 0;
  int err;
  if ((err = pc__out_open(&k->out, AT_FDCWD, k->to->path)) != 0)
    return err;
  k->writing = 1;
  while (at < k->same) {
    size_t n = k->same - at < (off_t)BLOCK ? (size_t)(k->same - at) : BLOCK;
    if ((err = pc__buf_reserve(&k->cmp, n)) != 0 ||
        (err = pc__read_full(k->old, k->cmp.data, n, at)) != 0 ||
        (err = pc__out_write(&k->out, k->cmp.data, n)) != 0)
      return err;
    at += (off_t)n;
  }
  /* Runs replace it by rename, which leaves this inode alone; something
   * that rewrote it in place since it was compared spoils the copy.
   */
  if (k->same > 0 && (fstat(k->old, &st) != 0 || st.st_size != k->old_size ||
                      st.st_ctim.tv_sec != k->old_ctime.tv_sec ||
                      st.st_ctim.tv_nsec != k->old_ctime.tv_nsec))
    return PC_ECHANGED;
  return 0;
}

static int sink_put(sink_t *k, const void *p, size_t n) {
  int err;
  if (k->to->path == NULL)
    return k->to->write(k->to->data, p, n);
  if (!k->writing) {
    if (k->old >= 0 && (off_t)n <= k->old_size - k->same &&
        pc__buf_reserve(&k->cmp, n) == 0 &&
        pc__read_full(k->old, k->cmp.data, n, k->same) == 0 &&
        memcmp(k->cmp.data, p, n) == 0) {
      k->same += (off_t)n;
      return 0;
    }
    if ((err = sink_open(k)) != 0)
      return err;
  }
  return pc__out_write(&k->out, p, n);
}

/* What is at the sink's path now, checked again just before writing: the
 * run may have taken minutes. Only a regular file can be left as it is; a
 * symlink there is replaced, as always. A regular file other than the one
 * checked before is judged by its bytes. snk->old is left open on it (the
 * caller closes it), -1 when there is none to compare with.
 */
static int sink_look(sink_t *snk, pc__mold_t *now) {
  const pc__mold_t *was = snk->to->checked;
  struct stat st;
  int err;

  if (output_name(snk->to->path))
    return PC_EOUTNAME;
  if ((err = look(snk->to->path, now, &snk->old)) != 0)
    return err;
  if (snk->old >= 0 && now->size > 0 &&
      (was == NULL || !was->regular || was->dev != now->dev ||
       was->ino != now->ino) &&
      (err = judge(snk->old)) != 0)
    return err;
  if (snk->old >= 0 && fstat(snk->old, &st) == 0) {
    snk->old_size = st.st_size;
    snk->old_ctime = st.st_ctim;
  } else if (snk->old >= 0) {
    close(snk->old);
    snk->old = -1;
  }
  return 0;
}

/* Everything before the first line of "files" (the schema's order,
 * manifest.h). 0 or -ENOMEM.
 */
static int put_head(pc__buf_t *b, const pc__mdoc_t *r) {
  uint32_t k;
  int err;

  if ((err = pc__buf_puts(b, "{\n  \"precompress\": 1,\n")) != 0 ||
      (r->incomplete &&
       (err = pc__buf_puts(b, "  \"incomplete\": true,\n")) != 0) ||
      (err = put_options(b, &r->spec)) != 0)
    return err;
  if (r->nroots > 1) {
    if ((err = pc__buf_puts(b, "  \"roots\": [")) != 0)
      return err;
    for (k = 0; k < r->nroots; k++) {
      const char *l = r->labels[k];
      if ((err = pc__buf_puts(b, k ? ", " : "")) != 0 ||
          (err = pc__json_str(b, l, strlen(l), NULL)) != 0)
        return err;
    }
    if ((err = pc__buf_puts(b, "],\n")) != 0)
      return err;
  }
  if (r->ndicts > 0) {
    if ((err = pc__buf_puts(b, "  \"dictionaries\": [")) != 0)
      return err;
    for (k = 0; k < r->ndicts; k++) {
      const char *l = r->dicts[k];
      if ((err = pc__buf_puts(b, k ? ", " : "")) != 0 ||
          (err = pc__json_str(b, l, strlen(l), NULL)) != 0)
        return err;
    }
    if ((err = pc__buf_puts(b, "],\n")) != 0)
      return err;
  }
  return pc__buf_puts(b, "  \"files\": [\n");
}

/* All of the text has gone to the sink: the temp file takes the name,
 * unless the old manifest there holds the same bytes (it stands as it is,
 * its mtime too).
 */
static int sink_commit(sink_t *snk, const pc__mold_t *now) {
  struct stat st;
  mode_t mask;
  int err;

  if (!snk->writing && snk->same == snk->old_size)
    return 0;
  /* The mode of the file it replaces (a private manifest stays private);
   * a new one is an ordinary file: 0666 less the umask. Stamped now.
   */
  mask = umask(0);
  umask(mask);
  memset(&st, 0, sizeof(st));
  st.st_mode = snk->old >= 0 ? now->mode & 0777 : 0666 & ~mask;
  st.st_atim.tv_nsec = UTIME_NOW;
  st.st_mtim.tv_nsec = UTIME_NOW;
  if (!snk->writing && (err = sink_open(snk)) != 0)
    return err;
  return pc__out_commit(&snk->out, snk->to->path, &st, snk->to->sync);
}

int pc__manifest_write_doc(pc__mdoc_t *r, const pc__mdest_t *to) {
  pc__buf_t b = {0};
  pc__mold_t now;
  sink_t snk;
  size_t i;
  int err = 0;

  memset(&now, 0, sizeof(now));
  memset(&snk, 0, sizeof(snk));
  snk.to = to;
  snk.old = -1;
  snk.out = (pc__out_t)PC__OUT_INIT;
  if (to->path != NULL && (err = sink_look(&snk, &now)) != 0)
    goto out;
  if (r->nrecs > 1)
    qsort(r->recs, r->nrecs, sizeof(*r->recs), pc__manifest_cmp_rec);
  if ((err = pc__buf_reserve(&b, 2 * BLOCK)) != 0)
    goto out;
  if ((err = put_head(&b, r)) != 0)
    goto out;
  for (i = 0; i < r->nrecs; i++) {
    if ((err = put_file(&b, r, &r->recs[i])) != 0 ||
        (err = pc__buf_puts(&b, i + 1 < r->nrecs ? ",\n" : "\n")) != 0)
      goto out;
    if (b.len >= BLOCK) {
      if ((err = sink_put(&snk, b.data, b.len)) != 0)
        goto out;
      b.len = 0;
    }
  }
  if ((err = pc__buf_puts(&b, "  ],\n")) != 0 ||
      (err = put_totals(&b, r)) != 0 ||
      (err = pc__buf_puts(&b, "\n}\n")) != 0 ||
      (err = sink_put(&snk, b.data, b.len)) != 0 || to->path == NULL)
    goto out;
  err = sink_commit(&snk, &now);
out:
  pc__out_discard(&snk.out);
  if (snk.old >= 0)
    close(snk.old);
  pc__buf_free(&snk.cmp);
  pc__buf_free(&b);
  return err;
}
