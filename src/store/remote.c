/* The remote cache (remote.h): the key and the entry's header, and the
 * remote's thread with its libcurl multi handle.
 *
 * An entry is PC__REMOTE_HEAD bytes of header, then the payload:
 *
 *   "PCR1", kind ('K' a kept output, 'R' a rejection), 3 zero bytes,
 *   the rejection's limit (8 bytes, little-endian; 0 for 'K'),
 *   the entry's own key (32 bytes)
 *
 * so an answer for another key (a server that swapped two entries) is
 * known before its payload is even decoded, and a rejection, which has no
 * payload to check, is taken only under its own key.
 *
 * Threads: workers queue requests under `mu` and wait on `done` for their
 * lookups; the remote's thread alone touches libcurl's handles. What `mu`
 * guards is marked below.
 */
#include "store/remote.h"

#include "codec/buildid.h"
#include "common/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>
#if PC_HAVE_CURL
#include <curl/curl.h>
#if PC_CURL_DLOPEN
#include <dlfcn.h>
#endif
#endif

/* The entry's key: SHA-256 over a tag naming this layout, the codec
 * build's identity (buildid.h) and what the local store's key holds but
 * its library versions (the identity has them). As 64 hex digits it is
 * the name under /ac/.
 */
static void remote_key(const pc__store_key_t *k, unsigned char out[32]) {
  static const char tag[] = "precompress remote cache entry 1\n";
  const char *id = pc__codec_build_id();
  unsigned char f[8 * 4 + 3];
  pc__sha256_t s;
  int i;

  for (i = 0; i < 8; i++) {
    f[i] = (unsigned char)(k->h[0] >> (8 * i));
    f[8 + i] = (unsigned char)(k->h[1] >> (8 * i));
    f[16 + i] = (unsigned char)(k->size >> (8 * i));
    f[24 + i] = (unsigned char)((uint64_t)(int64_t)k->level >> (8 * i));
  }
  f[32] = (unsigned char)k->format;
  f[33] = (unsigned char)k->engine;
  f[34] = 0;
  pc__sha256_init(&s);
  pc__sha256_update(&s, tag, sizeof(tag) - 1);
  pc__sha256_update(&s, id, strlen(id) + 1);
  pc__sha256_update(&s, f, sizeof(f));
  pc__sha256_final(&s, out);
}

static void put_head(unsigned char *p, int kept, uint64_t limit,
                     const unsigned char key[32]) {
  int i;
  memcpy(p, "PCR1", 4);
  p[4] = kept ? 'K' : 'R';
  p[5] = p[6] = p[7] = 0;
  for (i = 0; i < 8; i++)
    p[8 + i] = (unsigned char)((kept ? 0 : limit) >> (8 * i));
  memcpy(p + 16, key, 32);
}

/* Reads an answer's header: 1 when it is an entry of `key` (g filled). */
static int parse_entry(pc__remote_get_t *g, const unsigned char key[32]) {
  const unsigned char *p = g->body_;
  uint64_t lim = 0;
  int i;

  if (g->body_len_ < PC__REMOTE_HEAD || memcmp(p, "PCR1", 4) != 0 ||
      p[5] != 0 || p[6] != 0 || p[7] != 0 || memcmp(p + 16, key, 32) != 0)
    return 0;
  for (i = 7; i >= 0; i--)
    lim = lim << 8 | p[8 + i];
  if (p[4] == 'R' && g->body_len_ == PC__REMOTE_HEAD) {
    g->found = g->rejected = 1;
    g->limit = lim;
    return 1;
  }
  if (p[4] != 'K' || lim != 0 || g->body_len_ - PC__REMOTE_HEAD > g->max)
    return 0;
  g->found = 1;
  g->data = p + PC__REMOTE_HEAD;
  g->len = g->body_len_ - PC__REMOTE_HEAD;
  return 1;
}

void pc__remote_get_free(pc__remote_get_t *g) {
  free(g->body_);
  g->body_ = NULL;
  g->body_len_ = 0;
  g->data = NULL;
  g->len = 0;
}

const char *pc_remote_version(void) { return pc__remote_version(); }

