/* Caddy 2's part of pc_server_config() (serverconf.c reads the manifest):
 * a Caddyfile snippet for the site block that serves the files, beside
 * `file_server { precompressed br zstd gzip }` (README.md). Caddy's
 * precompressed sidecars know br, zstd and gzip only, chosen by
 * Accept-Encoding; the deltas are picked here, before file_server runs:
 *
 *  - `map` turns Available-Dictionary (":<base64 SHA-256>:") into the
 *    dictionary's <id> (one entry per dictionary of the manifest's
 *    "deltas"), and the original URL path into its Use-As-Dictionary
 *    value (one entry per file the manifest lists as compressed; exact,
 *    case-sensitive, as Caddy compares).
 *  - @pc_dcb, @pc_dcz: a dictionary held, the coding accepted (q above 0:
 *    Go's regexp has no look-ahead, so a second, negated header_regexp
 *    refuses q=0), a plain name (a '?' in {path} would start a query string
 *    in the rewrite) and FILE.<id>.CODING there (the `file` matcher); a
 *    `route` sets Content-Encoding and rewrites to it. dcb first.
 *  - Content-Type: file_server types a response by the name it serves, and
 *    ".dcz" has no type; it sets one only when none is set. So each
 *    extension of a file with a delta kept gets its type set here, for the
 *    file, its sidecars and its deltas alike: they agree on any machine,
 *    whatever /etc/mime.types says (the table below is Go's built-in one,
 *    what Caddy gives without a system table).
 *  - Vary: Accept-Encoding, Available-Dictionary on everything below the
 *    prefix.
 */
#include "serverconf/serverconf.h"

#include <string.h>

/* Go 1.19's built-in types (mime.builtinTypesLower), the types worth a
 * delta, and text/plain as Go gives any text type: with a charset. */
