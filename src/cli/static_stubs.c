/* -Dstatic=true only: the calls in the static archives that would make a
 * static glibc program load shared objects at run time, replaced.
 *
 * SQLite's unix VFS can dlopen() an extension (sqlite3_load_extension, which
 * precompress never enables) and libuv's uv_os_get_passwd() calls
 * getpwuid_r(), which goes through NSS modules (precompress never asks for
 * a user's entry). Linked with -Wl,--wrap=dlopen,--wrap=getpwuid_r, every
 * reference in any archive lands here instead, so the binary holds no path
 * to dlopen() at all: it runs the same in an empty root, where there is no
 * /etc/nsswitch.conf and no libc.so, and never loads the host's libraries,
 * whose glibc may differ from the one linked in. The link then has no
 * "requires at runtime the shared libraries" warning either.
 *
 * With a static libcurl (-Dcurl=enabled, as the release builds it), the
 * name lookups of glibc's NSS are replaced too: libcurl resolves through
 * c-ares, which reads /etc/resolv.conf and /etc/hosts itself and asks for
 * services by number, yet libcurl's, OpenSSL's and c-ares's archives still
 * name getaddrinfo(), gethostbyname(), getservbyname() and
 * getservbyport_r() on paths precompress never takes. Should one be taken,
 * it fails as for a name no database knows: the remote cache then fails,
 * and the run goes on without it.
 */
#include <errno.h>
#include <netdb.h>
#include <pwd.h>
#include <stddef.h>
#include <sys/types.h>

void *__wrap_dlopen(const char *file, int mode);
int __wrap_getpwuid_r(uid_t uid, struct passwd *pwd, char *buf, size_t buflen,
                      struct passwd **result);
int __wrap_getaddrinfo(const char *node, const char *service,
                       const struct addrinfo *hints, struct addrinfo **res);
struct hostent *__wrap_gethostbyname(const char *name);
struct servent *__wrap_getservbyname(const char *name, const char *proto);
int __wrap_getservbyport_r(int port, const char *proto, struct servent *ent,
                           char *buf, size_t buflen, struct servent **result);

/* As dlopen() does when the object cannot be loaded. */
void *__wrap_dlopen(const char *file, int mode) {
  (void)file;
  (void)mode;
  return NULL;
}

/* As getpwuid_r() does for a uid no database knows: no entry, error 0 would
 * mean "not found" too, but ENOENT tells a caller why. */
int __wrap_getpwuid_r(uid_t uid, struct passwd *pwd, char *buf, size_t buflen,
                      struct passwd **result) {
  (void)uid;
  (void)pwd;
  (void)buf;
  (void)buflen;
  *result = NULL;
  return ENOENT;
}

int __wrap_getaddrinfo(const char *node, const char *service,
                       const struct addrinfo *hints, struct addrinfo **res) {
  (void)node;
  (void)service;
  (void)hints;
  *res = NULL;
  return EAI_FAIL;
}

struct hostent *__wrap_gethostbyname(const char *name) {
  (void)name;
  return NULL;
}

struct servent *__wrap_getservbyname(const char *name, const char *proto) {
  (void)name;
  (void)proto;
  return NULL;
}

int __wrap_getservbyport_r(int port, const char *proto, struct servent *ent,
                           char *buf, size_t buflen, struct servent **result) {
  (void)port;
  (void)proto;
  (void)ent;
  (void)buf;
  (void)buflen;
  *result = NULL;
  return ENOENT;
}
