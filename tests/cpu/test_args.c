/* test_args.c: the argument rules of libgdn (runtime/check.c), driven
 * directly through gdn_check_args: no GPU, no CUDA call.
 *
 * Every case is a valid base call with a few fields changed, the status it
 * must get, and the words its message must contain. The expected values come
 * from the public contract (runtime/gdn.h, shared/reference/gdn.md), not from
 * check.c: Ho = max(Hq, Hv), slots = T / 64 + N, the workspace holds P and W
 * (bf16 64 x 64) and g (fp32, at least 64) per slot and output head.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* A refusal's sentence must fit the handle's buffer (GDN_ERR_LEN); the test
 * gives more room so that a message which would be truncated is seen. */
#define MSG_ROOM 4096
#define MSG_LIMIT 512

/* Fake device addresses: 16-aligned, nonzero, distinct. Nothing reads them. */
enum {
  A_Q = 0x10000, A_K = 0x20000, A_V = 0x30000, A_O = 0x40000, A_ALPHA = 0x50000,
  A_BETA = 0x60000, A_CU = 0x70000, A_INIT = 0x80000, A_FINAL = 0x90000
};

/* The base: MHA, T = 300 tokens in N = 3 sequences, 4 heads, every tensor. */
static gdn_prefill_args base_args(void) {
  gdn_prefill_args a;
  memset(&a, 0, sizeof a);
  a.q = A_Q, a.k = A_K, a.v = A_V, a.o = A_O;
  a.alpha = A_ALPHA, a.beta = A_BETA, a.cu_seqlens = A_CU;
  a.initial_state = A_INIT, a.final_state = A_FINAL;
  a.T = 300, a.N = 3, a.Hq = 4, a.Hk = 4, a.Hv = 4;
  a.head_dim = GDN_HEAD_DIM;
  a.scale = 0.08838834764831845f; /* 1 / sqrt(128) */
  return a;
}

/* ---------------------------------------------------------------- edits */
typedef enum Field {
  F_NONE, F_T, F_N, F_HQ, F_HK, F_HV, F_HEAD_DIM, F_SCALE,
  F_Q, F_K, F_V, F_O, F_ALPHA, F_BETA, F_CU, F_INIT, F_FINAL,
  F_ALL_NULL /* every pointer 0 */
} Field;

/* Sets field f to v. A double holds every value a case needs exactly (the
 * integers used are below 2^53 or powers of two) and NaN and inf for scale. */
typedef struct Edit {
  Field f;
  double v;
} Edit;

static void apply_edit(gdn_prefill_args *a, Edit e) {
  switch (e.f) {
  case F_NONE: break;
  case F_T: a->T = (int64_t)e.v; break;
  case F_N: a->N = (int32_t)e.v; break;
  case F_HQ: a->Hq = (int32_t)e.v; break;
  case F_HK: a->Hk = (int32_t)e.v; break;
  case F_HV: a->Hv = (int32_t)e.v; break;
  case F_HEAD_DIM: a->head_dim = (int32_t)e.v; break;
  case F_SCALE: a->scale = (float)e.v; break;
  case F_Q: a->q = (uint64_t)e.v; break;
  case F_K: a->k = (uint64_t)e.v; break;
  case F_V: a->v = (uint64_t)e.v; break;
  case F_O: a->o = (uint64_t)e.v; break;
  case F_ALPHA: a->alpha = (uint64_t)e.v; break;
  case F_BETA: a->beta = (uint64_t)e.v; break;
  case F_CU: a->cu_seqlens = (uint64_t)e.v; break;
  case F_INIT: a->initial_state = (uint64_t)e.v; break;
  case F_FINAL: a->final_state = (uint64_t)e.v; break;
  case F_ALL_NULL:
    a->q = a->k = a->v = a->o = a->alpha = a->beta = 0;
    a->cu_seqlens = a->initial_state = a->final_state = 0;
    break;
  }
}

#define MAX_EDITS 5
#define MAX_WORDS 3

static gdn_prefill_args edited(const Edit *edits) {
  gdn_prefill_args a = base_args();
  for (int i = 0; i < MAX_EDITS; i++)
    apply_edit(&a, edits[i]);
  return a;
}

