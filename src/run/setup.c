/* The run's setup and teardown (run.h): its fixed configuration, the
 * workers' side (how many, the pool's slots, the scheduler, dedupe), and
 * what the walk meets (the filter chain, the roots, --output-dir, the
 * manifest and the earlier one's records, the cache). Loop thread, before
 * the loop starts and after it ends: the configuration is this file's
 * alone, and each other part (run.h) is set up and freed here.
 */
#include "run/run.h"

#include "codec/codec.h"
#include "work/deltashare.h"
#include "common/machine.h"
#include "store/remote.h"
#include "store/store.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The PATH resolved (realpath), or NULL when it cannot be: the walk then
 * reports the error. malloc'd.
 */
static char *canonical(const char *p) { return realpath(p, NULL); }

/* 1 if `path` is `dir` or lies below it, both canonical. */
static int within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 &&
         (path[n] == '\0' || path[n] == '/' || (n == 1 && dir[0] == '/'));
}

/* Which PATHs to walk: one given twice, or lying inside a directory given
 * too (`ov ov/css ov`), is covered already. Walking it again would record
 * its files under two roots, and the next incremental run, finding them
 * under neither, would compress them all again. keep[k] is 1 for those to
 * walk; the first of equal ones stays.
 */
static int covered_paths(const pc_options_t *o, unsigned char *keep) {
  char **canon = calloc(o->npaths, sizeof(*canon));
  unsigned char *isdir = calloc(o->npaths, 1);
  size_t k, m;
  int err = 0;

  if (canon == NULL || isdir == NULL) {
    err = -ENOMEM;
    goto out;
  }
  for (k = 0; k < o->npaths; k++) {
    struct stat st;
    keep[k] = 1;
    canon[k] = canonical(o->paths[k]);
    isdir[k] = stat(o->paths[k], &st) == 0 && S_ISDIR(st.st_mode);
  }
  for (k = 0; k < o->npaths; k++) {
    for (m = 0; m < o->npaths && keep[k]; m++) {
      if (m == k || !keep[m] || canon[k] == NULL || canon[m] == NULL)
        continue;
      if (strcmp(canon[k], canon[m]) == 0)
        keep[k] = m > k; /* equal: the first stays */
      else if (isdir[m] && within(canon[k], canon[m]))
        keep[k] = 0;
    }
  }
out:
  for (k = 0; canon != NULL && k < o->npaths; k++)
    free(canon[k]);
  free(canon);
  free(isdir);
  return err;
}

/* Splits the PATHs into roots: a directory is its own root; a file's root
 * is its directory. Roots in one directory (a shell glob over it) share one
 * descriptor: a run over thousands of file PATHs must not hold one each
 * (ulimit -n).
 */
