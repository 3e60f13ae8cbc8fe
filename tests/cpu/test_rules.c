/* test_rules.c: the five lowering rules (legality, fragment, smem, tma,
 * tail) checked against shared/reference/hopper.md.
 *
 * The expected values are written from the reference, not from the
 * generator's own tables: formulas are re-derived here, and descriptor
 * encodings are spelled out as 64-bit constants worked out by hand. A rule
 * that drifts from the hardware's facts fails here before a GPU sees it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

/* Fails with the whole diagnostic when it does not name the rule. */
static void assert_mentions(const char *what, const char *msg, const char *word) {
  if (word && !strstr(msg, word))
    fail_msg("%s: diagnostic \"%s\" does not mention \"%s\"", what, msg, word);
}

/* ====================================================== legality.c */

/* The legal base request of the issue: sm_90a m64n64k64 bf16 SS. */
static WgmmaReq base_req(void) {
  WgmmaReq r = {.arch = ARCH_SM90A, .m = 64, .n = 64, .k = 64, .a = DT_BF16, .b = DT_BF16,
                .c = DT_F32, .a_src = SRC_SMEM, .c_src = SRC_REG, .a_major = MAJOR_K,
                .b_major = MAJOR_K, .a_from_acc = 0, .first_thread = 0, .nthreads = 128};
  return r;
}

/* A case is the base request with up to two fields changed. */
typedef enum Field {
  F_NONE, F_ARCH, F_M, F_N, F_K, F_A, F_B, F_C, F_A_SRC, F_C_SRC, F_A_MAJOR, F_B_MAJOR,
  F_FROM_ACC, F_FIRST, F_THREADS
} Field;
typedef struct Edit {
  Field f;
  int v;
} Edit;

static void apply_edit(WgmmaReq *r, Edit e) {
  switch (e.f) {
  case F_NONE: break;
  case F_ARCH: r->arch = (ArchId)e.v; break;
  case F_M: r->m = e.v; break;
  case F_N: r->n = e.v; break;
  case F_K: r->k = e.v; break;
  case F_A: r->a = (DType)e.v; break;
  case F_B: r->b = (DType)e.v; break;
  case F_C: r->c = (DType)e.v; break;
  case F_A_SRC: r->a_src = (OperandSrc)e.v; break;
  case F_C_SRC: r->c_src = (OperandSrc)e.v; break;
  case F_A_MAJOR: r->a_major = (Major)e.v; break;
  case F_B_MAJOR: r->b_major = (Major)e.v; break;
  case F_FROM_ACC: r->a_from_acc = e.v; break;
  case F_FIRST: r->first_thread = e.v; break;
  case F_THREADS: r->nthreads = e.v; break;
  }
}

/* rule: the name legality.c gives the rule that must refuse (NULL: legal).
 * words: what the diagnostic must say: the rule, then the offending value. */
typedef struct ReqCase {
  const char *what;
  Edit edits[2];
  const char *rule;
  const char *words[2];
} ReqCase;

static const ReqCase req_cases[] = {
    {"base request", {{F_NONE, 0}}, NULL, {NULL}},
    {"N = 16", {{F_N, 16}}, NULL, {NULL}},
    {"N = 32", {{F_N, 32}}, NULL, {NULL}},
    {"N = 128", {{F_N, 128}}, NULL, {NULL}},
    {"K = 16", {{F_K, 16}}, NULL, {NULL}},
    {"K = 32", {{F_K, 32}}, NULL, {NULL}},
    {"K = 128", {{F_K, 128}}, NULL, {NULL}},
    {"f16 / f16", {{F_A, DT_F16}, {F_B, DT_F16}}, NULL, {NULL}},
    {"RS, K-major A", {{F_A_SRC, SRC_REG}}, NULL, {NULL}},
    {"accumulator as A through RS", {{F_A_SRC, SRC_REG}, {F_FROM_ACC, 1}}, NULL, {NULL}},
    {"second warpgroup (thread 128)", {{F_FIRST, 128}}, NULL, {NULL}},
    {"SS, MN-major A and B", {{F_A_MAJOR, MAJOR_MN}, {F_B_MAJOR, MAJOR_MN}}, NULL, {NULL}},

    {"target sm_90", {{F_ARCH, ARCH_SM90}}, "target", {"needs target sm_90a", "not sm_90 "}},
    {"target sm_80", {{F_ARCH, ARCH_SM80}}, "target", {"needs target sm_90a", "not sm_80"}},
    {"target sm_100a", {{F_ARCH, ARCH_SM100A}}, "target", {"needs target sm_90a", "not sm_100a"}},
    {"M = 128", {{F_M, 128}}, "M", {"M must be 64", "not 128"}},
    {"N = 8", {{F_N, 8}}, "N", {"N must be one of 16, 32, 64, 128", "not 8"}},
    {"N = 24", {{F_N, 24}}, "N", {"N must be one of", "not 24"}},
    {"N = 256", {{F_N, 256}}, "N", {"N must be one of", "not 256"}},
    {"K = 8", {{F_K, 8}}, "K", {"K must be >= 16", "not 8"}},
    {"K = 24", {{F_K, 24}}, "K", {"multiple of 16", "not 24"}},
    {"K = 0", {{F_K, 0}}, "K", {"K must be >= 16", "not 0"}},
    {"bf16 A, f16 B", {{F_B, DT_F16}}, "dtypes", {"both bf16 or both f16", "bf16 and f16"}},
    {"f32 inputs", {{F_A, DT_F32}, {F_B, DT_F32}}, "dtypes", {"both bf16 or both f16", "f32 and f32"}},
    {"bf16 accumulator", {{F_C, DT_BF16}}, "accumulator", {"accumulator must be f32", "not bf16"}},
    {"accumulator in smem", {{F_C_SRC, SRC_SMEM}}, "accumulator",
     {"accumulator must be f32 in registers", "shared memory"}},
    {"64 threads", {{F_THREADS, 64}}, "warpgroup", {"full warpgroup of 128 threads", "not 64"}},
    {"scope at thread 32", {{F_FIRST, 32}}, "warpgroup", {"divisible by 4", "thread 32"}},
    {"scope at thread 64", {{F_FIRST, 64}}, "warpgroup", {"divisible by 4", "thread 64"}},
    {"RS with MN-major A", {{F_A_SRC, SRC_REG}, {F_A_MAJOR, MAJOR_MN}}, "register A",
     {"registers must be K-major", NULL}},
    {"accumulator as A through SS", {{F_FROM_ACC, 1}}, "register A",
     {"accumulator reused as A must be an RS operand", NULL}},
};

