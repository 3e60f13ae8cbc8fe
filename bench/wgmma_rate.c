/* wgmma_rate.c: cycles per wgmma k-step (m64nNk16, bf16 in, fp32 out) by
 * operand source and N, on one SM: in a chain (each group of k-steps waited
 * for before the next, as the state chain does), in a stream, and with a
 * second warpgroup issuing the same at the same time. The kernels are in
 * bench/wgmma_rate.cu, built by `make gpu-test` into build/kernels.
 *
 *   build/wgmma_rate [GROUPS]        (a markdown table on stdout)
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpucheck.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

enum { SMEM = 65536 + 1024, THREADS = 256 };

static const struct {
  const char *file, *kind;
  int n;
} SHAPES[] = {
    {"wgmma_rate_rs", "rs", 16}, {"wgmma_rate_rs", "rs", 32}, {"wgmma_rate_rs", "rs", 64},
    {"wgmma_rate_rs", "rs", 128}, {"wgmma_rate_ss", "ss", 16}, {"wgmma_rate_ss", "ss", 32},
    {"wgmma_rate_ss", "ss", 64}, {"wgmma_rate_ss", "ss", 128},
};

/* The columns: kernel suffix (c: chain, s: stream; k-steps a group), and
 * whether the second warpgroup issues too. */
static const struct {
  const char *suffix, *title;
  int ksteps, shared;
} COLS[] = {
    {"c4", "chain of 4", 4, 0}, {"c4", "chain of 4, shared", 4, 1},
    {"c8", "chain of 8", 8, 0}, {"c8", "chain of 8, shared", 8, 1},
    {"s4", "stream", 4, 0},     {"s4", "stream, shared", 4, 1},
};

/* Cycles per k-step of warpgroup 0: the lower of two launches. */
static double rate(CUfunction fn, int groups, int ksteps, int shared, CUdeviceptr out) {
  double best = 0;
  for (int rep = 0; rep < 2; rep++) {
    void *args[] = {&groups, &shared, &out};
    CU(cuLaunchKernel(fn, 1, 1, 1, THREADS, 1, 1, SMEM, NULL, args, NULL));
    CU(cuCtxSynchronize());
    unsigned long long cycles;
    CU(cuMemcpyDtoH(&cycles, out, sizeof cycles));
    double r = (double)cycles / groups / ksteps;
    if (rep == 0 || r < best)
      best = r;
  }
  return best;
}

int main(int argc, char **argv) {
  int groups = argc > 1 ? atoi(argv[1]) : 4000;
  if (groups < 1) {
    fprintf(stderr, "usage: %s [GROUPS >= 1]\n", argv[0]);
    return 2;
  }
  gpu_init(0);
  CUdevice dev;
  CU(cuCtxGetDevice(&dev));
  char name[128];
  int khz;
  CU(cuDeviceGetName(name, sizeof name, dev));
  CU(cuDeviceGetAttribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev));
  CUmodule mods[2];
  CU(cuModuleLoad(&mods[0], "build/kernels/wgmma_rate_rs.cubin"));
  CU(cuModuleLoad(&mods[1], "build/kernels/wgmma_rate_ss.cubin"));
  CUdeviceptr out;
  CU(cuMemAlloc(&out, 16));
  printf("%s, %d MHz: cycles per m64nNk16 k-step of one warpgroup, %d groups a launch\n\n",
         name, khz / 1000, groups);
  printf("| A from | N |");
  for (size_t c = 0; c < COUNT_OF(COLS); c++)
    printf(" %s |", COLS[c].title);
  printf("\n|---|--:|");
  for (size_t c = 0; c < COUNT_OF(COLS); c++)
    printf("--:|");
  printf("\n");
  for (size_t s = 0; s < COUNT_OF(SHAPES); s++) {
    CUmodule mod = mods[SHAPES[s].kind[0] == 's'];
    printf("| %s | %d |", SHAPES[s].kind[0] == 'r' ? "registers" : "shared", SHAPES[s].n);
    for (size_t c = 0; c < COUNT_OF(COLS); c++) {
      char fname[64];
      snprintf(fname, sizeof fname, "rate_%s_n%d_%s", SHAPES[s].kind, SHAPES[s].n,
               COLS[c].suffix);
      CUfunction fn;
      CU(cuModuleGetFunction(&fn, mod, fname));
      CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, SMEM));
      printf(" %.1f |", rate(fn, groups, COLS[c].ksteps, COLS[c].shared, out));
    }
    printf("\n");
  }
  printf("\nA k-step at the SM's peak (2048 bf16 FMA a cycle) takes N / 2 cycles.\n");
  CU(cuMemFree(out));
  CU(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
