/*
 * The compute step of `hsakmt run`: out[i] = in[i] * 3 + seed over 32-bit words.
 *
 * Kernel arguments (as the simulator's registered host kernel takes them, 8 bytes each):
 *   in    global const uint *  the input block
 *   out   global uint *        the output block
 *   words ulong                the number of words
 *   seed  ulong                the seed; its low 32 bits are added
 * One work-item per word: dispatch a grid of at least `words` work-items (any work-group
 * size); work-items past the end do nothing. The arithmetic wraps modulo 2^32.
 */
#include "device.h"

kernel void control_step(global const uint *in, global uint *out, ulong words, ulong seed) {
    ulong i = global_id_x();
    if (i < words) {
        out[i] = in[i] * 3u + (uint)seed;
    }
}