static WgmmaReq case_req(const ReqCase *c) {
  WgmmaReq r = base_req();
  for (size_t i = 0; i < COUNT_OF(c->edits); i++)
    apply_edit(&r, c->edits[i]);
  return r;
}

static void test_wgmma_cases(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT_OF(req_cases); i++) {
    const ReqCase *c = &req_cases[i];
    WgmmaReq r = case_req(c);
    Diag d = {{0}};
    int rc = wgmma_check(&r, &d);
    if (!c->rule) {
      if (rc != 0)
        fail_msg("%s: refused a legal request: %s", c->what, d.msg);
      continue;
    }
    if (rc != -1)
      fail_msg("%s: an illegal request passed", c->what);
    for (size_t w = 0; w < COUNT_OF(c->words); w++)
      assert_mentions(c->what, d.msg, c->words[w]);
    /* Without a Diag the refusal stands and nothing is written. */
    assert_int_equal(wgmma_check(&r, NULL), -1);
  }
}

/* A rule added to legality.c without a refusal case here fails. */
static void test_wgmma_every_rule_has_a_case(void **state) {
  (void)state;
  assert_int_equal(wgmma_rule_count(), 8);
  for (int i = 0; i < wgmma_rule_count(); i++) {
    const char *name = wgmma_rule_name(i);
    int found = 0;
    for (size_t c = 0; c < COUNT_OF(req_cases); c++)
      found |= req_cases[c].rule && strcmp(req_cases[c].rule, name) == 0;
    if (!found)
      fail_msg("rule '%s' has no refusal case", name);
  }
}

/* ====================================================== fragment.c */

/* hopper.md: the fp32 accumulator, register i of thread t = 32 w + l. */
static Coord hopper_acc(int t, int i) {
  int w = t / 32, l = t % 32;
  Coord c = {16 * w + l / 4 + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * (l % 4) + (i & 1)};
  return c;
}

/* hopper.md: RS A of one k16 step; element e is half e % 2 of u32 e / 2. */
static Coord hopper_a(int t, int e) {
  int w = t / 32, l = t % 32, r = e / 2;
  Coord c = {16 * w + l / 4 + 8 * (r & 1), 8 * (r >> 1) + 2 * (l % 4) + e % 2};
  return c;
}

static const int legal_ns[] = {16, 32, 64, 128};

static void test_frag_maps_are_bijections(void **state) {
  (void)state;
  Diag d = {{0}};
  for (size_t i = 0; i < COUNT_OF(legal_ns); i++) {
    FragMap m = frag_acc(legal_ns[i]);
    assert_int_equal(m.rows, 64);
    assert_int_equal(m.cols, legal_ns[i]);
    assert_int_equal(m.regs, legal_ns[i] / 2);
    if (frag_check_bijective(&m, &d) != 0)
      fail_msg("acc n%d: %s", legal_ns[i], d.msg);
  }
  FragMap a = frag_a_k16();
  assert_int_equal(a.rows, 64);
  assert_int_equal(a.cols, 16);
  assert_int_equal(a.regs, 8);
  assert_int_equal(frag_check_bijective(&a, &d), 0);
}

/* Each breakage of the m64n64 accumulator map and the word its refusal uses. */
static void expect_not_bijective(const char *what, FragMap m, const char *word) {
  Diag d = {{0}};
  if (frag_check_bijective(&m, &d) != -1)
    fail_msg("%s: broken map reported as a bijection", what);
  assert_mentions(what, d.msg, word);
}

static void test_frag_broken_maps(void **state) {
  (void)state;
  FragMap m = frag_acc(64);
  m.row[2].scale = 4; /* the +8 row half now overlaps the next 4 rows */
  expect_not_bijective("row half scale 4", m, "held twice");
  m = frag_acc(64);
  m.col[1].scale = 1; /* lane column pairs overlap */
  expect_not_bijective("column pair scale 1", m, "held twice");
  m = frag_acc(64);
  m.row[0].scale = 32; /* warps 2 and 3 fall below row 64 */
  expect_not_bijective("warp scale 32", m, "falls outside");
  m = frag_acc(64);
  m.regs = 31;
  expect_not_bijective("31 registers", m, "cannot cover");
}

static void test_frag_acc_matches_hopper(void **state) {
  (void)state;
  for (size_t n = 0; n < COUNT_OF(legal_ns); n++) {
    FragMap m = frag_acc(legal_ns[n]);
    for (int t = 0; t < 128; t++)
      for (int i = 0; i < m.regs; i++) {
        Coord got = frag_eval(&m, t, i), want = hopper_acc(t, i);
        if (got.row != want.row || got.col != want.col)
          fail_msg("acc n%d t%d r%d: (%d, %d), hopper.md says (%d, %d)", legal_ns[n], t, i,
                   got.row, got.col, want.row, want.col);
      }
  }
}

static void test_frag_a_matches_hopper(void **state) {
  (void)state;
  FragMap m = frag_a_k16();
  for (int t = 0; t < 128; t++)
    for (int e = 0; e < 8; e++) {
      Coord got = frag_eval(&m, t, e), want = hopper_a(t, e);
      if (got.row != want.row || got.col != want.col)
        fail_msg("a_k16 t%d e%d: (%d, %d), hopper.md says (%d, %d)", t, e, got.row, got.col,
                 want.row, want.col);
    }
}

/* The accumulator reused as A: A element e of k step j must be the element
 * of columns [16j, 16j + 16) that register frag_acc_as_a(j, e) holds, in
 * the same thread. */
