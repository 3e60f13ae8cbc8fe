/* safety.c: libgdn's safety checks on the GPU (docs/safety.md).
 *   - isolation: in a packed batch, changing one sequence's inputs (its rows
 *     of q, k, v, alpha, beta and its initial state) leaves every other
 *     sequence's o and final state bit-identical, and nothing is written
 *     outside o and the final state (256-element guard bands); MHA, GQA and
 *     GVA;
 *   - stress: 10,000 calls on one handle, random valid shapes mixed with
 *     about one refused call in five, of every refusal kind: a refused call
 *     returns its status and launches nothing (o and the final state stay
 *     poisoned), no error sticks, guard bands hold, every 500th valid call
 *     (a small shape) matches the staged reference and the fp64 recurrence,
 *     and destroying the handle gives back all the device memory it took.
 * Run from the repository root: build/tests/gpu_safety [seed] [calls] [tmax]
 * (defaults 0x5afe, 10000, 2000; `make sanitize` runs 100 calls of up to
 * 256 tokens under compute-sanitizer).
 */
#include <string.h>
#include <time.h>

#include "gdn.h"
#include "gpucheck.h"
#include "ref.h"

#define GUARD 256            /* guard band, in elements, on each side    */
#define GUARD_BYTE 0x5A      /* the guard pattern                        */
#define POISON_BYTE 0xFF     /* all ones: NaN in bf16 and fp32           */
#define STATE (REF_D * REF_D) /* elements of one head's state            */
#define IDEAL_BOUND 5e-3     /* rel-RMS against the fp64 recurrence      */
#define STAGED_BOUND 1e-3    /* rel-RMS against the staged reference     */

/* ------------------------------------------------------------ helpers */
static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "out of host memory (%zu bytes)\n", bytes);
    exit(2);
  }
  return p;
}

static void *dup(const void *src, size_t bytes) {
  void *p = xmalloc(bytes);
  memcpy(p, src, bytes);
  return p;
}

static int64_t rand_in(ref_rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(ref_rng_next(r) % (uint64_t)(hi - lo + 1));
}

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------- guarded outputs */
/* A device buffer of n elements with GUARD elements of pattern before and
 * after; `dev` is the first element a call may write. */
typedef struct Guarded {
  CUdeviceptr base, dev;
  size_t n, esize;
} Guarded;

static void guarded_alloc(Guarded *g, size_t n, size_t esize) {
  g->n = n;
  g->esize = esize;
  g->base = gpu_alloc((n + 2 * GUARD) * esize);
  g->dev = g->base + GUARD * esize;
  CU(cuMemsetD8(g->base, GUARD_BYTE, (n + 2 * GUARD) * esize));
}

/* Before a call that covers `used` elements: the band right after them
 * gets the pattern again (an earlier, larger call wrote there), and the
 * covered elements get NaN when `poison` asks for it. */
static void guarded_prepare(const Guarded *g, size_t used, int poison) {
  CU(cuMemsetD8Async(g->dev + used * g->esize, GUARD_BYTE, GUARD * g->esize, NULL));
  if (poison && used)
    CU(cuMemsetD8Async(g->dev, POISON_BYTE, used * g->esize, NULL));
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char want) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != want)
      return 0;
  return 1;
}

/* 1 if the bands before element 0 and after element `used` kept the
 * pattern. */
static int guards_intact(const Guarded *g, size_t used) {
  unsigned char band[GUARD * 4];
  size_t bytes = GUARD * g->esize;
  CU(cuMemcpyDtoH(band, g->base, bytes));
  if (!all_bytes(band, bytes, GUARD_BYTE))
    return 0;
  CU(cuMemcpyDtoH(band, g->dev + used * g->esize, bytes));
  return all_bytes(band, bytes, GUARD_BYTE);
}

static void guarded_free(Guarded *g) { cuMemFree(g->base); }

static int has_nan_bf16(const uint16_t *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((x[i] & 0x7F80) == 0x7F80 && (x[i] & 0x7F))
      return 1;
  return 0;
}

static int has_nan_f32(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (isnan(x[i]))
      return 1;
  return 0;
}

/* ============================================================ isolation */
static const int32_t ISO_LENS[] = {130, 64, 1, 200, 77};
#define ISO_N 5

/* The host inputs of one batch; the sizes are the batch's. */
typedef struct Inputs {
  uint16_t *q, *k, *v;
  float *alpha, *beta, *h0;
} Inputs;

typedef struct Batch {
  int Hq, Hk, Hv, Ho;
  int64_t T;
  const int32_t *cu;          /* host cu_seqlens, N + 1 */
  size_t no, ns;              /* elements of o and of the final state */
  CUdeviceptr q, k, v, alpha, beta, cu_dev, h0, ws;
  size_t ws_bytes;
  Guarded o, ht;
  gdn_prefill_args a;
} Batch;

/* A view of a drawn problem's arrays (not owned). */
static Inputs inputs_of(const ref_problem_owned *p) {
  Inputs in = {p->q, p->k, p->v, p->alpha, p->beta, p->initial_state};
  return in;
}

static Inputs inputs_dup(const Batch *b, const Inputs *src) {
  size_t T = (size_t)b->T;
  Inputs in = {dup(src->q, T * b->Hq * REF_D * 2), dup(src->k, T * b->Hk * REF_D * 2),
               dup(src->v, T * b->Hv * REF_D * 2), dup(src->alpha, T * b->Ho * 4),
               dup(src->beta, T * b->Ho * 4), dup(src->h0, b->ns * 4)};
  return in;
}

