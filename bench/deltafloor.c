/* bench/deltafloor.c: the codec floor of a run with deltas, for
 * bench/delta.sh (its cost figures against what the codecs alone take).
 *
 *   deltafloor [--threads N] [--no-dcb] R1 R2 PAIRS.tsv
 *
 * For each "changed" line of PAIRS.tsv (bench/delta_pairs.sh: `changed NEW
 * OLD SIZE OLD_SIZE`, NEW below R2, OLD below R1), the bare codec calls
 * precompress makes for the delta outputs, with src/codec/delta.c's parameters:
 *   dcb: brotli 11, OLD attached as a raw prepared dictionary, lgwin
 *        covering NEW (22..24), size hint NEW's size (needs brotli >= 1.1:
 *        built without it, or with --no-dcb for a precompress that
 *        writes no .dcb, dcb is left out and the line says dcb=0);
 *   dcz: zstd 19, OLD as a prefix (ZSTD_CCtx_refPrefix), windowLog
 *        floor(log2(min(128 MiB, max(8 MiB, 1.25 x OLD)))), long-distance
 *        matching from an 8 MiB OLD, the content size in the frame.
 * and, to know the slowest job, the same file's plain formats as
 * bench/floor.c's `codec --gzip --brotli` times them (raw deflate 9,
 * BrotliEncoderCompress 11/22). One file's four codecs run on one thread,
 * as in one precompress job; with N threads (default 1) the files are taken
 * largest first from one queue. CPU is CLOCK_THREAD_CPUTIME_ID around each
 * call; reading is not counted.
 *
 * Prints one line: files=, delta_cpu= (dcb + dcz of every file), plain_cpu=
 * (gzip + brotli of these files: floor codec on R2 counts them too),
 * slowest= (one file's four codecs), slowest_name=, wall= (the N threads'
 * wall over the whole work), dcb= (1 when .dcb was made).
 *
 * Built by bench/delta.sh against the brotli 1.1 prefix of
 * bench/build_brotli11.sh: cc -O2 -pthread deltafloor.c -lbrotlienc
 * -lbrotlicommon -lzstd -lz -lm.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

/* brotli >= 1.1 installs shared_dictionary.h (and has the dictionary API);
 * 1.0.9 has neither. */
#if defined(__has_include)
#if __has_include(<brotli/shared_dictionary.h>)
#define HAVE_DCB 1
#endif
#endif
#ifndef HAVE_DCB
#define HAVE_DCB 0
#endif

typedef struct item {
  char *old, *new;  /* paths */
  size_t size;      /* NEW's, for the order */
  double delta_cpu; /* dcb + dcz */
  double plain_cpu; /* gzip + brotli */
} item_t;

static item_t *items;
static int want_dcb = HAVE_DCB;
static size_t nitems;
static atomic_size_t next_item;

static void die(const char *what, const char *arg) {
  fprintf(stderr, "deltafloor: %s%s%s\n", what, arg ? ": " : "",
          arg ? arg : "");
  exit(1);
}

static double now(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  unsigned char *b;
  long len;
  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0)
    die(strerror(errno), path);
  if ((b = malloc((size_t)len + 1)) == NULL ||
      fread(b, 1, (size_t)len, f) != (size_t)len)
    die("cannot read", path);
  fclose(f);
  *n = (size_t)len;
  return b;
}

/* ceil_log2 (with dcb()'s clamp to 22..24) and dcz_wlog are copies of
 * src/codec/delta.c's window choices: this file builds without a build tree.
 * Change them together. */
#if HAVE_DCB
static int ceil_log2(uint64_t x) {
  int l = 0;
  while (((uint64_t)1 << l) < x)
    l++;
  return l;
}
#endif

static int dcz_wlog(uint64_t dict_size) {
  uint64_t w = dict_size + dict_size / 4;
  int l = 0;
  if (w < ((uint64_t)8 << 20))
    w = (uint64_t)8 << 20;
  if (w > ((uint64_t)128 << 20))
    w = (uint64_t)128 << 20;
  while (((uint64_t)2 << l) <= w)
    l++;
  return l;
}

static void dcb(const unsigned char *d, size_t dn, const unsigned char *in,
                size_t n, unsigned char *out, size_t room) {
#if HAVE_DCB
  BrotliEncoderPreparedDictionary *pd =
      BrotliEncoderPrepareDictionary(BROTLI_SHARED_DICTIONARY_RAW, dn, d,
                                     BROTLI_MAX_QUALITY, NULL, NULL, NULL);
  BrotliEncoderState *s = BrotliEncoderCreateInstance(NULL, NULL, NULL);
  int l = ceil_log2(n ? n : 1);
  size_t avail_in = n, avail_out = room;
  const uint8_t *next_in = in;
  uint8_t *next_out = out;

  if (pd == NULL || s == NULL ||
      !BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY, 11) ||
      !BrotliEncoderSetParameter(s, BROTLI_PARAM_LGWIN,
                                 (uint32_t)(l < 22   ? 22
                                            : l > 24 ? 24
                                                     : l)) ||
      !BrotliEncoderSetParameter(s, BROTLI_PARAM_SIZE_HINT, (uint32_t)n) ||
      !BrotliEncoderAttachPreparedDictionary(s, pd) ||
      !BrotliEncoderCompressStream(s, BROTLI_OPERATION_FINISH, &avail_in,
                                   &next_in, &avail_out, &next_out, NULL) ||
      !BrotliEncoderIsFinished(s))
    die("dcb failed", NULL);
  BrotliEncoderDestroyInstance(s);
  BrotliEncoderDestroyPreparedDictionary(pd);