static void test_frag_acc_as_a(void **state) {
  (void)state;
  static const int ns[] = {64, 128};
  FragMap a = frag_a_k16();
  for (size_t n = 0; n < COUNT_OF(ns); n++) {
    FragMap acc = frag_acc(ns[n]);
    for (int j = 0; j < ns[n] / 16; j++)
      for (int e = 0; e < 8; e++) {
        int reg = frag_acc_as_a(j, e);
        assert_in_range(reg, 0, acc.regs - 1);
        for (int t = 0; t < 128; t++) {
          Coord ca = frag_eval(&a, t, e), cd = frag_eval(&acc, t, reg);
          if (ca.row != cd.row || ca.col != cd.col - 16 * j)
            fail_msg("n%d j%d e%d t%d: A (%d, %d) but acc reg %d is (%d, %d - 16j)", ns[n], j,
                     e, t, ca.row, ca.col, reg, cd.row, cd.col);
        }
      }
  }
  /* hopper.md's packing: a_r = pack(d[8j + 2r], d[8j + 2r + 1]). */
  assert_int_equal(frag_acc_as_a(0, 0), 0);
  assert_int_equal(frag_acc_as_a(1, 2), 10);
  assert_int_equal(frag_acc_as_a(3, 7), 31);
}

typedef struct SliceCase {
  int n, n0, w;
  int first; /* -1: refused */
} SliceCase;

static const SliceCase slice_cases[] = {
    {64, 16, 16, 8}, {64, 0, 64, 0},   {128, 64, 64, 32}, {128, 120, 8, 60}, {32, 8, 8, 4},
    {64, 4, 16, -1}, {64, 16, 12, -1}, {64, 56, 16, -1},  {64, -8, 16, -1},  {16, 0, 24, -1},
    {64, 16, 0, -1}, {64, 16, -8, -1},
};

/* A legal slice starting at `first` is the m64n(w) accumulator's layout,
 * shifted by n0 columns: the same thread holds the same row. */
static void check_slice_layout(const SliceCase *c) {
  FragMap wide = frag_acc(c->n), narrow = frag_acc(c->w);
  for (int t = 0; t < 128; t++)
    for (int i = 0; i < c->w / 2; i++) {
      Coord cw = frag_eval(&wide, t, c->first + i), cn = frag_eval(&narrow, t, i);
      if (cw.row != cn.row || cw.col != cn.col + c->n0)
        fail_msg("slice [%d, +%d) of n%d: t%d reg %d is (%d, %d), want (%d, %d)", c->n0, c->w,
                 c->n, t, c->first + i, cw.row, cw.col, cn.row, cn.col + c->n0);
    }
}

static void test_frag_slice_first(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT_OF(slice_cases); i++) {
    const SliceCase *c = &slice_cases[i];
    Diag d = {{0}};
    int got = frag_slice_first(c->n, c->n0, c->w, &d);
    if (got != c->first)
      fail_msg("slice [%d, +%d) of n%d: got %d, want %d (%s)", c->n0, c->w, c->n, got, c->first,
               d.msg);
    if (c->first < 0)
      assert_mentions("slice", d.msg, "8-aligned and inside");
    else if (c->w == 16 || c->w == 32 || c->w == 64 || c->w == 128)
      check_slice_layout(c);
  }
}

/* ========================================================== smem.c */

static const Swizzle all_swz[] = {SWZ_NONE, SWZ_32B, SWZ_64B, SWZ_128B};
static const Major all_major[] = {MAJOR_K, MAJOR_MN};

static void test_swizzle_table(void **state) {
  (void)state;
  /* hopper.md: span and period per swizzle, descriptor layout type
   * (1 = 128B, 2 = 64B, 3 = 32B, 0 = none), CUtensorMapSwizzle 0..3. */
  static const struct {
    Swizzle s;
    const char *name;
    int span, period, desc_type, tma_code;
    uint32_t mask;
  } want[] = {
      {SWZ_NONE, "none", 16, 128, 0, 0, 0x000},
      {SWZ_32B, "32B", 32, 256, 3, 1, 0x080},
      {SWZ_64B, "64B", 64, 512, 2, 2, 0x180},
      {SWZ_128B, "128B", 128, 1024, 1, 3, 0x380},
  };
  for (size_t i = 0; i < COUNT_OF(want); i++) {
    const SwizzleInfo *si = swizzle_info(want[i].s);
    assert_string_equal(si->name, want[i].name);
    assert_int_equal(si->span, want[i].span);
    assert_int_equal(si->period, want[i].period);
    assert_int_equal(si->desc_type, want[i].desc_type);
    assert_int_equal(si->tma_code, want[i].tma_code);
    assert_int_equal(si->xor_mask, want[i].mask);
    Swizzle parsed;
    assert_int_equal(swizzle_parse(want[i].name, &parsed), 0);
    assert_int_equal(parsed, want[i].s);
  }
  Swizzle unused;
  assert_int_equal(swizzle_parse("256B", &unused), -1);
}

/* hopper.md: 128B a ^ ((a & 0x380) >> 3), 64B 0x180, 32B 0x080. */
static uint32_t hopper_swizzle(Swizzle s, uint32_t a) {
  switch (s) {
  case SWZ_128B: return a ^ ((a & 0x380u) >> 3);
  case SWZ_64B: return a ^ ((a & 0x180u) >> 3);
  case SWZ_32B: return a ^ ((a & 0x080u) >> 3);
  default: return a;
  }
}

static void test_swizzle_apply(void **state) {
  (void)state;
  /* Worked by hand: row bits 7.. XORed into the 16-byte chunk bits 4... */
  static const struct {
    Swizzle s;
    uint32_t in, out;
  } samples[] = {
      {SWZ_128B, 0x000, 0x000}, {SWZ_128B, 0x080, 0x090}, {SWZ_128B, 0x0a0, 0x0b0},
      {SWZ_128B, 0x3f0, 0x380}, {SWZ_128B, 0x39e, 0x3ee}, {SWZ_128B, 0x400, 0x400},
      {SWZ_128B, 0x1234, 0x1274}, {SWZ_64B, 0x080, 0x090}, {SWZ_64B, 0x100, 0x120},
      {SWZ_64B, 0x180, 0x1b0},  {SWZ_64B, 0x200, 0x200},  {SWZ_64B, 0x3f0, 0x3c0},
      {SWZ_32B, 0x080, 0x090},  {SWZ_32B, 0x100, 0x100},  {SWZ_32B, 0x0f0, 0x0e0},
      {SWZ_NONE, 0x3f0, 0x3f0}, {SWZ_NONE, 0x39e, 0x39e},
  };
  for (size_t i = 0; i < COUNT_OF(samples); i++)
    assert_int_equal(swizzle_apply(samples[i].s, samples[i].in), samples[i].out);
  /* Every address of four periods: the formula, an involution, and only the
   * chunk bits inside one span change. */
  for (size_t s = 0; s < COUNT_OF(all_swz); s++) {
    uint32_t chunk_bits = (uint32_t)(swizzle_info(all_swz[s])->span - 1) & ~15u;
    for (uint32_t a = 0; a < 4096; a++) {
      uint32_t x = swizzle_apply(all_swz[s], a);
      assert_int_equal(x, hopper_swizzle(all_swz[s], a));
      assert_int_equal(swizzle_apply(all_swz[s], x), a);
      assert_int_equal((x ^ a) & ~chunk_bits, 0);
    }
  }
}

