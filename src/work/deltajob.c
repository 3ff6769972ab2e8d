/* A job's deltas on its worker (deltajob.h, docs/deltas.md). One
 * predecessor at a time: judged first by what the listing says of it
 * (dictset.h: a link, an ambiguous key, a name too long, a dictionary its
 * file's readers could not read or far larger than the file), then read
 * whole (below its --dictionary-from DIR, through no symlink, judged again
 * on the descriptors it is read from, no larger than it was listed),
 * named by its SHA-256, compressed against in each delta format; the
 * outputs kept in memory until the plain outputs are settled, then written
 * through the output protocol as they are.
 */
#include "work/deltajob.h"

#include "fs/below.h"
#include "codec/delta.h"
#include "work/deltashare.h"
#include "work/dictset.h"
#include "common/names.h"
#include "common/sha256.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#define MAX_DELTAS (PC_DICT_DIRS_MAX * PC_NDELTAS)

/* What pc__deltas_make() hands pc__deltas_settle(): each delta's output
 * (kept ones only), beside its record in res.deltas.
 */
typedef struct pc__dwork {
  pc__buf_t out[MAX_DELTAS];
} pc__dwork_t;

static int level_of(const pc__cfg_t *c, int f) {
  return c->spec.level[f == PC_DCB ? PC_BR : PC_ZST];
}

uint64_t pc__deltas_mem(const pc__job_t *j) {
  const char *base = j->fullpath + pc__job_base_off(j);
  uint64_t dict = 0, enc = 0, m;
  unsigned d, n = 0;
  int f;

  for (d = 0; d < PC_DICT_DIRS_MAX; d++) {
    const pc__dictfile_t *p = j->preds[d];
    /* One the listing refuses is never read (its owner's bits are not
     * known here: one refused for them only is counted).
     */
    if (p == NULL || pc__dictset_skip(p, base, j->size, NULL) != PC_DSKIP_NONE)
      continue;
    n++;
    dict = p->size > dict ? p->size : dict;
    for (f = 0; f < PC_NDELTAS; f++) {
      if (!(j->cfg->deltas & PC_DELTA_BIT(f)))
        continue;
      m = pc__delta_mem((pc_delta_format_t)f, level_of(j->cfg, f), p->size,
                        j->size);
      enc = m > enc ? m : enc;
    }
  }
  if (n == 0)
    return 0;
  /* The source, one dictionary and one encoder at a time, and the kept
   * outputs (each under the source's size by the keep rule).
   */
  return j->size + dict + enc + (uint64_t)n * PC_NDELTAS * j->size;
}

/* The source whole: the plain formats' buffer, or read again from the
 * descriptor they read, hashed as the first read was when it was.
 */
static int source(pc__work_t *w, unsigned char **buf, const unsigned char **p) {
  pc__job_t *j = w->j;
  int err;

  *buf = NULL;
  if (w->whole != NULL) {
    *p = w->whole;
    return 0;
  }
  if ((*buf = malloc(j->size > 0 ? (size_t)j->size : 1)) == NULL)
    return -ENOMEM;
  if ((err = pc__read_full(w->fd, *buf, (size_t)j->size, 0)) != 0)
    return err;
  if (w->have_hash) {
    XXH128_hash_t x = XXH3_128bits(*buf, (size_t)j->size);
    if (x.low64 != w->h[0] || x.high64 != w->h[1])
      return PC_ECHANGED;
  }
  *p = *buf;
  return 0;
}

/* What the predecessor opened (st), reached as `way` says, tells before
 * it is read: 0, or why it is not (PC_ENOTREG; PC_DSKIP_PRIVATE when a
 * reader of the outputs of `file` could not read it; PC_DSKIP_CHANGED when
 * it is larger than `listed`, the size the memory estimate counted).
 */
static int judge_opened(pc__reach_t way, const struct stat *st,
                        const struct stat *file, uint64_t listed) {
  if (!S_ISREG(st->st_mode))
    return PC_ENOTREG;
  pc__reach_file(&way, st);
  if (!pc__reach_covers(&way, file))
    return PC_DSKIP_PRIVATE;
  return (uint64_t)st->st_size > listed ? PC_DSKIP_CHANGED : 0;
}

