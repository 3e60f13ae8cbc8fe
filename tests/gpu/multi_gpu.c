/* multi_gpu.c: one handle per GPU, heads split across the GPUs as a
 * tensor-parallel engine splits them, all GPUs running at once (one host
 * thread each); the gathered result must equal the one-GPU result bit for
 * bit, since heads never interact. Needs two or more GPUs; with fewer it
 * says so and exits 77 (skipped).
 * Run from the repository root: build/tests/gpu_multi [seed].
 */
#include <pthread.h>
#include <string.h>

#include "gdn.h"
#include "gpucheck.h"
#include "ref.h"

#define MAX_GPUS 8

static const int32_t LENS[] = {700, 1, 333, 64, 129, 1000};
#define NSEQ 6
#define HQ 4
#define HV 8 /* GVA: Hq = Hk = 4, Hv = 8, Ho = 8 */

/* Host copies of one shard: heads [h0, h0 + n) of every per-head tensor. */
typedef struct Shard {
  int dev, Hq, Hv;
  CUcontext ctx;
  gdn_handle *h;
  uint16_t *q, *k, *v, *o;
  float *alpha, *beta, *h0, *ht;
} Shard;

/* Rows of `rows` x `heads` x `inner` elements: copy heads [h0, h0 + n). */
static void slice(void *dst, const void *src, size_t rows, int heads, int h0, int n,
                  size_t inner, size_t esize) {
  for (size_t r = 0; r < rows; r++)
    memcpy((char *)dst + (r * n) * inner * esize,
           (const char *)src + (r * heads + h0) * inner * esize, n * inner * esize);
}

static void unslice(void *dst, const void *src, size_t rows, int heads, int h0, int n,
                    size_t inner, size_t esize) {
  for (size_t r = 0; r < rows; r++)
    memcpy((char *)dst + (r * heads + h0) * inner * esize,
           (const char *)src + (r * n) * inner * esize, n * inner * esize);
}

/* Runs one shard's call on its GPU; outputs land in s->o and s->ht. */
static void *run_shard(void *arg) {
  Shard *s = arg;
  CU(cuCtxSetCurrent(s->ctx));
  int64_t T = 0;
  for (int i = 0; i < NSEQ; i++)
    T += LENS[i];
  int Ho = s->Hv;
  size_t ns = (size_t)NSEQ * Ho * 128 * 128;
  int32_t cu[NSEQ + 1] = {0};
  for (int i = 0; i < NSEQ; i++)
    cu[i + 1] = cu[i] + LENS[i];
  gdn_prefill_args a = gdn_prefill_args_default();
  a.q = gpu_upload(s->q, (size_t)T * s->Hq * 256);
  a.k = gpu_upload(s->k, (size_t)T * s->Hq * 256);
  a.v = gpu_upload(s->v, (size_t)T * s->Hv * 256);
  a.alpha = gpu_upload(s->alpha, (size_t)T * Ho * 4), a.beta = gpu_upload(s->beta, (size_t)T * Ho * 4);
  a.cu_seqlens = gpu_upload(cu, sizeof cu), a.initial_state = gpu_upload(s->h0, ns * 4);
  CU(cuMemAlloc((CUdeviceptr *)&a.o, (size_t)T * Ho * 256));
  CU(cuMemAlloc((CUdeviceptr *)&a.final_state, ns * 4));
  a.T = T, a.N = NSEQ, a.Hq = s->Hq, a.Hk = s->Hq, a.Hv = s->Hv, a.scale = 0.73f;
  for (int rep = 0; rep < 10; rep++) /* several calls, so the GPUs overlap */
    if (gdn_prefill(s->h, &a, 0, 0, NULL) != GDN_OK) {
      fprintf(stderr, "gpu %d: %s\n", s->dev, gdn_last_error(s->h));
      exit(2);
    }
  CU(cuCtxSynchronize());
  CU(cuMemcpyDtoH(s->o, a.o, (size_t)T * Ho * 256));
  CU(cuMemcpyDtoH(s->ht, a.final_state, ns * 4));
  CUdeviceptr all[] = {a.q, a.k, a.v, a.alpha, a.beta, a.cu_seqlens, a.initial_state, a.o,
                       a.final_state};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cuMemFree(all[i]);
  return NULL;
}

