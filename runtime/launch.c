/* launch.c: tensor maps, workspace pointers and the launches of the
 * generic pipeline. Nothing here synchronises or reads device memory, so
 * a call can be captured in a CUDA graph. */
#include <string.h>

#include "internal.h"

/* A tensor map of 2-byte elements of type `dt` with the chunk box and the
 * kernels' swizzle: `rank` dims (innermost first), rank - 1 byte strides,
 * the box per dim. L2 promotes a miss to 128 bytes, one box row: at 256
 * the rows' second boxes hit L2, but DRAM moved the same bytes and the
 * large rows took 1.4-3.5 % longer (docs/generic.md, row 305). */
static gdn_status map_2b(gdn_handle *h, CUtensorMap *m, CUtensorMapDataType dt, uint64_t base,
                         cuuint32_t rank, const cuuint64_t *dims, const cuuint64_t *strides,
                         const cuuint32_t *box, const char *what) {
  const cuuint32_t es[3] = {1, 1, 1};
  CUresult r = cuTensorMapEncodeTiled(m, dt, rank, (void *)base,
                                      dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      (CUtensorMapSwizzle)GDN_SWIZZLE,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? GDN_OK : gdn_cu_fail(h, r, what);
}

/* q, k or v [T, H, 128] as the 3-D map {128, H, T}: one box is a 64-column
 * half of one head's rows for 64 tokens. */
static gdn_status map_chunks(gdn_handle *h, CUtensorMap *m, uint64_t base, int heads,
                             int64_t T, const char *what) {
  const cuuint64_t dims[3] = {GDN_HEAD_DIM, (cuuint64_t)heads, (cuuint64_t)T};
  const cuuint64_t strides[2] = {GDN_HEAD_DIM * 2, (cuuint64_t)heads * GDN_HEAD_DIM * 2};
  const cuuint32_t box[3] = {GDN_CHUNK_BOX_INNER, 1, GDN_CHUNK_BOX_ROWS};
  return map_2b(h, m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, base, 3, dims, strides, box, what);
}

/* A workspace region of 64 x 64 tiles of P or W (in the value operands'
 * format, gdn_kernels.h) as the 2-D map {64, rows}. */
static gdn_status map_tiles(gdn_handle *h, CUtensorMap *m, CUdeviceptr base, int64_t rows,
                            const char *what) {
  const cuuint64_t dims[2] = {64, (cuuint64_t)rows}, strides[1] = {128};
  const cuuint32_t box[2] = {GDN_CHUNK_BOX_INNER, GDN_CHUNK_BOX_ROWS};
  return map_2b(h, m, (CUtensorMapDataType)GDN_WS_TMA_DTYPE, base, 2, dims, strides, box,
                what);
}

/* The ready flags of a one-grid call being captured: a slice of the
 * handle's arena that no other call is given, so the graph needs no memset
 * node. The arena is zero from its making, and every replay leaves the
 * slice zero, since each flag a prepare unit sets is cleared by the one
 * scan CTA that waits on it. Replays of one executable graph run one after
 * another (CUDA orders them), so none sees another's flags. 0: not being
 * captured, or the arena is used up; the caller then zeroes flags in the
 * workspace. */
static CUdeviceptr captured_flags(gdn_handle *h, size_t bytes, CUstream stream) {
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!h->flags || cuStreamIsCapturing(stream, &cap) != CUDA_SUCCESS ||
      cap != CU_STREAM_CAPTURE_STATUS_ACTIVE)
    return 0;
  const size_t take = (bytes + 255) & ~(size_t)255;
  const size_t at = atomic_fetch_add(&h->flags_used, take);
  return take <= h->flags_bytes && at <= h->flags_bytes - take ? h->flags + at : 0;
}

/* `cluster` CTAs along x make a cluster (1: none). `early` launches the
 * kernel as a programmatic dependent of the previous one in the stream: it
 * may start while that one runs, and waits for it (griddepcontrol.wait)
 * before reading what it wrote. */