/* Reads predecessor p whole into *data (*n bytes), or says why not: 0
 * with *data set, a PC_DSKIP_* > 0 (not the job's failure), or a negative
 * code about the dictionary. Who could read it is judged again here, on
 * the descriptors opened (DIR's, each directory's below it, the file's):
 * what the listing saw may have changed since. And no more is read than
 * the listing's size, which the job's memory estimate counted.
 */
static int read_dict(pc__work_t *w, const pc__dictfile_t *p,
                     unsigned char **data, size_t *n, struct stat *st) {
  const pc__dictset_t *s = w->j->cfg->dicts;
  const char *slash = strrchr(p->rel, '/'), *base = p->rel;
  int dfd = s->fd[p->dir], fd, err = 0;
  pc__reach_t reach;

  *data = NULL;
  pc__reach_init(&reach);
  if (fstat(dfd, st) != 0)
    return PC__ERRNO();
  pc__reach_dir(&reach, st);
  if (slash != NULL) {
    char *dir = strndup(p->rel, (size_t)(slash - p->rel));
    if (dir == NULL)
      return -ENOMEM;
    dfd = pc__open_below_reach(dfd, dir, &reach);
    free(dir);
    if (dfd < 0)
      return dfd;
    base = slash + 1;
  }
  fd = openat(dfd, base,
              O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0)
    err = errno == ELOOP ? PC_DSKIP_LINK : PC__ERRNO();
  if (slash != NULL)
    close(dfd);
  if (err != 0)
    return err;
  err = fstat(fd, st) != 0 ? PC__ERRNO()
                           : judge_opened(reach, st, &w->st, p->size);
  if (err == 0 &&
      (*data = malloc(st->st_size > 0 ? (size_t)st->st_size : 1)) == NULL)
    err = -ENOMEM;
  if (err == 0 && (err = pc__read_full(fd, *data, (size_t)st->st_size, 0)) == 0)
    *n = (size_t)st->st_size;
  close(fd);
  if (err != 0) {
    free(*data);
    *data = NULL;
  }
  return err;
}

/* The smallest plain output kept, or the file's size: what a delta must
 * beat by the keep rule.
 */
static uint64_t best_plain(const pc__job_t *j) {
  uint64_t best = j->size;
  int f;

  for (f = 0; f < PC_NFORMATS; f++)
    if (j->res.out[f].state == PC_OUT_KEPT && j->res.out[f].size < best)
      best = j->res.out[f].size;
  return best;
}

static pc_delta_t *add(pc__job_t *j, int f, unsigned d, const pc__dictfile_t *p,
                       const unsigned char *h) {
  pc_delta_t *x = &j->res.deltas[j->res.ndeltas++];

  memset(x, 0, sizeof(*x));
  x->format = (pc_delta_format_t)f;
  x->from = d;
  x->dictionary = p->rel;
  if (h != NULL)
    memcpy(x->sha256, h, sizeof(x->sha256));
  return x;
}

/* The cache's key of delta format f of this content against dictionary
 * h: the content's hash folded with the dictionary's, the content's size,
 * a format byte no plain format has, the level. With --cache-dir a delta is
 * made once for a content and a dictionary, as a plain output is.
 */
static void delta_key(const pc__work_t *w, int f, const unsigned char *h,
                      pc__store_key_t *k) {
  unsigned char in[16 + PC__SHA256_LEN];
  XXH128_hash_t x;
  int i;

  for (i = 0; i < 8; i++) {
    in[i] = (unsigned char)(w->h[0] >> (8 * i));
    in[8 + i] = (unsigned char)(w->h[1] >> (8 * i));
  }
  memcpy(in + 16, h, PC__SHA256_LEN);
  x = XXH3_128bits(in, sizeof(in));
  memset(k, 0, sizeof(*k));
  k->h[0] = x.low64;
  k->h[1] = x.high64;
  k->size = w->j->size;
  k->format = (pc_format_t)(16 + f);
  k->level = level_of(w->j->cfg, f);
  k->engine = PC_GZIP_ZLIB;
}

/* Delta x from the cache into o: 1 when the cache decided it (a payload,
 * kept or not by the keep rule against `best`, or a rejection above a
 * limit at least ours), 0 to make it.
 */
