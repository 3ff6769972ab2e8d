/* Preloaded by tests/faults/test_faults.py (never part of the program; not with
 * a sanitizer build, whose allocator this would bypass).
 *
 * PC_FAULT_MALLOC=N: the Nth malloc(), calloc() or realloc() of the
 * process from here on (all threads, every library: libc's own calls go
 * through these names too) returns NULL with ENOMEM; one call, as strace's
 * when=N. PC_FAULT_MALLOC_COUNT=FILE: the number of those calls is written
 * to FILE at exit, for the test to know the range of N.
 * PC_FAULT_MALLOC_SITE=FILE: where the failed call came from (a few frames,
 * "module+0xoffset symbol" each), written to FILE when it fails.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static atomic_ulong calls;
static unsigned long fail_at;
static int armed;
static const char *count_file;
static const char *site_file;

__attribute__((constructor)) static void pc_fault_malloc_init(void) {
  const char *n = getenv("PC_FAULT_MALLOC");
  count_file = getenv("PC_FAULT_MALLOC_COUNT");
  site_file = getenv("PC_FAULT_MALLOC_SITE");
  if (n != NULL)
    fail_at = strtoul(n, NULL, 10);
  if (site_file != NULL) {
    /* backtrace() loads the unwinder (libgcc_s) on first use: now, not
     * inside the failing malloc().
     */
    void *fr[2];
    (void)backtrace(fr, 2);
  }
  armed = fail_at != 0 || count_file != NULL;
}

__attribute__((destructor)) static void pc_fault_malloc_fini(void) {
  char buf[32];
  int fd, len;

  if (count_file == NULL)
    return;
  len = snprintf(buf, sizeof(buf), "%lu\n", (unsigned long)atomic_load(&calls));
  fd = open(count_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    if (write(fd, buf, (size_t)len) != len)
      _exit(99);
    close(fd);
  }
}

/* Says where the failing call came from: a few frames, each as module +
 * offset (and symbol, when exported), for the test to name the site and
 * to know a library's own allocation (brotli exits when one fails).
 */
static void note_site(void) {
  char buf[2048];
  void *fr[8];
  size_t len = 0;
  int n, i, fd;

  if (site_file == NULL)
    return;
  n = backtrace(fr, 8);
  for (i = 1; i < n && len < sizeof(buf) - 300; i++) {
    Dl_info info;
    int k;
    memset(&info, 0, sizeof(info));
    if (dladdr(fr[i], &info) != 0 && info.dli_fname != NULL)
      k = snprintf(buf + len, sizeof(buf) - len, "%s+%#lx %s\n", info.dli_fname,
                   (unsigned long)((char *)fr[i] - (char *)info.dli_fbase),
                   info.dli_sname != NULL ? info.dli_sname : "?");
    else
      k = snprintf(buf + len, sizeof(buf) - len, "?+%p\n", fr[i]);
    if (k > 0)
      len += (size_t)k;
  }
  if (len >= sizeof(buf))
    len = sizeof(buf) - 1;
  fd = open(site_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    if (write(fd, buf, len) != (ssize_t)len)
      _exit(99);
    close(fd);
  }
}

static int fail_now(void) {
  if (!armed || atomic_fetch_add(&calls, 1) + 1 != fail_at)
    return 0;
  note_site();
  errno = ENOMEM;
  return 1;
}

/* The project builds with -fvisibility=hidden: these must be seen. */
#define PC_FAULT_EXPORT __attribute__((visibility("default")))

PC_FAULT_EXPORT void *malloc(size_t n) {
  if (fail_now())
    return NULL;
  return __libc_malloc(n);
}

PC_FAULT_EXPORT void *calloc(size_t n, size_t size) {
  if (fail_now())
    return NULL;
  return __libc_calloc(n, size);
}

PC_FAULT_EXPORT void *realloc(void *p, size_t n) {
  if (fail_now())
    return NULL;
  return __libc_realloc(p, n);
}
