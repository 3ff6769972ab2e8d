/* gzip, brotli and zstd behind pc__enc_t.
 *
 * gzip is raw deflate (windowBits -15, memLevel 8, default strategy) in a
 * header we write ourselves, 1f 8b 08 00 00000000 XFL ff: no name, mtime 0,
 * OS 255, XFL as CPython writes it. zlib's own gzip wrapper writes OS 3, so
 * this is what makes .gz byte-identical to whitenoise's (Python's GzipFile).
 * brotli is set up the way Python's brotli.compress() sets it up (quality,
 * lgwin 22, generic mode, lgblock 0), with the size hint brotli would derive
 * from a whole-input call, so feeding it in chunks gives the same bytes.
 */
#include "codec/codec.h"

#include <brotli/encode.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <string.h>
#include <uv.h>
#include <zlib.h>
#if PC_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#if PC_HAVE_ZOPFLI
#include <zopfli/zopfli.h>
#endif
#if PC_HAVE_ZSTD
/* For ZSTD_getCParams(), exported by the shared library since 1.4. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#endif

/* Output is produced in steps of this much buffer growth. */
#define OUT_STEP (64 * 1024)

struct pc__enc {
  pc_format_t fmt;
  int level;
  int finished;
  pc__spares_t *spares; /* where its deflate or zstd state goes back */
  union {
    struct {
      z_stream *z; /* on the heap: zlib checks it never moves */
      uLong crc;
      uint32_t isize; /* input size mod 2^32, as the trailer wants */
      int xfl;
      int level;
      pc_gzip_engine_t engine;
      pc__buf_t whole; /* libdeflate, zopfli: the input, gathered */
      int header_done;
    } gz;
    BrotliEncoderState *br;
#if PC_HAVE_ZSTD
    ZSTD_CCtx *zst;
#endif
  } u;
};

/* The allocator brotli and zstd are given: blocks from MEM_BIG up come
 * straight from mmap() and go back with munmap().
 *
 * glibc's malloc maps large blocks too, but the first free() of one raises
 * its mmap threshold to that block's size (up to 32 MiB): later blocks of
 * that size come from the per-thread arenas and stay in the process after
 * free(). brotli 10..11 takes about 20 bytes per input byte (its hash
 * forest, ring buffer and optimal parser: 50 MiB for a 2.5 MB file), so
 * each worker's arena would keep tens of MiB it no longer uses: measured at
 * -j2 on bench's frontend corpus, peak RSS 92 MiB that way against 62.
 *
 * Every block carries a 16-byte header (which keeps malloc's alignment):
 * the mapping's length, or 0 for a malloc'd block.
 */
#define MEM_BIG ((size_t)1 << 20)
#define MEM_HDR ((size_t)16)

static void *take_block(pc__spares_t *sp, size_t len);
static int keep_block(pc__spares_t *sp, void *p, size_t len);

/* opaque: the run's spares, whose freed big blocks it reuses (NULL: none). */
static void *mem_alloc(void *opaque, size_t n) {
  unsigned char *p;
  size_t len = 0;

  if (n > SIZE_MAX - MEM_HDR - 4096)
    return NULL;
  if (n + MEM_HDR >= MEM_BIG) {
    len = n + MEM_HDR;
    if ((p = take_block(opaque, len)) != NULL)
      return p + MEM_HDR; /* its header already says len */
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
             0);
    if (p == MAP_FAILED) {
      /* Under an address-space limit (ulimit -v) malloc may still have
       * room in the arenas it reserved: use it.
       */
      len = 0;
      p = NULL;
    }
  }
  if (len == 0 && (p = malloc(n + MEM_HDR)) == NULL)
    return NULL;
  memcpy(p, &len, sizeof(len));
  return p + MEM_HDR;
}

static void mem_free(void *opaque, void *q) {
  unsigned char *p;
  size_t len;

  if (q == NULL)
    return;
  p = (unsigned char *)q - MEM_HDR;
  memcpy(&len, p, sizeof(len));
  if (len == 0)
    free(p);
  else if (!keep_block(opaque, p, len))
    munmap(p, len);
}

