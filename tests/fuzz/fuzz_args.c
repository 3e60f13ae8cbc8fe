/* fuzz_args.c: a libFuzzer target for libgdn's argument rules.
 *
 * The input bytes are decoded into a gdn_prefill_args (below: "The input
 * format") and handed to gdn_check_args (runtime/check.c, with
 * runtime/route.c), linked directly: no CUDA library, no GPU. The target
 * must never crash or hang, and check.c must agree with an oracle written
 * here from the public contract (shared/reference/gdn.md, runtime/gdn.h,
 * docs/api.md "The argument rules"), not from check.c:
 *   - a call the oracle finds invalid, or beyond a documented limit, is
 *     never accepted;
 *   - a valid call is never refused as GDN_ERR_INVALID_ARGUMENT;
 *   - GDN_ERR_UNSUPPORTED comes only for the documented limits: more than
 *     65535 sequences or heads, T > 2^31 - 65, or more than 2^31 - 1
 *     workspace rows ((T / 64 + N) * Ho * 64); a valid call beyond one of
 *     them gets exactly that status;
 *   - an accepted call has a consistent plan (T, N, heads, Ho = max(Hq, Hv),
 *     slots = T / 64 + N, workspace regions disjoint, aligned and inside
 *     ws_bytes), the route the route table gives it, and an empty message;
 *   - a refused call has a message of 1 .. 511 bytes, and a short buffer
 *     gets the same message truncated and terminated, nothing written past.
 * Any disagreement prints the call and abort()s, so libFuzzer keeps the
 * input as a crash file (docs/safety.md: it then joins tests/fuzz/corpus/).
 *
 * Build and run: bash tests/fuzz/run.sh (clang -fsanitize=fuzzer,address,
 * undefined). A crash file replays with build/fuzz/fuzz_args FILE.
 *
 * The input format, read front to back; bytes past the end read as 0, so
 * every input, the empty one included, decodes to some call:
 *   shape    1 byte mode m. m % 16 == 15: a route-table key (1 byte row,
 *            1 byte near-miss edit); else T, N and the heads, each a mode
 *            byte and its payload (draw_T, draw_N, draw_heads)
 *   head_dim 1 byte mode (+1)           scale  1 byte mode (+1 or +4)
 *   pointers q k v o alpha beta cu_seqlens initial_state final_state:
 *            each 1 byte mode and 0, 1, 4, 5 or 8 bytes (draw_pointer)
 *   force_generic 1 byte mode (+4)      message buffer length: 2 bytes
 * The seeds in tests/fuzz/corpus/ follow this format and are named for the
 * call they decode to; FUZZ_ARGS_PRINT=1 build/fuzz/fuzz_args FILE... prints
 * each input's call, status and message.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "gdn_routes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------ the contract */
/* Constants as the contract states them, not taken from check.c. */
#define HEAD_DIM 128
#define GRID_MAX 65535                      /* sequences and heads      */
#define T_MAX ((int64_t)INT32_MAX - 64)     /* 2^31 - 65 tokens         */
#define ROWS_MAX ((int64_t)INT32_MAX)       /* workspace tensor-map rows */
#define TILE_BYTES (64 * 64 * 2)            /* P or W: 64 x 64 bf16     */
#define GATE_BYTES (2 * 64 * 4)             /* g and g_L / g: 2 x 64 fp32 */
#define FLAG_BYTES (4 * 4)                  /* ready flags: 4 x u32      */
#define MSG_LIMIT 512                       /* GDN_ERR_LEN               */
#define MSG_ROOM 4096                       /* room to see an overlong one */

/* ---------------------------------------------------- the byte reader */
typedef struct Bytes {
  const uint8_t *p;
  size_t n;
} Bytes;

/* The next `count` bytes, big-endian; 0 past the end. */
static uint64_t take(Bytes *b, int count) {
  uint64_t v = 0;
  for (int i = 0; i < count; i++) {
    uint8_t c = 0;
    if (b->n) {
      c = *b->p++;
      b->n--;
    }
    v = v << 8 | c;
  }
  return v;
}

