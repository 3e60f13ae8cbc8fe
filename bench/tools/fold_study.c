/* fold_study.c: how accurate the staged forms that would shorten the
 * state chain are (a CPU study for docs/generic.md, not a test).
 *
 * The staged reference advances the state through three dependent
 * products (numerics.md, "Scan and output"); the folded update
 * (numerics.md, "The folded update"; ref_staged_folded) advances it by one,
 * S' = g_L S - Sb Mp + Yd^T K, whose Mp and Yd do not depend on the state;
 * the look-ahead projection ("The look-ahead projection"; ref_staged_ahead)
 * forms each chunk's K S^T from the previous chunk's values, so that the
 * state update leaves the chain; the segment form ("Segments";
 * ref_staged_segments) scans a sequence as 2 or 4 segments side by side,
 * with its zero-start outputs kept in fp32 or rounded to bf16 ("seg4 bf16");
 * the w/u form ("The w/u form"; ref_staged_wu) forms each chunk's U by one
 * product with the state operand, from operands w and u that do not depend
 * on it; the value operands in fp16 ("Why the value operands are fp16";
 * ref_staged_ops) round P, W, X and Ub to fp16 instead of bf16, all four or
 * all but one.
 * This program runs them all on one
 * sequence drawn as the benchmark draws its inputs and prints their errors
 * against the fp64 recurrence and the other forms' against the staged
 * reference.
 *
 *   make build/fold_study && build/fold_study T HEADS [FLAGS]
 * (FLAGS: ref_problem_random's). */
#include "ref.h"

#include <stdio.h>
#include <stdlib.h>

typedef int (*staged_fn)(const ref_problem *p, uint16_t *o, float *final_state);

/* o and final state of one staged form, widened to fp64: f, or with f
 * NULL the staged reference with the value operands in the formats ops. */
static int run(const ref_problem *p, staged_fn f, ref_operands ops, double *o64, double *s64,
               size_t no, size_t ns) {
  uint16_t *o = malloc(no * 2);
  float *s = malloc(ns * 4);
  int rc = !o || !s || (f ? f(p, o, s) : ref_staged_ops(p, ops, o, s));
  if (rc == 0) {
    ref_bf16_to_f64_array(o, o64, no);
    ref_f32_to_f64_array(s, s64, ns);
  }
  free(o);
  free(s);
  return rc;
}

static int segments2(const ref_problem *p, uint16_t *o, float *s) {
  return ref_staged_segments(p, 2, 0, o, s);
}
static int segments4(const ref_problem *p, uint16_t *o, float *s) {
  return ref_staged_segments(p, 4, 0, o, s);
}
static int segments4_bf16(const ref_problem *p, uint16_t *o, float *s) {
  return ref_staged_segments(p, 4, 1, o, s);
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
  /* Each form: its function, or NULL for the staged reference with the
   * value operands in the formats ops. */
  static const struct {
    const char *name;
    staged_fn f;
    ref_operands ops;
  } forms[] = {
      {"staged", NULL, REF_OPERANDS_BF16},
      {"folded", ref_staged_folded, 0},
      {"ahead", ref_staged_ahead, 0},
      {"seg2", segments2, 0},
      {"seg4", segments4, 0},
      {"seg4 bf16", segments4_bf16, 0},
      {"w/u", ref_staged_wu, 0},
      {"f16 ops", NULL, REF_OPERANDS_F16},
      {"f16 ops, P bf16", NULL, REF_OPERANDS_F16 & ~REF_F16_P},
      {"f16 ops, W bf16", NULL, REF_OPERANDS_F16 & ~REF_F16_W},
      {"f16 ops, X bf16", NULL, REF_OPERANDS_F16 & ~REF_F16_X},
      {"f16 ops, Ub bf16", NULL, REF_OPERANDS_F16 & ~REF_F16_UB},
  };
  enum { NF = 1 + sizeof forms / sizeof forms[0] };
  double *o[NF], *s[NF]; /* fp64, then the forms */
  for (int i = 0; i < NF; i++)
    if (!(o[i] = malloc(no * 8)) || !(s[i] = malloc(ns * 8)))
      return fprintf(stderr, "out of memory\n"), 1;
  if (!po || ref_recurrence(&po->p, o[0], s[0]))
    return fprintf(stderr, "out of memory\n"), 1;
  for (int i = 1; i < NF; i++)
    if (run(&po->p, forms[i - 1].f, forms[i - 1].ops, o[i], s[i], no, ns))
      return fprintf(stderr, "out of memory\n"), 1;
  for (int i = 1; i < NF; i++)
    printf("T %d, %d heads, flags %u, %s: against fp64 o %.3e, state %.3e\n", (int)T, H, flags,
           forms[i - 1].name, ref_rel_rms(o[i], o[0], no), ref_rel_rms(s[i], s[0], ns));
  for (int i = 2; i < NF; i++)
    printf("%s against staged: o %.3e, state %.3e\n", forms[i - 1].name,
           ref_rel_rms(o[i], o[1], no), ref_rel_rms(s[i], s[1], ns));
  return 0;
}
