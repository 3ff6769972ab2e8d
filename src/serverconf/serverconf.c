/* pc_server_config(): a server's configuration, generated from a manifest,
 * that serves RFC 9842's dictionary-compressed outputs (FILE.<id>.dcb/.dcz,
 * docs/deltas.md) and offers the current release's files as dictionaries
 * for the next one: nginx's (serverconf_nginx.c), Apache httpd's
 * (serverconf_apache.c) or Caddy's (serverconf_caddy.c), written from what this
 * file reads (serverconf.h).
 *
 * The manifest is parsed whole with jansson (the one place beside
 * manifest_read.c, whose streaming lines do not carry "deltas" yet; see
 * tests/unit/check_manifest_once.py). Each file the manifest lists as
 * compressed gets its Use-As-Dictionary URL pattern here, the same for
 * every server. Names this file cannot write safely into a server's
 * strings and a URL pattern (anything but letters, digits and
 * -._~/!&,;=@') get none, and are counted for a comment.
 */
#include "serverconf/serverconf.h"
#include "codec/dictname.h"
#include "common/json.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A character of a URL path written as it is everywhere: in nginx's and
 * Apache's double-quoted strings, Caddyfile tokens (no '{' to start a
 * placeholder, no '`'), a structured-field string and a URLPattern.
 */
static int plain_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || strchr("-._~/!&,;=@'", c) != NULL;
}

static int plain(const char *s) {
  for (; *s; s++)
    if (!plain_char((unsigned char)*s))
      return 0;
  return 1;
}

