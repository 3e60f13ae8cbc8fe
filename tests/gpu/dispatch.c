/* dispatch.c: the public call under the ways serving engines call it.
 *   - graph: calls captured in a CUDA graph (global capture mode), of the
 *     two-kernel route and of the one-grid one, hold no memset node and,
 *     replayed with fresh inputs, equal eager calls bit for bit;
 *   - threads: two host threads on two streams at once, on one handle,
 *     equal serial calls bit for bit;
 *   - determinism: the same inputs twice give bit-identical outputs;
 *   - NVRTC: a handle whose kernels NVRTC compiled from the embedded source
 *     gives the same results as one that loaded the embedded cubin;
 *   - trace: a GDN_CREATE_TRACE handle gives the same results again, and its
 *     timeline has every scan CTA with its sequence's chunks in time order
 *     and every used prepare unit, and nothing else.
 * Run from the repository root: build/tests/gpu_dispatch [seed].
 */
#include <pthread.h>
#include <string.h>

#include "gdn.h"
#include "gpucheck.h"
#include "ref.h"

/* One problem's device buffers; inputs can be redrawn in place. */
typedef struct Prob {
  gdn_prefill_args a;
  size_t no, ns;                /* o and final-state elements */
  CUdeviceptr ws;
  size_t ws_bytes;
} Prob;

/* Draws fresh inputs of the same shapes into the problem's buffers. */
static void redraw(Prob *pr, ref_rng *rng, const int32_t *lens, int n, int H, int Hv) {
  ref_problem_owned *po = ref_problem_random(rng, lens, n, H, H, Hv, 0);
  const ref_problem *p = &po->p;
  int Ho = H > Hv ? H : Hv;
  size_t T = (size_t)p->T;
  gpu_copy_in(pr->a.q, p->q, T * H * 256);
  gpu_copy_in(pr->a.k, p->k, T * H * 256);
  gpu_copy_in(pr->a.v, p->v, T * Hv * 256);
  gpu_copy_in(pr->a.alpha, p->alpha, T * Ho * 4);
  gpu_copy_in(pr->a.beta, p->beta, T * Ho * 4);
  gpu_copy_in(pr->a.cu_seqlens, p->cu_seqlens, (size_t)(n + 1) * 4);
  gpu_copy_in(pr->a.initial_state, p->initial_state, pr->ns * 4);
  ref_problem_free(po);
}

static void prob_make(Prob *pr, gdn_handle *h, const int32_t *lens, int n, int H, int Hv) {
  int64_t T = 0;
  for (int i = 0; i < n; i++)
    T += lens[i];
  int Ho = H > Hv ? H : Hv;
  memset(pr, 0, sizeof *pr);
  pr->no = (size_t)T * Ho * 128;
  pr->ns = (size_t)n * Ho * 128 * 128;
  gdn_prefill_args *a = &pr->a;
  *a = gdn_prefill_args_default();
  a->T = T, a->N = n, a->Hq = H, a->Hk = H, a->Hv = Hv, a->scale = 0.73f;
  a->q = gpu_alloc((size_t)T * H * 256), a->k = gpu_alloc((size_t)T * H * 256);
  a->v = gpu_alloc((size_t)T * Hv * 256);
  a->alpha = gpu_alloc((size_t)T * Ho * 4), a->beta = gpu_alloc((size_t)T * Ho * 4);
  a->cu_seqlens = gpu_alloc((size_t)(n + 1) * 4);
  a->initial_state = gpu_alloc(pr->ns * 4), a->final_state = gpu_alloc(pr->ns * 4);
  a->o = gpu_alloc(pr->no * 2);
  if (gdn_workspace_size(h, a, &pr->ws_bytes) != GDN_OK) {
    fprintf(stderr, "workspace: %s\n", gdn_last_error(h));
    exit(2);
  }
  pr->ws = gpu_alloc(pr->ws_bytes);
}

static void prob_free(Prob *pr) {
  CUdeviceptr all[] = {pr->a.q, pr->a.k, pr->a.v, pr->a.alpha, pr->a.beta, pr->a.cu_seqlens,
                       pr->a.initial_state, pr->a.final_state, pr->a.o, pr->ws};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cuMemFree(all[i]);
}

