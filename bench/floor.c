/* bench/floor.c: the two floors bench/run.sh compares precompress against.
 *
 *   floor codec [--gzip] [--brotli] [--threads N] DIR...
 *       Walks DIR like precompress does (regular files and symlinks to them,
 *       not .gz, .br or .zst, not the default skip list, not empty), reads
 *       every file, keeps the distinct contents (size + 64-bit hash), and runs
 *       the bare codec calls on each distinct content:
 *         gzip:   raw deflate, level 9, windowBits -15, memLevel 8, default
 *                 strategy (the stream inside a .gz; the 18 bytes of gzip
 *                 header/trailer and the CRC are left out)
 *         brotli: BrotliEncoderCompress(quality 11, lgwin 22, generic mode)
 *       on N threads (default 1). One content's gzip then brotli run on one
 *       thread, as in one precompress job; with N > 1 the threads take the
 *       contents from one queue largest first (LPT), each content read by
 *       the thread that compresses it. Prints the CPU seconds of those calls
 *       alone (CLOCK_THREAD_CPUTIME_ID around each call, summed over the
 *       threads; reading and hashing are not counted), the slowest content's
 *       (every format of one file runs in one job, so no run can end before
 *       that file's codecs are done: the practical floor of a run is
 *       max(CPU / cores, slowest)), and the wall seconds (CLOCK_MONOTONIC)
 *       of the compression on N threads: a perfectly scheduled run of the
 *       bare codecs. N = the cores measures the codecs as a parallel tool
 *       meets them: two codec processes at once each took ~7% more CPU than
 *       one alone on a 2-vCPU VM (shared caches and memory bandwidth).
 *
 *   floor io DIR...
 *       Walks DIR the same way and, for each file: opens and reads it, writes
 *       its bytes the way precompress writes an output its directory did not
 *       list: an unnamed file in that directory (O_TMPFILE, 0600), fchmod()ed
 *       to the source's mode, futimens()ed to the source's atime/mtime, then
 *       linked as NAME.iofloor (linkat AT_EMPTY_PATH, else /proc/self/fd/N)
 *       and closed. Where the file system has no O_TMPFILE: a temp file
 *       beside it (.NAME.XXXXXX.tmp, O_CREAT|O_EXCL|O_NOFOLLOW, 0600), closed
 *       and rename()d. No compression. One thread. Prints the wall seconds of
 *       the whole loop, walk included: the file-system cost of writing one
 *       output per file the way precompress does.
 *
 *   floor stat [--gzip] [--brotli] [--threads N] DIR...
 *       The least a second run with --manifest on an unchanged tree can do:
 *       lists every directory (one thread, readdir with d_type, the names
 *       sorted), then on N threads (default: the online CPUs) stats each
 *       input file once and each of its outputs (NAME.gz / NAME.br) that
 *       the listing holds once, with fstatat() against the directory.
 *       Nothing is read, compared or written. Prints the wall seconds of
 *       both steps together.
 *
 * Output: one line of key=value pairs on stdout.
 * Built by bench/run.sh: cc -O2 -pthread floor.c -lz -lbrotlienc [-lxxhash].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>

#include <brotli/encode.h>
#include <zlib.h>

#if defined(HAVE_XXHASH)
#include <xxhash.h>
static uint64_t hash64(const void *p, size_t n) { return XXH3_64bits(p, n); }
#else
static uint64_t hash64(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}
#endif

/* precompress's default skip list (src/codec/options.c): case-insensitive
 * suffixes */
static const char *skip_ext[] = {
    "jpg",  "jpeg", "png",  "gif",  "webp", "zip",  "gz",    "tgz",  "bz2",
    "tbz",  "xz",   "br",   "swf",  "flv",  "woff", "woff2", "3gp",  "3gpp",
    "asf",  "avi",  "m4v",  "mov",  "mp4",  "mpeg", "mpg",   "webm", "wmv",
    "avif", "jxl",  "heic", "heif", "zst",  "zstd", "7z",    "rar",  "lz4",
    "lzma", "mp3",  "ogg",  "oga",  "opus", "m4a",  "aac",   "flac"};

