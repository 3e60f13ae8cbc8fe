/* staged.c: the staged reference, the chunk algorithm of docs/numerics.md
 * with the kernels' rounding points, line by line.
 *
 * Every value that the kernels hold in bf16 or fp16 is rounded here at the
 * same point (ref_round_bf16, ref_round_f16, or the bits themselves); every
 * sum is an fp32 accumulation in index order. The kernels' tensor cores sum
 * in another order, so a kernel matches this file to the last few fp32 bits
 * before each rounding, not bit for bit, but far more tightly than it
 * matches the ideal reference. Section and step numbers below are those of
 * numerics.md. */
#include "ref.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Each fp32 operation must round once, as written: no wider evaluation and
 * no fused multiply-add. gcc in -std=c11 mode does not contract a * b + c;
 * clang is told so here. */
#if FLT_EVAL_METHOD != 0
#error "the staged reference needs fp32 arithmetic evaluated in fp32"
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* acc + sum_i x[i] y[i], in fp32, in index order: the reference's stand-in
 * for one tensor-core accumulation. Starting from acc (not from 0) matters
 * where numerics.md adds a product to an accumulator that holds a value. */
float ref_dot_f32(float acc, const float *x, const float *y, int n) {
  for (int i = 0; i < n; i++)
    acc += x[i] * y[i];
  return acc;
}

/* ---- inputs inside a chunk ----------------------------------------------- */

static void widen_bf16_row(const uint16_t *x /* [128] */, float *out) {
  for (int i = 0; i < REF_D; i++)
    out[i] = ref_bf16_to_f32(x[i]);
}

/* Rows t >= L stay zero (memset) with a_t = 1 and b_t = 0, so padding
 * neither decays the state nor writes to it. */
int ref_chunk_gather(const ref_problem *p, int seq, int c, int h,
                     ref_chunk_in *out) {
  int hq, hk, hv, Ho = ref_out_heads(p->Hq, p->Hv);
  if (seq < 0 || seq >= p->N || c < 0 ||
      ref_head_map(p->Hq, p->Hk, p->Hv, h, &hq, &hk, &hv))
    return -1;
  int64_t bos = p->cu_seqlens[seq] + (int64_t)c * REF_C;
  int64_t eos = p->cu_seqlens[seq + 1];
  if (bos >= eos)
    return -1;
  memset(out, 0, sizeof *out);
  out->L = eos - bos < REF_C ? (int)(eos - bos) : REF_C;
  for (int t = 0; t < REF_C; t++) {
    out->a[t] = 1.0f;
    out->b[t] = 0.0f;
  }
  for (int t = 0; t < out->L; t++) {
    size_t tok = (size_t)(bos + t);
    widen_bf16_row(p->q + (tok * p->Hq + hq) * REF_D, out->q[t]);
    widen_bf16_row(p->k + (tok * p->Hk + hk) * REF_D, out->k[t]);
    widen_bf16_row(p->v + (tok * p->Hv + hv) * REF_D, out->v[t]);
    out->a[t] = p->alpha ? p->alpha[tok * Ho + h] : 1.0f;
    out->b[t] = p->beta ? p->beta[tok * Ho + h] : 1.0f;
  }
  return 0;
}

/* ---- prepare ------------------------------------------------------------- */

/* Step 1: G_t = sum_{s<=t} logf(a_s) in fp32, g_t = expf(G_t). */
void ref_chunk_decay(const float *a, float *g) {
  float G = 0.0f;
  for (int t = 0; t < REF_C; t++) {
    G += logf(a[t]);
    g[t] = expf(G);
  }
}

/* Steps 2-3: QK and KK in fp32, the decay transfer g_t * (1 / g_s) (the
 * fp32 reciprocal of the column's published value, then one product), beta
 * on the rows of KK; P in its operand format (bf16 or fp16):
 *   P[t][s] = op(QK[t][s] * (g_t * (1 / g_s)))      for s <= t
 *   A[t][s] = b_t * (KK[t][s] * (g_t * (1 / g_s)))  for s <  t */
