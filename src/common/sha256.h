/* SHA-256 (FIPS 180-4): the hash RFC 9842 names a dictionary by, in the
 * header of every .dcb and .dcz and in a browser's Available-Dictionary.
 */
#ifndef PC_SHA256_H
#define PC_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define PC__SHA256_LEN 32

typedef struct pc__sha256 {
  uint32_t h[8];
  uint64_t len; /* bytes hashed so far */
  unsigned char block[64];
  size_t used; /* bytes of block[] filled */
} pc__sha256_t;

void pc__sha256_init(pc__sha256_t *s);
void pc__sha256_update(pc__sha256_t *s, const void *data, size_t n);
void pc__sha256_final(pc__sha256_t *s, unsigned char out[PC__SHA256_LEN]);
/* The three at once. */
void pc__sha256(const void *data, size_t n, unsigned char out[PC__SHA256_LEN]);

#endif /* PC_SHA256_H */
