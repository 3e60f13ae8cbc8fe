/* gdn_bench.c: times the C call for users without Python, on the six rows
 * of bench/cases.json (built in below) or one row given on the command line.
 *
 *   callable: CUDA events around `iters` consecutive gdn_prefill calls after
 *             `warmup` calls (the first call reported separately);
 *   device:   one call captured in a CUDA graph, `iters` replays timed.
 * With --trace FILE the kernels are the trace build (GDN_CREATE_TRACE,
 * docs/trace.md): after each row's timing, a captured call is replayed
 * once more and its timeline appended to FILE as CSV
 * (bench/tools/trace_report.py reads it).
 * With --dump FILE, each row's outputs after its timing (o, then the final
 * state where the row has one) are written to FILE as raw bytes, row after
 * row, so that two builds' outputs on the same inputs can be compared byte
 * for byte (bench/tools/ab_run.sh, AB_SAME).
 * Inputs are random (never zeros): q, v ~ N(0,1), k L2-normalised, alpha in
 * [0.8, 1], beta = sigmoid(N(0,1)), initial state 0.1 N(0,1), scale 0.73.
 * With --reader, each captured call also copies o to a scratch buffer
 * after it (a memcpy node), as a model's next kernel reads o at once: the
 * device figure then shows where the call left o's lines, in L2 or not,
 * which a lone replayed call cannot.
 * With --cu, single-sequence rows pass cu_seqlens = [0, T] too, as serving
 * frameworks do (without it they pass none, as bench/cases.json's rows do).
 * Usage: build/gdn_bench [--trace FILE] [--dump FILE] [--reader] [--cu] [iters]
 *        [row-substring]
 */
#include <cuda.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn.h"
#include "ref.h"

#define CK(x) check_cu((x), #x, __LINE__)
static void check_cu(CUresult r, const char *what, int line) {
  if (r == CUDA_SUCCESS)
    return;
  const char *s = "?";
  cuGetErrorString(r, &s);
  fprintf(stderr, "gdn_bench.c:%d: %s: %s\n", line, what, s);
  exit(2);
}

typedef struct Row {
  const char *name;
  int n;
  int32_t lens[20];
  int h, hv, state;
} Row;

static const Row rows[] = {
    {"single-t512-h8-mha-zero", 1, {512}, 8, 8, 0},
    {"single-t1024-h8-mha-state", 1, {1024}, 8, 8, 1},
    {"single-t1024-h8-hv16-gva-state", 1, {1024}, 8, 16, 1},
    {"single-t4096-h16-mha-zero", 1, {4096}, 16, 16, 0},
    {"packed-n10-t4096-h8-mha-state", 10, {300, 517, 128, 700, 64, 411, 999, 200, 333, 444}, 8, 8, 1},
    {"packed-n20-t8192-h8-hv16-gva-state", 20,
     {410, 97, 640, 333, 512, 1, 700, 389, 250, 431, 64, 615, 128, 480, 529, 300, 391, 457, 383, 1082},
     8, 16, 1},
};

static CUdeviceptr up(const void *p, size_t bytes) {
  if (!p)
    return 0;
  CUdeviceptr d;
  CK(cuMemAlloc(&d, bytes));
  CK(cuMemcpyHtoD(d, p, bytes));
  return d;
}

/* Mean ms per iteration of `body` (calls or graph replays), timed with
 * CUDA events around all iterations on the stream. */
typedef void (*Body)(void *ctx, CUstream st);

static float timed(Body body, void *ctx, CUstream st, int iters) {
  CUevent e0, e1;
  CK(cuEventCreate(&e0, 0));
  CK(cuEventCreate(&e1, 0));
  CK(cuEventRecord(e0, st));
  for (int i = 0; i < iters; i++)
    body(ctx, st);
  CK(cuEventRecord(e1, st));
  CK(cuEventSynchronize(e1));
  float ms;
  CK(cuEventElapsedTime(&ms, e0, e1));
  cuEventDestroy(e0);
  cuEventDestroy(e1);
  return ms / (float)iters;
}