/* True when word occurs in msg with no identifier character glued to either
 * end, so that "q" names q and not the q in "sequences" or "seq". */
static int is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int mentions(const char *msg, const char *word) {
  size_t n = strlen(word);
  for (const char *p = strstr(msg, word); p; p = strstr(p + 1, word)) {
    int open = p == msg || !is_ident(p[-1]) || !is_ident(word[0]);
    int close = !is_ident(p[n]) || !is_ident(word[n - 1]);
    if (open && close)
      return 1;
  }
  return 0;
}

/* ------------------------------------------------------- accepted calls */
/* Ho and slots are what the contract says they are for these values. */
typedef struct GoodCase {
  const char *what;
  Edit edits[MAX_EDITS];
  int Ho;
  int64_t slots;
} GoodCase;

static const GoodCase good_cases[] = {
    {"MHA 4/4/4, T = 300, N = 3", {{F_NONE, 0}}, 4, 300 / 64 + 3},
    {"GQA 16/4/4", {{F_HQ, 16}, {F_HK, 4}, {F_HV, 4}}, 16, 300 / 64 + 3},
    {"GVA 4/4/16", {{F_HQ, 4}, {F_HK, 4}, {F_HV, 16}}, 16, 300 / 64 + 3},
    {"GQA 8/1/1", {{F_HQ, 8}, {F_HK, 1}, {F_HV, 1}}, 8, 300 / 64 + 3},
    {"GVA 2/2/6", {{F_HQ, 2}, {F_HK, 2}, {F_HV, 6}}, 6, 300 / 64 + 3},
    {"alpha NULL", {{F_ALPHA, 0}}, 4, 300 / 64 + 3},
    {"beta NULL", {{F_BETA, 0}}, 4, 300 / 64 + 3},
    {"initial_state NULL", {{F_INIT, 0}}, 4, 300 / 64 + 3},
    {"final_state NULL", {{F_FINAL, 0}}, 4, 300 / 64 + 3},
    {"every optional tensor NULL", {{F_ALPHA, 0}, {F_BETA, 0}, {F_INIT, 0}, {F_FINAL, 0}}, 4,
     300 / 64 + 3},
    {"cu_seqlens NULL with N = 1", {{F_CU, 0}, {F_N, 1}}, 4, 300 / 64 + 1},
    {"N = T: one token per sequence", {{F_N, 300}}, 4, 300 / 64 + 300},
    {"T = 1", {{F_T, 1}, {F_N, 1}}, 4, 0 + 1},
    {"T = 64: exactly one chunk", {{F_T, 64}, {F_N, 1}}, 4, 1 + 1},
    {"N = 65535, the grid limit", {{F_T, 100000}, {F_N, 65535}}, 4, 100000 / 64 + 65535},
    {"Hv = 65535, the grid limit", {{F_HQ, 5}, {F_HK, 5}, {F_HV, 65535}}, 65535, 300 / 64 + 3},
    {"scale 0", {{F_SCALE, 0.0f}}, 4, 300 / 64 + 3},
    {"scale negative", {{F_SCALE, -0.73f}}, 4, 300 / 64 + 3},
    /* The largest T: one head and one sequence keep slots * Ho * 64 rows of
     * the workspace tensor map within 2^31 - 1. */
    {"T = 2^31 - 65, 1 head, N = 1",
     {{F_T, INT32_MAX - 64}, {F_N, 1}, {F_HQ, 1}, {F_HK, 1}, {F_HV, 1}},
     1, (INT32_MAX - 64) / 64 + 1},
};

/* The workspace regions: P, W, g (g and g_L / g) and the ready flags, in that order,
 * disjoint, 16-byte aligned, each at least as large as its tiles, all
 * inside ws_bytes. */