static unsigned u8(Bytes *b) { return (unsigned)take(b, 1); }

/* Two's-complement narrowing, spelled out so that no conversion is left to
 * the compiler's choice. */
static int32_t wrap32(int64_t x) {
  uint32_t u = (uint32_t)(uint64_t)x;
  int32_t s;
  memcpy(&s, &u, sizeof s);
  return s;
}

static int64_t as_i64(uint64_t u) {
  int64_t s;
  memcpy(&s, &u, sizeof s);
  return s;
}

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
#define PICK(b, table) ((table)[u8(b) % COUNT_OF(table)])

/* Values at and around every boundary of the rules. */
static const int64_t T_EDGES[] = {
    0, 1, 2, 63, 64, 65, 127, 128, 129, 4095, 4096, 4097, 8192,
    ((int64_t)1 << 29) - 64, (int64_t)1 << 29, T_MAX - 1, T_MAX, T_MAX + 1, INT32_MAX,
    (int64_t)INT32_MAX + 1, (int64_t)1 << 40, INT64_MAX, -1, -64, INT32_MIN, INT64_MIN};
static const int32_t COUNT_EDGES[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 255, 256, 21845, 32767,
                                      32768, 65534, 65535, 65536, 65537, 131070, INT32_MAX,
                                      -1, -2, -128, INT32_MIN};
static const int32_t HEAD_DIM_EDGES[] = {0, 1, 64, 127, 129, 256, -128, INT32_MIN, INT32_MAX, 128};
static const uint32_t SCALE_EDGES[] = {
    0x7fc00000u, 0xffc00000u, 0x7f800001u, /* quiet NaN, negative NaN, signalling NaN */
    0x7f800000u, 0xff800000u,              /* +inf, -inf                            */
    0x00000000u, 0x80000000u,              /* +0, -0                                */
    0x00000001u, 0x807fffffu, 0x00800000u, /* smallest denormal, largest negative
                                              denormal, smallest normal             */
    0x7f7fffffu, 0xff7fffffu,              /* +-FLT_MAX                             */
    0x3f800000u, 0x3f3ae148u, 0x3db504f3u  /* 1, 0.73, 1 / sqrt(128)                */
};
static const uint64_t PTR_EDGES[] = {0x10, 0x8, 0x1, 0xfffffffffffffff0u, 0xffffffffffffffffu,
                                     0x8000000000000000u, 0x7ffffffffffffff0u, 0x100000000u};

/* ------------------------------------------------------------ decoding */
static int64_t draw_T(Bytes *b) {
  switch (u8(b) % 6) {
  case 0: return (int64_t)(take(b, 2) % 4097);
  case 1: return PICK(b, T_EDGES);
  case 2: { /* an edge and a small step off it, wrapping like the hardware */
    int64_t e = PICK(b, T_EDGES);
    return as_i64((uint64_t)e + (uint64_t)(int64_t)(int8_t)u8(b));
  }
  case 3: return as_i64(take(b, 8));
  case 4: return (int64_t)(take(b, 4) % (1u << 24));
  default: return 1 + (int64_t)(take(b, 2) % 4096);
  }
}

static int32_t draw_N(Bytes *b, int64_t T) {
  switch (u8(b) % 6) {
  case 0: return 1;
  case 1: { /* in [1, T], past the grid limit when T allows */
    uint64_t span = T >= 1 && T <= 70000 ? (uint64_t)T : 70000;
    return (int32_t)(1 + take(b, 4) % span);
  }
  case 2: return PICK(b, COUNT_EDGES);
  case 3: return wrap32((int64_t)take(b, 4));
  case 4: return wrap32(as_i64((uint64_t)T + (uint64_t)(int64_t)(int8_t)u8(b)));
  default: return (int32_t)(1 + u8(b) % 64);
  }
}