static int is_hex64(const char *s) {
  size_t i;
  for (i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return s[64] == '\0';
}

static int cmp_dict(const void *a, const void *b) { return memcmp(a, b, 64); }

/* A file's "deltas": its dictionaries noted; *kept when one is kept (has a
 * "size"). 0, PC_ENOTMANIFEST or -ENOMEM.
 */
static int note_deltas(pc__conf_t *c, json_t *deltas, int *kept) {
  size_t i;
  json_t *d;

  if (!json_is_array(deltas))
    return PC_ENOTMANIFEST;
  json_array_foreach(deltas, i, d) {
    const char *sha = json_string_value(json_object_get(d, "sha256"));
    int size = json_is_integer(json_object_get(d, "size"));
    if (!json_is_object(d))
      return PC_ENOTMANIFEST;
    /* A delta not kept whose dictionary was not read (a link, a private
     * or too large one, ...) has no hash: no dictionary to serve.
     */
    if (sha == NULL && !size)
      continue;
    if (sha == NULL || !is_hex64(sha))
      return PC_ENOTMANIFEST;
    *kept |= size;
    if (PC__GROW(c->dicts, c->ndicts, c->dcap, 16) != 0)
      return -ENOMEM;
    memcpy(c->dicts[c->ndicts++].hex, sha, 65);
  }
  return 0;
}

/* The Use-As-Dictionary URL pattern of the file at `path` below the root,
 * served at prefix + path: the URL with the content hash a build tool
 * wrote into its name replaced by '*' (dictname.h), or the URL itself.
 * Into *match (malloc'd): 0, -ENOMEM or -ENAMETOOLONG.
 */
static int use_as_dict(const char *prefix, const char *path, char **match) {
  const char *base = strrchr(path, '/');
  size_t ntmpl = 0, dir = base == NULL ? 0 : (size_t)(base + 1 - path);
  pc__buf_t m = {0};
  char key[4096];
  int n;

  base = path + dir;
  while (pc__dictname_defaults[ntmpl] != NULL)
    ntmpl++;
  n = pc__dictname_key(pc__dictname_defaults, ntmpl, base, key, sizeof(key));
  if (n < 0)
    return n;
  if (pc__buf_printf(&m, "%s%.*s%s%c", prefix, (int)dir, path,
                     n > 0 ? key : base, '\0') != 0) {
    pc__buf_free(&m);
    return -ENOMEM;
  }
  *match = (char *)m.data;
  return 0;
}

/* One line of "files". A file compressed (no "skipped", no "error") with a
 * plain name gets a Use-As-Dictionary pattern; its deltas are noted.
 */
static int one_file(pc__conf_t *c, json_t *f) {
  const char *path = json_string_value(json_object_get(f, "path"));
  json_t *deltas = json_object_get(f, "deltas");
  pc__conf_file_t *e;
  int err, kept = 0;

  if (!json_is_object(f) || path == NULL)
    return PC_ENOTMANIFEST;
  if (deltas != NULL && (err = note_deltas(c, deltas, &kept)) != 0)
    return err;
  if (PC__GROW(c->files, c->nfiles, c->fcap, 64) != 0)
    return -ENOMEM;
  e = &c->files[c->nfiles];
  memset(e, 0, sizeof(*e));
  e->kept = kept;
  if ((e->path = strdup(path)) == NULL)
    return -ENOMEM;
  c->nfiles++;
  if (json_object_get(f, "skipped") != NULL ||
      json_object_get(f, "error") != NULL)
    return 0;
  if (!plain(path) || path[0] == '/' || strstr(path, "..") != NULL) {
    c->not_plain++;
    return 0;
  }
  return use_as_dict(c->prefix, path, &e->match);
}

static unsigned hexval(char h) {
  return (unsigned)(h <= '9' ? h - '0' : h - 'a' + 10);
}

/* The 32 bytes of a hex SHA-256 as base64 (RFC 4648, padded): 44 chars. */
static void sha_base64(const char *hex, char out[45]) {
  static const char al[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  unsigned char b[33] = {0};
  size_t i, o = 0;

  for (i = 0; i < 32; i++)
    b[i] = (unsigned char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
  for (i = 0; i < 33; i += 3) {
    unsigned v = (unsigned)b[i] << 16 | (unsigned)b[i + 1] << 8 | b[i + 2];
    out[o++] = al[v >> 18 & 63];
    out[o++] = al[v >> 12 & 63];
    out[o++] = al[v >> 6 & 63];
    out[o++] = al[v & 63];
  }
  out[43] = '=';
  out[44] = '\0';
}

/* The manifest's files and dictionaries into c (dictionaries sorted, once
 * each, with their base64). */
static int collect(pc__conf_t *c, json_t *files) {
  size_t i, n = 0;
  json_t *f;
  int err;

  json_array_foreach(files, i, f) {
    if ((err = one_file(c, f)) != 0)
      return err;
  }
  if (c->ndicts > 0)
    qsort(c->dicts, c->ndicts, sizeof(*c->dicts), cmp_dict);
  for (i = 0; i < c->ndicts; i++)
    if (n == 0 || memcmp(c->dicts[n - 1].hex, c->dicts[i].hex, 64) != 0)
      memmove(&c->dicts[n++], &c->dicts[i], sizeof(*c->dicts));
  c->ndicts = n;
  for (i = 0; i < n; i++)
    sha_base64(c->dicts[i].hex, c->dicts[i].b64);
  return 0;
}

/* The manifest at `path`, parsed; its "files" into *files. */
static int load(const char *path, json_t **root, json_t **files) {
  pc__buf_t text = {0};
  json_t *v;
  int err = pc__json_read_file(path, &text);

  if (err != 0)
    return err;
  *root = json_loadb((const char *)text.data, text.len, 0, NULL);
  pc__buf_free(&text);
  if (*root == NULL)
    return PC_EBADMANIFEST;
  v = json_object_get(*root, "precompress");
  *files = json_object_get(*root, "files");
  if (!json_is_integer(v) || json_integer_value(v) != 1 ||
      !json_is_array(*files))
    return PC_ENOTMANIFEST;
  return 0;
}

static int emit(const pc__buf_t *b,
                int (*put)(void *data, const void *buf, size_t len),
                void *data) {
  size_t at, n;
  int err = 0;
  for (at = 0; at < b->len && err == 0; at += n) {
    n = b->len - at < 65536 ? b->len - at : 65536;
    err = put(data, b->data + at, n);
  }
  return err;
}

/* The prefix a kind takes: a URL path, /.../, plain; Apache writes it in a
 * RewriteRule's flags too, which a ',' would split. */
static int good_prefix(pc_conf_t kind, const char *prefix) {
  return prefix[0] == '/' && prefix[strlen(prefix) - 1] == '/' &&
         plain(prefix) && strstr(prefix, "..") == NULL &&
         (kind != PC_CONF_APACHE || strchr(prefix, ',') == NULL);
}

/* An Alias's directory: absolute, plain, no "..". */
static int good_dir(const char *dir) {
  return dir[0] == '/' && plain(dir) && strstr(dir, "..") == NULL;
}

static int generate(pc__conf_t *c, pc_conf_t kind) {
  switch (kind) {
  case PC_CONF_NGINX_HTTP:
    return pc__conf_nginx_http(c);
  case PC_CONF_NGINX_LOCATION:
    return pc__conf_nginx_location(c);
  case PC_CONF_CADDY:
    return pc__conf_caddy(c);
  default:
    return pc__conf_apache(c);
  }
}

int pc_server_config(int (*put)(void *data, const void *buf, size_t len),
                     void *data, const char *manifest, pc_conf_t kind,
                     const char *prefix, const char *dir) {
  pc__conf_t c;
  json_t *root = NULL, *files;
  char *d = NULL;
  int err;

  if (put == NULL || manifest == NULL || prefix == NULL ||
      (kind != PC_CONF_NGINX_HTTP && kind != PC_CONF_NGINX_LOCATION &&
       kind != PC_CONF_APACHE && kind != PC_CONF_CADDY) ||
      !good_prefix(kind, prefix) ||
      (dir != NULL && (kind == PC_CONF_CADDY || !good_dir(dir))))
    return -EINVAL;
  memset(&c, 0, sizeof(c));
  c.prefix = prefix;
  if (dir != NULL) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
      n--;
    if ((d = strndup(dir, n)) == NULL)
      return -ENOMEM;
    c.dir = strcmp(d, "/") == 0 ? "" : d;
  }
  if ((err = load(manifest, &root, &files)) == 0 &&
      (err = collect(&c, files)) == 0)
    err = generate(&c, kind);
  json_decref(root);
  if (err == 0)
    err = emit(&c.out, put, data);
  pc__buf_free(&c.out);
  free(c.dicts);
  while (c.nfiles > 0) {
    free(c.files[--c.nfiles].path);
    free(c.files[c.nfiles].match);
  }
  free(c.files);
  free(d);
  return err;
}
