/* fold_study.c: how accurate the state update is when folded into one
 * product a chunk (a CPU study for docs/generic.md, not a test).
 *
 * The staged reference (tests/ref/staged.c) advances the state through
 * three dependent products: KS = K Sb^T, U = W bf16(V - g KS), then
 * S' = g_L S + bf16(U g_L / g) K. With the roundings inside dropped, the
 * same S' is
 *     S' = g_L S - Sb Mp + Yd^T K,
 *     Mp = Kg^T Rb,  Kg = bf16(diag(g) K),  Rb = bf16(Wd^T K),
 *     Wd = bf16(diag(g_L / g) W),  Yd = bf16(diag(g_L / g) W V),
 * where Mp (128 x 128) and Yd do not depend on the state: a prepare step
 * could form them, and the chain would wait on one product a chunk
 * instead of three. The outputs keep the staged reference's formulas (from
 * Sb, as the output warpgroup forms them today). This program runs both
 * forms on problems drawn as the benchmark draws them and prints their
 * errors against the fp64 recurrence and against each other.
 *
 *   make build/fold_study && build/fold_study T HEADS [FLAGS]
 * (one sequence of T tokens; FLAGS: ref_problem_random's). The staged form
 * here is checked against ref_staged bit for bit before it is reported. */
#include "ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* One chunk's operands, widened; Mp and Yd are the folded form's. */
typedef struct chunk {
  const ref_chunk_in *in;
  const float *g;
  float gL, W[REF_C][REF_C], P[REF_C][REF_C];
  float Mp[REF_D][REF_D];
} chunk;

static float dot(float acc, const float *x, const float *y, int n) {
  for (int i = 0; i < n; i++)
    acc += x[i] * y[i];
  return acc;
}

/* Mp = Kg^T Rb, each product in fp32, each operand rounded to bf16. */
static void fold_prepare(chunk *c) {
  static float Rb[REF_C][REF_D], Kg[REF_C][REF_D];
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
      c->Mp[a][k] = ref_round_bf16(acc);
    }
}

/* Row v: U as the staged reference forms it (sb: bf16(S) of the row), and
 * the chunk's outputs from it. */
static void values_and_output(const chunk *c, int v, const float *sb, float *u,
                              float scale, uint16_t o[REF_C][REF_D]) {
  float x[REF_C], ub[REF_C];
  for (int s = 0; s < REF_C; s++)
    x[s] = ref_round_bf16(c->in->v[s][v] - c->g[s] * dot(0.0f, c->in->k[s], sb, REF_D));
  for (int t = 0; t < REF_C; t++)
    u[t] = dot(0.0f, c->W[t], x, REF_C), ub[t] = ref_round_bf16(u[t]);
  for (int t = 0; t < c->in->L; t++) {
    float acc = dot(c->g[t] * dot(0.0f, c->in->q[t], sb, REF_D), c->P[t], ub, REF_C);
    o[t][v] = ref_bf16(scale * acc);
  }
}

/* The state row's update: the staged reference's (folded = 0) or the
 * folded one. */
static void update(const chunk *c, int v, float *Sr, const float *sb, const float *u,
                   int folded) {
  float d[REF_C];
  for (int t = 0; t < REF_C; t++) {
    float w = folded ? 0.0f : u[t];
    for (int s = 0; folded && s < REF_C; s++)
      w += c->W[t][s] * c->in->v[s][v];
    d[t] = ref_round_bf16(w * (c->gL / c->g[t]));
  }
  for (int k = 0; k < REF_D; k++) {
    float acc = c->gL * Sr[k];
    for (int a = 0; folded && a < REF_D; a++)
      acc += -sb[a] * c->Mp[a][k];
    for (int t = 0; t < REF_C; t++)
      acc += d[t] * c->in->k[t][k];
    Sr[k] = acc;
  }
}

static void scan_chunk(float *S, chunk *c, float scale, uint16_t o[REF_C][REF_D], int folded) {
  if (folded)
    fold_prepare(c);
  for (int v = 0; v < REF_D; v++) {
    float *Sr = S + (size_t)v * REF_D, sb[REF_D], u[REF_C];
    for (int k = 0; k < REF_D; k++)
      sb[k] = ref_round_bf16(Sr[k]);
    values_and_output(c, v, sb, u, scale, o);
    update(c, v, Sr, sb, u, folded);
  }
}