static void inputs_free(Inputs *in) {
  free(in->q), free(in->k), free(in->v), free(in->alpha), free(in->beta), free(in->h0);
}

/* Rows [r0, r1) of a row-major array with `row` bytes per row. */
static void splice(void *dst, const void *src, size_t row, size_t r0, size_t r1) {
  memcpy((char *)dst + r0 * row, (const char *)src + r0 * row, (r1 - r0) * row);
}

/* Sequence s's inputs in `in` replaced by those of `alt`: its tokens' rows
 * of q, k, v, alpha and beta, and its initial state. */
static void inputs_splice(const Batch *b, Inputs *in, const ref_problem_owned *alt, int s) {
  size_t t0 = (size_t)b->cu[s], t1 = (size_t)b->cu[s + 1];
  splice(in->q, alt->q, (size_t)b->Hq * REF_D * 2, t0, t1);
  splice(in->k, alt->k, (size_t)b->Hk * REF_D * 2, t0, t1);
  splice(in->v, alt->v, (size_t)b->Hv * REF_D * 2, t0, t1);
  splice(in->alpha, alt->alpha, (size_t)b->Ho * 4, t0, t1);
  splice(in->beta, alt->beta, (size_t)b->Ho * 4, t0, t1);
  splice(in->h0, alt->initial_state, (size_t)b->Ho * STATE * 4, (size_t)s, (size_t)s + 1);
}

static void inputs_upload(const Batch *b, const Inputs *in) {
  size_t T = (size_t)b->T;
  gpu_copy_in(b->q, in->q, T * b->Hq * REF_D * 2);
  gpu_copy_in(b->k, in->k, T * b->Hk * REF_D * 2);
  gpu_copy_in(b->v, in->v, T * b->Hv * REF_D * 2);
  gpu_copy_in(b->alpha, in->alpha, T * b->Ho * 4);
  gpu_copy_in(b->beta, in->beta, T * b->Ho * 4);
  gpu_copy_in(b->h0, in->h0, b->ns * 4);
}

static void batch_make(Batch *b, gdn_handle *h, const ref_problem_owned *p, int Hq, int Hk,
                       int Hv) {
  memset(b, 0, sizeof *b);
  b->Hq = Hq, b->Hk = Hk, b->Hv = Hv, b->Ho = ref_out_heads(Hq, Hv);
  b->T = p->p.T;
  b->cu = p->cu_seqlens;
  b->no = (size_t)b->T * b->Ho * REF_D;
  b->ns = (size_t)ISO_N * b->Ho * STATE;
  size_t T = (size_t)b->T;
  b->q = gpu_alloc(T * Hq * REF_D * 2), b->k = gpu_alloc(T * Hk * REF_D * 2);
  b->v = gpu_alloc(T * Hv * REF_D * 2);
  b->alpha = gpu_alloc(T * b->Ho * 4), b->beta = gpu_alloc(T * b->Ho * 4);
  b->cu_dev = gpu_alloc((ISO_N + 1) * 4), b->h0 = gpu_alloc(b->ns * 4);
  gpu_copy_in(b->cu_dev, b->cu, (ISO_N + 1) * 4);
  guarded_alloc(&b->o, b->no, 2);
  guarded_alloc(&b->ht, b->ns, 4);
  gdn_prefill_args *a = &b->a;
  *a = gdn_prefill_args_default();
  a->q = b->q, a->k = b->k, a->v = b->v, a->alpha = b->alpha, a->beta = b->beta;
  a->cu_seqlens = b->cu_dev, a->initial_state = b->h0, a->final_state = b->ht.dev;
  a->o = b->o.dev;
  a->T = b->T, a->N = ISO_N, a->Hq = Hq, a->Hk = Hk, a->Hv = Hv, a->scale = 0.73f;
  if (gdn_workspace_size(h, a, &b->ws_bytes) != GDN_OK) {
    fprintf(stderr, "isolation: workspace: %s\n", gdn_last_error(h));
    exit(2);
  }
  b->ws = gpu_alloc(b->ws_bytes);
}

static void batch_free(Batch *b) {
  CUdeviceptr all[] = {b->q, b->k, b->v, b->alpha, b->beta, b->cu_dev, b->h0, b->ws};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cuMemFree(all[i]);
  guarded_free(&b->o);
  guarded_free(&b->ht);
}

typedef struct Result {
  uint16_t *o;
  float *st;
} Result;

/* One call with o and the final state poisoned; 0, or -1 with `why`. */
static int batch_run(gdn_handle *h, Batch *b, Result *r, char *why, size_t len) {
  guarded_prepare(&b->o, b->no, 1);
  guarded_prepare(&b->ht, b->ns, 1);
  gdn_status s = gdn_prefill(h, &b->a, b->ws, b->ws_bytes, NULL);
  CU(cuCtxSynchronize());
  if (s != GDN_OK) {
    snprintf(why, len, "gdn_prefill: %s: %s", gdn_status_string(s), gdn_last_error(h));
    return -1;
  }
  if (!guards_intact(&b->o, b->no) || !guards_intact(&b->ht, b->ns)) {
    snprintf(why, len, "a guard band around o or the final state was overwritten");
    return -1;
  }
  r->o = xmalloc(b->no * 2);
  r->st = xmalloc(b->ns * 4);
  CU(cuMemcpyDtoH(r->o, b->o.dev, b->no * 2));
  CU(cuMemcpyDtoH(r->st, b->ht.dev, b->ns * 4));
  if (has_nan_bf16(r->o, b->no) || has_nan_f32(r->st, b->ns)) {
    snprintf(why, len, "an element of o or the final state was left unwritten (NaN)");
    return -1;
  }
  return 0;
}

