/* SHA-256 against FIPS 180-4's vectors, and the .dcb/.dcz encoders
 * (src/codec/delta.c) decoded by the codecs' own decoders with the dictionary:
 * the RFC 9842 header (magic, the dictionary's SHA-256), the window
 * limits, and a delta far smaller than the file compressed alone.
 */
#include "codec/delta.h"
#include "common/sha256.h"

#include <brotli/decode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if PC_HAVE_ZSTD
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#endif

#include "expect.h"

static void hex(const unsigned char *h, char *out) {
  int i;
  for (i = 0; i < PC__SHA256_LEN; i++)
    sprintf(out + 2 * i, "%02x", h[i]);
}

static void test_sha256(void) {
  unsigned char h[PC__SHA256_LEN];
  char x[65];
  unsigned char *a;
  pc__sha256_t s;
  size_t i;

  cur = "sha256";
  pc__sha256("", 0, h);
  hex(h, x);
  EXPECT(strcmp(x, "e3b0c44298fc1c149afbf4c8996fb924"
                   "27ae41e4649b934ca495991b7852b855") == 0);
  pc__sha256("abc", 3, h);
  hex(h, x);
  EXPECT(strcmp(x, "ba7816bf8f01cfea414140de5dae2223"
                   "b00361a396177a9cb410ff61f20015ad") == 0);
  pc__sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, h);
  hex(h, x);
  EXPECT(strcmp(x, "248d6a61d20638b8e5c026930c3e6039"
                   "a33ce45964ff2167f6ecedd419db06c1") == 0);
  /* One million 'a', fed in pieces of every length from 1 up. */
  a = malloc(1000000);
  memset(a, 'a', 1000000);
  pc__sha256_init(&s);
  for (i = 0; i < 1000000;) {
    size_t n = i % 131 + 1;
    if (n > 1000000 - i)
      n = 1000000 - i;
    pc__sha256_update(&s, a + i, n);
    i += n;
  }
  pc__sha256_final(&s, h);
  hex(h, x);
  EXPECT(strcmp(x, "cdc76e5c9914fb9281a1c7e284d73e67"
                   "f1809a48a497200e046d39ccc7112cd0") == 0);
  free(a);
}

/* Text-like bytes from a seeded generator, and the same with edits. */
static unsigned char *text(size_t n, unsigned seed) {
  static const char *words[] = {"function", "return", "const", "this",
                                "value",    "=>",     "if",    "else",
                                "props",    "state",  "{",     "}"};
  unsigned char *p = malloc(n);
  size_t i = 0;
  unsigned x = seed;
  while (i < n) {
    const char *w;
    x = x * 1103515245u + 12345u;
    w = words[(x >> 16) % 12];
    while (*w && i < n)
      p[i++] = (unsigned char)*w++;
    if (i < n)
      p[i++] = (x >> 8) % 7 ? ' ' : '\n';
  }
  return p;
}

static void edit(unsigned char *p, size_t n) {
  size_t i;
  for (i = 1000; i + 50 < n; i += n / 20)
    memcpy(p + i, "/* release two changed this line of the bundle */", 50);
}

static void check_header(const pc__buf_t *b, pc_delta_format_t f,
                         const unsigned char hash[PC__SHA256_LEN]) {
  static const unsigned char dcb[4] = {0xff, 0x44, 0x43, 0x42};
  static const unsigned char dcz[8] = {0x5e, 0x2a, 0x4d, 0x18,
                                       0x20, 0x00, 0x00, 0x00};
  size_t m = f == PC_DCB ? 4 : 8;
  EXPECT(b->len > m + PC__SHA256_LEN);
  EXPECT(memcmp(b->data, f == PC_DCB ? dcb : dcz, m) == 0);
  EXPECT(memcmp(b->data + m, hash, PC__SHA256_LEN) == 0);
}