/* Encoder states a run keeps between files (codec.h). Owned by the run,
 * not by the pool's threads, which outlive it: pc__spares_free() at the
 * end of pc_run() leaves nothing behind (a zstd 19 context for a 10 MB
 * input is about 90 MB). At most `cap` of each kind, as many as the run
 * has jobs: one per worker is all that can be in use at once. Deflate
 * states are kept only at the run's gzip level.
 *
 * Also the big blocks (mem_alloc's mappings) a brotli encoder held when
 * it was freed, for the next encoder that asks for one of the same length.
 * brotli below quality 10 maps a hash table of 1 MiB (quality 5) to 32 MiB
 * (quality 9) for every file and touches a page of it for each position it
 * hashes: in a fresh mapping each is a page fault and a page zeroed, which
 * cost more than compressing a small file (a 2 KiB file at quality 9
 * touched 5 MiB of it). One quality asks for the same lengths file after
 * file, so only an exact length is taken. What stays true of memory, which
 * the run's estimates do not count these blocks in:
 * - a block is kept only as its encoder is freed, never while one
 *   compresses (whose peak is what pc__enc_mem() counts);
 * - only from encoders of quality 5..9, which map a hash table of 1 MiB
 *   and up for every file: a worker's next encoder (the run has one
 *   quality) asks for a block as it starts, and a request that finds none
 *   of its length gives back every block that worker left. A worker holds
 *   at most its last encoder's blocks, until its next one starts;
 * - pc__spares_trim() gives back every block when a worker has nothing to
 *   do (the run's loop calls it), so an idle worker holds none while the
 *   others run, under a memory limit too;
 * - at most 2 * cap blocks, each at most MEM_KEEP_MAX, the oldest given
 *   back first.
 */
#define MEM_KEEP_MAX ((size_t)64 << 20)

typedef struct {
  void *p;
  size_t len;
  uv_thread_t owner; /* the worker whose encoder left it */
} block_t;

struct pc__spares {
  uv_mutex_t lock;
  unsigned cap;
  int gz_level;
  unsigned ngz;
  z_stream **gz;
#if PC_HAVE_ZSTD
  unsigned nzst;
  ZSTD_CCtx **zst;
#endif
  unsigned nblk; /* oldest first */
  block_t *blk;  /* 2 * cap */
};

/* Set by a worker while it frees its brotli encoder: the only time
 * mem_free() keeps a block.
 */
static _Thread_local int keeping;

static void drop_block(pc__spares_t *sp, unsigned k) {
  memmove(&sp->blk[k], &sp->blk[k + 1],
          (sp->nblk - k - 1) * sizeof(sp->blk[0]));
  sp->nblk--;
}

/* A kept block of exactly len bytes (its header included), or NULL after
 * giving back the blocks the calling worker left.
 */
static void *take_block(pc__spares_t *sp, size_t len) {
  uv_thread_t self;
  block_t mine;
  unsigned k;

  if (sp == NULL)
    return NULL;
  self = uv_thread_self();
  for (;;) {
    mine.p = NULL;
    uv_mutex_lock(&sp->lock);
    for (k = sp->nblk; k-- > 0;) /* newest first: its pages are warmest */
      if (sp->blk[k].len == len) {
        void *p = sp->blk[k].p;
        drop_block(sp, k);
        uv_mutex_unlock(&sp->lock);
        return p;
      }
    for (k = sp->nblk; k-- > 0;)
      if (uv_thread_equal(&sp->blk[k].owner, &self)) {
        mine = sp->blk[k];
        drop_block(sp, k);
        break;
      }
    uv_mutex_unlock(&sp->lock);
    if (mine.p == NULL)
      return NULL;
    munmap(mine.p, mine.len); /* outside the lock, then look again */
  }
}

/* Keeps the mapping p of len bytes for a later take_block(): 1, or 0 when
 * it is not kept (the caller unmaps it). A full list gives back its oldest.
 */
