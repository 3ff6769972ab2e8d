/* Streaming encoders for the three formats, behind one interface so a job
 * feeds every enabled format from the same read.
 */
#ifndef PC_CODEC_H
#define PC_CODEC_H

#include "common.h"

typedef struct pc__enc pc__enc_t;

/* Creates an encoder for `fmt` at `level`, for an input of exactly
 * `in_size` bytes (brotli's size hint and zstd's pledged size depend on it,
 * and they shape the output, so the size must be right). *out receives it;
 * free with pc__enc_free(). 0, -ENOMEM or PC_ECODEC.
 */
int pc__enc_new(pc__enc_t **out, pc_format_t fmt, int level,
                uint64_t in_size);

/* Compresses n bytes of input, appending output to `dst`. `last` finishes
 * the stream after this input (container trailer included). 0, -ENOMEM or
 * PC_ECODEC.
 */
int pc__enc_feed(pc__enc_t *e, const unsigned char *in, size_t n, int last,
                 pc__buf_t *dst);

/* Frees e (NULL is fine). */
void pc__enc_free(pc__enc_t *e);

#endif /* PC_CODEC_H */
