/* bench/gen.c: deterministic, compressible text for the benchmark corpora.
 *
 *   gen small DIR COUNT      COUNT files of 200 B .. 4 KiB (log-uniform sizes)
 * in DIR/gNN/dNNN/, 100 files a directory gen large FILE BYTES SEED  one file
 * of BYTES bytes gen blob FILE BYTES SEED   one file of BYTES incompressible
 * bytes (an asset compressed already under a name no skip list knows: .bin,
 * .data, .glb)
 *
 * The text looks like source code: indented lines of identifiers drawn from a
 * 4096-word vocabulary with a skewed (Zipf-like) frequency, operators and
 * numbers. It compresses roughly like minified-then-pretty JavaScript (gzip -9
 * about 3-4x). Same arguments, same bytes, on any machine: the PRNG is
 * splitmix64 and no libc random or floating-point library call is used for the
 * content (sizes use integer arithmetic only).
 *
 * Built by bench/run.sh with `cc -O2`; not part of the project's build.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t below(uint64_t *s, uint64_t n) { return splitmix(s) % n; }

#define VOCAB 4096
static char vocab[VOCAB][16];
#define PHRASES 512
static char phrase[PHRASES][96];

/* Skewed pick in [0, n): u^3 concentrates on the low indexes (a few very
 * common words, a long tail of rare ones). */
static uint64_t skewed(uint64_t *s, uint64_t n) {
  uint64_t u = below(s, 1u << 20);
  uint64_t c = (u * u >> 20) * u >> 20; /* u^3 / 2^40, in [0, 2^20) */
  return c * n >> 20;
}

static const char *ops[] = {" = ",  "+", " - ", "*", " === ", " && ", " || ",
                            ",",    ".", "(",   ")", " ? ",   ":",    ";",
                            " => ", "{", "}",   "[", "]",     "!"};

/* The most frequent words are real web tokens (brotli's built-in dictionary
 * knows many of them, as it knows real assets' words); the tail is generated.
 */
static const char *common[] = {
    "function",  "return",     "this",        "var",        "const",
    "let",       "if",         "else",        "for",        "while",
    "new",       "null",       "undefined",   "true",       "false",
    "typeof",    "object",     "string",      "number",     "length",
    "prototype", "call",       "apply",       "push",       "slice",
    "indexOf",   "Object",     "Array",       "document",   "window",
    "element",   "value",      "name",        "type",       "data",
    "options",   "default",    "export",      "import",     "from",
    "class",     "extends",    "constructor", "super",      "props",
    "state",     "render",     "children",    "parent",     "node",
    "key",       "index",      "result",      "error",      "event",
    "target",    "style",      "width",       "height",     "margin",
    "padding",   "border",     "color",       "background", "display",
    "position",  "absolute",   "relative",    "none",       "block",
    "flex",      "inline",     "auto",        "px",         "em",
    "rem",       "solid",      "transparent", "font",       "size",
    "weight",    "div",        "span",        "button",     "input",
    "form",      "label",      "header",      "footer",     "section",
    "container", "row",        "col",         "btn",        "primary",
    "secondary", "active",     "disabled",    "hover",      "focus",
    "transform", "transition", "opacity",     "top",        "left",
    "right",     "bottom",     "get",         "set",        "has",
    "add",       "remove",     "update",      "create",     "init",
    "handler",   "callback",   "Promise",     "resolve",    "reject",
    "then",      "catch",      "async",       "await",      "module",
    "exports",   "require",    "Math",        "max",        "min",
    "floor",     "JSON",       "stringify",   "parse",      "map",
    "filter",    "reduce",     "forEach",     "keys",       "assign",
    "Symbol",    "iterator",   "instanceof",  "delete",     "try",
    "throw",     "Error",      "message",     "path",       "href",
    "src",       "http",       "https",       "www",        "content",
    "text",      "html",       "svg",         "viewBox",    "fill",
    "stroke",    "xmlns",      "version",
};
#define NCOMMON (sizeof common / sizeof common[0])

static void make_vocab(void) {
  uint64_t s = 0x5eed0f0cab1e5ULL;
  for (int i = 0; i < VOCAB; i++) {
    if ((size_t)i < NCOMMON * 2 && i % 2 == 0) {
      snprintf(vocab[i], sizeof vocab[i], "%s", common[i / 2]);
      continue;
    }
    int n = 2 + (int)below(&s, 10);
    for (int k = 0; k < n; k++) {
      uint64_t r = below(&s, 40);
      vocab[i][k] = r < 30   ? (char)('a' + below(&s, 26))
                    : r < 37 ? (char)('A' + below(&s, 26))
                             : (char)('0' + below(&s, 10));
    }
    vocab[i][n] = '\0';
  }
  /* phrases: common token sequences, like "function(e,t){return " */
  for (int i = 0; i < PHRASES; i++) {
    char *p = phrase[i];
    size_t l = 0;
    int n = 2 + (int)below(&s, 6);
    for (int k = 0; k < n && l < 70; k++)
      l += (size_t)snprintf(p + l, sizeof phrase[0] - l, "%s%s",
                            vocab[skewed(&s, VOCAB)], ops[below(&s, 20)]);
  }
}