static int keep_block(pc__spares_t *sp, void *p, size_t len) {
  block_t old;

  if (sp == NULL || !keeping || len > MEM_KEEP_MAX || sp->cap == 0)
    return 0;
  old.p = NULL;
  uv_mutex_lock(&sp->lock);
  if (sp->nblk == 2 * sp->cap) {
    old = sp->blk[0];
    drop_block(sp, 0);
  }
  sp->blk[sp->nblk].p = p;
  sp->blk[sp->nblk].len = len;
  sp->blk[sp->nblk].owner = uv_thread_self();
  sp->nblk++;
  uv_mutex_unlock(&sp->lock);
  if (old.p != NULL)
    munmap(old.p, old.len);
  return 1;
}

void pc__spares_trim(pc__spares_t *sp) {
  block_t b;

  if (sp == NULL)
    return;
  for (;;) {
    uv_mutex_lock(&sp->lock);
    if (sp->nblk == 0) {
      uv_mutex_unlock(&sp->lock);
      return;
    }
    b = sp->blk[--sp->nblk];
    uv_mutex_unlock(&sp->lock);
    munmap(b.p, b.len);
  }
}

static void gz_destroy(z_stream *z) {
  if (z != NULL) {
    deflateEnd(z);
    free(z);
  }
}

int pc__spares_new(pc__spares_t **out, unsigned cap, int gz_level) {
  pc__spares_t *sp = calloc(1, sizeof(*sp));
  int err = -ENOMEM;

  *out = NULL;
  if (sp == NULL)
    return -ENOMEM;
  sp->cap = cap;
  sp->gz_level = gz_level;
  if ((sp->gz = calloc(cap ? cap : 1, sizeof(*sp->gz))) == NULL)
    goto fail;
#if PC_HAVE_ZSTD
  if ((sp->zst = calloc(cap ? cap : 1, sizeof(*sp->zst))) == NULL)
    goto fail;
#endif
  if ((sp->blk = calloc(cap ? 2 * (size_t)cap : 1, sizeof(*sp->blk))) == NULL)
    goto fail;
  if ((err = uv_mutex_init(&sp->lock)) != 0)
    goto fail;
  *out = sp;
  return 0;
fail:
  free(sp->gz);
#if PC_HAVE_ZSTD
  free(sp->zst);
#endif
  free(sp->blk);
  free(sp);
  return err;
}

void pc__spares_free(pc__spares_t *sp) {
  unsigned k;

  if (sp == NULL)
    return;
  for (k = 0; k < sp->ngz; k++)
    gz_destroy(sp->gz[k]);
  free(sp->gz);
#if PC_HAVE_ZSTD
  for (k = 0; k < sp->nzst; k++)
    ZSTD_freeCCtx(sp->zst[k]);
  free(sp->zst);
#endif
  for (k = 0; k < sp->nblk; k++)
    munmap(sp->blk[k].p, sp->blk[k].len);
  free(sp->blk);
  uv_mutex_destroy(&sp->lock);
  free(sp);
}

/* A kept deflate state at `level`, or NULL. */
static z_stream *take_gz(pc__spares_t *sp, int level) {
  z_stream *z = NULL;
  if (sp == NULL || level != sp->gz_level)
    return NULL;
  uv_mutex_lock(&sp->lock);
  if (sp->ngz > 0)
    z = sp->gz[--sp->ngz];
  uv_mutex_unlock(&sp->lock);
  return z;
}

/* Keeps z for the next file, or frees it when it is not wanted. */
static void put_gz(pc__spares_t *sp, z_stream *z, int level) {
  if (sp != NULL && level == sp->gz_level) {
    uv_mutex_lock(&sp->lock);
    if (sp->ngz < sp->cap) {
      sp->gz[sp->ngz++] = z;
      z = NULL;
    }
    uv_mutex_unlock(&sp->lock);
  }
  gz_destroy(z);
}

