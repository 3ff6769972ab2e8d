/* bench/dcb_decode.c: decode an RFC 9842 `dcb` stream (FF 44 43 42, the
 * dictionary's SHA-256, then brotli with the dictionary as a raw shared
 * dictionary) with brotli >= 1.1's decoder, for bench/delta.sh's check of
 * every kept .dcb. Debian 12 has no such decoder (brotli 1.0.9), so
 * bench/delta.sh builds this against the prefix bench/build_brotli11.sh uses.
 *
 *   dcb_decode DICT < FILE.dcb > FILE
 *
 * The header's hash is not checked here (bench/delta.sh compares it with the
 * dictionary's SHA-256); exit 1 on a bad magic, a brotli error or a stream
 * that ends early. */
#include <brotli/decode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slurp(FILE *f, size_t *n) {
  size_t cap = 1 << 20, len = 0, r;
  unsigned char *b = malloc(cap);
  while (b && (r = fread(b + len, 1, cap - len, f)) > 0) {
    len += r;
    if (len == cap) {
      unsigned char *nb = realloc(b, cap *= 2);
      if (!nb) {
        free(b);
        return NULL;
      }
      b = nb;
    }
  }
  if (!b || ferror(f)) {
    free(b);
    return NULL;
  }
  *n = len;
  return b;
}

int main(int argc, char **argv) {
  static const unsigned char magic[4] = {0xff, 0x44, 0x43, 0x42};
  unsigned char out[1 << 16];
  size_t dn, in_n;
  FILE *df;
  unsigned char *dict, *in;
  if (argc != 2) {
    fprintf(stderr, "usage: dcb_decode DICT < FILE.dcb > FILE\n");
    return 2;
  }
  df = fopen(argv[1], "rb");
  if (!df || !(dict = slurp(df, &dn))) {
    perror(argv[1]);
    return 1;
  }
  fclose(df);
  if (!(in = slurp(stdin, &in_n)) || in_n < 36 || memcmp(in, magic, 4) != 0) {
    fprintf(stderr, "dcb_decode: not a dcb stream\n");
    return 1;
  }
  BrotliDecoderState *s = BrotliDecoderCreateInstance(NULL, NULL, NULL);
  if (!s || !BrotliDecoderAttachDictionary(s, BROTLI_SHARED_DICTIONARY_RAW, dn,
                                           dict)) {
    fprintf(stderr, "dcb_decode: cannot attach the dictionary\n");
    return 1;
  }
  BrotliDecoderSetParameter(s, BROTLI_DECODER_PARAM_LARGE_WINDOW, 0);
  const uint8_t *next_in = in + 36;
  size_t avail_in = in_n - 36;
  BrotliDecoderResult r;
  do {
    uint8_t *next_out = out;
    size_t avail_out = sizeof out;
    r = BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out,
                                      &next_out, NULL);
    if (fwrite(out, 1, sizeof out - avail_out, stdout) !=
        sizeof out - avail_out) {
      perror("dcb_decode: stdout");
      return 1;
    }
  } while (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT);
  if (r != BROTLI_DECODER_RESULT_SUCCESS || avail_in != 0) {
    fprintf(stderr, "dcb_decode: %s\n",
            r == BROTLI_DECODER_RESULT_ERROR
                ? BrotliDecoderErrorString(BrotliDecoderGetErrorCode(s))
                : "the stream ends early or has trailing bytes");
    return 1;
  }
  BrotliDecoderDestroyInstance(s);
  free(in);
  free(dict);
  return fflush(stdout) == 0 ? 0 : 1;
}
