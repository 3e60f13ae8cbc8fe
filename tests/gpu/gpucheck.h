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

/* Device buffers for the tests: allocate, copy into one, or both. */
static inline CUdeviceptr gpu_alloc(size_t bytes) {
  CUdeviceptr d;
  CU(cuMemAlloc(&d, bytes));
  return d;
}

/* Copies into an existing buffer; nothing when either side is absent. */
static inline void gpu_copy_in(CUdeviceptr d, const void *src, size_t bytes) {
  if (d && src && bytes)
    CU(cuMemcpyHtoD(d, src, bytes));
}

/* A new buffer holding `src`, or 0 when there is no source (an absent
 * optional input). */
static inline CUdeviceptr gpu_upload(const void *src, size_t bytes) {
  if (!src)
    return 0;
  CUdeviceptr d = gpu_alloc(bytes);
  gpu_copy_in(d, src, bytes);
  return d;
}

#ifdef GDN_H /* the tests of libgdn (the probes load their kernels themselves) */
/* A handle on `device`, or the program ends with the reason (exit 2). */
static inline gdn_handle *gpu_handle(int device, unsigned flags) {
  gdn_handle *h;
  char err[512];
  if (gdn_create_ex(device, flags, &h, err, sizeof err) != GDN_OK) {
    fprintf(stderr, "gdn_create: %s\n", err);
    exit(2);
  }
  return h;
}
#endif

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
