#include <zlib.h>

/* deflateInit/inflateInit are macros; Swift cannot call them. */
static inline int kcar_deflateInit(z_streamp strm, int level) {
    return deflateInit(strm, level);
}
static inline int kcar_inflateInit(z_streamp strm) {
    return inflateInit(strm);
}