/* hopper.md: bf16 element (r, c < 64) of a K-major 128B atom, for all 64
 * rows of a 64 x 64 tile (one atom column, 8 atoms of 8 rows). */
static void test_kmajor_128b_atom(void **state) {
  (void)state;
  SmemTile t = {DT_BF16, MAJOR_K, SWZ_128B, 64, 64};
  for (uint32_t r = 0; r < 64; r++)
    for (uint32_t c = 0; c < 64; c++) {
      uint32_t want = r * 128 + (((c >> 3) ^ (r & 7)) << 4) + (c & 7) * 2;
      if (tile_offset(&t, (int)r, (int)c) != want)
        fail_msg("(%u, %u): offset %u, hopper.md says %u", r, c, tile_offset(&t, (int)r, (int)c),
                 want);
    }
}

static const int tile_shapes[][2] = {{64, 64}, {64, 128}, {128, 64}, {16, 64}, {64, 16},
                                     {32, 32}, {128, 128}, {256, 64}, {8, 16}, {64, 256}};

/* Storage coordinates: (row, element) in TMA order. */
static uint32_t storage_offset(const SmemTile *t, int row, int e) {
  return t->major == MAJOR_K ? tile_offset(t, row, e) : tile_offset(t, e, row);
}

/* Every element lands on its own even offset inside the tile, and the 8
 * elements of an aligned storage vector fill one 16-byte granule in order:
 * the swizzle moves whole granules only, so 16-byte copies stay valid. */
static void check_tile_bijective(const SmemTile *t) {
  uint32_t bytes = tile_bytes(t);
  assert_int_equal(bytes, (uint32_t)(t->mn * t->k * 2));
  assert_int_equal(tile_rows(t) * tile_row_elems(t), t->mn * t->k);
  unsigned char *hit = calloc(bytes / 2, 1);
  for (int row = 0; row < tile_rows(t); row++)
    for (int e = 0; e < tile_row_elems(t); e++) {
      uint32_t off = storage_offset(t, row, e);
      if (off % 2 || off >= bytes || hit[off / 2]++)
        fail_msg("%dx%d %s %s-major: (%d, %d) -> %u is odd, outside or taken", t->mn, t->k,
                 swizzle_info(t->swz)->name, t->major == MAJOR_K ? "K" : "MN", row, e, off);
      if (e % 8 && off != storage_offset(t, row, e - 1) + 2)
        fail_msg("%dx%d %s: (%d, %d) breaks its 16-byte granule", t->mn, t->k,
                 swizzle_info(t->swz)->name, row, e);
    }
  free(hit);
}

static void test_tile_offset_bijective(void **state) {
  (void)state;
  int legal = 0;
  for (size_t s = 0; s < COUNT_OF(tile_shapes); s++)
    for (size_t m = 0; m < COUNT_OF(all_major); m++)
      for (size_t w = 0; w < COUNT_OF(all_swz); w++) {
        SmemTile t = {DT_BF16, all_major[m], all_swz[w], tile_shapes[s][0], tile_shapes[s][1]};
        if (tile_check(&t, NULL) != 0)
          continue;
        check_tile_bijective(&t);
        legal++;
      }
  assert_true(legal >= 50); /* the table must exercise most layouts */
  SmemTile f16 = {DT_F16, MAJOR_MN, SWZ_64B, 64, 32};
  check_tile_bijective(&f16);
}

typedef struct TileCase {
  const char *what;
  SmemTile t;
  const char *word;
} TileCase;

static const TileCase bad_tiles[] = {
    {"MN-major 128B, mn 16", {DT_BF16, MAJOR_MN, SWZ_128B, 16, 64}, "multiple of the 64-element atom row"},
    {"K-major 128B, K 32", {DT_BF16, MAJOR_K, SWZ_128B, 64, 32}, "multiple of the 64-element atom row"},
    {"K-major 64B, K 16", {DT_BF16, MAJOR_K, SWZ_64B, 64, 16}, "32-element atom row"},
    {"K = 8", {DT_BF16, MAJOR_K, SWZ_NONE, 64, 8}, "K extent 8"},
    {"mn = 12", {DT_BF16, MAJOR_K, SWZ_NONE, 12, 64}, "MN extent 12"},
    {"mn = 0", {DT_BF16, MAJOR_K, SWZ_NONE, 0, 64}, "MN extent 0"},
    {"fp32 tile", {DT_F32, MAJOR_K, SWZ_128B, 64, 64}, "bf16 or f16, not f32"},
    {"264 K-major rows", {DT_BF16, MAJOR_K, SWZ_128B, 264, 64}, "264 rows exceed the TMA box limit of 256"},
    {"272 MN-major rows", {DT_BF16, MAJOR_MN, SWZ_128B, 64, 272}, "272 rows exceed"},
};

static void test_tile_check_refusals(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT_OF(bad_tiles); i++) {
    Diag d = {{0}};
    if (tile_check(&bad_tiles[i].t, &d) != -1)
      fail_msg("%s: accepted", bad_tiles[i].what);
    assert_mentions(bad_tiles[i].what, d.msg, bad_tiles[i].word);
  }
  SmemTile ok = {DT_BF16, MAJOR_K, SWZ_128B, 256, 64}; /* 256 rows is the limit, not past it */
  assert_int_equal(tile_check(&ok, NULL), 0);
}

/* Descriptors worked out by hand from hopper.md's bit table, encoded at
 * shared address 0x400: start = (0x400 + start) >> 4 in bits 0-13, LBO >> 4
 * at 16, SBO >> 4 at 32, layout type at 62. */