static void assert_workspace(const char *what, const gdn_plan *p) {
  uint64_t tiles = (uint64_t)p->slots * (uint64_t)p->Ho;
  uint64_t tile = 64 * 64 * 2, g = 2 * 64 * 4, flags = 4 * 4;
  if (p->ws_bytes == 0)
    fail_msg("%s: ws_bytes is 0", what);
  if (p->ws_p % 16 || p->ws_w % 16 || p->ws_g % 16 || p->ws_f % 16)
    fail_msg("%s: workspace offsets %zu, %zu, %zu, %zu are not 16-byte aligned", what, p->ws_p,
             p->ws_w, p->ws_g, p->ws_f);
  if (!(p->ws_p + tiles * tile <= p->ws_w && p->ws_w + tiles * tile <= p->ws_g &&
        p->ws_g + tiles * g <= p->ws_f && p->ws_f + tiles * flags <= p->ws_bytes))
    fail_msg("%s: workspace regions P@%zu W@%zu g@%zu flags@%zu (of %zu bytes) overlap or "
             "overflow for %llu tiles", what, p->ws_p, p->ws_w, p->ws_g, p->ws_f, p->ws_bytes,
             (unsigned long long)tiles);
}

static void test_accepts(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof good_cases / sizeof good_cases[0]; i++) {
    const GoodCase *c = &good_cases[i];
    gdn_prefill_args a = edited(c->edits);
    gdn_plan p;
    char msg[MSG_ROOM] = "poison";
    gdn_status s = gdn_check_args(&a, &p, msg, sizeof msg);
    if (s != GDN_OK)
      fail_msg("%s: refused (%d): %s", c->what, (int)s, msg);
    if (msg[0])
      fail_msg("%s: accepted but the message is \"%s\"", c->what, msg);
    if (p.T != a.T || p.N != a.N || p.Hq != a.Hq || p.Hk != a.Hk || p.Hv != a.Hv)
      fail_msg("%s: the plan does not carry T, N and the head counts", c->what);
    if (p.Ho != c->Ho)
      fail_msg("%s: Ho = %d, expected %d", c->what, p.Ho, c->Ho);
    if (p.slots != c->slots)
      fail_msg("%s: slots = %lld, expected %lld", c->what, (long long)p.slots,
               (long long)c->slots);
    assert_workspace(c->what, &p);
  }
}

/* docs/api.md states today's workspace size and the figure the example
 * (docs/examples, T = 201 in 3 sequences, 4 heads) prints; they must stay
 * what the plan says. */
static void test_documented_workspace(void **state) {
  (void)state;
  gdn_prefill_args a = base_args();
  a.T = 201;
  gdn_plan p;
  char msg[MSG_ROOM];
  assert_int_equal(gdn_check_args(&a, &p, msg, sizeof msg), GDN_OK);
  assert_int_equal(p.ws_bytes, (size_t)(201 / 64 + 3) * 4 * 16912);
  assert_int_equal(p.ws_bytes, 405888);
}

