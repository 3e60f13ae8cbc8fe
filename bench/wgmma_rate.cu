// wgmma_rate.cu: kernels that time one wgmma shape, for bench/wgmma_rate.c.
// Compiled twice, with RATE_RS or RATE_SS, on top of the probes' generated
// wrappers (generated/probes_rs.cu, probes_ss.cu), so no wgmma, descriptor
// or fragment is written here. The operands are whatever sits in shared
// memory and registers: only the time counts.
//
// Kernel rate_<rs|ss>_n<N>_<c4|c8|s4>: warpgroup 0 issues `groups` groups of
// 4 or 8 k-steps (m64nNk16) into one accumulator and records clock64 cycles
// in out[0]. c: a chain, each group waited for before the next is issued
// (as the state chain does); s: a stream, issued back to back. With mode 1,
// warpgroup 1 issues the same groups at the same time into its own
// accumulator, as the output warpgroup shares the tensor cores.
#if defined(RATE_RS)
#include "probes_rs.cu"
#elif defined(RATE_SS)
#include "probes_ss.cu"
#endif

// The B operand at sb + k * BSTEP, A at sa + k * ASTEP (SS) or a0..a3 (RS):
// the probes' own per-k-step strides for their unswizzled tiles.
#define RATE_KERNEL(name, N, KS, STREAM, ISSUE)                                                   \
  extern "C" __global__ void __launch_bounds__(256, 1)                                          \
      name(int groups, int mode, unsigned long long *out) {                                     \
    extern __shared__ __align__(1024) unsigned char rate_smem[];                                \
    const u32 base = (smem_u32(rate_smem) + 1023u) & ~1023u;                                    \
    for (int i = threadIdx.x; i < 65536 / 16; i += blockDim.x) /* bf16 1.0 and 0.0 */           \
      st_shared_v4(base + 16u * i, 0x3f803f80u, 0u, 0x3f803f80u, 0u);                            \
    fence_proxy_async();                                                                        \
    __syncthreads();                                                                            \
    const int wg = threadIdx.x / 128;                                                           \
    if (wg == 1 && mode == 0)                                                                   \
      return;                                                                                   \
    const u32 sa = base, sb = base + 32768u;                                                    \
    const u32 a0 = 0x3f803f80u + (u32)wg, a1 = a0, a2 = a0, a3 = a0;                            \
    (void)sa, (void)a0, (void)a1, (void)a2, (void)a3;                                           \
    float acc[N / 2];                                                                           \
    _Pragma("unroll") for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;                             \
    const long long t0 = clock64();                                                             \
    if (STREAM) {                                                                               \
      _Pragma("unroll") for (int i = 0; i < N / 2; ++i) fence_operand(acc[i]);                  \
      wgmma_fence();                                                                            \
    }                                                                                           \
    for (int g = 0; g < groups; ++g) {                                                          \
      if (!STREAM) {                                                                            \
        _Pragma("unroll") for (int i = 0; i < N / 2; ++i) fence_operand(acc[i]);                \
        wgmma_fence();                                                                          \
      }                                                                                         \
      _Pragma("unroll") for (int k = 0; k < KS; ++k) ISSUE;                                     \
      wgmma_commit();                                                                           \
      if (!STREAM)                                                                              \
        wgmma_wait_0();                                                                         \
    }                                                                                           \
    wgmma_wait_0();                                                                             \
    const long long t1 = clock64();                                                             \
    float s = 0.f;                                                                              \
    _Pragma("unroll") for (int i = 0; i < N / 2; ++i) s += acc[i];                              \
    if (threadIdx.x == 0)                                                                       \
      out[0] = (unsigned long long)(t1 - t0);                                                   \
    if (s == -1.f) /* never: keeps the products live */                                        \
      out[1] = 1;                                                                               \
  }

#define RATE_SHAPE(prefix, N, ISSUE)                                                              \
  RATE_KERNEL(prefix##_c4, N, 4, false, ISSUE)                                                  \
  RATE_KERNEL(prefix##_c8, N, 8, false, ISSUE)                                                  \
  RATE_KERNEL(prefix##_s4, N, 4, true, ISSUE)

#if defined(RATE_RS)
#define RS(n, bstep, bhigh)                                                                      \
  wgmma_m64n##n##k16_rs_bf16_rk(acc, a0, a1, a2, a3, gdn_desc(sb + bstep * (u32)k, bhigh), 1)
RATE_SHAPE(rate_rs_n16, 16, RS(16, 512u, 0x0000000800100000ull))
RATE_SHAPE(rate_rs_n32, 32, RS(32, 1024u, 0x0000000800200000ull))
RATE_SHAPE(rate_rs_n64, 64, RS(64, 2048u, 0x0000000800400000ull))
RATE_SHAPE(rate_rs_n128, 128, RS(128, 4096u, 0x0000000800800000ull))
#elif defined(RATE_SS)
#define SS(n, bstep, bhigh)                                                                      \
  wgmma_m64n##n##k16_ss_bf16_kk(acc, gdn_desc(sa + 2048u * (u32)k, 0x0000000800400000ull),     \
                                gdn_desc(sb + bstep * (u32)k, bhigh), 1)
RATE_SHAPE(rate_ss_n16, 16, SS(16, 512u, 0x0000000800100000ull))
RATE_SHAPE(rate_ss_n32, 32, SS(32, 1024u, 0x0000000800200000ull))
RATE_SHAPE(rate_ss_n64, 64, SS(64, 2048u, 0x0000000800400000ull))
RATE_SHAPE(rate_ss_n128, 128, SS(128, 4096u, 0x0000000800800000ull))
#endif
