/* The decoders of the three formats, for what the encoders' outputs are
 * checked against: an entry fetched from the remote cache (--cache-url) is
 * written only once it decodes to the very bytes of its source.
 */
#ifndef PC_DECODE_H
#define PC_DECODE_H

#include "common/common.h"

/* Takes each piece of decoded bytes, in order: 0 to go on, anything else
 * stops the decoding and is returned.
 */
typedef int (*pc__dec_sink_t)(void *ctx, const unsigned char *buf, size_t n);

/* Decodes `in` (len bytes) as format f's output, handing what it decodes
 * to `sink`. 0 only when `in` is exactly one whole stream of the format
 * as precompress writes it: one gzip member, one brotli stream, one zstd
 * frame of a window up to 8 MiB, with nothing after it, and every call of
 * sink returned 0. PC_ECODEC for anything else (a damaged, truncated or
 * foreign stream), -ENOMEM, PC_ENOZSTD, or sink's return.
 */
int pc__decode(pc_format_t f, const unsigned char *in, size_t len,
               pc__dec_sink_t sink, void *ctx);

#endif /* PC_DECODE_H */
