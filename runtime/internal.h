/* internal.h: libgdn's one internal header; who owns what.
 *
 *   check.c   argument rules, pure C (no CUDA call): the CPU tests and the
 *             fuzzer drive them directly
 *   route.c   which schedule serves a call, from host-visible facts alone
 *   handle.c  handles, module loading (cubin, else NVRTC), the flag arena,
 *             errors
 *   nvrtc.c   the NVRTC path: the embedded source compiled for the device
 *   launch.c  tensor maps, workspace layout, kernel launches
 */
#ifndef GDN_INTERNAL_H
#define GDN_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>

#include "gdn.h"
#include "gdn_kernels.h"

#define GDN_ERR_LEN 512
/* The handle's ready-flag arena: 16 bytes a prepare unit, so a captured
 * one-grid call of T = 4096 and 16 heads takes 17 KB of it. */
#define GDN_FLAG_ARENA_BYTES ((size_t)2 << 20)

struct gdn_handle {
  CUdevice dev;
  CUcontext ctx;              /* the device's primary context */
  CUmodule mod;
  CUfunction fn[GDN_K_COUNT];
  int from_nvrtc;             /* 1 if the kernels were compiled at create */
  int trace;                  /* 1 if created with GDN_CREATE_TRACE */
  int sms;                    /* multiprocessors the context may use */
  /* Ready flags for captured one-grid calls (launch.c): zeroed once at
   * create, handed out in slices no other call shares; 0 if none. */
  CUdeviceptr flags;
  size_t flags_bytes;
  atomic_size_t flags_used;
  pthread_mutex_t lock;       /* guards what follows */
  CUdeviceptr ws;             /* the handle's own workspace, or 0 */
  size_t ws_bytes;
  CUevent ws_event;           /* recorded after its last user's kernels */
  char err[GDN_ERR_LEN];
};

/* ---------------------------------------------------------- check.c */
/* The facts a call is planned from, derived once from the arguments. */
typedef struct gdn_plan {
  int64_t T;
  int N, Hq, Hk, Hv, Ho;
  int64_t slots;       /* chunk slots: T / 64 + N */
  size_t ws_p, ws_w, ws_g, ws_f, ws_bytes; /* workspace offsets and size */
  gdn_route route;
} gdn_plan;
gdn_status gdn_check_args(const gdn_prefill_args *a, gdn_plan *plan, char *msg, size_t n);

/* ---------------------------------------------------------- route.c */
/* The route table is generated (generated/gdn_routes.h, from gdngen's route
 * configuration); only route.c and the route tests include it. */
typedef struct gdn_route_key gdn_route_key;
gdn_route gdn_pick_route(const gdn_prefill_args *a, const gdn_plan *plan);
/* The table row whose key is exactly the call's, alpha and beta given; NULL
 * if none. Ignores force_generic and whether the schedule is built, so the
 * tests can see the match apart from the route taken. */
const gdn_route_key *gdn_route_lookup(const gdn_prefill_args *a);
/* The route a call with lookup result `hit` takes: pure, so a test can hand
 * it a row the build does not have (a schedule marked built). */
gdn_route gdn_route_decide(const gdn_route_key *hit, const gdn_prefill_args *a);

/* gdn_fused's grid: scan CTAs first, then prepare CTAs (GDN_FUSED_UNIT
 * maps them to units). Taken when gdn_prepare would be more than one wave
 * and the scan CTAs, which wait on flags that later CTAs set, take at most
 * half of the `sms` multiprocessors. Returns 0 when the call takes
 * gdn_prepare then gdn_scan instead. */
typedef struct gdn_fused_grid {
  int nscan, single; /* scan CTAs; prepare CTAs of one unit */
  int split;         /* each scan CTA as a cluster of a chain CTA and an output CTA */
  int64_t units;     /* prepare units: slots x Ho */
  unsigned ctas;
} gdn_fused_grid;
int gdn_fused_plan(const gdn_plan *p, int sms, gdn_fused_grid *g);
/* The chunk slots gdn_prepare's grid covers, and whether it runs as
 * gdn_prepare_lean (more units than one wave of gdn_prepare). */
int64_t gdn_prepare_slots(const gdn_plan *p);
int gdn_prepare_lean_plan(const gdn_plan *p, int sms);
/* Whether a call that takes gdn_prepare then a scan takes gdn_scan_pairs
 * (each scan CTA a pair) instead of gdn_scan. */
int gdn_scan_pairs_plan(const gdn_plan *p, int sms);
/* The lanes of gdn_scan_lanes: N (gdn_scan, a CTA for each sequence,
 * head and half), or fewer where that would take more than two waves of
 * the `sms` SMs. */
int gdn_scan_lanes(const gdn_plan *p, int sms);

/* --------------------------------------------------------- handle.c */
gdn_status gdn_fail(gdn_handle *h, gdn_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
gdn_status gdn_cu_fail(gdn_handle *h, CUresult r, const char *what);

/* ---------------------------------------------------------- nvrtc.c */
/* `trace`: with GDN_TRACE and the sizes of gdn.h defined (GDN_CREATE_TRACE). */
gdn_status gdn_nvrtc_module(gdn_handle *h, const char *name, const char *src, int trace,
                            CUmodule *mod);

/* --------------------------------------------------------- launch.c */
gdn_status gdn_launch_generic(gdn_handle *h, const gdn_prefill_args *a, const gdn_plan *p,
                              CUdeviceptr ws, CUstream stream);

#endif
