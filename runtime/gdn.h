/* gdn.h: the public C API of libgdn, Gated Delta Net prefill on sm_90a.
 *
 * One call runs the whole prefill of a packed batch of sequences:
 *
 *     gdn_handle *h;
 *     gdn_create(0, &h);                      // device ordinal 0
 *     gdn_prefill_args a = gdn_prefill_args_default();
 *     a.q = q; a.k = k; a.v = v; a.o = o; ... // device pointers
 *     size_t ws;
 *     gdn_workspace_size(h, &a, &ws);         // or pass NULL and let h own it
 *     gdn_prefill(h, &a, workspace, ws, stream);
 *     gdn_destroy(h);
 *
 * Tensors (all on the device, contiguous, see docs/api.md):
 *   q            [T, Hq, 128]   bf16
 *   k            [T, Hk, 128]   bf16
 *   v            [T, Hv, 128]   bf16
 *   alpha        [T, Ho]        fp32, decay in (0, 1]; NULL means 1
 *   beta         [T, Ho]        fp32, write strength;  NULL means 1
 *   cu_seqlens   [N + 1]        int32, 0 = c0 < c1 < ... < cN = T; or NULL
 *                              with N = 1: one sequence of T tokens
 *   initial_state[N, Ho, 128, 128] fp32 ([V, K], K contiguous); NULL means 0
 *   final_state  [N, Ho, 128, 128] fp32; NULL means not wanted
 *   o            [T, Ho, 128]   bf16, written
 * with Ho = max(Hq, Hv) and the head relation MHA (Hq = Hk = Hv),
 * GQA (Hk = Hv, Hq a multiple of Hk) or GVA (Hq = Hk, Hv a multiple of Hq).
 *
 * Every function returns a status. A failed call launches nothing and writes
 * nothing; gdn_last_error() then holds a sentence naming the broken rule.
 * The host never reads cu_seqlens, so a call can be captured in a CUDA graph.
 * A handle may be used from several host threads on several streams at once;
 * calls that give their own workspace run concurrently, calls that use the
 * handle's workspace (workspace = 0) are ordered one after another.
 */
#ifndef GDN_H
#define GDN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GDN_API marks libgdn's exported functions: libgdn.so exports these and
 * nothing else (the runtime is compiled with -fvisibility=hidden), so its
 * internal names cannot clash with an application's. */
#if defined(__GNUC__)
#define GDN_API __attribute__((visibility("default")))
#else
#define GDN_API
#endif

#define GDN_HEAD_DIM 128
#define GDN_CHUNK 64

typedef enum gdn_status {
  GDN_OK = 0,
  GDN_ERR_INVALID_ARGUMENT = 1, /* shapes, head relation, alignment, scale  */
  GDN_ERR_UNSUPPORTED = 2,      /* a valid request this build cannot serve  */
  GDN_ERR_CUDA = 3,             /* a CUDA driver call failed                */
  GDN_ERR_NO_KERNEL = 4,        /* no loadable kernel for this device       */
  GDN_ERR_OUT_OF_MEMORY = 5,    /* host or device allocation failed         */
  GDN_ERR_WORKSPACE = 6         /* the caller's workspace is too small      */
} gdn_status;

typedef enum gdn_route {
  GDN_ROUTE_GENERIC = 0,        /* prepare + scan/output                   */
  GDN_ROUTE_REGISTER_REPLAY = 1,/* one fused 512-thread kernel             */
  GDN_ROUTE_PREDECESSOR_REPLAY = 2 /* prepare + replay/output, 256 threads */
} gdn_route;

typedef struct gdn_handle gdn_handle;

/* Device pointers are plain integers (CUdeviceptr), so the header needs no
 * CUDA include; a CUstream is passed as void *. */
typedef struct gdn_prefill_args {
  uint64_t q, k, v;             /* bf16 inputs                              */
  uint64_t alpha, beta;         /* fp32 [T, Ho] or 0                        */
  uint64_t cu_seqlens;          /* int32 [N + 1], or 0: one sequence of T   */
  uint64_t initial_state;       /* fp32 [N, Ho, 128, 128] or 0              */
  uint64_t final_state;         /* fp32 [N, Ho, 128, 128] or 0              */
  uint64_t o;                   /* bf16 [T, Ho, 128]                        */
  int64_t T;                    /* total tokens; 0 is a valid no-op         */
  int32_t N;                    /* sequences, 1 <= N <= T (any when T = 0)  */
  int32_t Hq, Hk, Hv;           /* head counts                              */
  int32_t head_dim;             /* must be 128                              */
  float scale;                  /* finite                                   */
  int32_t force_generic;        /* nonzero: take the generic route         */
} gdn_prefill_args;

