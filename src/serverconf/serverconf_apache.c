/* Apache httpd 2.4's part of pc_server_config() (serverconf.c reads the
 * manifest): mod_rewrite rules and a <Location> for a <VirtualHost> (or the
 * main server's configuration; rules there are not inherited by virtual
 * hosts), never <Directory> or .htaccess, where a rule sees a file's path
 * and every rewrite is an internal redirect.
 *
 *  - Use-As-Dictionary: a rule per file the manifest lists as compressed
 *    sets PC_UAD to its URL pattern (the same as nginx's, serverconf.c);
 *    the rule also takes the file's .br/.gz/.zst and deltas, so that the
 *    value is there when another rule (README.md's .br/.gz rules in a
 *    <Directory>) redirects to one of them. `Header set` sends it.
 *  - The dictionary the client holds: a RewriteCond comparing
 *    Available-Dictionary with each dictionary's ":<base64>:" and a rule
 *    setting PC_ID to its <id>. Inline, not a RewriteMap: a txt: map is a
 *    file of its own to install beside the configuration, and a map is
 *    read in server context only anyway; one string comparison per
 *    dictionary is nothing for the tens or hundreds a release has.
 *  - FILE.<id>.dcb, else FILE.<id>.dcz: when PC_ID is set, the client
 *    accepts the coding (q above 0) and the file is there, the URL is
 *    rewritten to it [PT], with no-gzip and no-brotli (mod_deflate,
 *    mod_brotli leave it alone). "There" is %{DOCUMENT_ROOT} and the URL,
 *    or the Alias's directory (c->dir, given: --alias) and the URL below
 *    the prefix: a look-ahead (%{LA-U:REQUEST_FILENAME}, which would
 *    follow an Alias by itself) runs the <Directory>'s own rules too, and
 *    README.md's .br/.gz rules there turn the file's name into a redirect;
 *    -F takes a path, not a URL, and -U holds any URL that maps to no file
 *    as there.
 *  - mod_mime types the delta by the file's name: RemoveType/-Language/
 *    -Charset leave .dcb and .dcz no type, language or charset of their
 *    own, so the type is that of the extension before (app.js.<id>.dcz is
 *    typed as app.js), and AddEncoding gives the Content-Encoding.
 */
#include "serverconf/serverconf.h"

#include <string.h>

/* The Use-As-Dictionary rules; *out counts the files left out (a ',' would
 * end the rule's E= flag early). */
static int put_uad(pc__conf_t *c, size_t *out) {
  size_t i;
  int err =
      pc__buf_puts(&c->out, "# Use-As-Dictionary of this release's files, by "
                            "URL (also when their .br,\n"
                            "# .gz, .zst or delta is what is sent).\n");
  for (i = 0; i < c->nfiles && err == 0; i++) {
    const pc__conf_file_t *f = &c->files[i];
    if (f->match == NULL)
      continue;
    if (strchr(f->path, ',') != NULL) {
      ++*out;
      continue;
    }
    if ((err = pc__buf_puts(&c->out, "RewriteRule \"^")) != 0 ||
        (err = pc__conf_put_re(&c->out, c->prefix)) != 0 ||
        (err = pc__conf_put_re(&c->out, f->path)) != 0)
      break;
    err = pc__buf_printf(&c->out,
                         "(\\.(br|gz|zst)|\\.[0-9a-f]{16}\\.dc[bz])?$\" "
                         "\"-\" \"[NS,E=PC_UAD:%s]\"\n",
                         f->match);
  }
  return err;
}

static int put_dicts(pc__conf_t *c) {
  size_t i;
  int err = pc__buf_puts(&c->out, "# The dictionary the client holds "
                                  "(Available-Dictionary): its <id>.\n");
  for (i = 0; i < c->ndicts && err == 0; i++) {
    err = pc__buf_printf(&c->out,
                         "RewriteCond \"%%{HTTP:Available-Dictionary}\" "
                         "\"=:%s:\"\n"
                         "RewriteRule \"^",
                         c->dicts[i].b64);
    if (err == 0 && (err = pc__conf_put_re(&c->out, c->prefix)) == 0)
      err = pc__buf_printf(&c->out, "\" \"-\" \"[NS,E=PC_ID:%.*s]\"\n",
                           PC__CONF_ID_HEX, c->dicts[i].hex);
  }
  return err;
}