static int gz_init(pc__enc_t *e, int level, pc_gzip_engine_t engine) {
  e->u.gz.engine = engine;
  e->u.gz.level = level;
  e->u.gz.crc = crc32(0L, Z_NULL, 0);
  if (engine != PC_GZIP_ZLIB) {
    if (!pc_gzip_engine_available(engine))
      return PC_ENOENGINE;
    /* The levels that compress hardest say so, as CPython does for 9. */
    e->u.gz.xfl = engine == PC_GZIP_ZOPFLI || level >= 9 ? 2
                  : level == 1                           ? 4
                                                         : 0;
    return 0;
  }
  if ((e->u.gz.z = take_gz(e->spares, level)) != NULL) {
    if (deflateReset(e->u.gz.z) != Z_OK) {
      gz_destroy(e->u.gz.z);
      e->u.gz.z = NULL;
      return PC_ECODEC;
    }
  } else {
    if ((e->u.gz.z = calloc(1, sizeof(z_stream))) == NULL)
      return -ENOMEM;
    int ret = deflateInit2(e->u.gz.z, level, Z_DEFLATED, -MAX_WBITS, 8,
                           Z_DEFAULT_STRATEGY);
    if (ret != Z_OK) {
      free(e->u.gz.z);
      /* Short of memory is said so, not as a failing library. */
      return ret == Z_MEM_ERROR ? -ENOMEM : PC_ECODEC;
    }
  }
  /* CPython's GzipFile: 2 for the best level, 4 for the fastest. */
  e->u.gz.xfl = level == 9 ? 2 : level == 1 ? 4 : 0;
  return 0;
}

static int gz_trailer(pc__enc_t *e, pc__buf_t *dst) {
  unsigned char tr[8];
  uint32_t crc = (uint32_t)e->u.gz.crc, sz = e->u.gz.isize;
  int i;
  for (i = 0; i < 4; i++) {
    tr[i] = (unsigned char)(crc >> (8 * i));
    tr[4 + i] = (unsigned char)(sz >> (8 * i));
  }
  e->finished = 1;
  return pc__buf_append(dst, tr, sizeof(tr));
}

/* libdeflate and zopfli take the whole input at once: gather it, then
 * compress at the end (header written by gz_feed, trailer here).
 */
static int gz_gather(pc__enc_t *e, const unsigned char *in, size_t n, int last,
                     pc__buf_t *dst) {
  pc__buf_t *w = &e->u.gz.whole;
  size_t i;
  int err;

  for (i = 0; i < n;) {
    uInt take = n - i > (1u << 30) ? (1u << 30) : (uInt)(n - i);
    e->u.gz.crc = crc32(e->u.gz.crc, in + i, take);
    e->u.gz.isize += (uint32_t)take;
    i += take;
  }
  if ((err = pc__buf_append(w, in, n)) != 0)
    return err;
  if (!last)
    return 0;
#if PC_HAVE_LIBDEFLATE
  if (e->u.gz.engine == PC_GZIP_LIBDEFLATE) {
    struct libdeflate_compressor *c =
        libdeflate_alloc_compressor(e->u.gz.level);
    size_t bound, got;
    if (c == NULL)
      return -ENOMEM;
    bound = libdeflate_deflate_compress_bound(c, w->len);
    if ((err = pc__buf_reserve(dst, bound)) != 0) {
      libdeflate_free_compressor(c);
      return err;
    }
    got = libdeflate_deflate_compress(c, w->data, w->len, dst->data + dst->len,
                                      bound);
    libdeflate_free_compressor(c);
    if (got == 0)
      return PC_ECODEC;
    dst->len += got;
  }
#endif
#if PC_HAVE_ZOPFLI
  if (e->u.gz.engine == PC_GZIP_ZOPFLI) {
    ZopfliOptions o;
    unsigned char *out = NULL;
    size_t outsize = 0;
    ZopfliInitOptions(&o);
    o.numiterations = e->u.gz.level;
    ZopfliCompress(&o, ZOPFLI_FORMAT_DEFLATE, w->data, w->len, &out, &outsize);
    if (out == NULL)
      return -ENOMEM;
    err = pc__buf_append(dst, out, outsize);
    free(out);
    if (err != 0)
      return err;
  }
#endif
  pc__buf_free(w);
  return gz_trailer(e, dst);
}

