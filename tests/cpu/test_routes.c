/* test_routes.c: the router of libgdn (runtime/route.c) against the route
 * table gdngen emitted (generated/gdn_routes.h), and the one-grid plan of
 * the generic pipeline: no GPU, no CUDA call.
 *
 * Every test loops over gdn_route_table, so a row added to the route
 * configuration (generator/default.routes, --config, --route) is covered
 * without touching this file. The expectations come from the contract
 * (shared/reference/gdn.md): an exact key with alpha and beta given takes its
 * row's schedule when the build emitted it, and the generic pipeline when it
 * did not; every near miss takes the generic pipeline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "gdn_routes.h"

#define MSG_ROOM 4096

/* Fake device addresses: 16-aligned, nonzero, distinct. Nothing reads them. */
enum {
  A_Q = 0x10000, A_K = 0x20000, A_V = 0x30000, A_O = 0x40000, A_ALPHA = 0x50000,
  A_BETA = 0x60000, A_CU = 0x70000, A_INIT = 0x80000, A_FINAL = 0x90000
};

/* gdn_route_name lives in api.c, which calls CUDA; the test names routes
 * itself. */
static const char *route_str(gdn_route r) {
  switch (r) {
  case GDN_ROUTE_GENERIC: return "generic";
  case GDN_ROUTE_REGISTER_REPLAY: return "register_replay";
  case GDN_ROUTE_PREDECESSOR_REPLAY: return "predecessor_replay";
  }
  return "not a gdn_route";
}

/* The call whose key is exactly row r's, with every gate given. */
static gdn_prefill_args exact_call(const gdn_route_key *r) {
  gdn_prefill_args a;
  memset(&a, 0, sizeof a);
  a.q = A_Q, a.k = A_K, a.v = A_V, a.o = A_O;
  a.alpha = A_ALPHA, a.beta = A_BETA, a.cu_seqlens = A_CU;
  a.initial_state = r->init ? A_INIT : 0;
  a.final_state = r->final ? A_FINAL : 0;
  a.T = r->T, a.N = r->N, a.Hq = r->Hq, a.Hk = r->Hk, a.Hv = r->Hv;
  a.head_dim = GDN_HEAD_DIM;
  a.scale = 0.08838834764831845f; /* 1 / sqrt(128) */
  return a;
}

static void row_name(char *buf, size_t n, int i) {
  const gdn_route_key *r = &gdn_route_table[i];
  snprintf(buf, n, "row %d (%s T=%lld N=%d Hq=%d Hk=%d Hv=%d init=%d final=%d built=%d)", i,
           route_str(r->route), (long long)r->T, r->N, r->Hq, r->Hk, r->Hv, r->init,
           r->final, r->built);
}

/* gdn_routes.h defines the table static, so route.c holds its own copy:
 * rows are compared by value (keys are unique, test_table_is_sane). */
static int same_row(const gdn_route_key *x, const gdn_route_key *y) {
  if (!x || !y)
    return x == y;
  return x->T == y->T && x->N == y->N && x->Hq == y->Hq && x->Hk == y->Hk && x->Hv == y->Hv &&
         x->init == y->init && x->final == y->final && x->route == y->route &&
         x->built == y->built;
}

/* The route the contract gives a call that matches row r (or none). */
static gdn_route expected_route(const gdn_route_key *r, const gdn_prefill_args *a) {
  if (!r || !r->built || a->force_generic)
    return GDN_ROUTE_GENERIC;
  return r->route;
}

/* The test's own reading of the table: the row whose key a call has, with
 * both gates given. A near miss of one row may be the exact key of another;
 * this finds it, so the expectation stays right for any configuration. */
static const gdn_route_key *table_row_of(const gdn_prefill_args *a) {
  if (!a->alpha || !a->beta)
    return NULL;
  for (int i = 0; i < GDN_ROUTE_ROWS; i++) {
    const gdn_route_key *r = &gdn_route_table[i];
    if (r->T == a->T && r->N == a->N && r->Hq == a->Hq && r->Hk == a->Hk && r->Hv == a->Hv &&
        r->init == !!a->initial_state && r->final == !!a->final_state)
      return r;
  }
  return NULL;
}

