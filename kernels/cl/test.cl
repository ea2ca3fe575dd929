/*
 * Test kernels: each exercises a part of the machine an ISA interpreter (or a loader) must
 * get right. One work-item per element unless a kernel says otherwise; work-items past the
 * end do nothing. Every result is defined exactly (no unspecified rounding or ordering),
 * except where a comment says which values are possible.
 */
#include "device.h"

/* Vector add: c[i] = a[i] + b[i] (wrapping), i < n. */
kernel void vector_add(global const uint *a, global const uint *b, global uint *c, uint n) {
    ulong i = global_id_x();
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

/*
 * LDS reduction with barriers, in work-groups of exactly 256 work-items (several waves).
 * For work-group g: sums[2g] = the sum (wrapping) of in[256g .. 256g + 255] (elements past
 * n count as 0), sums[2g + 1] = how many of those elements are non-zero (an LDS atomic).
 */
__attribute__((reqd_work_group_size(256, 1, 1)))
kernel void lds_reduce(global const uint *in, global uint *sums, uint n) {
    local uint partial[256];
    local atomic_uint nonzero;
    uint lid = local_id_x();
    ulong i = global_id_x();
    if (lid == 0) {
        __opencl_atomic_store(&nonzero, 0u, __ATOMIC_RELAXED, __OPENCL_MEMORY_SCOPE_WORK_GROUP);
    }
    uint v = i < n ? in[i] : 0u;
    partial[lid] = v;
    workgroup_barrier();
    if (v != 0) {
        __opencl_atomic_fetch_add(&nonzero, 1u, __ATOMIC_RELAXED, __OPENCL_MEMORY_SCOPE_WORK_GROUP);
    }
    for (uint s = 128; s > 0; s >>= 1) {
        if (lid < s) {
            partial[lid] += partial[lid + s];
        }
        workgroup_barrier();
    }
    if (lid == 0) {
        ulong g = group_id_x();
        sums[2 * g] = partial[0];
        sums[2 * g + 1] =
            __opencl_atomic_load(&nonzero, __ATOMIC_RELAXED, __OPENCL_MEMORY_SCOPE_WORK_GROUP);
    }
}

/*
 * Global atomics (device scope), for i < n with v = in[i]:
 *   tickets[i]    = old value of counters[0] += 1   (the tickets are a permutation of
 *                   c0 .. c0 + n - 1, c0 the initial counters[0])
 *   counters[1]  += v         counters[2] = max(counters[2], v)
 *   counters[3]   = min(counters[3], v)              counters[4] |= 1 << (v % 32)
 *   counters[5]  ^= v         counters[6] &= ~(1 << (v % 32))
 *   counters[7]: compare-exchange 0 -> i + 1 (afterwards one of 1 .. n if it was 0)
 *   wide[0]      += v as a 64-bit atomic add
 */
kernel void atomics(global const uint *in, global atomic_uint *counters, global uint *tickets,
                    global atomic_ulong *wide, uint n) {
    ulong i = global_id_x();
    if (i >= n) {
        return;
    }
    uint v = in[i];
    uint bit = 1u << (v & 31);
    int order = __ATOMIC_RELAXED;
    int scope = __OPENCL_MEMORY_SCOPE_DEVICE;
    tickets[i] = __opencl_atomic_fetch_add(&counters[0], 1u, order, scope);
    __opencl_atomic_fetch_add(&counters[1], v, order, scope);
    __opencl_atomic_fetch_max(&counters[2], v, order, scope);
    __opencl_atomic_fetch_min(&counters[3], v, order, scope);
    __opencl_atomic_fetch_or(&counters[4], bit, order, scope);
    __opencl_atomic_fetch_xor(&counters[5], v, order, scope);
    __opencl_atomic_fetch_and(&counters[6], ~bit, order, scope);
    uint expected = 0;
    __opencl_atomic_compare_exchange_strong(&counters[7], &expected, (uint)i + 1u, order, order,
                                            scope);
    __opencl_atomic_fetch_add(&wide[0], (ulong)v, order, scope);
}

/*
 * 2-D indexing: out (height x width... transposed) out[x * height + y] = in[y * width + x]
 * for x < width, y < height; a 2-D grid of at least width x height work-items.
 */
kernel void transpose_2d(global const uint *in, global uint *out, uint width, uint height) {
    ulong x = global_id_x();
    ulong y = global_id_y();
    if (x < width && y < height) {
        out[x * height + y] = in[y * width + x];
    }
}

/*
 * The enqueued work-group size in 2-D: out[y * width + x] = work-group size x | size y << 16
 * for x < width, y < height, read from the hidden group-size arguments (code object v5) or
 * the dispatch packet (v4). A partial last work-group reports the full size too (OpenCL's
 * get_local_size would give the remainder; see device.h).
 */
kernel void local_size_2d(global uint *out, uint width, uint height) {
    ulong x = global_id_x();
    ulong y = global_id_y();
    if (x < width && y < height) {
        out[y * width + x] = local_size_x() | local_size_y() << 16;
    }
}

/*
 * Float math (IEEE single precision, round to nearest even; division and square root are
 * correctly rounded: built with -cl-fp32-correctly-rounded-divide-sqrt), for i < n, x = in[i]:
 *   out[4i]     = sqrt(|x|) + fma(x, 0.5, 1.0)
 *   out[4i + 1] = x / (x * x + 1)
 *   out[4i + 2] = floor(x * 8) - min(x, 2) + max(x, -2)
 *   out[4i + 3] = (float)(int)x + (float)(uint)|x| * 0.25 (conversions truncate toward 0;
 *                 |x| < 2^31 assumed)
 */
kernel void float_math(global const float *in, global float *out, uint n) {
    ulong i = global_id_x();
    if (i >= n) {
        return;
    }
    float x = in[i];
    float ax = __builtin_fabsf(x);
    out[4 * i] = __builtin_sqrtf(ax) + __builtin_fmaf(x, 0.5f, 1.0f);
    out[4 * i + 1] = x / (x * x + 1.0f);
    out[4 * i + 2] = __builtin_floorf(x * 8.0f) - __builtin_fminf(x, 2.0f) + __builtin_fmaxf(x, -2.0f);
    out[4 * i + 3] = (float)(int)x + (float)(uint)ax * 0.25f;
}

/*
 * Integer division, for i < n: 32-bit signed quot[i] = a[i] / b[i] and rem[i] = a[i] % b[i]
 * (truncating; b == 0 gives 0 and 0; INT_MIN / -1 gives INT_MIN and 0), and 32-bit unsigned
 * uquot[i] = (uint)a[i] / (uint)b[i] (b == 0 gives 0).
 */
kernel void int_division(global const int *a, global const int *b, global int *quot,
                         global int *rem, global uint *uquot, uint n) {
    ulong i = global_id_x();
    if (i >= n) {
        return;
    }
    int x = a[i], y = b[i];
    if (y == 0) {
        quot[i] = 0;
        rem[i] = 0;
        uquot[i] = 0;
        return;
    }
    if (x == (int)0x80000000 && y == -1) {
        quot[i] = x;
        rem[i] = 0;
    } else {
        quot[i] = x / y;
        rem[i] = x % y;
    }
    uquot[i] = (uint)x / (uint)y;
}

/* 64-bit unsigned division, for i < n: quot[i] = a[i] / b[i], rem[i] = a[i] % b[i] (b == 0
 * gives 0 and 0). */
kernel void uint_division64(global const ulong *a, global const ulong *b, global ulong *quot,
                            global ulong *rem, uint n) {
    ulong i = global_id_x();
    if (i >= n) {
        return;
    }
    ulong x = a[i], y = b[i];
    quot[i] = y == 0 ? 0 : x / y;
    rem[i] = y == 0 ? 0 : x % y;
}

/*
 * A private (scratch) array: each work-item fills 64 words a[j] = in[i] + 7j and reads two of
 * them back at data-dependent indices, so the array lives in scratch memory:
 * out[i] = a[in[i] % 64] + a[(in[i] / 64) % 64] (wrapping), i < n.
 */
kernel void private_array(global const uint *in, global uint *out, uint n) {
    ulong i = global_id_x();
    if (i >= n) {
        return;
    }
    uint v = in[i];
    uint a[64];
    for (uint j = 0; j < 64; j++) {
        a[j] = v + 7u * j;
    }
    out[i] = a[v & 63] + a[(v >> 6) & 63];
}

/*
 * Tables reached through a table of pointers: the pointers are R_AMDGPU_RELATIVE64
 * relocations the loader resolves. out[i] = TABLES[in[i] % 4][i % 8], i < n, with
 * TABLES[t][k] = (t + 1) * 1000 + k.
 */
constant uint table0[8] = {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007};
constant uint table1[8] = {2000, 2001, 2002, 2003, 2004, 2005, 2006, 2007};
constant uint table2[8] = {3000, 3001, 3002, 3003, 3004, 3005, 3006, 3007};
constant uint table3[8] = {4000, 4001, 4002, 4003, 4004, 4005, 4006, 4007};
constant uint *constant tables[4] = {table0, table1, table2, table3};

kernel void lookup_table(global const uint *in, global uint *out, uint n) {
    ulong i = global_id_x();
    if (i < n) {
        out[i] = tables[in[i] & 3][i & 7];
    }
}