void ref_chunk_masks(const ref_chunk_in *in, const float *g, ref_operands ops,
                     uint16_t P[REF_C][REF_C], float A[REF_C][REF_C]) {
  for (int t = 0; t < REF_C; t++)
    for (int s = 0; s < REF_C; s++) {
      P[t][s] = 0;
      A[t][s] = 0.0f;
      if (s > t)
        continue;
      float decay = g[t] * (1.0f / g[s]);
      float qk = ref_dot_f32(0.0f, in->q[t], in->k[s], REF_D);
      P[t][s] = ref_operand_bits(ops & REF_F16_P, qk * decay);
      if (s < t) {
        float kk = ref_dot_f32(0.0f, in->k[t], in->k[s], REF_D);
        A[t][s] = in->b[t] * (kk * decay);
      }
    }
}

/* Step 4, first rung: each 8x8 diagonal block of I + A inverted by forward
 * substitution in fp32 from the fp32 A,
 *   X[i][i] = 1,  X[i][j] = -sum_{m=j}^{i-1} A[i][m] X[m][j]   (j < i),
 * then rounded: D8 = fp16(X). Row i needs only rows j..i-1 of X. */
static void invert_diagonal_blocks(const float A[REF_C][REF_C],
                                   float D[REF_C][REF_C]) {
  memset(D, 0, sizeof(float) * REF_C * REF_C);
  for (int r = 0; r < REF_C; r += 8) {
    float X[8][8] = {{0.0f}};
    for (int i = 0; i < 8; i++) {
      X[i][i] = 1.0f;
      for (int j = 0; j < i; j++) {
        float acc = 0.0f;
        for (int m = j; m < i; m++)
          acc += A[r + i][r + m] * X[m][j];
        X[i][j] = -acc;
      }
    }
    for (int i = 0; i < 8; i++)
      for (int j = 0; j <= i; j++)
        D[r + i][r + j] = ref_round_f16(X[i][j]);
  }
}

/* Step 4, one merge at stage b: the diagonal blocks X^-1 = D[r.., r..] and
 * Y^-1 = D[r+b.., r+b..] (both fp16 already) become the 2b x 2b block
 * [[X^-1, 0], [-Y^-1 C X^-1, Y^-1]], C = fp16(A) in rows r+b.., columns r..:
 *   Z = fp16(C X^-1),  Y = Y^-1 Z,  lower-left block = fp16(0 - Y),
 * two products with fp16 operands and fp32 accumulation. (numerics.md
 * writes D_2b = fp16(D_b - Y); D_b is zero in that block.) */
static void merge_pair(const float A[REF_C][REF_C], float D[REF_C][REF_C],
                       int r, int b) {
  float C[32][32], Z[32][32];
  for (int i = 0; i < b; i++)
    for (int j = 0; j < b; j++)
      C[i][j] = ref_round_f16(A[r + b + i][r + j]);
  for (int i = 0; i < b; i++)
    for (int j = 0; j < b; j++) {
      float acc = 0.0f;
      for (int m = 0; m < b; m++)
        acc += C[i][m] * D[r + m][r + j];
      Z[i][j] = ref_round_f16(acc);
    }
  for (int i = 0; i < b; i++)
    for (int j = 0; j < b; j++) {
      float acc = 0.0f;
      for (int m = 0; m < b; m++)
        acc += D[r + b + i][r + b + m] * Z[m][j];
      D[r + b + i][r + j] = ref_round_f16(0.0f - acc);
    }
}

/* Step 4: T = (I + A)^-1 by the ladder 8 -> 16 -> 32 -> 64. */
void ref_chunk_inverse(const float A[REF_C][REF_C],
                       uint16_t T[REF_C][REF_C]) {
  float D[REF_C][REF_C]; /* fp16 values, block diagonal of growing size */
  invert_diagonal_blocks(A, D);
  for (int b = 8; b < REF_C; b *= 2)
    for (int r = 0; r < REF_C; r += 2 * b)
      merge_pair(A, D, r, b);
  for (int t = 0; t < REF_C; t++)
    for (int s = 0; s < REF_C; s++)
      T[t][s] = ref_f16(D[t][s]);
}

/* Step 5: W[t][s] = op(float(T[t][s]) * b_s), beta on the columns, in its
 * operand format. */
void ref_chunk_publish(const uint16_t T[REF_C][REF_C], const float *b, ref_operands ops,
                       uint16_t W[REF_C][REF_C]) {
  for (int t = 0; t < REF_C; t++)
    for (int s = 0; s < REF_C; s++)
      W[t][s] = ref_operand_bits(ops & REF_F16_W, ref_f16_to_f32(T[t][s]) * b[s]);
}