static int make_roots(pc__run_t *r) {
  const pc_options_t *o = r->opts;
  unsigned char *keep = calloc(o->npaths ? o->npaths : 1, 1);
  size_t k;
  int err;

  r->roots = calloc(o->npaths ? o->npaths : 1, sizeof(*r->roots));
  if (r->roots == NULL || keep == NULL) {
    free(keep);
    return -ENOMEM;
  }
  if ((err = covered_paths(o, keep)) != 0) {
    free(keep);
    return err;
  }
  for (k = 0; k < o->npaths; k++) {
    pc__root_t *root = &r->roots[r->nroots];
    const char *p = o->paths[k];
    struct stat st;
    uint32_t m;
    int is_file;

    if (!keep[k])
      continue;
    r->nroots++;
    root->fd = -1;
    is_file = stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
    if (is_file && o->only != NULL) { /* its names are below a directory */
      free(keep);
      return -ENOTDIR;
    }
    if (is_file) {
      const char *slash = strrchr(p, '/');
      size_t dl = slash != NULL ? (size_t)(slash - p) : 0;
      root->file = pc__strdup(slash != NULL ? slash + 1 : p);
      root->dir = malloc(dl + 2);
      if (root->dir != NULL) {
        memcpy(root->dir, p, dl);
        /* "/x" lives in "/", not in "". */
        if (slash == p)
          root->dir[dl++] = '/';
        root->dir[dl] = '\0';
      }
      root->label =
          pc__strdup(root->dir != NULL && root->dir[0] ? root->dir : ".");
    } else {
      root->dir = pc__strdup(p);
      root->label = pc__strdup(p);
    }
    if (root->dir == NULL || root->label == NULL ||
        (is_file && root->file == NULL)) {
      free(keep);
      return -ENOMEM;
    }
    for (m = 0; m + 1 < r->nroots; m++)
      if (r->roots[m].fd >= 0 && strcmp(r->roots[m].dir, root->dir) == 0)
        break;
    if (m + 1 < r->nroots) {
      root->fd = r->roots[m].fd;
      root->fd_shared = 1;
      continue;
    }
    /* Failing here is the walk's to report: without this descriptor no
     * file below the root can be opened, whatever its listing says.
     */
    root->fd = open(root->dir[0] ? root->dir : ".",
                    PC_O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root->fd < 0)
      root->fd_err = PC__ERRNO();
  }
  free(keep);
  return 0;
}

/* The manifest's name, before any work starts (precompress.h): what is
 * there must be something a manifest may replace, unless nothing will be
 * written (a dry run); an earlier manifest's records are read from it. 0,
 * or the code that keeps the run from starting.
 */
static int open_manifest(pc__run_t *r) {
  const pc_options_t *o = r->opts;
  const char *path = o->manifest, *slash;
  int writing = !o->dry_run, err, ours = 0;
  pc__buf_t text = {0};
  char **labels = NULL;
  struct stat st;
  uint32_t k;

  if (path == NULL)
    return 0;
  slash = strrchr(path, '/');
  {
    /* Its directory, to know the name by wherever the walk meets it. */
    char *dir = slash == NULL   ? pc__strdup(".")
                : slash == path ? pc__strdup("/")
                                : malloc((size_t)(slash - path) + 1);
    if (dir == NULL)
      return -ENOMEM;
    if (slash != NULL && slash != path) {
      memcpy(dir, path, (size_t)(slash - path));
      dir[slash - path] = '\0';
    }
    if (stat(dir, &st) == 0) {
      pc__devino_t id = {st.st_dev, st.st_ino};
      pc__select_set_manifest(&r->sel, slash != NULL ? slash + 1 : path, &id);
    }
    free(dir);
  }

  err = pc__manifest_check(path, writing, &r->man_old, &text);
  if (err != 0) {
    if (!writing) {
      /* Nothing will replace it: say why it is not read, and go on. */
      pc__run_error(r, path, err);
      err = 0;
    }
    goto out;
  }
  if (r->man_old.regular) {
    pc__devino_t id = {r->man_old.dev, r->man_old.ino};
    pc__select_set_manifest_file(&r->sel, id);
    r->cfg.man_known = 1;
    r->cfg.man_dev = r->man_old.dev;
    r->cfg.man_ino = r->man_old.ino;
  }
  /* Nothing, a symlink or an empty file: no earlier manifest. */
  if (text.len == 0 || (o->force && !writing))
    goto out;
  if ((labels = malloc(r->nroots * sizeof(*labels))) == NULL) {
    err = -ENOMEM;
    goto out;
  }
  for (k = 0; k < r->nroots; k++)
    labels[k] = r->roots[k].label;
  /* With --force it is only judged: its records are not wanted. */
  err = pc__prev_parse(o->force ? NULL : &r->prev, &ours,
                       (const char *)text.data, text.len, &r->cfg.spec, labels,
                       r->nroots, r->jobs, PC__PREV_MIN_PART);
  if (err == -ENOMEM)
    goto out;
  if (writing && pc__manifest_ours(text.len, ours) != 0) {
    err = PC_EREFUSE;
    goto out;
  }
  if (err != 0 && !o->force) {
    /* A manifest, but not one this run can use: say so, compress
     * everything, and replace it.
     */
    pc__run_error(r, path, err);
  }
  err = 0;
out:
  free(labels);
  pc__buf_free(&text);
  return err;
}

