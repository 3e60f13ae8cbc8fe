// cluster_occupancy.cu: how many thread-block clusters of n CTAs (n = 1 to
// 8, and 16) can be resident at once, for CTAs of 384 threads and a few
// shared-memory sizes (gdn_fused's 230,616 bytes first), as the CUDA
// occupancy calculator reports it for the device. A schedule that pushes a
// unit's tiles into a chain CTA's shared memory needs the unit and the chain
// in one cluster; this says how many such clusters a GPU holds. Build and
// run on the GPU machine:
//   nvcc -arch=sm_90a -o build/cluster_occupancy bench/tools/cluster_occupancy.cu
//   build/cluster_occupancy
#include <cstdio>
#include <cuda_runtime.h>

__global__ void probe(int *x) {
  extern __shared__ int s[];
  if (x)
    x[0] = s[0];
}

int main() {
  // Clusters of 16 are beyond the portable size of 8: allowed explicitly.
  cudaFuncSetAttribute(probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  static const int smem[] = {230616, 116000, 80000, 41000};
  for (int si = 0; si < 4; si++) {
    cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem[si]);
    static const int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 16};
    for (int n : sizes) {
      cudaLaunchAttribute at[1];
      at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = n, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(n * 32), cfg.blockDim = dim3(384), cfg.dynamicSmemBytes = smem[si];
      cfg.attrs = at, cfg.numAttrs = 1;
      int c = -1;
      cudaError_t e = cudaOccupancyMaxActiveClusters(&c, probe, &cfg);
      printf("smem %6d cluster %2d: %d clusters (%d CTAs) %s\n", smem[si], n, c, c * n,
             e ? cudaGetErrorString(e) : "");
    }
  }
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  printf("%s: %d SMs\n", p.name, p.multiProcessorCount);
  return 0;
}