#if !PC_HAVE_CURL

const char *pc__remote_version(void) { return NULL; }

int pc__remote_open(pc__remote_t **out, const pc__remote_cfg_t *cfg) {
  (void)cfg;
  (void)remote_key;
  (void)put_head;
  (void)parse_entry;
  *out = NULL;
  return PC_ENOCURL;
}
void pc__remote_finish(pc__remote_t *r) { (void)r; }
void pc__remote_stats(const pc__remote_t *r, pc__remote_stats_t *st) {
  (void)r;
  memset(st, 0, sizeof(*st));
}
void pc__remote_free(pc__remote_t *r) { (void)r; }
void pc__remote_get(pc__remote_t *r, pc__remote_get_t *g, size_t n) {
  (void)r;
  (void)g;
  (void)n;
}
void pc__remote_count(pc__remote_t *r, unsigned lookups, unsigned hits,
                      unsigned rejected) {
  (void)r, (void)lookups, (void)hits, (void)rejected;
}
int pc__remote_put(pc__remote_t *r, const pc__store_key_t *k, int kept,
                   const unsigned char *mem, int fd, uint64_t len,
                   uint64_t limit) {
  (void)r, (void)k, (void)kept, (void)mem, (void)fd, (void)len, (void)limit;
  return 0;
}

#else /* PC_HAVE_CURL */

enum { REQ_GET, REQ_PUT };

/* Stores take at most this many connections while lookups wait. */
#define PUT_CONNS (PC__REMOTE_CONNS / 2)

/* The lookups of one pc__remote_get() call: its worker waits until none
 * is left. Guarded by mu.
 */
typedef struct batch {
  size_t left;
} batch_t;

typedef struct req {
  struct req *next; /* in a queue (mu) or in flight (the thread's) */
  int kind;
  char *url;
  unsigned char key[32];
  CURL *easy; /* while in flight */
  char err[CURL_ERROR_SIZE];
  /* REQ_GET: the caller's lookup, its batch, the body so far. */
  pc__remote_get_t *get;
  batch_t *batch;
  uint64_t max; /* the longest answer taken */
  int too_long;
  size_t cap;
  /* REQ_PUT: the entry, header and payload, in the request's block. */
  unsigned char *data;
  size_t len, off;
} req_t;

struct pc__remote {
  char *base; /* the URL, without a trailing '/' */
  char *token, *userpass;
  const char *cainfo; /* a CA bundle found for a static libcurl, or NULL */
  int read_only;
  long connect_ms, total_ms, speed_s;
  uint64_t drain_ms, budget;
  struct curl_slist *put_headers;

  uv_mutex_t mu; /* guards what follows, to `thread` */
  uv_cond_t done;
  req_t *gets, **gets_tail, *puts, **puts_tail;
  uint64_t queued; /* bytes of stores queued or in flight */
  int closing, off, puts_off;
  uint64_t deadline; /* uv_hrtime() by which a closing drain ends */
  pc__remote_stats_t st;

  /* The thread's alone. */
  uv_thread_t thread;
  int thread_on;
  CURLM *multi;
  req_t *inflight;
  unsigned active, active_puts;
  int abort; /* the remote went off: end what is in flight */
};

#if PC_CURL_DLOPEN
/* libcurl, loaded on first use. Linked like the others it brings some
 * thirty libraries (TLS, Kerberos, LDAP, SSH, IDN...) that the dynamic
 * loader maps and relocates at every start: 13 ms of the 20 a run over an
 * empty directory took, in every run, though only --cache-url and
 * --version use libcurl. A static program has it linked in (no loader).
 * Its functions come through this table, filled once (global_init); the
 * code below keeps libcurl's names for them.
 */
static struct {
  CURLcode (*global_init)(long);
  curl_version_info_data *(*version_info)(CURLversion);
  CURL *(*easy_init)(void);
  void (*easy_cleanup)(CURL *);
  CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
  const char *(*easy_strerror)(CURLcode);
  CURLM *(*multi_init)(void);
  CURLMcode (*multi_cleanup)(CURLM *);
  CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
  CURLMcode (*multi_add_handle)(CURLM *, CURL *);
  CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
  CURLMcode (*multi_perform)(CURLM *, int *);
  CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned, int, int *);
  CURLMcode (*multi_wakeup)(CURLM *);
  CURLMsg *(*multi_info_read)(CURLM *, int *);
  struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
  void (*slist_free_all)(struct curl_slist *);
} C;