static int gz_feed(pc__enc_t *e, const unsigned char *in, size_t n, int last,
                   pc__buf_t *dst) {
  z_stream *z = e->u.gz.z;
  int flush = last ? Z_FINISH : Z_NO_FLUSH, ret, err;

  if (!e->u.gz.header_done) {
    const unsigned char hdr[10] = {
        0x1f, 0x8b, 8, 0, 0, 0, 0, 0, (unsigned char)e->u.gz.xfl, 0xff};
    if ((err = pc__buf_append(dst, hdr, sizeof(hdr))) != 0)
      return err;
    e->u.gz.header_done = 1;
  }
  if (e->u.gz.engine != PC_GZIP_ZLIB)
    return gz_gather(e, in, n, last, dst);
  /* zlib counts in uInt; feed huge chunks in slices. */
  do {
    uInt take = n > (1u << 30) ? (1u << 30) : (uInt)n;
    int f = take == n ? flush : Z_NO_FLUSH;
    e->u.gz.crc = crc32(e->u.gz.crc, in, take);
    e->u.gz.isize += (uint32_t)take;
    z->next_in = (Bytef *)in;
    z->avail_in = take;
    do {
      size_t room;
      if ((err = pc__buf_reserve(dst, OUT_STEP)) != 0)
        return err;
      room = dst->cap - dst->len;
      if (room > (1u << 30))
        room = 1u << 30;
      z->next_out = dst->data + dst->len;
      z->avail_out = (uInt)room;
      ret = deflate(z, f);
      if (ret == Z_STREAM_ERROR)
        return PC_ECODEC;
      dst->len += room - z->avail_out;
    } while (z->avail_out == 0 || (f == Z_FINISH && ret != Z_STREAM_END));
    in += take;
    n -= take;
  } while (n > 0);

  return last ? gz_trailer(e, dst) : 0;
}

/* Debian's libbrotlienc exits the process when an allocation fails. Under
 * an address-space limit (ulimit -v), first make sure what brotli 10..11
 * will take can be had: its binary-tree hasher takes 8 bytes per window
 * position (the whole 4 MiB window once input comes in pieces), its ring
 * buffer and copies up to four times the window, its optimal parser up to
 * 64 bytes per input byte of a metablock. Without a limit the kernel decides,
 * as for everyone.
 */
static int br_room(int level, uint64_t in_size) {
  struct rlimit rl;
  uint64_t win = (uint64_t)1 << 22, nodes, est;
  void *p;

  if (level < 10 || getrlimit(RLIMIT_AS, &rl) != 0 ||
      rl.rlim_cur == RLIM_INFINITY)
    return 0;
  nodes = in_size <= PC__WHOLE_MAX ? in_size : win;
  /* Generous on purpose: a file refused here fails cleanly, one brotli
   * cannot finish ends the process (seen at 80 MB with a 4.5 MiB file
   * when the parser's share was taken as 24 bytes per input byte).
   */
  est = ((uint64_t)4 << 20) + 8 * nodes + 4 * (in_size < win ? in_size : win) +
        64 * (in_size < ((uint64_t)1 << 20) ? in_size : ((uint64_t)1 << 20));
  /* Through mem_alloc, as brotli's own blocks: a malloc'd trial block
   * would raise malloc's mmap threshold (see mem_alloc).
   */
  if (est > SIZE_MAX || (p = mem_alloc(NULL, (size_t)est)) == NULL)
    return -ENOMEM;
  mem_free(NULL, p);
  return 0;
}

/* Peak memory of brotli 10..11 (lgwin 22) by input size: the process's
 * peak RSS above an idle one, one file at a time, on bench's frontend
 * files (minified and plain JavaScript, source maps, SVG; the largest of
 * what was seen near each size, rounded up), KiB of input to MiB taken.
 * Up to PC__WHOLE_MAX the input comes in one call and the hasher is sized
 * to it; beyond, to the 4 MiB window, and the optimal parser grows with the
 * metablock (up to 16 MiB).
 */