static void result_free(Result *r) {
  free(r->o);
  free(r->st);
  r->o = NULL, r->st = NULL;
}

/* Sequence s's rows of o and its final state are the same bits in x and y. */
static int seq_same(const Batch *b, const Result *x, const Result *y, int s) {
  size_t o0 = (size_t)b->cu[s] * b->Ho * REF_D, o1 = (size_t)b->cu[s + 1] * b->Ho * REF_D;
  size_t s0 = (size_t)s * b->Ho * STATE, sn = (size_t)b->Ho * STATE;
  return memcmp(x->o + o0, y->o + o0, (o1 - o0) * 2) == 0 &&
         memcmp(x->st + s0, y->st + s0, sn * 4) == 0;
}

/* Edits sequence j = i + 1 for every i but the last, against the unedited
 * batch run again each time; 0, or -1 with `why`. */
static int isolation_edits(gdn_handle *h, Batch *b, const Inputs *orig,
                           const ref_problem_owned *alt, char *why, size_t len) {
  for (int i = 0; i + 1 < ISO_N; i++) {
    int j = i + 1, rc = 0;
    Result before = {0}, after = {0};
    Inputs edited = inputs_dup(b, orig);
    inputs_splice(b, &edited, alt, j);
    inputs_upload(b, orig);
    rc = batch_run(h, b, &before, why, len);
    if (rc == 0) {
      inputs_upload(b, &edited);
      rc = batch_run(h, b, &after, why, len);
    }
    for (int s = 0; rc == 0 && s < ISO_N; s++) {
      if (s != j && !seq_same(b, &before, &after, s)) {
        snprintf(why, len, "editing sequence %d changed sequence %d's o or final state", j, s);
        rc = -1;
      }
    }
    /* Without this the test could pass by ignoring the edit altogether. */
    if (rc == 0 && seq_same(b, &before, &after, j)) {
      snprintf(why, len, "editing sequence %d changed nothing of its own output", j);
      rc = -1;
    }
    result_free(&before);
    result_free(&after);
    inputs_free(&edited);
    if (rc)
      return rc;
  }
  inputs_upload(b, orig);
  return 0;
}

static void test_isolation(gpu_tally *t, gdn_handle *h, ref_rng *rng, const char *name, int Hq,
                           int Hk, int Hv) {
  ref_problem_owned *p = ref_problem_random(rng, ISO_LENS, ISO_N, Hq, Hk, Hv, 0);
  ref_problem_owned *alt = ref_problem_random(rng, ISO_LENS, ISO_N, Hq, Hk, Hv, 0);
  if (!p || !alt) {
    gpu_record(t, 0, name, "could not draw the problem");
    ref_problem_free(p), ref_problem_free(alt);
    return;
  }
  Batch b;
  batch_make(&b, h, p, Hq, Hk, Hv);
  Inputs view = inputs_of(p), orig = inputs_dup(&b, &view);
  char why[256] = "";
  int ok = isolation_edits(h, &b, &orig, alt, why, sizeof why) == 0;
  char label[160];
  snprintf(label, sizeof label, "isolation %s %d/%d/%d, lengths 130 64 1 200 77", name, Hq, Hk,
           Hv);
  gpu_record(t, ok, label,
             ok ? "4 edited sequences, every other sequence bit-identical, guards intact" : why);
  inputs_free(&orig);
  batch_free(&b);
  ref_problem_free(p);
  ref_problem_free(alt);
}

/* =============================================================== stress */
#define S_T_MAX 2000
#define S_N_MAX 40
#define S_H_MAX 16
#define SMALL_T_MAX 300 /* reference-checked and refused calls */
#define SMALL_N_MAX 4
#define SMALL_H_MAX 4
#define CHECK_EVERY 500 /* every 500th valid call is reference-checked */
#define LEAK_TOLERANCE (2u << 20)
#define GDN_MSG_ROOM 512 /* a message's bytes, docs/api.md */

/* The refusal kinds: each breaks one rule of docs/api.md or of the
 * workspace, on an otherwise valid small call. */
enum {
  K_HEAD_DIM, K_HEADS_NONPOSITIVE, K_RELATION, K_HEADS_LIMIT, K_SCALE, K_T_NEGATIVE, K_N_RANGE,
  K_N_LIMIT, K_T_LIMIT, K_ROWS_LIMIT, K_NULL_REQUIRED, K_NULL_CU, K_MISALIGNED, K_WS_SMALL,
  K_WS_MISALIGNED, K_NULL_ARGS, K_NULL_HANDLE, K_COUNT
};

static const struct Kind {
  const char *name;
  gdn_status want;
} KINDS[K_COUNT] = {
    [K_HEAD_DIM] = {"head_dim != 128", GDN_ERR_INVALID_ARGUMENT},
    [K_HEADS_NONPOSITIVE] = {"a head count <= 0", GDN_ERR_INVALID_ARGUMENT},
    [K_RELATION] = {"heads not MHA/GQA/GVA", GDN_ERR_INVALID_ARGUMENT},
    [K_HEADS_LIMIT] = {"more than 65535 heads", GDN_ERR_UNSUPPORTED},
    [K_SCALE] = {"scale not finite", GDN_ERR_INVALID_ARGUMENT},
    [K_T_NEGATIVE] = {"T < 0", GDN_ERR_INVALID_ARGUMENT},
    [K_N_RANGE] = {"N outside 1..T", GDN_ERR_INVALID_ARGUMENT},
    [K_N_LIMIT] = {"N > 65535", GDN_ERR_UNSUPPORTED},
    [K_T_LIMIT] = {"T > 2^31 - 65", GDN_ERR_UNSUPPORTED},
    [K_ROWS_LIMIT] = {"workspace rows > 2^31 - 1", GDN_ERR_UNSUPPORTED},
    [K_NULL_REQUIRED] = {"q, k, v or o NULL", GDN_ERR_INVALID_ARGUMENT},
    [K_NULL_CU] = {"cu_seqlens NULL with N > 1", GDN_ERR_INVALID_ARGUMENT},
    [K_MISALIGNED] = {"a pointer not 16-byte aligned", GDN_ERR_INVALID_ARGUMENT},
    [K_WS_SMALL] = {"caller workspace too small", GDN_ERR_WORKSPACE},
    [K_WS_MISALIGNED] = {"caller workspace misaligned", GDN_ERR_INVALID_ARGUMENT},
    [K_NULL_ARGS] = {"NULL argument struct", GDN_ERR_INVALID_ARGUMENT},
    [K_NULL_HANDLE] = {"NULL handle", GDN_ERR_INVALID_ARGUMENT},
};