/* o and the final state, copied to the host. */
typedef struct Result {
  uint16_t *o;
  float *st;
} Result;

static Result fetch(const Prob *pr) {
  Result r = {malloc(pr->no * 2), malloc(pr->ns * 4)};
  CU(cuMemcpyDtoH(r.o, pr->a.o, pr->no * 2));
  CU(cuMemcpyDtoH(r.st, pr->a.final_state, pr->ns * 4));
  return r;
}

static int same(const Prob *pr, Result x, Result y) {
  return memcmp(x.o, y.o, pr->no * 2) == 0 && memcmp(x.st, y.st, pr->ns * 4) == 0;
}

static void result_free(Result r) {
  free(r.o);
  free(r.st);
}

static void poison(const Prob *pr, CUstream st) {
  CU(cuMemsetD8Async(pr->a.o, 0xFF, pr->no * 2, st));
  CU(cuMemsetD8Async(pr->a.final_state, 0xFF, pr->ns * 4, st));
}

static void call(gdn_handle *h, const Prob *pr, CUdeviceptr ws, CUstream st) {
  gdn_status s = gdn_prefill(h, &pr->a, ws, ws ? pr->ws_bytes : 0, st);
  if (s != GDN_OK) {
    fprintf(stderr, "gdn_prefill: %s\n", gdn_last_error(h));
    exit(2);
  }
}

/* One call on `h` (the problem's workspace, default stream), its outputs
 * after it: poisoned first, so that an output the call did not write shows. */
static Result call_fetch(gdn_handle *h, const Prob *pr) {
  poison(pr, NULL);
  call(h, pr, pr->ws, NULL);
  CU(cuCtxSynchronize());
  return fetch(pr);
}

static const int32_t LENS[] = {300, 1, 200, 64, 129};
#define NLENS 5

/* A problem's shape: sequence lengths and head counts (Hq = Hk = H). */
typedef struct Shape {
  const int32_t *lens;
  int n, H, Hv;
  const char *name;
} Shape;

/* The graph's nodes of type `ty`. A captured call should hold kernel nodes
 * and no memset node: a one-grid call's ready flags come from the
 * handle's arena, zero already, instead of a zeroed workspace. */
static int graph_nodes(CUgraph g, CUgraphNodeType ty) {
  size_t n = 0;
  CU(cuGraphGetNodes(g, NULL, &n));
  CUgraphNode *nodes = malloc(n * sizeof *nodes);
  CU(cuGraphGetNodes(g, nodes, &n));
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    CUgraphNodeType t;
    CU(cuGraphNodeGetType(nodes[i], &t));
    count += t == ty;
  }
  free(nodes);
  return count;
}

/* Captures one call (caller's or handle's workspace), replays it with
 * three fresh input sets, and compares each replay with an eager call:
 * a replay that found a flag left set by the one before would read that
 * one's workspace tiles, and differ. */
static void test_graph(gpu_tally *t, gdn_handle *h, ref_rng *rng, int own_ws, const Shape *sh) {
  Prob pr;
  prob_make(&pr, h, sh->lens, sh->n, sh->H, sh->Hv);
  CUstream st;
  CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  CUdeviceptr ws = own_ws ? 0 : pr.ws;
  redraw(&pr, rng, sh->lens, sh->n, sh->H, sh->Hv);
  call(h, &pr, ws, st); /* grows the handle's workspace before capture */
  CU(cuStreamSynchronize(st));
  CUgraph g;
  CUgraphExec ge;
  CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
  gdn_status s = gdn_prefill(h, &pr.a, ws, ws ? pr.ws_bytes : 0, st);
  CU(cuStreamEndCapture(st, &g));
  int ok = s == GDN_OK, kernels = 0;
  char msg[200] = "";
  if (!ok)
    snprintf(msg, sizeof msg, "capture failed: %s", gdn_last_error(h));
  if (ok) {
    kernels = graph_nodes(g, CU_GRAPH_NODE_TYPE_KERNEL);
    int memsets = graph_nodes(g, CU_GRAPH_NODE_TYPE_MEMSET);
    if (memsets || kernels == 0) {
      ok = 0;
      snprintf(msg, sizeof msg, "the captured call holds %d memset and %d kernel node(s)",
               memsets, kernels);
    }
  }
  if (s == GDN_OK)
    CU(cuGraphInstantiate(&ge, g, 0));
  for (int rep = 0; ok && rep < 3; rep++) {
    redraw(&pr, rng, sh->lens, sh->n, sh->H, sh->Hv);
    poison(&pr, st);
    CU(cuGraphLaunch(ge, st));
    CU(cuStreamSynchronize(st));
    Result replay = fetch(&pr);
    poison(&pr, st);
    call(h, &pr, ws, st);
    CU(cuStreamSynchronize(st));
    Result eager = fetch(&pr);
    if (!same(&pr, replay, eager)) {
      ok = 0;
      snprintf(msg, sizeof msg, "replay %d differs from the eager call", rep);
    }
    result_free(replay);
    result_free(eager);
  }
  if (s == GDN_OK) {
    cuGraphExecDestroy(ge);
    cuGraphDestroy(g);
  }
  char name[160];
  snprintf(name, sizeof name, "graph capture of %s (%d kernel node(s)), %s workspace", sh->name,
           kernels, own_ws ? "the handle's" : "a caller's");
  gpu_record(t, ok, name, msg);
  cuStreamDestroy(st);
  prob_free(&pr);
}

