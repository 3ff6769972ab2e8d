/* The C unit tests' one check: counts it and, when it fails, prints where,
 * what, and the case under way (`cur`, set by the test), then goes on, so
 * that one run reports every failure.
 */
#ifndef PC_TEST_EXPECT_H
#define PC_TEST_EXPECT_H

#include <stdio.h>

static int failures, checks;
static const char *cur = "";

#define EXPECT(c)                                                              \
  do {                                                                         \
    checks++;                                                                  \
    if (!(c)) {                                                                \
      failures++;                                                              \
      fprintf(stderr, "%s:%d: %s (case %s)\n", __FILE__, __LINE__, #c, cur);   \
    }                                                                          \
  } while (0)

#endif /* PC_TEST_EXPECT_H */