/* Plans the call; fails the test if it is refused. Returns the route. */
static gdn_route planned_route(const char *what, const gdn_prefill_args *a) {
  gdn_plan p;
  memset(&p, 0xff, sizeof p); /* a route left unset shows as garbage */
  char msg[MSG_ROOM] = "";
  gdn_status s = gdn_check_args(a, &p, msg, sizeof msg);
  if (s != GDN_OK)
    fail_msg("%s: refused (%d): %s", what, (int)s, msg);
  return p.route;
}

/* ----------------------------------------------------------- the table */
/* Every row is a call libgdn accepts, names a known route, and no two rows
 * share a key (gdngen refuses contradictions and merges repeats). */
static void test_table_is_sane(void **state) {
  (void)state;
  print_message("gdn_route_table: %d rows\n", GDN_ROUTE_ROWS);
  for (int i = 0; i < GDN_ROUTE_ROWS; i++) {
    const gdn_route_key *r = &gdn_route_table[i];
    char name[256];
    row_name(name, sizeof name, i);
    if (r->route != GDN_ROUTE_GENERIC && r->route != GDN_ROUTE_REGISTER_REPLAY &&
        r->route != GDN_ROUTE_PREDECESSOR_REPLAY)
      fail_msg("%s: route %d is not a gdn_route", name, (int)r->route);
    if ((r->built != 0 && r->built != 1) || (r->init != 0 && r->init != 1) ||
        (r->final != 0 && r->final != 1))
      fail_msg("%s: built, init and final must be 0 or 1", name);
    gdn_prefill_args a = exact_call(r);
    planned_route(name, &a);
    for (int j = 0; j < i; j++) {
      const gdn_route_key *o = &gdn_route_table[j];
      if (o->T == r->T && o->N == r->N && o->Hq == r->Hq && o->Hk == r->Hk && o->Hv == r->Hv &&
          o->init == r->init && o->final == r->final)
        fail_msg("%s: same key as row %d", name, j);
    }
  }
}

/* ---------------------------------------------------------- exact keys */
/* The exact call finds its row and takes its schedule if built, else the
 * generic pipeline. cu_seqlens is not part of the key: another address, or
 * none where N = 1 allows it, routes the same. */
static void test_exact_keys(void **state) {
  (void)state;
  for (int i = 0; i < GDN_ROUTE_ROWS; i++) {
    const gdn_route_key *r = &gdn_route_table[i];
    char name[256];
    row_name(name, sizeof name, i);
    const uint64_t cus[] = {A_CU, A_CU + 0x1000, 0};
    int ncu = r->N == 1 ? 3 : 2;
    for (int c = 0; c < ncu; c++) {
      gdn_prefill_args a = exact_call(r);
      a.cu_seqlens = cus[c];
      const gdn_route_key *hit = gdn_route_lookup(&a);
      if (!same_row(hit, r))
        fail_msg("%s, cu_seqlens 0x%llx: lookup gave %s, expected the row", name,
                 (unsigned long long)cus[c], hit ? "another row" : "no row");
      gdn_route got = planned_route(name, &a);
      gdn_route want = r->built ? r->route : GDN_ROUTE_GENERIC;
      if (got != want)
        fail_msg("%s, cu_seqlens 0x%llx: route %s, expected %s", name,
                 (unsigned long long)cus[c], route_str(got), route_str(want));
    }
  }
}

/* force_generic still matches the row (the lookup ignores it) but the call
 * takes the generic pipeline. */
