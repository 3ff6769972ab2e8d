/* pc_server_config(): an nginx include, generated from a manifest, that
 * serves RFC 9842's dictionary-compressed outputs (FILE.<id>.dcb/.dcz,
 * docs/deltas.md) and offers the current release's files as dictionaries
 * for the next one.
 *
 * Two parts, because nginx takes a `map` only in http{} and a `location`
 * only in server{}:
 *
 *  - PC_CONF_NGINX_HTTP: the maps. $pc_dict_id is the <id> (16 hex digits)
 *    of the dictionary the browser says it holds (Available-Dictionary:
 *    :<base64 SHA-256>:), one entry per dictionary of the manifest's
 *    "deltas"; $pc_try_dcb/$pc_try_dcz are ".<id>.dcb"/".<id>.dcz" when the
 *    client accepts that coding (q above 0) and holds a dictionary, else
 *    empty; $pc_coding is the coding of the file try_files chose (from its
 *    name); $pc_use_as_dictionary the Use-As-Dictionary value of each file
 *    the manifest lists as compressed, by URL.
 *  - PC_CONF_NGINX_LOCATION: `location ^~ PREFIX`, where try_files tries
 *    $uri.<id>.dcb, then $uri.<id>.dcz, then $uri (gzip_static's .gz
 *    beside it), and add_header sets Content-Encoding, Vary and
 *    Use-As-Dictionary. try_files changes the extension nginx types the
 *    response by (".dcz"), so each extension of a file with deltas gets a
 *    nested location whose `types` give dcb and dcz its type (the table
 *    below: nginx's own mime.types for the text types; an extension not in
 *    it is typed default_type either way).
 *
 * The manifest is parsed whole with jansson (the one place beside
 * manifest_read.c, whose streaming lines do not carry "deltas" yet; see
 * tests/unit/check_manifest_once.py). Names this file cannot write safely
 * into nginx's strings and a URL pattern (anything but letters, digits and
 * -._~/!&,;=@') are left out and counted in a comment.
 */
#include "common.h"
#include "dictname.h"
#include "json.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ID_HEX 16 /* the <id> of FILE.<id>.dcz: the SHA-256's first digits */

