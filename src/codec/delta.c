/* The .dcb and .dcz encoders (delta.h): one call each, the dictionary and
 * the input whole in memory, as the codecs want them for a raw dictionary.
 *
 * dcb: brotli's window is chosen to cover the input (22 at least, 24 at
 * most, as the RFC allows); the dictionary sits before it and is reached
 * by distances past the window (brotli's compound dictionary), so its
 * whole length is usable up to PC__DCB_DICT_MAX.
 * dcz: zstd's window must reach back over the prefix, so it is the largest
 * power of two the RFC allows for that dictionary: at least 8 MiB, at most
 * 1.25 x the dictionary, never over 128 MiB; long-distance matching is on
 * from 8 MiB up, as `zstd --patch-from` does for large references.
 */
#include "codec/delta.h"

#include <brotli/encode.h>
#include <stdlib.h>
#include <string.h>
#if PC_HAVE_ZSTD
#include <zstd.h>
#endif

static const unsigned char dcb_magic[4] = {0xff, 0x44, 0x43, 0x42};
static const unsigned char dcz_magic[8] = {0x5e, 0x2a, 0x4d, 0x18,
                                           0x20, 0x00, 0x00, 0x00};

int pc__delta_fits(pc_delta_format_t f, uint64_t dict_size) {
  uint64_t max = f == PC_DCB ? PC__DCB_DICT_MAX : PC__DCZ_DICT_MAX;
  return dict_size <= max ? 0 : PC_EDICTWINDOW;
}

/* log2 of the smallest power of two >= x (x >= 1). */
static int ceil_log2(uint64_t x) {
  int l = 0;
  while (((uint64_t)1 << l) < x)
    l++;
  return l;
}

static int dcb_lgwin(uint64_t in_size) {
  int l = ceil_log2(in_size ? in_size : 1);
  return l < 22 ? 22 : l > 24 ? 24 : l;
}

/* The dcz window: floor(log2(min(128 MiB, max(8 MiB, 1.25 x dict)))). */
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

uint64_t pc__delta_mem(pc_delta_format_t f, int level, uint64_t dict_size,
                       uint64_t in_size) {
  (void)level;
  if (f == PC_DCB) /* measured as for plain brotli 10..11: ~20 B/B, plus
                       the prepared dictionary's hash (~8 B/B) */
    return 20 * in_size + 8 * dict_size + ((uint64_t)1 << dcb_lgwin(in_size));
  /* zstd 19 with a window over the prefix: its tables and the window */
  return ((uint64_t)3 << dcz_wlog(dict_size)) + 4 * in_size;
}

static int put_header(pc__buf_t *out, const unsigned char *magic, size_t mn,
                      const unsigned char hash[PC__SHA256_LEN]) {
  int err = pc__buf_append(out, magic, mn);
  return err != 0 ? err : pc__buf_append(out, hash, PC__SHA256_LEN);
}

#if PC_HAVE_BROTLI_DICT
static int dcb(int level, const unsigned char *dict, size_t dn,
               const unsigned char *in, size_t n, pc__buf_t *out) {
  BrotliEncoderPreparedDictionary *pd;
  BrotliEncoderState *s;
  size_t room;
  int err = 0;

  pd = BrotliEncoderPrepareDictionary(BROTLI_SHARED_DICTIONARY_RAW, dn, dict,
                                      BROTLI_MAX_QUALITY, NULL, NULL, NULL);
  if (pd == NULL)
    return -ENOMEM;
  if ((s = BrotliEncoderCreateInstance(NULL, NULL, NULL)) == NULL) {
    BrotliEncoderDestroyPreparedDictionary(pd);
    return -ENOMEM;
  }
  room = BrotliEncoderMaxCompressedSize(n);
  if (room == 0)
    room = n + 1024; /* too large for brotli's bound: grown below */
  if (!BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY, (uint32_t)level) ||
      !BrotliEncoderSetParameter(s, BROTLI_PARAM_LGWIN,
                                 (uint32_t)dcb_lgwin(n)) ||
      !BrotliEncoderSetParameter(s, BROTLI_PARAM_SIZE_HINT,
                                 n > (1u << 30) ? 1u << 30 : (uint32_t)n) ||
      !BrotliEncoderAttachPreparedDictionary(s, pd))
    err = PC_ECODEC;
  while (err == 0) {
    size_t avail_in = n, avail_out, before;
    const uint8_t *next_in = in;
    uint8_t *next_out;
    if ((err = pc__buf_reserve(out, room)) != 0)
      break;
    before = avail_out = out->cap - out->len;
    next_out = out->data + out->len;
    if (!BrotliEncoderCompressStream(s, BROTLI_OPERATION_FINISH, &avail_in,
                                     &next_in, &avail_out, &next_out, NULL))
      err = PC_ECODEC;
    else if (BrotliEncoderIsFinished(s)) {
      out->len += before - avail_out;
      break;
    } else { /* the bound was not enough: not expected, but stay correct */
      out->len += before - avail_out;
      in = next_in, n = avail_in;
    }
  }
  BrotliEncoderDestroyInstance(s);
  BrotliEncoderDestroyPreparedDictionary(pd);
  return err;
}
#endif

