#include "cache.h"

#include "out.h"

#include <dirent.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* Entry layout, little-endian: magic, kind (0 data, 1 rejected), 7 bytes
 * zero, payload length, rejection limit, XXH3-128 of the payload (low,
 * high), then the payload.
 */
#define MAGIC "PCCACHE1"
#define HDR 48
#define BUF ((size_t)1 << 16)

struct pc__cache {
  char *root; /* DIR/v1 */
  int read_only; /* a dry run: look up, never create, refresh or remove */
  char ver[17]; /* the codec libraries' versions, hashed: their bytes differ */
};

static void put64(unsigned char *p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static int mkdir_p(const char *dir) {
  char *p = pc__strdup(dir), *s;
  int err = 0;

  if (p == NULL)
    return -ENOMEM;
  for (s = p + 1; err == 0; s++) {
    if (*s != '/' && *s != '\0')
      continue;
    {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0700) != 0 && errno != EEXIST)
        err = PC__ERRNO();
      *s = c;
    }
    if (*s == '\0')
      break;
  }
  free(p);
  return err;
}

/* Refuses (PC_EUNSAFE) a cache directory that another user owns or that
 * others can write: they could plant entries our outputs would be copied
 * from, or links our trim would follow (OpenSSH's StrictModes, for keys).
 * `own` is 1 for a directory of ours inside it, which must also be no
 * symlink; the one the user named may be reached through one.
 */
static int check_private(const char *path, int own) {
  struct stat st;
  if ((own ? lstat(path, &st) : stat(path, &st)) != 0)
    return PC__ERRNO();
  if (!S_ISDIR(st.st_mode))
    return -ENOTDIR;
  if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
    return PC_EUNSAFE;
  return 0;
}

int pc__cache_open(pc__cache_t **out, const char *dir, int read_only) {
  pc__cache_t *c = calloc(1, sizeof(*c));
  const char *v = pc_library_versions();
  int err;

  *out = NULL;
  if (c == NULL || (c->root = pc__path_join(dir, "v1")) == NULL) {
    free(c);
    return -ENOMEM;
  }
  c->read_only = read_only;
  /* An existing DIR is judged before anything is made in it. */
  if ((err = check_private(dir, 0)) != 0 && err != -ENOENT) {
    pc__cache_close(c);
    return err;
  }
  if (read_only) {
    struct stat st;
    if (stat(c->root, &st) != 0) {
      err = PC__ERRNO();
      pc__cache_close(c);
      return err;
    }
  } else if ((err = mkdir_p(c->root)) != 0) {
    pc__cache_close(c);
    return err;
  }
  if ((err = check_private(dir, 0)) != 0 ||
      (err = check_private(c->root, 1)) != 0) {
    pc__cache_close(c);
    return err;
  }
  snprintf(c->ver, sizeof(c->ver), "%016llx",
           (unsigned long long)XXH3_64bits(v, strlen(v)));
  *out = c;
  return 0;
}

void pc__cache_close(pc__cache_t *c) {
  if (c == NULL)
    return;
  free(c->root);
  free(c);
}

const char *pc__cache_root(const pc__cache_t *c) {
  return c->root;
}

static int entry_path(const pc__cache_t *c, const uint64_t h[2], uint64_t size,
                      pc_format_t f, int level, pc_gzip_engine_t engine,
                      char *buf, size_t n) {
  /* zlib, the default, keeps the plain names: "gz9", "br11". */
  int other = f == PC_GZ && engine != PC_GZIP_ZLIB;
  int k = snprintf(buf, n, "%s/%02x/%016llx%016llx-%llu-%s%d%s%s-%s", c->root,
                   (unsigned)(h[0] >> 56), (unsigned long long)h[0],
                   (unsigned long long)h[1], (unsigned long long)size,
                   pc_format_ext(f), level, other ? "-" : "",
                   other ? pc_gzip_engine_name(engine) : "", c->ver);
  return k > 0 && (size_t)k < n ? 0 : -ENAMETOOLONG;
}

int pc__cache_get(const pc__cache_t *c, const uint64_t h[2], uint64_t size,
                  pc_format_t f, int level, pc_gzip_engine_t engine,
                  pc__cache_hit_t *hit) {
  char path[PATH_MAX];
  unsigned char hdr[HDR], *buf = NULL;
  struct stat st;
  XXH3_state_t *xs = NULL;
  uint64_t left;
  int fd, ok = 0;

  memset(hit, 0, sizeof(*hit));
  hit->fd = -1;
  if (entry_path(c, h, size, f, level, engine, path, sizeof(path)) != 0)
    return 0;
  /* O_NONBLOCK: a FIFO planted at the name must not block the worker (the
   * fstat below then refuses it).
   */
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      pc__read_full(fd, hdr, HDR, -1) != 0 || memcmp(hdr, MAGIC, 8) != 0)
    goto out;
  hit->len = get64(hdr + 16);
  hit->limit = get64(hdr + 24);
  if (hdr[8] == 1) {
    hit->rejected = 1;
    ok = st.st_size == HDR && hit->len == 0;
    goto out;
  }
  if (hdr[8] != 0 || (uint64_t)st.st_size != HDR + hit->len)
    goto out;
  /* Verify the whole payload now: a bad entry must never reach the tree. */
  if ((xs = XXH3_createState()) == NULL || (buf = malloc(BUF)) == NULL)
    goto out;
  XXH3_128bits_reset(xs);
  for (left = hit->len; left > 0;) {
    size_t n = left < BUF ? (size_t)left : BUF;
    if (pc__read_full(fd, buf, n, -1) != 0)
      goto out;
    XXH3_128bits_update(xs, buf, n);
    left -= n;
  }
  {
    XXH128_hash_t sum = XXH3_128bits_digest(xs);
    if (sum.low64 != get64(hdr + 32) || sum.high64 != get64(hdr + 40) ||
        lseek(fd, HDR, SEEK_SET) != HDR)
      goto out;
  }
  ok = 1;