typedef struct Worker {
  gdn_handle *h;
  Prob *pr;
  CUcontext ctx;
  int reps;
} Worker;

static void *worker(void *arg) {
  Worker *w = arg;
  CU(cuCtxSetCurrent(w->ctx));
  CUstream st;
  CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < w->reps; i++)
    call(w->h, w->pr, w->pr->ws, st);
  CU(cuStreamSynchronize(st));
  cuStreamDestroy(st);
  return NULL;
}

/* Two threads, two streams, two problems at once on one handle. */
static void test_threads(gpu_tally *t, gdn_handle *h, CUcontext ctx, ref_rng *rng) {
  static const int32_t lens2[] = {1000, 77, 512};
  Prob a, b;
  prob_make(&a, h, LENS, NLENS, 4, 4);
  prob_make(&b, h, lens2, 3, 8, 16);
  redraw(&a, rng, LENS, NLENS, 4, 4);
  redraw(&b, rng, lens2, 3, 8, 16);
  call(h, &a, a.ws, NULL);
  call(h, &b, b.ws, NULL);
  CU(cuCtxSynchronize());
  Result sa = fetch(&a), sb = fetch(&b);
  poison(&a, NULL);
  poison(&b, NULL);
  CU(cuCtxSynchronize());
  Worker wa = {h, &a, ctx, 20}, wb = {h, &b, ctx, 20};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, worker, &wa);
  pthread_create(&tb, NULL, worker, &wb);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  Result ca = fetch(&a), cb = fetch(&b);
  int ok = same(&a, sa, ca) && same(&b, sb, cb);
  gpu_record(t, ok, "two threads, two streams, one handle",
             ok ? "40 calls equal the serial results bit for bit" : "results differ from serial calls");
  result_free(sa), result_free(sb), result_free(ca), result_free(cb);
  prob_free(&a);
  prob_free(&b);
}

static void test_determinism(gpu_tally *t, gdn_handle *h, ref_rng *rng) {
  Prob pr;
  prob_make(&pr, h, LENS, NLENS, 8, 8);
  redraw(&pr, rng, LENS, NLENS, 8, 8);
  call(h, &pr, pr.ws, NULL);
  CU(cuCtxSynchronize());
  Result x = fetch(&pr);
  poison(&pr, NULL);
  call(h, &pr, 0, NULL);
  CU(cuCtxSynchronize());
  Result y = fetch(&pr);
  gpu_record(t, same(&pr, x, y), "determinism: the same inputs twice", "");
  result_free(x);
  result_free(y);
  prob_free(&pr);
}