static void test_force_generic(void **state) {
  (void)state;
  for (int i = 0; i < GDN_ROUTE_ROWS; i++) {
    const gdn_route_key *r = &gdn_route_table[i];
    char name[256];
    row_name(name, sizeof name, i);
    gdn_prefill_args a = exact_call(r);
    a.force_generic = 1;
    if (!same_row(gdn_route_lookup(&a), r))
      fail_msg("%s, force_generic: lookup lost the row", name);
    gdn_route got = planned_route(name, &a);
    if (got != GDN_ROUTE_GENERIC)
      fail_msg("%s, force_generic: route %s, expected generic", name, route_str(got));
  }
}

/* ---------------------------------------------------------- near misses */
typedef enum Field { F_T, F_N, F_HQ, F_HK, F_HV, F_HEADS, F_ALPHA, F_BETA, F_INIT, F_FINAL } Field;
typedef enum Op { OP_ADD, OP_MUL, OP_DIV, OP_DROP, OP_FLIP } Op;

typedef struct Miss {
  const char *what;
  Field f;
  Op op;
  int arg;
} Miss;

static const Miss misses[] = {
    {"T + 1", F_T, OP_ADD, 1},        {"T - 1", F_T, OP_ADD, -1},
    {"N + 1", F_N, OP_ADD, 1},        {"N - 1", F_N, OP_ADD, -1},
    {"Hq + 1", F_HQ, OP_ADD, 1},      {"Hq - 1", F_HQ, OP_ADD, -1},
    {"Hq * 2", F_HQ, OP_MUL, 2},      {"Hq / 2", F_HQ, OP_DIV, 2},
    {"Hk + 1", F_HK, OP_ADD, 1},      {"Hk - 1", F_HK, OP_ADD, -1},
    {"Hk * 2", F_HK, OP_MUL, 2},      {"Hk / 2", F_HK, OP_DIV, 2},
    {"Hv + 1", F_HV, OP_ADD, 1},      {"Hv - 1", F_HV, OP_ADD, -1},
    {"Hv * 2", F_HV, OP_MUL, 2},      {"Hv / 2", F_HV, OP_DIV, 2},
    /* the relation kept: every head count scaled together */
    {"all heads * 2", F_HEADS, OP_MUL, 2}, {"all heads / 2", F_HEADS, OP_DIV, 2},
    {"alpha absent", F_ALPHA, OP_DROP, 0}, {"beta absent", F_BETA, OP_DROP, 0},
    {"initial_state flipped", F_INIT, OP_FLIP, 0},
    {"final_state flipped", F_FINAL, OP_FLIP, 0},
};

static int32_t op_apply(int32_t x, Op op, int arg) {
  switch (op) {
  case OP_ADD: return x + arg;
  case OP_MUL: return x * arg;
  case OP_DIV: return x / arg;
  default: return x;
  }
}

static void miss_apply(gdn_prefill_args *a, const Miss *m) {
  switch (m->f) {
  case F_T: a->T += m->arg; break;
  case F_N: a->N = op_apply(a->N, m->op, m->arg); break;
  case F_HQ: a->Hq = op_apply(a->Hq, m->op, m->arg); break;
  case F_HK: a->Hk = op_apply(a->Hk, m->op, m->arg); break;
  case F_HV: a->Hv = op_apply(a->Hv, m->op, m->arg); break;
  case F_HEADS:
    a->Hq = op_apply(a->Hq, m->op, m->arg);
    a->Hk = op_apply(a->Hk, m->op, m->arg);
    a->Hv = op_apply(a->Hv, m->op, m->arg);
    break;
  case F_ALPHA: a->alpha = 0; break;
  case F_BETA: a->beta = 0; break;
  case F_INIT: a->initial_state = a->initial_state ? 0 : A_INIT; break;
  case F_FINAL: a->final_state = a->final_state ? 0 : A_FINAL; break;
  }
}

/* The contract's argument rules a near miss can break: head counts >= 1 in
 * an MHA, GQA or GVA relation, and 1 <= N <= T unless T = 0 (a no-op). */