/* libcurl's own type-checking macros (typecheck-gcc.h) name the functions. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init C.global_init
#define curl_version_info C.version_info
#define curl_easy_init C.easy_init
#define curl_easy_cleanup C.easy_cleanup
#define curl_easy_setopt C.easy_setopt
#define curl_easy_getinfo C.easy_getinfo
#define curl_easy_strerror C.easy_strerror
#define curl_multi_init C.multi_init
#define curl_multi_cleanup C.multi_cleanup
#define curl_multi_setopt C.multi_setopt
#define curl_multi_add_handle C.multi_add_handle
#define curl_multi_remove_handle C.multi_remove_handle
#define curl_multi_perform C.multi_perform
#define curl_multi_poll C.multi_poll
#define curl_multi_wakeup C.multi_wakeup
#define curl_multi_info_read C.multi_info_read
#define curl_slist_append C.slist_append
#define curl_slist_free_all C.slist_free_all

/* 1 once every function is found in a libcurl of ABI 4 (the soname since
 * 2006: Linux's, macOS's, the BSDs'). The library stays loaded: libcurl's
 * global state is the process's.
 */
static int load_curl(void) {
  static const char *const names[] = {"libcurl.so.4", "libcurl.4.dylib",
                                      "libcurl.so"};
  void *h = NULL, *f;
  size_t i;

  for (i = 0; h == NULL && i < PC__ARRAY_SIZE(names); i++)
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    return 0;
    /* POSIX: a function's address through dlsym()'s void *. */
#define SYM(field, name)                                                       \
  if ((f = dlsym(h, name)) == NULL)                                            \
    return 0;                                                                  \
  memcpy(&C.field, &f, sizeof(f))
  SYM(global_init, "curl_global_init");
  SYM(version_info, "curl_version_info");
  SYM(easy_init, "curl_easy_init");
  SYM(easy_cleanup, "curl_easy_cleanup");
  SYM(easy_setopt, "curl_easy_setopt");
  SYM(easy_getinfo, "curl_easy_getinfo");
  SYM(easy_strerror, "curl_easy_strerror");
  SYM(multi_init, "curl_multi_init");
  SYM(multi_cleanup, "curl_multi_cleanup");
  SYM(multi_setopt, "curl_multi_setopt");
  SYM(multi_add_handle, "curl_multi_add_handle");
  SYM(multi_remove_handle, "curl_multi_remove_handle");
  SYM(multi_perform, "curl_multi_perform");
  SYM(multi_poll, "curl_multi_poll");
  SYM(multi_wakeup, "curl_multi_wakeup");
  SYM(multi_info_read, "curl_multi_info_read");
  SYM(slist_append, "curl_slist_append");
  SYM(slist_free_all, "curl_slist_free_all");
#undef SYM
  return 1;
}
#else
static int load_curl(void) { return 1; }
#endif

static uv_once_t global_once = UV_ONCE_INIT;
static int global_loaded, global_ok;

/* libcurl's global state, set up once for the process and kept: its
 * cleanup is not safe beside another user of libcurl in the program.
 */