/* The largest shape's inputs on the host and the device, drawn once: a
 * call of any smaller shape reads a prefix of each array. Every element is
 * drawn as the benchmark draws it (k rows unit-norm, alpha in [0.8, 1],
 * ...), so any prefix is a well-formed input of any head count. */
typedef struct Pool {
  ref_problem_owned *host;
  CUdeviceptr q, k, v, alpha, beta, h0, cu, ws;
  size_t ws_bytes;
  Guarded o, ht;
  unsigned char *scratch;     /* host copy of a refused call's outputs */
} Pool;

#define O_MAX ((size_t)S_T_MAX * S_H_MAX * REF_D)
#define ST_MAX ((size_t)S_N_MAX * S_H_MAX * STATE)

static void pool_make(Pool *p, gdn_handle *h, ref_rng *rng) {
  int32_t lens[S_N_MAX];
  for (int i = 0; i < S_N_MAX; i++)
    lens[i] = S_T_MAX / S_N_MAX;
  p->host = ref_problem_random(rng, lens, S_N_MAX, S_H_MAX, S_H_MAX, S_H_MAX, 0);
  if (!p->host) {
    fprintf(stderr, "stress: could not draw the input pool\n");
    exit(2);
  }
  size_t T = S_T_MAX, H = S_H_MAX;
  p->q = gpu_alloc(T * H * REF_D * 2), p->k = gpu_alloc(T * H * REF_D * 2);
  p->v = gpu_alloc(T * H * REF_D * 2);
  p->alpha = gpu_alloc(T * H * 4), p->beta = gpu_alloc(T * H * 4), p->h0 = gpu_alloc(ST_MAX * 4);
  p->cu = gpu_alloc((S_N_MAX + 1) * 4);
  gpu_copy_in(p->q, p->host->q, T * H * REF_D * 2);
  gpu_copy_in(p->k, p->host->k, T * H * REF_D * 2);
  gpu_copy_in(p->v, p->host->v, T * H * REF_D * 2);
  gpu_copy_in(p->alpha, p->host->alpha, T * H * 4);
  gpu_copy_in(p->beta, p->host->beta, T * H * 4);
  gpu_copy_in(p->h0, p->host->initial_state, ST_MAX * 4);
  guarded_alloc(&p->o, O_MAX, 2);
  guarded_alloc(&p->ht, ST_MAX, 4);
  /* The caller workspace: the size of the largest call. */
  gdn_prefill_args a = gdn_prefill_args_default();
  a.q = p->q, a.k = p->k, a.v = p->v, a.o = p->o.dev, a.cu_seqlens = p->cu;
  a.T = S_T_MAX, a.N = S_N_MAX, a.Hq = a.Hk = a.Hv = S_H_MAX;
  if (gdn_workspace_size(h, &a, &p->ws_bytes) != GDN_OK) {
    fprintf(stderr, "stress: workspace: %s\n", gdn_last_error(h));
    exit(2);
  }
  p->ws = gpu_alloc(p->ws_bytes);
  p->scratch = xmalloc((size_t)SMALL_N_MAX * SMALL_H_MAX * STATE * 4);
}

static void pool_free(Pool *p) {
  CUdeviceptr all[] = {p->q, p->k, p->v, p->alpha, p->beta, p->h0, p->cu, p->ws};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cuMemFree(all[i]);
  guarded_free(&p->o);
  guarded_free(&p->ht);
  ref_problem_free(p->host);
  free(p->scratch);
}

/* One call: its arguments, its host cu_seqlens and how it is made. */
typedef struct Call {
  gdn_prefill_args a;
  int32_t cu[S_N_MAX + 1];
  int Ho;
  int own_ws;        /* the handle's workspace (workspace = 0) */
  int exact_ws;      /* a caller workspace of exactly the size asked */
} Call;

/* 0 = c0 < c1 < ... < cN = T: N - 1 distinct cuts drawn from 1 .. T - 1. */
static void draw_cuts(ref_rng *r, int64_t T, int N, int32_t *cu) {
  static unsigned char cut[S_T_MAX + 1];
  memset(cut, 0, (size_t)T + 1);
  for (int made = 0; made < N - 1;) {
    int64_t c = rand_in(r, 1, T - 1);
    if (!cut[c])
      cut[c] = 1, made++;
  }
  int n = 0;
  cu[n++] = 0;
  for (int64_t t = 1; t < T; t++)
    if (cut[t])
      cu[n++] = (int32_t)t;
  cu[n] = (int32_t)T;
}

