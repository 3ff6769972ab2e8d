/* Name templates (src/codec/dictname.c): which part of a name is a build tool's
 * content hash, for pairing a file with its predecessor. */
#include "codec/dictname.h"

#include <errno.h>
#include <string.h>

#include "expect.h"

static const char *key_of(const char *name) {
  static char key[256];
  size_t n = 0;
  while (pc__dictname_defaults[n] != NULL)
    n++;
  int r = pc__dictname_key(pc__dictname_defaults, n, name, key, sizeof(key));
  if (r < 0)
    return "(error)";
  return r == 0 ? "(none)" : key;
}

int main(void) {
  char small[8];
  const char *one[] = {"[name].[hash].[ext]"};

  cur = "defaults";
  /* Django: 12 hex digits. */
  EXPECT(strcmp(key_of("app.3f2a9c1e4b7d.js"), "app.*.js") == 0);
  EXPECT(strcmp(key_of("admin/css/base.5af66c1b1797.css"),
                "admin/css/base.*.css") == 0);
  EXPECT(strcmp(key_of("jquery.min.0123456789ab.js"), "jquery.min.*.js") == 0);
  /* webpack: 8 to 64 hex digits, the longest run. */
  EXPECT(strcmp(key_of("main.9c1e2f3a4b5c6d7e8f90.js"), "main.*.js") == 0);
  EXPECT(strcmp(key_of("vendor.deadbeef.css"), "vendor.*.css") == 0);
  /* Vite/Rollup: 8 base64url characters after a dash. */
  EXPECT(strcmp(key_of("index-BXa9f0Qz.js"), "index-*.js") == 0);
  EXPECT(strcmp(key_of("chunk-a_b-9xYz.js"), "chunk-*.js") == 0);
  /* Not hashes: words, short runs, no extension, the name alone. */
  EXPECT(strcmp(key_of("app-settings.js"), "(none)") == 0);
  EXPECT(strcmp(key_of("jquery.min.js"), "(none)") == 0);
  EXPECT(strcmp(key_of("data.2024.json"), "(none)") == 0);
  EXPECT(strcmp(key_of("deadbeef"), "(none)") == 0);
  EXPECT(strcmp(key_of(".deadbeef.js"), "(none)") == 0);
  EXPECT(strcmp(key_of("app.3f2a9c1e4b7d."), "(none)") == 0);
  EXPECT(strcmp(key_of("my-component.js"), "(none)") == 0);

  cur = "one template";
  EXPECT(pc__dictname_key(one, 1, "index-BXa9f0Qz.js", small, 8) == 0);
  EXPECT(pc__dictname_key(one, 1, "app.deadbeef.js", small, 8) ==
         -ENAMETOOLONG);
  EXPECT(pc__dictname_key(one, 1, "a.deadbeef.js", small, 8) == 6);
  EXPECT(strcmp(small, "a.*.js") == 0);

  cur = "check";
  EXPECT(pc__dictname_check("[name].[hash].[ext]") == 0);
  EXPECT(pc__dictname_check("[name]-[b64hash:8].[ext]") == 0);
  EXPECT(pc__dictname_check("[name].[hash:3].[ext]") == -EINVAL);
  EXPECT(pc__dictname_check("[name].[hash:65].[ext]") == -EINVAL);
  EXPECT(pc__dictname_check("[hash].[name].[ext]") == -EINVAL);
  EXPECT(pc__dictname_check("[name].[hash].[ext].gz") == -EINVAL);
  EXPECT(pc__dictname_check("[name].[hash]-[ext]") == -EINVAL);
  EXPECT(pc__dictname_check("[name][hash].[ext]") == 0);
  EXPECT(pc__dictname_check("[name].[chunk].[ext]") == -EINVAL);
  return failures != 0;
}
