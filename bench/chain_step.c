/* chain_step.c: cycles per step of the state chain in the four forms of
 * generated/probe_step.cu (built by `make gpu-test` into
 * build/kernels/probe_step.cubin): alone, beside an output warpgroup
 * paced by the chain or running unpaced, and for the w/u forms beside an
 * output that needs no w and u, or beside the warpgroup that forms them
 * (one chunk at a time, or two in flight), and for gdn_scan's form beside
 * an output that issues its products a few k-steps at a time; then
 * step_half_two, two chains of gdn_scan's form in one 384-thread CTA with
 * one output warpgroup for both, against one chain in the same kernel.
 * Each figure is the lowest of three launches; clock64 cycles of
 * warpgroup 0 over STEPS steps, on one CTA or on CTAS at once.
 *
 *   build/chain_step [CUBIN] [STEPS] [CTAS]     (a markdown table on stdout)
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpucheck.h"

static double cycles(CUfunction fn, unsigned threads, int steps, int mode, int ctas, int smem,
                     CUdeviceptr out) {
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    void *args[] = {&steps, &mode, &out};
    CU(cuLaunchKernel(fn, (unsigned)ctas, 1, 1, threads, 1, 1, (unsigned)smem, NULL, args, NULL));
    CU(cuCtxSynchronize());
    unsigned long long c[3];
    CU(cuMemcpyDtoH(c, out, sizeof c));
    double r = (double)c[0] / steps;
    if (rep == 0 || r < best)
      best = r;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *cubin = argc > 1 ? argv[1] : "build/kernels/probe_step.cubin";
  int steps = argc > 2 ? atoi(argv[2]) : 512, ctas = argc > 3 ? atoi(argv[3]) : 1;
  if (steps < 8 || steps % 8 || ctas < 1 || ctas > 1024) {
    fprintf(stderr, "usage: %s [CUBIN] [STEPS, a multiple of 8] [CTAS 1..1024]\n", argv[0]);
    return 2;
  }
  gpu_init(0);
  CUdevice dev;
  CU(cuCtxGetDevice(&dev));
  int khz, smem; // the kernels' layout is gdngen's; they get all a CTA may have
  CU(cuDeviceGetAttribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev));
  CU(cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
  CUmodule mod;
  CU(cuModuleLoad(&mod, cubin));
  CUdeviceptr out;
  CU(cuMemAlloc(&out, 32));
  static const char *forms[] = {"step_half", "step_quarter", "step_half_wu", "step_quarter_wu"};
  static const char *modes[] = {"alone", "output paced", "output unpaced", "output paced, no w/u",
                                "w/u alone, paced", "w/u alone, two in flight",
                                "output paced, 2 k-steps a group", "output paced, 1 k-step a group"};
  printf("cycles per step (us at %d MHz), %d steps, %d CTA(s)\n\n| form |", khz / 1000, steps,
         ctas);
  for (int m = 0; m < 8; m++)
    printf(" %s |", modes[m]);
  printf("\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  for (int f = 0; f < 4; f++) {
    CUfunction fn;
    CU(cuModuleGetFunction(&fn, mod, forms[f]));
    CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
    printf("| %s |", forms[f]);
    for (int m = 0; m < 8; m++) {
      if ((m >= 3 && m <= 5 && f < 2) || (m >= 6 && f != 0)) { // modes a form does not have
        printf(" – |");
        continue;
      }
      double c = cycles(fn, 256, steps, m, ctas, smem, out);
      printf(" %.0f (%.3f) |", c, c / (khz / 1000.0));
      fflush(stdout);
    }
    printf("\n");
  }
  static const char *two[] = {"two chains", "two chains, output paced by both",
                              "one chain, output paced", "one chain"};
  CUfunction fn;
  CU(cuModuleGetFunction(&fn, mod, "step_half_two"));
  CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
  printf("\nstep_half_two: chain A's cycles per step (us), 384 threads a CTA\n\n"
         "| mode | cycles (us) |\n|---|--:|\n");
  for (int m = 0; m < 4; m++) {
    double c = cycles(fn, 384, steps, m, ctas, smem, out);
    printf("| %s | %.0f (%.3f) |\n", two[m], c, c / (khz / 1000.0));
  }
  CU(cuMemFree(out));
  CU(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
