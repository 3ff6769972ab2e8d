/* The codec build's identity (buildid.h). Shared objects are found with
 * dl_iterate_phdr(): the one whose loaded segments hold a codec function's
 * address, and its NT_GNU_BUILD_ID note read from memory (no file opened,
 * nothing loaded). Debian's packages keep that note when they strip.
 */
#include "codec/buildid.h"

#include <brotli/encode.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>
#include <zlib.h>
#if PC_HAVE_DL_ITERATE_PHDR
#include <elf.h>
#include <link.h>
#endif
#if PC_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#if PC_HAVE_ZOPFLI
#include <zopfli/zopfli.h>
#endif
#if PC_HAVE_ZSTD
#include <zstd.h>
#endif

#if defined(__clang__)
#define CC_ID "clang " __clang_version__
#elif defined(__GNUC__)
#define CC_ID "gcc " __VERSION__
#else
#define CC_ID "cc"
#endif

static char id[1024];
static uv_once_t id_once = UV_ONCE_INIT;

#if PC_HAVE_DL_ITERATE_PHDR
typedef struct probe {
  uintptr_t addr;
  char hex[2 * 40 + 1]; /* the build-id, or "" */
  int shared;           /* found in a shared object (not the program) */
} probe_t;

/* The build-id note among the object's PT_NOTE segments, as hex. */
static void note_hex(const struct dl_phdr_info *info, char *hex, size_t cap) {
  int i;

  hex[0] = '\0';
  for (i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    const unsigned char *p, *end;
    if (ph->p_type != PT_NOTE)
      continue;
    p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(const void *)p;
      size_t name = (n->n_namesz + 3) & ~(size_t)3;
      size_t desc = (n->n_descsz + 3) & ~(size_t)3;
      const unsigned char *d = p + sizeof(*n) + name;
      if (d + desc > end)
        break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
          memcmp(p + sizeof(*n), "GNU", 4) == 0) {
        size_t k;
        for (k = 0; k < n->n_descsz && 2 * k + 2 < cap; k++)
          snprintf(hex + 2 * k, 3, "%02x", d[k]);
        return;
      }
      p = d + desc;
    }
  }
}

static int find_object(struct dl_phdr_info *info, size_t size, void *data) {
  probe_t *pr = data;
  int i;

  (void)size;
  for (i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type != PT_LOAD || pr->addr < lo || pr->addr >= lo + ph->p_memsz)
      continue;
    /* The program itself has no name; a shared object a path. */
    pr->shared = info->dlpi_name != NULL && info->dlpi_name[0] != '\0';
    if (pr->shared)
      note_hex(info, pr->hex, sizeof(pr->hex));
    return 1;
  }
  return 0;
}
#endif

/* Appends "name=BUILD-ID" (or "name=static") for the object holding fn. 1
 * when it was linked in statically.
 */
static int add_object(size_t *n, const char *name, void (*fn)(void)) {
  int is_static = 1;
  const char *what = "static";
#if PC_HAVE_DL_ITERATE_PHDR
  probe_t pr;
  memset(&pr, 0, sizeof(pr));
  pr.addr = (uintptr_t)fn;
  if (dl_iterate_phdr(find_object, &pr) != 0 && pr.shared) {
    is_static = 0;
    what = pr.hex[0] != '\0' ? pr.hex : "shared";
  }
#else
  (void)fn;
#endif
  if (*n < sizeof(id))
    *n += (size_t)snprintf(id + *n, sizeof(id) - *n, " %s=%s", name, what);
  return is_static;
}

/* A codec function's address as a plain function pointer (only compared
 * with the loaded segments, never called).
 */
#define FN(f) ((void (*)(void))(uintptr_t)(f))

static void id_fill(void) {
  size_t n;
  int any_static = 0;

  n = (size_t)snprintf(id, sizeof(id), "cpu=%s; %s; objects:", PC_CPU_FAMILY,
                       pc_library_versions());
  any_static |= add_object(&n, "zlib", FN(deflate));
  any_static |= add_object(&n, "brotlienc", FN(BrotliEncoderCompressStream));
#if PC_HAVE_ZSTD
  any_static |= add_object(&n, "zstd", FN(ZSTD_compressStream2));
#endif
#if PC_HAVE_LIBDEFLATE
  any_static |= add_object(&n, "libdeflate", FN(libdeflate_alloc_compressor));
#endif
#if PC_HAVE_ZOPFLI
  any_static |= add_object(&n, "zopfli", FN(ZopfliCompress));
#endif
  if (any_static && n < sizeof(id))
    snprintf(id + n, sizeof(id) - n, "; cc=%s; codec_id=%s", CC_ID,
             PC_CODEC_ID);
}

const char *pc__codec_build_id(void) {
  uv_once(&id_once, id_fill);
  return id;
}
