/* gdn_cases.c: the GDN prefill through libgdn's public call, checked
 * against both CPU references on fresh random inputs (issue cases: the six
 * benchmark rows, tail lengths, packed batches, GQA/GVA, optional inputs).
 *
 * Outputs are poisoned with NaN before each call and must be fully
 * written; 256-element guard bands around o and the final state must stay
 * untouched. Run from the repository root: build/tests/gpu_gdn [seed] [filter].
 */
#include <pthread.h>
#include <string.h>

#include "gdn.h"
#include "gpucheck.h"
#include "ref.h"

#define GUARD 256
#define MAX_SEQ 64
#define MAX_RANDOM_SEQ 200
_Static_assert(MAX_RANDOM_SEQ >= MAX_SEQ, "lens buffers hold any case");

typedef struct Case {
  const char *name;
  int n;                    /* sequences; 0: lens[0] (30 if 0) drawn at random;
                               < 0: -n of them, summing to lens[0], split at random */
  int32_t lens[MAX_SEQ];
  int Hq, Hk, Hv;
  unsigned flags;           /* REF_NO_ALPHA, REF_NO_BETA, REF_NO_INITIAL_STATE, LARGE */
  int want_final;
} Case;

#define NO_INIT REF_NO_INITIAL_STATE
/* q times 2^13 and v times 2^12 after the draw: |q . k| up to about 4e4
 * and v up to about 2e4, near fp16's largest value (65504) and within it,
 * where an operand kept in fp16 (docs/numerics.md) holds its precision. */