static void global_init(void) {
  if ((global_loaded = load_curl()) != 0)
    global_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

const char *pc__remote_version(void) {
  static char v[96];
  uv_once(&global_once, global_init);
  if (!global_loaded)
    return NULL;
  if (v[0] == '\0') {
    const curl_version_info_data *d = curl_version_info(CURLVERSION_NOW);
    /* No parenthesis: --version's line closes its list with one. */
    snprintf(v, sizeof(v), "libcurl %s%s%s", d->version,
             d->ssl_version != NULL ? " with " : "",
             d->ssl_version != NULL ? d->ssl_version : "");
  }
  return v;
}

/* A CA bundle, when libcurl has none of its own that is there: a static
 * libcurl carries no path that fits every system. CURL_CA_BUNDLE and
 * SSL_CERT_FILE first, as curl's tool and OpenSSL read them, then where
 * the distributions put theirs.
 */
static const char *find_cainfo(void) {
  static const char *const known[] = {
      "/etc/ssl/certs/ca-certificates.crt", /* Debian, Ubuntu, Alpine, Arch */
      "/etc/pki/tls/certs/ca-bundle.crt",   /* Fedora, RHEL */
      "/etc/ssl/ca-bundle.pem",             /* openSUSE */
      "/etc/pki/tls/cacert.pem",            /* OpenELEC */
      "/etc/ssl/cert.pem",                  /* Alpine, the BSDs, macOS */
  };
  const curl_version_info_data *d = curl_version_info(CURLVERSION_NOW);
  const char *e;
  size_t i;

  if ((e = getenv("CURL_CA_BUNDLE")) != NULL && e[0] != '\0')
    return e;
  if ((e = getenv("SSL_CERT_FILE")) != NULL && e[0] != '\0')
    return e;
  if (d->age >= CURLVERSION_NINTH &&
      ((d->cainfo != NULL && access(d->cainfo, R_OK) == 0) ||
       (d->capath != NULL && access(d->capath, R_OK) == 0)))
    return NULL;
  for (i = 0; i < PC__ARRAY_SIZE(known); i++)
    if (access(known[i], R_OK) == 0)
      return known[i];
  return NULL;
}

/* The first failure, said once (mu held). */
static void set_why(pc__remote_t *r, const char *why) {
  size_t n = strlen(why);
  if (r->st.why[0] != '\0')
    return;
  if (n >= sizeof(r->st.why))
    n = sizeof(r->st.why) - 1;
  memcpy(r->st.why, why, n);
  r->st.why[n] = '\0';
}

static void req_free(req_t *q) {
  if (q == NULL)
    return;
  free(q->url);
  if (q->kind == REQ_PUT)
    free(q->data);
  free(q);
}

/* A lookup answered (mu held): its worker may go on once its batch is. */
static void get_done(pc__remote_t *r, req_t *q) {
  if (--q->batch->left == 0)
    uv_cond_broadcast(&r->done);
  req_free(q);
}

/* Turns the remote off (mu held): queued lookups answered as misses,
 * queued stores dropped, and what is in flight ended by the thread.
 */
static void go_off(pc__remote_t *r) {
  req_t *q;

  r->off = 1;
  r->st.failed = 1;
  r->abort = 1;
  while ((q = r->gets) != NULL) {
    r->gets = q->next;
    r->st.lost++;
    get_done(r, q);
  }
  r->gets_tail = &r->gets;
  while ((q = r->puts) != NULL) {
    r->puts = q->next;
    r->st.lost++;
    r->queued -= q->len;
    req_free(q);
  }
  r->puts_tail = &r->puts;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  req_t *q = ud;
  pc__remote_get_t *g = q->get;
  size_t k = size * n;
  long code = 0;

  /* An error page is no entry: not kept, whatever its length. */
  curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &code);
  if (code != 200)
    return k;
  if (g->body_len_ + k > q->max) {
    q->too_long = 1;
    return 0; /* ends the transfer: CURLE_WRITE_ERROR */
  }
  if (g->body_len_ + k > q->cap) {
    size_t cap = q->cap ? q->cap : 4096;
    unsigned char *b;
    while (cap < g->body_len_ + k)
      cap *= 2;
    if (cap > q->max)
      cap = (size_t)q->max;
    if ((b = realloc(g->body_, cap)) == NULL)
      return 0;
    g->body_ = b;
    q->cap = cap;
  }
  memcpy(g->body_ + g->body_len_, p, k);
  g->body_len_ += k;
  return k;
}

static size_t on_send(char *p, size_t size, size_t n, void *ud) {
  req_t *q = ud;
  size_t k = size * n;
  if (k > q->len - q->off)
    k = q->len - q->off;
  memcpy(p, q->data + q->off, k);
  q->off += k;
  return k;
}

