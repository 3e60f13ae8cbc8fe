/* handle.c: handles, kernel loading, errors, and the public entry points. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embedded.h"
#include "internal.h"

gdn_status gdn_fail(gdn_handle *h, gdn_status s, const char *fmt, ...) {
  if (!h)
    return s;
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&h->lock);
  vsnprintf(h->err, sizeof h->err, fmt, ap);
  pthread_mutex_unlock(&h->lock);
  va_end(ap);
  return s;
}

gdn_status gdn_cu_fail(gdn_handle *h, CUresult r, const char *what) {
  const char *name = "?", *text = "?";
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  return gdn_fail(h, r == CUDA_ERROR_OUT_OF_MEMORY ? GDN_ERR_OUT_OF_MEMORY : GDN_ERR_CUDA,
                  "%s failed: %s (%s)", what, name, text);
}

static const gdn_blob *find_blob(const char *name) {
  for (const gdn_blob *b = gdn_blobs; b->name; b++)
    if (strcmp(b->name, name) == 0)
      return b;
  return NULL;
}

/* The embedded cubin; when it cannot be loaded on this device (or `flags`
 * asks for it), the embedded source compiled by NVRTC, kept for the
 * handle's life. */
static gdn_status load_kernels(gdn_handle *h, unsigned flags) {
  const gdn_blob *cubin = find_blob("gdn_generic.cubin"), *src = find_blob("gdn_generic.cu");
  CUresult r = CUDA_ERROR_NOT_FOUND;
  h->trace = (flags & GDN_CREATE_TRACE) != 0;
  if (cubin && !(flags & (GDN_CREATE_NVRTC | GDN_CREATE_TRACE)))
    r = cuModuleLoadData(&h->mod, cubin->data);
  if (r != CUDA_SUCCESS) {
    if (!src)
      return gdn_fail(h, GDN_ERR_NO_KERNEL, "no loadable cubin and no embedded source");
    gdn_status s = gdn_nvrtc_module(h, src->name, (const char *)src->data, h->trace, &h->mod);
    if (s != GDN_OK)
      return s;
    h->from_nvrtc = 1;
  }
  for (int i = 0; i < GDN_K_COUNT; i++) {
    const gdn_kernel_spec *k = &gdn_kernel_specs[i];
    if ((r = cuModuleGetFunction(&h->fn[i], h->mod, k->name)) != CUDA_SUCCESS)
      return gdn_cu_fail(h, r, k->name);
    r = cuFuncSetAttribute(h->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                           (int)k->smem_bytes);
    if (r != CUDA_SUCCESS)
      return gdn_cu_fail(h, r, "cuFuncSetAttribute (shared memory)");
    /* The largest shared-memory carveout for every kernel: the scan kernels
     * need it anyway, and gdn_prepare_lean's CTAs fill an SM only with it
     * (five of about 41 KB), where the driver's own choice might hold fewer. */
    r = cuFuncSetAttribute(h->fn[i], CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                           CU_SHAREDMEM_CARVEOUT_MAX_SHARED);
    if (r != CUDA_SUCCESS)
      return gdn_cu_fail(h, r, "cuFuncSetAttribute (carveout)");
  }
  return GDN_OK;
}

/* The SMs the current context may use: fewer than the device has under MPS
 * with a thread limit or in a context with limited SMs. gdn_fused relies
 * on it (its scan CTAs wait on CTAs that need SMs left free), so a count
 * the context cannot reach would risk a hang; where the driver cannot say,
 * the device's count stands. */
static int context_sms(int device_sms) {
  CUexecAffinityParam aff;
  if (cuCtxGetExecAffinity(&aff, CU_EXEC_AFFINITY_TYPE_SM_COUNT) == CUDA_SUCCESS &&
      aff.param.smCount.val > 0 && aff.param.smCount.val < (unsigned)device_sms)
    return (int)aff.param.smCount.val;
  return device_sms;
}

/* The ready-flag arena (launch.c gives captured one-grid calls slices of
 * it). It is made here, not at a call, because a call may be under capture,
 * where an allocation is not allowed; this thread's capture mode is relaxed
 * meanwhile, so that a capture another thread runs in global mode is not
 * invalidated. The zeroing runs on a stream of its own, apart from any
 * stream being captured. Without an arena, calls zero flags as before. */
static void flag_arena(gdn_handle *h) {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS)
    return;
  CUdeviceptr d = 0;
  CUstream s = NULL;
  int ok = cuMemAlloc(&d, GDN_FLAG_ARENA_BYTES) == CUDA_SUCCESS &&
           cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
           cuMemsetD8Async(d, 0, GDN_FLAG_ARENA_BYTES, s) == CUDA_SUCCESS &&
           cuStreamSynchronize(s) == CUDA_SUCCESS;
  if (s)
    cuStreamDestroy(s);
  if (ok)
    h->flags = d, h->flags_bytes = GDN_FLAG_ARENA_BYTES;
  else if (d)
    cuMemFree(d);
  cuThreadExchangeStreamCaptureMode(&mode);
}