/* T = 0 is a no-op: nothing is launched, so no pointer is needed. */
static void test_empty_call(void **state) {
  (void)state;
  static const Edit cases[][MAX_EDITS] = {
      {{F_T, 0}},
      {{F_T, 0}, {F_ALL_NULL, 0}},
      {{F_T, 0}, {F_ALL_NULL, 0}, {F_N, 1}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gdn_prefill_args a = edited(cases[i]);
    gdn_plan p;
    char msg[MSG_ROOM];
    gdn_status s = gdn_check_args(&a, &p, msg, sizeof msg);
    if (s != GDN_OK)
      fail_msg("T = 0, case %zu: refused (%d): %s", i, (int)s, msg);
    assert_int_equal(p.T, 0);
  }
}

/* ------------------------------------------------------ refused calls */
typedef struct BadCase {
  const char *what;
  Edit edits[MAX_EDITS];
  gdn_status status;
  const char *words[MAX_WORDS];
} BadCase;

#define INVALID GDN_ERR_INVALID_ARGUMENT
#define UNSUPPORTED GDN_ERR_UNSUPPORTED

static const BadCase bad_cases[] = {
    /* head_dim */
    {"head_dim 64", {{F_HEAD_DIM, 64}}, INVALID, {"head_dim", "64", "128"}},
    {"head_dim 256", {{F_HEAD_DIM, 256}}, INVALID, {"head_dim", "256", "128"}},
    {"head_dim 0", {{F_HEAD_DIM, 0}}, INVALID, {"head_dim", "128"}},
    /* head counts */
    {"Hq 0", {{F_HQ, 0}}, INVALID, {"head counts", "Hq=0"}},
    {"Hk 0", {{F_HK, 0}}, INVALID, {"head counts", "Hk=0"}},
    {"Hv 0", {{F_HV, 0}}, INVALID, {"head counts", "Hv=0"}},
    {"Hq negative", {{F_HQ, -4}}, INVALID, {"head counts", "Hq=-4"}},
    {"Hk negative", {{F_HK, -1}}, INVALID, {"head counts", "Hk=-1"}},
    {"Hv negative", {{F_HV, -16}}, INVALID, {"head counts", "Hv=-16"}},
    /* head relation: not MHA, GQA or GVA */
    {"4/2/3", {{F_HQ, 4}, {F_HK, 2}, {F_HV, 3}}, INVALID, {"MHA", "GQA", "GVA"}},
    {"6/4/4: Hq not a multiple of Hk", {{F_HQ, 6}}, INVALID, {"GQA", "Hq=6"}},
    {"4/4/6: Hv not a multiple of Hq", {{F_HV, 6}}, INVALID, {"GVA", "Hv=6"}},
    {"8/4/2: neither side equal", {{F_HQ, 8}, {F_HK, 4}, {F_HV, 2}}, INVALID, {"MHA", "Hv=2"}},
    {"2/4/4: Hq below Hk", {{F_HQ, 2}}, INVALID, {"GQA", "Hq=2"}},
    {"4/4/2: Hv below Hq", {{F_HV, 2}}, INVALID, {"GVA", "Hv=2"}},
    {"4/8/4: Hk above both", {{F_HK, 8}}, INVALID, {"MHA", "Hk=8"}},
    /* required pointers */
    {"q NULL", {{F_Q, 0}}, INVALID, {"q", "NULL"}},
    {"k NULL", {{F_K, 0}}, INVALID, {"k", "NULL"}},
    {"v NULL", {{F_V, 0}}, INVALID, {"v", "NULL"}},
    {"o NULL", {{F_O, 0}}, INVALID, {"o", "NULL"}},
    {"cu_seqlens NULL with N = 2", {{F_CU, 0}, {F_N, 2}}, INVALID, {"cu_seqlens", "NULL"}},
    {"cu_seqlens NULL with N = 3", {{F_CU, 0}}, INVALID, {"cu_seqlens", "NULL"}},
    /* alignment: every pointer 8 bytes off */
    {"q misaligned", {{F_Q, A_Q + 8}}, INVALID, {"q", "aligned", "0x10008"}},
    {"k misaligned", {{F_K, A_K + 8}}, INVALID, {"k", "aligned", "0x20008"}},
    {"v misaligned", {{F_V, A_V + 8}}, INVALID, {"v", "aligned", "0x30008"}},
    {"o misaligned", {{F_O, A_O + 8}}, INVALID, {"o", "aligned", "0x40008"}},
    {"alpha misaligned", {{F_ALPHA, A_ALPHA + 8}}, INVALID, {"alpha", "aligned", "0x50008"}},
    {"beta misaligned", {{F_BETA, A_BETA + 8}}, INVALID, {"beta", "aligned", "0x60008"}},
    {"cu_seqlens misaligned", {{F_CU, A_CU + 8}}, INVALID, {"cu_seqlens", "aligned", "0x70008"}},
    {"initial_state misaligned", {{F_INIT, A_INIT + 8}}, INVALID,
     {"initial_state", "aligned", "0x80008"}},
    {"final_state misaligned", {{F_FINAL, A_FINAL + 8}}, INVALID,
     {"final_state", "aligned", "0x90008"}},
    {"cu_seqlens misaligned with N = 1", {{F_CU, A_CU + 4}, {F_N, 1}}, INVALID,
     {"cu_seqlens", "aligned"}},
    /* scale */
    {"scale NaN", {{F_SCALE, NAN}}, INVALID, {"scale", "finite"}},
    {"scale +inf", {{F_SCALE, INFINITY}}, INVALID, {"scale", "finite"}},
    {"scale -inf", {{F_SCALE, -INFINITY}}, INVALID, {"scale", "finite"}},
    /* sizes */
    {"T = -1", {{F_T, -1}}, INVALID, {"T = -1", "negative"}},
    {"T = INT64_MIN", {{F_T, INT64_MIN}}, INVALID, {"T", "negative"}},
    {"N = 0", {{F_N, 0}}, INVALID, {"N = 0", "T = 300"}},
    {"N = -1", {{F_N, -1}}, INVALID, {"N = -1"}},
    {"N > T", {{F_N, 301}}, INVALID, {"N = 301", "T = 300"}},
    {"N > T at T = 1", {{F_T, 1}, {F_N, 2}}, INVALID, {"N = 2", "T = 1"}},
    {"N = 0 at T = 1", {{F_T, 1}, {F_N, 0}}, INVALID, {"N = 0", "T = 1"}},
    /* valid requests this build cannot serve: the grid and TMA limits */
    {"N = 65536", {{F_T, 100000}, {F_N, 65536}}, UNSUPPORTED, {"N = 65536", "65535"}},
    {"Hv = 65536 (GVA 4/4/65536)", {{F_HV, 65536}}, UNSUPPORTED, {"Hv=65536", "65535"}},
    {"Hq = 65536 (GQA 65536/4/4)", {{F_HQ, 65536}}, UNSUPPORTED, {"Hq=65536", "65535"}},
    {"T = 2^31 - 64", {{F_T, (int64_t)INT32_MAX - 63}, {F_N, 1}}, UNSUPPORTED,
     {"T = 2147483584", "2^31"}},
    {"T = 2^40", {{F_T, (int64_t)1 << 40}, {F_N, 1}}, UNSUPPORTED, {"T", "2^31"}},
    /* within the token limit, but slots * Ho * 64 rows exceed the TMA range */
    {"T = 2^31 - 65 with 4 heads", {{F_T, INT32_MAX - 64}, {F_N, 1}}, UNSUPPORTED,
     {"workspace", "T = 2147483583"}},
};

static void assert_refusal(const char *what, gdn_status s, gdn_status want, const char *msg,
                           const char *const *words) {
  if (s != want)
    fail_msg("%s: status %d, expected %d (message: \"%s\")", what, (int)s, (int)want, msg);
  size_t len = strlen(msg);
  if (len == 0 || len >= MSG_LIMIT)
    fail_msg("%s: message of %zu bytes, need 1 .. %d: \"%s\"", what, len, MSG_LIMIT - 1, msg);
  for (int w = 0; w < MAX_WORDS && words[w]; w++)
    if (!mentions(msg, words[w]))
      fail_msg("%s: message \"%s\" does not mention \"%s\"", what, msg, words[w]);
}

static void test_refuses(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const BadCase *c = &bad_cases[i];
    gdn_prefill_args a = edited(c->edits);
    gdn_plan p;
    char msg[MSG_ROOM] = "";
    gdn_status s = gdn_check_args(&a, &p, msg, sizeof msg);
    assert_refusal(c->what, s, c->status, msg, c->words);
  }
}