/* Sets q's transfer up on a new easy handle and adds it. 0 or -ENOMEM. */
static int begin(pc__remote_t *r, req_t *q) {
  CURL *e = curl_easy_init();

  if (e == NULL)
    return -ENOMEM;
  q->easy = e;
  q->err[0] = '\0';
  curl_easy_setopt(e, CURLOPT_URL, q->url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, q);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, q->err);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  /* http and https only, and no redirect: credentials go to the URL's
   * host alone.
   */
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(e, CURLOPT_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS);
#endif
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, r->connect_ms);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->total_ms);
  /* A server that accepts and then says nothing ends here. */
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, r->speed_s);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "precompress/" PC_VERSION_STRING);
  if (r->cainfo != NULL)
    curl_easy_setopt(e, CURLOPT_CAINFO, r->cainfo);
  if (r->token != NULL) {
    curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, r->token);
  } else if (r->userpass != NULL) {
    curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(e, CURLOPT_USERPWD, r->userpass);
  }
  if (q->kind == REQ_GET) {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, q);
  } else {
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_send);
    curl_easy_setopt(e, CURLOPT_READDATA, q);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)q->len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->put_headers);
  }
  if (curl_multi_add_handle(r->multi, e) != CURLM_OK) {
    curl_easy_cleanup(e);
    q->easy = NULL;
    return -ENOMEM;
  }
  q->next = r->inflight;
  r->inflight = q;
  r->active++;
  r->active_puts += q->kind == REQ_PUT;
  return 0;
}

/* Takes q out of flight (the thread's). */
static void unlink_req(pc__remote_t *r, req_t *q) {
  req_t **p;
  for (p = &r->inflight; *p != NULL; p = &(*p)->next)
    if (*p == q) {
      *p = q->next;
      break;
    }
  if (q->easy != NULL) {
    curl_multi_remove_handle(r->multi, q->easy);
    curl_easy_cleanup(q->easy);
    q->easy = NULL;
  }
  r->active--;
  r->active_puts -= q->kind == REQ_PUT;
}

/* What a transfer's end means; rc < 0: ended by us (the remote off or
 * the drain's time up), lost.
 */
static void finish(pc__remote_t *r, req_t *q, int rc) {
  long code = 0;
  const char *msg;

  if (q->easy != NULL && rc >= 0)
    curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &code);
  unlink_req(r, q);
  msg = q->err[0] != '\0' ? q->err
        : rc > 0          ? curl_easy_strerror((CURLcode)rc)
                          : "";
  uv_mutex_lock(&r->mu);
  if (q->kind == REQ_GET) {
    pc__remote_get_t *g = q->get;
    if (rc == CURLE_OK && code == 200) {
      if (!parse_entry(g, q->key))
        g->bad = 1; /* counted by whoever takes the answer */
    } else if (rc == CURLE_OK && code == 404) {
      /* a miss */
    } else if (rc == CURLE_WRITE_ERROR && q->too_long) {
      g->bad = 1; /* longer than its source: not an entry of ours */
    } else {
      r->st.lost++;
      if (rc >= 0 && !r->off) {
        char why[64];
        snprintf(why, sizeof(why), "HTTP %ld answering a lookup", code);
        set_why(r, rc == CURLE_OK ? why : msg);
        go_off(r);
      }
    }
    if (!g->found)
      pc__remote_get_free(g);
    get_done(r, q);
  } else {
    r->queued -= q->len;
    if (rc == CURLE_OK && code / 100 == 2) {
      r->st.stored++;
    } else {
      r->st.lost++;
      if (rc == CURLE_OK && !r->puts_off) {
        /* Refused (a full disk, no right to write): lookups go on. */
        char why[64];
        snprintf(why, sizeof(why), "HTTP %ld answering a store", code);
        set_why(r, why);
        r->puts_off = 1;
        r->st.failed = 1;
      } else if (rc > 0 && !r->off) {
        set_why(r, msg);
        go_off(r);
      }
    }
    req_free(q);
  }
  uv_mutex_unlock(&r->mu);
}

/* Ends every transfer in flight (the thread's). */
static void abort_all(pc__remote_t *r) {
  while (r->inflight != NULL)
    finish(r, r->inflight, -1);
}