static void shard_alloc(Shard *s, const ref_problem *p, int dev, int part, int parts) {
  int64_t T = p->T;
  s->dev = dev, s->Hq = HQ / parts, s->Hv = HV / parts;
  int qh0 = part * s->Hq, vh0 = part * s->Hv, Ho = s->Hv;
  size_t ns = (size_t)NSEQ * Ho * 128 * 128;
  s->q = malloc((size_t)T * s->Hq * 256), s->k = malloc((size_t)T * s->Hq * 256);
  s->v = malloc((size_t)T * s->Hv * 256), s->o = malloc((size_t)T * Ho * 256);
  s->alpha = malloc((size_t)T * Ho * 4), s->beta = malloc((size_t)T * Ho * 4);
  s->h0 = malloc(ns * 4), s->ht = malloc(ns * 4);
  slice(s->q, p->q, (size_t)T, HQ, qh0, s->Hq, 128, 2);
  slice(s->k, p->k, (size_t)T, HQ, qh0, s->Hq, 128, 2);
  slice(s->v, p->v, (size_t)T, HV, vh0, s->Hv, 128, 2);
  slice(s->alpha, p->alpha, (size_t)T, HV, vh0, Ho, 1, 4);
  slice(s->beta, p->beta, (size_t)T, HV, vh0, Ho, 1, 4);
  slice(s->h0, p->initial_state, NSEQ, HV, vh0, Ho, 128 * 128, 4);
}

static void shard_free(Shard *s) {
  void *all[] = {s->q, s->k, s->v, s->o, s->alpha, s->beta, s->h0, s->ht};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]);
}

static void open_device(Shard *s) {
  CUdevice d;
  CU(cuDeviceGet(&d, s->dev));
  CU(cuDevicePrimaryCtxRetain(&s->ctx, d));
  char err[512];
  if (gdn_create_ex(s->dev, 0, &s->h, err, sizeof err) != GDN_OK) {
    fprintf(stderr, "gdn_create on %d: %s\n", s->dev, err);
    exit(2);
  }
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x7e75;
  int ndev = 0;
  CU(cuInit(0));
  CU(cuDeviceGetCount(&ndev));
  if (ndev < 2) {
    printf("multi-gpu: %d GPU(s) here, the test needs 2: skipped\n", ndev);
    return 77;
  }
  ref_rng rng = ref_rng_seed(seed);
  ref_problem_owned *po = ref_problem_random(&rng, LENS, NSEQ, HQ, HQ, HV, 0);
  const ref_problem *p = &po->p;
  Shard whole, parts[2];
  shard_alloc(&whole, p, 0, 0, 1);
  open_device(&whole);
  run_shard(&whole);
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    shard_alloc(&parts[i], p, i, i, 2);
    open_device(&parts[i]);
  }
  for (int i = 0; i < 2; i++)
    pthread_create(&th[i], NULL, run_shard, &parts[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  size_t T = (size_t)p->T, ns = (size_t)NSEQ * HV * 128 * 128;
  uint16_t *o = malloc(T * HV * 256);
  float *ht = malloc(ns * 4);
  for (int i = 0; i < 2; i++) {
    unslice(o, parts[i].o, T, HV, i * parts[i].Hv, parts[i].Hv, 128, 2);
    unslice(ht, parts[i].ht, NSEQ, HV, i * parts[i].Hv, parts[i].Hv, 128 * 128, 4);
  }
  gpu_tally t = {0, 0};
  int ok = memcmp(o, whole.o, T * HV * 256) == 0 && memcmp(ht, whole.ht, ns * 4) == 0;
  char msg[160];
  snprintf(msg, sizeof msg, "T=%zu, N=%d, heads %d/%d/%d split over 2 GPUs, 10 calls each", T,
           NSEQ, HQ, HQ, HV);
  gpu_record(&t, ok, "two GPUs, heads split, gathered == one GPU", msg);
  for (int i = 0; i < 2; i++) {
    gdn_destroy(parts[i].h);
    shard_free(&parts[i]);
  }
  gdn_destroy(whole.h);
  shard_free(&whole);
  free(o);
  free(ht);
  ref_problem_free(po);
  return gpu_summary(&t, "multi-gpu");
}
