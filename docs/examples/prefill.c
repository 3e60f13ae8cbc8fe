/* prefill.c: one Gated Delta Net prefill through libgdn's C API.
 *
 * Three sequences of 100, 64 and 37 tokens are packed into T = 201 tokens,
 * with 4 heads (MHA), random bf16 q, k, v, fp32 gates and an initial state.
 * The inputs are made on the host, uploaded with the CUDA driver API, run
 * with a caller-owned workspace on a stream of our own, and o and the final
 * state are copied back and summarised.
 *
 *   cc -std=c11 -O2 -Iruntime -I/usr/local/cuda/include docs/examples/prefill.c \
 *      build/libgdn.a -L/usr/local/cuda/lib64/stubs -lcuda -lpthread -lm \
 *      -o build/prefill_example
 *   ./build/prefill_example          # needs an sm_90a GPU (H100, H200)
 */
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdn.h"

#define NSEQ 3
#define HEADS 4
#define D GDN_HEAD_DIM

static const int32_t seq_len[NSEQ] = {100, 64, 37};

/* ------------------------------------------------------------ host data */
/* xorshift64*: reproducible inputs without depending on the C library's rand. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
}

static double normal(void) { /* Box-Muller */
  double u = uniform() + 0x1.0p-54, w = uniform();
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * w);
}

/* fp32 -> bf16, round to nearest even (the inputs are finite). */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* rows vectors of D values: N(0, 1), or unit length when normalise is set
 * (k is L2-normalised per token and head, as GDN models feed it). */
static void fill_vectors(uint16_t *x, size_t rows, int normalise) {
  float tmp[D];
  for (size_t r = 0; r < rows; r++) {
    double norm = 0;
    for (int i = 0; i < D; i++) {
      tmp[i] = (float)normal();
      norm += (double)tmp[i] * tmp[i];
    }
    float s = normalise ? (float)(1.0 / sqrt(norm)) : 1.0f;
    for (int i = 0; i < D; i++)
      x[r * D + (size_t)i] = to_bf16(tmp[i] * s);
  }
}

/* -------------------------------------------------------------- device */
static int cu_ok(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return 1;
  const char *name = "?";
  cuGetErrorName(r, &name);
  fprintf(stderr, "%s failed: %s\n", what, name);
  return 0;
}

/* Every device buffer of the call; zero until allocated. */
typedef struct Buffers {
  CUdeviceptr q, k, v, alpha, beta, cu, h0, ht, o, ws;
} Buffers;

static int upload(CUdeviceptr *d, const void *host, size_t bytes, const char *what) {
  return cu_ok(cuMemAlloc(d, bytes), what) && cu_ok(cuMemcpyHtoD(*d, host, bytes), what);
}

static void free_buffers(Buffers *b) {
  CUdeviceptr *all[] = {&b->q, &b->k, &b->v, &b->alpha, &b->beta, &b->cu,
                        &b->h0, &b->ht, &b->o, &b->ws};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (*all[i])
      cuMemFree(*all[i]);
}

/* Random inputs for the packed batch, uploaded. */
static int make_inputs(Buffers *b, int64_t T) {
  size_t tok = (size_t)T * HEADS, state = (size_t)NSEQ * HEADS * D * D;
  uint16_t *q = malloc(tok * D * 2), *k = malloc(tok * D * 2), *v = malloc(tok * D * 2);
  float *alpha = malloc(tok * 4), *beta = malloc(tok * 4), *h0 = malloc(state * 4);
  int32_t cu[NSEQ + 1] = {0};
  int ok = q && k && v && alpha && beta && h0;
  if (ok) {
    fill_vectors(q, tok, 0);
    fill_vectors(k, tok, 1);
    fill_vectors(v, tok, 0);
    for (size_t i = 0; i < tok; i++) {
      alpha[i] = (float)(0.8 + 0.2 * uniform());     /* the decay itself, in (0, 1] */
      beta[i] = (float)(1.0 / (1.0 + exp(-normal()))); /* sigmoid */
    }
    for (size_t i = 0; i < state; i++)
      h0[i] = (float)(0.1 * normal());
    for (int s = 0; s < NSEQ; s++)
      cu[s + 1] = cu[s] + seq_len[s];
    ok = upload(&b->q, q, tok * D * 2, "q") && upload(&b->k, k, tok * D * 2, "k") &&
         upload(&b->v, v, tok * D * 2, "v") && upload(&b->alpha, alpha, tok * 4, "alpha") &&
         upload(&b->beta, beta, tok * 4, "beta") && upload(&b->cu, cu, sizeof cu, "cu_seqlens") &&
         upload(&b->h0, h0, state * 4, "initial_state") &&
         cu_ok(cuMemAlloc(&b->ht, state * 4), "final_state") &&
         cu_ok(cuMemAlloc(&b->o, tok * D * 2), "o");
  } else {
    fprintf(stderr, "host allocation failed\n");
  }
  free(q), free(k), free(v), free(alpha), free(beta), free(h0);
  return ok;
}

