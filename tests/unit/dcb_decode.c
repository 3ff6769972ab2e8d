/* dcb_decode DICT FILE.dcb: writes the .dcb decoded against DICT to
 * standard output, after checking its header (RFC 9842: FF 44 43 42, then
 * the dictionary's SHA-256). Exit 0; 1 for a bad header or stream; 77 in a
 * build whose brotli has no dictionary API (< 1.1), which tests take as
 * "cannot decode here". The test side of .dcb (tests/deltas/test_deltas.py):
 * Debian 12's brotli tools and Python module cannot decode one.
 */
#include "common/common.h"
#include "common/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if PC_HAVE_BROTLI_DICT
#include <brotli/decode.h>

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  unsigned char *b = NULL;
  long len;

  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0 || (b = malloc((size_t)len + 1)) == NULL ||
      fread(b, 1, (size_t)len, f) != (size_t)len) {
    perror(path);
    exit(1);
  }
  fclose(f);
  *n = (size_t)len;
  return b;
}

int main(int argc, char **argv) {
  static const unsigned char magic[4] = {0xFF, 0x44, 0x43, 0x42};
  unsigned char h[PC__SHA256_LEN], out[1 << 16];
  size_t dn, n, avail_in;
  const uint8_t *next_in;
  unsigned char *dict, *in;
  BrotliDecoderState *s;
  BrotliDecoderResult r;

  if (argc != 3) {
    fprintf(stderr, "usage: dcb_decode DICT FILE.dcb\n");
    return 2;
  }
  dict = slurp(argv[1], &dn);
  in = slurp(argv[2], &n);
  pc__sha256(dict, dn, h);
  if (n < 4 + sizeof(h) || memcmp(in, magic, 4) != 0 ||
      memcmp(in + 4, h, sizeof(h)) != 0) {
    fprintf(stderr, "%s: not a .dcb against %s\n", argv[2], argv[1]);
    return 1;
  }
  s = BrotliDecoderCreateInstance(NULL, NULL, NULL);
  if (s == NULL ||
      !BrotliDecoderAttachDictionary(s, BROTLI_SHARED_DICTIONARY_RAW, dn, dict))
    return 1;
  avail_in = n - 4 - sizeof(h);
  next_in = in + 4 + sizeof(h);
  do {
    size_t avail_out = sizeof(out);
    uint8_t *next_out = out;
    r = BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out,
                                      &next_out, NULL);
    fwrite(out, 1, sizeof(out) - avail_out, stdout);
  } while (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT);
  BrotliDecoderDestroyInstance(s);
  if (r != BROTLI_DECODER_RESULT_SUCCESS || avail_in != 0) {
    fprintf(stderr, "%s: not a whole brotli stream\n", argv[2]);
    return 1;
  }
  free(dict);
  free(in);
  return fflush(stdout) == 0 ? 0 : 1;
}
#else
int main(void) {
  fprintf(stderr, "dcb_decode: this build's brotli has no dictionary API\n");
  return 77;
}
#endif