gdn_status gdn_create_ex(int device, unsigned flags, gdn_handle **out, char *err,
                         size_t err_len) {
  if (err && err_len)
    err[0] = '\0';
  if (!out)
    return GDN_ERR_INVALID_ARGUMENT;
  *out = NULL;
  gdn_handle *h = calloc(1, sizeof *h);
  if (!h)
    return GDN_ERR_OUT_OF_MEMORY;
  pthread_mutex_init(&h->lock, NULL);
  atomic_init(&h->flags_used, 0);
  CUresult r = cuInit(0);
  if (r == CUDA_SUCCESS)
    r = cuDeviceGet(&h->dev, device);
  if (r == CUDA_SUCCESS)
    r = cuDeviceGetAttribute(&h->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, h->dev);
  if (r == CUDA_SUCCESS)
    r = cuDevicePrimaryCtxRetain(&h->ctx, h->dev);
  gdn_status s = r == CUDA_SUCCESS ? GDN_OK : gdn_cu_fail(h, r, "device setup");
  if (s == GDN_OK && (r = cuCtxPushCurrent(h->ctx)) != CUDA_SUCCESS)
    s = gdn_cu_fail(h, r, "cuCtxPushCurrent");
  if (s == GDN_OK) {
    h->sms = context_sms(h->sms);
    s = load_kernels(h, flags);
    if (s == GDN_OK)
      flag_arena(h);
    CUcontext popped;
    cuCtxPopCurrent(&popped);
  }
  if (s != GDN_OK) {
    if (err && err_len)
      snprintf(err, err_len, "%s", h->err);
    gdn_destroy(h);
    return s;
  }
  *out = h;
  return GDN_OK;
}

int gdn_uses_nvrtc(const gdn_handle *h) { return h ? h->from_nvrtc : 0; }

/* The trace buffers are __device__ globals of the trace build's module. */
gdn_status gdn_trace_read(gdn_handle *h, gdn_trace *t) {
  if (!h)
    return GDN_ERR_INVALID_ARGUMENT;
  if (!t)
    return gdn_fail(h, GDN_ERR_INVALID_ARGUMENT, "t is NULL");
  if (!h->trace)
    return gdn_fail(h, GDN_ERR_INVALID_ARGUMENT, "the handle was not created with GDN_CREATE_TRACE");
  CUresult r = cuCtxPushCurrent(h->ctx);
  if (r != CUDA_SUCCESS)
    return gdn_cu_fail(h, r, "cuCtxPushCurrent");
  static const struct {
    const char *name;
    size_t off, bytes;
  } bufs[] = {{"gdn_trace_scan", offsetof(gdn_trace, scan), sizeof t->scan},
              {"gdn_trace_out", offsetof(gdn_trace, out), sizeof t->out},
              {"gdn_trace_prod", offsetof(gdn_trace, prod), sizeof t->prod},
              {"gdn_trace_unit", offsetof(gdn_trace, unit), sizeof t->unit},
              {"gdn_trace_unit_step", offsetof(gdn_trace, unit_step), sizeof t->unit_step}};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0] && r == CUDA_SUCCESS; i++) {
    CUdeviceptr d;
    size_t bytes = 0;
    r = cuModuleGetGlobal(&d, &bytes, h->mod, bufs[i].name);
    if (r == CUDA_SUCCESS && bytes != bufs[i].bytes)
      r = CUDA_ERROR_INVALID_VALUE; /* a module built with other sizes */
    if (r == CUDA_SUCCESS)
      r = cuMemcpyDtoH((char *)t + bufs[i].off, d, bytes);
    if (r == CUDA_SUCCESS)
      r = cuMemsetD8(d, 0, bytes);
  }
  if (r == CUDA_SUCCESS) /* the clears are on the legacy stream: done before any later launch */
    r = cuCtxSynchronize();
  CUcontext popped;
  cuCtxPopCurrent(&popped);
  return r == CUDA_SUCCESS ? GDN_OK : gdn_cu_fail(h, r, "reading the trace");
}

gdn_status gdn_create(int device, gdn_handle **out) {
  return gdn_create_ex(device, 0, out, NULL, 0);
}

void gdn_destroy(gdn_handle *h) {
  if (!h)
    return;
  if (h->ctx && cuCtxPushCurrent(h->ctx) == CUDA_SUCCESS) {
    if (h->ws_event)
      cuEventSynchronize(h->ws_event);
    if (h->ws)
      cuMemFree(h->ws);
    if (h->flags) /* a graph captured with its slices must not outlive h */
      cuMemFree(h->flags);
    if (h->ws_event)
      cuEventDestroy(h->ws_event);
    if (h->mod)
      cuModuleUnload(h->mod);
    CUcontext popped;
    cuCtxPopCurrent(&popped);
  }
  if (h->ctx)
    cuDevicePrimaryCtxRelease(h->dev);
  pthread_mutex_destroy(&h->lock);
  free(h);
}
