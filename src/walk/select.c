/* The filter chain (select.h): names, listings and stats in, verdicts out.
 * Nothing here calls the system: the unit test (tests/unit/select_test.c)
 * runs it on made-up entries.
 */
#include "walk/select.h"

#include "store/storeid.h"
#include "common/glob.h"
#include "common/names.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* opts->only, sorted and each name once, for pc__select_listed(). */
static int sort_only(pc__select_t *s, const pc_options_t *o) {
  size_t k, n = 0;

  if (o->only == NULL)
    return 0;
  if ((s->only = malloc((o->nonly + 1) * sizeof(*s->only))) == NULL)
    return -ENOMEM;
  if (o->nonly > 0) {
    memcpy(s->only, o->only, o->nonly * sizeof(*s->only));
    qsort(s->only, o->nonly, sizeof(*s->only), cmp_name);
  }
  for (k = 0; k < o->nonly; k++)
    if (n == 0 || strcmp(s->only[n - 1], s->only[k]) != 0)
      s->only[n++] = s->only[k];
  s->nonly = n;
  return 0;
}

int pc__select_init(pc__select_t *s, const pc_options_t *o,
                    const char *const *skip_ext, size_t nskip_ext) {
  size_t k;

  memset(s, 0, sizeof(*s));
  s->opts = o;
  s->formats = o->formats;
  s->skip_ext = skip_ext;
  s->nskip_ext = nskip_ext;
  s->skip_len = calloc(nskip_ext + 1, sizeof(*s->skip_len));
  if (s->skip_len == NULL)
    return -ENOMEM;
  for (k = 0; k < nskip_ext; k++)
    s->skip_len[k] = strlen(skip_ext[k]);
  return sort_only(s, o);
}

void pc__select_free(pc__select_t *s) {
  free(s->skip_len);
  s->skip_len = NULL;
  free(s->only);
  s->only = NULL;
  s->nonly = 0;
}

/* 1 when name sorts before rel + "/" (rel: len bytes). */
static int before_dir(const char *name, const char *rel, size_t len) {
  int c = strncmp(name, rel, len);
  return c < 0 || (c == 0 && (unsigned char)name[len] < '/');
}