#if PC_HAVE_ZSTD
static void test_dcz(const unsigned char *dict, size_t dn,
                     const unsigned char *in, size_t n) {
  unsigned char hash[PC__SHA256_LEN], *back = malloc(n + 1);
  pc__buf_t b = {0};
  ZSTD_DCtx *d = ZSTD_createDCtx();
  ZSTD_frameHeader fh;
  size_t r, plain = ZSTD_compressBound(n);
  void *pz = malloc(plain);

  cur = "dcz";
  pc__sha256(dict, dn, hash);
  EXPECT(pc__delta_compress(PC_DCZ, 19, dict, dn, hash, in, n, &b) == 0);
  check_header(&b, PC_DCZ, hash);
  /* The frame after the skippable one: its window within the RFC's. */
  EXPECT(ZSTD_getFrameHeader(&fh, b.data + PC__DCZ_HEADER,
                             b.len - PC__DCZ_HEADER) == 0);
  EXPECT(fh.windowSize <= ((uint64_t)8 << 20) || fh.windowSize <= dn + dn / 4);
  EXPECT(fh.frameContentSize == n);
  /* zstd skips the skippable frame; the prefix is the dictionary. */
  EXPECT(!ZSTD_isError(ZSTD_DCtx_refPrefix(d, dict, dn)));
  r = ZSTD_decompressDCtx(d, back, n + 1, b.data, b.len);
  EXPECT(!ZSTD_isError(r) && r == n && memcmp(back, in, n) == 0);
  /* Far smaller than the file compressed alone. */
  plain = ZSTD_compress(pz, plain, in, n, 19);
  EXPECT(!ZSTD_isError(plain) && b.len * 10 < plain);
  printf("dcz: %zu bytes -> %zu alone, %zu against its predecessor\n", n, plain,
         b.len);
  ZSTD_freeDCtx(d);
  free(pz);
  free(back);
  pc__buf_free(&b);
}
#endif

static void test_dcb(const unsigned char *dict, size_t dn,
                     const unsigned char *in, size_t n) {
  unsigned char hash[PC__SHA256_LEN];
  pc__buf_t b = {0};

  cur = "dcb";
  pc__sha256(dict, dn, hash);
  if (!pc_delta_available(PC_DCB)) {
    EXPECT(pc__delta_compress(PC_DCB, 11, dict, dn, hash, in, n, &b) ==
           PC_ENODCB);
    EXPECT(b.len == 0);
    printf("dcb: this build has brotli < 1.1 (PC_ENODCB, as it should)\n");
    return;
  }
  EXPECT(pc__delta_compress(PC_DCB, 11, dict, dn, hash, in, n, &b) == 0);
  check_header(&b, PC_DCB, hash);
#if PC_HAVE_BROTLI_DICT
  {
    BrotliDecoderState *s = BrotliDecoderCreateInstance(NULL, NULL, NULL);
    unsigned char *back = malloc(n + 1);
    size_t avail_in = b.len - PC__DCB_HEADER, avail_out = n + 1;
    const uint8_t *next_in = b.data + PC__DCB_HEADER;
    uint8_t *next_out = back;
    EXPECT(BrotliDecoderAttachDictionary(s, BROTLI_SHARED_DICTIONARY_RAW, dn,
                                         dict));
    EXPECT(BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out,
                                         &next_out, NULL) ==
           BROTLI_DECODER_RESULT_SUCCESS);
    EXPECT((size_t)(next_out - back) == n && memcmp(back, in, n) == 0);
    printf("dcb: %zu bytes -> %zu against its predecessor\n", n, b.len);
    BrotliDecoderDestroyInstance(s);
    free(back);
  }
#endif
  pc__buf_free(&b);
}

static void test_limits(void) {
  unsigned char hash[PC__SHA256_LEN] = {0}, one = 'x';
  pc__buf_t b = {0};

  cur = "limits";
  EXPECT(pc__delta_fits(PC_DCB, (uint64_t)16 << 20) == 0);
  EXPECT(pc__delta_fits(PC_DCB, ((uint64_t)16 << 20) + 1) == PC_EDICTWINDOW);
  EXPECT(pc__delta_fits(PC_DCZ, (uint64_t)128 << 20) == 0);
  EXPECT(pc__delta_fits(PC_DCZ, ((uint64_t)128 << 20) + 1) == PC_EDICTWINDOW);
  /* Over the limit: refused before anything is written (the size is all
   * that is looked at, so a short buffer stands for a large one). */
  if (pc_delta_available(PC_DCZ)) {
    EXPECT(pc__delta_compress(PC_DCZ, 19, &one, ((size_t)128 << 20) + 1, hash,
                              &one, 1, &b) == PC_EDICTWINDOW);
    EXPECT(b.len == 0);
  }
  EXPECT(strcmp(pc_delta_ext(PC_DCB), "dcb") == 0);
  EXPECT(strcmp(pc_delta_ext(PC_DCZ), "dcz") == 0);
}

int main(void) {
  size_t n = 300000;
  unsigned char *old = text(n, 7), *new = text(n, 7);

  edit(new, n);
  test_sha256();
  test_limits();
#if PC_HAVE_ZSTD
  test_dcz(old, n, new, n);
#endif
  test_dcb(old, n, new, n);
  free(old);
  free(new);
  printf("%d checks, %d failed\n", checks, failures);
  return failures != 0;
}