/* Fills buf with len bytes of code-like text. */
static void fill(char *buf, size_t len, uint64_t seed) {
  uint64_t s = seed;
  size_t n = 0;
  int depth = 0;
  while (n < len) {
    char line[1024];
    size_t l = 0;
    for (int i = 0; i < depth * 2; i++)
      line[l++] = ' ';
    int tokens = 1 + (int)below(&s, 8);
    for (int t = 0; t < tokens; t++) {
      uint64_t r = below(&s, 8);
      if (r < 3)
        l += (size_t)snprintf(line + l, sizeof line - l, "%s",
                              phrase[skewed(&s, PHRASES)]);
      else if (r < 7)
        l += (size_t)snprintf(line + l, sizeof line - l, "%s%s",
                              vocab[skewed(&s, VOCAB)], ops[below(&s, 20)]);
      else
        l += (size_t)snprintf(line + l, sizeof line - l, "%" PRIu64 ",",
                              below(&s, 10000));
    }
    uint64_t r = below(&s, 6);
    if (r == 0 && depth < 6) {
      line[l++] = '{';
      depth++;
    } else if (r == 1 && depth > 0) {
      line[l++] = '}';
      depth--;
    }
    line[l++] = '\n';
    size_t take = l < len - n ? l : len - n;
    memcpy(buf + n, line, take);
    n += take;
  }
}

static int mkdir_p(const char *path) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p == '/') {
      *p = '\0';
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return -1;
      *p = '/';
    }
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
    return -1;
  return 0;
}

static int write_file(const char *path, const char *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
    perror(path);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  make_vocab();
  if (argc == 4 && strcmp(argv[1], "small") == 0) {
    const char *dir = argv[2];
    long count = strtol(argv[3], NULL, 10);
    static const char *ext[] = {"js",  "css", "html", "json",
                                "svg", "txt", "mjs",  "xml"};
    char buf[4096];
    char path[4096];
    for (long i = 0; i < count; i++) {
      uint64_t s = 0xabcdef12345ULL ^ ((uint64_t)i * 0x9e3779b97f4a7c15ULL);
      /* log-uniform in [200, 4096]: 200 * 2^(x), x in [0, log2(20.48)) with
       * 1/64 steps, approximated in integer arithmetic */
      uint64_t step = below(&s, 279); /* 279/64 ~= log2(20.48) = 4.356 */
      uint64_t size = 200;
      for (uint64_t k = 0; k < step / 64; k++)
        size *= 2;
      /* fractional part: 2^(f/64) ~= 1 + f*ln2/64 (+ square term) */
      uint64_t f = step % 64;
      size = size * (65536 + f * 710 + f * f * 4) / 65536;
      if (size > 4096)
        size = 4096;
      long d = i / 100;
      snprintf(path, sizeof path, "%s/g%02ld/d%03ld", dir, d / 100, d % 100);
      if (i % 100 == 0 && mkdir_p(path) != 0) {
        perror(path);
        return 1;
      }
      snprintf(path, sizeof path, "%s/g%02ld/d%03ld/f%06ld.%s", dir, d / 100,
               d % 100, i, ext[i % 8]);
      fill(buf, (size_t)size, s);
      if (write_file(path, buf, (size_t)size) != 0)
        return 1;
    }
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "blob") == 0) {
    size_t total = (size_t)strtoull(argv[3], NULL, 10);
    uint64_t s = strtoull(argv[4], NULL, 10) * 0x100000001b3ULL;
    FILE *out = fopen(argv[2], "wb");
    if (!out) {
      perror(argv[2]);
      return 1;
    }
    for (size_t done = 0; done < total; done += 8) {
      uint64_t v = splitmix(&s);
      size_t n = total - done < 8 ? total - done : 8;
      if (fwrite(&v, 1, n, out) != n) {
        perror(argv[2]);
        return 1;
      }
    }
    if (fclose(out) != 0) {
      perror(argv[2]);
      return 1;
    }
    return 0;
  }
  if (argc == 5 && strcmp(argv[1], "large") == 0) {
    size_t total = (size_t)strtoull(argv[3], NULL, 10);
    uint64_t seed = strtoull(argv[4], NULL, 10);
    FILE *out = fopen(argv[2], "wb");
    if (!out) {
      perror(argv[2]);
      return 1;
    }
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    if (!buf)
      return 1;
    for (size_t done = 0, k = 0; done < total; k++) {
      size_t n = total - done < CHUNK ? total - done : CHUNK;
      fill(buf, n, seed * 0x100000001b3ULL + k);
      if (fwrite(buf, 1, n, out) != n) {
        perror(argv[2]);
        return 1;
      }
      done += n;
    }
    free(buf);
    if (fclose(out) != 0) {
      perror(argv[2]);
      return 1;
    }
    return 0;
  }
  fprintf(stderr, "usage: gen small DIR COUNT | gen large FILE BYTES SEED | "
                  "gen blob FILE BYTES SEED\n");
  return 2;
}