typedef struct DescCase {
  const char *what;
  SmemTile t;
  int mn0, k0;
  uint32_t start, lbo, sbo;
  int type;
  uint64_t enc;
} DescCase;

#define K128(mn, k) {DT_BF16, MAJOR_K, SWZ_128B, mn, k}
#define MN128(mn, k) {DT_BF16, MAJOR_MN, SWZ_128B, mn, k}

static const DescCase desc_cases[] = {
    {"K 128B", K128(64, 64), 0, 0, 0, 16, 1024, 1, 0x4000004000010040ull},
    {"K 128B k16", K128(64, 64), 0, 16, 32, 16, 1024, 1, 0x4000004000010042ull},
    {"K 128B second atom column", K128(64, 128), 0, 64, 8192, 16, 1024, 1, 0x4000004000010240ull},
    {"K 128B rows 8..", K128(64, 64), 8, 0, 1024, 16, 1024, 1, 0x4000004000010080ull},
    {"K none", {DT_BF16, MAJOR_K, SWZ_NONE, 64, 64}, 0, 0, 0, 1024, 128, 0, 0x0000000800400040ull},
    {"K none k16", {DT_BF16, MAJOR_K, SWZ_NONE, 64, 64}, 0, 16, 2048, 1024, 128, 0, 0x00000008004000c0ull},
    {"K 64B", {DT_BF16, MAJOR_K, SWZ_64B, 64, 64}, 0, 0, 0, 16, 512, 2, 0x8000002000010040ull},
    {"K 64B k32", {DT_BF16, MAJOR_K, SWZ_64B, 64, 64}, 0, 32, 4096, 16, 512, 2, 0x8000002000010140ull},
    {"K 32B k16", {DT_BF16, MAJOR_K, SWZ_32B, 64, 64}, 0, 16, 2048, 16, 256, 3, 0xc0000010000100c0ull},
    {"MN 128B", MN128(64, 64), 0, 0, 0, 8192, 1024, 1, 0x4000004002000040ull},
    {"MN 128B k16", MN128(64, 64), 0, 16, 2048, 8192, 1024, 1, 0x40000040020000c0ull},
    {"MN 128B second atom column", MN128(128, 64), 64, 0, 8192, 8192, 1024, 1, 0x4000004002000240ull},
    {"MN none", {DT_BF16, MAJOR_MN, SWZ_NONE, 64, 64}, 0, 0, 0, 128, 1024, 0, 0x0000004000080040ull},
    {"MN none k16", {DT_BF16, MAJOR_MN, SWZ_NONE, 64, 64}, 0, 16, 256, 128, 1024, 0, 0x0000004000080050ull},
    {"MN 64B k16", {DT_BF16, MAJOR_MN, SWZ_64B, 64, 64}, 0, 16, 1024, 4096, 512, 2, 0x8000002001000080ull},
    {"MN 32B k16", {DT_BF16, MAJOR_MN, SWZ_32B, 64, 64}, 0, 16, 512, 2048, 256, 3, 0xc000001000800060ull},
};

static void test_desc_known_encodings(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT_OF(desc_cases); i++) {
    const DescCase *c = &desc_cases[i];
    DescParts p;
    Diag d = {{0}};
    if (desc_for(&c->t, c->mn0, c->k0, &p, &d) != 0)
      fail_msg("%s: %s", c->what, d.msg);
    if (p.start != c->start || p.lbo != c->lbo || p.sbo != c->sbo || p.type != c->type)
      fail_msg("%s: start %u lbo %u sbo %u type %d, want %u %u %u %d", c->what, p.start, p.lbo,
               p.sbo, p.type, c->start, c->lbo, c->sbo, c->type);
    if (desc_encode(0x400, &p) != c->enc)
      fail_msg("%s: encodes 0x%016llx, want 0x%016llx", c->what,
               (unsigned long long)desc_encode(0x400, &p), (unsigned long long)c->enc);
  }
}

/* The start offsets of k0 = 0, 16, 32, 48 in a 64 x 64 tile: one k16 step
 * is 32 B inside a swizzled K-major atom row, the next atom column past it
 * (rows * span), and 16 storage rows for MN-major. */
static void test_desc_k16_advance(void **state) {
  (void)state;
  static const struct {
    Major m;
    Swizzle s;
    uint32_t start[4];
  } adv[] = {
      {MAJOR_K, SWZ_128B, {0, 32, 64, 96}},     {MAJOR_K, SWZ_64B, {0, 32, 4096, 4128}},
      {MAJOR_K, SWZ_32B, {0, 2048, 4096, 6144}}, {MAJOR_K, SWZ_NONE, {0, 2048, 4096, 6144}},
      {MAJOR_MN, SWZ_128B, {0, 2048, 4096, 6144}}, {MAJOR_MN, SWZ_64B, {0, 1024, 2048, 3072}},
      {MAJOR_MN, SWZ_32B, {0, 512, 1024, 1536}}, {MAJOR_MN, SWZ_NONE, {0, 256, 512, 768}},
  };
  for (size_t i = 0; i < COUNT_OF(adv); i++) {
    SmemTile t = {DT_BF16, adv[i].m, adv[i].s, 64, 64};
    for (int j = 0; j < 4; j++) {
      DescParts p;
      assert_int_equal(desc_for(&t, 0, 16 * j, &p, NULL), 0);
      if (p.start != adv[i].start[j])
        fail_msg("%s-major %s k0 %d: start %u, want %u", adv[i].m == MAJOR_K ? "K" : "MN",
                 swizzle_info(adv[i].s)->name, 16 * j, p.start, adv[i].start[j]);
    }
  }
}

/* The descriptor start of every legal slice is where tile_offset puts the
 * slice's first element: the descriptors read what TMA writes. */
static void test_desc_start_is_tile_offset(void **state) {
  (void)state;
  for (size_t s = 0; s < COUNT_OF(tile_shapes); s++)
    for (size_t m = 0; m < COUNT_OF(all_major); m++)
      for (size_t w = 0; w < COUNT_OF(all_swz); w++) {
        SmemTile t = {DT_BF16, all_major[m], all_swz[w], tile_shapes[s][0], tile_shapes[s][1]};
        if (tile_check(&t, NULL) != 0)
          continue;
        int mn_step = t.major == MAJOR_K ? 8 : swizzle_info(t.swz)->span / 2;
        for (int mn0 = 0; mn0 < t.mn; mn0 += mn_step)
          for (int k0 = 0; k0 < t.k; k0 += 16) {
            DescParts p;
            assert_int_equal(desc_for(&t, mn0, k0, &p, NULL), 0);
            assert_int_equal(p.start, tile_offset(&t, mn0, k0));
          }
      }
}