/* A head count or a multiplier: mostly small, sometimes an edge. */
static int32_t draw_count(Bytes *b) {
  if (u8(b) % 4 != 3)
    return (int32_t)(1 + u8(b) % 16);
  return PICK(b, COUNT_EDGES);
}

/* A valid relation of kind 0 (MHA), 1 (GQA) or 2 (GVA) from h and m; the
 * products may overflow int32 on purpose. */
static void relation(int kind, int32_t h, int32_t m, int32_t *q, int32_t *k, int32_t *v) {
  int32_t hm = wrap32((int64_t)h * m);
  *q = kind == 1 ? hm : h;
  *k = h;
  *v = kind == 2 ? hm : h;
}

static void draw_heads(Bytes *b, gdn_prefill_args *a) {
  unsigned mode = u8(b) % 6;
  if (mode == 3) { /* three independent counts */
    a->Hq = draw_count(b), a->Hk = draw_count(b), a->Hv = draw_count(b);
    return;
  }
  int kind = mode < 3 ? (int)mode : (int)(u8(b) % 3);
  int32_t h = draw_count(b), m = draw_count(b);
  relation(kind, h, m, &a->Hq, &a->Hk, &a->Hv);
  if (mode == 4) { /* a valid relation with one count nudged */
    int32_t *which[] = {&a->Hq, &a->Hk, &a->Hv};
    int32_t *c = which[u8(b) % 3];
    *c = wrap32((int64_t)*c + (int8_t)u8(b));
  }
}

/* 16-byte aligned and never 0. */
static uint64_t aligned(Bytes *b) { return 0x7f0000000000u + (take(b, 4) << 4); }

static uint64_t draw_pointer(Bytes *b) {
  switch (u8(b) % 8) {
  case 0: return 0;
  case 1: {
    uint64_t base = aligned(b);
    return base + 1 + u8(b) % 15;
  }
  case 2: return take(b, 8);
  case 3: return PICK(b, PTR_EDGES);
  default: return aligned(b);
  }
}