static int delta_cached(const pc__work_t *w, const pc__store_key_t *k,
                        uint64_t best, pc_delta_t *x, pc__buf_t *o) {
  const pc__cfg_t *c = w->j->cfg;
  uint64_t lim = pc__keep_limit(best, c->spec.ratio_num, c->spec.ratio_den);
  pc__store_hit_t hit;
  int got = 1;

  if (!pc__store_get(c->cache, k, &hit))
    return 0;
  if (hit.rejected) {
    got = hit.limit >= lim;
    x->skip = PC_DSKIP_RATIO;
  } else if (!pc__keep(best, hit.len, c->spec.ratio_num, c->spec.ratio_den)) {
    x->skip = PC_DSKIP_RATIO;
  } else if (pc__buf_reserve(o, (size_t)hit.len) != 0 ||
             (hit.mem != NULL
                  ? (memcpy(o->data, hit.mem, (size_t)hit.len), 0)
                  : pc__store_read(&hit, 0, o->data, (size_t)hit.len)) != 0) {
    got = 0; /* made here instead */
  } else {
    o->len = (size_t)hit.len;
    x->size = hit.len;
  }
  pc__store_release(c->cache, &hit);
  return got;
}

/* Delta x from an identical file's made this run (deltashare.h), as
 * delta_cached() takes one from the cache: 1 when that decided it.
 */
static int delta_shared(const pc__work_t *w, const pc__store_key_t *k,
                        uint64_t best, pc_delta_t *x, pc__buf_t *o) {
  const pc__cfg_t *c = w->j->cfg;
  uint64_t lim = pc__keep_limit(best, c->spec.ratio_num, c->spec.ratio_den);
  uint64_t limit = 0;
  int kept = 0;

  if (!pc__dshare_get(c->dshare, k, &kept, &limit, o))
    return 0;
  if (!kept) {
    x->skip = PC_DSKIP_RATIO;
    return limit >= lim;
  }
  if (!pc__keep(best, o->len, c->spec.ratio_num, c->spec.ratio_den))
    x->skip = PC_DSKIP_RATIO;
  else
    x->size = o->len;
  return 1;
}

/* Every delta format against predecessor p (from DIR d), whose bytes are
 * dict[0..dn) and SHA-256 h.
 */
static int against(pc__work_t *w, unsigned d, const pc__dictfile_t *p,
                   const unsigned char *dict, size_t dn, const unsigned char *h,
                   const unsigned char *src) {
  pc__job_t *j = w->j;
  const pc__cfg_t *c = j->cfg;
  uint64_t best = best_plain(j);
  int f, err;

  for (f = 0; f < PC_NDELTAS; f++) {
    int cache = c->cache != NULL && w->have_hash && !c->dry_run;
    int share = c->dshare != NULL && w->have_hash;
    pc__store_key_t k;
    pc_delta_t *x;
    pc__buf_t *o;
    if (!(c->deltas & PC_DELTA_BIT(f)))
      continue;
    x = add(j, f, d, p, h);
    o = &w->dw->out[j->res.ndeltas - 1];
    if (dn == j->size && memcmp(dict, src, dn) == 0) {
      x->skip = PC_DSKIP_IDENTICAL;
      continue;
    }
    if (pc__delta_fits((pc_delta_format_t)f, dn) != 0) {
      x->skip = PC_DSKIP_WINDOW;
      continue;
    }
    delta_key(w, f, h, &k); /* meaningful only with have_hash */
    if (share && delta_shared(w, &k, best, x, o)) {
      if (x->skip != PC_DSKIP_NONE)
        pc__buf_free(o);
      continue;
    }
    if (cache) {
      if (delta_cached(w, &k, best, x, o)) {
        if (x->skip != PC_DSKIP_NONE)
          pc__buf_free(o);
        continue;
      }
      x->skip = PC_DSKIP_NONE;
      o->len = 0;
    }
    if (pc__job_stopping(j))
      return PC_EINTERRUPTED;
    err = pc__delta_compress((pc_delta_format_t)f, level_of(c, f), dict, dn, h,
                             src, (size_t)j->size, o);
    if (err == PC_EDICTWINDOW) {
      x->skip = PC_DSKIP_WINDOW;
      continue;
    }
    if (err != 0)
      return err;
    if (!pc__keep(best, o->len, c->spec.ratio_num, c->spec.ratio_den)) {
      uint64_t lim = pc__keep_limit(best, c->spec.ratio_num, c->spec.ratio_den);
      x->skip = PC_DSKIP_RATIO;
      if (share)
        pc__dshare_put(c->dshare, &k, 0, NULL, 0, lim);
      if (cache) /* a rejection: what was over our limit stays over it */
        j->res.cache_puts +=
            (unsigned)pc__store_put(c->cache, &k, 0, NULL, -1, 0, lim);
      pc__buf_free(o);
      continue;
    }
    if (share)
      pc__dshare_put(c->dshare, &k, 1, o->data, o->len, 0);
    if (cache)
      j->res.cache_puts +=
          (unsigned)pc__store_put(c->cache, &k, 1, o->data, -1, o->len, 0);
    x->size = o->len;
  }
  return 0;
}