void ref_chunk_prepare(const ref_chunk_in *in, ref_operands ops, ref_chunk_prep *out) {
  out->ops = ops;
  ref_chunk_decay(in->a, out->g);
  ref_chunk_masks(in, out->g, ops, out->P, out->A);
  ref_chunk_inverse(out->A, out->T);
  ref_chunk_publish(out->T, in->b, ops, out->W);
}

/* ---- scan and output ----------------------------------------------------- */

/* Row v of the state and column v of V, KS, X, U and o only ever meet each
 * other (the value dimension is never summed over), so the scan runs one v
 * at a time; each sum below is the same sum, in the same order, as in the
 * matrix form of numerics.md. */

void ref_scan_state_operand(const float *Srow /* [128] */, float *sb /* [128] */) {
  for (int k = 0; k < REF_D; k++)
    sb[k] = ref_round_bf16(Srow[k]);
}

void ref_scan_prior_output(const float *sb /* [128] */, const ref_chunk_in *in,
                           float *op /* [64] */) {
  for (int t = 0; t < REF_C; t++)
    op[t] = ref_dot_f32(0.0f, in->q[t], sb, REF_D);
}

/* Steps 2-3: OP[t][v] = Q[t] . Sb[v];  KS[t][v] = K[t] . Sb[v]. */
static void project_state(const float *sb /* [128] */, const ref_chunk_in *in,
                          float *op /* [64] */, float *ks /* [64] */) {
  ref_scan_prior_output(sb, in, op);
  for (int t = 0; t < REF_C; t++)
    ks[t] = ref_dot_f32(0.0f, in->k[t], sb, REF_D);
}

/* Step 4: X[s][v] = op(V[s][v] - g_s * KS[s][v]) in its operand format;
 * U[t][v] = W[t] . X[:, v], the product g_s * KS rounded to fp32 before the
 * subtraction (no FMA). */
static void correct_values(const ref_scan_chunk *c, int v, const float *ks,
                           float *u /* [64] */) {
  float x[REF_C];
  for (int s = 0; s < REF_C; s++)
    x[s] = ref_round_operand(c->ops & REF_F16_X, c->in->v[s][v] - c->g[s] * ks[s]);
  for (int t = 0; t < REF_C; t++)
    u[t] = ref_dot_f32(0.0f, c->W[t], x, REF_C);
}

/* Step 5 before its rounding: scale * (g_t OP[t][v] + P[t] . Ub[:, v]), the
 * accumulator starting at g_t OP, for t < L only. */
void ref_scan_output_sums(const ref_scan_chunk *c, const float *op, const float *u,
                          float *out /* [64] */) {
  float ub[REF_C];
  for (int s = 0; s < REF_C; s++)
    ub[s] = ref_round_operand(c->ops & REF_F16_UB, u[s]);
  for (int t = 0; t < c->in->L; t++)
    out[t] = c->scale * ref_dot_f32(c->g[t] * op[t], c->P[t], ub, REF_C);
}

/* Step 6, first half: Ud[t][v] = bf16(U[t][v] * (g_L / g_t)) from the fp32 U. */
static void decayed_values(const ref_scan_chunk *c, const float *u, float *ud /* [64] */) {
  for (int t = 0; t < REF_C; t++)
    ud[t] = ref_round_bf16(u[t] * (c->gL / c->g[t]));
}

/* Step 6: S[v][k] = g_L S[v][k] + sum_t Ud[t][v] K[t][k], accumulator at g_L S. */
static void advance_state(float *Srow /* [128] */, const ref_scan_chunk *c,
                          const float *ud /* [64] */) {
  for (int k = 0; k < REF_D; k++) {
    float acc = c->gL * Srow[k];
    for (int t = 0; t < REF_C; t++)
      acc += ud[t] * c->in->k[t][k];
    Srow[k] = acc;
  }
}

/* Step 6 whole: Ud, then the state row from it. */
void ref_scan_advance(float *Srow, const ref_scan_chunk *c, const float *u, float *ud) {
  decayed_values(c, u, ud);
  advance_state(Srow, c, ud);
}

