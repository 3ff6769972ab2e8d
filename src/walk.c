/* The walk: PATHs -> files, on the loop thread, a slice at a time.
 *
 * A directory is read whole and sorted before any of its entries is looked
 * at (a snapshot: outputs written into it meanwhile are not walked), then
 * its entries are visited `budget` at a time so that finished jobs are
 * collected and new ones submitted while a large tree is still being read.
 * Only one directory is open at any time; those still to read wait on a
 * stack as relative paths.
 */
#include "run.h"

#include "out.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <xxhash.h>

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds (dev, ino) to the set of directories entered. 1 if it was new, 0 if
 * seen already, -ENOMEM.
 */
static int seen_add(pc__run_t *r, dev_t dev, ino_t ino) {
  size_t i, mask;

  if (r->nseen * 2 >= r->capseen) {
    size_t ncap = r->capseen ? r->capseen * 2 : 256, k;
    pc__devino_t *n = calloc(ncap, sizeof(*n));
    if (n == NULL)
      return -ENOMEM;
    for (k = 0; k < r->capseen; k++) {
      pc__devino_t e = r->seen[k];
      if (e.dev == 0 && e.ino == 0)
        continue;
      for (i = (size_t)(e.ino * 0x9e3779b97f4a7c15u ^ e.dev) & (ncap - 1);
           n[i].dev || n[i].ino; i = (i + 1) & (ncap - 1))
        ;
      n[i] = e;
    }
    free(r->seen);
    r->seen = n;
    r->capseen = ncap;
  }
  mask = r->capseen - 1;
  for (i = (size_t)(ino * 0x9e3779b97f4a7c15u ^ dev) & mask;
       r->seen[i].dev || r->seen[i].ino; i = (i + 1) & mask)
    if (r->seen[i].dev == dev && r->seen[i].ino == ino)
      return 0;
  r->seen[i].dev = dev;
  r->seen[i].ino = ino;
  r->nseen++;
  return 1;
}

static int push_dir(pc__run_t *r, uint32_t root, char *rel) {
  if (r->ndirs == r->capdirs) {
    size_t ncap = r->capdirs ? r->capdirs * 2 : 64;
    pc__dir_t *n = realloc(r->dirs, ncap * sizeof(*n));
    if (n == NULL) {
      free(rel);
      return -ENOMEM;
    }
    r->dirs = n;
    r->capdirs = ncap;
  }
  r->dirs[r->ndirs].root = root;
  r->dirs[r->ndirs].rel = rel;
  r->ndirs++;
  return 0;
}

static int on_skip_list(const pc__run_t *r, const char *name, size_t len) {
  size_t k;
  int last;
  if (len == 0)
    return 0;
  last = tolower((unsigned char)name[len - 1]);
  for (k = 0; k < r->nskip_ext; k++) {
    size_t el = r->skip_len[k];
    /* The last byte first: it rules out nearly every entry. */
    if (el > 0 && len > el &&
        tolower((unsigned char)r->skip_ext[k][el - 1]) == last &&
        name[len - el - 1] == '.' &&
        strcasecmp(name + len - el, r->skip_ext[k]) == 0)
      return 1;
  }
  return 0;
}

static int excluded(const pc__run_t *r, const char *rel) {
  const pc_options_t *o = r->opts;
  size_t k;
  for (k = 0; k < o->nexclude; k++)
    if (pc_glob_match(o->exclude[k], rel))
      return 1;
  if (o->ninclude == 0)
    return 0;
  for (k = 0; k < o->ninclude; k++)
    if (pc_glob_match(o->include[k], rel))
      return 0;
  return 1;
}

/* 1 if the file at `rel` (its path below the root) is this run's to take:
 * always without --shard. The hash of the bytes of the path alone, so every
 * shard, on any machine, agrees.
 */
static int in_shard(const pc__run_t *r, const char *rel, size_t len) {
  const pc_options_t *o = r->opts;
  if (o->shard_count == 0)
    return 1;
  return XXH3_64bits(rel, len) % o->shard_count == o->shard_index - 1u;
}

/* 1 if the temp file `name` (".NAME.EXT.XXXXXX.tmp", in the directory
 * `drel`) belongs to a source this shard takes.
 */