static void test_desc_fields(void **state) {
  (void)state;
  static const uint64_t type_bits[] = {[SWZ_128B] = 1, [SWZ_64B] = 2, [SWZ_32B] = 3, [SWZ_NONE] = 0};
  /* Bits 14-15, 30-31 and 46-61 (base offset 49-51 among them) stay 0. */
  const uint64_t reserved = (0xffffull << 46) | (3ull << 30) | (3ull << 14);
  for (size_t w = 0; w < COUNT_OF(all_swz); w++) {
    SmemTile t = {DT_BF16, MAJOR_K, all_swz[w], 64, 128};
    DescParts p;
    assert_int_equal(desc_for(&t, 8, 64, &p, NULL), 0);
    assert_true(p.start != 0);
    uint64_t high = desc_high(&p);
    assert_int_equal(high & 0x3fffull, 0); /* no start field */
    assert_int_equal(high >> 62, type_bits[all_swz[w]]);
    assert_int_equal(high & reserved, 0); /* base offset 0: atoms are period-aligned */
    uint32_t addr = 0x2400;
    assert_int_equal(desc_encode(addr, &p), high | ((addr + p.start) >> 4));
    /* Only the 256 KiB shared window is encoded. */
    assert_int_equal(desc_encode(addr + 0x40000, &p), desc_encode(addr, &p));
  }
}

/* Slices a descriptor cannot start at, and the word of each refusal. */
static const struct {
  const char *what;
  SmemTile t;
  int mn0, k0;
  const char *word;
} bad_slices[] = {
    {"k0 = 8", K128(64, 64), 0, 8, "k0 = 8 must be a multiple of 16"},
    {"k0 = K", K128(64, 64), 0, 64, "k0 = 64"},
    {"MN-major mn0 = 8", MN128(128, 64), 8, 0, "mn0 = 8 must be a multiple of 64"},
    {"K-major mn0 = 4", K128(64, 64), 4, 0, "mn0 = 4 must be a multiple of 8"},
    {"mn0 = MN", K128(64, 64), 64, 0, "mn0 = 64"},
    {"fp32 tile", {DT_F32, MAJOR_K, SWZ_128B, 64, 64}, 0, 0, "bf16 or f16"},
};

static void test_desc_refusals(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT_OF(bad_slices); i++) {
    DescParts p;
    Diag d = {{0}};
    if (desc_for(&bad_slices[i].t, bad_slices[i].mn0, bad_slices[i].k0, &p, &d) != -1)
      fail_msg("%s: accepted", bad_slices[i].what);
    assert_mentions(bad_slices[i].what, d.msg, bad_slices[i].word);
  }
}

/* =========================================================== tma.c */

/* A 1000 x 128 bf16 tensor (256-byte rows) read in 64 x 64 boxes, 128B. */
static TmaSpec valid_map(void) {
  TmaSpec s = {.dt = DT_BF16, .rank = 2, .dims = {128, 1000}, .strides = {256},
               .box = {64, 64}, .elem_strides = {1, 1}, .swz = SWZ_128B, .addr = 0x1000,
               .check_addr = 1};
  return s;
}

typedef enum TmaField { M_NONE, M_RANK, M_DIM0, M_DIM1, M_STRIDE, M_BOX0, M_BOX1, M_ESTRIDE1,
                        M_SWZ, M_ADDR, M_CHECK } TmaField;
typedef struct TmaEdit {
  TmaField f;
  uint64_t v;
} TmaEdit;
typedef struct TmaCase {
  const char *what;
  TmaEdit edits[2];
  const char *words[2]; /* {NULL}: legal */
} TmaCase;

static void apply_tma_edit(TmaSpec *s, TmaEdit e) {
  switch (e.f) {
  case M_NONE: break;
  case M_RANK: s->rank = (int)e.v; break;
  case M_DIM0: s->dims[0] = e.v; break;
  case M_DIM1: s->dims[1] = e.v; break;
  case M_STRIDE: s->strides[0] = e.v; break;
  case M_BOX0: s->box[0] = (uint32_t)e.v; break;
  case M_BOX1: s->box[1] = (uint32_t)e.v; break;
  case M_ESTRIDE1: s->elem_strides[1] = (uint32_t)e.v; break;
  case M_SWZ: s->swz = (Swizzle)e.v; break;
  case M_ADDR: s->addr = e.v; break;
  case M_CHECK: s->check_addr = (int)e.v; break;
  }
}

#define P2(n) (1ull << (n))

static const TmaCase tma_cases[] = {
    {"valid 2-D bf16 map", {{M_NONE, 0}}, {NULL}},
    {"rank 1", {{M_RANK, 1}}, {NULL}},
    {"dim 2^32", {{M_DIM1, P2(32)}}, {NULL}},
    {"stride 2^40 - 16", {{M_STRIDE, P2(40) - 16}}, {NULL}},
    {"box 256", {{M_BOX1, 256}}, {NULL}},
    {"no swizzle, 256-byte inner box", {{M_SWZ, SWZ_NONE}, {M_BOX0, 128}}, {NULL}},
    {"64B swizzle, 32 elements", {{M_SWZ, SWZ_64B}, {M_BOX0, 32}}, {NULL}},
    {"unaligned address, unchecked", {{M_ADDR, 0x1008}, {M_CHECK, 0}}, {NULL}},

    {"rank 0", {{M_RANK, 0}}, {"rank 0", "1..5"}},
    {"rank 6", {{M_RANK, 6}}, {"rank 6", "1..5"}},
    {"dim 0", {{M_DIM0, 0}}, {"dim 0 = 0", "1..2^32"}},
    {"dim 2^32 + 1", {{M_DIM1, P2(32) + 1}}, {"dim 1 = 4294967297", "1..2^32"}},
    {"stride 264", {{M_STRIDE, 264}}, {"stride 1 = 264", "multiple of 16"}},
    {"stride 2^40", {{M_STRIDE, P2(40)}}, {"stride 1 = 1099511627776", "below 2^40"}},
    {"stride shorter than the row", {{M_STRIDE, 128}}, {"stride 1 = 128", "shorter than the 256"}},
    {"box 0", {{M_BOX0, 0}}, {"box dim 0 = 0", "1..256"}},
    {"box 257", {{M_BOX1, 257}}, {"box dim 1 = 257", "1..256"}},
    {"element stride 2", {{M_ESTRIDE1, 2}}, {"element stride 1 = 2", NULL}},
    {"inner box of 4 bf16", {{M_BOX0, 4}}, {"inner box of 8 bytes", "multiple of 16"}},
    {"128 bf16 under 128B", {{M_BOX0, 128}}, {"inner box of 256 bytes", "128B swizzle span of 128"}},
    {"64 bf16 under 64B", {{M_SWZ, SWZ_64B}, {M_BOX0, 64}}, {"inner box of 128 bytes", "64B swizzle span of 64"}},
    {"address 0x1008", {{M_ADDR, 0x1008}}, {"0x1008", "16-byte aligned"}},
};