#define LARGE (1u << 16)
/* The six rows of bench/cases.json first ("state": initial and final). */
static const Case cases[] = {
    {"single-t512-h8-mha-zero", 1, {512}, 8, 8, 8, NO_INIT, 0},
    {"single-t1024-h8-mha-state", 1, {1024}, 8, 8, 8, 0, 1},
    {"single-t1024-h8-hv16-gva-state", 1, {1024}, 8, 8, 16, 0, 1},
    {"single-t4096-h16-mha-zero", 1, {4096}, 16, 16, 16, NO_INIT, 0},
    {"packed-n10-t4096-h8-mha-state", 10, {300, 517, 128, 700, 64, 411, 999, 200, 333, 444},
     8, 8, 8, 0, 1},
    {"packed-n20-t8192-h8-hv16-gva-state", 20,
     {410, 97, 640, 333, 512, 1, 700, 389, 250, 431, 64, 615, 128, 480, 529, 300, 391, 457, 383, 1082},
     8, 8, 16, 0, 1},
    {"t1", 1, {1}, 2, 2, 2, 0, 1},
    {"t63", 1, {63}, 2, 2, 2, 0, 1},
    {"t64", 1, {64}, 2, 2, 2, 0, 1},
    {"t65", 1, {65}, 2, 2, 2, 0, 1},
    {"t127", 1, {127}, 2, 2, 2, 0, 1},
    {"t129", 1, {129}, 2, 2, 2, 0, 1},
    {"packed-30-random", 0, {0}, 4, 4, 4, 0, 1},
    /* More sequences than gdn_scan orders longest first (128): index order. */
    {"packed-200-random", 0, {200}, 2, 2, 2, 0, 1},
    /* More than two waves of scan CTAs on 132 SMs: gdn_scan_lanes, the
     * ranks balanced over 16 and 8 lanes (runtime/route.c). */
    {"lanes-40-random", 0, {40}, 4, 4, 4, 0, 1},
    {"lanes-48-gva-no-init", 0, {48}, 2, 2, 8, NO_INIT, 1},
    {"gqa-16-4-4", 3, {200, 77, 64}, 16, 4, 4, 0, 1},
    {"gva-4-4-16", 3, {150, 64, 1}, 4, 4, 16, 0, 1},
    {"alpha-absent", 2, {100, 28}, 4, 4, 4, REF_NO_ALPHA, 1},
    {"beta-absent", 2, {100, 28}, 4, 4, 4, REF_NO_BETA, 1},
    {"initial-without-final", 2, {130, 60}, 4, 4, 4, 0, 0},
    {"final-without-initial", 2, {130, 60}, 4, 4, 4, NO_INIT, 1},
    /* gdn_fused (on a 132-SM H200: prepare units > 4 x SMs, scan CTAs <=
     * SMs / 2): a 1-token sequence and tails between long ones; GVA. */
    {"fused-tails-3", 3, {5001, 1, 3999}, 4, 4, 4, 0, 1},
    {"fused-gva-2-2-8", 1, {8191}, 2, 2, 8, NO_INIT, 1},
    /* gdn_fused without split pairs: 64 scan CTAs, whose pairs would not
     * leave 16 of 132 SMs, so each scan CTA's warp 3 waits on the flags and
     * loads W and g for the whole scan's code; 592 units; two tails. */
    {"fused-whole-2-h16", 2, {1500, 777}, 16, 16, 16, 0, 1},
    /* gdn_fused's split pairs where gdn_prepare would be one wave but
     * hold more units than SMs (on 132 SMs): a short last chunk with 16
     * heads, and two sequences with 8 heads (18 chunk slots). */
    {"fused-shared-t1000-h16", 1, {1000}, 16, 16, 16, 0, 1},
    {"fused-shared-2-h8", 2, {700, 333}, 8, 8, 8, NO_INIT, 1},
    /* The specialisation keys of generator/default.routes with the splits
     * their issues name: routing never reads cu_seqlens, so a key's
     * schedule must hold for any lengths that sum to its T. The n10 key
     * (T 4096, ten sequences, 8 heads): even, one long and nine 1-token
     * sequences, chunk boundaries, and a random split. */
    {"key-n10-even", 10, {410, 410, 410, 410, 410, 410, 409, 409, 409, 409}, 8, 8, 8, 0, 1},
    {"key-n10-4087-ones", 10, {4087, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 8, 8, 8, 0, 1},
    {"key-n10-boundaries", 10, {64, 128, 192, 256, 320, 384, 448, 512, 576, 1216}, 8, 8, 8, 0, 1},
    {"key-n10-random", -10, {4096}, 8, 8, 8, 0, 1},
    /* The n20 key (T 8192, twenty sequences, GVA 8/8/16): one long one
     * beside 19 short ones at, and one past, chunk boundaries (a 1-token
     * one among them), and a random split. */
    {"key-n20-one-long", 20,
     {6083, 1, 63, 64, 65, 127, 128, 129, 2, 5, 31, 33, 100, 191, 192, 193, 255, 256, 257, 17},
     8, 8, 16, 0, 1},
    {"key-n20-random", -20, {8192}, 8, 8, 16, 0, 1},
    /* Near misses of the n10 key, which take the generic pipeline: one
     * token more, and no final state. */
    {"near-n10-t4097", 10, {300, 517, 128, 700, 64, 411, 999, 200, 333, 445}, 8, 8, 8, 0, 1},
    {"near-n10-no-final", 10, {300, 517, 128, 700, 64, 411, 999, 200, 333, 444}, 8, 8, 8, 0, 0},
    {"large-q8192-v4096", 3, {200, 77, 64}, 4, 4, 4, LARGE, 1},
};

/* A device buffer with guard bands: `n` elements of `esize` bytes at
 * dev + GUARD * esize, poisoned inside, patterned outside. */
typedef struct Guarded {
  CUdeviceptr base, dev;
  size_t n, esize;
  unsigned char *host;      /* the whole buffer, guards included */
} Guarded;

static void guarded_alloc(Guarded *g, size_t n, size_t esize) {
  g->n = n;
  g->esize = esize;
  size_t total = (n + 2 * GUARD) * esize;
  CU(cuMemAlloc(&g->base, total));
  g->dev = g->base + GUARD * esize;
  g->host = malloc(total);
  memset(g->host, 0x5A, total);                  /* guard pattern */
  memset(g->host + GUARD * esize, 0xFF, n * esize); /* NaN in bf16 and fp32 */
  CU(cuMemcpyHtoD(g->base, g->host, total));
}

/* Copies back; 0 if both guard bands kept their pattern. */
static int guarded_fetch(Guarded *g) {
  size_t total = (g->n + 2 * GUARD) * g->esize;
  CU(cuMemcpyDtoH(g->host, g->base, total));
  for (size_t i = 0; i < GUARD * g->esize; i++)
    if (g->host[i] != 0x5A || g->host[total - 1 - i] != 0x5A)
      return -1;
  return 0;
}

static void guarded_free(Guarded *g) {
  cuMemFree(g->base);
  free(g->host);
}

/* Both references, the ideal one on a second thread. */
typedef struct Refs {
  const ref_problem *p;
  double *o_ideal, *st_ideal;  /* [T, Ho, 128], [N, Ho, 128, 128] */
  uint16_t *o_staged;
  float *st_staged;
} Refs;

static void *ideal_thread(void *arg) {
  Refs *r = arg;
  ref_recurrence(r->p, r->o_ideal, r->st_ideal);
  return NULL;
}

static void references(Refs *r) {
  pthread_t th;
  pthread_create(&th, NULL, ideal_thread, r);
  ref_staged_ops(r->p, gdn_value_operands_f16() ? REF_OPERANDS_F16 : REF_OPERANDS_BF16,
                 r->o_staged, r->st_staged);
  pthread_join(th, NULL);
}

/* rel-RMS and max |x - ref| / rms(ref) of a kernel output against a ref. */
typedef struct Err {
  double rel_rms, max_rel;
  size_t at;
} Err;

static Err measure(const double *x, const double *ref, size_t n) {
  Err e = {ref_rel_rms(x, ref, n), 0, 0};
  double ss = 0;
  for (size_t i = 0; i < n; i++)
    ss += ref[i] * ref[i];
  double rms = sqrt(ss / (double)n);
  e.max_rel = ref_max_abs_err(x, ref, n, &e.at) / (rms > 0 ? rms : 1);
  return e;
}

static void lens_of(const Case *c, ref_rng *rng, int32_t *lens, int *n) {
  if (c->n > 0) {
    *n = c->n;
    memcpy(lens, c->lens, sizeof(int32_t) * (size_t)c->n);
    return;
  }
  if (c->n < 0) { /* a random split of lens[0] tokens: 1 each, the rest by random weights */
    *n = -c->n;
    double w[MAX_SEQ], sum = 0;
    for (int i = 0; i < *n; i++)
      sum += w[i] = ref_uniform(rng);
    const int32_t spare = c->lens[0] - *n; /* the tokens past each one's first */
    int32_t left = spare;
    for (int i = 0; i < *n; i++) {
      lens[i] = 1 + (int32_t)(w[i] / sum * spare);
      left -= lens[i] - 1;
    }
    lens[(int)(ref_uniform(rng) * *n) % *n] += left; /* rounding's remainder, >= 0 */
    return;
  }
  *n = c->lens[0] > 0 ? c->lens[0] : 30;
  const double longest = *n > MAX_SEQ ? 40 : 300; /* many short ones, or fewer longer */
  for (int i = 0; i < *n; i++)
    lens[i] = 1 + (int32_t)(ref_uniform(rng) * longest);
}

typedef struct Dev {
  CUdeviceptr q, k, v, alpha, beta, cu, h0;
  Guarded o, ht;
} Dev;

static void dev_upload(Dev *d, const ref_problem *p, int Ho, int want_final) {
  size_t T = (size_t)p->T, sz = (size_t)p->N * Ho * 128 * 128;
  d->q = gpu_upload(p->q, T * p->Hq * 128 * 2);
  d->k = gpu_upload(p->k, T * p->Hk * 128 * 2);
  d->v = gpu_upload(p->v, T * p->Hv * 128 * 2);
  d->alpha = gpu_upload(p->alpha, T * Ho * 4);
  d->beta = gpu_upload(p->beta, T * Ho * 4);
  d->cu = gpu_upload(p->cu_seqlens, (size_t)(p->N + 1) * 4);
  d->h0 = gpu_upload(p->initial_state, sz * 4);
  guarded_alloc(&d->o, T * Ho * 128, 2);
  memset(&d->ht, 0, sizeof d->ht);
  if (want_final)
    guarded_alloc(&d->ht, sz, 4);
}

static void dev_free(Dev *d) {
  CUdeviceptr all[] = {d->q, d->k, d->v, d->alpha, d->beta, d->cu, d->h0};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i])
      cuMemFree(all[i]);
  guarded_free(&d->o);
  if (d->ht.host)
    guarded_free(&d->ht);
}