static int owns_temp(const pc__run_t *r, const char *drel, const char *name,
                     size_t len) {
  /* "NAME.EXT": between the leading dot and ".XXXXXX.tmp". */
  size_t outlen = len - 1 - (1 + PC__TMP_RAND) - (sizeof(PC__TMP_SUFFIX) - 1);
  int f = pc__output_format_of(name + 1, outlen);
  size_t srclen, dl = strlen(drel);
  char *src;
  int mine;

  if (r->opts->shard_count == 0)
    return 1;
  if (f < 0)
    return 0;
  srclen = outlen - strlen(pc_format_ext((pc_format_t)f)) - 1;
  /* A name cut to fit NAME_MAX (ending in '~') no longer names its source:
   * leave it to a run without --shard.
   */
  if (srclen > 0 && name[srclen] == '~')
    return 0;
  if ((src = malloc(dl + 1 + srclen + 1)) == NULL)
    return 0;
  memcpy(src, drel, dl);
  if (dl > 0)
    src[dl++] = '/';
  memcpy(src + dl, name + 1, srclen);
  src[dl + srclen] = '\0';
  mine = in_shard(r, src, dl + srclen);
  free(src);
  return mine;
}

/* A directory's listing, sorted by name bytes (each followed by its d_type
 * after the NUL), and where in it the entry being visited is.
 */
typedef struct listing {
  char **names;
  size_t n, at;
} listing_t;

/* Steps taken from an entry to its neighbours before a binary search. */
#define NEAR 8

/* 1 if `key` is in the listing. `key` and the entry at ls->at share their
 * first `plen` bytes (one is a prefix of the other), and the names that
 * start with those bytes lie together in a sorted listing, from the
 * shorter one on: the few steps from ls->at (by `dir`, +1 or -1) within
 * that run usually settle it, without a search of the whole directory.
 */