static void test_tma_cases(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT_OF(tma_cases); i++) {
    const TmaCase *c = &tma_cases[i];
    TmaSpec s = valid_map();
    for (size_t e = 0; e < COUNT_OF(c->edits); e++)
      apply_tma_edit(&s, c->edits[e]);
    Diag d = {{0}};
    int rc = tma_check(&s, &d);
    if (!c->words[0]) {
      if (rc != 0)
        fail_msg("%s: refused: %s", c->what, d.msg);
      continue;
    }
    if (rc != -1)
      fail_msg("%s: accepted", c->what);
    for (size_t w = 0; w < COUNT_OF(c->words); w++)
      assert_mentions(c->what, d.msg, c->words[w]);
  }
}

/* Rank 3: each stride must step over the whole extent of the one before. */
static void test_tma_rank3_strides(void **state) {
  (void)state;
  TmaSpec s = valid_map();
  s.rank = 3;
  s.dims[0] = 64, s.dims[1] = 10, s.dims[2] = 4;
  s.strides[0] = 128, s.strides[1] = 1280;
  s.box[2] = 1, s.elem_strides[2] = 1;
  s.box[1] = 8;
  assert_int_equal(tma_check(&s, NULL), 0);
  s.strides[1] = 1024;
  Diag d = {{0}};
  assert_int_equal(tma_check(&s, &d), -1);
  assert_mentions("rank 3", d.msg, "stride 2 = 1024 bytes is shorter than the 1280");
}

typedef struct BoxCase {
  SmemTile t;
  uint32_t box[2];
  int n;
  uint32_t step; /* smem bytes between boxes */
} BoxCase;

static const BoxCase box_cases[] = {
    {K128(64, 128), {64, 64}, 2, 8192},
    {{DT_BF16, MAJOR_K, SWZ_NONE, 64, 64}, {8, 64}, 8, 1024},
    {{DT_BF16, MAJOR_MN, SWZ_32B, 64, 128}, {16, 128}, 4, 4096},
    {MN128(64, 64), {64, 64}, 1, 0},
};

static void test_tma_tile_boxes_known(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT_OF(box_cases); i++) {
    const BoxCase *c = &box_cases[i];
    uint32_t box[2];
    tma_tile_box_dims(&c->t, box);
    assert_int_equal(box[0], c->box[0]);
    assert_int_equal(box[1], c->box[1]);
    TmaBox boxes[16];
    assert_int_equal(tma_tile_boxes(&c->t, boxes, 16, NULL), c->n);
    for (int b = 0; b < c->n; b++) {
      assert_int_equal(boxes[b].inner, b * (int)c->box[0]);
      assert_int_equal(boxes[b].outer, 0);
      assert_int_equal(boxes[b].smem_off, b * c->step);
    }
  }
  TmaBox one[1];
  Diag d = {{0}};
  SmemTile t = K128(64, 128);
  assert_int_equal(tma_tile_boxes(&t, one, 1, &d), -1);
  assert_mentions("one box of room", d.msg, "needs 2 boxes, room for 1");
  SmemTile bad = MN128(16, 64);
  assert_int_equal(tma_tile_boxes(&bad, one, 1, &d), -1);
  assert_mentions("illegal tile", d.msg, "atom row");
}

/* For every legal tile: the boxes tile it exactly, each lands where
 * tile_offset puts its first element at a swizzle-period boundary, and a
 * map of the tile's storage view with that box passes tma_check. */
static void check_tile_boxes(const SmemTile *t) {
  TmaBox boxes[64];
  uint32_t box[2];
  int n = tma_tile_boxes(t, boxes, 64, NULL);
  tma_tile_box_dims(t, box);
  assert_true(n > 0);
  assert_int_equal((uint32_t)n * box[0] * box[1] * 2, tile_bytes(t));
  for (int b = 0; b < n; b++) {
    assert_int_equal(boxes[b].smem_off, storage_offset(t, 0, boxes[b].inner));
    assert_int_equal(boxes[b].smem_off % (uint32_t)swizzle_info(t->swz)->period, 0);
  }
  TmaSpec s = {.dt = t->dt, .rank = 2,
               .dims = {(uint64_t)tile_row_elems(t), (uint64_t)tile_rows(t)},
               .strides = {(uint64_t)tile_row_elems(t) * 2}, .box = {box[0], box[1]},
               .elem_strides = {1, 1}, .swz = t->swz};
  Diag d = {{0}};
  if (tma_check(&s, &d) != 0)
    fail_msg("%dx%d %s: its own box is refused: %s", t->mn, t->k, swizzle_info(t->swz)->name,
             d.msg);
}

static void test_tma_tile_boxes_all_tiles(void **state) {
  (void)state;
  for (size_t s = 0; s < COUNT_OF(tile_shapes); s++)
    for (size_t m = 0; m < COUNT_OF(all_major); m++)
      for (size_t w = 0; w < COUNT_OF(all_swz); w++) {
        SmemTile t = {DT_BF16, all_major[m], all_swz[w], tile_shapes[s][0], tile_shapes[s][1]};
        if (tile_check(&t, NULL) == 0)
          check_tile_boxes(&t);
      }
}

/* ========================================================== tail.c */