/* Zero pointers, head_dim 128, scale 1/sqrt(128). */
GDN_API gdn_prefill_args gdn_prefill_args_default(void);

/* Creates a handle for CUDA device `device` (its primary context): loads
 * the embedded cubins, or compiles the embedded CUDA source with NVRTC when
 * they cannot be loaded (or when `flags` has GDN_CREATE_NVRTC). On failure
 * *out is NULL and, if `err` is given, it holds the reason. */
#define GDN_CREATE_NVRTC 1u
GDN_API gdn_status gdn_create(int device, gdn_handle **out);
GDN_API gdn_status gdn_create_ex(int device, unsigned flags, gdn_handle **out, char *err,
                                 size_t err_len);
GDN_API void gdn_destroy(gdn_handle *h);

/* Checks the arguments and says how many workspace bytes a call needs. */
GDN_API gdn_status gdn_workspace_size(gdn_handle *h, const gdn_prefill_args *a,
                                      size_t *bytes);

/* Checks the arguments and says which route the call would take. */
GDN_API gdn_status gdn_query_route(gdn_handle *h, const gdn_prefill_args *a,
                                   gdn_route *route);

/* Runs the prefill on `stream` (a CUstream, NULL for the default stream).
 * `workspace` may be 0, then the handle grows and owns one: its users are
 * ordered across streams, and growing it is not capturable in a graph.
 * Otherwise it must hold workspace_size bytes, 16-byte aligned. */
GDN_API gdn_status gdn_prefill(gdn_handle *h, const gdn_prefill_args *a,
                               uint64_t workspace, size_t workspace_bytes,
                               void *stream);

/* 1 if the handle's kernels were compiled by NVRTC at creation. */
GDN_API int gdn_uses_nvrtc(const gdn_handle *h);

/* Diagnostics (docs/trace.md). A handle created with GDN_CREATE_TRACE
 * compiles its kernels with NVRTC, with timestamps (%globaltimer, ns) that
 * every generic launch writes: per scan CTA (in gdn_scan's order: (rank *
 * Ho + head) * 2 + half) its start and the end of its state chain (row 0),
 * the times before and after each chunk's wait for its k/v/W stage (row
 * 1 + c, for c < GDN_TRACE_ROWS - 2), and the end of its output stores with
 * its chunk count (the last row); the output warpgroup's waits for each
 * chunk (out, row 1 + c); when the k/v/W producer had each chunk's stage
 * and when it had issued the chunk's loads (prod, row c); per prepare
 * unit (slot * Ho + head) its start
 * and end, and the ends of its stages (unit_step; docs/trace.md names
 * them). An entry not written since the last read is 0. For
 * measuring where a launch spends its time, not for production. */
#define GDN_CREATE_TRACE 2u
#define GDN_TRACE_CTAS 1024
#define GDN_TRACE_ROWS 130
#define GDN_TRACE_UNITS 16384
#define GDN_TRACE_STEPS 9
typedef struct gdn_trace {
  uint64_t scan[GDN_TRACE_CTAS][GDN_TRACE_ROWS][2];
  uint64_t out[GDN_TRACE_CTAS][GDN_TRACE_ROWS][2]; /* row 1 + c: the output
      warpgroup before and after its waits for chunk c's q/P stage and hand-off */
  uint64_t prod[GDN_TRACE_CTAS][GDN_TRACE_ROWS][2]; /* row c: the k/v/W producer
      has chunk c's stage (its wait for it is over), and has issued every load
      of it (W and g after the ready flag, where there is one) */
  uint64_t unit[GDN_TRACE_UNITS][2];
  uint64_t unit_step[GDN_TRACE_UNITS][GDN_TRACE_STEPS]; /* between start and end */
} gdn_trace;
/* Copies the timestamps written since the last read into *t and clears
 * them. Call it once the launches are complete (e.g. after
 * cuStreamSynchronize); a handle without GDN_CREATE_TRACE has none. */
GDN_API gdn_status gdn_trace_read(gdn_handle *h, gdn_trace *t);

GDN_API const char *gdn_status_string(gdn_status s);
GDN_API const char *gdn_route_name(gdn_route r);
/* "gdngen VERSION, kernels HASH": which generator and which kernels this
 * library carries (HASH: of the embedded CUDA sources). Needs no handle. */
GDN_API const char *gdn_version(void);
/* 1 where this library's kernels round the value operands P, W, X and Ub
 * to fp16, 0 where to bf16 (docs/numerics.md, "Why the value operands are
 * fp16"): which form of the staged reference they match. Needs no handle. */
GDN_API int gdn_value_operands_f16(void);
/* The last failure's sentence on this handle, "" if none. */
GDN_API const char *gdn_last_error(const gdn_handle *h);

#ifdef __cplusplus
}
#endif
#endif /* GDN_H */