static int listed(const listing_t *ls, const char *key, size_t plen,
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

/* 1 if `name` (at ls->at) is FILE.gz/.br/.zst and FILE is listed too. */
static int is_own_output(const char *name, size_t len,
                         const listing_t *ls) {
  int f = pc__output_format_of(name, len);
  char key[NAME_MAX + 1];
  size_t base;

  if (f < 0 || ls == NULL || len > NAME_MAX)
    return 0;
  base = len - strlen(pc_format_ext((pc_format_t)f)) - 1;
  memcpy(key, name, base);
  key[base] = '\0';
  return listed(ls, key, base, -1); /* FILE sorts before FILE.ext */
}

/* The enabled formats whose output name (NAME.ext) the directory's sorted
 * listing lacks; none when there is no listing (a file PATH).
 */
static unsigned absent_outputs(const pc__run_t *r, const char *name,
                               size_t len, const listing_t *ls) {
  char key[NAME_MAX + 1];
  unsigned absent = 0;
  int f;

  if (ls == NULL)
    return 0;
  for (f = 0; f < PC_NFORMATS; f++) {
    const char *ext = pc_format_ext((pc_format_t)f);
    size_t el = strlen(ext);
    /* A name too long to exist is left to the job's stat to report. */
    if (!(r->cfg.formats & PC_FMT_BIT(f)) || len + 1 + el > NAME_MAX)
      continue;
    memcpy(key, name, len);
    key[len] = '.';
    memcpy(key + len + 1, ext, el + 1);
    if (!listed(ls, key, len, +1)) /* NAME.ext sorts after NAME */
      absent |= PC_FMT_BIT(f);
  }
  return absent;
}

/* The earlier manifest's record of this file when it still holds
 * (pc__outputs_current), else NULL.
 */
static const pc__prev_rec_t *is_unchanged(pc__run_t *r, uint32_t root,
                                           int dfd, const char *name,
                                           const char *rel,
                                           const struct stat *st,
                                           unsigned absent) {
  const pc__prev_rec_t *p = pc__prev_next(r->prev, root, rel, &r->prev_hint);
  if (p == NULL ||
      !pc__outputs_current(r->cfg.formats, p, dfd, name, st, absent))
    return NULL;
  return p;
}

/* A regular file (per the listing), not an output of ours, that the
 * earlier manifest records and whose name passes every filter: handed to
 * a worker without a stat, which checks it there (job.h). 1 when it was.
 */
static int hand_on_unstatted(pc__run_t *r, uint32_t root, const char *name,
                             size_t len, char **full, const char *rel,
                             const listing_t *ls) {
  const pc__prev_rec_t *p;
  struct stat st;
  pc__job_t *j;
  size_t rel_off;

  /* The record first: a new file then costs one lookup here, not every
   * filter twice.
   */
  if ((p = pc__prev_next(r->prev, root, rel, &r->prev_hint)) == NULL ||
      p->size == 0 ||
      pc__is_temp_name(name) || !in_shard(r, rel, strlen(rel)) ||
      excluded(r, rel) ||
      pc__output_format_of(name, len) >= 0 || on_skip_list(r, name, len))
    return 0;
  /* Scheduled by its recorded size and mtime until the worker knows. */
  memset(&st, 0, sizeof(st));
  st.st_size = (off_t)p->size;
  st.st_mtim.tv_sec = (time_t)(p->mtime_ns / 1000000000);
  st.st_mtim.tv_nsec = (long)(p->mtime_ns % 1000000000);
  rel_off = strlen(*full) - strlen(rel);
  j = pc__job_new(*full, rel_off, root, r->roots[root].fd, &st, 0, &r->cfg);
  *full = NULL; /* the job owns it now, even when NULL came back */
  if (j == NULL) {
    r->fatal = -ENOMEM;
    return 1;
  }
  j->prev = p;
  j->absent = absent_outputs(r, name, len, ls);
  pc__run_push(r, j);
  return 1;
}

/* 1 if the directory `st` is one the walk never enters (the cache's). */
static int skip_dir(const pc__run_t *r, const struct stat *st) {
  size_t k;
  for (k = 0; k < r->nskip_dirs; k++)
    if (r->skip_dirs[k].dev == st->st_dev && r->skip_dirs[k].ino == st->st_ino)
      return 1;
  return 0;
}

/* 1 if `name`, in directory dfd, is the manifest's own name, or a temp
 * of it (".NAME.XXXXXX.tmp") that a run killed while writing it left:
 * never an input. The (dev, ino) check in visit() knows only the file
 * that was there when the run started; this knows one created or replaced
 * since, by another run, too. A killed run's temp of it is removed
 * (unless in a dry run), as an output's is.
 */
static int manifest_name(const pc__run_t *r, int dfd, const char *name,
                         size_t len) {
  size_t bl = r->man_base_len, sl = sizeof(PC__TMP_SUFFIX) - 1, i;
  struct stat st;
  int temp = 0;

  if (len == 1 + bl + 1 + PC__TMP_RAND + sl && name[0] == '.' &&
      memcmp(name + 1, r->man_base, bl) == 0 && name[1 + bl] == '.' &&
      memcmp(name + len - sl, PC__TMP_SUFFIX, sl) == 0) {
    temp = 1;
    for (i = 2 + bl; i < 2 + bl + PC__TMP_RAND; i++)
      if (!isalnum((unsigned char)name[i]))
        temp = 0;
  }
  if (!temp && (len != bl || memcmp(name, r->man_base, bl) != 0))
    return 0;
  /* The same name elsewhere is any other file. */
  if ((dfd == AT_FDCWD ? stat(".", &st) : fstat(dfd, &st)) != 0 ||
      st.st_dev != r->man_dir_dev || st.st_ino != r->man_dir_ino)
    return 0;
  /* Another run writing the same manifest keeps its live temp. */
  if (temp && !r->cfg.dry_run)
    pc__out_reap(dfd, name, &r->start);
  return 1;
}

/* Looks at one entry of directory `dfd` (full name `dfull`, relative name
 * `drel`) and hands it on: a directory to the stack, a file to a job or a
 * skip record. `names` (sorted, may be NULL) is the directory's listing.
 */
static void visit(pc__run_t *r, uint32_t root, int dfd, const char *dfull,
                  const char *drel, const char *name, unsigned char dtype,
                  const listing_t *ls) {
  size_t len = strlen(name);
  char *full = NULL, *rel = NULL;
  const pc__prev_rec_t *prev;
  struct stat st;
  int via_link = 0;

  /* A regular file FILE.gz beside FILE is ours, whatever its mode or
   * inode: the stat below would end in the same place. On a tree
   * compressed before, that is half the entries, each a stat saved.
   */
  if (dtype == DT_REG && is_own_output(name, len, ls))
    return;
  if (r->man_base != NULL && manifest_name(r, dfd, name, len))
    return;
  full = pc__path_join(dfull, name);
  rel = pc__path_join(drel, name);
  if (full == NULL || rel == NULL) {
    r->fatal = -ENOMEM;
    goto out;
  }
  if (dtype == DT_REG && r->prev != NULL &&
      hand_on_unstatted(r, root, name, len, &full, rel, ls))
    goto out;
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) /* gone since the listing: nothing to do */
      pc__run_skip(r, root, rel, full, PC_SKIP_NONE, NULL, PC__ERRNO()),
          rel = NULL;
    goto out;
  }
  if (S_ISREG(st.st_mode) && pc__is_temp_name(name)) {
    /* A temp file of ours: never an input. A killed run's is removed, by
     * the shard that owns its source; one that another run is writing
     * right now stays (pc__out_reap).
     */
    if (!r->cfg.dry_run && owns_temp(r, drel, name, len))
      pc__out_reap(dfd, name, &r->start);
    goto out;
  }
  if (S_ISLNK(st.st_mode)) {
    struct stat t;
    if (fstatat(dfd, name, &t, 0) != 0) {
      if (in_shard(r, rel, strlen(rel))) {
        pc__run_skip(r, root, rel, full, PC_SKIP_BROKEN_LINK, NULL, 0);
        rel = NULL;
      }
      goto out;
    }
    if (S_ISDIR(t.st_mode)) {
      if (r->opts->follow && !skip_dir(r, &t)) {
        if (push_dir(r, root, rel) != 0)
          r->fatal = -ENOMEM;
        rel = NULL;
      }
      goto out;
    }
    st = t;
    via_link = 1;
  }
  if (S_ISDIR(st.st_mode)) {
    if (!skip_dir(r, &st)) {
      if (push_dir(r, root, rel) != 0)
        r->fatal = -ENOMEM;
      rel = NULL;
    }
    goto out;
  }
  if (!in_shard(r, rel, strlen(rel)))
    goto out; /* another shard's */
  if (!S_ISREG(st.st_mode)) {
    pc__run_skip(r, root, rel, full, PC_SKIP_SPECIAL, &st, 0);
    rel = NULL;
    goto out;
  }
  if (r->man_known && st.st_dev == r->man_dev && st.st_ino == r->man_ino)
    goto out;
  if (is_own_output(name, len, ls))
    goto out;

  if (excluded(r, rel))
    pc__run_skip(r, root, rel, full, PC_SKIP_EXCLUDED, &st, 0);
  else if (pc__output_format_of(name, len) >= 0 ||
           on_skip_list(r, name, len))
    pc__run_skip(r, root, rel, full, PC_SKIP_EXTENSION, &st, 0);
  else {
    unsigned absent = absent_outputs(r, name, len, ls);
    pc_skip_t why = st.st_size == 0 ? PC_SKIP_EMPTY
                    : (uint64_t)st.st_size < r->opts->min_size
                        ? PC_SKIP_MIN_SIZE
                        : PC_SKIP_NONE;
    size_t rel_off;
    pc__job_t *j;
    /* No output, and none there to remove as stale: a record is all. */
    if (why != PC_SKIP_NONE && (absent & r->cfg.formats) == r->cfg.formats) {
      pc__run_skip(r, root, rel, full, why, &st, 0);
      rel = NULL;
      goto out;
    }
    if (why == PC_SKIP_NONE && r->prev != NULL &&
        (prev = is_unchanged(r, root, dfd, name, rel, &st, absent)) != NULL) {
      pc__run_unchanged(r, root, full, prev);
      goto out;
    }
    rel_off = strlen(full) - strlen(rel);
    j = pc__job_new(full, rel_off, root, r->roots[root].fd, &st, via_link,
                    &r->cfg);
    full = NULL; /* the job owns it now, even when NULL came back */
    if (j == NULL) {
      r->fatal = -ENOMEM;
    } else {
      j->absent = absent;
      j->skip = why;
      pc__run_push(r, j);
    }
    goto out;
  }
  rel = NULL;