/* Bytes of results queued for the cache's writer at once: like the copies
 * kept for identical files (dedup.c), a share of the memory limit.
 */
static uint64_t cache_budget(uint64_t limit) {
  uint64_t b = limit / 4;
  return b < ((uint64_t)128 << 20) ? b : (uint64_t)128 << 20;
}

/* Opens the cache, and keeps its whole directory out of the walk: never
 * entered when it lies inside a PATH, never walked when a PATH is it or
 * lies inside it. PC_EUNSAFE (a cache others could write) ends
 * the run before it starts; any other failure is reported and the run
 * goes on without a cache.
 */
static int open_cache(pc__run_t *r) {
  pc__store_t *c;
  struct stat st;
  int err;

  if ((err = pc__store_open(&c, r->opts->cache_dir, r->opts->dry_run,
                            cache_budget(r->run.sched.limit))) == PC_EUNSAFE)
    return err;
  if (err != 0) {
    /* A cache that cannot be made is no reason not to compress; one a dry
     * run finds missing is an empty one.
     */
    if (!(r->opts->dry_run && err == -ENOENT))
      pc__run_error(r, r->opts->cache_dir, err);
    c = NULL;
  }
  r->cfg.cache = c;
  if (stat(r->opts->cache_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
    pc__devino_t id = {st.st_dev, st.st_ino};
    uint32_t k;
    pc__select_set_cache_dir(&r->sel, id);
    /* A PATH that is the cache's directory or lies in it: nothing there
     * is a source, whatever it holds (an old v1/ tree, files of others).
     * File PATHs of one directory share its descriptor: judged once.
     */
    for (k = 0; k < r->nroots; k++)
      r->roots[k].skip =
          k > 0 && r->roots[k].fd == r->roots[k - 1].fd
              ? r->roots[k - 1].skip
              : r->roots[k].fd >= 0 && pc__walk_below(r->roots[k].fd, id);
  }
  return 0;
}

/* Starts the remote cache's thread (no request is made yet). It fails
 * only short of memory: a server that cannot be reached is found out by
 * the first lookup, and costs its timeout then.
 */
static int open_remote(pc__run_t *r) {
  const pc_options_t *o = r->opts;
  pc__remote_cfg_t rc;

  memset(&rc, 0, sizeof(rc));
  rc.url = o->cache_url;
  rc.token = o->cache_token;
  rc.userpass = o->cache_userpass;
  /* A dry run changes nothing, on the server either. */
  rc.read_only = o->cache_url_read_only || o->dry_run;
  rc.timeout_s = o->cache_url_timeout;
  rc.budget = cache_budget(r->run.sched.limit);
  return pc__remote_open(&r->cfg.remote, &rc);
}

/* `mkdir -p DIR`: each missing directory on the way made (0777 less the
 * umask), the last one included; ones there already (or made meanwhile by
 * another run) are fine. What is not a directory is left for the open
 * after to report. 0 or a negative code.
 */
static int make_dirs(const char *dir) {
  char *p = pc__strdup(dir), *s;
  int err = 0;

  if (p == NULL)
    return -ENOMEM;
  for (s = p + 1;; s++) {
    if (*s != '/' && *s != '\0')
      continue;
    if (s[-1] != '/') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST)
        err = PC__ERRNO();
      *s = c;
    }
    if (*s == '\0' || err != 0)
      break;
  }
  free(p);
  return err;
}

/* --output-dir: DIR made (not by a dry run, which finds every output
 * missing when there is none) and opened as the user names it (a symlink
 * given is followed, as a PATH's is). The PATH itself is refused (in
 * place has its own spelling); DIR inside the PATH is never walked. 0 or
 * the code that keeps the run from starting.
 */
