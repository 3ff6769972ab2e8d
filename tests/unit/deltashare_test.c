/* deltashare.c: a result put is got back (a kept delta's bytes, a
 * rejection's limit), the first result for a key stands, keys differing in
 * any part are apart, and nothing past the budget is kept.
 */
#include "work/deltashare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define EXPECT(c)                                                              \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);                  \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static pc__store_key_t key(uint64_t h, int format, int level) {
  pc__store_key_t k;
  memset(&k, 0, sizeof(k));
  k.h[0] = h;
  k.h[1] = ~h;
  k.size = 1000;
  k.format = (pc_format_t)(16 + format);
  k.level = level;
  return k;
}

int main(void) {
  pc__dshare_t *s;
  pc__store_key_t a = key(1, 1, 19), b = key(1, 0, 11), c = key(4097, 1, 19);
  pc__store_key_t d = key(1, 1, 18);
  pc__buf_t o = {0};
  uint64_t limit = 0;
  int kept = -1;
  char big[200];

  EXPECT(pc__dshare_new(&s, 300) == 0);
  EXPECT(!pc__dshare_get(s, &a, &kept, &limit, &o));
  pc__dshare_put(s, &a, 1, (const unsigned char *)"delta-a", 7, 0);
  pc__dshare_put(s, &a, 1, (const unsigned char *)"other", 5,
                 0); /* first stands */
  pc__dshare_put(s, &b, 0, NULL, 0, 950);
  EXPECT(pc__dshare_get(s, &a, &kept, &limit, &o));
  EXPECT(kept == 1 && o.len == 7 && memcmp(o.data, "delta-a", 7) == 0);
  o.len = 0;
  EXPECT(pc__dshare_get(s, &b, &kept, &limit, &o));
  EXPECT(kept == 0 && limit == 950 && o.len == 0);
  /* Same bucket, another key; another level: none. */
  EXPECT(!pc__dshare_get(s, &c, &kept, &limit, &o));
  EXPECT(!pc__dshare_get(s, &d, &kept, &limit, &o));
  /* Over the budget (300 bytes in all): not kept. */
  memset(big, 'x', sizeof(big));
  pc__dshare_put(s, &c, 1, (const unsigned char *)big, sizeof(big), 0);
  EXPECT(!pc__dshare_get(s, &c, &kept, &limit, &o));
  pc__buf_free(&o);
  pc__dshare_free(s);
  if (failures == 0)
    printf("deltashare: ok\n");
  return failures != 0;
}