static const struct {
  uint64_t in_kib, mib;
} br_mem_table[] = {{0, 1},     {64, 4},    {256, 13},  {512, 17},
                    {1024, 24}, {2048, 35}, {2560, 40}, {4096, 54},
                    {8192, 68}, {16384, 72}};

/* brotli 0..9's hash table for a 4 MiB window, as brotli 1.0.9 and 1.1
 * choose it (encode.c, ChooseHasher): bytes.
 */
static uint64_t br_hasher(int level, uint64_t in_size) {
  int big = in_size >= ((uint64_t)1 << 20), bucket;

  if (level < 4)
    return (uint64_t)256 << 10; /* H2, H3, the one-pass table */
  if (level == 4)               /* H54, H4 */
    return big ? (uint64_t)4 << 20 : (uint64_t)512 << 10;
  bucket = big || level >= 7 ? 15 : 14; /* H6, H5: 4 bytes a slot */
  return ((uint64_t)4 << (bucket + level - 1)) + ((uint64_t)2 << bucket);
}

static uint64_t br_mem(int level, uint64_t in_size) {
  size_t k, n = PC__ARRAY_SIZE(br_mem_table);
  uint64_t kib = in_size >> 10;

  /* No optimal parser: the hash table, and what grows with a metablock
   * (up to 16 MiB of input): measured, the process's peak RSS above an
   * idle one on generated text of 64 KiB to 9 MB, beside the hash table,
   * was at most 4.5 times the input at 4..9 and 2.5 times at 2 (1.5 from
   * 5 MB on, where the 2 MiB to spare covers smaller inputs).
   */
  if (level < 10)
    return ((uint64_t)2 << 20) + br_hasher(level, in_size) +
           (level < 4 ? 2 : 5) * (in_size < ((uint64_t)16 << 20)
                                      ? in_size
                                      : ((uint64_t)16 << 20));
  if (kib >= br_mem_table[n - 1].in_kib)
    return (br_mem_table[n - 1].mib + 4) << 20; /* a margin past the table */
  for (k = 1; kib > br_mem_table[k].in_kib; k++)
    ;
  /* Linear between the two measured points around the size. */
  return ((br_mem_table[k - 1].mib << 20) +
          ((br_mem_table[k].mib - br_mem_table[k - 1].mib) << 20) *
              (kib - br_mem_table[k - 1].in_kib) /
              (br_mem_table[k].in_kib - br_mem_table[k - 1].in_kib));
}

static int br_init(pc__enc_t *e, int level, uint64_t in_size) {
  BrotliEncoderState *s;
  uint32_t hint;
  int err;

  if ((err = br_room(level, in_size)) != 0)
    return err;
  s = BrotliEncoderCreateInstance(mem_alloc, mem_free, e->spares);
  if (s == NULL)
    return -ENOMEM;
  /* What brotli derives itself when the whole input comes in one call:
   * its size, capped at 1 GiB.
   */
  hint = in_size >= (1u << 30) ? (1u << 30) : (uint32_t)in_size;
  if (!BrotliEncoderSetParameter(s, BROTLI_PARAM_MODE, BROTLI_MODE_GENERIC) ||
      !BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY, (uint32_t)level) ||
      !BrotliEncoderSetParameter(s, BROTLI_PARAM_LGWIN, 22) ||
      !BrotliEncoderSetParameter(s, BROTLI_PARAM_LGBLOCK, 0) ||
      !BrotliEncoderSetParameter(s, BROTLI_PARAM_SIZE_HINT, hint)) {
    BrotliEncoderDestroyInstance(s);
    return PC_ECODEC;
  }
  e->u.br = s;
  return 0;
}