static int contract_valid(const gdn_prefill_args *a) {
  int q = a->Hq, k = a->Hk, v = a->Hv;
  if (q < 1 || k < 1 || v < 1)
    return 0;
  int mha = q == k && k == v, gqa = k == v && q % k == 0, gva = q == k && v % q == 0;
  if (!(mha || gqa || gva))
    return 0;
  return a->T == 0 || (a->N >= 1 && a->N <= a->T);
}

/* One near miss of row i: refused as the contract says, or accepted on the
 * generic route matching no row (or, if it lands on another row's exact
 * key, that row's route). Returns 1 if the call was accepted. */
static int check_miss(int i, const Miss *m) {
  char name[300];
  row_name(name, sizeof name, i);
  snprintf(name + strlen(name), sizeof name - strlen(name), ", %s", m->what);
  gdn_prefill_args a = exact_call(&gdn_route_table[i]);
  miss_apply(&a, m);
  if (a.N != 1 && !a.cu_seqlens)
    a.cu_seqlens = A_CU;
  gdn_plan p;
  memset(&p, 0xff, sizeof p);
  char msg[MSG_ROOM] = "";
  gdn_status s = gdn_check_args(&a, &p, msg, sizeof msg);
  if (!contract_valid(&a)) {
    if (s != GDN_ERR_INVALID_ARGUMENT)
      fail_msg("%s: status %d, expected an argument error (%s)", name, (int)s, msg);
    return 0;
  }
  if (s != GDN_OK)
    fail_msg("%s: refused (%d): %s", name, (int)s, msg);
  const gdn_route_key *other = table_row_of(&a);
  const gdn_route_key *hit = gdn_route_lookup(&a);
  if (!same_row(hit, other))
    fail_msg("%s: lookup gave %s, expected %s", name, hit ? "a row" : "no row",
             other ? "the row whose exact key this is" : "no row");
  gdn_route want = expected_route(other, &a);
  if (p.route != want)
    fail_msg("%s: route %s, expected %s", name, route_str(p.route), route_str(want));
  if (other)
    print_message("note: %s is the exact key of another row\n", name);
  return 1;
}

static void test_near_misses(void **state) {
  (void)state;
  int accepted = 0, refused = 0;
  for (int i = 0; i < GDN_ROUTE_ROWS; i++)
    for (size_t m = 0; m < sizeof misses / sizeof misses[0]; m++) {
      if (check_miss(i, &misses[m]))
        accepted++;
      else
        refused++;
    }
  print_message("near misses: %d accepted, %d refused as the contract says\n",
                accepted, refused);
}

/* ------------------------------------------------------------- decide */
/* gdn_route_decide is the whole policy once the lookup is done. A row whose
 * schedule is built takes it; force_generic, a missing gate, an unbuilt
 * schedule or no row take the generic pipeline. Fake rows stand in for
 * schedules this build does not emit yet. */
static void test_decide(void **state) {
  (void)state;
  static const gdn_route routes[] = {GDN_ROUTE_GENERIC, GDN_ROUTE_REGISTER_REPLAY,
                                     GDN_ROUTE_PREDECESSOR_REPLAY};
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    gdn_route_key fake = {.T = 4096, .N = 10, .Hq = 8, .Hk = 8, .Hv = 8, .init = 1,
                          .final = 1, .route = routes[i], .built = 1};
    gdn_prefill_args a = exact_call(&fake);
    const char *r = route_str(routes[i]);
    if (gdn_route_decide(&fake, &a) != routes[i])
      fail_msg("built %s row: not taken", r);
    a.force_generic = 1;
    if (gdn_route_decide(&fake, &a) != GDN_ROUTE_GENERIC)
      fail_msg("built %s row, force_generic: not generic", r);
    a = exact_call(&fake);
    a.alpha = 0;
    if (gdn_route_decide(&fake, &a) != GDN_ROUTE_GENERIC)
      fail_msg("built %s row, alpha absent: not generic", r);
    a = exact_call(&fake);
    a.beta = 0;
    if (gdn_route_decide(&fake, &a) != GDN_ROUTE_GENERIC)
      fail_msg("built %s row, beta absent: not generic", r);
    a = exact_call(&fake);
    fake.built = 0;
    if (gdn_route_decide(&fake, &a) != GDN_ROUTE_GENERIC)
      fail_msg("unbuilt %s row: not generic", r);
    if (gdn_route_decide(NULL, &a) != GDN_ROUTE_GENERIC)
      fail_msg("no row: not generic");
  }
}

