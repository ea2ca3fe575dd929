// Test kernels of the ISA interpreter (platform-sim/src/isa/tests/e2e.rs). Rebuild with
//   for t in gfx900 gfx90a gfx942; do
//     clang-19 -target amdgcn-amd-amdhsa -mcpu=$t -O2 -nogpulib -Wl,-s kernels.c -o kernels-$t.co
//     llvm-objcopy-19 --remove-section=.note kernels-$t.co
//   done
// (the metadata note is dropped: the tests lay the kernel arguments out themselves).
typedef unsigned int u32;
typedef unsigned long u64;
typedef unsigned char u8;
typedef u32 u32x4 __attribute__((ext_vector_type(4)));
#define K __attribute__((amdgpu_kernel)) __attribute__((visibility("default")))
#define GID_X (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())
#define GID_Y (__builtin_amdgcn_workgroup_id_y() * __builtin_amdgcn_workgroup_size_y() + __builtin_amdgcn_workitem_id_y())

K void compute(const u32 *in, u32 *out, u32 seed, u32 n) {
  u32 i = GID_X; if (i < n) out[i] = in[i] * 3 + seed;
}
K void vadd(const float *a, const float *b, float *c, u32 n) {
  u32 i = GID_X; if (i < n) c[i] = a[i] + b[i];
}
K void copy_bytes(u8 *dst, const u8 *src, u64 n) {
  for (u64 i = GID_X; i < n; i += __builtin_amdgcn_grid_size_x()) dst[i] = src[i];
}
K void copy_words(u8 *dst, const u8 *src, u64 n) {
  u64 i = GID_X * 4;
  if (i + 4 <= n) { u32 v; __builtin_memcpy(&v, src + i, 4); __builtin_memcpy(dst + i, &v, 4); }
  else for (; i < n; i++) dst[i] = src[i];
}
K void copy128(u32x4 *dst, const u32x4 *src, u64 n) {
  u64 i = GID_X; if (i < n) dst[i] = src[i];
}
K void fill_bytes(u8 *dst, u8 v, u64 n) {
  u64 i = GID_X; if (i < n) dst[i] = v;
}
K void reduce(const u32 *in, u32 *out, u32 n) {
  __attribute__((address_space(3), loader_uninitialized)) static u32 s[256];
  u32 t = __builtin_amdgcn_workitem_id_x(); u32 i = GID_X;
  s[t] = i < n ? in[i] : 0;
  __builtin_amdgcn_s_barrier();
  for (u32 k = 128; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; __builtin_amdgcn_s_barrier(); }
  if (t == 0) out[__builtin_amdgcn_workgroup_id_x()] = s[0];
}
K void atomics(u32 *ctr, u64 *c64, int *mx, u32 n) {
  u32 i = GID_X; if (i < n) {
    __atomic_fetch_add(ctr, 1, __ATOMIC_RELAXED); __atomic_fetch_add(c64, (u64)i, __ATOMIC_SEQ_CST);
    __atomic_fetch_max(mx, (int)i, __ATOMIC_RELAXED);
    u32 e = 0; __atomic_compare_exchange_n(ctr + 1, &e, i + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    __atomic_fetch_sub(ctr + 3, 2, __ATOMIC_RELAXED);
    __atomic_fetch_and(ctr + 4, ~(1u << (i & 31)), __ATOMIC_RELAXED);
    __atomic_fetch_or(ctr + 5, 1u << (i & 31), __ATOMIC_RELAXED);
    __atomic_fetch_xor(ctr + 6, i, __ATOMIC_RELAXED);
    __atomic_fetch_min((u32*)mx + 1, i, __ATOMIC_RELAXED);
  }
}
K void atomics_ret(u32 *ctr, u32 *out, u32 n) {
  u32 i = GID_X; if (i < n) out[i] = __atomic_fetch_add(ctr, 1, __ATOMIC_RELAXED);
}
K void lds_atomics(u32 *out) {
  __attribute__((address_space(3), loader_uninitialized)) static u32 s[4];
  u32 t = __builtin_amdgcn_workitem_id_x();
  if (t == 0) s[0] = 0;
  __builtin_amdgcn_s_barrier();
  __atomic_fetch_add((u32*)&s[0], t, __ATOMIC_RELAXED);
  __builtin_amdgcn_s_barrier();
  if (t == 0) out[__builtin_amdgcn_workgroup_id_x()] = s[0];
}
K void index2d(float *m, u32 w, u32 h, u32 pitch) {
  u32 x = GID_X, y = GID_Y;
  if (x < w && y < h) m[y * pitch + x] = m[y * pitch + x] * 2.0f + (float)x - (float)y;
}
K void fmath(const float *a, float *o, u32 n) {
  u32 i = GID_X; if (i >= n) return; float x = a[i];
  o[4 * i] = __builtin_sqrtf(x) + x / 3.0f;
  o[4 * i + 1] = __builtin_fmaf(x, x, 1.0f) + __builtin_fminf(x, 1.0f) + __builtin_fmaxf(x, 2.0f);
  o[4 * i + 2] = (float)(int)x + __builtin_floorf(x) + __builtin_truncf(x) + __builtin_ceilf(x) + __builtin_rintf(x);
  o[4 * i + 3] = __builtin_amdgcn_exp2f(x) + __builtin_amdgcn_logf(x) + __builtin_amdgcn_rsqf(x) + __builtin_amdgcn_rcpf(x);
}
K void fdiv(const float *a, const float *b, float *o, u32 n) {
  u32 i = GID_X; if (i < n) o[i] = a[i] / b[i];
}
K void dmath(const double *a, double *o, u32 n) {
  u32 i = GID_X; if (i < n) o[i] = a[i] * 2.5 + (double)(int)i + a[i] / 3.0;
}
K void idiv(const u32 *a, const u32 *b, u32 *q, int *r, u32 n) {
  u32 i = GID_X; if (i < n) { q[i] = a[i] / b[i]; r[i] = (int)a[i] % (int)b[i]; }
}
K void idiv64(const u64 *a, const u64 *b, u64 *q, u32 n) {
  u32 i = GID_X; if (i < n) q[i] = a[i] / b[i];
}
K void priv(const u32 *in, u32 *out, u32 n) {
  u32 arr[64]; u32 i = GID_X; if (i >= n) return;
  for (int k = 0; k < 64; k++) arr[k] = in[(i + k) % n];
  out[i] = arr[in[i] & 63] + arr[(in[i] >> 8) & 63];
}
K void poll(volatile u32 *flag, u32 *out) {
  while (*flag == 0) {}
  out[GID_X] = *flag + 1;
}