/* Bounds: the ideal one from gdn.md; the staged one far tighter, since
 * the kernel and the staged reference round at the same points and differ
 * only in fp32 summation order, fused multiply-adds and libm ulps. */
#define IDEAL_BOUND 5e-3
#define STAGED_BOUND 1e-3
/* Largest single-element difference from the staged reference, over the
 * output's RMS: one misplaced element costs about 1. */
#define STAGED_MAX_BOUND 0.15

static int all_written_bf16(const Guarded *g) {
  const uint16_t *x = (const uint16_t *)(g->host + GUARD * 2);
  for (size_t i = 0; i < g->n; i++)
    if ((x[i] & 0x7F80) == 0x7F80 && (x[i] & 0x7F))
      return 0;
  return 1;
}

static int all_written_f32(const Guarded *g) {
  const float *x = (const float *)(g->host + GUARD * 4);
  for (size_t i = 0; i < g->n; i++)
    if (isnan(x[i]))
      return 0;
  return 1;
}

static int compare(const Case *c, const ref_problem *p, Dev *d, int Ho, char *msg, size_t len) {
  size_t no = (size_t)p->T * Ho * 128, ns = (size_t)p->N * Ho * 128 * 128;
  Refs r = {p, malloc(no * 8), c->want_final ? malloc(ns * 8) : NULL, malloc(no * 2),
            c->want_final ? malloc(ns * 4) : NULL};
  references(&r);
  double *x = malloc((no > ns ? no : ns) * 8), *y = malloc((no > ns ? no : ns) * 8);
  ref_bf16_to_f64_array((const uint16_t *)(d->o.host + GUARD * 2), x, no);
  Err oi = measure(x, r.o_ideal, no);
  ref_bf16_to_f64_array(r.o_staged, y, no);
  Err os = measure(x, y, no);
  Err si = {0, 0, 0}, ss = {0, 0, 0};
  if (c->want_final) {
    ref_f32_to_f64_array((const float *)(d->ht.host + GUARD * 4), x, ns);
    si = measure(x, r.st_ideal, ns);
    ref_f32_to_f64_array(r.st_staged, y, ns);
    ss = measure(x, y, ns);
  }
  snprintf(msg, len, "o %.2e (staged %.1e, max %.1e@%zu) | state %.2e (staged %.1e, max %.1e)",
           oi.rel_rms, os.rel_rms, os.max_rel, os.at, si.rel_rms, ss.rel_rms, ss.max_rel);
  int ok = oi.rel_rms <= IDEAL_BOUND && si.rel_rms <= IDEAL_BOUND && os.rel_rms <= STAGED_BOUND &&
           ss.rel_rms <= STAGED_BOUND && os.max_rel <= STAGED_MAX_BOUND &&
           ss.max_rel <= STAGED_MAX_BOUND;
  free(r.o_ideal);
  free(r.st_ideal);
  free(r.o_staged);
  free(r.st_staged);
  free(x);
  free(y);
  return ok;
}