/* nginx 1.22's mime.types, the types worth a delta. */
static const char *const types[][2] = {
    {"html", "text/html"},
    {"htm", "text/html"},
    {"shtml", "text/html"},
    {"css", "text/css"},
    {"xml", "text/xml"},
    {"js", "application/javascript"},
    {"atom", "application/atom+xml"},
    {"rss", "application/rss+xml"},
    {"mml", "text/mathml"},
    {"txt", "text/plain"},
    {"htc", "text/x-component"},
    {"svg", "image/svg+xml"},
    {"json", "application/json"},
    {"wasm", "application/wasm"},
    {"xhtml", "application/xhtml+xml"},
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

typedef struct entry {
  char *line;  /* the map's line */
  size_t klen; /* its key's length, from KEY_AT */
  size_t seq;  /* its place in the manifest */
} entry_t;
#define KEY_AT 5 /* the key in the line: after 4 spaces and a quote */

typedef struct conf {
  pc__buf_t out;
  entry_t *ents; /* Use-As-Dictionary's entries */
  size_t nents, ecap;
  char (*dicts)[65]; /* distinct dictionary SHA-256s, hex */
  size_t ndicts, dcap;
  unsigned char ext_used[NTYPES]; /* an extension with deltas */
  size_t left_out;                /* names not written (see the top) */
  size_t unknown_ext;             /* files with deltas, type not known */
} conf_t;

/* A character of a URL path written as it is everywhere: in nginx's
 * double-quoted strings, a structured-field string and a URLPattern.
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

/* The table's index of name's extension, or -1. */
static int ext_index(const char *name) {
  const char *dot = strrchr(name, '.');
  size_t k;
  if (dot == NULL || strchr(dot, '/') != NULL)
    return -1;
  for (k = 0; k < NTYPES; k++)
    if (strcmp(dot + 1, types[k][0]) == 0)
      return (int)k;
  return -1;
}

/* A file's "deltas": its dictionaries noted, its extension marked when one
 * is kept (has a "size"). 0, PC_ENOTMANIFEST or -ENOMEM.
 */
static int note_deltas(conf_t *c, const char *path, json_t *deltas) {
  size_t i;
  json_t *d;
  int kept = 0, k;

  if (!json_is_array(deltas))
    return PC_ENOTMANIFEST;
  json_array_foreach(deltas, i, d) {
    const char *sha = json_string_value(json_object_get(d, "sha256"));
    if (!json_is_object(d) || sha == NULL || !is_hex64(sha))
      return PC_ENOTMANIFEST;
    kept |= json_is_integer(json_object_get(d, "size"));
    if (PC__GROW(c->dicts, c->ndicts, c->dcap, 16) != 0)
      return -ENOMEM;
    memcpy(c->dicts[c->ndicts++], sha, 65);
  }
  if (kept && (k = ext_index(path)) >= 0)
    c->ext_used[k] = 1;
  else if (kept)
    c->unknown_ext++;
  return 0;
}

/* The Use-As-Dictionary map's entry for the file at `path` below the root,
 * served at prefix + path: the URL with the content hash a build tool
 * wrote into its name replaced by '*' (dictname.h), or the URL itself.
 */
static int put_use_as_dict(conf_t *c, const char *prefix, const char *path) {
  const char *base = strrchr(path, '/');
  size_t ntmpl = 0, dir = base == NULL ? 0 : (size_t)(base + 1 - path);
  pc__buf_t line = {0};
  char key[4096];
  int n;

  base = path + dir;
  while (pc__dictname_defaults[ntmpl] != NULL)
    ntmpl++;
  n = pc__dictname_key(pc__dictname_defaults, ntmpl, base, key, sizeof(key));
  if (n < 0)
    return n;
  if (PC__GROW(c->ents, c->nents, c->ecap, 64) != 0 ||
      pc__buf_printf(&line, "    \"%s%s\" \"match=\\\"%s%.*s%s\\\"\";\n%c",
                     prefix, path, prefix, (int)dir, path, n > 0 ? key : base,
                     '\0') != 0) {
    pc__buf_free(&line);
    return -ENOMEM;
  }
  c->ents[c->nents].seq = c->nents;
  c->ents[c->nents].line = (char *)line.data;
  c->ents[c->nents++].klen = strlen(prefix) + strlen(path);
  return 0;
}

/* nginx's map compares strings without regard to case: one entry per key
 * so compared (the first in the manifest's order), the others left out.
 */
static int cmp_entry(const void *a, const void *b) {
  const entry_t *x = a, *y = b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int d = strncasecmp(x->line + KEY_AT, y->line + KEY_AT, n);
  if (d != 0)
    return d;
  if (x->klen != y->klen)
    return x->klen < y->klen ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int put_entries(conf_t *c) {
  size_t i;
  int err = 0;

  qsort(c->ents, c->nents, sizeof(*c->ents), cmp_entry);
  for (i = 0; i < c->nents && err == 0; i++) {
    const entry_t *e = &c->ents[i];
    if (i > 0 && e->klen == e[-1].klen &&
        strncasecmp(e->line + KEY_AT, e[-1].line + KEY_AT, e->klen) == 0)
      c->left_out++;
    else
      err = pc__buf_puts(&c->out, e->line);
  }
  return err;
}

/* One line of "files". A file compressed (no "skipped", no "error") gets a
 * Use-As-Dictionary entry; its deltas are noted.
 */
static int one_file(conf_t *c, const char *prefix, json_t *f) {
  const char *path = json_string_value(json_object_get(f, "path"));
  json_t *deltas = json_object_get(f, "deltas");
  int err;

  if (!json_is_object(f) || path == NULL)
    return PC_ENOTMANIFEST;
  if (deltas != NULL && (err = note_deltas(c, path, deltas)) != 0)
    return err;
  if (json_object_get(f, "skipped") != NULL ||
      json_object_get(f, "error") != NULL)
    return 0;
  if (!plain(path) || path[0] == '/' || strstr(path, "..") != NULL) {
    c->left_out++;
    return 0;
  }
  return put_use_as_dict(c, prefix, path);
}

/* The 32 bytes of a hex SHA-256 as base64 (RFC 4648, padded): 44 chars. */
static void sha_base64(const char *hex, char out[45]) {
  static const char al[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  unsigned char b[33] = {0};
  size_t i, o = 0;

  for (i = 0; i < 32; i++) {
    unsigned hi = (unsigned)(hex[2 * i] <= '9' ? hex[2 * i] - '0'
                                               : hex[2 * i] - 'a' + 10);
    unsigned lo = (unsigned)(hex[2 * i + 1] <= '9' ? hex[2 * i + 1] - '0'
                                                   : hex[2 * i + 1] - 'a' + 10);
    b[i] = (unsigned char)(hi << 4 | lo);
  }
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

static const char http_fixed[] =
    "\n# The delta codings the client accepts (q=0 refuses one).\n"
    "map $http_accept_encoding $pc_dcb {\n"
    "    default \"\";\n"
    "    \"~*(^|,)\\s*dcb\\s*;\\s*q\\s*=\\s*0(\\.0{0,3})?\\s*(,|$)\" \"\";\n"
    "    \"~*(^|,)\\s*dcb\\s*(;|,|$)\" \"1\";\n"
    "}\n"
    "map $http_accept_encoding $pc_dcz {\n"
    "    default \"\";\n"
    "    \"~*(^|,)\\s*dcz\\s*;\\s*q\\s*=\\s*0(\\.0{0,3})?\\s*(,|$)\" \"\";\n"
    "    \"~*(^|,)\\s*dcz\\s*(;|,|$)\" \"1\";\n"
    "}\n"
    "# What try_files appends to $uri: the delta's suffix, or nothing.\n"
    "map $pc_dcb$pc_dict_id $pc_try_dcb {\n"
    "    default \"\";\n"
    "    \"~^1(?<pc_id_b>[0-9a-f]{16})$\" \".$pc_id_b.dcb\";\n"
    "}\n"
    "map $pc_dcz$pc_dict_id $pc_try_dcz {\n"
    "    default \"\";\n"
    "    \"~^1(?<pc_id_z>[0-9a-f]{16})$\" \".$pc_id_z.dcz\";\n"
    "}\n"
    "# The coding of the file try_files chose.\n"
    "map $uri $pc_coding {\n"
    "    default \"\";\n"
    "    \"~\\.[0-9a-f]{16}\\.dcb$\" \"dcb\";\n"
    "    \"~\\.[0-9a-f]{16}\\.dcz$\" \"dcz\";\n"
    "}\n"
    "# Use-As-Dictionary of the files of this release, by URL ($pc_source:\n"
    "# $uri before try_files, set in the location part).\n"
    "map $pc_source $pc_use_as_dictionary {\n"
    "    default \"\";\n";

static int put_dicts(conf_t *c) {
  char b64[45];
  size_t i, n = 0;
  int err = 0;

  qsort(c->dicts, c->ndicts, sizeof(*c->dicts), cmp_dict);
  for (i = 0; i < c->ndicts; i++)
    if (n == 0 || memcmp(c->dicts[n - 1], c->dicts[i], 64) != 0)
      memmove(c->dicts[n++], c->dicts[i], 65);
  c->ndicts = n;
  err = pc__buf_puts(&c->out,
                     "# The dictionary the client holds: its <id> in the "
                     "outputs' names.\n"
                     "map $http_available_dictionary $pc_dict_id {\n"
                     "    default \"\";\n");
  for (i = 0; i < n && err == 0; i++) {
    sha_base64(c->dicts[i], b64);
    err = pc__buf_printf(&c->out, "    \":%s:\" \"%.*s\";\n", b64, ID_HEX,
                         c->dicts[i]);
  }
  return err ? err : pc__buf_puts(&c->out, "}\n");
}

/* The http part. */
static int http_part(conf_t *c, const char *prefix, json_t *files) {
  size_t i;
  json_t *f;
  int err = 0;

  json_array_foreach(files, i, f) {
    if ((err = one_file(c, prefix, f)) != 0)
      return err;
  }
  if ((err = pc__buf_puts(&c->out, "# precompress server-config nginx --part "
                                   "http: include in http {}.\n")) != 0 ||
      (err = put_dicts(c)) != 0 ||
      (err = pc__buf_puts(&c->out, http_fixed)) != 0 ||
      (err = put_entries(c)) != 0 || (err = pc__buf_puts(&c->out, "}\n")) != 0)
    return err;
  if (c->left_out > 0)
    err = pc__buf_printf(&c->out,
                         "# %zu files left out: names with characters this "
                         "generator does not escape, or the same name as "
                         "another but for case.\n",
                         c->left_out);
  return err;
}

static const char loc_body[] =
    "set $pc_source $uri;\n"
    "try_files $uri$pc_try_dcb $uri$pc_try_dcz $uri $uri/ =404;\n";

static const char loc_head[] =
    "gzip_static on;\n"
    "gzip_vary off;\n"
    "add_header Content-Encoding $pc_coding;\n"
    "add_header Vary \"Accept-Encoding, Available-Dictionary\";\n"
    "add_header Use-As-Dictionary $pc_use_as_dictionary;\n";

/* Each line of text, indented by `ind` spaces. */
static int put_indented(pc__buf_t *b, const char *text, int ind) {
  int err = 0;
  while (*text && err == 0) {
    const char *nl = strchr(text, '\n');
    size_t n = nl ? (size_t)(nl - text + 1) : strlen(text);
    err = pc__buf_printf(b, "%*s%.*s", ind, "", (int)n, text);
    text += n;
  }
  return err;
}

/* The location part: the files' extensions are known once they are read. */
static int location_part(conf_t *c, const char *prefix, json_t *files) {
  size_t i;
  json_t *f;
  int err;

  json_array_foreach(files, i, f) {
    if ((err = one_file(c, prefix, f)) != 0)
      return err;
  }
  if ((err = pc__buf_printf(&c->out,
                            "# precompress server-config nginx --part "
                            "location: include in server {}.\n"
                            "location ^~ %s {\n",
                            prefix)) != 0 ||
      (err = put_indented(&c->out, loc_body, 4)) != 0 ||
      (err = put_indented(&c->out, loc_head, 4)) != 0)
    return err;
  for (i = 0; i < NTYPES && err == 0; i++) {
    if (!c->ext_used[i])
      continue;
    err = pc__buf_printf(&c->out,
                         "    location ~ \"\\.%s$\" {\n"
                         "        types { %s %s dcb dcz; }\n",
                         types[i][0], types[i][1], types[i][0]);
    if (err == 0 && (err = put_indented(&c->out, loc_body, 8)) == 0)
      err = pc__buf_puts(&c->out, "    }\n");
  }
  if (err == 0 && c->unknown_ext > 0)
    err = pc__buf_printf(&c->out,
                         "    # %zu files with deltas of a type not known "
                         "here: their deltas are typed default_type.\n",
                         c->unknown_ext);
  return err ? err : pc__buf_puts(&c->out, "}\n");
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

int pc_server_config(int (*put)(void *data, const void *buf, size_t len),
                     void *data, const char *manifest, pc_conf_t kind,
                     const char *prefix) {
  conf_t c;
  json_t *root = NULL, *files;
  int err;

  if (put == NULL || manifest == NULL || prefix == NULL ||
      (kind != PC_CONF_NGINX_HTTP && kind != PC_CONF_NGINX_LOCATION) ||
      prefix[0] != '/' || prefix[strlen(prefix) - 1] != '/' || !plain(prefix) ||
      strstr(prefix, "..") != NULL)
    return -EINVAL;
  memset(&c, 0, sizeof(c));
  if ((err = load(manifest, &root, &files)) == 0) {
    err = kind == PC_CONF_NGINX_HTTP ? http_part(&c, prefix, files)
                                     : location_part(&c, prefix, files);
  }
  json_decref(root);
  if (err == 0)
    err = emit(&c.out, put, data);
  pc__buf_free(&c.out);
  free(c.dicts);
  while (c.nents > 0)
    free(c.ents[--c.nents].line);
  free(c.ents);
  return err;
}
