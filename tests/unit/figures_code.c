/* Not a test by itself: the figures tests/unit/check_figures.py cannot read
 * from the source text, printed by the built code, one `key value` a line:
 *
 *   pointer_bytes N      sizeof(void *): the job's size holds for this ABI
 *   job_bytes N          sizeof(pc__job_t): what a pending job takes
 *   work_buffers FMTS SIZE N
 *                        pc__work_mem() of a job of SIZE bytes with the
 *                        formats FMTS (PC_FMT_BIT()s), less its encoders'
 *                        pc__enc_mem(): the buffers it counts
 *
 * check_figures.py compares them with docs/memory.md and docs/reference.md.
 */
#include "codec/codec.h"
#include "work/job.h"
#include "work/worker.h"

#include <inttypes.h>
#include <stdio.h>

static void work_buffers(unsigned formats, uint64_t size) {
  static char path[] = "f";
  pc__cfg_t cfg = {0};
  pc__job_t j = {0};
  uint64_t enc = 0;
  int f;

  cfg.spec.formats = formats;
  cfg.spec.gzip_engine = PC_GZIP_ZLIB;
  for (f = 0; f < PC_NFORMATS; f++) {
    cfg.spec.level[f] = f == PC_BR ? 11 : 9;
    if (formats & PC_FMT_BIT(f))
      enc += pc__enc_mem((pc_format_t)f, cfg.spec.level[f],
                         cfg.spec.gzip_engine, size);
  }
  j.cfg = &cfg;
  j.fullpath = path;
  j.size = size;
  printf("work_buffers %u %" PRIu64 " %" PRIu64 "\n", formats, size,
         pc__work_mem(&j) - enc);
}

int main(void) {
  static const uint64_t sizes[] = {1000, (uint64_t)100 << 10,
                                   (uint64_t)600 << 10, (uint64_t)64 << 20};
  static const unsigned formats[] = {PC_FMT_BIT(PC_GZ),
                                     PC_FMT_BIT(PC_GZ) | PC_FMT_BIT(PC_BR)};
  size_t s, f;

  printf("pointer_bytes %zu\n", sizeof(void *));
  printf("job_bytes %zu\n", sizeof(pc__job_t));
  for (f = 0; f < sizeof(formats) / sizeof(formats[0]); f++)
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
      work_buffers(formats[f], sizes[s]);
  return 0;
}
