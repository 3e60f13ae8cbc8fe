/* ref.h: the CPU references of the GDN prefill, shared by CPU and GPU tests.
 *
 * Two references of one operator (see shared/reference/gdn.md):
 *   - the ideal one (recurrence.c): the token recurrence in fp64 from the
 *     bf16 inputs, the yardstick for accuracy;
 *   - the staged one (staged.c): the 64-token chunk algorithm with exactly
 *     the rounding points of docs/numerics.md, the yardstick for kernels.
 * numeric.c holds what both and the tests need: bf16/fp16 rounding, a seeded
 * random generator, random problems as the public benchmark draws them, the
 * head mapping and the error metrics.
 *
 * Nothing here keeps global state: every function works on its arguments.
 * Arrays are row-major; shapes are written beside each parameter.
 */
#ifndef GDN_REF_H
#define GDN_REF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  REF_D = 128, /* head dimension: q, k, v rows and both sides of the state */
  REF_C = 64   /* chunk length in tokens                                   */
};

/* ---- the problem --------------------------------------------------------- */

/* One call of the operator, inputs only (outputs are the caller's arrays).
 * Ho = max(Hq, Hv) output heads; every output head has its own state,
 * alpha and beta. */
typedef struct ref_problem {
  int64_t T;                   /* tokens of all sequences together          */
  int N;                       /* sequences                                 */
  int Hq, Hk, Hv;              /* head counts (MHA, GQA or GVA)             */
  float scale;                 /* output scale                              */
  const uint16_t *q;           /* bf16 bits [T, Hq, 128]                    */
  const uint16_t *k;           /* bf16 bits [T, Hk, 128]                    */
  const uint16_t *v;           /* bf16 bits [T, Hv, 128]                    */
  const float *alpha;          /* [T, Ho] decay in (0, 1], or NULL (= 1)    */
  const float *beta;           /* [T, Ho] write strength, or NULL (= 1)     */
  const int32_t *cu_seqlens;   /* [N + 1] 0 = c0 < c1 < ... < cN = T         */
  const float *initial_state;  /* [N, Ho, 128 (V), 128 (K)] or NULL (= 0)   */
} ref_problem;

/* A problem that owns its arrays; `p` points into them. The mutable
 * pointers let a test edit an input after drawing it. */
typedef struct ref_problem_owned {
  ref_problem p;
  uint16_t *q, *k, *v;         /* as in p                                   */
  float *alpha, *beta;         /* NULL where the flags left them out        */
  int32_t *cu_seqlens;
  float *initial_state;        /* NULL where the flags left it out          */
} ref_problem_owned;

/* Flags of ref_problem_random: which optional inputs to leave out. */
enum {
  REF_NO_ALPHA = 1u << 0,
  REF_NO_BETA = 1u << 1,
  REF_NO_INITIAL_STATE = 1u << 2
};

/* ---- numeric.c: rounding ------------------------------------------------- */

/* fp32 -> bf16 / fp16 bits, round to nearest even. NaN stays NaN (quiet,
 * sign kept), overflow goes to infinity, fp16 keeps its subnormals. */
uint16_t ref_bf16(float x);
uint16_t ref_f16(float x);
/* bits -> fp32, exact. */
float ref_bf16_to_f32(uint16_t h);
float ref_f16_to_f32(uint16_t h);
/* Round an fp32 value to the nearest bf16 / fp16 value, kept in fp32. */
float ref_round_bf16(float x);
float ref_round_f16(float x);
/* n bf16 values times 2^e, in place: exact while they stay in range, since
 * a power of two moves only the exponent (a test's inputs at another scale). */
void ref_scale_bf16(uint16_t *x, size_t n, int e);

/* The format of the value operands (numerics.md, "Why the value operands are
 * fp16"): P and W, which prepare publishes, and X and Ub, which the scan
 * forms. Each meets only another of them in a product (U = W X; P Ub in
 * the output), so they may be fp16 where the operands that meet the
 * caller's bf16 q and k (the state operand Sb, Ud) cannot. A set of REF_F16_*
 * flags: the operands named are fp16, the others bf16. The kernels today:
 * REF_OPERANDS_F16 (gdn_value_operands_f16()); REF_OPERANDS_BF16 is the
 * form before them, on which the other staged forms build; the mixed sets
 * exist for studies. */
