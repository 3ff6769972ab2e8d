/* libFuzzer target: Django's staticfiles.json reader
 * (src/manifest/djmanifest.c), which pairs deltas by logical name
 * (docs/deltas.md). The input is parsed by pc__djman_parse() and, written to a
 * memfd, read back by pc__djman_read() through /proc/self/fd/N. Besides "no
 * crash, no UB, no leak", it checks:
 *  - the status is 0, PC_EDJMANIFEST or -ENOMEM, and both readers agree;
 *    on failure the map holds nothing;
 *  - against a reference (jansson on the whole input, duplicate keys
 *    refused, then the shape checked here again: an object, "version" a
 *    string "1.<digits>", "paths" an object of non-empty strings without a
 *    NUL, no other member an array or an object): accepted exactly when
 *    the reference accepts, with as many pairs as "paths" has;
 *  - every pair is found by its name, with the reference's hashed name;
 *    a hashed name found by pc__djman_name() maps back to a name that
 *    gives it, and one that two names give is found by neither.
 */
#include "manifest/djmanifest.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond) {
  if (!cond)
    abort();
}

static int ref_version_ok(const json_t *v) {
  const char *s = json_string_value(v);
  size_t n;

  if (s == NULL || strlen(s) != json_string_length(v) || s[0] != '1' ||
      s[1] != '.')
    return 0;
  n = strspn(s + 2, "0123456789");
  return n > 0 && s[2 + n] == '\0';
}

/* The reference: the "paths" object when the input is a manifest, else
 * NULL (*doc is then freed).
 */
static json_t *reference(const uint8_t *data, size_t size, json_t **doc) {
  json_t *paths, *v;
  const char *key;

  *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  if (*doc == NULL)
    return NULL;
  paths = json_object_get(*doc, "paths");
  if (!json_is_object(*doc) || !json_is_object(paths) ||
      !ref_version_ok(json_object_get(*doc, "version")))
    goto no;
  json_object_foreach(*doc, key, v) {
    if (v != paths && (json_is_object(v) || json_is_array(v)))
      goto no;
  }
  json_object_foreach(paths, key, v) {
    const char *h = json_string_value(v);
    if (h == NULL || key[0] == '\0' || h[0] == '\0' ||
        strlen(h) != json_string_length(v))
      goto no;
  }
  return paths;
no:
  json_decref(*doc);
  *doc = NULL;
  return NULL;
}

/* How many names of the reference give `hashed`. */
static size_t givers(json_t *paths, const char *hashed) {
  const char *key;
  json_t *v;
  size_t n = 0;

  json_object_foreach(paths, key, v) n +=
      strcmp(json_string_value(v), hashed) == 0;
  return n;
}

static void check_map(const pc__djman_t *m, json_t *paths) {
  const char *key;
  json_t *v;
  size_t k;

  check(m->n == json_object_size(paths));
  check(m->nhashed <= m->n);
  json_object_foreach(paths, key, v) {
    const char *h = pc__djman_hashed(m, key);
    const char *back = pc__djman_name(m, json_string_value(v));
    check(h != NULL && strcmp(h, json_string_value(v)) == 0);
    if (givers(paths, h) == 1)
      check(back != NULL && strcmp(back, key) == 0);
    else
      check(back == NULL);
  }
  for (k = 0; k < m->nhashed; k++)
    check(pc__djman_name(m, m->byhashed[k]->hashed) == m->byhashed[k]->name);
  check(pc__djman_hashed(m, "\x01 no such name") == NULL ||
        json_object_get(paths, "\x01 no such name") != NULL);
}

static int read_back(const uint8_t *data, size_t size, pc__djman_t *m) {
  char path[64];
  int fd = memfd_create("djmanifest", MFD_CLOEXEC), err;

  check(fd >= 0);
  check(size == 0 || write(fd, data, size) == (ssize_t)size);
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  err = pc__djman_read(m, AT_FDCWD, path, 0, UINT64_MAX);
  close(fd);
  return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pc__djman_t m, r;
  json_t *doc, *paths;
  int err, rerr;

  err = pc__djman_parse(&m, (const char *)data, size);
  check(err == 0 || err == PC_EDJMANIFEST || err == -ENOMEM);
  if (err != 0)
    check(m.n == 0 && m.byname == NULL && m.pool == NULL);
  rerr = read_back(data, size, &r);
  check(rerr == err);
  paths = reference(data, size, &doc);
  if (err != -ENOMEM)
    check((err == 0) == (paths != NULL));
  if (err == 0 && paths != NULL) {
    check_map(&m, paths);
    check_map(&r, paths);
  }
  json_decref(doc);
  pc__djman_free(&m);
  pc__djman_free(&r);
  return 0;
}