static const char delta_head[] =
    "# FILE.<id>.dcb, else FILE.<id>.dcz: a dictionary held, the coding "
    "accepted\n"
    "# (q=0 refuses it), the file there.\n";

/* The rule that serves FILE.<id>.CODING: plain names only (a rewrite to a
 * '?' would start a query string). $1 is the URL below the prefix; the
 * file is looked for at the document root + the URL, or in the Alias's
 * directory; [PT] hands the new URL to the URL-to-file mapping (an Alias
 * included).
 */
static int put_delta(pc__conf_t *c, const char *coding) {
  int err = pc__buf_printf(
      &c->out,
      "RewriteCond \"%%{ENV:PC_ID}\" \"^[0-9a-f]{16}$\"\n"
      "RewriteCond \"%%{HTTP:Accept-Encoding}\" "
      "\"(^|,)\\s*%s\\s*(;|,|$)\" [NC]\n"
      "RewriteCond \"%%{HTTP:Accept-Encoding}\" "
      "\"!(^|,)\\s*%s\\s*;\\s*q\\s*=\\s*0(\\.0{0,3})?\\s*(,|$)\" [NC]\n",
      coding, coding);
  if (err == 0 && c->dir == NULL)
    err =
        pc__buf_printf(&c->out, "RewriteCond \"%%{DOCUMENT_ROOT}%s", c->prefix);
  else if (err == 0)
    err = pc__buf_printf(&c->out, "RewriteCond \"%s/", c->dir);
  if (err == 0)
    err = pc__buf_printf(&c->out,
                         "$1.%%{ENV:PC_ID}.%s\" -f\n"
                         "RewriteRule \"^",
                         coding);
  if (err == 0 && (err = pc__conf_put_re(&c->out, c->prefix)) == 0)
    err = pc__buf_printf(&c->out,
                         "([-A-Za-z0-9._~/!&,;=@']+)$\" "
                         "\"%s$1.%%{ENV:PC_ID}.%s\" "
                         "\"[NS,PT,L,E=no-gzip:1,E=no-brotli:1]\"\n",
                         c->prefix, coding);
  return err;
}

static const char location_body[] =
    "# The deltas: Content-Encoding from their last extension; their type\n"
    "# that of the file's own extension (no type, language or charset of\n"
    "# their own).\n"
    "RemoveType .dcb .dcz\n"
    "RemoveLanguage .dcb .dcz\n"
    "RemoveCharset .dcb .dcz\n"
    "AddEncoding dcb .dcb\n"
    "AddEncoding dcz .dcz\n"
    "Header merge Vary Accept-Encoding\n"
    "Header merge Vary Available-Dictionary\n"
    "Header set Use-As-Dictionary \"match=\\\"%{PC_UAD}e\\\"\" env=PC_UAD\n";

int pc__conf_apache(pc__conf_t *c) {
  size_t out = 0;
  int err;

  if ((err = pc__buf_printf(
           &c->out,
           "# precompress server-config apache --location %s: include in "
           "the <VirtualHost>\n"
           "# that serves the files (or the main server), not in "
           "<Directory> or .htaccess.\n"
           "# Needs mod_rewrite, mod_headers and mod_mime.\n"
           "RewriteEngine On\n",
           c->prefix)) != 0 ||
      (err = put_uad(c, &out)) != 0 || (err = put_dicts(c)) != 0 ||
      (err = pc__buf_puts(&c->out, delta_head)) != 0 ||
      (err = put_delta(c, "dcb")) != 0 || (err = put_delta(c, "dcz")) != 0 ||
      (err = pc__buf_printf(&c->out, "<Location \"%s\">\n", c->prefix)) != 0 ||
      (err = pc__conf_indented(&c->out, location_body, 4)) != 0 ||
      (err = pc__buf_puts(&c->out, "</Location>\n")) != 0)
    return err;
  if (c->not_plain + out > 0)
    err = pc__buf_printf(&c->out,
                         "# %zu file%s left out of Use-As-Dictionary: names "
                         "with characters this generator does not escape "
                         "(',' included).\n",
                         c->not_plain + out, PC__PLURAL(c->not_plain + out));
  return err;
}