enum { REF_F16_P = 1u << 0, REF_F16_W = 1u << 1, REF_F16_X = 1u << 2, REF_F16_UB = 1u << 3 };
typedef unsigned ref_operands;
#define REF_OPERANDS_BF16 0u
#define REF_OPERANDS_F16 (REF_F16_P | REF_F16_W | REF_F16_X | REF_F16_UB)

/* fp32 -> bits, bits -> fp32, and the two together, in fp16 where f16 is
 * nonzero and in bf16 otherwise. */
uint16_t ref_operand_bits(unsigned f16, float x);
float ref_operand_to_f32(unsigned f16, uint16_t h);
float ref_round_operand(unsigned f16, float x);

/* ---- numeric.c: random numbers ------------------------------------------- */

/* splitmix64: one 64-bit word of state, so a test can copy or re-seed it. */
typedef struct ref_rng {
  uint64_t state;
} ref_rng;

ref_rng ref_rng_seed(uint64_t seed);
uint64_t ref_rng_next(ref_rng *r);
double ref_uniform(ref_rng *r);          /* [0, 1), 53 random bits        */
double ref_normal(ref_rng *r);           /* N(0, 1), Box-Muller           */

/* Draws a problem as the public benchmark does (scale 0.73):
 * q = randn, k = randn L2-normalised per token and head, v = randn (all
 * rounded to bf16), alpha uniform in [0.8, 1], beta = sigmoid(randn),
 * initial state 0.1 randn. seqlens: [n] lengths, each >= 1.
 * Returns NULL for an invalid head relation or when memory runs out. */
ref_problem_owned *ref_problem_random(ref_rng *rng, const int32_t *seqlens,
                                      int n, int Hq, int Hk, int Hv,
                                      unsigned flags);
void ref_problem_free(ref_problem_owned *p);

/* ---- numeric.c: shapes --------------------------------------------------- */

/* Ho = max(Hq, Hv). */
int ref_out_heads(int Hq, int Hv);
/* Which q, k and v heads output head h reads. Returns 0, or -1 when the
 * head counts are not MHA, GQA or GVA or h is not in [0, Ho). */
int ref_head_map(int Hq, int Hk, int Hv, int h, int *hq, int *hk, int *hv);
/* 0 when the problem obeys gdn.md (heads, cu_seqlens, pointers), else -1. */
int ref_problem_check(const ref_problem *p);

/* ---- numeric.c: error metrics -------------------------------------------- */

/* ||x - ref||_2 / ||ref||_2 over n elements (NaN if any x is NaN). */
double ref_rel_rms(const double *x, const double *ref, size_t n);
/* max |x - ref|; *at gets its index. A NaN in x or ref is returned at once
 * (with its index), so a poisoned element cannot hide. */
double ref_max_abs_err(const double *x, const double *ref, size_t n,
                       size_t *at);
/* Widening copies, so outputs of any precision meet the metrics above. */
void ref_bf16_to_f64_array(const uint16_t *x, double *out, size_t n);
void ref_f32_to_f64_array(const float *x, double *out, size_t n);

/* ---- recurrence.c: the ideal reference ----------------------------------- */

/* The token recurrence of gdn.md in fp64, per sequence and output head.
 * o: [T, Ho, 128]; final_state: [N, Ho, 128, 128] or NULL.
 * Returns 0, or -1 for an invalid problem or when memory runs out. */
int ref_recurrence(const ref_problem *p, double *o, double *final_state);

/* ---- staged.c: the staged chunk reference -------------------------------- */

/* One chunk of one output head, gathered and padded (numerics.md, "Inputs
 * inside a chunk"). q, k, v hold bf16 values (exact in fp32). */