static void test_null_args(void **state) {
  (void)state;
  gdn_plan p;
  char msg[MSG_ROOM] = "";
  gdn_status s = gdn_check_args(NULL, &p, msg, sizeof msg);
  static const char *const words[MAX_WORDS] = {"argument", "NULL"};
  assert_refusal("NULL args struct", s, INVALID, msg, words);
}

/* A short buffer gets a truncated, terminated sentence and nothing past it. */
static void test_message_truncates(void **state) {
  (void)state;
  gdn_prefill_args a = base_args();
  a.head_dim = 64;
  char buf[32];
  memset(buf, 'x', sizeof buf);
  gdn_plan p;
  gdn_status s = gdn_check_args(&a, &p, buf, 8);
  assert_int_equal(s, INVALID);
  assert_int_equal(strlen(buf), 7);
  for (size_t i = 8; i < sizeof buf; i++)
    assert_int_equal(buf[i], 'x');
}

/* The relations as families: for every Hk = Hq (or Hv) and every factor m,
 * MHA, GQA and GVA are accepted with Ho = max(Hq, Hv); one head more than a
 * multiple (m * h + 1 with h > 1) is refused. */
static gdn_status check_heads3(int q, int k, int v, gdn_plan *p, char *msg) {
  gdn_prefill_args a = base_args();
  a.Hq = q, a.Hk = k, a.Hv = v;
  return gdn_check_args(&a, p, msg, MSG_ROOM);
}

