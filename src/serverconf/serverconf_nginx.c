/* nginx's part of pc_server_config() (serverconf.c reads the manifest):
 *
 *  - PC_CONF_NGINX_HTTP: the map hash's sizes, then the maps. $pc_dict_id
 *    is the <id> (16 hex digits) of the dictionary the browser says it
 *    holds (Available-Dictionary: :<base64 SHA-256>:), one entry per
 *    dictionary of the manifest's "deltas"; $pc_try_1/$pc_try_2 are the
 *    suffixes of the deltas the client takes (q above 0), the .dcb first,
 *    never an empty first before a second; $pc_coding is the coding of the
 *    file try_files chose (from its name); $pc_use_as_dictionary the
 *    Use-As-Dictionary value of each file the manifest lists as
 *    compressed, by URL.
 *  - PC_CONF_NGINX_LOCATION: `location ^~ PREFIX` (with `alias DIR/` when
 *    given), where try_files tries $uri with each suffix, then $uri
 *    (gzip_static's .gz beside it), and add_header sets Content-Encoding,
 *    Vary and Use-As-Dictionary. try_files changes the extension nginx types
 * the response by (".dcz"), so each extension of a file with deltas gets a
 *    nested location whose `types` give dcb and dcz its type (the table
 *    below: nginx's own mime.types for the text types; an extension not in
 *    it is typed default_type either way).
 *
 * Two parts, because nginx takes a `map` only in http{} and a `location`
 * only in server{}.
 */
#include "serverconf/serverconf.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

static const char http_fixed[] =
    "\n# The delta codings the client accepts: 1, or 0 (q=0 refuses one).\n"
    "map $http_accept_encoding $pc_dcb {\n"
    "    default \"0\";\n"
    "    \"~*(^|,)\\s*dcb\\s*;\\s*q\\s*=\\s*0(\\.0{0,3})?\\s*(,|$)\" \"0\";\n"
    "    \"~*(^|,)\\s*dcb\\s*(;|,|$)\" \"1\";\n"
    "}\n"
    "map $http_accept_encoding $pc_dcz {\n"
    "    default \"0\";\n"
    "    \"~*(^|,)\\s*dcz\\s*;\\s*q\\s*=\\s*0(\\.0{0,3})?\\s*(,|$)\" \"0\";\n"
    "    \"~*(^|,)\\s*dcz\\s*(;|,|$)\" \"1\";\n"
    "}\n"
    "# What try_files appends to $uri, first and second: with a dictionary\n"
    "# held, the .dcb when dcb is taken, else the .dcz when dcz is; then the\n"
    "# .dcz when both are. Empty otherwise, and the second is empty when the\n"
    "# first is, so an empty first never ends the search at $uri.\n"
    "map $pc_dcb$pc_dcz$pc_dict_id $pc_try_1 {\n"
    "    default \"\";\n"
    "    \"~^1[01](?<pc_id_1b>[0-9a-f]{16})$\" \".$pc_id_1b.dcb\";\n"
    "    \"~^01(?<pc_id_1z>[0-9a-f]{16})$\" \".$pc_id_1z.dcz\";\n"
    "}\n"
    "map $pc_dcb$pc_dcz$pc_dict_id $pc_try_2 {\n"
    "    default \"\";\n"
    "    \"~^11(?<pc_id_2z>[0-9a-f]{16})$\" \".$pc_id_2z.dcz\";\n"
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

static int put_dicts(pc__conf_t *c) {
  size_t i;
  int err = pc__buf_puts(&c->out, "# The dictionary the client holds: its "
                                  "<id> in the outputs' names.\n"
                                  "map $http_available_dictionary "
                                  "$pc_dict_id {\n"
                                  "    default \"\";\n");
  for (i = 0; i < c->ndicts && err == 0; i++)
    err = pc__buf_printf(&c->out, "    \":%s:\" \"%.*s\";\n", c->dicts[i].b64,
                         PC__CONF_ID_HEX, c->dicts[i].hex);
  return err ? err : pc__buf_puts(&c->out, "}\n");
}

/* nginx's map compares strings without regard to case: the files in that
 * order, those of a name so equal in the manifest's order (by address).
 */
static int cmp_file(const void *a, const void *b) {
  const pc__conf_file_t *x = *(const pc__conf_file_t *const *)a;
  const pc__conf_file_t *y = *(const pc__conf_file_t *const *)b;
  int d = strcasecmp(x->path, y->path);
  if (d != 0)
    return d;
  return x < y ? -1 : x > y;
}

/* The Use-As-Dictionary map's files: those with a pattern whose URL no
 * other's equals but for case (nginx would give one the other's value),
 * in v (malloc'd), n of them; *dups counts those left out.
 */
static int entries(const pc__conf_t *c, const pc__conf_file_t ***v, size_t *n,
                   size_t *dups) {
  const pc__conf_file_t **all = NULL;
  size_t i, j, m = 0;

  *v = NULL;
  *n = 0;
  if (c->nfiles > 0 && (all = malloc(c->nfiles * sizeof(*all))) == NULL)
    return -ENOMEM;
  for (i = 0; i < c->nfiles; i++)
    if (c->files[i].match != NULL)
      all[m++] = &c->files[i];
  if (m > 0)
    qsort(all, m, sizeof(*all), cmp_file);
  for (i = 0; i < m; i = j) {
    for (j = i + 1; j < m && strcasecmp(all[j]->path, all[i]->path) == 0; j++)
      ;
    if (j - i == 1)
      all[(*n)++] = all[i];
    else
      *dups += j - i;
  }
  *v = all;
  return 0;
}