typedef struct ref_chunk_in {
  int L;                       /* valid tokens, 1..64                      */
  float q[REF_C][REF_D];       /* rows >= L are 0                          */
  float k[REF_C][REF_D];
  float v[REF_C][REF_D];
  float a[REF_C];              /* decay alpha; 1 for rows >= L             */
  float b[REF_C];              /* beta; 0 for rows >= L                    */
} ref_chunk_in;

/* What prepare computes for one chunk and head. g, P and W are what the
 * kernels publish to the workspace; A and T are kept for tests. */
typedef struct ref_chunk_prep {
  ref_operands ops;            /* the formats of P's and W's bits          */
  float g[REF_C];              /* cumulative decay g_t                     */
  uint16_t P[REF_C][REF_C];    /* decayed, masked Q K^T                    */
  uint16_t W[REF_C][REF_C];    /* T with beta on the columns               */
  uint16_t T[REF_C][REF_C];    /* fp16 bits: (I + A)^-1 from the ladder    */
  float A[REF_C][REF_C];       /* fp32: beta-weighted decayed K K^T, s < t */
} ref_chunk_prep;

/* Gathers chunk `c` (tokens 64c ...) of sequence `seq` for output head h.
 * Returns 0, or -1 when the chunk starts past the end of the sequence. */
int ref_chunk_gather(const ref_problem *p, int seq, int c, int h,
                     ref_chunk_in *out);

/* Prepare, numerics.md steps 1-5, and its stages one by one; P and W in
 * the formats ops names. */
void ref_chunk_prepare(const ref_chunk_in *in, ref_operands ops, ref_chunk_prep *out);
void ref_chunk_decay(const float *a /* [64] */, float *g /* [64] */);
void ref_chunk_masks(const ref_chunk_in *in, const float *g /* [64] */, ref_operands ops,
                     uint16_t P[REF_C][REF_C], float A[REF_C][REF_C]);
void ref_chunk_inverse(const float A[REF_C][REF_C],
                       uint16_t T[REF_C][REF_C]);
void ref_chunk_publish(const uint16_t T[REF_C][REF_C], const float *b /* [64] */,
                       ref_operands ops, uint16_t W[REF_C][REF_C]);

/* Scan and output of one chunk, numerics.md "Scan and output".
 * S: [128 (V)][128 (K)] fp32 state, read and advanced past the chunk.
 * o: rows t < in->L written (bf16 bits), other rows untouched. */
void ref_chunk_scan(float *S, const ref_chunk_in *in,
                    const ref_chunk_prep *prep, float scale,
                    uint16_t o[REF_C][REF_D]);

/* The same, with o's values before their rounding to bf16 (fp32, rows
 * t < in->L): what the segment form sums its corrections into. */
void ref_chunk_scan_f32(float *S, const ref_chunk_in *in, const ref_chunk_prep *prep,
                        float scale, float o[REF_C][REF_D]);

/* acc + sum_i x[i] y[i] in fp32, in index order, one rounding an operation:
 * the references' stand-in for one tensor-core accumulation. */
float ref_dot_f32(float acc, const float *x, const float *y, int n);

/* The steps of the scan that the other staged forms share with it, for one
 * chunk and one state row v at a time. */

/* One chunk as the scan reads it, P and W widened from their bits. */
typedef struct ref_scan_chunk {
  const ref_chunk_in *in;
  ref_operands ops;            /* prep->ops, which also gives X's and Ub's */
  const float *g;              /* [64] prep->g                             */
  float gL;                    /* g of the last valid token                */
  float scale;
  float P[REF_C][REF_C];
  float W[REF_C][REF_C];
} ref_scan_chunk;

void ref_scan_chunk_init(ref_scan_chunk *c, const ref_chunk_in *in, const ref_chunk_prep *prep,
                         float scale);
/* Step 1: Sb = bf16(S), state row Srow [128] into sb [128]. */
void ref_scan_state_operand(const float *Srow, float *sb);
/* Step 2: OP[t][v] = Q[t] . Sb[v], from row v's operand sb [128] into op [64]. */
void ref_scan_prior_output(const float *sb, const ref_chunk_in *in, float *op);
/* Step 5 before its rounding, rows t < L: out[t] = scale * (g_t op[t] +
 * P[t] . Ub), Ub = u rounded to the operand format, from OP's column op
 * and U's fp32 column u (all [64]). */