/* Takes the requests to start now (mu held): lookups first; stores on at
 * most half the connections, so lookups, which workers wait for, always
 * find one free, unless only stores are left at the end.
 */
static req_t *take(pc__remote_t *r) {
  req_t *list = NULL, **tail = &list, *q;
  unsigned active = r->active, puts = r->active_puts;

  while (active < PC__REMOTE_CONNS && (q = r->gets) != NULL) {
    if ((r->gets = q->next) == NULL)
      r->gets_tail = &r->gets;
    *tail = q;
    tail = &q->next;
    active++;
  }
  while (active < PC__REMOTE_CONNS && (q = r->puts) != NULL &&
         (puts < PUT_CONNS || (r->closing && r->gets == NULL))) {
    if ((r->puts = q->next) == NULL)
      r->puts_tail = &r->puts;
    *tail = q;
    tail = &q->next;
    active++;
    puts++;
  }
  *tail = NULL;
  return list;
}

static void remote_main(void *arg) {
  pc__remote_t *r = arg;

  for (;;) {
    req_t *start, *q, *next;
    CURLMsg *m;
    int running, left, stop = 0, late = 0, closing, more;

    uv_mutex_lock(&r->mu);
    closing = r->closing;
    if (r->closing && r->gets == NULL && r->puts == NULL && r->active == 0)
      stop = 1;
    else if (r->closing && uv_hrtime() >= r->deadline)
      late = 1;
    start = stop || late ? NULL : take(r);
    uv_mutex_unlock(&r->mu);
    if (stop)
      break;
    if (late) {
      /* The drain's time is up: what is left is dropped, counted. */
      uint64_t lost;
      uv_mutex_lock(&r->mu);
      lost = r->st.lost;
      uv_mutex_unlock(&r->mu);
      abort_all(r);
      uv_mutex_lock(&r->mu);
      while ((q = r->puts) != NULL) {
        r->puts = q->next;
        r->st.lost++;
        r->queued -= q->len;
        req_free(q);
      }
      r->puts_tail = &r->puts;
      if (r->st.lost > lost) {
        char why[80];
        snprintf(why, sizeof(why), "stores still queued after %llu s",
                 (unsigned long long)(r->drain_ms / 1000));
        set_why(r, why);
      }
      uv_mutex_unlock(&r->mu);
      break;
    }
    for (q = start; q != NULL; q = next) {
      next = q->next;
      if (begin(r, q) != 0) {
        r->active++; /* finish() counts it out again */
        r->active_puts += q->kind == REQ_PUT;
        finish(r, q, CURLE_OUT_OF_MEMORY);
      }
    }
    curl_multi_perform(r->multi, &running);
    while ((m = curl_multi_info_read(r->multi, &left)) != NULL) {
      if (m->msg == CURLMSG_DONE) {
        CURL *e = m->easy_handle;
        CURLcode rc = m->data.result;
        char *p = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, &p);
        finish(r, (req_t *)(void *)p, (int)rc);
      }
    }
    if (r->abort) {
      r->abort = 0;
      abort_all(r);
    }
    /* Transfers that ended freed connections: what waits for one starts
     * now, not after the poll's timeout.
     */
    uv_mutex_lock(&r->mu);
    more = r->active < PC__REMOTE_CONNS &&
           (r->gets != NULL ||
            (r->puts != NULL &&
             (r->active_puts < PUT_CONNS || (r->closing && r->gets == NULL))));
    uv_mutex_unlock(&r->mu);
    if (!more)
      curl_multi_poll(r->multi, NULL, 0, closing ? 100 : 1000, NULL);
  }
}

