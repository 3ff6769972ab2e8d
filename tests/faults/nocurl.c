/* Preloaded by tests/cache/test_remote_cache.py (never part of the
 * program): a machine whose libcurl cannot be loaded. dlopen() of a name
 * holding "libcurl" fails, as for a missing file; any other name is the
 * real dlopen()'s. No sanitizer in it: it goes into sanitizer builds too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <string.h>

/* The project builds with -fvisibility=hidden: this must be seen. */
__attribute__((visibility("default"))) void *dlopen(const char *name,
                                                    int flags) {
  static void *(*real)(const char *, int);
  void *f;

  if (name != NULL && strstr(name, "libcurl") != NULL)
    return NULL;
  if (real == NULL) {
    if ((f = dlsym(RTLD_NEXT, "dlopen")) == NULL)
      return NULL;
    memcpy(&real, &f, sizeof(f));
  }
  return real(name, flags);
}
