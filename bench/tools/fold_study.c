/* fold_study.c: how accurate the state update is when folded into one
 * product a chunk (a CPU study for docs/generic.md, not a test).
 *
 * The staged reference advances the state through three dependent
 * products (numerics.md, "Scan and output"); the folded update
 * (numerics.md, "The folded update"; ref_staged_folded) advances it by one,
 * S' = g_L S - Sb Mp + Yd^T K, whose Mp and Yd do not depend on the state.
 * This program runs both on one sequence drawn as the benchmark draws its
 * inputs and prints their errors against the fp64 recurrence and against
 * each other.
 *
 *   make build/fold_study && build/fold_study T HEADS [FLAGS]
 * (FLAGS: ref_problem_random's). */
#include "ref.h"

#include <stdio.h>
#include <stdlib.h>

typedef int (*staged_fn)(const ref_problem *p, uint16_t *o, float *final_state);

/* o and final state of one staged form, widened to fp64. */
static int run(const ref_problem *p, staged_fn f, double *o64, double *s64, size_t no,
               size_t ns) {
  uint16_t *o = malloc(no * 2);
  float *s = malloc(ns * 4);
  int rc = !o || !s || f(p, o, s);
  if (rc == 0) {
    ref_bf16_to_f64_array(o, o64, no);
    ref_f32_to_f64_array(s, s64, ns);
  }
  free(o);
  free(s);
  return rc;
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
  double *o[3], *s[3]; /* fp64, staged, folded */
  for (int i = 0; i < 3; i++)
    if (!(o[i] = malloc(no * 8)) || !(s[i] = malloc(ns * 8)))
      return fprintf(stderr, "out of memory\n"), 1;
  if (!po || ref_recurrence(&po->p, o[0], s[0]) ||
      run(&po->p, ref_staged, o[1], s[1], no, ns) ||
      run(&po->p, ref_staged_folded, o[2], s[2], no, ns))
    return fprintf(stderr, "out of memory\n"), 1;
  for (int i = 1; i < 3; i++)
    printf("T %d, %d heads, flags %u, %s: against fp64 o %.3e, state %.3e\n", (int)T, H, flags,
           i == 1 ? "staged" : "folded", ref_rel_rms(o[i], o[0], no), ref_rel_rms(s[i], s[0], ns));
  printf("folded against staged: o %.3e, state %.3e\n", ref_rel_rms(o[2], o[1], no),
         ref_rel_rms(s[2], s[1], ns));
  return 0;
}