/* Each real row, as if its schedule were built, routes to it. */
static void test_rows_if_built(void **state) {
  (void)state;
  for (int i = 0; i < GDN_ROUTE_ROWS; i++) {
    gdn_route_key built = gdn_route_table[i];
    built.built = 1;
    gdn_prefill_args a = exact_call(&built);
    if (gdn_route_decide(&built, &a) != built.route) {
      char name[256];
      row_name(name, sizeof name, i);
      fail_msg("%s, marked built: route %s", name, route_str(gdn_route_decide(&built, &a)));
    }
  }
}

/* gdn_fused_plan over a sweep of shapes and SM counts: it takes one grid
 * only where the scan CTAs leave half of the SMs free (they spin on flags
 * that later CTAs set: more would risk a hang) and prepare is over one wave
 * of gdn_prepare, or split pairs fit and gdn_prepare's units outnumber the
 * SMs; it splits the scan CTAs into pairs where there are at most
 * GDN_SPLIT_MAX_SCAN of them and the pairs leave 16 SMs. The kernel's
 * own unit map, in both forms, gives every prepare unit to exactly one
 * warpgroup of the grid it sizes (every warpgroup of every CTA asks it): a
 * unit left out would leave its scan CTA waiting forever, and one run twice
 * is wasted work. */