/* MHA, GQA or GVA with every count <= hmax (GQA/GVA need hmax >= 2). */
static void draw_heads(ref_rng *r, int hmax, int *q, int *k, int *v) {
  int kind = hmax >= 2 ? (int)rand_in(r, 0, 2) : 0;
  if (kind == 0) {
    *q = *k = *v = (int)rand_in(r, 1, hmax);
    return;
  }
  int h = (int)rand_in(r, 1, hmax / 2), m = (int)rand_in(r, 2, hmax / h);
  *q = kind == 1 ? h * m : h;
  *k = h;
  *v = kind == 2 ? h * m : h;
}

/* T: mostly anywhere, often short, often at a chunk edge (64 c +- 1). */
static int64_t draw_T(ref_rng *r, int64_t tmin, int64_t tmax) {
  int64_t T;
  switch (rand_in(r, 0, 3)) {
  case 0: T = rand_in(r, tmin, tmax < 200 ? tmax : 200); break;
  case 1:
    if (tmax < 64) /* no chunk edge to stand at */
      return rand_in(r, tmin, tmax);
    T = 64 * rand_in(r, 1, tmax / 64);
    T += rand_in(r, -1, 1);
    break;
  default: T = rand_in(r, tmin, tmax); break;
  }
  return T < tmin ? tmin : T > tmax ? tmax : T;
}

/* A valid call of a random shape within the limits; `all` gives it every
 * optional tensor and a final state. */
static void draw_call(ref_rng *r, const Pool *p, Call *c, int64_t tmin, int64_t tmax, int nmax,
                      int hmax, int all) {
  memset(c, 0, sizeof *c);
  gdn_prefill_args *a = &c->a;
  *a = gdn_prefill_args_default();
  a->T = draw_T(r, tmin, tmax);
  a->N = (int)rand_in(r, 1, a->T < nmax ? a->T : nmax);
  draw_cuts(r, a->T, a->N, c->cu);
  draw_heads(r, hmax, &a->Hq, &a->Hk, &a->Hv);
  c->Ho = ref_out_heads(a->Hq, a->Hv);
  a->q = p->q, a->k = p->k, a->v = p->v, a->o = p->o.dev;
  a->alpha = all || rand_in(r, 0, 3) ? p->alpha : 0;
  a->beta = all || rand_in(r, 0, 3) ? p->beta : 0;
  a->initial_state = all || rand_in(r, 0, 1) ? p->h0 : 0;
  a->final_state = all || rand_in(r, 0, 1) ? p->ht.dev : 0;
  a->cu_seqlens = a->N == 1 && rand_in(r, 0, 1) ? 0 : p->cu; /* NULL: one sequence */
  a->scale = all ? 0.73f : (float)(4.0 * ref_uniform(r) - 2.0);
  a->force_generic = (int32_t)rand_in(r, 0, 1);
  c->own_ws = (int)rand_in(r, 0, 1);
  c->exact_ws = (int)rand_in(r, 0, 1);
}

static void describe(const Call *c, char *buf, size_t len) {
  const gdn_prefill_args *a = &c->a;
  snprintf(buf, len, "T=%lld N=%d H=%d/%d/%d alpha=%d beta=%d init=%d final=%d %s workspace",
           (long long)a->T, a->N, a->Hq, a->Hk, a->Hv, !!a->alpha, !!a->beta,
           !!a->initial_state, !!a->final_state, c->own_ws ? "handle's" : "caller's");
}

/* A fault in a kernel leaves the context unusable: say which call, stop. */
static void sync_or_die(const Call *c) {
  CUresult r = cuCtxSynchronize();
  if (r == CUDA_SUCCESS)
    return;
  char what[200];
  describe(c, what, sizeof what);
  const char *name = "?";
  cuGetErrorName(r, &name);
  fprintf(stderr, "stress: the device failed (%s) after the call %s\n", name, what);
  exit(2);
}

typedef struct Stress {
  gdn_handle *h;
  Pool *p;
  ref_rng *rng;
  int64_t tmax;               /* the longest valid call (S_T_MAX unless told) */
  long valid, invalid, own_ws, caller_ws, after_refusal, valid_failed, guard_failed;
  long kind_calls[K_COUNT], kind_failed[K_COUNT];
  char kind_why[K_COUNT][400];
  char valid_why[300], guard_why[300];
  int checks, checks_failed;
  double worst_staged, worst_ideal;
  char check_why[300];
} Stress;

/* The call as the test makes it: the handle's workspace or the pool's. */
static gdn_status issue(Stress *s, Call *c) {
  if (c->own_ws)
    return gdn_prefill(s->h, &c->a, 0, 0, NULL);
  size_t need;
  gdn_status st = gdn_workspace_size(s->h, &c->a, &need);
  if (st != GDN_OK)
    return st;
  if (need > s->p->ws_bytes) { /* the layout grew past the pool's: the handle's */
    c->own_ws = 1;
    return gdn_prefill(s->h, &c->a, 0, 0, NULL);
  }
  return gdn_prefill(s->h, &c->a, s->p->ws, c->exact_ws ? need : s->p->ws_bytes, NULL);
}

static double rel_rms_bf16(const uint16_t *x, const double *ref, size_t n) {
  double *y = xmalloc(n * sizeof *y);
  ref_bf16_to_f64_array(x, y, n);
  double e = ref_rel_rms(y, ref, n);
  free(y);
  return e;
}

static double rel_rms_f32(const float *x, const double *ref, size_t n) {
  double *y = xmalloc(n * sizeof *y);
  ref_f32_to_f64_array(x, y, n);
  double e = ref_rel_rms(y, ref, n);
  free(y);
  return e;
}

