/* The decoders (decode.h): zlib's inflate for gzip, libbrotlidec, and
 * libzstd's streaming decoder, each run over one buffer, its output handed
 * on in pieces of OUT bytes so a large entry is never decoded whole in
 * memory.
 */
#include "codec/decode.h"

#include <brotli/decode.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#if PC_HAVE_ZSTD
#include <zstd.h>
#endif

#define OUT ((size_t)1 << 16)

/* One gzip member (windowBits 15 + 16: gzip only, no zlib or raw
 * stream), ending at the end of the input: zlib stops after a member, and
 * what follows it would be written to disk undecoded.
 */
static int gz_decode(const unsigned char *in, size_t len, unsigned char *out,
                     pc__dec_sink_t sink, void *ctx) {
  z_stream z;
  int rc, err = 0;

  memset(&z, 0, sizeof(z));
  if (len > UINT_MAX)
    return PC_ECODEC;
  if (inflateInit2(&z, 15 + 16) != Z_OK)
    return -ENOMEM;
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = (uInt)len;
  do {
    z.next_out = out;
    z.avail_out = (uInt)OUT;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      err = rc == Z_MEM_ERROR ? -ENOMEM : PC_ECODEC;
      break;
    }
    if (OUT - z.avail_out > 0 && (err = sink(ctx, out, OUT - z.avail_out)) != 0)
      break;
    /* No progress with input left and room for output: truncated. */
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out > 0) {
      err = PC_ECODEC;
      break;
    }
  } while (rc != Z_STREAM_END);
  if (err == 0 && z.avail_in != 0)
    err = PC_ECODEC;
  inflateEnd(&z);
  return err;
}

static int br_decode(const unsigned char *in, size_t len, unsigned char *out,
                     pc__dec_sink_t sink, void *ctx) {
  BrotliDecoderState *d = BrotliDecoderCreateInstance(NULL, NULL, NULL);
  BrotliDecoderResult rc;
  const uint8_t *next_in = in;
  size_t avail_in = len;
  int err = 0;

  if (d == NULL)
    return -ENOMEM;
  do {
    uint8_t *next_out = out;
    size_t avail_out = OUT;
    rc = BrotliDecoderDecompressStream(d, &avail_in, &next_in, &avail_out,
                                       &next_out, NULL);
    if (rc == BROTLI_DECODER_RESULT_ERROR ||
        (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT && avail_in == 0)) {
      err = PC_ECODEC;
      break;
    }
    if (OUT - avail_out > 0 && (err = sink(ctx, out, OUT - avail_out)) != 0)
      break;
  } while (rc != BROTLI_DECODER_RESULT_SUCCESS);
  if (err == 0 && avail_in != 0)
    err = PC_ECODEC;
  BrotliDecoderDestroyInstance(d);
  return err;
}

#if PC_HAVE_ZSTD
/* One frame, its window at most 8 MiB: what the encoder writes (RFC 9659's
 * limit, codec.c). A larger window is not ours, and would cost memory.
 */
static int zst_decode(const unsigned char *in, size_t len, unsigned char *out,
                      pc__dec_sink_t sink, void *ctx) {
  ZSTD_DCtx *d = ZSTD_createDCtx();
  ZSTD_inBuffer ib = {in, len, 0};
  size_t rc = 1;
  int err = 0;

  if (d == NULL)
    return -ENOMEM;
  if (ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, 23)))
    err = PC_ECODEC;
  while (err == 0 && rc != 0) {
    ZSTD_outBuffer ob = {out, OUT, 0};
    size_t before = ib.pos;
    rc = ZSTD_decompressStream(d, &ob, &ib);
    if (ZSTD_isError(rc)) {
      err = PC_ECODEC;
      break;
    }
    if (ob.pos > 0 && (err = sink(ctx, out, ob.pos)) != 0)
      break;
    /* Input gone, frame not done, no output made: truncated. */
    if (rc != 0 && ib.pos == ib.size && ib.pos == before && ob.pos < ob.size)
      err = PC_ECODEC;
  }
  if (err == 0 && ib.pos != ib.size)
    err = PC_ECODEC;
  ZSTD_freeDCtx(d);
  return err;
}
#endif

int pc__decode(pc_format_t f, const unsigned char *in, size_t len,
               pc__dec_sink_t sink, void *ctx) {
  unsigned char *out = malloc(OUT);
  int err;

  if (out == NULL)
    return -ENOMEM;
  switch (f) {
  case PC_GZ:
    err = gz_decode(in, len, out, sink, ctx);
    break;
  case PC_BR:
    err = br_decode(in, len, out, sink, ctx);
    break;
  case PC_ZST:
#if PC_HAVE_ZSTD
    err = zst_decode(in, len, out, sink, ctx);
#else
    err = PC_ENOZSTD;
#endif
    break;
  default:
    err = PC_ECODEC;
    break;
  }
  free(out);
  return err;
}