static int open_output_dir(pc__run_t *r) {
  const char *dir = r->opts->output_dir;
  struct stat st, rst;
  uint32_t k;
  int err;

  if (!r->cfg.dry_run && (err = make_dirs(dir)) != 0 && err != -ENOTDIR)
    return err;
  r->cfg.out_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (r->cfg.out_fd < 0) {
    err = PC__ERRNO();
    return r->cfg.dry_run && err == -ENOENT ? 0 : err;
  }
  if (fstat(r->cfg.out_fd, &st) != 0)
    return PC__ERRNO();
  for (k = 0; k < r->nroots; k++)
    if (r->roots[k].file == NULL && r->roots[k].fd >= 0 &&
        fstat(r->roots[k].fd, &rst) == 0 && rst.st_dev == st.st_dev &&
        rst.st_ino == st.st_ino)
      return PC_EOUTSAME;
  {
    pc__devino_t id = {st.st_dev, st.st_ino};
    pc__select_skip(&r->sel, id);
  }
  return 0;
}

void pc__setup_free(pc__run_t *r) {
  uint32_t k;

  pc__walk_free(r->walk.it);
  pc__mirror_free(&r->walk.mirror);
  pc__relset_free(&r->walk.rels);
  if (r->cfg.out_fd >= 0)
    close(r->cfg.out_fd);
  pc__sched_drop(&r->run.sched, 1);
  free(r->run.slots);
  pc__record_free(r);
  for (k = 0; k < r->nroots; k++) {
    if (r->roots[k].fd >= 0 && !r->roots[k].fd_shared)
      close(r->roots[k].fd);
    free(r->roots[k].dir);
    free(r->roots[k].label);
    free(r->roots[k].file);
  }
  free(r->roots);
  pc__select_free(&r->sel);
  free(r->walk.only_seen);
  pc__prev_free(r->prev);
  pc__dictset_free(&r->dicts);
  pc__dedup_free(r->cfg.dedup);
  pc__dshare_free(r->cfg.dshare);
  pc__spares_free(r->cfg.spares);
  pc__store_close((pc__store_t *)r->cfg.cache);
  pc__remote_free(r->cfg.remote);
}

/* The run's fixed configuration, from the options: what every job reads. */
void pc__setup_init(pc__run_t *r, const pc_options_t *opts) {
  r->opts = opts;
  /* No file made before this instant has a later ctime (the kernel stamps
   * with the coarse clock, or a finer one, never ahead of this one).
   */
  clock_gettime(CLOCK_REALTIME, &r->start);
  pc__spec_of(&r->cfg.spec, opts);
  r->cfg.dry_run = opts->dry_run;
  r->cfg.follow = opts->follow;
  r->cfg.fsync = opts->fsync;
  r->cfg.out_fd = -1;
  if (opts->n_dict_dirs > 0) {
    int f;
    r->cfg.deltas = opts->deltas;
    if (opts->deltas == 0) /* every one this build writes */
      for (f = 0; f < PC_NDELTAS; f++)
        if (pc_delta_available((pc_delta_format_t)f))
          r->cfg.deltas |= PC_DELTA_BIT(f);
  }
  r->cfg.spec.deltas = r->cfg.deltas;
  if (r->cfg.deltas == 0)
    r->cfg.spec.n_dict_dirs = 0;
  r->cfg.dicts = &r->dicts;
  r->walk.mirror = (pc__mirror_t)PC__MIRROR_INIT;
  atomic_init(&r->run.stop, 0);
  r->cfg.stop = &r->run.stop;
  atomic_init(&r->run.stop_signo, 0);
  atomic_init(&r->run.stop_on, 0);
}

/* The workers' side of the run: how many (the process's limits), the
 * codec states they share, the pool's slots, the scheduler and dedupe
 * within the memory limit.
 */