/* Every delta against predecessor p (DIR d) not made, for `why`: a
 * PC_DSKIP_* > 0, or the negative code met reading it (PC_DSKIP_ERROR).
 * Nothing of p was read, or nothing is said of it: no hash, size or mtime.
 */
static void not_made(pc__job_t *j, unsigned d, const pc__dictfile_t *p,
                     int why) {
  int k;

  for (k = 0; k < PC_NDELTAS; k++) {
    pc_delta_t *x;
    if (!(j->cfg->deltas & PC_DELTA_BIT(k)))
      continue;
    x = add(j, k, d, p, NULL);
    x->skip = why > 0 ? (pc_delta_skip_t)why : PC_DSKIP_ERROR;
    x->err = why < 0 ? why : 0;
  }
}

/* The deltas against predecessor p (DIR d), read into dict[0..dn) as st
 * says, SHA-256 h; seen[0..*nseen) the hashes of the earlier DIRs'.
 */
static int against_read(pc__work_t *w, unsigned d, const pc__dictfile_t *p,
                        const unsigned char *dict, size_t dn,
                        const struct stat *st, const unsigned char *src,
                        unsigned char (*seen)[PC__SHA256_LEN],
                        unsigned *nseen) {
  pc__job_t *j = w->j;
  unsigned char h[PC__SHA256_LEN];
  unsigned k, first = j->res.ndeltas;
  int err = 0;

  pc__sha256(dict, dn, h);
  for (k = 0; k < *nseen && memcmp(seen[k], h, sizeof(h)) != 0; k++)
    ;
  if (k == *nseen) {
    memcpy(seen[(*nseen)++], h, sizeof(h));
    err = against(w, d, p, dict, dn, h, src);
  } else { /* an earlier DIR gave these bytes: its delta serves both */
    for (k = 0; k < PC_NDELTAS; k++)
      if (j->cfg->deltas & PC_DELTA_BIT(k))
        add(j, (int)k, d, p, h)->skip = PC_DSKIP_SAME;
  }
  for (; first < j->res.ndeltas; first++) {
    j->res.dstats[first].size = (uint64_t)st->st_size;
    j->res.dstats[first].mtime_ns = pc__ns(st->st_mtim);
  }
  return err;
}