out:
  XXH3_freeState(xs);
  free(buf);
  if (ok) {
    /* Last use, for the least-recently-used trim. */
    if (!c->read_only)
      futimens(fd, NULL);
    if (!hit->rejected) {
      hit->fd = fd;
      return 1;
    }
  } else if (!c->read_only) {
    unlink(path); /* corrupt or truncated: gone, to be written anew */
  }
  close(fd);
  return ok;
}

int pc__cache_put(const pc__cache_t *c, const uint64_t h[2], uint64_t size,
                  pc_format_t f, int level, pc_gzip_engine_t engine, int kept,
                  const unsigned char *mem, int fd, uint64_t len,
                  uint64_t limit) {
  char path[PATH_MAX];
  unsigned char hdr[HDR], *buf = NULL;
  pc__out_t o = PC__OUT_INIT;
  XXH3_state_t *xs = NULL;
  int err, stored = 0;

  if (entry_path(c, h, size, f, level, engine, path, sizeof(path)) != 0)
    return 0;
  /* Ours alone: an entry holds a source's content, whatever that source's
   * mode (a 0600 secret must not become readable through the cache). Its
   * mtime, the time of last use for the trim, is now: written just now.
   */
  if ((err = pc__out_open_mode(&o, AT_FDCWD, path, 0600)) == -ENOENT) {
    /* The two-hex-digit subdirectory, on first use. */
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdir(path, 0700);
    *slash = '/';
    err = pc__out_open_mode(&o, AT_FDCWD, path, 0600);
  }
  if (err != 0)
    return 0;
  memset(hdr, 0, sizeof(hdr));
  memcpy(hdr, MAGIC, 8);
  hdr[8] = !kept;
  put64(hdr + 16, kept ? len : 0);
  put64(hdr + 24, limit);
  if (kept && mem != NULL) {
    /* All of it at hand: the header with its sum first, then the bytes. */
    XXH128_hash_t sum = XXH3_128bits(mem, (size_t)len);
    put64(hdr + 32, sum.low64);
    put64(hdr + 40, sum.high64);
    if (pc__out_write(&o, hdr, HDR) != 0 || pc__out_write(&o, mem, len) != 0)
      goto fail;
  } else if (kept) {
    uint64_t done = 0;
    XXH128_hash_t sum;
    if (fd < 0 || pc__out_write(&o, hdr, HDR) != 0 ||
        (xs = XXH3_createState()) == NULL || (buf = malloc(BUF)) == NULL)
      goto fail;
    XXH3_128bits_reset(xs);
    while (done < len) {
      size_t n = len - done < BUF ? (size_t)(len - done) : BUF;
      ssize_t r = pread(fd, buf, n, (off_t)done);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0 || pc__out_write(&o, buf, (size_t)r) != 0)
        goto fail;
      XXH3_128bits_update(xs, buf, (size_t)r);
      done += (uint64_t)r;
    }
    sum = XXH3_128bits_digest(xs);
    put64(hdr + 32, sum.low64);
    put64(hdr + 40, sum.high64);
    if (pwrite(o.fd, hdr, HDR, 0) != HDR)
      goto fail;
  } else if (pc__out_write(&o, hdr, HDR) != 0) {
    goto fail;
  }
  stored = pc__out_finish(&o, path) == 0;
  goto out;
fail:
  pc__out_discard(&o);
out:
  XXH3_freeState(xs);
  free(buf);
  return stored;
}

typedef struct ent {
  struct timespec used;
  uint64_t bytes;
  char *path;
} ent_t;

static int cmp_used(const void *a, const void *b) {
  const ent_t *x = a, *y = b;
  if (x->used.tv_sec != y->used.tv_sec)
    return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
  if (x->used.tv_nsec != y->used.tv_nsec)
    return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
  return strcmp(x->path, y->path);
}

int pc__cache_trim(const pc__cache_t *c, uint64_t max_bytes) {
  ent_t *ents = NULL;
  size_t n = 0, cap = 0, i;
  uint64_t total = 0;
  DIR *top = opendir(c->root);
  struct dirent *de;
  int err = 0;

  if (top == NULL)
    return PC__ERRNO();
  while (err == 0 && (de = readdir(top)) != NULL) {
    char *sub;
    DIR *d;
    struct dirent *e;
    if (de->d_name[0] == '.')
      continue;
    if ((sub = pc__path_join(c->root, de->d_name)) == NULL) {
      err = -ENOMEM;
      break;
    }
    if ((d = opendir(sub)) != NULL) {
      while (err == 0 && (e = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
          continue;
        if (n == cap) {
          size_t ncap = cap ? cap * 2 : 1024;
          ent_t *g = realloc(ents, ncap * sizeof(*g));
          if (g == NULL) {
            err = -ENOMEM;
            break;
          }
          ents = g;
          cap = ncap;
        }
        if ((ents[n].path = pc__path_join(sub, e->d_name)) == NULL) {
          err = -ENOMEM;
          break;
        }
        ents[n].used = st.st_mtim;
        ents[n].bytes = (uint64_t)st.st_size;
        total += ents[n].bytes;
        n++;
      }
      closedir(d);
    }
    free(sub);
  }
  closedir(top);
  if (err == 0 && total > max_bytes) {
    qsort(ents, n, sizeof(*ents), cmp_used);
    for (i = 0; i < n && total > max_bytes; i++)
      if (unlink(ents[i].path) == 0 || errno == ENOENT)
        total -= ents[i].bytes;
  }
  for (i = 0; i < n; i++)
    free(ents[i].path);
  free(ents);
  return err;
}