static void run_case(gpu_tally *t, gdn_handle *h, const Case *c, ref_rng *rng) {
  int32_t lens[MAX_RANDOM_SEQ];
  int n;
  lens_of(c, rng, lens, &n);
  ref_problem_owned *po =
      ref_problem_random(rng, lens, n, c->Hq, c->Hk, c->Hv, c->flags & ~LARGE);
  const ref_problem *p = &po->p;
  if (c->flags & LARGE) {
    ref_scale_bf16(po->q, (size_t)p->T * c->Hq * 128, 13);
    ref_scale_bf16(po->v, (size_t)p->T * c->Hv * 128, 12);
  }
  ((ref_problem *)p)->scale = 0.73f;
  int Ho = ref_out_heads(c->Hq, c->Hv);
  Dev d;
  dev_upload(&d, p, Ho, c->want_final);
  gdn_prefill_args a = gdn_prefill_args_default();
  a.q = d.q, a.k = d.k, a.v = d.v, a.alpha = d.alpha, a.beta = d.beta, a.cu_seqlens = d.cu;
  a.initial_state = d.h0, a.final_state = c->want_final ? d.ht.dev : 0, a.o = d.o.dev;
  a.T = p->T, a.N = p->N, a.Hq = c->Hq, a.Hk = c->Hk, a.Hv = c->Hv, a.scale = p->scale;
  char msg[320];
  gdn_status s = gdn_prefill(h, &a, 0, 0, NULL);
  CU(cuCtxSynchronize());
  int ok = s == GDN_OK;
  if (!ok)
    snprintf(msg, sizeof msg, "gdn_prefill: %s: %s", gdn_status_string(s), gdn_last_error(h));
  if (ok && (guarded_fetch(&d.o) || (c->want_final && guarded_fetch(&d.ht)))) {
    ok = 0;
    snprintf(msg, sizeof msg, "a guard band around o or the final state was overwritten");
  }
  if (ok && (!all_written_bf16(&d.o) || (c->want_final && !all_written_f32(&d.ht)))) {
    ok = 0;
    snprintf(msg, sizeof msg, "an element of o or the final state was left unwritten (NaN)");
  }
  if (ok)
    ok = compare(c, p, &d, Ho, msg, sizeof msg);
  char name[128];
  snprintf(name, sizeof name, "%-36s T=%-5lld N=%-2d H=%d/%d/%d", c->name, (long long)p->T, p->N,
           c->Hq, c->Hk, c->Hv);
  gpu_record(t, ok, name, msg);
  dev_free(&d);
  ref_problem_free(po);
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x5eed;
  const char *filter = argc > 2 ? argv[2] : NULL;
  gpu_init(0);
  gdn_handle *h = gpu_handle(0, 0);
  ref_rng rng = ref_rng_seed(seed);
  gpu_tally t = {0, 0};
  printf("gdn cases, seed 0x%llx: rel-RMS vs the fp64 recurrence (bound %.0e), vs the staged "
         "reference (bound %.0e)\n", (unsigned long long)seed, IDEAL_BOUND, STAGED_BOUND);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (!filter || strstr(cases[i].name, filter))
      run_case(&t, h, &cases[i], &rng);
  gdn_destroy(h);
  return gpu_summary(&t, "gdn cases");
}