/* A reference-checked call's outputs against both references; 0 or -1. */
static int compare_refs(Stress *s, const Call *c, const uint16_t *o, const float *st) {
  const gdn_prefill_args *a = &c->a;
  const ref_problem_owned *h = s->p->host;
  ref_problem rp = {.T = a->T, .N = a->N, .Hq = a->Hq, .Hk = a->Hk, .Hv = a->Hv,
                    .scale = a->scale, .q = h->q, .k = h->k, .v = h->v,
                    .alpha = a->alpha ? h->alpha : NULL, .beta = a->beta ? h->beta : NULL,
                    .cu_seqlens = c->cu,
                    .initial_state = a->initial_state ? h->initial_state : NULL};
  size_t no = (size_t)a->T * c->Ho * REF_D, ns = (size_t)a->N * c->Ho * STATE;
  uint16_t *o_st = xmalloc(no * 2);
  float *st_st = xmalloc(ns * 4);
  double *o_id = xmalloc(no * 8), *st_id = xmalloc(ns * 8);
  if (ref_staged_ops(&rp, gdn_value_operands_f16() ? REF_OPERANDS_F16 : REF_OPERANDS_BF16,
                     o_st, st_st) || ref_recurrence(&rp, o_id, st_id)) {
    snprintf(s->check_why, sizeof s->check_why, "a reference refused the problem");
    free(o_st), free(st_st), free(o_id), free(st_id);
    return -1;
  }
  int rc = 0;
  double *o_st64 = xmalloc(no * 8), *st_st64 = xmalloc(ns * 8);
  ref_bf16_to_f64_array(o_st, o_st64, no);
  ref_f32_to_f64_array(st_st, st_st64, ns);
  double so = rel_rms_bf16(o, o_st64, no), ss = rel_rms_f32(st, st_st64, ns);
  double io = rel_rms_bf16(o, o_id, no), is = rel_rms_f32(st, st_id, ns);
  double staged = so > ss ? so : ss, ideal = io > is ? io : is;
  /* NaN compares false: a NaN error is a failure, not a pass. */
  if (!(staged <= STAGED_BOUND && ideal <= IDEAL_BOUND))
    rc = -1;
  if (!(staged <= s->worst_staged))
    s->worst_staged = staged;
  if (!(ideal <= s->worst_ideal))
    s->worst_ideal = ideal;
  if (rc && !s->check_why[0]) {
    char what[200];
    describe(c, what, sizeof what);
    snprintf(s->check_why, sizeof s->check_why,
             "%s: staged o %.2e state %.2e, ideal o %.2e state %.2e", what, so, ss, io, is);
  }
  free(o_st), free(st_st), free(o_id), free(st_id), free(o_st64), free(st_st64);
  return rc;
}

/* A valid call: GDN_OK, guards intact; `check`: poisoned outputs all
 * written and matching both references. */
static void valid_call(Stress *s, int after_refusal, int check) {
  Call c;
  if (check)
    draw_call(s->rng, s->p, &c, 1, SMALL_T_MAX, SMALL_N_MAX, SMALL_H_MAX, 1);
  else
    draw_call(s->rng, s->p, &c, 1, s->tmax, S_N_MAX, S_H_MAX, 0);
  gdn_prefill_args *a = &c.a;
  size_t no = (size_t)a->T * c.Ho * REF_D, ns = (size_t)a->N * c.Ho * STATE;
  gpu_copy_in(s->p->cu, c.cu, (size_t)(a->N + 1) * 4);
  guarded_prepare(&s->p->o, no, check);
  guarded_prepare(&s->p->ht, ns, check);
  gdn_status st = issue(s, &c);
  sync_or_die(&c);
  s->valid++;
  if (c.own_ws)
    s->own_ws++;
  else
    s->caller_ws++;
  s->after_refusal += after_refusal;
  char what[200];
  describe(&c, what, sizeof what);
  if (st != GDN_OK) {
    if (!s->valid_failed++)
      snprintf(s->valid_why, sizeof s->valid_why, "%s: %s: %s", what, gdn_status_string(st),
               gdn_last_error(s->h));
    return;
  }
  int guards = guards_intact(&s->p->o, no) && (!a->final_state || guards_intact(&s->p->ht, ns));
  if (!guards && !s->guard_failed++)
    snprintf(s->guard_why, sizeof s->guard_why, "%s: a guard band was overwritten", what);
  if (!check)
    return;
  s->checks++;
  uint16_t *o = xmalloc(no * 2);
  float *fs = xmalloc(ns * 4);
  CU(cuMemcpyDtoH(o, s->p->o.dev, no * 2));
  CU(cuMemcpyDtoH(fs, s->p->ht.dev, ns * 4));
  if (has_nan_bf16(o, no) || has_nan_f32(fs, ns)) {
    if (!s->check_why[0])
      snprintf(s->check_why, sizeof s->check_why, "%s: an output element left unwritten", what);
    s->checks_failed++;
  } else if (compare_refs(s, &c, o, fs)) {
    s->checks_failed++;
  }
  free(o);
  free(fs);
}

/* Breaks one rule of a valid call (kind k). The workspace and handle
 * kinds change what issue_refused passes instead. */