int pc__deltas_make(pc__work_t *w) {
  pc__job_t *j = w->j;
  const char *base = j->fullpath + pc__job_base_off(j);
  unsigned char *own = NULL, seen[PC_DICT_DIRS_MAX][PC__SHA256_LEN];
  const unsigned char *src = NULL;
  pc_delta_skip_t why[PC_DICT_DIRS_MAX];
  unsigned d, nseen = 0, nread = 0;
  int err = 0;

  /* A job runs again after a wait (dedupe) or a reschedule: anything
   * an earlier pass recorded goes.
   */
  free(j->res.deltas);
  free(j->res.dstats);
  j->res.deltas = NULL;
  j->res.dstats = NULL;
  j->res.ndeltas = 0;
  for (d = 0; d < PC_DICT_DIRS_MAX && j->preds[d] == NULL; d++)
    ;
  if (d == PC_DICT_DIRS_MAX || j->cfg->deltas == 0 || j->size == 0)
    return 0;
  if ((w->dw = calloc(1, sizeof(*w->dw))) == NULL ||
      (j->res.deltas = calloc(MAX_DELTAS, sizeof(*j->res.deltas))) == NULL ||
      (j->res.dstats = calloc(MAX_DELTAS, sizeof(*j->res.dstats))) == NULL)
    return pc__job_failed(j, -ENOMEM, NULL);
  /* What the listing says first: a predecessor it refuses is not opened,
   * and without one to read the source is not read again either.
   */
  for (d = 0; d < PC_DICT_DIRS_MAX; d++) {
    why[d] = j->preds[d] == NULL
                 ? PC_DSKIP_NONE
                 : pc__dictset_skip(j->preds[d], base, j->size, &w->st);
    nread += j->preds[d] != NULL && why[d] == PC_DSKIP_NONE;
  }
  if (nread > 0 && (err = source(w, &own, &src)) != 0) {
    free(own);
    return pc__job_failed(j, err, NULL);
  }
  for (d = 0; err == 0 && d < PC_DICT_DIRS_MAX; d++) {
    const pc__dictfile_t *p = j->preds[d];
    unsigned char *dict;
    struct stat st;
    size_t dn = 0;
    int r;
    if (p == NULL)
      continue;
    memset(&st, 0, sizeof(st));
    r = why[d] != PC_DSKIP_NONE ? (int)why[d]
                                : read_dict(w, p, &dict, &dn, &st);
    if (r != 0) {
      /* Not the file's failure: its plain outputs stand; the record
       * says why this delta is missing (an error with its code).
       */
      not_made(j, d, p, r);
      if (r == -ENOMEM)
        err = r;
      continue;
    }
    err = against_read(w, d, p, dict, dn, &st, src, seen, &nseen);
    free(dict);
  }
  free(own);
  if (err != 0)
    return pc__job_failed(j, err, NULL);
  return 0;
}

/* FILE.<id>.ext of delta x: its name in the output directory (`name`,
 * NAME_MAX) and, when `full` is not NULL, its full name for messages
 * (malloc'd). 0 or -ENAMETOOLONG / -ENOMEM.
 */
static int delta_name(const pc__job_t *j, const pc_delta_t *x,
                      char name[NAME_MAX + 1], char **full) {
  const char *base = j->fullpath + pc__job_base_off(j);

  if (pc__delta_name(base, x->sha256, x->format, name) != 0)
    return -ENAMETOOLONG;
  if (full != NULL) {
    const char *od = j->cfg->spec.output_dir;
    char *dir = od != NULL ? pc__path_join(od, j->fullpath + j->rel_off)
                           : pc__strdup(j->fullpath);
    size_t n;
    if (dir == NULL)
      return -ENOMEM;
    n = strlen(dir) + strlen(name) - strlen(base) + 1;
    if ((*full = malloc(n)) != NULL)
      snprintf(*full, n, "%s%s", dir, name + strlen(base));
    free(dir);
    if (*full == NULL)
      return -ENOMEM;
  }
  return 0;
}

/* Writes kept delta k (the output protocol: a temp, the source's mode and
 * times, a rename). 0 or the job's error.
 */
static int write_delta(pc__work_t *w, unsigned k) {
  pc__job_t *j = w->j;
  pc_delta_t *x = &j->res.deltas[k];
  pc__buf_t *o = &w->dw->out[k];
  pc__fmt_t s;
  char name[NAME_MAX + 1], *full = NULL;
  struct stat ost, meta = w->st;
  int err;

  if ((err = delta_name(j, x, name, &full)) != 0)
    return pc__job_failed(j, err, full);
  meta.st_mtim = pc__delta_mtime(w->st.st_mtim, x->from, (int)x->format);
  x->action = PC_ACT_CREATE;
  if (w->odir.fd >= 0 &&
      fstatat(w->odir.fd, name, &ost, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(ost.st_mode))
      err = PC_EOUTDIR;
    x->action = S_ISREG(ost.st_mode) && (uint64_t)ost.st_size == o->len &&
                        pc__ns(ost.st_mtim) == pc__ns(meta.st_mtim)
                    ? PC_ACT_REFRESH
                    : PC_ACT_REPLACE;
  }
  if (err == 0 && !j->cfg->dry_run) {
    memset(&s, 0, sizeof(s));
    s.out = (pc__out_t)PC__OUT_INIT;
    s.base = name;
    s.fresh = x->action == PC_ACT_CREATE; /* looked up just now */
    if ((err = pc__work_out_open(w, &s)) == 0 &&
        (err = pc__out_write(&s.out, o->data, o->len)) == 0)
      err = pc__out_commit(&s.out, name, &meta, j->cfg->fsync);
    pc__out_discard(&s.out);
  }
  if (err != 0) {
    x->action = PC_ACT_NONE;
    pc__job_fail(j, err, full);
  }
  free(full);
  return err;
}

