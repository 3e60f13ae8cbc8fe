/* api.c: the public calls that check, plan and dispatch. */
#include <math.h>
#include <string.h>

#include "embedded.h"
#include "internal.h"

gdn_prefill_args gdn_prefill_args_default(void) {
  gdn_prefill_args a;
  memset(&a, 0, sizeof a);
  a.N = 1;
  a.head_dim = GDN_HEAD_DIM;
  a.scale = 1.0f / sqrtf((float)GDN_HEAD_DIM);
  return a;
}

/* Checks the arguments; on failure the handle's error holds the reason. */
static gdn_status checked(gdn_handle *h, const gdn_prefill_args *a, gdn_plan *p) {
  char msg[GDN_ERR_LEN];
  gdn_status s = gdn_check_args(a, p, msg, sizeof msg);
  if (s != GDN_OK)
    return gdn_fail(h, s, "%s", msg);
  return GDN_OK;
}

gdn_status gdn_workspace_size(gdn_handle *h, const gdn_prefill_args *a, size_t *bytes) {
  gdn_plan p;
  if (!bytes)
    return gdn_fail(h, GDN_ERR_INVALID_ARGUMENT, "bytes is NULL");
  gdn_status s = checked(h, a, &p);
  if (s == GDN_OK)
    *bytes = a->T > 0 ? p.ws_bytes : 0;
  return s;
}

gdn_status gdn_query_route(gdn_handle *h, const gdn_prefill_args *a, gdn_route *route) {
  gdn_plan p;
  if (!route)
    return gdn_fail(h, GDN_ERR_INVALID_ARGUMENT, "route is NULL");
  gdn_status s = checked(h, a, &p);
  if (s == GDN_OK)
    *route = p.route;
  return s;
}

/* The handle's own workspace: one buffer, grown to the largest call seen.
 * Its users are ordered one after another, on whatever streams: each call
 * waits for the previous user's event, and the buffer is freed only once
 * that event has completed. The lock is held from the wait to the record,
 * so no two calls can interleave there. (A stream being captured into a
 * graph skips the cross-stream wait: give such calls their own workspace.) */
static gdn_status launch_owned(gdn_handle *h, const gdn_prefill_args *a, const gdn_plan *p,
                               CUstream stream) {
  pthread_mutex_lock(&h->lock);
  CUresult r = CUDA_SUCCESS;
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
  cuStreamIsCapturing(stream, &cap);
  if (!h->ws_event)
    r = cuEventCreate(&h->ws_event, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS && h->ws_bytes < p->ws_bytes) {
    if (h->ws && (r = cuEventSynchronize(h->ws_event)) == CUDA_SUCCESS)
      cuMemFree(h->ws);
    h->ws = 0;
    h->ws_bytes = 0;
    if (r == CUDA_SUCCESS && (r = cuMemAlloc(&h->ws, p->ws_bytes)) == CUDA_SUCCESS)
      h->ws_bytes = p->ws_bytes;
  }
  if (r == CUDA_SUCCESS && cap == CU_STREAM_CAPTURE_STATUS_NONE)
    r = cuStreamWaitEvent(stream, h->ws_event, 0);
  gdn_status s = r == CUDA_SUCCESS ? GDN_OK : GDN_ERR_CUDA;
  CUresult failed = r;
  if (s == GDN_OK)
    s = gdn_launch_generic(h, a, p, h->ws, stream);
  if (s == GDN_OK && cap == CU_STREAM_CAPTURE_STATUS_NONE)
    r = cuEventRecord(h->ws_event, stream);
  pthread_mutex_unlock(&h->lock);
  if (failed != CUDA_SUCCESS)
    return gdn_cu_fail(h, failed, "the handle's workspace");
  return r == CUDA_SUCCESS ? s : gdn_cu_fail(h, r, "cuEventRecord (workspace)");
}

gdn_status gdn_prefill(gdn_handle *h, const gdn_prefill_args *a, uint64_t workspace,
                       size_t workspace_bytes, void *stream) {
  if (!h)
    return GDN_ERR_INVALID_ARGUMENT;
  gdn_plan p;
  gdn_status s = checked(h, a, &p);
  if (s != GDN_OK || a->T == 0)
    return s;
  if (workspace && workspace_bytes < p.ws_bytes)
    return gdn_fail(h, GDN_ERR_WORKSPACE, "workspace of %zu bytes, this call needs %zu",
                    workspace_bytes, p.ws_bytes);
  if (workspace % 16 != 0)
    return gdn_fail(h, GDN_ERR_INVALID_ARGUMENT, "workspace (0x%llx) is not 16-byte aligned",
                    (unsigned long long)workspace);
  CUresult r = cuCtxPushCurrent(h->ctx);
  if (r != CUDA_SUCCESS)
    return gdn_cu_fail(h, r, "cuCtxPushCurrent");
  if (workspace)
    s = gdn_launch_generic(h, a, &p, workspace, (CUstream)stream);
  else
    s = launch_owned(h, a, &p, (CUstream)stream);
  CUcontext popped;
  cuCtxPopCurrent(&popped);
  return s;
}

const char *gdn_status_string(gdn_status s) {
  static const char *const names[] = {
      [GDN_OK] = "success",
      [GDN_ERR_INVALID_ARGUMENT] = "invalid argument",
      [GDN_ERR_UNSUPPORTED] = "unsupported",
      [GDN_ERR_CUDA] = "CUDA error",
      [GDN_ERR_NO_KERNEL] = "no kernel for this device",
      [GDN_ERR_OUT_OF_MEMORY] = "out of memory",
      [GDN_ERR_WORKSPACE] = "workspace too small",
  };
  if ((unsigned)s < sizeof names / sizeof names[0] && names[s])
    return names[s];
  return "unknown status";
}

const char *gdn_version(void) { return gdn_build_id; }

int gdn_value_operands_f16(void) { return GDN_VALUE_F16; }

const char *gdn_route_name(gdn_route r) {
  static const char *const names[] = {
      [GDN_ROUTE_GENERIC] = "generic",
      [GDN_ROUTE_REGISTER_REPLAY] = "register_replay",
      [GDN_ROUTE_PREDECESSOR_REPLAY] = "predecessor_replay",
  };
  if ((unsigned)r < sizeof names / sizeof names[0])
    return names[r];
  return "unknown route";
}

const char *gdn_last_error(const gdn_handle *h) { return h ? h->err : "no handle"; }