void ref_scan_chunk_init(ref_scan_chunk *c, const ref_chunk_in *in, const ref_chunk_prep *prep,
                         float scale) {
  *c = (ref_scan_chunk){
      .in = in, .ops = prep->ops, .g = prep->g, .gL = prep->g[in->L - 1], .scale = scale};
  for (int t = 0; t < REF_C; t++)
    for (int s = 0; s < REF_C; s++) {
      c->P[t][s] = ref_operand_to_f32(prep->ops & REF_F16_P, prep->P[t][s]);
      c->W[t][s] = ref_operand_to_f32(prep->ops & REF_F16_W, prep->W[t][s]);
    }
}

/* Steps 1-5 for state row v: its operand sb, U's column u and o's column
 * before step 5's rounding (rows t < L); KS from ks_ahead where the
 * look-ahead formed it, else step 3's. */
static void row_sums(const ref_scan_chunk *c, int v, const float *Srow, const float *ks_ahead,
                     float *sb /* [128] */, float *u /* [64] */, float *out /* [64] */) {
  float op[REF_C], ks[REF_C];
  ref_scan_state_operand(Srow, sb);
  project_state(sb, c->in, op, ks);
  correct_values(c, v, ks_ahead ? ks_ahead : ks, u);
  ref_scan_output_sums(c, op, u, out);
}

/* The same with step 5's rounding: o[t][v] = bf16 of the sums. */
static void row_outputs(const ref_scan_chunk *c, int v, const float *Srow, const float *ks_ahead,
                        float *sb /* [128] */, float *u /* [64] */, uint16_t o[REF_C][REF_D]) {
  float out[REF_C];
  row_sums(c, v, Srow, ks_ahead, sb, u, out);
  for (int t = 0; t < c->in->L; t++)
    o[t][v] = ref_bf16(out[t]);
}

void ref_chunk_scan_f32(float *S, const ref_chunk_in *in, const ref_chunk_prep *prep,
                        float scale, float o[REF_C][REF_D]) {
  ref_scan_chunk c;
  ref_scan_chunk_init(&c, in, prep, scale);
  for (int v = 0; v < REF_D; v++) {
    float *Srow = S + (size_t)v * REF_D, sb[REF_D], u[REF_C], ud[REF_C], out[REF_C];
    row_sums(&c, v, Srow, NULL, sb, u, out);
    for (int t = 0; t < in->L; t++)
      o[t][v] = out[t];
    ref_scan_advance(Srow, &c, u, ud);
  }
}

/* Step 5's rounding applied to the sums of ref_chunk_scan_f32. */
void ref_chunk_scan(float *S, const ref_chunk_in *in,
                    const ref_chunk_prep *prep, float scale,
                    uint16_t o[REF_C][REF_D]) {
  float sums[REF_C][REF_D];
  ref_chunk_scan_f32(S, in, prep, scale, sums);
  for (int t = 0; t < in->L; t++)
    for (int v = 0; v < REF_D; v++)
      o[t][v] = ref_bf16(sums[t][v]);
}

/* ---- the folded update (numerics.md, "The folded update") ---------------- */

/* What the folded update forms besides the scan's own values. */
typedef struct fold_scratch {
  float Rb[REF_C][REF_D], Kg[REF_C][REF_D];
  float Mp[REF_D][REF_D];
} fold_scratch;

/* F1-F2: Rb[s][k] = bf16(sum_t Wd[t][s] K[t][k]) with Wd[t][s] =
 * bf16(W[t][s] * (g_L / g_t)); Kg[s][a] = bf16(g_s K[s][a]);
 * Mp[a][k] = bf16(sum_s Kg[s][a] Rb[s][k]). */
static void fold_operator(const ref_scan_chunk *c, fold_scratch *f) {
  float(*Rb)[REF_D] = f->Rb, (*Kg)[REF_D] = f->Kg, (*Mp)[REF_D] = f->Mp;
  for (int s = 0; s < REF_C; s++)
    for (int k = 0; k < REF_D; k++) {
      float acc = 0.0f;
      for (int t = 0; t < REF_C; t++)
        acc += ref_round_bf16(c->W[t][s] * (c->gL / c->g[t])) * c->in->k[t][k];
      Rb[s][k] = ref_round_bf16(acc);
      Kg[s][k] = ref_round_bf16(c->g[s] * c->in->k[s][k]);
    }
  for (int a = 0; a < REF_D; a++)
    for (int k = 0; k < REF_D; k++) {
      float acc = 0.0f;
      for (int s = 0; s < REF_C; s++)
        acc += Kg[s][a] * Rb[s][k];
      Mp[a][k] = ref_round_bf16(acc);
    }
}

