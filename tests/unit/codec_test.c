/* The encoders (src/codec/codec.c), decoded by the codecs' own decoders:
 * every format and gzip engine, inputs empty, tiny, at the one-call limit
 * (PC__WHOLE_MAX) and past it, fed whole or in pieces of any size. The
 * bytes must not depend on how the input is cut, nor on whether a state
 * comes fresh or from the spares; gzip's header is whitenoise's, byte for
 * byte.
 */
#include "codec/codec.h"

#include <brotli/decode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#if PC_HAVE_ZSTD
#include <zstd.h>
#endif

#include "expect.h"

/* Text a little like code: compressible, not trivially. */
static unsigned char *make_input(size_t n, unsigned seed) {
  static const char *const words[] = {
      "function", "return", "const", "value", "=>",    "{",  "}", "(",
      ")",        ";",      "this",  "data",  "index", "\n", " ", "0x1f"};
  unsigned char *p = malloc(n ? n : 1);
  size_t i = 0;

  while (i < n) {
    const char *w;
    size_t k;
    seed = seed * 1103515245u + 12345u;
    w = words[(seed >> 16) % 16];
    for (k = 0; w[k] && i < n; k++)
      p[i++] = (unsigned char)w[k];
  }
  return p;
}

/* Decodes a whole container into out: 0 when it is one, else -1. */
static int decode(pc_format_t f, const pc__buf_t *in, unsigned char *out,
                  size_t cap, size_t *n) {
  if (f == PC_GZ) {
    z_stream z;
    int r;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + 15) != Z_OK)
      return -1;
    z.next_in = in->data;
    z.avail_in = (uInt)in->len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    r = inflate(&z, Z_FINISH);
    *n = z.total_out;
    inflateEnd(&z);
    return r == Z_STREAM_END && z.avail_in == 0 ? 0 : -1;
  }
  if (f == PC_BR) {
    *n = cap;
    return BrotliDecoderDecompress(in->len, in->data, n, out) ==
                   BROTLI_DECODER_RESULT_SUCCESS
               ? 0
               : -1;
  }
#if PC_HAVE_ZSTD
  {
    size_t r = ZSTD_decompress(out, cap, in->data, in->len);
    if (ZSTD_isError(r))
      return -1;
    *n = r;
    return 0;
  }
#else
  return -1;
#endif
}

/* The whole output of `in` through a new encoder, fed in pieces of `piece`
 * bytes (0: whole, with `last` on the one call). 0 or -1. */
static int encode(pc_format_t f, int level, pc_gzip_engine_t engine,
                  const unsigned char *in, size_t n, size_t piece,
                  pc__spares_t *sp, pc__buf_t *out) {
  pc__enc_t *e;
  size_t at = 0;
  int err;

  out->len = 0;
  if (pc__enc_new(&e, f, level, engine, n, 1, sp) != 0)
    return -1;
  if (piece == 0) {
    err = pc__enc_feed(e, in, n, 1, out);
  } else {
    err = 0;
    do {
      size_t k = n - at < piece ? n - at : piece;
      err = pc__enc_feed(e, in + at, k, at + k == n, out);
      at += k;
    } while (err == 0 && at < n);
  }
  pc__enc_free(e);
  return err == 0 ? 0 : -1;
}

static const struct {
  pc_format_t f;
  int level;
  pc_gzip_engine_t engine;
  const char *name;
} cases[] = {
    {PC_GZ, 9, PC_GZIP_ZLIB, "gz zlib 9"},
    {PC_GZ, 1, PC_GZIP_ZLIB, "gz zlib 1"},
    {PC_GZ, 12, PC_GZIP_LIBDEFLATE, "gz libdeflate 12"},
    {PC_GZ, 1, PC_GZIP_ZOPFLI, "gz zopfli 1"},
    {PC_BR, 11, PC_GZIP_ZLIB, "br 11"},
    {PC_BR, 5, PC_GZIP_ZLIB, "br 5"},
    {PC_BR, 1, PC_GZIP_ZLIB, "br 1"},
    {PC_BR, 0, PC_GZIP_ZLIB, "br 0"},
    {PC_ZST, 19, PC_GZIP_ZLIB, "zst 19"},
    {PC_ZST, 1, PC_GZIP_ZLIB, "zst 1"},
};

static int available(size_t k) {
  return pc_format_available(cases[k].f) &&
         (cases[k].f != PC_GZ || pc_gzip_engine_available(cases[k].engine));
}

/* Every case on inputs of sizes around the boundaries, whole and in
 * pieces: each decodes to its input, and all cuts give one output but at
 * brotli's qualities 0 and 1, whose stream cuts blocks where its input
 * was cut (their bytes are still the same for the same feed: the worker
 * feeds a file whole up to PC__WHOLE_MAX, then in PC__CHUNK pieces). */