/* ---------------------------------------------------------------- libgdn */
static int gdn_ok(gdn_handle *h, gdn_status s, const char *what) {
  if (s == GDN_OK)
    return 1;
  fprintf(stderr, "%s: %s: %s\n", what, gdn_status_string(s), gdn_last_error(h));
  return 0;
}

/* Checks the call, sizes and allocates a workspace of our own (so the call
 * could also be captured in a CUDA graph), and runs it on stream. */
static int run_prefill(gdn_handle *h, Buffers *b, int64_t T, CUstream stream) {
  gdn_prefill_args a = gdn_prefill_args_default(); /* head_dim 128, scale 1/sqrt(128) */
  a.q = b->q, a.k = b->k, a.v = b->v, a.o = b->o;
  a.alpha = b->alpha, a.beta = b->beta, a.cu_seqlens = b->cu;
  a.initial_state = b->h0, a.final_state = b->ht;
  a.T = T, a.N = NSEQ, a.Hq = HEADS, a.Hk = HEADS, a.Hv = HEADS;

  gdn_route route;
  size_t ws_bytes = 0;
  if (!gdn_ok(h, gdn_query_route(h, &a, &route), "gdn_query_route") ||
      !gdn_ok(h, gdn_workspace_size(h, &a, &ws_bytes), "gdn_workspace_size"))
    return 0;
  printf("route %s, workspace %zu bytes\n", gdn_route_name(route), ws_bytes);
  if (!cu_ok(cuMemAlloc(&b->ws, ws_bytes), "workspace"))
    return 0;
  return gdn_ok(h, gdn_prefill(h, &a, b->ws, ws_bytes, stream), "gdn_prefill") &&
         cu_ok(cuStreamSynchronize(stream), "cuStreamSynchronize");
}

/* o back to the host: a checksum and the first values of token 0, head 0. */
static int report(const Buffers *b, int64_t T) {
  size_t n = (size_t)T * HEADS * D, ns = (size_t)NSEQ * HEADS * D * D;
  uint16_t *o = malloc(n * 2);
  float *ht = malloc(ns * 4);
  int ok = o && ht && cu_ok(cuMemcpyDtoH(o, b->o, n * 2), "copy of o") &&
           cu_ok(cuMemcpyDtoH(ht, b->ht, ns * 4), "copy of final_state");
  if (ok) {
    double sum = 0, abs_sum = 0, st = 0;
    for (size_t i = 0; i < n; i++)
      sum += from_bf16(o[i]), abs_sum += fabs(from_bf16(o[i]));
    for (size_t i = 0; i < ns; i++)
      st += fabs(ht[i]);
    printf("o [%lld, %d, %d]: sum %.6f, sum |o| %.6f\n", (long long)T, HEADS, D, sum, abs_sum);
    printf("final_state [%d, %d, %d, %d]: sum |S| %.6f\n", NSEQ, HEADS, D, D, st);
    printf("o[0, 0, 0:8] =");
    for (int i = 0; i < 8; i++)
      printf(" %.5f", from_bf16(o[i]));
    printf("\n");
  }
  free(o), free(ht);
  return ok;
}

int main(void) {
  int64_t T = 0;
  for (int s = 0; s < NSEQ; s++)
    T += seq_len[s];

  /* libgdn works in the device's primary context; our buffers must live
   * there too, so we make it current rather than creating a context. */
  CUdevice dev;
  CUcontext ctx = NULL;
  if (!cu_ok(cuInit(0), "cuInit") || !cu_ok(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !cu_ok(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !cu_ok(cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
    return 1;

  /* gdn_create(0, &h) is the same call without the reason on failure. */
  gdn_handle *h = NULL;
  char err[512];
  gdn_status s = gdn_create_ex(0, 0, &h, err, sizeof err);
  if (s != GDN_OK) {
    fprintf(stderr, "gdn_create: %s: %s\n", gdn_status_string(s), err);
    cuDevicePrimaryCtxRelease(dev);
    return 1;
  }

  Buffers b = {0};
  CUstream stream = NULL;
  int ok = cu_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") &&
           make_inputs(&b, T) && run_prefill(h, &b, T, stream) && report(&b, T);

  if (stream)
    cuStreamDestroy(stream);
  free_buffers(&b);
  gdn_destroy(h);
  cuDevicePrimaryCtxRelease(dev);
  return ok ? 0 : 1;
}