static int br_feed(pc__enc_t *e, const unsigned char *in, size_t n, int last,
                   pc__buf_t *dst) {
  BrotliEncoderOperation op =
      last ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS;
  size_t avail_in = n;
  const uint8_t *next_in = in;
  int err;

  for (;;) {
    size_t avail_out, room;
    uint8_t *next_out;
    if ((err = pc__buf_reserve(dst, OUT_STEP)) != 0)
      return err;
    room = avail_out = dst->cap - dst->len;
    next_out = dst->data + dst->len;
    if (!BrotliEncoderCompressStream(e->u.br, op, &avail_in, &next_in,
                                     &avail_out, &next_out, NULL))
      return PC_ECODEC;
    dst->len += room - avail_out;
    if (last ? BrotliEncoderIsFinished(e->u.br)
             : avail_in == 0 && !BrotliEncoderHasMoreOutput(e->u.br))
      break;
  }
  e->finished = last;
  return 0;
}

#if PC_HAVE_ZSTD
/* RFC 9659: HTTP clients may refuse frames with a window above 8 MiB. */
#define ZSTD_MAX_WLOG 23

static int zst_init(pc__enc_t *e, int level, uint64_t in_size,
                    unsigned threads) {
  pc__spares_t *sp = e->spares;
  ZSTD_CCtx *c = NULL;
  ZSTD_compressionParameters cp;

  if (sp != NULL) {
    uv_mutex_lock(&sp->lock);
    if (sp->nzst > 0)
      c = sp->zst[--sp->nzst];
    uv_mutex_unlock(&sp->lock);
  }
  if (c == NULL && (c = ZSTD_createCCtx_advanced(
                        (ZSTD_customMem){mem_alloc, mem_free, NULL})) == NULL)
    return -ENOMEM;
  /* Every parameter back to its default: the last file's must not leak. */
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  cp = ZSTD_getCParams(level, in_size, 0);
  if (in_size >= PC__ZSTD_MT_MIN &&
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers,
                                          threads ? (int)threads : 1))) {
    /* A libzstd without threads: say so rather than write other bytes. */
    ZSTD_freeCCtx(c);
    return PC_ECODEC;
  }
  if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
      (cp.windowLog > ZSTD_MAX_WLOG &&
       ZSTD_isError(
           ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, ZSTD_MAX_WLOG))) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0)) ||
      ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(c, in_size))) {
    ZSTD_freeCCtx(c);
    return PC_ECODEC;
  }
  e->u.zst = c;
  return 0;
}

static int zst_feed(pc__enc_t *e, const unsigned char *in, size_t n, int last,
                    pc__buf_t *dst) {
  ZSTD_inBuffer ib = {in, n, 0};
  ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_continue;
  int err;

  for (;;) {
    ZSTD_outBuffer ob;
    size_t rem;
    if ((err = pc__buf_reserve(dst, OUT_STEP)) != 0)
      return err;
    ob.dst = dst->data + dst->len;
    ob.size = dst->cap - dst->len;
    ob.pos = 0;
    rem = ZSTD_compressStream2(e->u.zst, &ob, &ib, mode);
    if (ZSTD_isError(rem))
      return PC_ECODEC;
    dst->len += ob.pos;
    if (last ? rem == 0 : ib.pos == ib.size)
      break;
  }
  e->finished = last;
  return 0;
}
#endif

uint64_t pc__enc_cost_us(pc_format_t fmt, int level, pc_gzip_engine_t engine,
                         uint64_t in_size) {
  /* Bytes per microsecond (MB/s), and a start-up cost in microseconds. */
  uint64_t mbps, start = 0;

  switch (fmt) {
  case PC_GZ:
    if (engine == PC_GZIP_ZOPFLI)
      return 1000 + in_size * 10; /* ~0.1 MB/s */
    mbps = engine == PC_GZIP_LIBDEFLATE ? (level >= 10 ? 5 : 50)
                                        : (level >= 7 ? 20 : 40);
    break;
  case PC_BR:
    mbps = level >= 10 ? 1 : level >= 5 ? 10 : 50;
    start = level >= 10 ? 200 : 0; /* the optimal parser's set-up */
    if (level >= 10)               /* ~0.8 MB/s: 5 bytes in 4 microseconds */
      return start + in_size * 5 / 4;
    break;
  default: /* PC_ZST */
    mbps = level >= 16 ? 3 : level >= 10 ? 10 : 50;
    break;
  }
  return start + in_size / mbps;
}