#if PC_HAVE_ZSTD
static int dcz(int level, const unsigned char *dict, size_t dn,
               const unsigned char *in, size_t n, pc__buf_t *out) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  size_t room = ZSTD_compressBound(n), r;
  int wlog = dcz_wlog(dn), err;

  if (c == NULL)
    return -ENOMEM;
  if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, wlog)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_enableLongDistanceMatching,
                                          dn >= ((size_t)8 << 20))) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0)) ||
      ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(c, n)) ||
      ZSTD_isError(ZSTD_CCtx_refPrefix(c, dict, dn))) {
    ZSTD_freeCCtx(c);
    return PC_ECODEC;
  }
  if ((err = pc__buf_reserve(out, room)) != 0) {
    ZSTD_freeCCtx(c);
    return err;
  }
  r = ZSTD_compress2(c, out->data + out->len, out->cap - out->len, in, n);
  ZSTD_freeCCtx(c);
  if (ZSTD_isError(r))
    return PC_ECODEC;
  out->len += r;
  return 0;
}
#endif

int pc__delta_compress(pc_delta_format_t f, int level,
                       const unsigned char *dict, size_t dn,
                       const unsigned char hash[PC__SHA256_LEN],
                       const unsigned char *in, size_t n, pc__buf_t *out) {
  size_t start = out->len;
  int err;

  if (!pc_delta_available(f))
    return f == PC_DCB ? PC_ENODCB : PC_ENOZSTD;
  if ((err = pc__delta_fits(f, dn)) != 0)
    return err;
  if (f == PC_DCB)
    err = put_header(out, dcb_magic, sizeof(dcb_magic), hash);
  else
    err = put_header(out, dcz_magic, sizeof(dcz_magic), hash);
#if PC_HAVE_BROTLI_DICT
  if (err == 0 && f == PC_DCB)
    err = dcb(level, dict, dn, in, n, out);
#endif
#if PC_HAVE_ZSTD
  if (err == 0 && f == PC_DCZ)
    err = dcz(level, dict, dn, in, n, out);
#endif
  if (err != 0)
    out->len = start; /* nothing half-written */
  return err;
}

int pc_delta_available(pc_delta_format_t f) {
  if (f == PC_DCB)
    return PC_HAVE_BROTLI_DICT;
  return f == PC_DCZ && PC_HAVE_ZSTD;
}

int pc__delta_skip_named(const char *s) {
  int k;

  for (k = PC_DSKIP_NONE + 1; k < PC_DSKIP_MAX_; k++)
    if (strcmp(s, pc_delta_skip_name((pc_delta_skip_t)k)) == 0)
      return k;
  return -1;
}

const char *pc_delta_skip_name(pc_delta_skip_t s) {
  static const char *const names[PC_DSKIP_MAX_] = {
      NULL,   "ratio",   "identical", "window",    "link", "error",
      "same", "private", "large",     "ambiguous", "name", "changed"};
  return s > PC_DSKIP_NONE && s < PC_DSKIP_MAX_ ? names[s] : NULL;
}