int pc__remote_open(pc__remote_t **out, const pc__remote_cfg_t *cfg) {
  pc__remote_t *r;
  size_t n = strlen(cfg->url);
  unsigned t = cfg->timeout_s ? cfg->timeout_s : PC__REMOTE_TIMEOUT;

  *out = NULL;
  uv_once(&global_once, global_init);
  if (!global_loaded)
    return PC_ENOCURL;
  if (!global_ok)
    return -ENOMEM;
  if ((r = calloc(1, sizeof(*r))) == NULL)
    return -ENOMEM;
  while (n > 0 && cfg->url[n - 1] == '/')
    n--;
  if ((r->base = malloc(n + 1)) == NULL)
    goto fail;
  memcpy(r->base, cfg->url, n);
  r->base[n] = '\0';
  if ((cfg->token != NULL && (r->token = pc__strdup(cfg->token)) == NULL) ||
      (cfg->userpass != NULL &&
       (r->userpass = pc__strdup(cfg->userpass)) == NULL))
    goto fail;
  r->read_only = cfg->read_only;
  r->connect_ms = (long)t * 1000;
  r->speed_s = (long)t;
  r->total_ms = (long)t * 10000;
  r->drain_ms = (uint64_t)t * 2000;
  r->budget = cfg->budget;
  if (strncmp(r->base, "https:", 6) == 0)
    r->cainfo = find_cainfo();
  r->gets_tail = &r->gets;
  r->puts_tail = &r->puts;
  if ((r->put_headers = curl_slist_append(
           NULL, "Content-Type: application/octet-stream")) == NULL ||
      /* No "Expect: 100-continue" wait before a large body. */
      curl_slist_append(r->put_headers, "Expect:") == NULL)
    goto fail;
  if ((r->multi = curl_multi_init()) == NULL)
    goto fail;
  curl_multi_setopt(r->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                    (long)PC__REMOTE_CONNS);
  curl_multi_setopt(r->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                    (long)PC__REMOTE_CONNS);
  curl_multi_setopt(r->multi, CURLMOPT_MAXCONNECTS, (long)PC__REMOTE_CONNS);
  uv_mutex_init(&r->mu);
  uv_cond_init(&r->done);
  if (uv_thread_create(&r->thread, remote_main, r) != 0) {
    uv_cond_destroy(&r->done);
    uv_mutex_destroy(&r->mu);
    curl_multi_cleanup(r->multi);
    r->multi = NULL;
    goto fail;
  }
  r->thread_on = 1;
  *out = r;
  return 0;
fail:
  curl_slist_free_all(r->put_headers);
  free(r->token);
  free(r->userpass);
  free(r->base);
  free(r);
  return -ENOMEM;
}

void pc__remote_finish(pc__remote_t *r) {
  if (r == NULL || !r->thread_on)
    return;
  uv_mutex_lock(&r->mu);
  r->closing = 1;
  r->deadline = uv_hrtime() + r->drain_ms * 1000000;
  uv_mutex_unlock(&r->mu);
  curl_multi_wakeup(r->multi);
  uv_thread_join(&r->thread);
  r->thread_on = 0;
}

void pc__remote_stats(const pc__remote_t *r, pc__remote_stats_t *st) {
  uv_mutex_lock((uv_mutex_t *)&r->mu);
  *st = r->st;
  uv_mutex_unlock((uv_mutex_t *)&r->mu);
}

/* Overwrites a credential before its memory goes back. */
static void wipe_free(char *s) {
  if (s != NULL) {
    volatile char *p = s;
    while (*p != '\0')
      *p++ = '\0';
  }
  free(s);
}

void pc__remote_free(pc__remote_t *r) {
  if (r == NULL)
    return;
  pc__remote_finish(r);
  curl_multi_cleanup(r->multi);
  curl_slist_free_all(r->put_headers);
  uv_cond_destroy(&r->done);
  uv_mutex_destroy(&r->mu);
  wipe_free(r->token);
  wipe_free(r->userpass);
  free(r->base);
  free(r);
}

/* base/ac/<64 hex> for the key. */
static char *entry_url(const pc__remote_t *r, const unsigned char key[32]) {
  size_t n = strlen(r->base);
  char *u = malloc(n + 4 + 64 + 1);
  int i;

  if (u == NULL)
    return NULL;
  memcpy(u, r->base, n);
  memcpy(u + n, "/ac/", 4);
  for (i = 0; i < 32; i++)
    snprintf(u + n + 4 + 2 * i, 3, "%02x", key[i]);
  return u;
}