/* F3-F4: Yd[t][v] = bf16((sum_s W[t][s] V[s][v]) * (g_L / g_t));
 * S[v][k] = g_L S[v][k] - sum_a Sb[v][a] Mp[a][k] + sum_t Yd[t][v] K[t][k],
 * the accumulator starting at g_L S, the Mp terms first. */
static void advance_state_folded(float *Srow, const float *sb, const ref_scan_chunk *c, int v,
                                 const float Mp[REF_D][REF_D]) {
  float yd[REF_C];
  for (int t = 0; t < REF_C; t++) {
    float acc = 0.0f;
    for (int s = 0; s < REF_C; s++)
      acc += c->W[t][s] * c->in->v[s][v];
    yd[t] = ref_round_bf16(acc * (c->gL / c->g[t]));
  }
  for (int k = 0; k < REF_D; k++) {
    float acc = c->gL * Srow[k];
    for (int a = 0; a < REF_D; a++)
      acc += -sb[a] * Mp[a][k];
    for (int t = 0; t < REF_C; t++)
      acc += yd[t] * c->in->k[t][k];
    Srow[k] = acc;
  }
}

int ref_chunk_scan_folded(float *S, const ref_chunk_in *in, const ref_chunk_prep *prep,
                          float scale, uint16_t o[REF_C][REF_D]) {
  fold_scratch *f = malloc(sizeof *f);
  if (!f)
    return -1;
  ref_scan_chunk c;
  ref_scan_chunk_init(&c, in, prep, scale);
  fold_operator(&c, f);
  for (int v = 0; v < REF_D; v++) {
    float *Srow = S + (size_t)v * REF_D, sb[REF_D], u[REF_C];
    row_outputs(&c, v, Srow, NULL, sb, u, o);
    advance_state_folded(Srow, sb, &c, v, f->Mp);
  }
  free(f);
  return 0;
}

/* ---- the look-ahead projection (numerics.md, "The look-ahead projection") */

/* What chunk c of a sequence leaves for chunk c + 1's KS: Sb of the state
 * that entered chunk c, chunk c's Ud, K and g_L. `have` is 0 at a
 * sequence's first chunk, whose KS is step 3's. */
struct ref_ahead {
  int have;
  float gL;
  float sb[REF_D][REF_D]; /* [v][k] */
  float ud[REF_D][REF_C]; /* [v][t] */
  float k[REF_C][REF_D];
};

/* A1: B[s][t] = bf16(K_c[s] . K_{c+1}[t]). */
static void key_overlap(const ref_ahead *a, const ref_chunk_in *in, float B[REF_C][REF_C]) {
  for (int s = 0; s < REF_C; s++)
    for (int t = 0; t < REF_C; t++)
      B[s][t] = ref_round_bf16(ref_dot_f32(0.0f, a->k[s], in->k[t], REF_D));
}

/* A2: KS[t][v] = g_L(c) (K_{c+1}[t] . Sb_c[v]) + sum_s Ud_c[s][v] B[s][t],
 * the accumulator starting at the first term, the Ud terms in s order. */
static void project_ahead(const ref_ahead *a, const float B[REF_C][REF_C],
                          const ref_chunk_in *in, int v, float *ks /* [64] */) {
  for (int t = 0; t < REF_C; t++) {
    float acc = a->gL * ref_dot_f32(0.0f, in->k[t], a->sb[v], REF_D);
    for (int s = 0; s < REF_C; s++)
      acc += a->ud[v][s] * B[s][t];
    ks[t] = acc;
  }
}

/* Steps 1-6 for every row v, KS from the previous chunk where there is
 * one; then what this chunk leaves for the next. */
static int chunk_scan_ahead(float *S, const ref_chunk_in *in, const ref_chunk_prep *prep,
                            float scale, uint16_t o[REF_C][REF_D], ref_ahead *a) {
  float(*B)[REF_C] = malloc(sizeof(float[REF_C][REF_C]));
  if (!B)
    return -1;
  ref_scan_chunk c;
  ref_scan_chunk_init(&c, in, prep, scale);
  if (a->have)
    key_overlap(a, in, B);
  for (int v = 0; v < REF_D; v++) {
    float *Srow = S + (size_t)v * REF_D, sb[REF_D], ks[REF_C], u[REF_C];
    if (a->have)
      project_ahead(a, (const float(*)[REF_C])B, in, v, ks);
    row_outputs(&c, v, Srow, a->have ? ks : NULL, sb, u, o);
    memcpy(a->sb[v], sb, sizeof sb);
    ref_scan_advance(Srow, &c, u, a->ud[v]);
  }
  memcpy(a->k, in->k, sizeof a->k);
  a->gL = c.gL, a->have = 1;
  free(B);
  return 0;
}