out:
  free(full);
  free(rel);
}

static void close_cur(pc__run_t *r) {
  free(r->cur.names);
  pc__buf_free(&r->cur.arena);
  if (r->cur.fd >= 0)
    close(r->cur.fd);
  free(r->cur.rel);
  free(r->cur.full);
  r->cur.names = NULL;
  r->cur.n = r->cur.i = 0;
  r->cur.fd = -1;
  r->cur.rel = r->cur.full = NULL;
}

/* Opens the next directory from the stack and reads its listing. */
static void open_next(pc__run_t *r) {
  pc__dir_t d = r->dirs[--r->ndirs];
  const pc__root_t *root = &r->roots[d.root];
  char *full = pc__path_join(root->dir, d.rel);
  struct stat st;
  struct dirent *de;
  DIR *dir = NULL;
  int fd = -1, fd2, err = 0;

  r->cur.fd = -1;
  if (full == NULL) {
    r->fatal = -ENOMEM;
    goto fail;
  }
  fd = open(full[0] ? full : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) != 0) {
    err = PC__ERRNO();
    goto fail;
  }
  /* Entered already: a symlink loop, or two links to one directory. */
  if ((err = seen_add(r, st.st_dev, st.st_ino)) <= 0) {
    if (err < 0)
      r->fatal = err;
    err = 0;
    goto fail;
  }
  err = 0;
  /* fdopendir() takes its descriptor; keep ours for fstatat(). */
  fd2 = dup(fd);
  if (fd2 < 0 || (dir = fdopendir(fd2)) == NULL) {
    err = PC__ERRNO();
    if (fd2 >= 0)
      close(fd2);
    goto fail;
  }
  r->cur.fd = fd;
  fd = -1;
  r->cur.root = d.root;
  r->cur.rel = d.rel;
  d.rel = NULL;
  r->cur.full = full;
  full = NULL;
  for (;;) {
    size_t cap = r->cur.n;
    errno = 0;
    de = readdir(dir);
    if (de == NULL) {
      if (errno != 0)
        err = PC__ERRNO();
      break;
    }
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if ((cap & (cap - 1)) == 0) { /* n is 0 or a power of two: grow */
      char **n = realloc(r->cur.names, (cap ? cap * 2 : 16) * sizeof(*n));
      if (n == NULL) {
        r->fatal = -ENOMEM;
        break;
      }
      r->cur.names = n;
    }
    {
      /* The entry's type (d_type, DT_UNKNOWN where the file system does
       * not say) rides after the name's NUL: the names sort and search as
       * plain strings. All of them in one arena; until it stops growing,
       * names[] holds offsets into it.
       */
      size_t l = strlen(de->d_name);
      if (pc__buf_reserve(&r->cur.arena, l + 2) != 0) {
        r->fatal = -ENOMEM;
        break;
      }
      r->cur.names[r->cur.n++] = (char *)(uintptr_t)r->cur.arena.len;
      memcpy(r->cur.arena.data + r->cur.arena.len, de->d_name, l + 1);
      r->cur.arena.data[r->cur.arena.len + l + 1] = de->d_type;
      r->cur.arena.len += l + 2;
    }
  }
  closedir(dir);
  {
    size_t k;
    for (k = 0; k < r->cur.n; k++)
      r->cur.names[k] =
          (char *)r->cur.arena.data + (uintptr_t)r->cur.names[k];
  }
  if (err != 0) {
    pc__run_error(r, r->cur.full, err);
    close_cur(r);
    return;
  }
  if (r->cur.n > 1)
    qsort(r->cur.names, r->cur.n, sizeof(*r->cur.names), cmp_names);
  return;

