/* The codec build's identity, for the remote cache's key (--cache-url).
 *
 * The library versions alone do not say which bytes an encoder writes:
 * the same brotli source built by gcc and by clang, or for x86_64 and for
 * aarch64 (where gcc contracts floating point into fused multiply-adds),
 * gives other bytes at quality 11 on some inputs. A remote cache is shared
 * by machines that differ in exactly these ways, so its key holds what
 * tells the builds apart; a key shared by two builds that write other
 * bytes would hand one the other's outputs (correct, as every fetched
 * entry is decoded and compared, but not the bytes it writes itself).
 */
#ifndef PC_BUILDID_H
#define PC_BUILDID_H

#include "common/common.h"

/* One line, made once (static storage, thread-safe): the CPU family, the
 * library versions (pc_library_versions()), and per codec library either
 * the GNU build-id of the shared object it was loaded from (which pins
 * that very binary, whichever compiler made it) or "static", in which
 * case the compiler that built precompress and the build's -Dcodec_id
 * (what dist/release.sh says the static archives are) follow.
 */
const char *pc__codec_build_id(void);

#endif /* PC_BUILDID_H */