static gdn_status launch(gdn_handle *h, int k, unsigned gx, unsigned gy, unsigned gz,
                         void **params, unsigned cluster, int early, CUstream stream) {
  const gdn_kernel_spec *spec = &gdn_kernel_specs[k];
  CUlaunchAttribute attr[2];
  unsigned n = 0;
  if (early) {
    attr[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
    attr[n++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster > 1) {
    attr[n] = (CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
    attr[n].value.clusterDim.x = cluster, attr[n].value.clusterDim.y = 1;
    attr[n++].value.clusterDim.z = 1;
  }
  CUlaunchConfig cfg = {.gridDimX = gx, .gridDimY = gy, .gridDimZ = gz,
                        .blockDimX = spec->threads, .blockDimY = 1, .blockDimZ = 1,
                        .sharedMemBytes = spec->smem_bytes, .hStream = stream,
                        .attrs = n ? attr : NULL, .numAttrs = n};
  CUresult r = cuLaunchKernelEx(&cfg, h->fn[k], params, NULL);
  return r == CUDA_SUCCESS ? GDN_OK : gdn_cu_fail(h, r, spec->name);
}

gdn_status gdn_launch_generic(gdn_handle *h, const gdn_prefill_args *a, const gdn_plan *p,
                              CUdeviceptr ws, CUstream stream) {
  CUtensorMap mq, mk, mv, mp, mw, mo;
  int64_t rows = p->slots * p->Ho * 64;
  gdn_status s = map_chunks(h, &mq, a->q, p->Hq, p->T, "tensor map of q");
  if (s == GDN_OK)
    s = map_chunks(h, &mk, a->k, p->Hk, p->T, "tensor map of k");
  if (s == GDN_OK)
    s = map_chunks(h, &mv, a->v, p->Hv, p->T, "tensor map of v");
  if (s == GDN_OK)
    s = map_tiles(h, &mp, ws + p->ws_p, rows, "tensor map of the workspace (P)");
  if (s == GDN_OK)
    s = map_tiles(h, &mw, ws + p->ws_w, rows, "tensor map of the workspace (W)");
  if (s == GDN_OK) /* o [T, Ho, 128]: full chunks leave by TMA store */
    s = map_chunks(h, &mo, a->o, p->Ho, p->T, "tensor map of o");
  if (s != GDN_OK)
    return s;
  CUdeviceptr ws_p = ws + p->ws_p, ws_w = ws + p->ws_w, ws_g = ws + p->ws_g;
  int T = (int)p->T, N = p->N, Hq = p->Hq, Hk = p->Hk, Hv = p->Hv, Ho = p->Ho;
  float scale = a->scale;
  /* One grid when gdn_fused_plan says so. Its flags start at zero: in a
   * slice of the handle's arena where the call is captured, else in the
   * workspace after a memset (the scan clears each flag it reads, but a
   * caller's workspace holds anything at first). */
  gdn_fused_grid fg;
  if (gdn_fused_plan(p, h->sms, &fg)) {
    const size_t fbytes = (size_t)fg.units * GDN_WS_FLAG_BYTES;
    CUdeviceptr ws_f = captured_flags(h, fbytes, stream);
    if (!ws_f) {
      ws_f = ws + p->ws_f;
      CUresult r = cuMemsetD32Async(ws_f, 0, fbytes / 4, stream);
      if (r != CUDA_SUCCESS)
        return gdn_cu_fail(h, r, "cuMemsetD32Async (ready flags)");
    }
    int nscan = fg.nscan, single = fg.single, split = fg.split;
    void *one[] = {&mq, &mk, &mv, &mp, &mw, &mo, (void *)&a->q, (void *)&a->k, (void *)&a->v,
                   (void *)&a->alpha, (void *)&a->beta, (void *)&a->cu_seqlens, &ws_p, &ws_w,
                   &ws_g, &ws_f, (void *)&a->initial_state,
                   (void *)&a->final_state, (void *)&a->o, &T, &N, &Hq, &Hk, &Hv, &Ho, &scale,
                   &nscan, &single, &split};
    return launch(h, GDN_K_FUSED, fg.ctas, 1, 1, one, split ? 2 : 1, 0, stream);
  }
  void *prep[] = {&mq, &mk, (void *)&a->q, (void *)&a->k, (void *)&a->alpha, (void *)&a->beta,
                  (void *)&a->cu_seqlens, &ws_p, &ws_w, &ws_g, &T, &N, &Hq, &Hk, &Ho};
  int64_t used = gdn_prepare_slots(p);
  int k = gdn_prepare_lean_plan(p, h->sms) ? GDN_K_PREPARE_LEAN : GDN_K_PREPARE;
  s = launch(h, k, (unsigned)used, (unsigned)Ho, 1, prep, 1, 0, stream);
  if (s != GDN_OK)
    return s;
  void *scan[] = {&mq, &mk, &mv, &mp, &mw, &mo, (void *)&a->q, (void *)&a->k, (void *)&a->v, &ws_g,
                  (void *)&a->cu_seqlens, (void *)&a->initial_state, (void *)&a->final_state,
                  (void *)&a->o, &T, &Hq, &Hk, &Hv, &Ho, &scale, &N};
  if (gdn_scan_pairs_plan(p, h->sms))
    return launch(h, GDN_K_SCAN_PAIRS, 4, (unsigned)Ho, (unsigned)N, scan, 2, 1, stream);
  int lanes = gdn_scan_lanes(p, h->sms);
  if (lanes < N)
    return launch(h, GDN_K_SCAN_LANES, 2, (unsigned)Ho, (unsigned)lanes, scan, 1, 1, stream);
  return launch(h, GDN_K_SCAN, 2, (unsigned)Ho, (unsigned)N, scan, 1, 1, stream);
}
