/*
 * Byte-granular copy and fill: what ROCr's blit kernels do for agents without DMA engines.
 * Any alignment, any length (including 0).
 *
 * Each work-item handles 16-byte chunks: chunk g, then g + grid size, ... (a grid-stride
 * loop), so a grid of any size covers the whole range; ceil(bytes / 16) work-items do one
 * chunk each. A chunk whose addresses are 16-byte (or 4-byte) aligned moves as one 16-byte
 * (or four 4-byte) accesses; any other chunk, and the tail, move byte by byte.
 */
#include "device.h"

#define CHUNK 16ul

/*
 * copy_bytes: dst[k] = src[k] for k < bytes. The ranges must not overlap.
 *   src   global const uchar *
 *   dst   global uchar *
 *   bytes ulong
 */
kernel void copy_bytes(global const uchar *src, global uchar *dst, ulong bytes) {
    ulong stride = (ulong)grid_size_x() * CHUNK;
    for (ulong start = global_id_x() * CHUNK; start < bytes; start += stride) {
        global const uchar *s = src + start;
        global uchar *d = dst + start;
        ulong left = bytes - start;
        ulong align = (ulong)s | (ulong)d;
        if (left >= CHUNK && (align & 15) == 0) {
            *(global uint4 *)d = *(global const uint4 *)s;
        } else if (left >= CHUNK && (align & 3) == 0) {
            global const uint *sw = (global const uint *)s;
            global uint *dw = (global uint *)d;
            uint a = sw[0], b = sw[1], c = sw[2], e = sw[3];
            dw[0] = a;
            dw[1] = b;
            dw[2] = c;
            dw[3] = e;
        } else {
            ulong n = left < CHUNK ? left : CHUNK;
            for (ulong k = 0; k < n; k++) {
                d[k] = s[k];
            }
        }
    }
}

/*
 * fill_bytes: dst[k] = byte (k % 4) of `pattern` (little endian) for k < bytes; memset of
 * a byte v is pattern v * 0x01010101.
 *   dst     global uchar *
 *   pattern uint
 *   bytes   ulong
 */
kernel void fill_bytes(global uchar *dst, uint pattern, ulong bytes) {
    ulong stride = (ulong)grid_size_x() * CHUNK;
    for (ulong start = global_id_x() * CHUNK; start < bytes; start += stride) {
        global uchar *d = dst + start;
        ulong left = bytes - start;
        /* start is a multiple of 4, so a chunk's words all start at pattern byte 0. */
        if (left >= CHUNK && ((ulong)d & 15) == 0) {
            *(global uint4 *)d = (uint4)(pattern);
        } else if (left >= CHUNK && ((ulong)d & 3) == 0) {
            global uint *dw = (global uint *)d;
            dw[0] = pattern;
            dw[1] = pattern;
            dw[2] = pattern;
            dw[3] = pattern;
        } else {
            ulong n = left < CHUNK ? left : CHUNK;
            for (ulong k = 0; k < n; k++) {
                d[k] = (uchar)(pattern >> (8 * (k & 3)));
            }
        }
    }
}