static int skipped_name(const char *name) {
  size_t n = strlen(name);
  if (n > 8 && strcmp(name + n - 8, ".iofloor") == 0)
    return 1;
  if (name[0] == '.' && n > 4 && strcmp(name + n - 4, ".tmp") == 0)
    return 1;
  for (size_t i = 0; i < sizeof skip_ext / sizeof skip_ext[0]; i++) {
    size_t e = strlen(skip_ext[i]);
    if (n > e + 1 && name[n - e - 1] == '.' &&
        strcasecmp(name + n - e, skip_ext[i]) == 0)
      return 1;
  }
  return 0;
}

static double now(clockid_t c) {
  struct timespec ts;
  if (clock_gettime(c, &ts) != 0) {
    perror("floor: clock_gettime");
    exit(1);
  }
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the list of files --------------------------------------------------- */

static char **paths;
static size_t npaths, cappaths;

static int collect(const char *path, const struct stat *st, int flag,
                   struct FTW *ftw) {
  if (flag != FTW_F && flag != FTW_SL)
    return 0;
  struct stat tst;
  if (flag == FTW_SL) {
    if (stat(path, &tst) != 0)
      return 0;
    st = &tst;
  }
  if (!S_ISREG(st->st_mode) || st->st_size == 0 ||
      skipped_name(path + ftw->base))
    return 0;
  if (npaths == cappaths) {
    cappaths = cappaths ? cappaths * 2 : 4096;
    paths = realloc(paths, cappaths * sizeof *paths);
    if (!paths)
      abort();
  }
  paths[npaths++] = strdup(path);
  return 0;
}

static int walk(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (nftw(argv[i], collect, 64, FTW_PHYS) != 0) {
      perror(argv[i]);
      return -1;
    }
  return 0;
}

static unsigned char *read_all(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    perror(path);
    exit(1);
  }
  size_t cap = (size_t)st.st_size + 1, n = 0;
  unsigned char *buf = malloc(cap);
  for (;;) {
    if (buf && n == cap)
      buf = realloc(buf, cap *= 2);
    if (!buf) {
      fprintf(stderr, "floor: %s: out of memory (%zu bytes)\n", path, cap);
      exit(1);
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      perror(path);
      exit(1);
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  if (close(fd) != 0) {
    perror(path);
    exit(1);
  }
  *len = n;
  return buf;
}

/* ---- codec floor -----------------------------------------------------------
 */

struct key {
  uint64_t hash, size;
};

static int cmp_key(const void *a, const void *b) {
  const struct key *x = a, *y = b;
  if (x->hash != y->hash)
    return x->hash < y->hash ? -1 : 1;
  return x->size < y->size ? -1 : x->size > y->size;
}

/* The work: one path per distinct content, in the order the threads take
 * them (the walk's with one thread; largest first with more). */
static size_t *work;
static uint64_t *work_size;
static size_t nwork;
static atomic_size_t next_work;
static int codec_gz, codec_br;

/* What one thread measured; summed by the main thread after the joins. */
struct tally {
  double gz_cpu, br_cpu, slowest;
  size_t slowest_k; /* index into paths */
  int have_slowest;
  uint64_t distinct_bytes, gz_bytes, br_bytes;
};

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "floor: out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

/* Takes contents off the shared queue until it is empty: each content read
 * here (and freed before the next), its gzip then its brotli on this thread,
 * as one precompress job runs them. */
static void *codec_worker(void *arg) {
  struct tally *t = arg;
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (codec_gz &&
      deflateInit2(&zs, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    fprintf(stderr, "floor: deflateInit2 failed\n");
    exit(1);
  }
  size_t w;
  while ((w = atomic_fetch_add(&next_work, 1)) < nwork) {
    const char *path = paths[work[w]];
    double spent = 0;
    size_t len;
    unsigned char *in = read_all(path, &len);
    t->distinct_bytes += len;
    if (codec_gz) {
      if (len > UINT_MAX) {
        fprintf(stderr, "floor: %s: too large for one deflate call\n", path);
        exit(1);
      }
      uLong cap = deflateBound(&zs, (uLong)len);
      if (cap > UINT_MAX)
        cap = UINT_MAX;
      unsigned char *out = xmalloc(cap);
      double t0 = now(CLOCK_THREAD_CPUTIME_ID);
      int rc = deflateReset(&zs);
      if (rc == Z_OK) {
        zs.next_in = in;
        zs.avail_in = (uInt)len;
        zs.next_out = out;
        zs.avail_out = (uInt)cap;
        rc = deflate(&zs, Z_FINISH);
      }
      double dt = now(CLOCK_THREAD_CPUTIME_ID) - t0;
      if (rc != Z_STREAM_END) {
        fprintf(stderr, "floor: deflate failed on %s (%d)\n", path, rc);
        exit(1);
      }
      t->gz_cpu += dt;
      spent += dt;
      t->gz_bytes += zs.total_out + 18;
      free(out);
    }
    if (codec_br) {
      size_t cap = BrotliEncoderMaxCompressedSize(len);
      if (cap == 0)
        cap = len + 1024;
      unsigned char *out = xmalloc(cap);
      size_t outlen = cap;
      double t0 = now(CLOCK_THREAD_CPUTIME_ID);
      int ok = BrotliEncoderCompress(11, 22, BROTLI_MODE_GENERIC, len, in,
                                     &outlen, out);
      double dt = now(CLOCK_THREAD_CPUTIME_ID) - t0;
      if (!ok) {
        fprintf(stderr, "floor: brotli failed on %s\n", path);
        exit(1);
      }
      t->br_cpu += dt;
      spent += dt;
      t->br_bytes += outlen;
      free(out);
    }
    free(in);
    if (!t->have_slowest || spent > t->slowest) {
      t->have_slowest = 1;
      t->slowest = spent;
      t->slowest_k = work[w];
    }
  }
  if (codec_gz && deflateEnd(&zs) != Z_OK) {
    fprintf(stderr, "floor: deflateEnd failed\n");
    exit(1);
  }
  return NULL;
}

/* largest first; equal sizes in the walk's order */
static int cmp_work(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  if (work_size[x] != work_size[y])
    return work_size[x] > work_size[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

static int codec(int argc, char **argv) {
  long threads = 1;
  int i = 0;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--gzip") == 0)
      codec_gz = 1;
    else if (strcmp(argv[i], "--brotli") == 0)
      codec_br = 1;
    else if (strcmp(argv[i], "--threads") == 0) {
      char *end = NULL;
      errno = 0;
      if (++i < argc)
        threads = strtol(argv[i], &end, 10);
      if (i == argc || errno != 0 || *end != '\0' || end == argv[i] ||
          threads < 1 || threads > 4096) {
        fprintf(stderr, "floor codec: --threads wants 1..4096, not %s\n",
                i < argc ? argv[i] : "nothing");
        return 2;
      }
    } else {
      fprintf(stderr, "floor codec: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!codec_gz && !codec_br)
    codec_gz = codec_br = 1;
  if (walk(argc - i, argv + i) != 0)
    return 1;

  /* distinct contents: hash every file first (sorted keys), then compress
   * the first file of each key */
  struct key *keys = xmalloc(npaths * sizeof *keys);
  uint64_t bytes = 0;
  for (size_t k = 0; k < npaths; k++) {
    size_t len;
    unsigned char *buf = read_all(paths[k], &len);
    keys[k].hash = hash64(buf, len);
    keys[k].size = len;
    bytes += len;
    free(buf);
  }
  struct key *sorted = xmalloc(npaths * sizeof *sorted);
  if (npaths)
    memcpy(sorted, keys, npaths * sizeof *sorted);
  qsort(sorted, npaths, sizeof *sorted, cmp_key);
  size_t ndistinct = 0;
  for (size_t k = 0; k < npaths; k++)
    if (k == 0 || cmp_key(&sorted[k - 1], &sorted[k]) != 0)
      sorted[ndistinct++] = sorted[k];
  /* mark: for each distinct key, the first path carrying it */
  char *done = calloc(ndistinct ? ndistinct : 1, 1);
  work = xmalloc(npaths * sizeof *work);
  work_size = xmalloc(npaths * sizeof *work_size);
  if (!done) {
    fprintf(stderr, "floor: out of memory\n");
    return 1;
  }
  for (size_t k = 0; k < npaths; k++) {
    work_size[k] = keys[k].size;
    struct key *hit =
        bsearch(&keys[k], sorted, ndistinct, sizeof *sorted, cmp_key);
    size_t d = (size_t)(hit - sorted);
    if (!done[d]) {
      done[d] = 1;
      work[nwork++] = k;
    }
  }
  /* One thread keeps the walk's order (the figures of earlier runs); more
   * take the largest first, as a good scheduler would (LPT). */
  if (threads > 1)
    qsort(work, nwork, sizeof *work, cmp_work);

  struct tally *tl = calloc((size_t)threads, sizeof *tl);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  if (!tl || !tid) {
    fprintf(stderr, "floor: out of memory\n");
    return 1;
  }
  double w0 = now(CLOCK_MONOTONIC);
  if (threads == 1) {
    codec_worker(&tl[0]);
  } else {
    for (long t = 0; t < threads; t++) {
      int rc = pthread_create(&tid[t], NULL, codec_worker, &tl[t]);
      if (rc != 0) {
        fprintf(stderr, "floor: pthread_create: %s\n", strerror(rc));
        return 1;
      }
    }
    for (long t = 0; t < threads; t++) {
      int rc = pthread_join(tid[t], NULL);
      if (rc != 0) {
        fprintf(stderr, "floor: pthread_join: %s\n", strerror(rc));
        return 1;
      }
    }
  }
  double wall = now(CLOCK_MONOTONIC) - w0;

  struct tally sum = {0};
  for (long t = 0; t < threads; t++) {
    sum.gz_cpu += tl[t].gz_cpu;
    sum.br_cpu += tl[t].br_cpu;
    sum.distinct_bytes += tl[t].distinct_bytes;
    sum.gz_bytes += tl[t].gz_bytes;
    sum.br_bytes += tl[t].br_bytes;
    if (tl[t].have_slowest &&
        (!sum.have_slowest || tl[t].slowest > sum.slowest)) {
      sum.have_slowest = 1;
      sum.slowest = tl[t].slowest;
      sum.slowest_k = tl[t].slowest_k;
    }
  }
  printf("files=%zu bytes=%llu distinct=%zu distinct_bytes=%llu gzip_cpu=%.3f "
         "brotli_cpu=%.3f "
         "gzip_bytes=%llu brotli_bytes=%llu slowest=%.3f threads=%ld "
         "wall=%.3f\n",
         npaths, (unsigned long long)bytes, nwork,
         (unsigned long long)sum.distinct_bytes, sum.gz_cpu, sum.br_cpu,
         (unsigned long long)sum.gz_bytes, (unsigned long long)sum.br_bytes,
         sum.slowest, threads, wall);
  /* On a line of its own: a path may hold spaces. */
  if (nwork > 0)
    printf("slowest_file=%s\n", paths[sum.slowest_k]);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    perror("floor: stdout");
    return 1;
  }
  return 0;
}

/* ---- I/O floor -------------------------------------------------------------
 */

/* Links the unnamed file open at fd as `final` (replacing an earlier
 * run's). 0 or -1 with errno.
 */
static int link_unnamed(int fd, const char *final) {
  char proc[64];
  for (int tries = 0; tries < 2; tries++) {
    if (linkat(fd, "", AT_FDCWD, final, AT_EMPTY_PATH) == 0)
      return 0;
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, final, AT_SYMLINK_FOLLOW) == 0)
      return 0;
    if (errno != EEXIST || unlink(final) != 0)
      return -1;
  }
  return -1;
}

static int copy_one(const char *path, unsigned char *buf, size_t cap,
                    unsigned *seq, uint64_t *bytes) {
  int in = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (in < 0 || fstat(in, &st) != 0) {
    perror(path);
    return -1;
  }
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
  const char *base = path + dirlen;
  char tmp[8192], final[8192];
  int out = -1, unnamed = 0;
#ifdef O_TMPFILE
  snprintf(tmp, sizeof tmp, "%.*s", dirlen ? (int)dirlen : 1,
           dirlen ? path : ".");
  out = open(tmp, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  unnamed = out >= 0;
#endif
  for (int tries = 0; out < 0 && tries < 100; tries++) {
    snprintf(tmp, sizeof tmp, "%.*s.%s.iofloor.%06u.tmp", (int)dirlen, path,
             base, (*seq)++ % 1000000u);
    out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0 && errno != EEXIST)
      break;
  }
  if (out < 0) {
    perror(tmp);
    close(in);
    return -1;
  }
  for (;;) {
    ssize_t r = read(in, buf, cap);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      perror(path);
      return -1;
    }
    if (r == 0)
      break;
    for (ssize_t off = 0; off < r;) {
      ssize_t w = write(out, buf + off, (size_t)(r - off));
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0) {
        perror(tmp);
        return -1;
      }
      off += w;
    }
  }
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  snprintf(final, sizeof final, "%s.iofloor", path);
  if (fchmod(out, st.st_mode & 07777) != 0 || futimens(out, times) != 0 ||
      (unnamed && link_unnamed(out, final) != 0) || close(out) != 0) {
    perror(unnamed ? final : tmp);
    return -1;
  }
  close(in);
  *bytes += (uint64_t)st.st_size;
  if (!unnamed && rename(tmp, final) != 0) {
    perror(final);
    return -1;
  }
  return 0;
}

static int io(int argc, char **argv) {
  double t0 = now(CLOCK_MONOTONIC);
  if (walk(argc, argv) != 0)
    return 1;
  enum { CAP = 1 << 20 };
  unsigned char *buf = malloc(CAP);
  unsigned seq = (unsigned)getpid();
  uint64_t bytes = 0;
  int rc = 0;
  for (size_t k = 0; k < npaths; k++) {
    if (copy_one(paths[k], buf, CAP, &seq, &bytes) != 0)
      rc = 1;
  }
  double wall = now(CLOCK_MONOTONIC) - t0;
  printf("files=%zu bytes=%llu io_wall=%.3f\n", npaths,
         (unsigned long long)bytes, wall);
  return rc;
}

/* ---- stat floor ------------------------------------------------------------
 */

struct sdir {
  char *path;
  char **names; /* sorted */
  size_t n;
};

static struct sdir *sdirs;
static size_t nsdirs, capsdirs;
static atomic_size_t next_dir;
static atomic_ulong nstats, nfiles;
static int stat_gz, stat_br;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_output(const char *name) {
  size_t n = strlen(name);
  return (n > 3 && strcmp(name + n - 3, ".gz") == 0) ||
         (n > 3 && strcmp(name + n - 3, ".br") == 0) ||
         (n > 4 && strcmp(name + n - 4, ".zst") == 0);
}

/* Lists `path` and, through d_type, every directory below it. */
static int list_dir(const char *path) {
  DIR *d = opendir(path);
  struct dirent *e;
  struct sdir sd = {strdup(path), NULL, 0};
  size_t cap = 0;
  if (!d) {
    perror(path);
    return -1;
  }
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (e->d_type == DT_DIR) {
      char sub[8192];
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      if (list_dir(sub) != 0)
        return -1;
      continue;
    }
    if (sd.n == cap &&
        !(sd.names =
              realloc(sd.names, (cap = cap ? cap * 2 : 64) * sizeof *sd.names)))
      abort();
    /* d_type rides after the NUL, as precompress keeps it */
    size_t l = strlen(e->d_name);
    char *nm = malloc(l + 2);
    memcpy(nm, e->d_name, l + 1);
    nm[l + 1] = (char)e->d_type;
    sd.names[sd.n++] = nm;
  }
  closedir(d);
  qsort(sd.names, sd.n, sizeof *sd.names, cmp_str);
  if (nsdirs == capsdirs &&
      !(sdirs = realloc(sdirs, (capsdirs = capsdirs ? capsdirs * 2 : 256) *
                                   sizeof *sdirs)))
    abort();
  sdirs[nsdirs++] = sd;
  return 0;
}

static void *stat_worker(void *arg) {
  (void)arg;
  size_t k;
  while ((k = atomic_fetch_add(&next_dir, 1)) < nsdirs) {
    struct sdir *sd = &sdirs[k];
    int dfd = open(sd->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    unsigned long st_n = 0, f_n = 0;
    if (dfd < 0)
      continue;
    for (size_t i = 0; i < sd->n; i++) {
      const char *name = sd->names[i];
      struct stat st;
      if (name[strlen(name) + 1] != DT_REG || is_output(name) ||
          skipped_name(name))
        continue;
      f_n++;
      st_n++;
      fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
      const char *ext[2] = {stat_gz ? "gz" : NULL, stat_br ? "br" : NULL};
      for (int f = 0; f < 2; f++) {
        char out[NAME_MAX + 8], *op = out;
        if (!ext[f])
          continue;
        snprintf(out, sizeof out, "%s.%s", name, ext[f]);
        if (bsearch(&op, sd->names, sd->n, sizeof *sd->names, cmp_str)) {
          st_n++;
          fstatat(dfd, out, &st, AT_SYMLINK_NOFOLLOW);
        }
      }
    }
    close(dfd);
    atomic_fetch_add(&nstats, st_n);
    atomic_fetch_add(&nfiles, f_n);
  }
  return NULL;
}

static int stat_floor(int argc, char **argv) {
  long threads = sysconf(_SC_NPROCESSORS_ONLN);
  int i = 0;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--gzip") == 0)
      stat_gz = 1;
    else if (strcmp(argv[i], "--brotli") == 0)
      stat_br = 1;
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = atol(argv[++i]);
    else {
      fprintf(stderr, "floor stat: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (!stat_gz && !stat_br)
    stat_gz = stat_br = 1;
  if (threads < 1)
    threads = 1;
  double t0 = now(CLOCK_MONOTONIC);
  for (; i < argc; i++)
    if (list_dir(argv[i]) != 0)
      return 1;
  double t1 = now(CLOCK_MONOTONIC);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  for (long t = 0; t < threads; t++)
    if (pthread_create(&tid[t], NULL, stat_worker, NULL) != 0)
      abort();
  for (long t = 0; t < threads; t++)
    pthread_join(tid[t], NULL);
  double t2 = now(CLOCK_MONOTONIC);
  printf("files=%lu stats=%lu threads=%ld list_wall=%.3f stat_wall=%.3f\n",
         (unsigned long)nfiles, (unsigned long)nstats, threads, t1 - t0,
         t2 - t0);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "stat") == 0)
    return stat_floor(argc - 2, argv + 2);
  if (argc >= 3 && strcmp(argv[1], "codec") == 0)
    return codec(argc - 2, argv + 2);
  if (argc >= 3 && strcmp(argv[1], "io") == 0)
    return io(argc - 2, argv + 2);
  fprintf(stderr,
          "usage: floor codec [--gzip] [--brotli] [--threads N] DIR... |\n"
          "       floor io DIR... |\n"
          "       floor stat [--gzip] [--brotli] [--threads N] DIR...\n");
  return 2;
}