typedef struct Call {
  gdn_handle *h;
  const gdn_prefill_args *a;
  CUdeviceptr ws;
  size_t wsb;
  CUgraphExec ge;
  CUdeviceptr o_copy; /* --reader: where a captured call copies o, else 0 */
  size_t o_bytes;
} Call;

static void one_call(void *ctx, CUstream st) {
  Call *c = ctx;
  if (gdn_prefill(c->h, c->a, c->ws, c->wsb, st) != GDN_OK) {
    fprintf(stderr, "gdn_prefill: %s\n", gdn_last_error(c->h));
    exit(1);
  }
}

static void one_replay(void *ctx, CUstream st) { CK(cuGraphLaunch(((Call *)ctx)->ge, st)); }

static float time_calls(Call *c, CUstream st, int iters) { return timed(one_call, c, st, iters); }

/* One call captured in a CUDA graph, instantiated into c->ge. */
static CUgraph capture(Call *c, CUstream st) {
  CUgraph g;
  CK(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
  gdn_status s = gdn_prefill(c->h, c->a, c->ws, c->wsb, st);
  if (s == GDN_OK && c->o_copy)
    CK(cuMemcpyDtoDAsync(c->o_copy, c->a->o, c->o_bytes, st));
  CK(cuStreamEndCapture(st, &g));
  if (s != GDN_OK) {
    fprintf(stderr, "capture: %s\n", gdn_last_error(c->h));
    exit(1);
  }
  CK(cuGraphInstantiate(&c->ge, g, 0));
  return g;
}

/* The captured call's replays timed after 10 warm-ups. */
static float time_graph(Call *c, CUstream st, int iters) {
  CUgraph g = capture(c, st);
  for (int i = 0; i < 10; i++)
    one_replay(c, st);
  float ms = timed(one_replay, c, st, iters);
  cuGraphExecDestroy(c->ge);
  cuGraphDestroy(g);
  return ms;
}

/* The handle's timestamps since the last read, which it clears. */
static void read_trace(gdn_handle *h, gdn_trace *t) {
  if (gdn_trace_read(h, t) != GDN_OK) {
    fprintf(stderr, "gdn_trace_read: %s\n", gdn_last_error(h));
    exit(1);
  }
}

/* One more call, alone, as the device figure runs it (a replay of a
 * captured call, so no launch waits for the host), and its timeline as CSV
 * lines: row, kind (scan: the CTA's start and chain end, chunk c's wait;
 * entry: the kernel's entry in the CTA and the start of its state's loads;
 * outc: the output warpgroup's wait for chunk c; prod: the k/v/W producer
 * has chunk c's stage, and has issued its loads; out: the output stores'
 * end; unit: a prepare unit's start and end; ustep: the end of a unit's
 * stage, in t0),
 * index, chunk, t0, t1 in ns from the call's earliest stamp, a CTA's entry
 * included. */
static void trace_row(Call *c, const Row *r, CUstream st, FILE *f) {
  static gdn_trace t; /* about 7.8 MB: not on the stack */
  CUgraph g = capture(c, st);
  one_replay(c, st);
  CK(cuStreamSynchronize(st));
  read_trace(c->h, &t); /* clears what earlier calls wrote */
  one_replay(c, st);
  CK(cuStreamSynchronize(st));
  cuGraphExecDestroy(c->ge);
  cuGraphDestroy(g);
  read_trace(c->h, &t);
  uint64_t t0 = UINT64_MAX;
  for (int i = 0; i < GDN_TRACE_CTAS; i++) {
    if (t.scan[i][0][0] && t.scan[i][0][0] < t0)
      t0 = t.scan[i][0][0];
    if (t.scan[i][0][0] && t.prod[i][0][0] && t.prod[i][0][0] < t0)
      t0 = t.prod[i][0][0]; /* a producer may have its first stage sooner */
    if (t.scan[i][0][0] && t.out[i][0][0] && t.out[i][0][0] < t0)
      t0 = t.out[i][0][0]; /* gdn_fused's scan CTAs enter before any unit starts */
  }
  for (int u = 0; u < GDN_TRACE_UNITS; u++)
    if (t.unit[u][0] && t.unit[u][0] < t0)
      t0 = t.unit[u][0];
  for (int i = 0; i < GDN_TRACE_CTAS; i++) {
    const uint64_t(*s)[2] = t.scan[i];
    if (!s[0][0])
      continue;
    fprintf(f, "%s,scan,%d,-1,%llu,%llu\n", r->name, i, (unsigned long long)(s[0][0] - t0),
            (unsigned long long)(s[0][1] - t0));
    if (t.out[i][0][0] >= t0)
      fprintf(f, "%s,entry,%d,-1,%llu,%llu\n", r->name, i,
              (unsigned long long)(t.out[i][0][0] - t0), (unsigned long long)(t.out[i][0][1] - t0));
    int n = (int)s[GDN_TRACE_ROWS - 1][1];
    for (int k = 0; k < n && k < GDN_TRACE_ROWS - 2; k++)
      fprintf(f, "%s,scan,%d,%d,%llu,%llu\n", r->name, i, k,
              (unsigned long long)(s[1 + k][0] - t0), (unsigned long long)(s[1 + k][1] - t0));
    for (int k = 0; k < n && k < GDN_TRACE_ROWS - 2; k++)
      fprintf(f, "%s,outc,%d,%d,%llu,%llu\n", r->name, i, k,
              (unsigned long long)(t.out[i][1 + k][0] - t0),
              (unsigned long long)(t.out[i][1 + k][1] - t0));
    for (int k = 0; k < n && k < GDN_TRACE_ROWS; k++)
      if (t.prod[i][k][0])
        fprintf(f, "%s,prod,%d,%d,%llu,%llu\n", r->name, i, k,
                (unsigned long long)(t.prod[i][k][0] - t0),
                (unsigned long long)(t.prod[i][k][1] - t0));
    fprintf(f, "%s,out,%d,%d,%llu,0\n", r->name, i, n,
            (unsigned long long)(s[GDN_TRACE_ROWS - 1][0] - t0));
  }
  for (int u = 0; u < GDN_TRACE_UNITS; u++) {
    if (!t.unit[u][0])
      continue;
    fprintf(f, "%s,unit,%d,-1,%llu,%llu\n", r->name, u, (unsigned long long)(t.unit[u][0] - t0),
            (unsigned long long)(t.unit[u][1] - t0));
    for (int k = 0; k < GDN_TRACE_STEPS; k++)
      if (t.unit_step[u][k])
        fprintf(f, "%s,ustep,%d,%d,%llu,0\n", r->name, u, k,
                (unsigned long long)(t.unit_step[u][k] - t0));
  }
}

/* n bytes of device memory at d, appended to f. */
static void dump_bytes(FILE *f, CUdeviceptr d, size_t n) {
  void *b = malloc(n);
  if (!b) {
    fprintf(stderr, "gdn_bench: out of memory for the dump\n");
    exit(2);
  }
  CK(cuMemcpyDtoH(b, d, n));
  if (fwrite(b, 1, n, f) != n) {
    perror("gdn_bench: dump");
    exit(2);
  }
  free(b);
}

/* What the command line asks of every row. */
typedef struct Opts {
  FILE *trace, *dump;
  int reader, cu;
} Opts;

static void run_row(gdn_handle *h, const Row *r, int iters, CUstream st, const Opts *op) {
  FILE *trace = op->trace, *dump = op->dump;
  ref_rng rng = ref_rng_seed(1234);
  unsigned flags = r->state ? 0 : REF_NO_INITIAL_STATE;
  ref_problem_owned *po = ref_problem_random(&rng, r->lens, r->n, r->h, r->h, r->hv, flags);
  const ref_problem *p = &po->p;
  int Ho = r->h > r->hv ? r->h : r->hv;
  size_t T = (size_t)p->T, ns = (size_t)r->n * Ho * 128 * 128, o_bytes = T * Ho * 256;
  gdn_prefill_args a = gdn_prefill_args_default();
  a.q = up(p->q, T * r->h * 256), a.k = up(p->k, T * r->h * 256), a.v = up(p->v, T * r->hv * 256);
  a.alpha = up(p->alpha, T * Ho * 4), a.beta = up(p->beta, T * Ho * 4);
  a.cu_seqlens = r->n > 1 || op->cu ? up(p->cu_seqlens, (size_t)(r->n + 1) * 4) : 0;
  a.initial_state = up(p->initial_state, ns * 4);
  CK(cuMemAlloc((CUdeviceptr *)&a.o, o_bytes));
  if (r->state)
    CK(cuMemAlloc((CUdeviceptr *)&a.final_state, ns * 4));
  a.T = p->T, a.N = r->n, a.Hq = r->h, a.Hk = r->h, a.Hv = r->hv, a.scale = 0.73f;
  size_t wsb;
  gdn_workspace_size(h, &a, &wsb);
  CUdeviceptr ws;
  CK(cuMemAlloc(&ws, wsb));
  Call c = {h, &a, ws, wsb, NULL, 0, o_bytes};
  if (op->reader)
    CK(cuMemAlloc(&c.o_copy, c.o_bytes));
  float first = time_calls(&c, st, 1);
  time_calls(&c, st, 20);
  float callable = time_calls(&c, st, iters);
  float device = time_graph(&c, st, iters);
  printf("| %-36s | %8.4f | %8.4f | %8.4f |\n", r->name, callable, device, first);
  if (trace)
    trace_row(&c, r, st, trace);
  if (dump) {
    CK(cuStreamSynchronize(st));
    dump_bytes(dump, a.o, o_bytes);
    if (a.final_state)
      dump_bytes(dump, a.final_state, ns * 4);
  }
  CUdeviceptr all[] = {a.q, a.k, a.v, a.alpha, a.beta, a.cu_seqlens, a.initial_state, a.o,
                       a.final_state, ws, c.o_copy};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (all[i])
      cuMemFree(all[i]);
  ref_problem_free(po);
}

int main(int argc, char **argv) {
  Opts op = {NULL, NULL, 0, 0};
  while (argc > 1) {
    int *flag = strcmp(argv[1], "--reader") == 0 ? &op.reader
                : strcmp(argv[1], "--cu") == 0   ? &op.cu
                                                 : NULL;
    if (flag) {
      *flag = 1;
      argc--, argv++;
      continue;
    }
    if (argc <= 2 || (strcmp(argv[1], "--trace") != 0 && strcmp(argv[1], "--dump") != 0))
      break;
    const int is_trace = strcmp(argv[1], "--trace") == 0;
    FILE **f = is_trace ? &op.trace : &op.dump;
    if (*f || !(*f = fopen(argv[2], is_trace ? "w" : "wb"))) {
      fprintf(stderr, "gdn_bench: %s %s: %s\n", argv[1], argv[2],
              *f ? "given twice" : strerror(errno));
      return 2;
    }
    if (is_trace)
      fprintf(op.trace, "row,kind,index,chunk,t0,t1\n");
    argc -= 2, argv += 2;
  }
  int iters = argc > 1 ? atoi(argv[1]) : 100;
  const char *filter = argc > 2 ? argv[2] : NULL;
  CUdevice dev;
  CUcontext ctx;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CUstream st;
  CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  gdn_handle *h;
  char err[512];
  if (gdn_create_ex(0, op.trace ? GDN_CREATE_TRACE : 0, &h, err, sizeof err) != GDN_OK) {
    fprintf(stderr, "gdn_create: %s\n", err);
    return 1;
  }
  printf("%s%s%s%s\n\n", gdn_version(), op.trace ? " (trace build: NVRTC, timestamps)" : "",
         op.reader ? " (device: each call followed by a copy of o)" : "",
         op.cu ? " (cu_seqlens passed for single sequences)" : "");
  printf("| row | callable ms | device ms | first call ms |\n|---|---|---|---|\n");
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (!filter || strstr(rows[i].name, filter))
      run_row(h, &rows[i], iters, st, &op);
  gdn_destroy(h);
  if (op.trace)
    fclose(op.trace);
  if (op.dump && fclose(op.dump) != 0) {
    perror("gdn_bench: dump");
    return 2;
  }
  return 0;
}
