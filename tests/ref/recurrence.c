/* recurrence.c: the ideal reference, the token recurrence of gdn.md in fp64.
 *
 * The inputs are the caller's bf16 and fp32 values, widened exactly to fp64;
 * everything after that is fp64, so this is the operator as close to exact
 * as the inputs allow, the yardstick for every accuracy figure. */
#include "ref.h"

#include <stdlib.h>
#include <string.h>

typedef struct token_in {
  double q[REF_D], k[REF_D], v[REF_D];
  double alpha, beta;
} token_in;

/* One token on one output head:
 *     S = alpha S;  pred = S k;  u = beta (v - pred);  S += u k^T;
 *     o = scale S q
 * Row i of S (value index i) only meets v[i], pred[i], u[i] and o[i], so each
 * row runs the five lines on its own. */
static void token_step(double *S /* [128][128] */, const token_in *x,
                       double scale, double *o /* [128] */) {
  for (int i = 0; i < REF_D; i++) {
    double *row = S + (size_t)i * REF_D;
    double pred = 0.0;
    for (int j = 0; j < REF_D; j++) {
      row[j] *= x->alpha;
      pred += row[j] * x->k[j];
    }
    double u = x->beta * (x->v[i] - pred);
    double out = 0.0;
    for (int j = 0; j < REF_D; j++) {
      row[j] += u * x->k[j];
      out += row[j] * x->q[j];
    }
    o[i] = scale * out;
  }
}

static void widen_bf16_row(const uint16_t *x /* [128] */, double *out) {
  for (int i = 0; i < REF_D; i++)
    out[i] = ref_bf16_to_f32(x[i]);
}

/* Token t's inputs for output head h; absent gates are 1. */
static void load_token(const ref_problem *p, int64_t t, int h, token_in *x) {
  int hq, hk, hv, Ho = ref_out_heads(p->Hq, p->Hv);
  ref_head_map(p->Hq, p->Hk, p->Hv, h, &hq, &hk, &hv);
  widen_bf16_row(p->q + ((size_t)t * p->Hq + hq) * REF_D, x->q);
  widen_bf16_row(p->k + ((size_t)t * p->Hk + hk) * REF_D, x->k);
  widen_bf16_row(p->v + ((size_t)t * p->Hv + hv) * REF_D, x->v);
  x->alpha = p->alpha ? p->alpha[(size_t)t * Ho + h] : 1.0;
  x->beta = p->beta ? p->beta[(size_t)t * Ho + h] : 1.0;
}

/* Sequence n on output head h: its own initial state in, its own final
 * state out, nothing shared with its neighbours in the packed batch. */
static void run_sequence(const ref_problem *p, int n, int h,
                         double *S /* [128][128] scratch */,
                         double *o /* [T, Ho, 128] */,
                         double *final_state /* [N, Ho, 128, 128] or NULL */) {
  int Ho = ref_out_heads(p->Hq, p->Hv);
  size_t slot = ((size_t)n * Ho + h) * REF_D * REF_D;
  for (size_t i = 0; i < (size_t)REF_D * REF_D; i++)
    S[i] = p->initial_state ? p->initial_state[slot + i] : 0.0;
  token_in x;
  for (int64_t t = p->cu_seqlens[n]; t < p->cu_seqlens[n + 1]; t++) {
    load_token(p, t, h, &x);
    token_step(S, &x, p->scale, o + ((size_t)t * Ho + h) * REF_D);
  }
  if (final_state)
    memcpy(final_state + slot, S, sizeof(double) * REF_D * REF_D);
}

int ref_recurrence(const ref_problem *p, double *o, double *final_state) {
  if (ref_problem_check(p))
    return -1;
  double *S = malloc(sizeof(double) * REF_D * REF_D);
  if (!S)
    return -1;
  int Ho = ref_out_heads(p->Hq, p->Hv);
  for (int n = 0; n < p->N; n++)
    for (int h = 0; h < Ho; h++)
      run_sequence(p, n, h, S, o, final_state);
  free(S);
  return 0;
}