static void break_rule(ref_rng *r, int k, gdn_prefill_args *a) {
  static const int32_t head_dims[] = {64, 0, 256, -128, 129};
  static const uint32_t scales[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0xffc00001u};
  switch (k) {
  case K_HEAD_DIM: a->head_dim = head_dims[rand_in(r, 0, 4)]; break;
  case K_HEADS_NONPOSITIVE: {
    int32_t *h[] = {&a->Hq, &a->Hk, &a->Hv};
    int32_t *which = h[rand_in(r, 0, 2)]; /* draws in a fixed order */
    *which = (int32_t)rand_in(r, -3, 0);
    break;
  }
  case K_RELATION: a->Hq = 6, a->Hk = 4, a->Hv = (int32_t)rand_in(r, 3, 4); break;
  case K_HEADS_LIMIT: /* a valid relation, one side past the grid */
    if (rand_in(r, 0, 1))
      a->Hq = 65536, a->Hk = a->Hv = 1; /* GQA */
    else
      a->Hq = a->Hk = 1, a->Hv = 65536; /* GVA */
    break;
  case K_SCALE: memcpy(&a->scale, &scales[rand_in(r, 0, 3)], 4); break;
  case K_T_NEGATIVE: a->T = rand_in(r, 0, 1) ? -1 : INT64_MIN; break;
  case K_N_RANGE: a->N = rand_in(r, 0, 1) ? (int32_t)rand_in(r, -2, 0) : (int32_t)a->T + 1; break;
  case K_N_LIMIT: a->T = 100000, a->N = 65536; break;
  case K_T_LIMIT: a->T = (int64_t)INT32_MAX - 63 + rand_in(r, 0, 1000), a->N = 1; break;
  case K_ROWS_LIMIT: a->T = (int64_t)INT32_MAX - 64, a->N = 1, a->Hq = a->Hk = a->Hv = 4; break;
  case K_NULL_REQUIRED: {
    uint64_t *p[] = {&a->q, &a->k, &a->v, &a->o};
    *p[rand_in(r, 0, 3)] = 0;
    break;
  }
  case K_NULL_CU: a->cu_seqlens = 0, a->N = 2; break; /* the base has T >= 2 */
  case K_MISALIGNED: {
    uint64_t *p[] = {&a->q, &a->k, &a->v, &a->o, &a->alpha, &a->beta, &a->cu_seqlens,
                     &a->initial_state, &a->final_state};
    uint64_t *which = p[rand_in(r, 0, 8)];
    *which += (uint64_t)rand_in(r, 1, 15);
    break;
  }
  default: break;
  }
}

static gdn_status issue_refused(Stress *s, int k, Call *c) {
  size_t need = 0;
  if (k == K_WS_SMALL || k == K_WS_MISALIGNED)
    if (gdn_workspace_size(s->h, &c->a, &need) != GDN_OK)
      return GDN_ERR_CUDA; /* the base call is valid: this cannot be */
  switch (k) {
  case K_WS_SMALL: return gdn_prefill(s->h, &c->a, s->p->ws, need - 16, NULL);
  case K_WS_MISALIGNED: return gdn_prefill(s->h, &c->a, s->p->ws + 8, need, NULL);
  case K_NULL_ARGS: return gdn_prefill(s->h, NULL, s->p->ws, s->p->ws_bytes, NULL);
  case K_NULL_HANDLE: return gdn_prefill(NULL, &c->a, s->p->ws, s->p->ws_bytes, NULL);
  default: return c->own_ws ? gdn_prefill(s->h, &c->a, 0, 0, NULL)
                            : gdn_prefill(s->h, &c->a, s->p->ws, s->p->ws_bytes, NULL);
  }
}

/* 1 if the first `bytes` of d still hold the poison. */
static int still_poisoned(Stress *s, CUdeviceptr d, size_t bytes) {
  CU(cuMemcpyDtoH(s->p->scratch, d, bytes));
  return all_bytes(s->p->scratch, bytes, POISON_BYTE);
}

/* The handle's message is not cleared by a success, so a refused call
 * could show an older sentence as its own. A known failure just before
 * ("bytes is NULL") tells them apart; a NULL-handle call must leave it. */
static void mark_message(Stress *s, char *marker, size_t len) {
  gdn_workspace_size(s->h, NULL, NULL);
  snprintf(marker, len, "%s", gdn_last_error(s->h));
}

/* A refused call of kind k on a small valid base: its status, its own
 * message, o and the final state as poisoned as before, guards intact. */
static void refused_call(Stress *s, int k) {
  Call c;
  draw_call(s->rng, s->p, &c, 2, SMALL_T_MAX, SMALL_N_MAX, SMALL_H_MAX, 1);
  size_t no = (size_t)c.a.T * c.Ho * REF_D, ns = (size_t)c.a.N * c.Ho * STATE;
  gpu_copy_in(s->p->cu, c.cu, (size_t)(c.a.N + 1) * 4);
  guarded_prepare(&s->p->o, no, 1);
  guarded_prepare(&s->p->ht, ns, 1);
  char before[200], marker[GDN_MSG_ROOM];
  describe(&c, before, sizeof before);
  break_rule(s->rng, k, &c.a);
  mark_message(s, marker, sizeof marker);
  gdn_status st = issue_refused(s, k, &c);
  sync_or_die(&c);
  s->invalid++;
  s->kind_calls[k]++;
  const char *msg = gdn_last_error(s->h);
  int own_msg = k == K_NULL_HANDLE ? strcmp(msg, marker) == 0
                                   : msg[0] && strcmp(msg, marker) != 0;
  int untouched = still_poisoned(s, s->p->o.dev, no * 2) &&
                  still_poisoned(s, s->p->ht.dev, ns * 4) && guards_intact(&s->p->o, no) &&
                  guards_intact(&s->p->ht, ns);
  if ((st != KINDS[k].want || !own_msg || !untouched) && !s->kind_failed[k]++)
    snprintf(s->kind_why[k], sizeof s->kind_why[k], "%s: status %s (want %s)%s%s; \"%s\"",
             before, gdn_status_string(st), gdn_status_string(KINDS[k].want),
             own_msg ? "" : ", not its own message",
             untouched ? "" : ", and o or the final state was written", msg);
}