/* 1 when `name` is a kept delta's of the job. */
static int kept_name(const pc__job_t *j, const char *name) {
  char mine[NAME_MAX + 1];
  unsigned k;

  for (k = 0; k < j->res.ndeltas; k++)
    if (j->res.deltas[k].skip == PC_DSKIP_NONE &&
        j->res.deltas[k].action != PC_ACT_NONE &&
        delta_name(j, &j->res.deltas[k], mine, NULL) == 0 &&
        strcmp(mine, name) == 0)
      return 1;
  return 0;
}

/* Room for `more` deltas past res.ndeltas, their dstats zero (nothing
 * read). 0 or -ENOMEM.
 */
static int grow(pc__job_t *j, unsigned more) {
  size_t n = (size_t)j->res.ndeltas + more;
  pc_delta_t *d;
  pc__dstat_t *s;

  if ((d = realloc(j->res.deltas, n * sizeof(*d))) == NULL)
    return -ENOMEM;
  j->res.deltas = d;
  if ((s = realloc(j->res.dstats, n * sizeof(*s))) == NULL)
    return -ENOMEM;
  j->res.dstats = s;
  memset(s + j->res.ndeltas, 0, more * sizeof(*s));
  return 0;
}

/* Removes the old delta outputs not kept, each recorded as removed. */
static void remove_stale(pc__work_t *w) {
  pc__job_t *j = w->j;
  unsigned nold = 0;
  char **n;

  for (n = j->old_deltas; n != NULL && *n != NULL; n++)
    nold++;
  if (nold == 0 || w->odir.fd < 0)
    return;
  if (grow(j, nold) != 0) {
    pc__job_fail(j, -ENOMEM, NULL);
    return;
  }
  for (n = j->old_deltas; *n != NULL; n++) {
    size_t base;
    pc_delta_t *x;
    struct stat ost;
    if (kept_name(j, *n))
      continue;
    /* A directory of that name is not ours to remove, as settle.c says
     * of the plain outputs' names. A run asked for no deltas removes only
     * those that no longer fit the file: its mtime moved since (delta.h).
     */
    if (fstatat(w->odir.fd, *n, &ost, AT_SYMLINK_NOFOLLOW) == 0 &&
        (S_ISDIR(ost.st_mode) ||
         (j->cfg->deltas == 0 && S_ISREG(ost.st_mode) &&
          pc__delta_mtime_fits(w->st.st_mtim, ost.st_mtim))))
      continue;
    if (!j->cfg->dry_run && unlinkat(w->odir.fd, *n, 0) != 0) {
      if (errno != ENOENT)
        pc__job_fail(j, PC__ERRNO(), *n);
      continue;
    }
    x = &j->res.deltas[j->res.ndeltas++];
    memset(x, 0, sizeof(*x));
    /* Its format, and its name's id: the first 8 bytes of the hash it was
     * made against (pc__select_old_deltas() listed only delta names).
     */
    (void)pc__delta_output_name(*n, strlen(*n), &base, &x->format, x->sha256);
    x->skip = PC_DSKIP_RATIO; /* not kept: no pairing gives it now */
    x->action = PC_ACT_REMOVE;
    x->from = UINT32_MAX; /* none */
  }
}

void pc__deltas_settle(pc__work_t *w) {
  pc__job_t *j = w->j;
  unsigned k;

  if (j->res.err == 0 && j->skip == PC_SKIP_NONE && w->dw != NULL)
    for (k = 0; k < j->res.ndeltas; k++)
      if (j->res.deltas[k].skip == PC_DSKIP_NONE && write_delta(w, k) != 0)
        break;
  /* A stop or a file gone: nothing is known of its outputs; leave them. */
  if (j->res.err == PC_EINTERRUPTED || j->res.err == -ENOENT)
    return;
  remove_stale(w);
}

void pc__deltas_free(pc__work_t *w) {
  unsigned k;

  if (w->dw == NULL)
    return;
  for (k = 0; k < MAX_DELTAS; k++)
    pc__buf_free(&w->dw->out[k]);
  free(w->dw);
  w->dw = NULL;
}
