/* nginx's part of pc_server_config() (serverconf.c reads the manifest):
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

/* The Use-As-Dictionary map's entries: one per URL compared without regard
 * to case (the first in the manifest's order); *dups counts the others.
 */
static int put_entries(pc__conf_t *c, size_t *dups) {
  const pc__conf_file_t **v = NULL;
  size_t i, n = 0;
  int err = 0;

  if (c->nfiles > 0 && (v = malloc(c->nfiles * sizeof(*v))) == NULL)
    return -ENOMEM;
  for (i = 0; i < c->nfiles; i++)
    if (c->files[i].match != NULL)
      v[n++] = &c->files[i];
  if (n > 0)
    qsort(v, n, sizeof(*v), cmp_file);
  for (i = 0; i < n && err == 0; i++) {
    if (i > 0 && strcasecmp(v[i]->path, v[i - 1]->path) == 0)
      ++*dups;
    else
      err = pc__buf_printf(&c->out, "    \"%s%s\" \"match=\\\"%s\\\"\";\n",
                           c->prefix, v[i]->path, v[i]->match);
  }
  free(v);
  return err;
}

int pc__conf_nginx_http(pc__conf_t *c) {
  size_t dups = 0;
  int err = 0;

  if ((err = pc__buf_puts(&c->out, "# precompress server-config nginx --part "
                                   "http: include in http {}.\n")) != 0 ||
      (err = put_dicts(c)) != 0 ||
      (err = pc__buf_puts(&c->out, http_fixed)) != 0 ||
      (err = put_entries(c, &dups)) != 0 ||
      (err = pc__buf_puts(&c->out, "}\n")) != 0)
    return err;
  if (c->not_plain + dups > 0)
    err = pc__buf_printf(&c->out,
                         "# %zu files left out: names with characters this "
                         "generator does not escape, or the same name as "
                         "another but for case.\n",
                         c->not_plain + dups);
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
                         "    # %zu files with deltas of a type not known "
                         "here: their deltas are typed default_type.\n",
                         unknown);
  return err ? err : pc__buf_puts(&c->out, "}\n");
}
