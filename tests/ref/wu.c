/* wu.c: the w/u form of the staged reference (docs/numerics.md, "The w/u
 * form"), a change of numerics under study and not used by a kernel.
 *
 * Steps 3-4 form U from the state through two dependent products and a
 * bf16 rounding between them (KS, then X). Since U = W V - (W diag(g) K) Sb^T,
 * the w/u form forms w = W diag(g) K and u = W V once a chunk, from inputs
 * and prepare's outputs alone, and U by one product with the state
 * operand. Prepare and steps 1, 2, 5 and 6 are the staged reference's own
 * code. */
#include "ref.h"

#include <stdlib.h>

/* Every sum here is ref_dot_f32's, so nothing here can be contracted into
 * a fused multiply-add; staged.c's check that fp32 is evaluated in fp32
 * fails any build that would round this file's products twice. */

/* The operands of WU4 for one chunk. w is kept negated: the product of -w
 * and Sb is exactly minus that of w and Sb, so ref_dot_f32 from the
 * accumulator u subtracts the products in k order, as WU4 has it. */
typedef struct wu_operands {
  float wn[REF_C][REF_D];      /* -w[t][k], bf16 values                    */
  float u[REF_D][REF_C];       /* u[t][v] stored as [v][t], fp32           */
} wu_operands;

/* x^T: the columns of K and V as rows, so that a sum over s is one
 * ref_dot_f32. */
static void transpose(const float x[REF_C][REF_D], float xt[REF_D][REF_C]) {
  for (int s = 0; s < REF_C; s++)
    for (int i = 0; i < REF_D; i++)
      xt[i][s] = x[s][i];
}

/* WU1-WU3: Wg[t][s] = bf16(W[t][s] g_s); w[t][k] = bf16(sum_s Wg[t][s] K[s][k]);
 * u[t][v] = sum_s W[t][s] V[s][v], left in fp32. */
static void form_operands(const ref_scan_chunk *c, wu_operands *w) {
  float wg[REF_C][REF_C], kt[REF_D][REF_C], vt[REF_D][REF_C];
  for (int t = 0; t < REF_C; t++)
    for (int s = 0; s < REF_C; s++)
      wg[t][s] = ref_round_bf16(c->W[t][s] * c->g[s]);
  transpose(c->in->k, kt);
  transpose(c->in->v, vt);
  for (int t = 0; t < REF_C; t++)
    for (int i = 0; i < REF_D; i++) {
      w->wn[t][i] = -ref_round_bf16(ref_dot_f32(0.0f, wg[t], kt[i], REF_C));
      w->u[i][t] = ref_dot_f32(0.0f, c->W[t], vt[i], REF_C);
    }
}

/* Steps 1, 2, WU4, 5 and 6 for state row v. */
static void row_wu(float *Srow /* [128] */, const ref_scan_chunk *c, const wu_operands *w,
                   int v, uint16_t o[REF_C][REF_D]) {
  float sb[REF_D], op[REF_C], U[REF_C], out[REF_C], ud[REF_C];
  ref_scan_state_operand(Srow, sb);
  ref_scan_prior_output(sb, c->in, op);
  for (int t = 0; t < REF_C; t++)
    U[t] = ref_dot_f32(w->u[v][t], w->wn[t], sb, REF_D);
  ref_scan_output_sums(c, op, U, out);
  for (int t = 0; t < c->in->L; t++)
    o[t][v] = ref_bf16(out[t]);
  ref_scan_advance(Srow, c, U, ud);
}

static int chunk_scan_wu(float *S, const ref_chunk_in *in, const ref_chunk_prep *prep,
                         float scale, uint16_t o[REF_C][REF_D], ref_ahead *ahead) {
  (void)ahead;
  ref_scan_chunk *c = malloc(sizeof *c);
  wu_operands *w = malloc(sizeof *w);
  if (c && w) {
    ref_scan_chunk_init(c, in, prep, scale);
    form_operands(c, w);
    for (int v = 0; v < REF_D; v++)
      row_wu(S + (size_t)v * REF_D, c, w, v, o);
  }
  int rc = c && w ? 0 : -1;
  free(c);
  free(w);
  return rc;
}

int ref_staged_wu(const ref_problem *p, uint16_t *o, float *final_state) {
  return ref_staged_run(p, REF_OPERANDS_BF16, chunk_scan_wu, o, final_state);
}
