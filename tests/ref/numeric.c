/* numeric.c: rounding, random problems, head mapping and error metrics
 * shared by the two references and their tests. */
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- rounding ------------------------------------------------------------ */

static uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* bf16 is the top half of an fp32 word, so rounding is integer arithmetic
 * on the bits: adding 0x7fff (plus 1 when the kept half is odd) carries into
 * the kept half exactly when the dropped half is above one half ulp, or
 * exactly one half and the kept half is odd. The carry may run into the
 * exponent, which is right: 0x3f7fffff rounds to 0x3f80 (1.0) and values past
 * the largest bf16 round to 0x7f80 (inf). Only NaN must not be rounded, or a
 * NaN with a small payload would become infinity. */
uint16_t ref_bf16(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN, sign kept */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

float ref_bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

/* Rounds the integer m / 2^shift to nearest even; 1 <= shift <= 31. */
static uint32_t shift_round_even(uint32_t m, int shift) {
  uint32_t q = m >> shift;
  uint32_t rest = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1u)))
    q++;
  return q;
}

/* fp16 has 5 exponent bits (bias 15) and 10 mantissa bits. Four ranges of
 * |x|: NaN; at least 65520, the midpoint between the largest fp16 (65504)
 * and 2^16, which rounds to infinity (the tie goes to the even side, inf);
 * below 2^-14, the fp16 subnormals, multiples of 2^-24; and the normal
 * range, where fp16 is fp32 with 13 mantissa bits dropped and the exponent
 * rebiased by 127 - 15 = 112. */
uint16_t ref_f16(float x) {
  uint32_t u = f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return (uint16_t)(sign | 0x7e00u); /* quiet NaN */
  if (a >= 0x477ff000u)                /* |x| >= 65520, inf included */
    return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) {               /* |x| < 2^-14 */
    if (a <= 0x33000000u)              /* |x| <= 2^-25: ties to 0 */
      return sign;
    /* |x| = m 2^(e - 150) with the implicit bit in m; in units of 2^-24
     * that is m / 2^(126 - e), with e in [102, 112]. */
    uint32_t e = a >> 23;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | shift_round_even(m, (int)(126u - e)));
  }
  uint32_t r = a - (112u << 23);
  r += 0x0fffu + ((r >> 13) & 1u); /* as in ref_bf16, 13 bits dropped */
  return (uint16_t)(sign | (r >> 13));
}

float ref_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0) /* zero or subnormal: m 2^-24, exact in fp32 */
    return copysignf(ldexpf((float)m, -24), sign ? -1.0f : 1.0f);
  if (e == 31) /* inf or NaN */
    return f32_from_bits(sign | 0x7f800000u | (m << 13));
  return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

float ref_round_bf16(float x) { return ref_bf16_to_f32(ref_bf16(x)); }
float ref_round_f16(float x) { return ref_f16_to_f32(ref_f16(x)); }

void ref_scale_bf16(uint16_t *x, size_t n, int e) {
  for (size_t i = 0; i < n; i++)
    x[i] = ref_bf16(ldexpf(ref_bf16_to_f32(x[i]), e));
}

uint16_t ref_operand_bits(unsigned f16, float x) {
  return f16 ? ref_f16(x) : ref_bf16(x);
}

float ref_operand_to_f32(unsigned f16, uint16_t h) {
  return f16 ? ref_f16_to_f32(h) : ref_bf16_to_f32(h);
}

float ref_round_operand(unsigned f16, float x) {
  return ref_operand_to_f32(f16, ref_operand_bits(f16, x));
}

/* ---- random numbers ------------------------------------------------------ */

ref_rng ref_rng_seed(uint64_t seed) {
  ref_rng r = {seed};
  return r;
}