static void test_nvrtc(gpu_tally *t, gdn_handle *h, ref_rng *rng) {
  gdn_handle *hn;
  char err[512];
  if (gdn_create_ex(0, GDN_CREATE_NVRTC, &hn, err, sizeof err) != GDN_OK) {
    gpu_record(t, 0, "NVRTC handle", err);
    return;
  }
  Prob pr;
  prob_make(&pr, h, LENS, NLENS, 4, 8);
  redraw(&pr, rng, LENS, NLENS, 4, 8);
  Result x = call_fetch(h, &pr), y = call_fetch(hn, &pr);
  int ok = gdn_uses_nvrtc(hn) && !gdn_uses_nvrtc(h) && same(&pr, x, y);
  gpu_record(t, ok, "NVRTC-compiled kernels equal the embedded cubin's", "");
  result_free(x);
  result_free(y);
  prob_free(&pr);
  gdn_destroy(hn);
}

/* The timeline of one call: scan CTA (rank * Ho + head) * 2 + half scans
 * the rank-th longest sequence; each of its chunks waits after the one
 * before, and so does each of its output chunks; unit slot * Ho + head
 * exists for every used chunk slot, its stages in order inside it. */
static int trace_consistent(const gdn_trace *t, const int32_t *lens, int n, int Ho, char *why,
                            size_t len) {
  /* A thread's stamps in order, up to a small step back: one of 4192
   * units on the H200 read %globaltimer 64 ns earlier at a stage than at
   * the stage before, in the same thread. */
  const uint64_t slack = 256;
  int sorted[NLENS], units = 0, entries = 0;
  for (int i = 0; i < n; i++) {
    int rank = 0;
    for (int j = 0; j < n; j++)
      rank += lens[j] > lens[i] || (lens[j] == lens[i] && j < i);
    sorted[rank] = (lens[i] + 63) / 64;
    units += sorted[rank] * Ho;
  }
  for (int i = 0; i < GDN_TRACE_CTAS; i++) {
    const uint64_t(*s)[2] = t->scan[i];
    int want = i < 2 * Ho * n ? sorted[i / (2 * Ho)] : 0;
    if (!want) {
      if (s[0][0] || s[GDN_TRACE_ROWS - 1][0] || t->out[i][0][0] || t->out[i][1][0] ||
          t->prod[i][0][0])
        return snprintf(why, len, "CTA %d of %d has a timeline", i, 2 * Ho * n), 0;
      continue;
    }
    if ((int)s[GDN_TRACE_ROWS - 1][1] != want)
      return snprintf(why, len, "CTA %d: %d chunks, want %d", i, (int)s[GDN_TRACE_ROWS - 1][1],
                      want), 0;
    /* Entry, then the state's loads, then the chain's first stamp, in one
     * thread (a CTA of lanes stamps its first sequence's entry alone). */
    const uint64_t *e = t->out[i][0];
    if (e[0] && (e[1] + slack < e[0] || s[0][0] + slack < e[1]))
      return snprintf(why, len, "CTA %d: entry stamps out of order", i), 0;
    entries += e[0] != 0;
    uint64_t prev = s[0][0];
    for (int c = 0; c < want; c++) {
      if (!prev || s[1 + c][0] < prev || s[1 + c][1] < s[1 + c][0])
        return snprintf(why, len, "CTA %d chunk %d out of order", i, c), 0;
      prev = s[1 + c][1];
    }
    if (s[0][1] < prev || s[GDN_TRACE_ROWS - 1][0] < prev)
      return snprintf(why, len, "CTA %d ends before its last chunk", i), 0;
    /* The k/v/W producer has each chunk's stage after the last one's loads
     * are issued, and issues a chunk's loads before the chain has its data. */
    const uint64_t(*p)[2] = t->prod[i];
    prev = 0;
    for (int c = 0; c < want && c < GDN_TRACE_ROWS - 2; c++) {
      if (!p[c][0] || p[c][0] + slack < prev || p[c][1] < p[c][0] ||
          p[c][1] > s[1 + c][1] + slack)
        return snprintf(why, len, "CTA %d producer chunk %d out of order", i, c), 0;
      prev = p[c][1];
    }
    /* The output warpgroup starts waiting before the chain's first stamp
     * (that comes after the initial state's loads), so its chunks are
     * ordered among themselves, and each wait ends after the chain has
     * begun the chunk whose hand-off it waits for. gdn_scan_pairs' chain
     * CTA outputs the last chunk itself, after its chain: that one need
     * not start after the output CTA's chunk before it. */
    const uint64_t(*o)[2] = t->out[i];
    prev = 0;
    for (int c = 0; c < want; c++) {
      if (c == want - 1)
        prev = 0;
      if (!o[1 + c][0] || o[1 + c][0] < prev || o[1 + c][1] < o[1 + c][0] ||
          o[1 + c][1] < s[1 + c][1])
        return snprintf(why, len, "CTA %d output chunk %d out of order", i, c), 0;
      prev = o[1 + c][1];
    }
    if (s[GDN_TRACE_ROWS - 1][0] < prev)
      return snprintf(why, len, "CTA %d's output ends before its last chunk", i), 0;
  }
  int seen = 0;
  for (int u = 0; u < GDN_TRACE_UNITS; u++)
    if (t->unit[u][0]) {
      seen++;
      if (t->unit[u][1] < t->unit[u][0])
        return snprintf(why, len, "unit %d ends before it starts", u), 0;
      /* Its stages in order inside it, up to the slack above. */
      uint64_t prev = t->unit[u][0];
      for (int k = 0; k < GDN_TRACE_STEPS; k++) {
        if (!t->unit_step[u][k] || t->unit_step[u][k] + slack < prev ||
            t->unit_step[u][k] > t->unit[u][1] + slack)
          return snprintf(why, len, "unit %d stage %d out of order", u, k), 0;
        prev = t->unit_step[u][k];
      }
    }
  if (seen != units)
    return snprintf(why, len, "%d units traced, %d used", seen, units), 0;
  if (!entries)
    return snprintf(why, len, "no scan CTA stamped its entry"), 0;
  return 1;
}