static void test_head_relations(void **state) {
  (void)state;
  for (int h = 1; h <= 8; h++)
    for (int m = 1; m <= 8; m++) {
      const struct {
        int q, k, v;
        gdn_status want;
      } rows[] = {
          {h, h, h, GDN_OK},                      /* MHA */
          {h * m, h, h, GDN_OK},                  /* GQA */
          {h, h, h * m, GDN_OK},                  /* GVA */
          {h * m + 1, h, h, h > 1 ? INVALID : GDN_OK}, /* Hk = 1 divides all */
          {h, h, h * m + 1, h > 1 ? INVALID : GDN_OK},
      };
      for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        gdn_plan p;
        char msg[MSG_ROOM] = "";
        gdn_status s = check_heads3(rows[r].q, rows[r].k, rows[r].v, &p, msg);
        if (s != rows[r].want)
          fail_msg("%d/%d/%d: status %d, expected %d (%s)", rows[r].q, rows[r].k, rows[r].v,
                   (int)s, (int)rows[r].want, msg);
        if (s == GDN_OK && p.Ho != (rows[r].q > rows[r].v ? rows[r].q : rows[r].v))
          fail_msg("%d/%d/%d: Ho = %d", rows[r].q, rows[r].k, rows[r].v, p.Ho);
      }
    }
}

/* ----------------------------------------------------------------- route */
/* gdn_check_args fills plan.route. Today route.c sends every call to the
 * generic pipeline, including the exact keys the specialised schedules will
 * serve (shared/reference/gdn.md). When the route table exists these cases
 * move there and expect their schedules; until then they must be generic. */
typedef struct RouteCase {
  const char *what;
  int64_t T;
  int N, Hq, Hk, Hv, init, final, force_generic;
} RouteCase;

static const RouteCase route_cases[] = {
    {"the base call", 300, 3, 4, 4, 4, 1, 1, 0},
    {"register replay key", 4096, 10, 8, 8, 8, 1, 1, 0},
    {"predecessor replay key 1", 1024, 1, 8, 8, 16, 1, 1, 0},
    {"predecessor replay key 2", 4096, 1, 16, 16, 16, 0, 0, 0},
    {"predecessor replay key 3", 8192, 20, 8, 8, 16, 1, 1, 0},
    {"register replay key, one token more", 4097, 10, 8, 8, 8, 1, 1, 0},
    {"register replay key, forced generic", 4096, 10, 8, 8, 8, 1, 1, 1},
};

static void test_route_is_generic(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof route_cases / sizeof route_cases[0]; i++) {
    const RouteCase *c = &route_cases[i];
    gdn_prefill_args a = base_args();
    a.T = c->T, a.N = c->N, a.Hq = c->Hq, a.Hk = c->Hk, a.Hv = c->Hv;
    a.initial_state = c->init ? A_INIT : 0;
    a.final_state = c->final ? A_FINAL : 0;
    a.force_generic = c->force_generic;
    gdn_plan p;
    memset(&p, 0xff, sizeof p); /* a route left unset shows as garbage */
    char msg[MSG_ROOM];
    gdn_status s = gdn_check_args(&a, &p, msg, sizeof msg);
    if (s != GDN_OK)
      fail_msg("%s: refused: %s", c->what, msg);
    if (p.route != GDN_ROUTE_GENERIC)
      fail_msg("%s: route %d, expected generic", c->what, (int)p.route);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_accepts),
      cmocka_unit_test(test_empty_call),
      cmocka_unit_test(test_refuses),
      cmocka_unit_test(test_null_args),
      cmocka_unit_test(test_message_truncates),
      cmocka_unit_test(test_head_relations),
      cmocka_unit_test(test_route_is_generic),
      cmocka_unit_test(test_documented_workspace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
