// launch_cost.cu: what a call's launch shape costs on its own, timed as
// bench/PROTOCOL.md times a device figure (one call captured in a CUDA
// graph, 100 replays after 20, the lowest of three rounds): grids that exit
// at once or spin, with and without 200 KB of shared memory and clusters of
// two, a memset node before them, and a programmatic dependent launch.
// "in-kernel span" is from the first CTA's entry to the last CTA's end
// (%globaltimer); "outside" is the replay less that span, the part of a
// device figure no kernel stamp can show. Built by `make gpu-test`.
//
//   build/launch_cost
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

// The first CTA entry and the last CTA end of one replay, in ns.
__device__ unsigned long long g_span[2];

__device__ __forceinline__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// One CTA: lets a dependent grid launch (trigger) or waits for the grid
// before it (wait), then thread 0 spins spin_ns from the CTA's entry and
// stamps the span.
__global__ void k_spin(int spin_ns, int trigger, int wait) {
  unsigned long long t0 = now();
  if (trigger) asm volatile("griddepcontrol.launch_dependents;");
  if (wait) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (threadIdx.x == 0) {
    atomicMin(&g_span[0], t0);
    while (now() - t0 < (unsigned long long)spin_ns) {}
    atomicMax(&g_span[1], now());
  }
  __syncthreads();
}

// A grid: its size, dynamic shared memory, cluster size, spin (ns), its
// kernel's trigger and wait, and whether it is launched as a programmatic
// dependent of the launch before it.
struct K { int ctas, threads, smem, cluster, spin, trigger, wait, pdl; };

static void launch(const K &k, cudaStream_t st) {
  cudaLaunchConfig_t c = {};
  c.gridDim = dim3(k.ctas);
  c.blockDim = dim3(k.threads);
  c.dynamicSmemBytes = k.smem;
  c.stream = st;
  cudaLaunchAttribute at[2];
  int n = 0;
  if (k.cluster > 1) {
    at[n].id = cudaLaunchAttributeClusterDimension;
    at[n].val.clusterDim.x = k.cluster; at[n].val.clusterDim.y = 1; at[n].val.clusterDim.z = 1;
    n++;
  }
  if (k.pdl) {
    at[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[n].val.programmaticStreamSerializationAllowed = 1;
    n++;
  }
  c.attrs = n ? at : nullptr;
  c.numAttrs = n;
  CK(cudaLaunchKernelEx(&c, k_spin, k.spin, k.trigger, k.wait));
}

// A call: an optional memset node, then one or two grids (ctas = 0: none).
struct Case { const char *name; int memset; K a, b; };

// One case: captured once, replayed 20 times to warm up and once for its
// span, then the lowest of three rounds of 100 replays; one line of output.
static void run_case(const Case &c, cudaStream_t st, void *buf) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  if (c.memset) CK(cudaMemsetAsync(buf, 0, 8192, st));
  if (c.a.ctas) launch(c.a, st);
  if (c.b.ctas) launch(c.b, st);
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < 20; i++) CK(cudaGraphLaunch(ge, st));
  CK(cudaStreamSynchronize(st));
  unsigned long long init[2] = {~0ull, 0ull}, span[2];
  CK(cudaMemcpyToSymbol(g_span, init, sizeof init));
  CK(cudaGraphLaunch(ge, st));
  CK(cudaStreamSynchronize(st));
  CK(cudaMemcpyFromSymbol(span, g_span, sizeof span));
  float best = 1e9f;
  for (int pass = 0; pass < 3; pass++) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < 100; i++) CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (ms < best) best = ms;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  double sp = c.a.ctas ? (double)(span[1] - span[0]) / 1000.0 : 0.0;
  printf("%-52s replay %7.2f us   in-kernel span %7.2f us   outside %6.2f us\n", c.name,
         best * 10.0, sp, best * 10.0 - sp);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
}

int main() {
  CK(cudaFuncSetAttribute(k_spin, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  void *buf;
  CK(cudaMalloc(&buf, 1 << 20));
  const int B = 200 * 1024;
  Case cs[] = {
    {"memset 8 KB alone", 1, {}, {}},
    {"1x32 empty", 0, {1, 32, 0, 1, 0, 0, 0, 0}, {}},
    {"memset + 1x32 empty", 1, {1, 32, 0, 1, 0, 0, 0, 0}, {}},
    {"132x384, no smem", 0, {132, 384, 0, 1, 0, 0, 0, 0}, {}},
    {"132x384, 200 KB", 0, {132, 384, B, 1, 0, 0, 0, 0}, {}},
    {"132x384, 200 KB, cluster 2", 0, {132, 384, B, 2, 0, 0, 0, 0}, {}},
    {"memset + 132x384, 200 KB", 1, {132, 384, B, 1, 0, 0, 0, 0}, {}},
    {"memset + 132x384, 200 KB, cluster 2", 1, {132, 384, B, 2, 0, 0, 0, 0}, {}},
    {"132x384, 200 KB, spin 10 us", 0, {132, 384, B, 1, 10000, 0, 0, 0}, {}},
    {"132x384, 200 KB, cluster 2, spin 10 us", 0, {132, 384, B, 2, 10000, 0, 0, 0}, {}},
    {"memset + cluster 2, spin 10 us", 1, {132, 384, B, 2, 10000, 0, 0, 0}, {}},
    {"528x128 38 KB spin 5 us -> PDL 64x384 200 KB cl2", 0,
     {528, 128, 38 * 1024, 1, 5000, 1, 0, 0}, {64, 384, B, 2, 0, 0, 1, 1}},
    {"528x128 38 KB spin 5 us -> plain 64x384 200 KB cl2", 0,
     {528, 128, 38 * 1024, 1, 5000, 1, 0, 0}, {64, 384, B, 2, 0, 0, 0, 0}},
    {"528x128 38 KB spin 5 us alone", 0, {528, 128, 38 * 1024, 1, 5000, 0, 0, 0}, {}},
  };
  for (const Case &c : cs)
    run_case(c, st, buf);
  return 0;
}
