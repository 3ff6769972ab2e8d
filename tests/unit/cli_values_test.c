/* The program's value parsers and rules (src/cli/values.c), at their
 * boundaries: byte counts with every suffix form and the ones refused, and
 * when the progress line may show the time left.
 */
#include "cli/values.h"
#include "expect.h"

#include <stdint.h>

static void sizes(void) {
  static const struct {
    const char *s;
    uint64_t want;
  } good[] = {
      {"0", 0},
      {"1", 1},
      {"4096", 4096},
      {"4096B", 4096},
      {"4096b", 4096},
      {"4k", 4096},
      {"4K", 4096},
      {"4kb", 4096},
      {"4kB", 4096},
      {"4KB", 4096},
      {"4KiB", 4096},
      {"4kib", 4096},
      {"2M", 2u << 20},
      {"2MiB", 2u << 20},
      {"1G", 1u << 30},
      {"1gb", 1u << 30},
      {"17179869183G", UINT64_C(17179869183) << 30},
      {"18446744073709551615", UINT64_MAX},
  };
  static const char *const bad[] = {
      "",
      "k",
      "-3",
      "4 k",
      "4kk",
      "4ib",
      "4iB",
      "4kbb",
      "4kib2",
      "4T",
      "4.5k",
      "0x10",
      "4bk",
      "4kiB ",
      " 4k",
      "17179869184G",
      "18446744073709551616",
      "16777216T",
  };
  size_t i;
  uint64_t v;

  for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    cur = good[i].s;
    v = 12345;
    EXPECT(cli_parse_size(good[i].s, &v) == 0 && v == good[i].want);
  }
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cur = bad[i];
    v = 12345;
    EXPECT(cli_parse_size(bad[i], &v) == -1 && v == 12345);
  }
}

static void eta(void) {
  double left = -1;

  cur = "eta";
  /* Under a second, or under a twentieth of the bytes: no figure. */
  EXPECT(!cli_eta(0.99, 50, 100, &left));
  EXPECT(!cli_eta(30.0, 4, 100, &left));
  EXPECT(!cli_eta(30.0, 49, 1000, &left));
  EXPECT(!cli_eta(30.0, 0, 0, &left));
  EXPECT(!cli_eta(30.0, 101, 100, &left)); /* totals still growing */
  EXPECT(left == -1);
  /* From exactly a twentieth on: the rest at the rate so far. */
  EXPECT(cli_eta(1.0, 5, 100, &left) && left == 19.0);
  EXPECT(cli_eta(10.0, 50, 100, &left) && left == 10.0);
  EXPECT(cli_eta(10.0, 100, 100, &left) && left == 0.0);
}

int main(void) {
  sizes();
  eta();
  printf("%d checks, %d failures\n", checks, failures);
  return failures != 0;
}
