/* check.c: every rule a call must satisfy before anything is launched.
 * Pure C: no CUDA call, so the CPU tests and the fuzzer drive it directly.
 * Each refusal names the broken rule and the values that broke it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

#define GRID_LIMIT 65535 /* gridDim.y and .z carry heads and sequences */

static gdn_status refuse(char *msg, size_t n, gdn_status s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static gdn_status refuse(char *msg, size_t n, gdn_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, n, fmt, ap);
  va_end(ap);
  return s;
}

static gdn_status check_heads(const gdn_prefill_args *a, char *msg, size_t n) {
  int q = a->Hq, k = a->Hk, v = a->Hv;
  if (q < 1 || k < 1 || v < 1)
    return refuse(msg, n, GDN_ERR_INVALID_ARGUMENT,
                  "head counts must be >= 1 (Hq=%d, Hk=%d, Hv=%d)", q, k, v);
  if (q > GRID_LIMIT || v > GRID_LIMIT)
    return refuse(msg, n, GDN_ERR_UNSUPPORTED, "more than %d heads (Hq=%d, Hv=%d)", GRID_LIMIT, q, v);
  int mha = q == k && k == v, gqa = k == v && q % k == 0, gva = q == k && v % q == 0;
  if (!(mha || gqa || gva))
    return refuse(msg, n, GDN_ERR_INVALID_ARGUMENT,
                  "head counts Hq=%d, Hk=%d, Hv=%d are not MHA (all equal), GQA (Hk = Hv, Hq a "
                  "multiple of Hk) or GVA (Hq = Hk, Hv a multiple of Hq)", q, k, v);
  return GDN_OK;
}

static gdn_status check_pointer(const char *name, uint64_t p, int required, char *msg, size_t n) {
  if (!p && required)
    return refuse(msg, n, GDN_ERR_INVALID_ARGUMENT, "%s is NULL", name);
  if (p % 16 != 0)
    return refuse(msg, n, GDN_ERR_INVALID_ARGUMENT, "%s (0x%llx) is not 16-byte aligned", name,
                  (unsigned long long)p);
  return GDN_OK;
}

static gdn_status check_pointers(const gdn_prefill_args *a, char *msg, size_t n) {
  const struct {
    const char *name;
    uint64_t p;
    int required;
  } rows[] = {
      {"q", a->q, 1}, {"k", a->k, 1}, {"v", a->v, 1}, {"o", a->o, 1},
      {"alpha", a->alpha, 0}, {"beta", a->beta, 0},
      {"cu_seqlens", a->cu_seqlens, a->N != 1},
      {"initial_state", a->initial_state, 0}, {"final_state", a->final_state, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    gdn_status s = check_pointer(rows[i].name, rows[i].p, rows[i].required, msg, n);
    if (s != GDN_OK)
      return s;
  }
  return GDN_OK;
}

static gdn_status check_sizes(const gdn_prefill_args *a, char *msg, size_t n) {
  if (a->T < 0)
    return refuse(msg, n, GDN_ERR_INVALID_ARGUMENT, "T = %lld is negative", (long long)a->T);
  if (a->T == 0)
    return GDN_OK;
  if (a->N < 1 || a->N > a->T)
    return refuse(msg, n, GDN_ERR_INVALID_ARGUMENT,
                  "N = %d sequences cannot hold T = %lld tokens (need 1 <= N <= T: every "
                  "sequence has at least one token)", a->N, (long long)a->T);
  if (a->N > GRID_LIMIT)
    return refuse(msg, n, GDN_ERR_UNSUPPORTED, "N = %d exceeds %d sequences", a->N, GRID_LIMIT);
  if (a->T > INT32_MAX - 64)
    return refuse(msg, n, GDN_ERR_UNSUPPORTED, "T = %lld exceeds 2^31 - 65 tokens", (long long)a->T);
  return GDN_OK;
}

/* Workspace: P, W (fp16 64 x 64), g (fp32 2 x 64) and the ready flags of
 * gdn_fused (4 x u32) per slot and head. */
static gdn_status plan_workspace(gdn_plan *p, char *msg, size_t n) {
  p->slots = p->T / 64 + p->N;
  int64_t tiles = p->slots * p->Ho;
  if (tiles * 64 > INT32_MAX)
    return refuse(msg, n, GDN_ERR_UNSUPPORTED,
                  "T = %lld with %d output heads needs more workspace rows than TMA addresses",
                  (long long)p->T, p->Ho);
  p->ws_p = 0;
  p->ws_w = (size_t)tiles * GDN_WS_TILE_BYTES;
  p->ws_g = 2 * (size_t)tiles * GDN_WS_TILE_BYTES;
  p->ws_f = p->ws_g + (size_t)tiles * GDN_WS_G_BYTES;
  p->ws_bytes = p->ws_f + (size_t)tiles * GDN_WS_FLAG_BYTES;
  return GDN_OK;
}

gdn_status gdn_check_args(const gdn_prefill_args *a, gdn_plan *plan, char *msg, size_t n) {
  if (!a)
    return refuse(msg, n, GDN_ERR_INVALID_ARGUMENT, "the argument struct is NULL");
  if (a->head_dim != GDN_HEAD_DIM)
    return refuse(msg, n, GDN_ERR_INVALID_ARGUMENT, "head_dim = %d; only %d is supported",
                  a->head_dim, GDN_HEAD_DIM);
  gdn_status s = check_heads(a, msg, n);
  if (s == GDN_OK && !isfinite(a->scale))
    s = refuse(msg, n, GDN_ERR_INVALID_ARGUMENT, "scale (%g) is not finite", (double)a->scale);
  if (s == GDN_OK)
    s = check_sizes(a, msg, n);
  if (s == GDN_OK && a->T > 0)
    s = check_pointers(a, msg, n);
  if (s != GDN_OK)
    return s;
  *plan = (gdn_plan){.T = a->T, .N = a->N, .Hq = a->Hq, .Hk = a->Hk, .Hv = a->Hv,
                     .Ho = a->Hq > a->Hv ? a->Hq : a->Hv};
  if (a->T > 0 && (s = plan_workspace(plan, msg, n)) != GDN_OK)
    return s;
  plan->route = gdn_pick_route(a, plan);
  if (n)
    msg[0] = '\0';
  return GDN_OK;
}