/* One sequence, every output head; o [T, Ho, 128], fs [Ho, 128, 128]. */
static void run(const ref_problem *p, int folded, uint16_t *o, float *fs) {
  static ref_chunk_in in;
  static ref_chunk_prep pr;
  static chunk c;
  static float S[REF_D * REF_D];
  static uint16_t ob[REF_C][REF_D];
  int Ho = ref_out_heads(p->Hq, p->Hv);
  for (int h = 0; h < Ho; h++) {
    size_t slot = (size_t)h * REF_D * REF_D;
    for (size_t i = 0; i < (size_t)REF_D * REF_D; i++)
      S[i] = p->initial_state ? p->initial_state[slot + i] : 0.0f;
    for (int n = 0; ref_chunk_gather(p, 0, n, h, &in) == 0; n++) {
      ref_chunk_prepare(&in, &pr);
      c.in = &in, c.g = pr.g, c.gL = pr.g[in.L - 1];
      for (int t = 0; t < REF_C; t++)
        for (int s = 0; s < REF_C; s++)
          c.W[t][s] = ref_bf16_to_f32(pr.W[t][s]), c.P[t][s] = ref_bf16_to_f32(pr.P[t][s]);
      scan_chunk(S, &c, p->scale, ob, folded);
      for (int t = 0; t < in.L; t++)
        memcpy(o + (((size_t)n * REF_C + t) * Ho + h) * REF_D, ob[t], sizeof ob[t]);
    }
    memcpy(fs + slot, S, sizeof S);
  }
}

int main(int argc, char **argv) {
  if (argc < 3 || atoi(argv[1]) < 1 || atoi(argv[2]) < 1) {
    fprintf(stderr, "usage: %s T HEADS [FLAGS]\n", argv[0]);
    return 2;
  }
  int32_t T = atoi(argv[1]);
  int H = atoi(argv[2]);
  unsigned flags = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
  ref_rng rng = ref_rng_seed(0x5eedu + (uint64_t)T);
  ref_problem_owned *po = ref_problem_random(&rng, &T, 1, H, H, H, flags);
  size_t no = (size_t)T * H * REF_D, ns = (size_t)H * REF_D * REF_D;
  double *o64 = malloc(no * 8), *s64 = malloc(ns * 8), *x[2], *y[2];
  uint16_t *o = malloc(no * 2);
  float *fs = malloc(ns * 4);
  if (!po || !o64 || !s64 || !o || !fs || ref_recurrence(&po->p, o64, s64))
    return fprintf(stderr, "out of memory\n"), 1;
  for (int f = 0; f < 2; f++) {
    x[f] = malloc(no * 8), y[f] = malloc(ns * 8);
    if (!x[f] || !y[f])
      return fprintf(stderr, "out of memory\n"), 1;
    run(&po->p, f, o, fs);
    ref_bf16_to_f64_array(o, x[f], no);
    ref_f32_to_f64_array(fs, y[f], ns);
    if (!f) { /* the staged form here must be tests/ref/staged.c's, bit for bit */
      uint16_t *o2 = malloc(no * 2);
      float *fs2 = malloc(ns * 4);
      if (!o2 || !fs2 || ref_staged(&po->p, o2, fs2))
        return fprintf(stderr, "out of memory\n"), 1;
      if (memcmp(o, o2, no * 2) || memcmp(fs, fs2, ns * 4))
        return fprintf(stderr, "the staged form differs from ref_staged\n"), 1;
      free(o2), free(fs2);
    }
    printf("T %d, %d heads, flags %u, %s: against fp64 o %.3e, state %.3e", (int)T, H, flags,
           f ? "folded" : "staged", ref_rel_rms(x[f], o64, no), ref_rel_rms(y[f], s64, ns));
    if (f)
      printf("; against staged o %.3e, state %.3e", ref_rel_rms(x[1], x[0], no),
             ref_rel_rms(y[1], y[0], ns));
    printf("\n");
  }
  return 0;
}
