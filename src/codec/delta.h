/* RFC 9842's dictionary-compressed outputs: a file compressed against its
 * predecessor (the dictionary), whole, in one call.
 *
 *   .dcb  FF 44 43 42, SHA-256(dictionary), then a brotli stream made with
 *         the dictionary as a raw shared dictionary (brotli >= 1.1);
 *         window at most 16 MiB (lgwin <= 24, never large-window).
 *   .dcz  5E 2A 4D 18 20 00 00 00 (a zstd skippable frame of 32 bytes),
 *         SHA-256(dictionary), then a zstd frame made with the dictionary
 *         as raw content (a prefix); window at most max(8 MiB, 1.25 x the
 *         dictionary), never over 128 MiB.
 */
#ifndef PC_DELTA_H
#define PC_DELTA_H

#include "common/common.h"
#include "common/sha256.h"

/* The header's length: magic and hash. */
#define PC__DCB_HEADER (4 + PC__SHA256_LEN)
#define PC__DCZ_HEADER (8 + PC__SHA256_LEN)

/* The largest dictionary each can use whole (the RFC's window limits): a
 * dcb's window is at most 16 MiB; a dcz's at most 128 MiB, and a prefix
 * is only reachable within the window. */
#define PC__DCB_DICT_MAX ((uint64_t)16 << 20)
#define PC__DCZ_DICT_MAX ((uint64_t)128 << 20)

/* The mtime of a delta in format f against the dictionary of
 * --dictionary-from DIR `from`: its file's, earlier by 1 + 2 * from + f
 * whole seconds. Servers make ETags from mtime and size (nginx, Apache,
 * Caddy), and all of a file's outputs answer one URL: two deltas of one
 * size and mtime would share an ETag, and a request holding one dictionary
 * that revalidates with another's delta's ETag would get a 304 and keep a
 * body it cannot decode. Earlier, never later: a time ahead of the clock
 * makes Apache send a weak ETag and the request's time as Last-Modified.
 * Whole seconds, as nginx counts them; a copy that keeps times to the
 * microsecond or the second keeps the difference whole.
 */
#define PC__DELTA_MTIME_MAX (2 * PC_DICT_DIRS_MAX)
static inline struct timespec pc__delta_mtime(struct timespec file,
                                              unsigned from, int f) {
  file.tv_sec -= 1 + 2 * (time_t)from + f;
  return file;
}

/* 1 when `delta` is a delta's mtime for a file whose mtime is `file`:
 * earlier by a whole 1 to PC__DELTA_MTIME_MAX seconds (what a run that does
 * not know the delta's DIR can tell). */
static inline int pc__delta_mtime_fits(struct timespec file,
                                       struct timespec delta) {
  return delta.tv_nsec == file.tv_nsec && delta.tv_sec < file.tv_sec &&
         file.tv_sec - delta.tv_sec <= PC__DELTA_MTIME_MAX;
}

/* 1 when a delta's record holds what was read of its dictionary: its
 * SHA-256 (`sha256`), size and mtime. A dictionary not read (a link, one
 * its file's readers could not read, one too large, ...) leaves the hash
 * all zero, which no dictionary has, and the record says nothing of it:
 * the manifest, its reader and the incremental check go by this.
 */
static inline int pc__delta_read(const unsigned char *sha256) {
  int k;

  for (k = 0; k < PC__SHA256_LEN; k++)
    if (sha256[k] != 0)
      return 1;
  return 0;
}

/* The reason named `s` (pc_delta_skip_name()), or -1. */
int pc__delta_skip_named(const char *s);

/* 0 when a dictionary of dict_size bytes is within f's limits, else
 * PC_EDICTWINDOW. */
int pc__delta_fits(pc_delta_format_t f, uint64_t dict_size);

/* What compressing takes at its peak (encoder state, not the input, the
 * dictionary or the output), for the scheduler's memory budget. */
uint64_t pc__delta_mem(pc_delta_format_t f, int level, uint64_t dict_size,
                       uint64_t in_size);

/* Appends to `out` the whole .dcb or .dcz of in[0..n) against dict[0..dn)
 * whose SHA-256 is `hash`, at `level` (brotli quality 0..11, zstd 1..19).
 * 0, -ENOMEM, PC_EDICTWINDOW (over the limits), PC_ENOZSTD or PC_ENODCB
 * (this build cannot), or PC_ECODEC. */
int pc__delta_compress(pc_delta_format_t f, int level,
                       const unsigned char *dict, size_t dn,
                       const unsigned char hash[PC__SHA256_LEN],
                       const unsigned char *in, size_t n, pc__buf_t *out);

#endif /* PC_DELTA_H */