static void stress_report(gpu_tally *t, const Stress *s, long calls, double secs) {
  char d[400];
  for (int k = 0; k < K_COUNT; k++) {
    char label[120];
    snprintf(label, sizeof label, "stress refusal: %s", KINDS[k].name);
    snprintf(d, sizeof d, "%ld calls, all %s, nothing written", s->kind_calls[k],
             gdn_status_string(KINDS[k].want));
    gpu_record(t, s->kind_calls[k] > 0 && !s->kind_failed[k], label,
               s->kind_failed[k] ? s->kind_why[k] : s->kind_calls[k] ? d : "never drawn");
  }
  snprintf(d, sizeof d, "%ld of %ld calls in %.1f s; %ld with the handle's workspace, %ld with "
           "a caller's; %ld right after a refusal", s->valid, calls, secs, s->own_ws,
           s->caller_ws, s->after_refusal);
  gpu_record(t, !s->valid_failed, "stress: every valid call returns GDN_OK",
             s->valid_failed ? s->valid_why : d);
  gpu_record(t, !s->guard_failed, "stress: guard bands intact after every valid call",
             s->guard_failed ? s->guard_why : "");
  snprintf(d, sizeof d, "%d checks; worst rel-RMS staged %.2e (bound %.0e), fp64 %.2e (bound "
           "%.0e)", s->checks, s->worst_staged, STAGED_BOUND, s->worst_ideal, IDEAL_BOUND);
  gpu_record(t, s->checks > 0 && !s->checks_failed,
             "stress: every 500th valid call vs the references",
             s->checks_failed ? s->check_why : d);
}

static size_t free_bytes(void) {
  size_t f, total;
  CU(cuCtxSynchronize());
  CU(cuMemGetInfo(&f, &total));
  return f;
}

static void test_stress(gpu_tally *t, ref_rng *rng, long calls, int64_t tmax) {
  double t0 = now_s();
  /* A probe handle only sizes the pool's workspace; the tested handle is
   * created after every test buffer exists, so that the free memory before
   * its creation and after its destruction can be compared. */
  gdn_handle *h;
  char err[512];
  if (gdn_create_ex(0, 0, &h, err, sizeof err) != GDN_OK) {
    gpu_record(t, 0, "stress: gdn_create", err);
    return;
  }
  Pool p;
  pool_make(&p, h, rng);
  gdn_destroy(h);
  size_t free_before = free_bytes();
  if (gdn_create_ex(0, 0, &h, err, sizeof err) != GDN_OK) {
    gpu_record(t, 0, "stress: gdn_create", err);
    pool_free(&p);
    return;
  }
  Stress s;
  memset(&s, 0, sizeof s);
  s.h = h, s.p = &p, s.rng = rng, s.tmax = tmax;
  double t1 = now_s();
  /* One call in each five is refused, at a random place in the five, the
   * kinds in turn: every kind comes up in any run of 85 calls or more. The
   * first valid call and every 500th after it are reference-checked. */
  int last_refused = 0;
  long refuse_at = -1;
  for (long i = 0; i < calls; i++) {
    if (i % 5 == 0)
      refuse_at = i + rand_in(rng, 0, 4);
    if (i == refuse_at) {
      refused_call(&s, (int)(s.invalid % K_COUNT));
      last_refused = 1;
    } else {
      valid_call(&s, last_refused, s.valid % CHECK_EVERY == 0);
      last_refused = 0;
    }
  }
  double secs = now_s() - t1;
  size_t free_loaded = free_bytes();
  gdn_destroy(h);
  size_t free_after = free_bytes();
  stress_report(t, &s, calls, secs);
  char d[300];
  snprintf(d, sizeof d, "free %.1f MiB before gdn_create, %.1f MiB before gdn_destroy, %.1f MiB "
           "after (tolerance %u MiB for allocator granularity)", (double)free_before / 1048576.0,
           (double)free_loaded / 1048576.0, (double)free_after / 1048576.0,
           LEAK_TOLERANCE >> 20);
  gpu_record(t, free_after + LEAK_TOLERANCE >= free_before,
             "stress: gdn_destroy gives back the handle's device memory", d);
  pool_free(&p);
  printf("stress: %.1f s in all (pool %.1f s)\n", now_s() - t0, t1 - t0);
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x5afe;
  long calls = argc > 2 ? strtol(argv[2], NULL, 0) : 10000;
  int64_t tmax = argc > 3 ? strtoll(argv[3], NULL, 0) : S_T_MAX;
  if (calls < 0 || tmax < 1 || tmax > S_T_MAX) {
    fprintf(stderr, "usage: gpu_safety [seed] [calls >= 0] [longest call, 1..%d]\n", S_T_MAX);
    return 2;
  }
  gpu_init(0);
  ref_rng rng = ref_rng_seed(seed);
  gpu_tally t = {0, 0};
  printf("gdn safety, seed 0x%llx, %ld stress calls of up to %lld tokens\n",
         (unsigned long long)seed, calls, (long long)tmax);
  gdn_handle *h = gpu_handle(0, 0);
  test_isolation(&t, h, &rng, "MHA", 4, 4, 4);
  test_isolation(&t, h, &rng, "GQA", 8, 2, 2);
  test_isolation(&t, h, &rng, "GVA", 2, 2, 8);
  gdn_destroy(h);
  test_stress(&t, &rng, calls, tmax);
  return gpu_summary(&t, "safety");
}
