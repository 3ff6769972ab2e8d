/* Streaming encoders for the three formats, behind one interface so a job
 * feeds every enabled format from the same read.
 */
#ifndef PC_CODEC_H
#define PC_CODEC_H

#include "common/common.h"

typedef struct pc__enc pc__enc_t;

/* Deflate and zstd states kept between files for reuse (set-up costs show
 * on small files), owned by one run and shared by its workers (a lock
 * inside). Keeps at most `cap` of each; deflate states only at gz_level.
 * 0 or -ENOMEM; *out receives it. pc__spares_free() frees it with every
 * state it keeps (NULL is fine).
 */
typedef struct pc__spares pc__spares_t;
int pc__spares_new(pc__spares_t **out, unsigned cap, int gz_level);
void pc__spares_free(pc__spares_t *sp);

/* Gives back the big blocks brotli encoders left for the next one (the
 * run's loop calls it when a worker is idle): what it keeps is then only
 * encoder states. Any thread; NULL is fine.
 */
void pc__spares_trim(pc__spares_t *sp);

/* Creates an encoder for `fmt` at `level`, for an input of exactly
 * `in_size` bytes (brotli's size hint and zstd's pledged size depend on it,
 * and they shape the output, so the size must be right). zstd compresses
 * an input of PC__ZSTD_MT_MIN bytes or more with `threads` worker threads
 * of its own. `engine` picks gzip's deflate: zlib streams; libdeflate and
 * zopfli gather the whole input and compress it at the end. A deflate or
 * zstd state comes from `spares` when it has one (NULL: none kept).
 * *out receives it; free with pc__enc_free(). 0, -ENOMEM or PC_ECODEC.
 */
int pc__enc_new(pc__enc_t **out, pc_format_t fmt, int level,
                pc_gzip_engine_t engine, uint64_t in_size, unsigned threads,
                pc__spares_t *spares);

/* What an encoder of `fmt` at `level` takes at its peak, in bytes, for an
 * input of `in_size` bytes: measured (brotli 10..11, whose hasher and
 * optimal parser take 20-70 MiB per file beyond 1 MB) or from the codec's
 * own estimate (zstd). The scheduler keeps the sum over large jobs in
 * flight within a budget.
 */
uint64_t pc__enc_mem(pc_format_t fmt, int level, pc_gzip_engine_t engine,
                     uint64_t in_size);

/* Roughly how long an encoder of `fmt` at `level` takes over `in_size`
 * bytes of text on one core, in microseconds: a fixed start-up cost and a
 * speed per level band (measured on bench's generated text: gzip 9 ~20
 * MB/s, brotli 11 ~0.8 MB/s). For choosing whether a file is worth a
 * request to the remote cache, not for scheduling.
 */
uint64_t pc__enc_cost_us(pc_format_t fmt, int level, pc_gzip_engine_t engine,
                         uint64_t in_size);

/* zstd's multi-threaded mode gives the same bytes for any number of
 * workers from 1 up, but not the bytes of its single-threaded mode: which
 * mode a file gets depends on its size alone, never on -j.
 */
#define PC__ZSTD_MT_MIN ((uint64_t)32 << 20)

/* Inputs up to this size reach the encoders in one call (PC__CHUNK). */
#define PC__WHOLE_MAX ((uint64_t)1 << 18)

/* Compresses n bytes of input, appending output to `dst`. `last` finishes
 * the stream after this input (container trailer included). 0, -ENOMEM or
 * PC_ECODEC.
 */
int pc__enc_feed(pc__enc_t *e, const unsigned char *in, size_t n, int last,
                 pc__buf_t *dst);

/* Frees e (NULL is fine). A deflate or zstd state goes back to the
 * spares it came with, for the run's next encoder of that format (and,
 * for deflate, level), while they have room.
 */
void pc__enc_free(pc__enc_t *e);

#endif /* PC_CODEC_H */