void ref_scan_output_sums(const ref_scan_chunk *c, const float *op, const float *u,
                          float *out);
/* Step 6: Ud's column ud [64] (bf16 values) from U's fp32 column u [64],
 * then the state row Srow [128] advanced past the chunk. */
void ref_scan_advance(float *Srow, const ref_scan_chunk *c, const float *u, float *ud);

/* The whole problem, chunk by chunk. o: [T, Ho, 128] bf16 bits;
 * final_state: [N, Ho, 128, 128] fp32 or NULL.
 * Returns 0, or -1 for an invalid problem or when memory runs out. */
int ref_staged(const ref_problem *p, uint16_t *o, float *final_state);

/* What the look-ahead form below carries from one chunk of a sequence to
 * the next; staged.c keeps its fields. */
typedef struct ref_ahead ref_ahead;

/* One chunk in some staged form, as ref_chunk_scan: returns 0, or -1 when
 * memory runs out. ahead: the look-ahead form's carry, which the driver
 * empties at every sequence's start (the other forms ignore it). */
typedef int (*ref_chunk_scan_fn)(float *S, const ref_chunk_in *in, const ref_chunk_prep *prep,
                                 float scale, uint16_t o[REF_C][REF_D], ref_ahead *ahead);

/* The same with the value operands in the formats ops: REF_OPERANDS_F16
 * is the kernels' form; ref_staged is REF_OPERANDS_BF16, the form before. */
int ref_staged_ops(const ref_problem *p, ref_operands ops, uint16_t *o, float *final_state);

/* The driver of ref_staged and of the staged forms that change only the
 * scan: every sequence and output head, chunk by chunk, prepared with the
 * value operands in the formats ops, through `scan`. Other arguments and
 * result as ref_staged's. */
int ref_staged_run(const ref_problem *p, ref_operands ops, ref_chunk_scan_fn scan, uint16_t *o,
                   float *final_state);

/* The same with the folded update of numerics.md ("The folded update"):
 * the outputs as ref_chunk_scan forms them, the state advanced by
 * S' = g_L S - Sb Mp + Yd^T K. Returns 0, or -1 when memory runs out. */
int ref_chunk_scan_folded(float *S, const ref_chunk_in *in, const ref_chunk_prep *prep,
                           float scale, uint16_t o[REF_C][REF_D]);
int ref_staged_folded(const ref_problem *p, uint16_t *o, float *final_state);

/* The same with the look-ahead projection of numerics.md ("The look-ahead
 * projection"): every chunk after a sequence's first forms KS from the
 * previous chunk's state operand, Ud and K instead of from its own state
 * operand. Returns 0, or -1 for an invalid problem or when memory runs out. */
int ref_staged_ahead(const ref_problem *p, uint16_t *o, float *final_state);

/* ---- wu.c: the w/u form ------------------------------------------------- */

/* The same with the w/u form of numerics.md ("The w/u form"): U formed as
 * u - w Sb^T, from w = bf16(bf16(W diag(g)) K) and u = W V in fp32, which
 * depend on W, K, V and g only, instead of through KS and X (steps 3-4).
 * Returns 0, or -1 for an invalid problem or when memory runs out. */
int ref_staged_wu(const ref_problem *p, uint16_t *o, float *final_state);

/* ---- segments.c: the segment form --------------------------------------- */

/* The same problem with each sequence's chunks in min(nseg, chunks)
 * segments (numerics.md, "Segments"): segment 0 as ref_staged, every later
 * one scanned from 0 and, with v = 0, from I, then joined to the state
 * that enters it. oz_bf16: round the zero-start outputs to bf16 before the
 * join sums into them (else fp32). nseg = 1 is ref_staged bit for bit.
 * Returns 0, or -1 for an invalid problem, nseg < 1 or no memory. */
int ref_staged_segments(const ref_problem *p, int nseg, int oz_bf16, uint16_t *o,
                        float *final_state);

#ifdef __cplusplus
}
#endif
#endif /* GDN_REF_H */