static void test_trace(gpu_tally *t, gdn_handle *h, ref_rng *rng) {
  static gdn_trace tr;
  gdn_handle *ht;
  char err[512] = "";
  gpu_record(t, gdn_trace_read(h, &tr) == GDN_ERR_INVALID_ARGUMENT,
             "gdn_trace_read refuses a handle without GDN_CREATE_TRACE", gdn_last_error(h));
  if (gdn_create_ex(0, GDN_CREATE_TRACE, &ht, err, sizeof err) != GDN_OK) {
    gpu_record(t, 0, "trace handle", err);
    return;
  }
  Prob pr;
  prob_make(&pr, h, LENS, NLENS, 4, 8);
  redraw(&pr, rng, LENS, NLENS, 4, 8);
  Result x = call_fetch(h, &pr);
  int ok = gdn_trace_read(ht, &tr) == GDN_OK; /* clears */
  Result y = call_fetch(ht, &pr);
  ok = ok && gdn_trace_read(ht, &tr) == GDN_OK;
  gpu_record(t, ok && same(&pr, x, y), "trace-build kernels equal the embedded cubin's", "");
  ok = ok && trace_consistent(&tr, LENS, NLENS, 8, err, sizeof err);
  gpu_record(t, ok, "the trace holds every scan CTA's chunks and every used unit", err);
  result_free(x);
  result_free(y);
  prob_free(&pr);
  gdn_destroy(ht);
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0xd15c;
  CUcontext ctx = gpu_init(0);
  gdn_handle *h = gpu_handle(0, 0);
  ref_rng rng = ref_rng_seed(seed);
  gpu_tally t = {0, 0};
  /* LENS takes gdn_prepare then a scan; FUSED_LENS, with 4 heads, one grid
   * (gdn_fused) on a GPU of 132 SMs, whose ready flags are the arena's
   * when captured. */
  static const int32_t FUSED_LENS[] = {5001, 1, 3999};
  const Shape two = {LENS, NLENS, 4, 8, "five sequences"};
  const Shape one = {FUSED_LENS, 3, 4, 4, "three sequences of up to 5001 tokens"};
  test_graph(&t, h, &rng, 0, &two);
  test_graph(&t, h, &rng, 1, &two);
  test_graph(&t, h, &rng, 0, &one);
  test_graph(&t, h, &rng, 1, &one);
  test_threads(&t, h, ctx, &rng);
  test_determinism(&t, h, &rng);
  test_nvrtc(&t, h, &rng);
  test_trace(&t, h, &rng);
  gdn_destroy(h);
  return gpu_summary(&t, "dispatch");
}