/* ---- the whole problem --------------------------------------------------- */

typedef struct staged_scratch {
  ref_chunk_in in;
  ref_chunk_prep prep;
  float S[REF_D * REF_D];      /* [V][K] */
  uint16_t o[REF_C][REF_D];
  ref_ahead ahead;
} staged_scratch;

/* ref_chunk_scan as a ref_chunk_scan_fn: it cannot fail. */
static int chunk_scan(float *S, const ref_chunk_in *in, const ref_chunk_prep *prep, float scale,
                      uint16_t o[REF_C][REF_D], ref_ahead *ahead) {
  (void)ahead;
  ref_chunk_scan(S, in, prep, scale, o);
  return 0;
}

static int chunk_scan_folded(float *S, const ref_chunk_in *in, const ref_chunk_prep *prep,
                             float scale, uint16_t o[REF_C][REF_D], ref_ahead *ahead) {
  (void)ahead;
  return ref_chunk_scan_folded(S, in, prep, scale, o);
}

/* Sequence n on output head h, chunk after chunk, from its own initial
 * state to its own final state; o rows go back to their packed tokens. */
static int run_sequence(const ref_problem *p, int n, int h, staged_scratch *w,
                        ref_operands ops, ref_chunk_scan_fn scan, uint16_t *o /* [T, Ho, 128] */,
                        float *final_state /* [N, Ho, 128, 128] or NULL */) {
  int Ho = ref_out_heads(p->Hq, p->Hv);
  size_t slot = ((size_t)n * Ho + h) * REF_D * REF_D;
  for (size_t i = 0; i < (size_t)REF_D * REF_D; i++)
    w->S[i] = p->initial_state ? p->initial_state[slot + i] : 0.0f;
  w->ahead.have = 0;
  for (int c = 0; ref_chunk_gather(p, n, c, h, &w->in) == 0; c++) {
    ref_chunk_prepare(&w->in, ops, &w->prep);
    if (scan(w->S, &w->in, &w->prep, p->scale, w->o, &w->ahead))
      return -1;
    size_t tok = (size_t)p->cu_seqlens[n] + (size_t)c * REF_C;
    for (int t = 0; t < w->in.L; t++)
      memcpy(o + ((tok + t) * Ho + h) * REF_D, w->o[t], sizeof w->o[t]);
  }
  if (final_state)
    memcpy(final_state + slot, w->S, sizeof w->S);
  return 0;
}

int ref_staged_run(const ref_problem *p, ref_operands ops, ref_chunk_scan_fn scan, uint16_t *o,
                   float *final_state) {
  if (ref_problem_check(p))
    return -1;
  staged_scratch *w = malloc(sizeof *w);
  if (!w)
    return -1;
  int Ho = ref_out_heads(p->Hq, p->Hv), rc = 0;
  for (int n = 0; n < p->N && rc == 0; n++)
    for (int h = 0; h < Ho && rc == 0; h++)
      rc = run_sequence(p, n, h, w, ops, scan, o, final_state);
  free(w);
  return rc;
}

int ref_staged(const ref_problem *p, uint16_t *o, float *final_state) {
  return ref_staged_ops(p, REF_OPERANDS_BF16, o, final_state);
}

int ref_staged_ops(const ref_problem *p, ref_operands ops, uint16_t *o, float *final_state) {
  return ref_staged_run(p, ops, chunk_scan, o, final_state);
}

int ref_staged_folded(const ref_problem *p, uint16_t *o, float *final_state) {
  return ref_staged_run(p, REF_OPERANDS_BF16, chunk_scan_folded, o, final_state);
}

int ref_staged_ahead(const ref_problem *p, uint16_t *o, float *final_state) {
  return ref_staged_run(p, REF_OPERANDS_BF16, chunk_scan_ahead, o, final_state);
}