static void test_fused_grid(void **state) {
  (void)state;
  static unsigned char seen[1 << 16];
  const int sms_list[] = {1, 8, 66, 114, 132, 144};
  const int64_t T_list[] = {1, 64, 4096, 4097, 8191, 65536};
  const int N_list[] = {1, 2, 3, 10}, Ho_list[] = {1, 2, 4, 8, 16, 32};
  int taken = 0, splits = 0;
  for (size_t a = 0; a < sizeof sms_list / sizeof *sms_list; a++)
    for (size_t b = 0; b < sizeof T_list / sizeof *T_list; b++)
      for (size_t c = 0; c < sizeof N_list / sizeof *N_list; c++)
        for (size_t e = 0; e < sizeof Ho_list / sizeof *Ho_list; e++) {
          int sms = sms_list[a], N = N_list[c], Ho = Ho_list[e];
          gdn_plan p = {.T = T_list[b], .N = N, .Ho = Ho, .slots = T_list[b] / 64 + N};
          gdn_fused_grid g;
          int64_t units = p.slots * Ho;
          int64_t nscan = 2 * (int64_t)Ho * N;
          int64_t used = (N == 1 ? (p.T + 63) / 64 : p.slots) * Ho; /* gdn_prepare's units */
          int fits = nscan <= GDN_SPLIT_MAX_SCAN && 2 * nscan + 16 <= sms;
          int want = 2 * nscan <= sms &&
                     (units > (int64_t)GDN_PREPARE_CTAS_PER_SM * sms || (fits && used > sms));
          int split = want && fits;
          if (gdn_fused_plan(&p, sms, &g) != want)
            fail_msg("T=%lld N=%d Ho=%d on %d SMs: fused %d, want %d", (long long)p.T, N, Ho,
                     sms, !want, want);
          if (!want)
            continue;
          taken++;
          splits += split;
          assert_true(units <= (int64_t)sizeof seen);
          memset(seen, 0, (size_t)units);
          assert_int_equal(g.nscan, nscan);
          assert_int_equal(g.split, split);
          const int scans = (int)nscan * (split ? 2 : 1), wgs = (int)gdn_kernel_specs[GDN_K_FUSED].threads / 128;
          if (split) { /* runners: the prepare CTAs' warpgroups */
            const int P = (int)g.ctas - scans, R = (int)GDN_SPLIT_UNITS * P;
            assert_true(P >= 16 && g.ctas % 2 == 0 && (int)g.ctas <= sms);
            /* A CTA that runs a unit of slot 0 or 1 alone first holds its
             * second warpgroup until that unit is done: it must have one. */
            for (int j = 0; j < GDN_SPLIT_H(P, Ho); j++)
              if (GDN_SPLIT_RUNNER(j, 0, P, Ho) >= units)
                fail_msg("T=%lld N=%d Ho=%d on %d SMs: late CTA %d has no first unit",
                         (long long)p.T, N, Ho, sms, j);
            /* output CTA s runs unit SPLIT_OFF + s first; the runners the rest */
            const int64_t out = GDN_SPLIT_OUT(units, P, Ho, nscan);
            assert_true(out >= 0 && out <= nscan);
            for (int64_t s = 0; s < out; s++)
              if (seen[GDN_SPLIT_OFF(P, Ho) + s]++)
                fail_msg("T=%lld N=%d Ho=%d: output CTA %lld's unit runs twice", (long long)p.T,
                         N, Ho, (long long)s);
            for (int j = 0; j < P; j++)
              for (int wg = 0; wg < wgs; wg++) {
                int r = GDN_SPLIT_RUNNER(j, wg, P, Ho);
                for (int64_t x = r; r >= 0 && x < units - out; x += R) {
                  int64_t u = GDN_SPLIT_UNIT(x, out, P, Ho);
                  if (u >= units || seen[u]++)
                    fail_msg("T=%lld N=%d Ho=%d: unit %lld runs twice or does not exist",
                             (long long)p.T, N, Ho, (long long)u);
                }
              }
          } else {
            /* the one-unit CTAs start at once, beside every scan CTA */
            assert_true(g.single >= 1 && scans + g.single <= sms);
          }
          for (int j = 0; !split && j < (int)g.ctas - scans; j++)
            for (int wg = 0; wg < wgs; wg++) {
              int u = GDN_FUSED_UNIT(j, wg, g.single);
              if (u >= 0 && u < units && seen[u]++)
                fail_msg("T=%lld N=%d Ho=%d: unit %d runs twice", (long long)p.T, N, Ho, u);
            }
          for (int64_t u = 0; u < units; u++)
            if (!seen[u])
              fail_msg("T=%lld N=%d Ho=%d on %d SMs: unit %lld is never run", (long long)p.T,
                       N, Ho, sms, (long long)u);
        }
  assert_true(taken > 10 && splits > 10 && taken > splits); /* both forms are reached */
}

/* Which units a split launch's output CTAs run: on 132 SMs, t1024-hv16's
 * units (272 slots of 16 heads) with its 32 output CTAs' fit in the 136
 * runners' first two rounds, so those CTAs take the units of the runner
 * positions that would start late (2 P - H on); t4096-h16's 1040 do not,
 * and its output CTAs run none. */
static void test_split_out(void **state) {
  (void)state;
  struct { int64_t T; int Ho; int64_t off, out; } c[] = {{1024, 16, 104, 32}, {4096, 16, 104, 0}};
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    gdn_plan p = {.T = c[i].T, .N = 1, .Ho = c[i].Ho, .slots = c[i].T / 64 + 1};
    gdn_fused_grid g;
    assert_true(gdn_fused_plan(&p, 132, &g));
    assert_true(g.split);
    const int P = (int)g.ctas - 2 * (int)g.nscan;
    const int64_t units = p.slots * p.Ho, nscan = g.nscan;
    assert_int_equal(P, 68);
    assert_int_equal(GDN_SPLIT_OFF(P, p.Ho), c[i].off);
    assert_int_equal(GDN_SPLIT_OUT(units, P, p.Ho, nscan), c[i].out);
  }
}

/* gdn_scan_pairs where every pair fits on the SMs at once: the benchmark's
 * single-sequence rows on 132 SMs, not the packed ones; and never with
 * fewer SMs than the pairs. */