void pc__remote_get(pc__remote_t *r, pc__remote_get_t *g, size_t n) {
  req_t *list = NULL, **tail = &list, *q;
  batch_t b = {0};
  size_t i;

  for (i = 0; i < n; i++) {
    g[i].found = g[i].rejected = g[i].bad = 0;
    g[i].data = NULL;
    g[i].len = 0;
    g[i].body_ = NULL;
    g[i].body_len_ = 0;
    if ((q = calloc(1, sizeof(*q))) == NULL)
      continue;
    q->kind = REQ_GET;
    q->get = &g[i];
    q->batch = &b;
    q->max = g[i].max + PC__REMOTE_HEAD;
    remote_key(&g[i].key, q->key);
    if ((q->url = entry_url(r, q->key)) == NULL) {
      free(q);
      continue;
    }
    *tail = q;
    tail = &q->next;
    b.left++;
  }
  uv_mutex_lock(&r->mu);
  r->st.lost += n - b.left; /* no memory to ask */
  if (r->off || r->closing) {
    r->st.lost += b.left;
    b.left = 0;
  } else if (list != NULL) {
    *r->gets_tail = list;
    r->gets_tail = tail;
    list = NULL;
  }
  uv_mutex_unlock(&r->mu);
  while ((q = list) != NULL) { /* not queued */
    list = q->next;
    req_free(q);
  }
  if (b.left == 0)
    return;
  curl_multi_wakeup(r->multi);
  uv_mutex_lock(&r->mu);
  while (b.left > 0)
    uv_cond_wait(&r->done, &r->mu);
  uv_mutex_unlock(&r->mu);
}

void pc__remote_count(pc__remote_t *r, unsigned lookups, unsigned hits,
                      unsigned rejected) {
  uv_mutex_lock(&r->mu);
  r->st.lookups += lookups;
  r->st.hits += hits;
  r->st.rejected += rejected;
  uv_mutex_unlock(&r->mu);
}

int pc__remote_put(pc__remote_t *r, const pc__store_key_t *k, int kept,
                   const unsigned char *mem, int fd, uint64_t len,
                   uint64_t limit) {
  uint64_t n = kept ? len : 0, size = PC__REMOTE_HEAD + n, done = 0;
  req_t *q = NULL;
  int ok = 0;

  if (r->read_only)
    return 0;
  uv_mutex_lock(&r->mu);
  if (r->off || r->puts_off || r->closing) {
    r->st.lost++;
  } else if (r->queued + size > r->budget) {
    r->st.lost++;
    set_why(r, "the store queue was full");
  } else {
    r->queued += size;
    ok = 1;
  }
  uv_mutex_unlock(&r->mu);
  if (!ok)
    return 0;
  ok = 0;
  if ((q = calloc(1, sizeof(*q))) == NULL ||
      (q->data = malloc((size_t)size)) == NULL)
    goto out;
  q->kind = REQ_PUT;
  q->len = (size_t)size;
  remote_key(k, q->key);
  put_head(q->data, kept, limit, q->key);
  if ((q->url = entry_url(r, q->key)) == NULL)
    goto out;
  if (mem != NULL) {
    memcpy(q->data + PC__REMOTE_HEAD, mem, (size_t)n);
  } else {
    while (done < n) {
      ssize_t got = pread(fd, q->data + PC__REMOTE_HEAD + done,
                          (size_t)(n - done), (off_t)done);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        goto out;
      done += (uint64_t)got;
    }
  }
  uv_mutex_lock(&r->mu);
  if (!r->off && !r->puts_off && !r->closing) {
    q->next = NULL;
    *r->puts_tail = q;
    r->puts_tail = &q->next;
    q = NULL;
    ok = 1;
  }
  uv_mutex_unlock(&r->mu);
  if (ok)
    curl_multi_wakeup(r->multi);
out:
  if (!ok) {
    uv_mutex_lock(&r->mu);
    r->queued -= size;
    r->st.lost++;
    uv_mutex_unlock(&r->mu);
    if (q != NULL)
      q->kind = REQ_PUT;
    req_free(q);
  }
  return ok;
}

#endif /* PC_HAVE_CURL */
