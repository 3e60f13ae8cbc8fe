/* segments.c: the segment form of the staged reference (docs/numerics.md,
 * "Segments"), a change of numerics under study and not used by a kernel.
 *
 * The state after a run of chunks is linear in the state before it, so a
 * sequence's chunks can be scanned as segments side by side: segment 0 as
 * ref_staged scans it, and every later one twice from states of its own,
 * once with its values from S = 0 (E) and once with v = 0 from S = I (M,
 * whose outputs R say how each output depends on the entering state). Once
 * the segment before it has ended in S, the segment's outputs are the
 * zero-start ones plus R Sb^T, and its end state is E + Sb M. The rounding
 * points are the ones numerics.md lists for it; everything else is the
 * staged reference's own code. */
#include "ref.h"

#include <stdlib.h>
#include <string.h>

/* What one sequence and output head needs; the per-chunk arrays hold the
 * chunks of one segment. */
typedef struct segment_scratch {
  ref_chunk_in in, in0;                 /* the chunk, and the chunk with v = 0 */
  ref_chunk_prep prep;
  float S[REF_D * REF_D];               /* [V][K]: the state entering the segment */
  float E[REF_D * REF_D], M[REF_D * REF_D];
  float sb[REF_D][REF_D], mb[REF_D][REF_D], rb[REF_C][REF_D];
  uint16_t o[REF_C][REF_D];
  float (*oz)[REF_C][REF_D];            /* [chunks] zero-start outputs, fp32 */
  float (*r)[REF_C][REF_D];             /* [chunks] outputs of the v = 0 scan */
  int *L;                               /* [chunks] valid rows */
} segment_scratch;

static int seq_chunks(const ref_problem *p, int n) {
  return (p->cu_seqlens[n + 1] - p->cu_seqlens[n] + REF_C - 1) / REF_C;
}

static void put_rows(const ref_problem *p, int n, int c, int h, int L,
                     uint16_t o[REF_C][REF_D], uint16_t *out /* [T, Ho, 128] */) {
  int Ho = ref_out_heads(p->Hq, p->Hv);
  size_t tok = (size_t)p->cu_seqlens[n] + (size_t)c * REF_C;
  for (int t = 0; t < L; t++)
    memcpy(out + ((tok + t) * Ho + h) * REF_D, o[t], sizeof o[t]);
}

/* Segment 0: chunks [0, c1) from the sequence's own state, as ref_staged. */
static void first_segment(const ref_problem *p, int n, int h, int c1, segment_scratch *w,
                          uint16_t *out) {
  for (int c = 0; c < c1; c++) {
    ref_chunk_gather(p, n, c, h, &w->in);
    ref_chunk_prepare(&w->in, REF_OPERANDS_BF16, &w->prep);
    ref_chunk_scan(w->S, &w->in, &w->prep, p->scale, w->o);
    put_rows(p, n, c, h, w->in.L, w->o, out);
  }
}

/* S1: E and M over chunks [c0, c1), their outputs kept in fp32. */
static void side_scans(const ref_problem *p, int n, int h, int c0, int c1,
                       segment_scratch *w) {
  memset(w->E, 0, sizeof w->E);
  memset(w->M, 0, sizeof w->M);
  for (int i = 0; i < REF_D; i++)
    w->M[i * REF_D + i] = 1.0f;
  for (int c = c0; c < c1; c++) {
    ref_chunk_gather(p, n, c, h, &w->in);
    ref_chunk_prepare(&w->in, REF_OPERANDS_BF16, &w->prep);
    w->in0 = w->in;
    memset(w->in0.v, 0, sizeof w->in0.v);
    ref_chunk_scan_f32(w->E, &w->in, &w->prep, p->scale, w->oz[c - c0]);
    ref_chunk_scan_f32(w->M, &w->in0, &w->prep, p->scale, w->r[c - c0]);
    w->L[c - c0] = w->in.L;
  }
}

/* S2-S4: the segment's outputs and end state from the state S entering it. */
static void join(const ref_problem *p, int n, int h, int c0, int c1, segment_scratch *w,
                 uint16_t *out, int oz_bf16) {
  for (int i = 0; i < REF_D; i++) /* row i of S and of M */
    for (int k = 0; k < REF_D; k++) {
      w->sb[i][k] = ref_round_bf16(w->S[i * REF_D + k]);
      w->mb[k][i] = ref_round_bf16(w->M[i * REF_D + k]); /* M's columns as rows */
    }
  for (int c = c0; c < c1; c++) {
    int L = w->L[c - c0];
    for (int t = 0; t < L; t++)
      for (int i = 0; i < REF_D; i++)
        w->rb[t][i] = ref_round_bf16(w->r[c - c0][t][i]);
    for (int t = 0; t < L; t++)
      for (int v = 0; v < REF_D; v++) {
        float z = w->oz[c - c0][t][v];
        w->o[t][v] = ref_bf16(ref_dot_f32(oz_bf16 ? ref_round_bf16(z) : z, w->rb[t], w->sb[v],
                                          REF_D));
      }
    put_rows(p, n, c, h, L, w->o, out);
  }
  for (int v = 0; v < REF_D; v++)
    for (int k = 0; k < REF_D; k++)
      w->S[v * REF_D + k] = ref_dot_f32(w->E[v * REF_D + k], w->sb[v], w->mb[k], REF_D);
}

/* Sequence n on output head h in min(nseg, chunks) segments of chunks
 * [j n / s, (j + 1) n / s). */
static void run_sequence(const ref_problem *p, int n, int h, int nseg, int oz_bf16,
                         segment_scratch *w, uint16_t *out, float *final_state) {
  int Ho = ref_out_heads(p->Hq, p->Hv);
  int chunks = seq_chunks(p, n);
  int s = nseg < chunks ? nseg : chunks;
  size_t slot = ((size_t)n * Ho + h) * REF_D * REF_D;
  for (size_t i = 0; i < (size_t)REF_D * REF_D; i++)
    w->S[i] = p->initial_state ? p->initial_state[slot + i] : 0.0f;
  first_segment(p, n, h, chunks / s, w, out);
  for (int j = 1; j < s; j++) {
    int c0 = j * chunks / s, c1 = (j + 1) * chunks / s;
    side_scans(p, n, h, c0, c1, w);
    join(p, n, h, c0, c1, w, out, oz_bf16);
  }
  if (final_state)
    memcpy(final_state + slot, w->S, sizeof w->S);
}

int ref_staged_segments(const ref_problem *p, int nseg, int oz_bf16, uint16_t *o,
                        float *final_state) {
  if (nseg < 1 || ref_problem_check(p))
    return -1;
  int most = 0; /* chunks of the longest sequence */
  for (int n = 0; n < p->N; n++)
    most = seq_chunks(p, n) > most ? seq_chunks(p, n) : most;
  segment_scratch *w = malloc(sizeof *w);
  if (w) {
    w->oz = malloc((size_t)most * sizeof *w->oz);
    w->r = malloc((size_t)most * sizeof *w->r);
    w->L = malloc((size_t)most * sizeof *w->L);
  }
  int rc = !w || !w->oz || !w->r || !w->L ? -1 : 0;
  int Ho = ref_out_heads(p->Hq, p->Hv);
  for (int n = 0; n < p->N && rc == 0; n++)
    for (int h = 0; h < Ho; h++)
      run_sequence(p, n, h, nseg, oz_bf16, w, o, final_state);
  if (w)
    free(w->oz), free(w->r), free(w->L);
  free(w);
  return rc;
}