uint64_t pc__enc_mem(pc_format_t fmt, int level, pc_gzip_engine_t engine,
                     uint64_t in_size) {
  switch (fmt) {
  case PC_GZ:
    /* zlib: its window and hash chains. libdeflate and zopfli hold the
     * whole input and their own tables (zopfli's grow with the input).
     */
    if (engine == PC_GZIP_ZLIB)
      return (uint64_t)512 << 10;
    return ((uint64_t)2 << 20) + in_size * (engine == PC_GZIP_ZOPFLI ? 4 : 1);
  case PC_BR:
    return br_mem(level, in_size);
#if PC_HAVE_ZSTD
  case PC_ZST: {
    ZSTD_compressionParameters cp = ZSTD_getCParams(level, in_size, 0);
    uint64_t m;
    if (cp.windowLog > ZSTD_MAX_WLOG)
      cp.windowLog = ZSTD_MAX_WLOG;
    m = ZSTD_estimateCCtxSize_usingCParams(cp);
    /* Its own threads each take a job's buffers as well. */
    return in_size >= PC__ZSTD_MT_MIN ? 3 * m : m;
  }
#endif
  default:
    return 0;
  }
}

int pc__enc_new(pc__enc_t **out, pc_format_t fmt, int level,
                pc_gzip_engine_t engine, uint64_t in_size, unsigned threads,
                pc__spares_t *spares) {
  pc__enc_t *e = calloc(1, sizeof(*e));
  int err;

  *out = NULL;
  if (e == NULL)
    return -ENOMEM;
  e->fmt = fmt;
  e->level = level;
  e->spares = spares;
  switch (fmt) {
  case PC_GZ:
    err = gz_init(e, level, engine);
    break;
  case PC_BR:
    err = br_init(e, level, in_size);
    break;
#if PC_HAVE_ZSTD
  case PC_ZST:
    err = zst_init(e, level, in_size, threads);
    break;
#endif
  default:
    err = PC_ENOZSTD;
    break;
  }
  if (err) {
    free(e);
    return err;
  }
  *out = e;
  return 0;
}

int pc__enc_feed(pc__enc_t *e, const unsigned char *in, size_t n, int last,
                 pc__buf_t *dst) {
  if (e->finished)
    return PC_ECODEC;
  switch (e->fmt) {
  case PC_GZ:
    return gz_feed(e, in, n, last, dst);
  case PC_BR:
    return br_feed(e, in, n, last, dst);
#if PC_HAVE_ZSTD
  case PC_ZST:
    return zst_feed(e, in, n, last, dst);
#endif
  default:
    return PC_ENOZSTD;
  }
}

void pc__enc_free(pc__enc_t *e) {
  if (e == NULL)
    return;
  switch (e->fmt) {
  case PC_GZ:
    pc__buf_free(&e->u.gz.whole);
    if (e->u.gz.z != NULL)
      put_gz(e->spares, e->u.gz.z, e->u.gz.level);
    break;
  case PC_BR:
    /* Its blocks to the run's spares, for the next file (see pc__spares). */
    keeping = e->level >= 5 && e->level <= 9;
    BrotliEncoderDestroyInstance(e->u.br);
    keeping = 0;
    break;
#if PC_HAVE_ZSTD
  case PC_ZST: {
    pc__spares_t *sp = e->spares;
    ZSTD_CCtx *c = e->u.zst;
    if (sp != NULL) {
      uv_mutex_lock(&sp->lock);
      if (sp->nzst < sp->cap) {
        sp->zst[sp->nzst++] = c;
        c = NULL;
      }
      uv_mutex_unlock(&sp->lock);
    }
    ZSTD_freeCCtx(c);
    break;
  }
#endif
  default:
    break;
  }
  free(e);
}