static float draw_scale(Bytes *b) {
  uint32_t bits;
  switch (u8(b) % 8) {
  case 0: bits = PICK(b, SCALE_EDGES); break;
  case 1: bits = (uint32_t)take(b, 4); break;
  case 2: bits = 0x3f3ae148u; break; /* 0.73, the benchmark's */
  default: bits = 0x3db504f3u; break; /* 1 / sqrt(128) */
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static int32_t draw_force_generic(Bytes *b) {
  switch (u8(b) % 4) {
  case 1: return 1;
  case 2: return wrap32((int64_t)take(b, 4));
  default: return 0;
  }
}

/* A route-table key: the shape a specialised schedule is configured for,
 * exactly or as a near miss (gdn.md: one token more or less, one head
 * different, a missing gate, a different state mode). Two bytes: the row
 * and the edit (0-3 none, 4 T + 1, 5 T - 1, 6 N + 1, 7 Hv + Hq, 8 alpha
 * NULL, 9 the other initial-state mode). The gates and states are set after
 * the pointers are drawn (apply_route_key). */
typedef struct RouteKey {
  int used;
  unsigned row, edit;
} RouteKey;

static RouteKey draw_route_key(Bytes *b, gdn_prefill_args *a) {
  RouteKey k = {1, 0, 0};
  k.row = u8(b); /* two statements: an initializer list's order is unspecified */
  k.edit = u8(b) % 10;
#if GDN_ROUTE_ROWS > 0
  const gdn_route_key *r = &gdn_route_table[k.row % GDN_ROUTE_ROWS];
  a->T = r->T, a->N = r->N, a->Hq = r->Hq, a->Hk = r->Hk, a->Hv = r->Hv;
  if (k.edit == 4 || k.edit == 5)
    a->T += k.edit == 4 ? 1 : -1;
  if (k.edit == 6)
    a->N += 1;
  if (k.edit == 7) /* still a valid relation: GVA with more value heads */
    a->Hv += a->Hq;
#else
  a->T = 300, a->N = 3, a->Hq = a->Hk = a->Hv = 4;
#endif
  return k;
}

static void apply_route_key(gdn_prefill_args *a, RouteKey k) {
#if GDN_ROUTE_ROWS > 0
  const gdn_route_key *r = &gdn_route_table[k.row % GDN_ROUTE_ROWS];
  a->alpha = k.edit == 8 ? 0 : 0x7e0000000100u;
  a->beta = 0x7e0000000200u;
  int init = k.edit == 9 ? !r->init : r->init;
  a->initial_state = init ? 0x7e0000000300u : 0;
  a->final_state = r->final ? 0x7e0000000400u : 0;
#else
  (void)a, (void)k;
#endif
}

typedef struct Input {
  gdn_prefill_args a;
  size_t msg_len; /* the short message buffer: 1 .. 600 bytes */
} Input;

static Input decode(const uint8_t *data, size_t size) {
  Bytes b = {data, size};
  Input in;
  memset(&in, 0, sizeof in);
  gdn_prefill_args *a = &in.a;
  RouteKey key = {0, 0, 0};
  if (u8(&b) % 16 == 15) {
    key = draw_route_key(&b, a);
  } else {
    a->T = draw_T(&b);
    a->N = draw_N(&b, a->T);
    draw_heads(&b, a);
  }
  a->head_dim = u8(&b) % 8 == 7 ? PICK(&b, HEAD_DIM_EDGES) : HEAD_DIM;
  a->scale = draw_scale(&b);
  uint64_t *ptrs[] = {&a->q, &a->k, &a->v, &a->o, &a->alpha, &a->beta, &a->cu_seqlens,
                      &a->initial_state, &a->final_state};
  for (size_t i = 0; i < COUNT_OF(ptrs); i++)
    *ptrs[i] = draw_pointer(&b);
  if (key.used)
    apply_route_key(a, key);
  a->force_generic = draw_force_generic(&b);
  in.msg_len = 1 + (size_t)(take(&b, 2) % 600);
  return in;
}

/* ------------------------------------------------------------ the oracle */
typedef struct Verdict {
  int valid;         /* the contract accepts the call                     */
  int over_limit;    /* the call exceeds a documented limit of this build */
  const char *why;   /* the first broken rule found, for the report       */
  const char *limit; /* the first limit exceeded                          */
} Verdict;

static void broken(Verdict *v, const char *why) {
  if (v->valid)
    v->why = why;
  v->valid = 0;
}

static void beyond(Verdict *v, const char *limit) {
  if (!v->over_limit)
    v->limit = limit;
  v->over_limit = 1;
}

/* Finite: the exponent field is not all ones (IEEE 754 binary32). */
static int finite_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return ((u >> 23) & 0xffu) != 0xffu;
}

/* gdn.md: MHA (Hq = Hk = Hv), GQA (Hk = Hv, Hq a multiple of Hk) or GVA
 * (Hq = Hk, Hv a multiple of Hq), every count at least 1. */
static int heads_related(int32_t q, int32_t k, int32_t v) {
  if (q < 1 || k < 1 || v < 1)
    return 0;
  return (q == k && k == v) || (k == v && q % k == 0) || (q == k && v % q == 0);
}

static void oracle_pointers(const gdn_prefill_args *a, Verdict *v) {
  if (!a->q || !a->k || !a->v || !a->o)
    broken(v, "q, k, v and o are required");
  if (!a->cu_seqlens && a->N != 1)
    broken(v, "cu_seqlens may be NULL only with N = 1");
  const uint64_t all[] = {a->q, a->k, a->v, a->o, a->alpha, a->beta, a->cu_seqlens,
                          a->initial_state, a->final_state};
  for (size_t i = 0; i < COUNT_OF(all); i++)
    if (all[i] & 15)
      broken(v, "every given pointer is 16-byte aligned");
}

/* The rules of docs/api.md in contract terms. T = 0 is a no-op that needs
 * no N and no pointer; the head limit is checked before that (rule 4). */
static Verdict oracle(const gdn_prefill_args *a) {
  Verdict v = {1, 0, "", ""};
  if (a->head_dim != HEAD_DIM)
    broken(&v, "head_dim is 128");
  if (!heads_related(a->Hq, a->Hk, a->Hv))
    broken(&v, "heads are MHA, GQA or GVA");
  if (!finite_bits(a->scale))
    broken(&v, "scale is finite");
  if (a->T < 0)
    broken(&v, "T >= 0");
  if (a->Hq > GRID_MAX || a->Hk > GRID_MAX || a->Hv > GRID_MAX)
    beyond(&v, "at most 65535 heads");
  if (a->T <= 0)
    return v;
  if (a->N < 1 || a->N > a->T)
    broken(&v, "1 <= N <= T");
  oracle_pointers(a, &v);
  if (a->N > GRID_MAX)
    beyond(&v, "at most 65535 sequences");
  if (a->T > T_MAX)
    beyond(&v, "T <= 2^31 - 65");
  /* Rows: only computed where every factor is in range, so it fits int64. */
  int heads_in_range = a->Hq >= 1 && a->Hq <= GRID_MAX && a->Hv >= 1 && a->Hv <= GRID_MAX;
  if (a->T <= T_MAX && a->N >= 1 && a->N <= GRID_MAX && heads_in_range) {
    int64_t Ho = a->Hq > a->Hv ? a->Hq : a->Hv;
    if ((a->T / 64 + a->N) * Ho * 64 > ROWS_MAX)
      beyond(&v, "(T / 64 + N) * Ho * 64 <= 2^31 - 1 workspace rows");
  }
  return v;
}

/* The route the configuration gives a call (gdn.md "how a call is routed",
 * generated/gdn_routes.h): an exact key with both gates takes its row's
 * schedule if this build has it; everything else is generic. */
static gdn_route expected_route(const gdn_prefill_args *a) {
  if (a->force_generic || !a->alpha || !a->beta)
    return GDN_ROUTE_GENERIC;
  for (int i = 0; i < GDN_ROUTE_ROWS; i++) {
    const gdn_route_key *r = &gdn_route_table[i];
    if (r->T == a->T && r->N == a->N && r->Hq == a->Hq && r->Hk == a->Hk && r->Hv == a->Hv &&
        r->init == (a->initial_state != 0) && r->final == (a->final_state != 0))
      return r->built ? r->route : GDN_ROUTE_GENERIC;
  }
  return GDN_ROUTE_GENERIC;
}

/* ------------------------------------------------------------ reporting */
static void describe(const gdn_prefill_args *a) {
  uint32_t sb;
  memcpy(&sb, &a->scale, sizeof sb);
  fprintf(stderr,
          "  T=%lld N=%d Hq=%d Hk=%d Hv=%d head_dim=%d scale=%g (0x%08x) force_generic=%d\n"
          "  q=0x%llx k=0x%llx v=0x%llx o=0x%llx alpha=0x%llx beta=0x%llx\n"
          "  cu_seqlens=0x%llx initial_state=0x%llx final_state=0x%llx\n",
          (long long)a->T, a->N, a->Hq, a->Hk, a->Hv, a->head_dim, (double)a->scale, sb,
          a->force_generic, (unsigned long long)a->q, (unsigned long long)a->k,
          (unsigned long long)a->v, (unsigned long long)a->o, (unsigned long long)a->alpha,
          (unsigned long long)a->beta, (unsigned long long)a->cu_seqlens,
          (unsigned long long)a->initial_state, (unsigned long long)a->final_state);
}

static void disagree(const gdn_prefill_args *a, const Verdict *v, gdn_status s, const char *msg,
                     const char *what) {
  fprintf(stderr, "fuzz_args: %s\n", what);
  describe(a);
  fprintf(stderr, "  check.c: status %d, message \"%s\"\n", (int)s, msg);
  fprintf(stderr, "  oracle: %s (%s), %s (%s)\n", v->valid ? "valid" : "invalid", v->why,
          v->over_limit ? "beyond a limit" : "within the limits", v->limit);
  abort();
}

/* ------------------------------------------------------------- the checks */
static size_t bounded_len(const char *s, size_t room) {
  size_t n = 0;
  while (n < room && s[n])
    n++;
  return n;
}

/* Three half-open byte ranges, pairwise disjoint. */
static int disjoint(const uint64_t lo[4], const uint64_t hi[4]) {
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      if (lo[i] < hi[j] && lo[j] < hi[i])
        return 0;
  return 1;
}

static void check_plan(const gdn_prefill_args *a, const Verdict *v, const gdn_plan *p) {
  int32_t Ho = a->Hq > a->Hv ? a->Hq : a->Hv;
  if (p->T != a->T || p->N != a->N || p->Hq != a->Hq || p->Hk != a->Hk || p->Hv != a->Hv ||
      p->Ho != Ho)
    disagree(a, v, GDN_OK, "", "the plan does not carry T, N, the heads and Ho = max(Hq, Hv)");
  if ((int)p->route != (int)expected_route(a))
    disagree(a, v, GDN_OK, "", "the plan's route is not the one the route table gives");
  if (a->T == 0)
    return; /* a no-op: nothing is planned */
  if (p->slots != a->T / 64 + a->N)
    disagree(a, v, GDN_OK, "", "slots != T / 64 + N");
  uint64_t tiles = (uint64_t)p->slots * (uint64_t)Ho;
  uint64_t lo[4] = {p->ws_p, p->ws_w, p->ws_g, p->ws_f};
  uint64_t hi[4] = {p->ws_p + tiles * TILE_BYTES, p->ws_w + tiles * TILE_BYTES,
                    p->ws_g + tiles * GATE_BYTES, p->ws_f + tiles * FLAG_BYTES};
  if ((lo[0] | lo[1] | lo[2] | lo[3]) % 16)
    disagree(a, v, GDN_OK, "", "a workspace region is not 16-byte aligned");
  for (int i = 0; i < 4; i++)
    if (hi[i] < lo[i] || hi[i] > p->ws_bytes)
      disagree(a, v, GDN_OK, "", "a workspace region ends past ws_bytes");
  if (!disjoint(lo, hi))
    disagree(a, v, GDN_OK, "", "the workspace regions P, W, g and the flags overlap");
}

/* Routing reads host-visible facts only: other pointer values (same ones
 * NULL) and another finite scale must give the same verdict and route. */
static void check_route_ignores_values(const gdn_prefill_args *a, const Verdict *v,
                                       const gdn_plan *p) {
  gdn_prefill_args b = *a;
  uint64_t *ptrs[] = {&b.q, &b.k, &b.v, &b.o, &b.alpha, &b.beta, &b.cu_seqlens,
                      &b.initial_state, &b.final_state};
  for (size_t i = 0; i < COUNT_OF(ptrs); i++)
    if (*ptrs[i])
      *ptrs[i] = 0x100000u * (i + 1);
  b.scale = -2.5f;
  gdn_plan q;
  char msg[MSG_ROOM];
  gdn_status s = gdn_check_args(&b, &q, msg, sizeof msg);
  if (s != GDN_OK || q.route != p->route || q.ws_bytes != p->ws_bytes)
    disagree(a, v, s, msg, "other pointer values or scale changed the verdict, route or size");
}

/* The same call with a buffer of exactly `len` bytes (ASan sees a write
 * past it): the same status, the message truncated and terminated. */
static void check_short_buffer(const gdn_prefill_args *a, const Verdict *v, gdn_status want,
                               const char *full, size_t len) {
  char *buf = malloc(len);
  if (!buf)
    return;
  memset(buf, 'x', len);
  gdn_plan p;
  gdn_status s = gdn_check_args(a, &p, buf, len);
  size_t full_len = strlen(full), want_len = full_len < len - 1 ? full_len : len - 1;
  if (s != want)
    disagree(a, v, s, full, "a shorter message buffer changed the status");
  if (bounded_len(buf, len) != want_len || memcmp(buf, full, want_len) != 0)
    disagree(a, v, s, full, "the message in a short buffer is not the truncated message");
  free(buf);
}

static void check_refusal(const gdn_prefill_args *a, const Verdict *v, gdn_status s,
                          const char *msg) {
  size_t len = bounded_len(msg, MSG_ROOM);
  if (len == MSG_ROOM)
    disagree(a, v, s, "(unterminated)", "the message is not NUL-terminated");
  if (len == 0 || len >= MSG_LIMIT)
    disagree(a, v, s, msg, "a refusal's message must have 1 .. 511 bytes");
}

/* check.c against the oracle: see the top of the file. */
static void check_status(const gdn_prefill_args *a, const Verdict *v, gdn_status s,
                         const char *msg) {
  if (s == GDN_OK && !v->valid)
    disagree(a, v, s, msg, "accepted a call the contract forbids");
  if (s == GDN_OK && v->over_limit)
    disagree(a, v, s, msg, "accepted a call beyond a documented limit");
  if (s == GDN_ERR_INVALID_ARGUMENT && v->valid)
    disagree(a, v, s, msg, "refused a valid call as an invalid argument");
  if (s == GDN_ERR_UNSUPPORTED && !v->over_limit)
    disagree(a, v, s, msg, "GDN_ERR_UNSUPPORTED for a call within every documented limit");
  if (s != GDN_OK && s != GDN_ERR_INVALID_ARGUMENT && s != GDN_ERR_UNSUPPORTED)
    disagree(a, v, s, msg, "a status the argument rules never give");
}

static void check_null_struct(void) {
  gdn_plan p;
  char msg[MSG_ROOM] = "";
  gdn_status s = gdn_check_args(NULL, &p, msg, sizeof msg);
  size_t len = bounded_len(msg, MSG_ROOM);
  if (s != GDN_ERR_INVALID_ARGUMENT || len == 0 || len >= MSG_LIMIT) {
    fprintf(stderr, "fuzz_args: a NULL argument struct gave status %d, \"%s\"\n", (int)s, msg);
    abort();
  }
}

/* FUZZ_ARGS_PRINT set: print every call, to read what a seed or crash is. */
static int want_print(void) {
  static int cached = -1;
  if (cached < 0)
    cached = getenv("FUZZ_ARGS_PRINT") != NULL;
  return cached;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Input in = decode(data, size);
  const gdn_prefill_args *a = &in.a;
  Verdict v = oracle(a);
  gdn_plan plan;
  char msg[MSG_ROOM];
  memset(msg, 0x7f, sizeof msg); /* no NUL: an unwritten message shows */
  memcpy(msg, "poison", 7);
  gdn_status s = gdn_check_args(a, &plan, msg, sizeof msg);
  if (want_print()) {
    describe(a);
    fprintf(stderr, "  status %d: \"%.*s\"\n", (int)s, MSG_LIMIT, msg);
  }
  if (bounded_len(msg, MSG_ROOM) == MSG_ROOM)
    disagree(a, &v, s, "(unterminated)", "the message is not NUL-terminated");
  check_status(a, &v, s, msg);
  if (s == GDN_OK) {
    if (msg[0])
      disagree(a, &v, s, msg, "accepted, but the message is not empty");
    check_plan(a, &v, &plan);
    check_route_ignores_values(a, &v, &plan);
  } else {
    check_refusal(a, &v, s, msg);
  }
  check_short_buffer(a, &v, s, s == GDN_OK ? "" : msg, in.msg_len);
  if (size == 0)
    check_null_struct();
  return 0;
}
