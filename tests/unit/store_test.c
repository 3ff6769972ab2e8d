/* store.c's pin (pc__store_pin): a thread's lookups between pin and unpin
 * read one snapshot, and two hits held at once stay whole.
 *
 *   - two hits held at once under a pin (the second takes a pooled
 *     connection): each payload is its own, verified, after the other
 *     lookup;
 *   - under a pin, an entry another handle replaced and committed is still
 *     the one the snapshot holds; after the unpin, the new one; without a
 *     pin, every lookup sees the last commit;
 *   - unpin without pin, a NULL store, a pin taken twice: nothing happens.
 */
#include "store/store.h"

#include "expect.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pc__store_key_t key(uint64_t h) {
  pc__store_key_t k;
  memset(&k, 0, sizeof(k));
  k.h[0] = h;
  k.h[1] = ~h;
  k.size = 4096;
  k.format = PC_GZ;
  k.level = 9;
  return k;
}

/* Puts `text` under k through a handle of its own, committed at close. */
static void put(const char *dir, uint64_t h, const char *text) {
  pc__store_t *c;
  pc__store_key_t k = key(h);
  EXPECT(pc__store_open(&c, dir, 0, 1 << 20) == 0);
  EXPECT(pc__store_put(c, &k, 1, (const unsigned char *)text, -1, strlen(text),
                       0) == 1);
  pc__store_close(c);
}

/* 1 when k is a hit whose payload is `text`. */
static int holds(pc__store_t *c, uint64_t h, const char *text) {
  pc__store_key_t k = key(h);
  pc__store_hit_t hit;
  int ok;

  if (!pc__store_get(c, &k, &hit))
    return 0;
  ok = hit.mem != NULL && hit.len == strlen(text) &&
       memcmp(hit.mem, text, hit.len) == 0;
  pc__store_release(c, &hit);
  return ok;
}

int main(void) {
  char dir[] = "/tmp/pc-store-test-XXXXXX";
  pc__store_t *c;
  pc__store_key_t k1 = key(1), k2 = key(2);
  pc__store_hit_t a, b;

  if (mkdtemp(dir) == NULL)
    return 1;
  put(dir, 1, "the first payload");
  put(dir, 2, "another payload, longer than the first");
  EXPECT(pc__store_open(&c, dir, 0, 1 << 20) == 0);

  cur = "two hits at once";
  pc__store_pin(c);
  EXPECT(pc__store_get(c, &k1, &a) == 1);
  EXPECT(pc__store_get(c, &k2, &b) == 1);
  EXPECT(a.mem != NULL && a.len == 17 &&
         memcmp(a.mem, "the first payload", 17) == 0);
  EXPECT(b.mem != NULL && b.len == 38 &&
         memcmp(b.mem, "another payload, longer than the first", 38) == 0);
  pc__store_release(c, &a);
  EXPECT(holds(c, 1, "the first payload")); /* the pin's connection again */
  pc__store_release(c, &b);
  pc__store_unpin(c);

  cur = "a pin is one snapshot";
  pc__store_pin(c);
  pc__store_pin(c);                         /* a second pin changes nothing */
  EXPECT(holds(c, 1, "the first payload")); /* the snapshot starts here */
  put(dir, 1, "replaced meanwhile");
  EXPECT(holds(c, 1, "the first payload"));
  EXPECT(holds(c, 2, "another payload, longer than the first"));
  pc__store_unpin(c);
  EXPECT(holds(c, 1, "replaced meanwhile"));

  cur = "no pin: each lookup sees the last commit";
  put(dir, 1, "and again");
  EXPECT(holds(c, 1, "and again"));

  cur = "unpin without a pin, NULL store";
  pc__store_unpin(c);
  pc__store_pin(NULL);
  pc__store_unpin(NULL);
  EXPECT(holds(c, 2, "another payload, longer than the first"));

  pc__store_close(c);
  {
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
      failures++;
  }
  printf("store: %d checks, %d failed\n", checks, failures);
  return failures != 0;
}