static void test_scan_pairs(void **state) {
  (void)state;
  struct { int64_t T; int N, Ho, sms, want; } c[] = {
      {512, 1, 8, 132, 1},   {1024, 1, 16, 132, 1}, {4096, 10, 8, 132, 0},
      {8192, 20, 16, 132, 0}, {1024, 1, 16, 63, 0},  {64, 2, 16, 128, 1},
      {64, 3, 11, 132, 1},   {64, 3, 12, 132, 0},   {1, 1, 1, 4, 1}, {1, 1, 1, 3, 0},
  };
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    gdn_plan p = {.T = c[i].T, .N = c[i].N, .Ho = c[i].Ho, .slots = c[i].T / 64 + c[i].N};
    if (gdn_scan_pairs_plan(&p, c[i].sms) != c[i].want)
      fail_msg("T=%lld N=%d Ho=%d on %d SMs: pairs %d, want %d", (long long)c[i].T, c[i].N,
               c[i].Ho, c[i].sms, !c[i].want, c[i].want);
  }
}

/* gdn_scan's lanes: a CTA for each sequence up to two waves of them (or
 * where one head's lane alone would not fit), else as many lanes as fit
 * one wave: n10 on 132 SMs keeps its 160 CTAs, n20 (16 output heads)
 * takes 4 lanes of 32. */
static void test_scan_lanes(void **state) {
  (void)state;
  struct { int N, Ho, sms, want; } c[] = {
      {1, 8, 132, 1},   {10, 8, 132, 10}, {20, 16, 132, 4}, {16, 8, 132, 16}, {17, 8, 132, 8},
      {17, 8, 144, 17}, {200, 1, 132, 66}, {3, 80, 132, 3}, {128, 66, 132, 1}, {4, 33, 132, 4},
      {5, 33, 132, 2},
  };
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    gdn_plan p = {.T = 64 * (int64_t)c[i].N, .N = c[i].N, .Ho = c[i].Ho};
    int got = gdn_scan_lanes(&p, c[i].sms);
    if (got != c[i].want)
      fail_msg("N=%d Ho=%d on %d SMs: %d lanes, want %d", c[i].N, c[i].Ho, c[i].sms, got,
               c[i].want);
  }
}

/* gdn_prepare_lean where gdn_prepare's units would take more than one
 * wave (four CTAs an SM): n10 (74 slots x 8 heads = 592 > 528) and n20 on
 * 132 SMs, not t512, t1024-hv16 or a one-sequence call that fits. */
static void test_prepare_lean(void **state) {
  (void)state;
  struct { int64_t T; int N, Ho, sms, want; } c[] = {
      {4096, 10, 8, 132, 1}, {8192, 20, 16, 132, 1}, {512, 1, 8, 132, 0}, {1024, 1, 16, 132, 0},
      {4224, 1, 8, 132, 0},  {4225, 1, 8, 132, 1},   {4161, 1, 8, 130, 1},
  };
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    gdn_plan p = {.T = c[i].T, .N = c[i].N, .Ho = c[i].Ho, .slots = c[i].T / 64 + c[i].N};
    if (gdn_prepare_lean_plan(&p, c[i].sms) != c[i].want)
      fail_msg("T=%lld N=%d Ho=%d on %d SMs: lean %d, want %d", (long long)c[i].T, c[i].N,
               c[i].Ho, c[i].sms, !c[i].want, c[i].want);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_is_sane),
      cmocka_unit_test(test_exact_keys),
      cmocka_unit_test(test_force_generic),
      cmocka_unit_test(test_near_misses),
      cmocka_unit_test(test_decide),
      cmocka_unit_test(test_rows_if_built),
      cmocka_unit_test(test_fused_grid),
      cmocka_unit_test(test_split_out),
      cmocka_unit_test(test_scan_pairs),
      cmocka_unit_test(test_scan_lanes),
      cmocka_unit_test(test_prepare_lean),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
