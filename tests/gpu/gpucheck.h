/* gpucheck.h: what the GPU tests share. They run on the GPU machine, which
 * has no cmocka, so this is a small self-contained harness: checked CUDA
 * driver calls that name the file and line, a pass/fail tally, and
 * element-wise comparisons that print the first mismatch. */
#ifndef GDN_GPUCHECK_H
#define GDN_GPUCHECK_H

#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct gpu_tally {
  int passed, failed;
} gpu_tally;

/* A failed driver call ends the test program: the context is unusable. */
#define CU(call) gpu_cu_check((call), #call, __FILE__, __LINE__)
static inline void gpu_cu_check(CUresult r, const char *what, const char *file, int line) {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = "?", *msg = "?";
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &msg);
  fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, name, msg);
  exit(2);
}

static inline void gpu_record(gpu_tally *t, int ok, const char *name, const char *detail) {
  if (ok)
    t->passed++;
  else
    t->failed++;
  printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, detail && *detail ? ": " : "",
         detail ? detail : "");
  fflush(stdout);
}

static inline int gpu_summary(const gpu_tally *t, const char *suite) {
  printf("%s: %d passed, %d failed\n", suite, t->passed, t->failed);
  return t->failed ? 1 : 0;
}

static inline CUcontext gpu_init(int device) {
  CUdevice dev;
  CUcontext ctx;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, device));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  return ctx;
}

#endif