/* splitmix64 (Steele, Lea, Flood 2014): a Weyl sequence through a mixer. */
uint64_t ref_rng_next(ref_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

double ref_uniform(ref_rng *r) {
  return (double)(ref_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Box-Muller; 1 - u lies in (0, 1], so the logarithm is finite. The second
 * value of the pair is dropped: keeping it would be state beyond one word. */
double ref_normal(ref_rng *r) {
  double u1 = 1.0 - ref_uniform(r);
  double u2 = ref_uniform(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- shapes -------------------------------------------------------------- */

int ref_out_heads(int Hq, int Hv) { return Hq > Hv ? Hq : Hv; }

/* GQA: several q heads share one k/v head; GVA: several v heads share one
 * q/k head. MHA is both with a group of one, so either branch serves it. */
int ref_head_map(int Hq, int Hk, int Hv, int h, int *hq, int *hk, int *hv) {
  if (Hq < 1 || Hk < 1 || Hv < 1 || h < 0 || h >= ref_out_heads(Hq, Hv))
    return -1;
  if (Hk == Hv && Hq % Hk == 0) { /* MHA or GQA */
    *hq = h;
    *hk = *hv = h / (Hq / Hk);
    return 0;
  }
  if (Hq == Hk && Hv % Hq == 0) { /* GVA */
    *hv = h;
    *hq = *hk = h / (Hv / Hq);
    return 0;
  }
  return -1;
}

int ref_problem_check(const ref_problem *p) {
  int hq, hk, hv;
  if (p->T < 0 || p->N < 1 ||
      ref_head_map(p->Hq, p->Hk, p->Hv, 0, &hq, &hk, &hv))
    return -1;
  if (!p->cu_seqlens || (p->T > 0 && (!p->q || !p->k || !p->v)))
    return -1;
  if (p->cu_seqlens[0] != 0 || p->cu_seqlens[p->N] != p->T)
    return -1;
  for (int n = 0; n < p->N; n++)
    if (p->cu_seqlens[n + 1] <= p->cu_seqlens[n])
      return -1;
  return 0;
}

/* ---- random problems ----------------------------------------------------- */

static void fill_randn_bf16(ref_rng *rng, uint16_t *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    x[i] = ref_bf16((float)ref_normal(rng));
}

/* Keys: each [128] row (one token, one head) is drawn, scaled to unit L2
 * norm, then rounded; the bf16 row's norm is 1 only to about 2^-9. */
static void fill_keys(ref_rng *rng, uint16_t *k /* [rows, 128] */,
                      size_t rows) {
  for (size_t r = 0; r < rows; r++) {
    double x[REF_D], norm2 = 0.0;
    for (int i = 0; i < REF_D; i++) {
      x[i] = ref_normal(rng);
      norm2 += x[i] * x[i];
    }
    double inv = 1.0 / sqrt(norm2);
    for (int i = 0; i < REF_D; i++)
      k[r * REF_D + i] = ref_bf16((float)(x[i] * inv));
  }
}

static void fill_gates(ref_rng *rng, float *alpha, float *beta, size_t n) {
  for (size_t i = 0; alpha && i < n; i++)
    alpha[i] = (float)(0.8 + 0.2 * ref_uniform(rng));
  for (size_t i = 0; beta && i < n; i++)
    beta[i] = (float)(1.0 / (1.0 + exp(-ref_normal(rng))));
}

/* Allocates every array the flags ask for; -1 when one is missing. */
static int alloc_arrays(ref_problem_owned *o, unsigned flags) {
  size_t T = (size_t)o->p.T, N = (size_t)o->p.N;
  size_t Ho = (size_t)ref_out_heads(o->p.Hq, o->p.Hv);
  o->q = malloc(sizeof(uint16_t) * T * (size_t)o->p.Hq * REF_D);
  o->k = malloc(sizeof(uint16_t) * T * (size_t)o->p.Hk * REF_D);
  o->v = malloc(sizeof(uint16_t) * T * (size_t)o->p.Hv * REF_D);
  o->cu_seqlens = malloc(sizeof(int32_t) * (N + 1));
  if (!(flags & REF_NO_ALPHA))
    o->alpha = malloc(sizeof(float) * T * Ho);
  if (!(flags & REF_NO_BETA))
    o->beta = malloc(sizeof(float) * T * Ho);
  if (!(flags & REF_NO_INITIAL_STATE))
    o->initial_state = malloc(sizeof(float) * N * Ho * REF_D * REF_D);
  int missing = !o->q || !o->k || !o->v || !o->cu_seqlens;
  missing |= !(flags & REF_NO_ALPHA) && !o->alpha;
  missing |= !(flags & REF_NO_BETA) && !o->beta;
  missing |= !(flags & REF_NO_INITIAL_STATE) && !o->initial_state;
  return missing ? -1 : 0;
}

static void point_view(ref_problem_owned *o) {
  o->p.q = o->q;
  o->p.k = o->k;
  o->p.v = o->v;
  o->p.alpha = o->alpha;
  o->p.beta = o->beta;
  o->p.cu_seqlens = o->cu_seqlens;
  o->p.initial_state = o->initial_state;
}

ref_problem_owned *ref_problem_random(ref_rng *rng, const int32_t *seqlens,
                                      int n, int Hq, int Hk, int Hv,
                                      unsigned flags) {
  int hq, hk, hv;
  if (n < 1 || ref_head_map(Hq, Hk, Hv, 0, &hq, &hk, &hv))
    return NULL;
  int64_t T = 0;
  for (int i = 0; i < n; i++) {
    if (seqlens[i] < 1)
      return NULL;
    T += seqlens[i];
  }
  ref_problem_owned *o = calloc(1, sizeof *o);
  if (!o)
    return NULL;
  int Ho = ref_out_heads(Hq, Hv);
  o->p = (ref_problem){.T = T, .N = n, .Hq = Hq, .Hk = Hk, .Hv = Hv,
                       .scale = 0.73f};
  if (alloc_arrays(o, flags)) {
    ref_problem_free(o);
    return NULL;
  }
  o->cu_seqlens[0] = 0;
  for (int i = 0; i < n; i++)
    o->cu_seqlens[i + 1] = o->cu_seqlens[i] + seqlens[i];
  fill_randn_bf16(rng, o->q, (size_t)T * Hq * REF_D);
  fill_keys(rng, o->k, (size_t)T * Hk);
  fill_randn_bf16(rng, o->v, (size_t)T * Hv * REF_D);
  fill_gates(rng, o->alpha, o->beta, (size_t)T * Ho);
  size_t state = (size_t)n * Ho * REF_D * REF_D;
  for (size_t i = 0; o->initial_state && i < state; i++)
    o->initial_state[i] = (float)(0.1 * ref_normal(rng));
  point_view(o);
  return o;
}

void ref_problem_free(ref_problem_owned *o) {
  if (!o)
    return;
  free(o->q);
  free(o->k);
  free(o->v);
  free(o->alpha);
  free(o->beta);
  free(o->cu_seqlens);
  free(o->initial_state);
  free(o);
}

/* ---- error metrics ------------------------------------------------------- */

double ref_rel_rms(const double *x, const double *ref, size_t n) {
  double err2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = x[i] - ref[i];
    err2 += d * d;
    ref2 += ref[i] * ref[i];
  }
  return sqrt(err2) / sqrt(ref2);
}

double ref_max_abs_err(const double *x, const double *ref, size_t n,
                       size_t *at) {
  double worst = 0.0;
  *at = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs(x[i] - ref[i]);
    if (isnan(e)) {
      *at = i;
      return e;
    }
    if (e > worst) {
      worst = e;
      *at = i;
    }
  }
  return worst;
}

void ref_bf16_to_f64_array(const uint16_t *x, double *out, size_t n) {
  for (size_t i = 0; i < n; i++)
    out[i] = ref_bf16_to_f32(x[i]);
}

void ref_f32_to_f64_array(const float *x, double *out, size_t n) {
  for (size_t i = 0; i < n; i++)
    out[i] = x[i];
}