fail:
  if (err != 0)
    pc__run_error(r, full, err);
  if (fd >= 0)
    close(fd);
  free(full);
  free(d.rel);
}

int pc__walk_start(pc__run_t *r) {
  uint32_t k;

  r->cur.fd = -1;
  /* Push in reverse so the first PATH is walked first. */
  for (k = r->nroots; k-- > 0;) {
    const pc__root_t *root = &r->roots[k];
    if (root->fd < 0) {
      /* Its jobs would all fail on it (EBADF): one error for the root. */
      pc__run_error(r, root->dir[0] ? root->dir : ".", root->fd_err);
      continue;
    }
    if (root->file != NULL) {
      int dfd = root->dir[0] ? open(root->dir, O_RDONLY | O_DIRECTORY |
                                                  O_CLOEXEC)
                             : AT_FDCWD;
      if (dfd == -1) {
        pc__run_error(r, root->dir, PC__ERRNO());
        continue;
      }
      visit(r, k, dfd, root->dir, "", root->file, DT_UNKNOWN, NULL);
      if (dfd != AT_FDCWD)
        close(dfd);
    } else {
      char *rel = pc__strdup("");
      if (rel == NULL || push_dir(r, k, rel) != 0)
        return -ENOMEM;
    }
  }
  return r->fatal;
}

int pc__walk_step(pc__run_t *r, unsigned budget) {
  while (budget > 0 && r->fatal == 0) {
    if (r->cur.names == NULL && r->cur.fd < 0) {
      if (r->ndirs == 0)
        return 1;
      open_next(r);
      budget--;
      continue;
    }
    while (r->cur.i < r->cur.n && budget > 0) {
      const char *nm = r->cur.names[r->cur.i];
      listing_t ls;
      ls.names = r->cur.names;
      ls.n = r->cur.n;
      ls.at = r->cur.i;
      visit(r, r->cur.root, r->cur.fd, r->cur.full, r->cur.rel, nm,
            (unsigned char)nm[strlen(nm) + 1], &ls);
      r->cur.i++;
      budget--;
    }
    if (r->cur.i == r->cur.n)
      close_cur(r);
  }
  return r->fatal != 0;
}

void pc__walk_stop(pc__run_t *r) {
  close_cur(r);
  while (r->ndirs > 0)
    free(r->dirs[--r->ndirs].rel);
  free(r->dirs);
  r->dirs = NULL;
  r->capdirs = 0;
  free(r->seen);
  r->seen = NULL;
  r->nseen = r->capseen = 0;
}
