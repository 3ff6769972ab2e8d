/* Which file of an earlier release is a file's predecessor (RFC 9842's
 * dictionary for it): the one whose name is the same once the content hash
 * a build tool wrote into it is set aside.
 *
 * A name template says where the hash is, in the words of webpack's own
 * templates: "[name].[hash:12].[ext]" (Django's ManifestStaticFilesStorage),
 * "[name].[hash].[ext]" (webpack's [contenthash], 8 to 64 hex digits),
 * "[name]-[hash:8].[ext]" (Vite and Rollup: 8 of A-Z a-z 0-9 _ -). [name] is
 * one or more characters, [ext] the part after the last dot, [hash] hex
 * digits unless the template is written with [b64hash] (base64url, with an
 * upper-case letter or a digit in it, so that a word is no hash). The key
 * of a base name under a template is the name with the hash replaced by
 * '*': "app.3f2a9c1e4b7d.js" -> "app.*.js" (which is also the URL pattern a
 * server offers the file as a dictionary for: Use-As-Dictionary match).
 */
#ifndef PC_DICTNAME_H
#define PC_DICTNAME_H

#include <stddef.h>

/* The default templates, tried in this order (NULL-terminated). */
extern const char *const pc__dictname_defaults[];

/* 0 when `tmpl` is a template this module understands (exactly one [name],
 * one [hash], [hash:N] or [b64hash:N], one [ext] at the end, N from 4 to
 * 64), else -EINVAL. */
int pc__dictname_check(const char *tmpl);

/* The key of base name `name` under the first of `tmpls` (n of them) it
 * matches, written to key (cap bytes, NUL-terminated): its length, 0 when
 * no template matches (the name has no hash: its own name is its key), or
 * -ENAMETOOLONG when key is too small. */
int pc__dictname_key(const char *const *tmpls, size_t n, const char *name,
                     char *key, size_t cap);

#endif /* PC_DICTNAME_H */
