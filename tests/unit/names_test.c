/* The names of the files we make (src/common/names.c): what each builder
 * makes, its recogniser takes, and gives back what it was made from; what
 * no builder makes (a byte outside ASCII in a temp's random part, upper
 * case hex in a delta's id, an empty NAME) is not taken.
 */
#include "common/names.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"

static void outputs(void) {
  char out[NAME_MAX + 1], up[NAME_MAX + 1], big[NAME_MAX + 1];
  size_t k;
  int f;

  cur = "outputs";
  for (f = 0; f < PC_NFORMATS; f++) {
    EXPECT(pc__format_named(pc_format_ext((pc_format_t)f)) == f);
    EXPECT(pc__output_name("a.js", 4, (pc_format_t)f, out) == 0);
    EXPECT(strncmp(out, "a.js.", 5) == 0 &&
           strcmp(out + 5, pc_format_ext((pc_format_t)f)) == 0);
    EXPECT(pc__output_format_of(out, strlen(out)) == f);
    for (k = 0; out[k] != '\0'; k++)
      up[k] = out[k] >= 'a' && out[k] <= 'z' ? (char)(out[k] - 32) : out[k];
    up[k] = '\0';
    EXPECT(pc__output_format_of(up, k) == -1);
    EXPECT(pc__output_format_anycase(up, k) == f);
    /* ".gz" alone: a server's output name, but no output of ours. */
    EXPECT(pc__output_format_of(out + 4, strlen(out + 4)) == -1);
    EXPECT(pc__output_format_anycase(up + 4, strlen(up + 4)) == f);
  }
  EXPECT(pc__format_named("GZ") == -1 && pc__format_named("dcz") == -1);
  EXPECT(pc__output_format_of("a.gzip", 6) == -1);
  memset(big, 'x', NAME_MAX - 2);
  big[NAME_MAX - 2] = '\0';
  EXPECT(pc__output_name(big, NAME_MAX - 3, PC_GZ, out) == 0);
  EXPECT(pc__output_name(big, NAME_MAX - 2, PC_GZ, out) == -ENAMETOOLONG);
}

static void deltas(void) {
  static const unsigned char hash[32] = {0x01, 0x23, 0x45, 0x67, 0x89,
                                         0xab, 0xcd, 0xef, 0xff};
  char out[NAME_MAX + 1], big[NAME_MAX + 1];
  unsigned char id[8];
  pc_delta_format_t g;
  size_t b;
  int f;

  cur = "deltas";
  for (f = 0; f < PC_NDELTAS; f++) {
    EXPECT(pc__delta_format_named(pc_delta_ext((pc_delta_format_t)f)) == f);
    EXPECT(pc__delta_name("a.js", hash, (pc_delta_format_t)f, out) == 0);
    EXPECT(strncmp(out, "a.js.0123456789abcdef.", 22) == 0 &&
           strcmp(out + 22, pc_delta_ext((pc_delta_format_t)f)) == 0);
    memset(id, 0, sizeof(id));
    EXPECT(pc__delta_output_name(out, strlen(out), &b, &g, id) == 1);
    EXPECT(b == 4 && g == (pc_delta_format_t)f &&
           memcmp(id, hash, sizeof(id)) == 0);
    EXPECT(pc__delta_output_name(out, strlen(out), &b, NULL, NULL) == 1);
  }
  EXPECT(!pc__delta_output_name("a.0123456789ABCDEF.dcz", 22, &b, NULL, NULL));
  EXPECT(!pc__delta_output_name(".0123456789abcdef.dcz", 21, &b, NULL, NULL));
  EXPECT(!pc__delta_output_name("a.0123456789abcdef.dcx", 22, &b, NULL, NULL));
  EXPECT(!pc__delta_output_name("a.0123456789abcde.dcz", 21, &b, NULL, NULL));
  memset(big, 'x', NAME_MAX);
  big[NAME_MAX - PC__DELTA_NAME_EXTRA] = '\0';
  EXPECT(pc__delta_name(big, hash, PC_DCZ, out) == 0);
  big[NAME_MAX - PC__DELTA_NAME_EXTRA] = 'x';
  big[NAME_MAX - PC__DELTA_NAME_EXTRA + 1] = '\0';
  EXPECT(pc__delta_name(big, hash, PC_DCZ, out) == -ENAMETOOLONG);
}

/* The temp of `final` (in "d/"), taken back as a temp of FINAL. */
static void temp_of(const char *final, uint64_t bits, int ours) {
  char path[NAME_MAX + 3];
  char *t;
  size_t fl, n = strlen(final);

  strcpy(path, "d/");
  strcat(path, final);
  t = pc__temp_name(path, bits);
  EXPECT(t != NULL);
  if (t == NULL)
    return;
  EXPECT(strncmp(t, "d/.", 3) == 0);
  EXPECT(strlen(t + 2) <= NAME_MAX);
  EXPECT(pc__temp_of(t + 2, strlen(t + 2), &fl) == 1);
  if (fl == n) { /* FINAL whole */
    EXPECT(memcmp(t + 3, final, n) == 0);
  } else { /* cut to fit: its extension kept, PC__TMP_CUT before it */
    const char *ext = strrchr(final, '.');
    size_t el = strlen(ext);
    EXPECT(strlen(t + 2) == NAME_MAX && fl < n);
    EXPECT(t[3 + fl - el - 1] == PC__TMP_CUT &&
           memcmp(t + 3 + fl - el, ext, el) == 0);
  }
  EXPECT(pc__is_temp_name(t + 2) == ours);
  free(t);
}

static void temps(void) {
  static const uint64_t bits[] = {0, 1, UINT64_MAX, 0x0123456789abcdefu};
  char out[NAME_MAX + 1], big[NAME_MAX + 1];
  static const unsigned char hash[32] = {0xde, 0xad};
  size_t k, fl;

  cur = "temps";
  memset(big, 'x', NAME_MAX);
  memcpy(big + NAME_MAX - 7, ".js.zst", 8);
  for (k = 0; k < sizeof(bits) / sizeof(bits[0]); k++) {
    temp_of("a.js.gz", bits[k], 1);
    temp_of("m.json", bits[k], 0); /* the manifest's: no output's */
    temp_of(big, bits[k], 1);
    EXPECT(pc__delta_name("a.js", hash, PC_DCB, out) == 0);
    temp_of(out, bits[k], 1);
  }
  EXPECT(pc__temp_of(".m.json.AbC123.tmp", 18, &fl) == 1 && fl == 6);
  EXPECT(pc__temp_of(".m.json.AbC12.tmp", 17, &fl) == 0);
  EXPECT(pc__temp_of(".m.json.AbC-23.tmp", 18, &fl) == 0);
  EXPECT(pc__temp_of(".m.json.AbC\xe9"
                     "23.tmp",
                     18, &fl) == 0);
  EXPECT(pc__temp_of("m.json.AbC123.tmp", 17, &fl) == 0);
  EXPECT(pc__temp_of(".m.json.AbC123.tmq", 18, &fl) == 0);
  EXPECT(pc__is_temp_name(".a.js.gz.AbC123.tmp") == 1);
  EXPECT(pc__is_temp_name(".a.js.AbC123.tmp") == 0);
}

int main(void) {
  outputs();
  deltas();
  temps();
  printf("names: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