static const char *const types[][2] = {
    {"html", "text/html; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"},
    {"css", "text/css; charset=utf-8"},
    {"js", "text/javascript; charset=utf-8"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"json", "application/json"},
    {"svg", "image/svg+xml"},
    {"wasm", "application/wasm"},
    {"xml", "text/xml; charset=utf-8"},
    {"txt", "text/plain; charset=utf-8"},
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static int put_maps(pc__conf_t *c) {
  size_t i;
  int err = pc__buf_puts(&c->out,
                         "# The dictionary the client holds: its <id> in the "
                         "outputs' names.\n"
                         "map {http.request.header.Available-Dictionary} "
                         "{pc_dict_id} {\n");
  for (i = 0; i < c->ndicts && err == 0; i++)
    err = pc__buf_printf(&c->out, "\t\":%s:\" \"%.*s\"\n", c->dicts[i].b64,
                         PC__CONF_ID_HEX, c->dicts[i].hex);
  if (err == 0)
    err = pc__buf_puts(&c->out,
                       "\tdefault \"\"\n"
                       "}\n"
                       "# Use-As-Dictionary of this release's files, by the "
                       "URL asked for.\n"
                       "map {http.request.orig_uri.path} "
                       "{pc_use_as_dictionary} {\n");
  /* A plain name has no '`' and no '{': a backquoted token holds the
   * quotes of the value, and no placeholder can be made of it. */
  for (i = 0; i < c->nfiles && err == 0; i++)
    if (c->files[i].match != NULL)
      err = pc__buf_printf(&c->out, "\t\"%s%s\" `match=\"%s\"`\n", c->prefix,
                           c->files[i].path, c->files[i].match);
  return err ? err : pc__buf_puts(&c->out, "\tdefault \"\"\n}\n");
}

/* The matcher of a delta coding's requests. */
static int put_matcher(pc__conf_t *c, const char *coding) {
  int err = pc__buf_printf(&c->out,
                           "@pc_%s {\n"
                           "\tpath_regexp \"^",
                           coding);
  if (err == 0 && (err = pc__conf_put_re(&c->out, c->prefix)) == 0)
    err = pc__buf_printf(
        &c->out,
        "[-A-Za-z0-9._~/!&,;=@']+$\"\n"
        "\tnot vars {pc_dict_id} \"\"\n"
        "\theader_regexp Accept-Encoding \"(?i)(^|,)\\s*%s\\s*(;|,|$)\"\n"
        "\tnot header_regexp Accept-Encoding "
        "\"(?i)(^|,)\\s*%s\\s*;\\s*q\\s*=\\s*0(\\.0{0,3})?\\s*(,|$)\"\n"
        "\tfile {path}.{pc_dict_id}.%s\n"
        "}\n",
        coding, coding, coding);
  return err;
}

static const char route_deltas[] = "\troute @pc_dcb {\n"
                                   "\t\theader Content-Encoding dcb\n"
                                   "\t\trewrite {path}.{pc_dict_id}.dcb\n"
                                   "\t}\n"
                                   "\troute @pc_dcz {\n"
                                   "\t\theader Content-Encoding dcz\n"
                                   "\t\trewrite {path}.{pc_dict_id}.dcz\n"
                                   "\t}\n"
                                   "}\n";

int pc__conf_caddy(pc__conf_t *c) {
  unsigned char used[NTYPES] = {0};
  size_t i, unknown = pc__conf_kept_types(c, types, NTYPES, used);
  int err;

  if ((err = pc__buf_printf(&c->out,
                            "# precompress server-config caddy --location %s: "
                            "import in the site block\n"
                            "# that serves the files, beside file_server { "
                            "precompressed br zstd gzip }.\n",
                            c->prefix)) != 0 ||
      (err = put_maps(c)) != 0 ||
      (err = pc__buf_printf(&c->out,
                            "@pc_static path %s*\n"
                            "@pc_uad {\n"
                            "\tpath %s*\n"
                            "\tnot vars {pc_use_as_dictionary} \"\"\n"
                            "}\n"
                            "# FILE.<id>.dcb, else FILE.<id>.dcz: a dictionary "
                            "held, the coding accepted\n"
                            "# (q=0 refuses it), the file there.\n",
                            c->prefix, c->prefix)) != 0 ||
      (err = put_matcher(c, "dcb")) != 0 || (err = put_matcher(c, "dcz")) != 0)
    return err;
  for (i = 0; i < NTYPES && err == 0; i++) {
    if (!used[i])
      continue;
    if ((err = pc__buf_printf(&c->out, "@pc_type_%s path_regexp \"^",
                              types[i][0])) == 0 &&
        (err = pc__conf_put_re(&c->out, c->prefix)) == 0)
      err = pc__buf_printf(&c->out, ".*\\.%s$\"\n", types[i][0]);
  }
  if (err == 0)
    err = pc__buf_puts(&c->out, "route {\n"
                                "\theader @pc_static Vary \"Accept-Encoding, "
                                "Available-Dictionary\"\n"
                                "\theader @pc_uad Use-As-Dictionary "
                                "{pc_use_as_dictionary}\n");
  for (i = 0; i < NTYPES && err == 0; i++)
    if (used[i])
      err =
          pc__buf_printf(&c->out, "\theader @pc_type_%s Content-Type \"%s\"\n",
                         types[i][0], types[i][1]);
  if (err == 0)
    err = pc__buf_puts(&c->out, route_deltas);
  if (err == 0 && unknown > 0)
    err = pc__buf_printf(&c->out,
                         "# %zu file%s with deltas of a type not known here: "
                         "their deltas are sent without a Content-Type.\n",
                         unknown, PC__PLURAL(unknown));
  if (err == 0 && c->not_plain > 0)
    err = pc__buf_printf(&c->out,
                         "# %zu file%s left out of Use-As-Dictionary: names "
                         "with characters this generator does not escape.\n",
                         c->not_plain, PC__PLURAL(c->not_plain));
  return err;
}