#else
  (void)d, (void)dn, (void)in, (void)n, (void)out, (void)room;
#endif
}

static void dcz(const unsigned char *d, size_t dn, const unsigned char *in,
                size_t n, unsigned char *out, size_t room) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  if (c == NULL ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 19)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, dcz_wlog(dn))) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_enableLongDistanceMatching,
                                          dn >= ((size_t)8 << 20))) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0)) ||
      ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(c, n)) ||
      ZSTD_isError(ZSTD_CCtx_refPrefix(c, d, dn)) ||
      ZSTD_isError(ZSTD_compress2(c, out, room, in, n)))
    die("dcz failed", NULL);
  ZSTD_freeCCtx(c);
}

static void plain(const unsigned char *in, size_t n, unsigned char *out,
                  size_t room) {
  z_stream z;
  size_t bn = room;
  memset(&z, 0, sizeof(z));
  if (deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    die("deflateInit2 failed", NULL);
  z.next_in = (Bytef *)in;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)room;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END)
    die("deflate failed", NULL);
  deflateEnd(&z);
  if (!BrotliEncoderCompress(11, 22, BROTLI_MODE_GENERIC, n, in, &bn, out))
    die("brotli failed", NULL);
}

static void *worker(void *arg) {
  size_t i;
  (void)arg;
  while ((i = atomic_fetch_add(&next_item, 1)) < nitems) {
    item_t *it = &items[i];
    size_t dn, n, room;
    unsigned char *d = slurp(it->old, &dn), *in = slurp(it->new, &n), *out;
    double t0, t1, t2;
    room = n + n / 2 + (1 << 16) + BrotliEncoderMaxCompressedSize(n);
    if ((out = malloc(room)) == NULL)
      die("out of memory", NULL);
    t0 = now(CLOCK_THREAD_CPUTIME_ID);
    if (want_dcb)
      dcb(d, dn, in, n, out, room);
    dcz(d, dn, in, n, out, room);
    t1 = now(CLOCK_THREAD_CPUTIME_ID);
    plain(in, n, out, room);
    t2 = now(CLOCK_THREAD_CPUTIME_ID);
    it->delta_cpu = t1 - t0;
    it->plain_cpu = t2 - t1;
    free(d), free(in), free(out);
  }
  return NULL;
}

static int by_size_desc(const void *a, const void *b) {
  const item_t *x = a, *y = b;
  return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

static char *join(const char *dir, const char *name) {
  char *p;
  if (asprintf(&p, "%s/%s", dir, name) < 0)
    die("out of memory", NULL);
  return p;
}

int main(int argc, char **argv) {
  int threads = 1, a = 1;
  size_t cap = 0, i, slow = 0;
  char line[8192];
  double delta = 0, pl = 0, w0;
  pthread_t tid[64];
  FILE *f;

  for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
    if (strcmp(argv[a], "--threads") == 0 && a + 1 < argc)
      threads = atoi(argv[++a]);
    else if (strcmp(argv[a], "--no-dcb") == 0)
      want_dcb = 0;
    else
      break;
  }
  if (argc - a != 3 || threads < 1 || threads > 64) {
    fprintf(stderr,
            "usage: deltafloor [--threads N] [--no-dcb] R1 R2 PAIRS.tsv\n");
    return 2;
  }
  if ((f = fopen(argv[a + 2], "r")) == NULL)
    die(strerror(errno), argv[a + 2]);
  while (fgets(line, sizeof(line), f) != NULL) {
    char *kind = strtok(line, "\t\n"), *new = strtok(NULL, "\t\n"),
         *old = strtok(NULL, "\t\n"), *nsz = strtok(NULL, "\t\n");
    if (kind == NULL || strcmp(kind, "changed") != 0)
      continue;
    if (old == NULL || new == NULL || nsz == NULL)
      die("a changed line without OLD, NEW and sizes in", argv[a + 2]);
    if (nitems == cap && (items = realloc(items, (cap = cap ? 2 * cap : 64) *
                                                     sizeof(*items))) == NULL)
      die("out of memory", NULL);
    memset(&items[nitems], 0, sizeof(*items));
    items[nitems].old = join(argv[a], old);
    items[nitems].new = join(argv[a + 1], new);
    items[nitems].size = strtoull(nsz, NULL, 10);
    nitems++;
  }
  fclose(f);
  if (nitems > 0)
    qsort(items, nitems, sizeof(*items), by_size_desc);
  w0 = now(CLOCK_MONOTONIC);
  for (i = 0; i < (size_t)threads; i++)
    if (pthread_create(&tid[i], NULL, worker, NULL) != 0)
      die("pthread_create failed", NULL);
  for (i = 0; i < (size_t)threads; i++)
    pthread_join(tid[i], NULL);
  w0 = now(CLOCK_MONOTONIC) - w0;
  for (i = 0; i < nitems; i++) {
    delta += items[i].delta_cpu;
    pl += items[i].plain_cpu;
    if (items[i].delta_cpu + items[i].plain_cpu >
        items[slow].delta_cpu + items[slow].plain_cpu)
      slow = i;
  }
  printf("files=%zu delta_cpu=%.3f plain_cpu=%.3f slowest=%.3f "
         "slowest_name=%s wall=%.3f dcb=%d\n",
         nitems, delta, pl,
         nitems ? items[slow].delta_cpu + items[slow].plain_cpu : 0.0,
         nitems ? items[slow].new : "-", w0, want_dcb);
  return 0;
}
