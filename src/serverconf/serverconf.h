/* What pc_server_config() (serverconf.c) reads from a manifest, and the
 * generators that write a server's configuration from it: nginx
 * (serverconf_nginx.c), Apache httpd (serverconf_apache.c) and Caddy
 * (serverconf_caddy.c). The
 * manifest is read, and each file's Use-As-Dictionary URL pattern made, in
 * one place; each server's file only writes.
 */
#ifndef PC_SERVERCONF_H
#define PC_SERVERCONF_H

#include "common/common.h"

#include <string.h>

#define PC__CONF_ID_HEX 16 /* the <id> of FILE.<id>.dcz: SHA-256's first */

/* One file of the manifest's "files". */
typedef struct pc__conf_file {
  char *path;  /* below the root, as the manifest has it */
  char *match; /* Use-As-Dictionary's URL pattern (the URL with the content
                  hash in the name as '*'), NULL for a file not compressed
                  or whose name is not plain (serverconf.c) */
  int kept;    /* it has a delta kept (a "deltas" entry with a "size") */
} pc__conf_file_t;

/* A dictionary of the manifest's "deltas". */
typedef struct pc__conf_dict {
  char hex[65]; /* its SHA-256, hex: hex[0..15] is the <id> */
  char b64[45]; /* the same, base64: Available-Dictionary is ":<b64>:" */
} pc__conf_dict_t;

typedef struct pc__conf {
  pc__buf_t out;          /* what is written */
  const char *prefix;     /* the URL of the manifest's root: /.../ */
  const char *dir;        /* the directory prefix serves (an Apache Alias),
                             no '/' at its end, or NULL: the document root */
  pc__conf_file_t *files; /* in the manifest's order */
  size_t nfiles, fcap;
  pc__conf_dict_t *dicts; /* distinct, by hex */
  size_t ndicts, dcap;
  size_t not_plain; /* files compressed whose names are not plain */
} pc__conf_t;

/* nginx: the maps, for http {}; `location ^~ PREFIX`, for server {}.
 * Apache httpd: rules for a <VirtualHost> (or the main server). Caddy: a
 * Caddyfile snippet for the site block. Each
 * appends to c->out: 0 or -ENOMEM. */
int pc__conf_nginx_http(pc__conf_t *c);
int pc__conf_nginx_location(pc__conf_t *c);
int pc__conf_apache(pc__conf_t *c);
int pc__conf_caddy(pc__conf_t *c);

/* The helpers below are inline: the generators share them, and
 * serverconf.c calls the generators (no loop between the files). */

/* Which entries of a server's type table ({extension, type}, n of them)
 * the files with a delta kept have: used[k] set for each. Returns the
 * number of such files whose extension the table lacks. */
static inline size_t pc__conf_kept_types(const pc__conf_t *c,
                                         const char *const types[][2], size_t n,
                                         unsigned char *used) {
  size_t i, k, unknown = 0;

  for (i = 0; i < c->nfiles; i++) {
    const char *dot = strrchr(c->files[i].path, '.');
    if (!c->files[i].kept)
      continue;
    if (dot != NULL && strchr(dot, '/') != NULL)
      dot = NULL; /* a dot in a directory's name: no extension */
    for (k = 0; dot != NULL && k < n; k++)
      if (strcmp(dot + 1, types[k][0]) == 0)
        break;
    if (dot != NULL && k < n)
      used[k] = 1;
    else
      unknown++;
  }
  return unknown;
}

/* s appended to b as a regular expression (PCRE, RE2) matching itself: of
 * the plain characters (serverconf.c), only '.' means anything else there.
 * 0 or -ENOMEM. */
static inline int pc__conf_put_re(pc__buf_t *b, const char *s) {
  int err = 0;
  for (; *s && err == 0; s++)
    err = *s == '.' ? pc__buf_puts(b, "\\.") : pc__buf_append(b, s, 1);
  return err;
}

/* Each line of text appended to b indented by `ind` spaces: 0, -ENOMEM. */
static inline int pc__conf_indented(pc__buf_t *b, const char *text, int ind) {
  int err = 0;
  while (*text && err == 0) {
    const char *nl = strchr(text, '\n');
    size_t n = nl ? (size_t)(nl - text + 1) : strlen(text);
    err = pc__buf_printf(b, "%*s%.*s", ind, "", (int)n, text);
    text += n;
  }
  return err;
}

#endif /* PC_SERVERCONF_H */