/* nginx's size of a key in a hash bucket (ngx_hash.h, NGX_HASH_ELT_SIZE),
 * with 8-byte pointers: 32-bit builds need less. */
static size_t elt_size(size_t keylen) { return 8 + ((keylen + 2 + 7) & ~7u); }

/* map_hash_bucket_size and map_hash_max_size for these maps: nginx refuses
 * a map with a key longer than a bucket holds ("could not build map_hash,
 * you should increase map_hash_bucket_size": the default, a CPU cache line,
 * holds 46-byte URLs), and searches bucket counts up to max_size for one
 * where no bucket overflows, warning when none does. A bucket here holds
 * 16 keys of the average size and 2 of the longest, so that a count near
 * the keys' own is found after a short search; the count allowed is the
 * number of keys (an average of one per bucket). Buckets are filled only
 * as far as their keys go: the size costs no memory.
 */
static int put_hash_sizes(pc__conf_t *c, const pc__conf_file_t *const *v,
                          size_t n) {
  size_t i, keys = c->ndicts + n, longest = 0, total = 0, want;
  size_t bucket = 64, max = 2048;

  for (i = 0; i < c->ndicts; i++) { /* ":<base64>:" */
    size_t e = elt_size(2 + strlen(c->dicts[i].b64));
    total += e;
    longest = e > longest ? e : longest;
  }
  for (i = 0; i < n; i++) {
    size_t e = elt_size(strlen(c->prefix) + strlen(v[i]->path));
    total += e;
    longest = e > longest ? e : longest;
  }
  want = keys > 0 ? 16 * (total / keys) : 0;
  if (want < 2 * longest)
    want = 2 * longest;
  while (bucket < want + 8 && bucket < 32768)
    bucket *= 2;
  while (max < keys)
    max += 1024;
  return pc__buf_printf(&c->out,
                        "# Sized for this part's maps: %zu keys, the longest "
                        "taking %zu bytes of a bucket.\n"
                        "# nginx takes each once in http {}: where the "
                        "configuration sets them too,\n"
                        "# keep one line of each, the larger value.\n"
                        "map_hash_bucket_size %zu;\n"
                        "map_hash_max_size %zu;\n",
                        keys, longest, bucket, max);
}

static int put_entries(pc__conf_t *c, const pc__conf_file_t *const *v,
                       size_t n) {
  size_t i;
  int err = 0;

  for (i = 0; i < n && err == 0; i++)
    err = pc__buf_printf(&c->out, "    \"%s%s\" \"match=\\\"%s\\\"\";\n",
                         c->prefix, v[i]->path, v[i]->match);
  return err;
}

int pc__conf_nginx_http(pc__conf_t *c) {
  const pc__conf_file_t **v = NULL;
  size_t n = 0, dups = 0;
  int err;

  if ((err = entries(c, &v, &n, &dups)) == 0 &&
      (err = pc__buf_puts(&c->out, "# precompress server-config nginx --part "
                                   "http: include in http {}.\n")) == 0 &&
      (err = put_hash_sizes(c, v, n)) == 0 && (err = put_dicts(c)) == 0 &&
      (err = pc__buf_puts(&c->out, http_fixed)) == 0 &&
      (err = put_entries(c, v, n)) == 0)
    err = pc__buf_puts(&c->out, "}\n");
  free(v);
  if (err == 0 && c->not_plain + dups > 0)
    err = pc__buf_printf(&c->out,
                         "# %zu file%s left out: names with characters this "
                         "generator does not escape, or the same name as "
                         "another but for case.\n",
                         c->not_plain + dups, PC__PLURAL(c->not_plain + dups));
  return err;
}

static const char loc_body[] =
    "set $pc_source $uri;\n"
    "try_files $uri$pc_try_1 $uri$pc_try_2 $uri $uri/ =404;\n";

static const char loc_head[] =
    "gzip_static on;\n"
    "gzip_vary off;\n"
    "add_header Content-Encoding $pc_coding;\n"
    "add_header Vary \"Accept-Encoding, Available-Dictionary\";\n"
    "add_header Use-As-Dictionary $pc_use_as_dictionary;\n";

/* The location part: a nested location per extension of a file with a
 * delta kept, whose `types` give the delta the file's type. */
int pc__conf_nginx_location(pc__conf_t *c) {
  unsigned char used[NTYPES] = {0};
  size_t i, unknown = pc__conf_kept_types(c, types, NTYPES, used);
  int err;

  if ((err = pc__buf_printf(&c->out,
                            "# precompress server-config nginx --part "
                            "location: include in server {}.\n"
                            "location ^~ %s {\n",
                            c->prefix)) != 0 ||
      (c->dir != NULL &&
       (err = pc__buf_printf(&c->out, "    alias %s/;\n", c->dir)) != 0) ||
      (err = pc__conf_indented(&c->out, loc_body, 4)) != 0 ||
      (err = pc__conf_indented(&c->out, loc_head, 4)) != 0)
    return err;
  for (i = 0; i < NTYPES && err == 0; i++) {
    if (!used[i])
      continue;
    err = pc__buf_printf(&c->out,
                         "    location ~ \"\\.%s$\" {\n"
                         "        types { %s %s dcb dcz; }\n",
                         types[i][0], types[i][1], types[i][0]);
    if (err == 0 && (err = pc__conf_indented(&c->out, loc_body, 8)) == 0)
      err = pc__buf_puts(&c->out, "    }\n");
  }
  if (err == 0 && unknown > 0)
    err = pc__buf_printf(&c->out,
                         "    # %zu file%s with deltas of a type not known "
                         "here: their deltas are typed default_type.\n",
                         unknown, PC__PLURAL(unknown));
  return err ? err : pc__buf_puts(&c->out, "}\n");
}