static void test_tail_plan_64x128(void **state) {
  (void)state;
  SmemTile t = K128(64, 128);
  TailPlan p;
  Diag d = {{0}};
  assert_int_equal(tail_plan(&t, 128, &p, &d), 0);
  assert_int_equal(p.vecs_per_row, 16); /* 128 bf16 = 256 B = 16 vectors */
  assert_int_equal(p.iters, 8);         /* 64 rows x 16 / 128 threads */
  assert_int_equal(p.nthreads, 128);
  assert_memory_equal(&p.tile, &t, sizeof t);
}

/* Over all (tid, iter): every storage vector exactly once, loaded iff its
 * row is valid, written to its own 16-byte granule at tile_offset, with
 * its 8 elements contiguous there. */
static void check_tail_lanes(const SmemTile *t, int nthreads, int valid) {
  TailPlan p;
  Diag d = {{0}};
  if (tail_plan(t, nthreads, &p, &d) != 0)
    fail_msg("%dx%d: %s", t->mn, t->k, d.msg);
  int rows = tile_rows(t), vecs = rows * p.vecs_per_row;
  assert_int_equal(p.iters * nthreads, vecs);
  unsigned char *seen = calloc((size_t)vecs, 1);
  unsigned char *granule = calloc(tile_bytes(t) / 16, 1);
  for (int tid = 0; tid < nthreads; tid++)
    for (int it = 0; it < p.iters; it++) {
      TailLane l = tail_lane(&p, tid, it, valid);
      assert_in_range(l.row, 0, rows - 1);
      assert_int_equal(l.col % 8, 0);
      assert_in_range(l.col, 0, tile_row_elems(t) - 8);
      assert_int_equal(seen[l.row * p.vecs_per_row + l.col / 8]++, 0);
      assert_int_equal(l.load, l.row < valid);
      assert_int_equal(l.smem_off, storage_offset(t, l.row, l.col));
      assert_int_equal(l.smem_off % 16, 0);
      assert_int_equal(granule[l.smem_off / 16]++, 0);
      for (int e = 1; e < 8; e++)
        assert_int_equal(storage_offset(t, l.row, l.col + e), l.smem_off + 2u * (uint32_t)e);
    }
  free(seen);
  free(granule);
}

static void test_tail_lanes(void **state) {
  (void)state;
  static const int valid[] = {0, 1, 37, 64};
  static const struct {
    SmemTile t;
    int nthreads;
  } tiles[] = {
      {K128(64, 128), 128},
      {MN128(64, 64), 128},
      {{DT_BF16, MAJOR_K, SWZ_NONE, 64, 64}, 128},
      {{DT_BF16, MAJOR_K, SWZ_64B, 64, 64}, 256},
      {{DT_BF16, MAJOR_MN, SWZ_32B, 32, 64}, 64},
  };
  for (size_t i = 0; i < COUNT_OF(tiles); i++)
    for (size_t v = 0; v < COUNT_OF(valid); v++)
      check_tail_lanes(&tiles[i].t, tiles[i].nthreads, valid[v]);
}

static void test_tail_plan_refusals(void **state) {
  (void)state;
  static const struct {
    SmemTile t;
    int nthreads;
    const char *word;
  } bad[] = {
      {K128(64, 128), 96, "1024 vectors do not split evenly over 96 threads"},
      {K128(64, 128), 100, "not a whole number of warps"},
      {K128(64, 128), 0, "not a whole number of warps"},
      {MN128(16, 64), 128, "atom row"},
  };
  for (size_t i = 0; i < COUNT_OF(bad); i++) {
    TailPlan p;
    Diag d = {{0}};
    if (tail_plan(&bad[i].t, bad[i].nthreads, &p, &d) != -1)
      fail_msg("case %zu (%d threads): accepted", i, bad[i].nthreads);
    assert_mentions("tail plan", d.msg, bad[i].word);
  }
}

/* ======================================================== target.c */

/* setmaxnreg's pool is the registers a CTA enters with: 65536 shared by its
 * threads in steps of 8, capped at 256 (hopper.md). 384 threads enter with
 * 168 (ptxas reports 168 for gdn_scan), so three warpgroups may ask for
 * 504 a thread in all, not 512. */
static void test_entry_regs(void **state) {
  (void)state;
  static const struct {
    unsigned threads, regs;
  } cases[] = {{128, 256}, {256, 256}, {384, 168}, {512, 128}, {640, 96}, {1024, 64}};
  for (size_t i = 0; i < COUNT_OF(cases); i++)
    if (arch_entry_regs(ARCH_SM90A, cases[i].threads) != cases[i].regs)
      fail_msg("%u threads: %u registers, want %u", cases[i].threads,
               arch_entry_regs(ARCH_SM90A, cases[i].threads), cases[i].regs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wgmma_cases),
      cmocka_unit_test(test_wgmma_every_rule_has_a_case),
      cmocka_unit_test(test_frag_maps_are_bijections),
      cmocka_unit_test(test_frag_broken_maps),
      cmocka_unit_test(test_frag_acc_matches_hopper),
      cmocka_unit_test(test_frag_a_matches_hopper),
      cmocka_unit_test(test_frag_acc_as_a),
      cmocka_unit_test(test_frag_slice_first),
      cmocka_unit_test(test_swizzle_table),
      cmocka_unit_test(test_swizzle_apply),
      cmocka_unit_test(test_kmajor_128b_atom),
      cmocka_unit_test(test_tile_offset_bijective),
      cmocka_unit_test(test_tile_check_refusals),
      cmocka_unit_test(test_desc_known_encodings),
      cmocka_unit_test(test_desc_k16_advance),
      cmocka_unit_test(test_desc_start_is_tile_offset),
      cmocka_unit_test(test_desc_fields),
      cmocka_unit_test(test_desc_refusals),
      cmocka_unit_test(test_tma_cases),
      cmocka_unit_test(test_tma_rank3_strides),
      cmocka_unit_test(test_tma_tile_boxes_known),
      cmocka_unit_test(test_tma_tile_boxes_all_tiles),
      cmocka_unit_test(test_tail_plan_64x128),
      cmocka_unit_test(test_tail_lanes),
      cmocka_unit_test(test_tail_plan_refusals),
      cmocka_unit_test(test_entry_regs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