int pc__select_listed(const pc__select_t *s, const char *rel, size_t *k) {
  size_t len = strlen(rel), lo = 0, hi = s->nonly, mid;

  *k = SIZE_MAX;
  if (s->only == NULL)
    return 1;
  while (lo < hi) { /* the first name not before rel */
    mid = lo + (hi - lo) / 2;
    if (strcmp(s->only[mid], rel) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < s->nonly && strcmp(s->only[lo], rel) == 0) {
    *k = lo;
    return 1;
  }
  hi = s->nonly;
  while (lo < hi) { /* the first name not before rel + "/" */
    mid = lo + (hi - lo) / 2;
    if (before_dir(s->only[mid], rel, len))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->nonly && strncmp(s->only[lo], rel, len) == 0 &&
         s->only[lo][len] == '/';
}

void pc__select_set_manifest(pc__select_t *s, const char *base,
                             const pc__devino_t *dir) {
  s->man_base = dir != NULL ? base : NULL;
  s->man_base_len = dir != NULL ? strlen(base) : 0;
  if (dir != NULL)
    s->man_dir = *dir;
}

void pc__select_set_manifest_file(pc__select_t *s, pc__devino_t id) {
  s->man_known = 1;
  s->man = id;
}

void pc__select_skip(pc__select_t *s, pc__devino_t dir) {
  /* Two callers, each once: the cache's directory and --output-dir. */
  if (s->nskip_dirs < PC__ARRAY_SIZE(s->skip_dirs))
    s->skip_dirs[s->nskip_dirs++] = dir;
}

void pc__select_set_cache_dir(pc__select_t *s, pc__devino_t dir) {
  pc__select_skip(s, dir);
  s->cache_known = 1;
  s->cache_dir = dir;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Steps taken from an entry to its neighbours before a binary search. */
#define NEAR 8

/* 1 if `key` is in the listing. `key` and the entry at ls->at share their
 * first `plen` bytes (one is a prefix of the other), and the names that
 * start with those bytes lie together in a sorted listing, from the
 * shorter one on: the few steps from ls->at (by `dir`, +1 or -1) within
 * that run usually settle it, without a search of the whole directory.
 */
static int listed(const pc__listing_t *ls, const char *key, size_t plen,
                  int dir) {
  size_t k = ls->at, steps;
  char *const *hit;
  for (steps = 0; steps < NEAR; steps++) {
    int c;
    if ((dir < 0 && k == 0) || (dir > 0 && k + 1 >= ls->n))
      return 0; /* the listing ends within the run */
    k = dir < 0 ? k - 1 : k + 1;
    if (strncmp(ls->names[k], key, plen) != 0)
      return 0; /* past the run */
    if ((c = strcmp(ls->names[k], key)) == 0)
      return 1;
    if ((dir > 0 && c > 0) || (dir < 0 && c < 0))
      return 0; /* past where it would be */
  }
  hit = bsearch(&key, ls->names, ls->n, sizeof(*ls->names), cmp_names);
  return hit != NULL;
}

/* 1 if the entry (at ls->at) is FILE.gz/.br/.zst and FILE is listed too. */
static int is_own_output(const pc__sel_entry_t *e) {
  int f = pc__output_format_of(e->name, e->len);
  char key[NAME_MAX + 1];
  size_t base;

  if (e->ls == NULL || e->len > NAME_MAX)
    return 0;
  if (f >= 0)
    base = e->len - strlen(pc_format_ext((pc_format_t)f)) - 1;
  else if (!pc__delta_output_name(e->name, e->len, &base, NULL, NULL))
    return 0;
  memcpy(key, e->name, base);
  key[base] = '\0';
  return listed(e->ls, key, base, -1); /* FILE sorts before FILE.ext */
}

int pc__select_old_deltas(const pc__sel_entry_t *e, char ***names) {
  const pc__listing_t *ls = e->outs != NULL ? e->outs : e->ls;
  char **v = NULL;
  size_t lo = 0, hi, n = 0, cap = 0, b;
  char probe[NAME_MAX + 2];

  *names = NULL;
  if (ls == NULL || ls->n == 0 || e->len > NAME_MAX)
    return 0;
  /* NAME.* sort together, after NAME: from the first name >= "NAME.". */
  memcpy(probe, e->name, e->len);
  probe[e->len] = '.';
  probe[e->len + 1] = '\0';
  hi = ls->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(ls->names[mid], probe) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (; lo < ls->n && strncmp(ls->names[lo], e->name, e->len) == 0 &&
         ls->names[lo][e->len] == '.';
       lo++) {
    const char *nm = ls->names[lo];
    if (!pc__delta_output_name(nm, strlen(nm), &b, NULL, NULL) || b != e->len)
      continue;
    if (PC__GROW(v, n + 1, cap, 4) != 0 || (v[n] = pc__strdup(nm)) == NULL) {
      while (n > 0)
        free(v[--n]);
      free(v);
      return -ENOMEM;
    }
    v[++n] = NULL;
  }
  *names = v;
  return 0;
}

unsigned pc__select_absent(const pc__select_t *s, const pc__sel_entry_t *e) {
  char key[NAME_MAX + 1];
  unsigned absent = 0;
  int f;

  if (e->ls == NULL && e->outs == NULL)
    return 0;
  for (f = 0; f < PC_NFORMATS; f++) {
    /* A name too long to exist is left to the job's stat to report. */
    if (!(s->formats & PC_FMT_BIT(f)) ||
        pc__output_name(e->name, e->len, (pc_format_t)f, key) != 0)
      continue;
    if (e->outs != NULL) {
      /* Another directory's listing: no neighbour to start from. */
      const char *k = key;
      if (e->outs->n == 0 || /* names may be NULL: not for bsearch() */
          bsearch(&k, e->outs->names, e->outs->n, sizeof(*e->outs->names),
                  cmp_names) == NULL)
        absent |= PC_FMT_BIT(f);
    } else if (!listed(e->ls, key, e->len, +1)) { /* NAME.ext after NAME */
      absent |= PC_FMT_BIT(f);
    }
  }
  return absent;
}

static int on_skip_list(const pc__select_t *s, const char *name, size_t len) {
  size_t k;
  int last;
  if (len == 0)
    return 0;
  last = tolower((unsigned char)name[len - 1]);
  for (k = 0; k < s->nskip_ext; k++) {
    size_t el = s->skip_len[k];
    /* The last byte first: it rules out nearly every entry. */
    if (el > 0 && len > el &&
        tolower((unsigned char)s->skip_ext[k][el - 1]) == last &&
        name[len - el - 1] == '.' &&
        strcasecmp(name + len - el, s->skip_ext[k]) == 0)
      return 1;
  }
  return 0;
}

static int excluded(const pc__select_t *s, const char *rel) {
  const pc_options_t *o = s->opts;
  size_t k;
  for (k = 0; k < o->nexclude; k++)
    if (pc__glob_match(o->exclude[k], rel))
      return 1;
  if (o->ninclude == 0)
    return 0;
  for (k = 0; k < o->ninclude; k++)
    if (pc__glob_match(o->include[k], rel))
      return 0;
  return 1;
}

/* The hash of the bytes of the path alone, so every shard, on any machine,
 * agrees.
 */
int pc__select_in_shard(const pc__select_t *s, const char *rel, size_t len) {
  const pc_options_t *o = s->opts;
  if (o->shard_count == 0)
    return 1;
  return XXH3_64bits(rel, len) % o->shard_count == o->shard_index - 1u;
}

/* 1 if the temp file e->name (".NAME.EXT.XXXXXX.tmp") belongs to a source
 * this shard takes: that shard reaps it, and only that one.
 */
static int owns_temp(const pc__select_t *s, const pc__sel_entry_t *e) {
  size_t outlen, srclen, dl = e->rel_len - e->len; /* "DIR/" or "" */
  char *src;
  int f, mine;

  if (s->opts->shard_count == 0)
    return 1;
  /* "NAME.EXT": between the leading dot and ".XXXXXX.tmp". */
  if (!pc__temp_of(e->name, e->len, &outlen) ||
      (f = pc__output_format_of(e->name + 1, outlen)) < 0)
    return 0;
  srclen = outlen - strlen(pc_format_ext((pc_format_t)f)) - 1;
  /* A name cut to fit NAME_MAX (PC__TMP_CUT before the extension) no
   * longer names its source: leave it to a run without --shard.
   */
  if (srclen > 0 && e->name[srclen] == PC__TMP_CUT)
    return 0;
  if ((src = malloc(dl + srclen + 1)) == NULL)
    return 0;
  memcpy(src, e->rel, dl);
  memcpy(src + dl, e->name + 1, srclen);
  src[dl + srclen] = '\0';
  mine = pc__select_in_shard(s, src, dl + srclen);
  free(src);
  return mine;
}

/* 1 if e->name is the manifest's base name, 2 if it is a temp of it
 * (".NAME.XXXXXX.tmp") that a run killed while writing it may have left;
 * either only in the manifest's directory: the same name elsewhere is any
 * other file. The (dev, ino) check in pc__select_file() knows only the file
 * that was there when the run started; this knows one created or replaced
 * since, by another run, too.
 */
static int manifest_name(const pc__select_t *s, const pc__sel_entry_t *e) {
  size_t bl = s->man_base_len, fl;
  int temp = pc__temp_of(e->name, e->len, &fl) && fl == bl &&
             memcmp(e->name + 1, s->man_base, bl) == 0;

  if (!temp && (e->len != bl || memcmp(e->name, s->man_base, bl) != 0))
    return 0;
  if (e->dir.dev != s->man_dir.dev || e->dir.ino != s->man_dir.ino)
    return 0;
  return temp ? 2 : 1;
}

/* 1 if e is the cache store or one of SQLite's files beside it, in the
 * cache's directory (a PATH itself: the directory is walked).
 */
static int cache_file(const pc__select_t *s, const pc__sel_entry_t *e) {
  static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
  size_t n = strlen(PC__STORE_FILE), k;

  if (!s->cache_known || e->dir.dev != s->cache_dir.dev ||
      e->dir.ino != s->cache_dir.ino || e->len < n ||
      memcmp(e->name, PC__STORE_FILE, n) != 0)
    return 0;
  for (k = 0; k < PC__ARRAY_SIZE(sfx); k++)
    if (strcmp(e->name + n, sfx[k]) == 0)
      return 1;
  return 0;
}

pc__verdict_t pc__select_early(const pc__select_t *s, const pc__sel_entry_t *e,
                               int is_reg) {
  if (is_reg && is_own_output(e))
    return PC__SEL_OWN_OUTPUT;
  if (cache_file(s, e))
    return PC__SEL_CACHE;
  if (s->man_base != NULL) {
    switch (manifest_name(s, e)) {
    case 1:
      return PC__SEL_MANIFEST;
    case 2:
      return PC__SEL_MANIFEST_TEMP;
    }
  }
  return PC__SEL_NEXT;
}

pc__verdict_t pc__select_file(const pc__select_t *s, const pc__sel_entry_t *e,
                              const struct stat *st) {
  /* A temp file of ours (the entry itself, not a link's target): never an
   * input.
   */
  if ((st == NULL || (!e->link && S_ISREG(st->st_mode))) &&
      pc__is_temp_name(e->name))
    return owns_temp(s, e) ? PC__SEL_TEMP_OURS : PC__SEL_TEMP;
  if (!pc__select_in_shard(s, e->rel, e->rel_len))
    return PC__SEL_OTHER_SHARD;
  if (st != NULL && !S_ISREG(st->st_mode))
    return PC__SEL_SPECIAL;
  if (st != NULL && s->man_known && st->st_dev == s->man.dev &&
      st->st_ino == s->man.ino)
    return PC__SEL_MANIFEST;
  if (is_own_output(e))
    return PC__SEL_OWN_OUTPUT;
  if (excluded(s, e->rel))
    return PC__SEL_EXCLUDED;
  if (pc__output_format_of(e->name, e->len) >= 0 ||
      on_skip_list(s, e->name, e->len))
    return PC__SEL_EXTENSION;
  return PC__SEL_SOURCE;
}

int pc__select_skip_dir(const pc__select_t *s, const struct stat *st) {
  size_t k;
  for (k = 0; k < s->nskip_dirs; k++)
    if (s->skip_dirs[k].dev == st->st_dev && s->skip_dirs[k].ino == st->st_ino)
      return 1;
  return 0;
}

pc_skip_t pc__select_size(const pc__select_t *s, uint64_t size) {
  if (size == 0)
    return PC_SKIP_EMPTY;
  if (size < s->opts->min_size)
    return PC_SKIP_MIN_SIZE;
  return PC_SKIP_NONE;
}