static void round_trips(void) {
  const size_t sizes[] = {0,
                          1,
                          2,
                          100,
                          4096,
                          (size_t)PC__WHOLE_MAX - 1,
                          (size_t)PC__WHOLE_MAX,
                          (size_t)PC__WHOLE_MAX + 1};
  const size_t pieces[] = {0, 1, 7, 4096, 65536};
  size_t k, s, p;

  for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    if (!available(k))
      continue;
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
      size_t n = sizes[s], got;
      unsigned char *in = make_input(n, (unsigned)(n + k));
      unsigned char *back = malloc(n + 16);
      pc__buf_t first = {0}, out = {0};
      char what[96];
      /* The slow encoders take the large inputs whole and in 64 KiB
       * pieces only: in pieces of a few bytes they take minutes. */
      int slow = cases[k].level >= 10 || cases[k].engine == PC_GZIP_ZOPFLI;
      int cuts = !(cases[k].f == PC_BR && cases[k].level <= 1);
      /* zopfli gathers its input whole: no limit to cross. */
      if (slow && n > 5000 &&
          (n != (size_t)PC__WHOLE_MAX + 1 ||
           cases[k].engine == PC_GZIP_ZOPFLI)) {
        free(back);
        free(in);
        continue; /* one input past the one-call limit is enough for them */
      }
      for (p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
        if (n > 5000 && pieces[p] != 0 &&
            (pieces[p] < 4096 || (slow && pieces[p] == 4096)))
          continue;
        snprintf(what, sizeof(what), "%s, %zu bytes, pieces of %zu",
                 cases[k].name, n, pieces[p]);
        cur = what;
        EXPECT(encode(cases[k].f, cases[k].level, cases[k].engine, in, n,
                      pieces[p], NULL, &out) == 0);
        got = (size_t)-1;
        EXPECT(decode(cases[k].f, &out, back, n + 16, &got) == 0 && got == n &&
               memcmp(back, in, n) == 0);
        if (p == 0)
          pc__buf_append(&first, out.data, out.len);
        else if (cuts)
          EXPECT(out.len == first.len &&
                 memcmp(out.data, first.data, out.len) == 0);
      }
      pc__buf_free(&first);
      pc__buf_free(&out);
      free(back);
      free(in);
    }
  }
}

/* gzip: whitenoise's header (no name, mtime 0, OS 255, XFL 2 at level
 * 9) and trailer (CRC-32, size); a state from the spares writes what a
 * fresh one writes. */
static void gzip_bytes_and_spares(void) {
  static const unsigned char head[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff};
  unsigned char *in = make_input(50000, 3);
  pc__buf_t fresh = {0}, again = {0};
  pc__spares_t *sp = NULL;
  int round;

  cur = "gzip header";
  EXPECT(encode(PC_GZ, 9, PC_GZIP_ZLIB, in, 50000, 0, NULL, &fresh) == 0);
  EXPECT(fresh.len > 18 && memcmp(fresh.data, head, 10) == 0);
  EXPECT(fresh.len > 18 && fresh.data[fresh.len - 4] == (50000 & 0xff) &&
         fresh.data[fresh.len - 3] == ((50000 >> 8) & 0xff) &&
         crc32(0, in, 50000) == ((uLong)fresh.data[fresh.len - 8] |
                                 (uLong)fresh.data[fresh.len - 7] << 8 |
                                 (uLong)fresh.data[fresh.len - 6] << 16 |
                                 (uLong)fresh.data[fresh.len - 5] << 24));
  cur = "spares";
  EXPECT(pc__spares_new(&sp, 2, 9) == 0);
  for (round = 0; round < 3; round++) {
    EXPECT(encode(PC_GZ, 9, PC_GZIP_ZLIB, in, 50000, 4096, sp, &again) == 0);
    EXPECT(again.len == fresh.len &&
           memcmp(again.data, fresh.data, fresh.len) == 0);
#if PC_HAVE_ZSTD
    {
      pc__buf_t z1 = {0}, z2 = {0};
      EXPECT(encode(PC_ZST, 19, PC_GZIP_ZLIB, in, 50000, 0, NULL, &z1) == 0);
      EXPECT(encode(PC_ZST, 19, PC_GZIP_ZLIB, in, 50000, 777, sp, &z2) == 0);
      EXPECT(z1.len == z2.len && memcmp(z1.data, z2.data, z1.len) == 0);
      pc__buf_free(&z1);
      pc__buf_free(&z2);
    }
#endif
  }
  pc__spares_free(sp);
  pc__buf_free(&fresh);
  pc__buf_free(&again);
  free(in);
}

/* The size an encoder is made for is part of its bytes: a different
 * input through an encoder made for its size decodes, and the memory
 * estimate grows with the input for brotli 11. */
static void sizes_and_estimates(void) {
  cur = "estimates";
  EXPECT(pc__enc_mem(PC_BR, 11, PC_GZIP_ZLIB, 8u << 20) >
         pc__enc_mem(PC_BR, 11, PC_GZIP_ZLIB, 64u << 10));
  EXPECT(pc__enc_mem(PC_GZ, 9, PC_GZIP_ZLIB, 1u << 20) > 0);
}

int main(void) {
  round_trips();
  gzip_bytes_and_spares();
  sizes_and_estimates();
  printf("%d checks, %d failures\n", checks, failures);
  return failures != 0;
}