int pc__setup_workers(pc__run_t *r) {
  const pc_options_t *opts = r->opts;
  uint64_t limit = opts->memory_limit;
  size_t k;
  int err;

  if ((err = pc__dedup_new(&r->cfg.dedup)) != 0)
    return err;
  r->jobs = opts->jobs ? opts->jobs : pc_default_jobs();
  if ((err = pc__limit_jobs(&r->jobs)) != 0)
    return err;
  r->cfg.jobs = r->jobs;
  if ((err = pc__spares_new(&r->cfg.spares, r->jobs, opts->level[PC_GZ])) != 0)
    return err;
  if ((r->run.slots = calloc(r->jobs, sizeof(*r->run.slots))) == NULL)
    return -ENOMEM;
  for (k = r->jobs; k > 0; k--) {
    r->run.slots[k - 1].run = r;
    r->run.slots[k - 1].next_free = r->run.free_slots;
    r->run.free_slots = &r->run.slots[k - 1];
  }
  if (limit == 0) {
    pc_memlimit_t m;
    pc_default_memory_limit(&m);
    limit = m.limit;
  }
  pc__sched_init(&r->run.sched, r->jobs, limit);
  pc__dedup_budget(r->cfg.dedup, limit);
  /* Deltas are small: a sixteenth of the memory limit, at most 64 MiB. */
  if (r->cfg.deltas != 0 &&
      (err = pc__dshare_new(&r->cfg.dshare, limit / 16 < ((uint64_t)64 << 20)
                                                ? limit / 16
                                                : ((uint64_t)64 << 20))) != 0)
    return err;
  return 0;
}

/* A --dictionary-from directory, or a part of one, that cannot be listed. */
static void dict_error(void *ctx, const char *path, int err) {
  pc__run_error(ctx, path, err);
}

/* What the walk meets: the filter chain, the roots, the manifest (and the
 * earlier one's records), the cache. A failure about a named file puts
 * its name in totals->err_path.
 */
int pc__setup_inputs(pc__run_t *r, pc_totals_t *totals) {
  const pc_options_t *opts = r->opts;
  const char *const *skip = opts->skip_ext;
  size_t nskip = opts->nskip_ext;
  unsigned bad = UINT_MAX;
  int err;

  if (skip == NULL)
    skip = pc_default_skip_ext(&nskip);
  if ((err = pc__select_init(&r->sel, opts, skip, nskip)) != 0)
    return err;
  if (r->sel.only != NULL &&
      (r->walk.only_seen = calloc(r->sel.nonly + 1, 1)) == NULL)
    return -ENOMEM;
  if ((err = make_roots(r)) != 0) {
    if (err == -ENOTDIR && totals != NULL)
      totals->err_path = opts->paths[0];
    return err;
  }
  if (opts->output_dir != NULL && (err = open_output_dir(r)) != 0) {
    if (totals != NULL)
      totals->err_path = opts->output_dir;
    return err;
  }
  if ((err = open_manifest(r)) != 0) {
    if (totals != NULL)
      totals->err_path = opts->manifest;
    return err;
  }
  r->cfg.prev = r->prev;
  /* The Django manifests may take a quarter of the memory limit, all
   * together; what they and the listings hold is the units' no more.
   */
  if (r->cfg.deltas != 0 &&
      (err = pc__dictset_open(&r->dicts, opts, r->roots, r->nroots,
                              r->run.sched.limit / 4, dict_error, r, &bad)) !=
          0) {
    if (totals != NULL && bad < opts->n_dict_dirs)
      totals->err_path = opts->dict_dirs[bad];
    return err;
  }
  pc__sched_hold(&r->run.sched, r->dicts.mem);
  if (opts->cache_dir != NULL && (err = open_cache(r)) != 0) {
    if (totals != NULL)
      totals->err_path = opts->cache_dir;
    return err;
  }
  if (opts->cache_url != NULL && (err = open_remote(r)) != 0)
    return err;
  return 0;
}
