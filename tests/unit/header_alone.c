/* The public header compiles on its own, with nothing included before it
 * (and twice: its include guard), under strict C11; and what it states
 * without the library holds together: the version string is its numbers,
 * every error code is distinct and within the library's range, and the
 * fixed-size arrays have room for what they index.
 */
#include "precompress.h"

#include "precompress.h"

#include <stdio.h>
#include <string.h>

static int failures;

static void expect(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "header_alone: %s\n", what);
    failures++;
  }
}

int main(void) {
  static const int codes[] = {
#define PC__CODE(name, val, msg) PC_##name,
      PC_ERRNO_MAP(PC__CODE)
#undef PC__CODE
  };
  char version[32];
  size_t i, j, n = sizeof(codes) / sizeof(codes[0]);

  snprintf(version, sizeof(version), "%d.%d.%d", PC_VERSION_MAJOR,
           PC_VERSION_MINOR, PC_VERSION_PATCH);
  expect(strcmp(version, PC_VERSION_STRING) == 0,
         "PC_VERSION_STRING is not its numbers");
  expect(PC_VERSION_NUMBER == PC_VERSION_MAJOR * 10000 +
                                  PC_VERSION_MINOR * 100 + PC_VERSION_PATCH,
         "PC_VERSION_NUMBER is not its numbers");
  expect(n >= 20, "fewer error codes than the header has");
  for (i = 0; i < n; i++) {
    expect(codes[i] < -4000 && codes[i] > PC_ERR_MIN_,
           "an error code outside -4000..PC_ERR_MIN_");
    for (j = i + 1; j < n; j++)
      expect(codes[i] != codes[j], "two error codes are one number");
  }
  expect(PC_FMT_BIT(PC_ZST) == 4 && PC_DELTA_BIT(PC_DCZ) == 2,
         "the format bits moved");
  return failures != 0;
}
