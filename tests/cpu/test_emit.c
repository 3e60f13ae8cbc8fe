/* test_emit.c: the text gdngen writes. Templates fill both ways strictly,
 * products are the instructions and descriptors the rules say, the PTX
 * wrappers have the right operands, the generated helpers compute what the
 * C rules compute, and the same run writes the same bytes.
 *
 * Generated text is parsed back where it carries numbers (descriptor
 * starts, offset arithmetic) and compared with the rule functions, so the
 * tests check meaning rather than a snapshot of the text.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, under -std=c11 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdngen.h"

/* Tests run from the repository root. */
#define TEMPLATES "templates"

static void assert_has(const char *what, const char *text, const char *word) {
  if (!text || !strstr(text, word))
    fail_msg("%s: text does not contain \"%s\":\n%s", what, word, text ? text : "(empty)");
}

static void assert_lacks(const char *what, const char *text, const char *word) {
  if (text && strstr(text, word))
    fail_msg("%s: text contains \"%s\":\n%s", what, word, text);
}

static int count_of(const char *text, const char *word) {
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, word)) != NULL; p += strlen(word))
    n++;
  return n;
}

/* ====================================================== template.c */

static void test_template_fills_slots(void **state) {
  (void)state;
  const Slot slots[] = {{"A", "alpha"}, {"B", "100% beta"}};
  Out o;
  out_init(&o);
  Diag d = {{0}};
  assert_int_equal(template_fill("x @{A} y @{B} z @{A} 50%\n", slots, 2, &o, &d), 0);
  assert_string_equal(o.buf, "x alpha y 100% beta z alpha 50%\n");
  out_free(&o);
}

typedef struct FillCase {
  const char *what, *tmpl;
  int nslots;
  const char *words[2];
} FillCase;

static const FillCase bad_fills[] = {
    {"missing value", "@{A} and @{MISSING}", 1, {"slot @{MISSING}", "has no value"}},
    {"unused value", "only @{A}", 2, {"value for EXTRA", "has no slot"}},
    {"unterminated slot", "text @{A", 1, {"unterminated slot", "@{A"}},
};

static void test_template_fill_errors(void **state) {
  (void)state;
  const Slot slots[] = {{"A", "alpha"}, {"EXTRA", "unused"}};
  for (size_t i = 0; i < COUNT_OF(bad_fills); i++) {
    Out o;
    out_init(&o);
    Diag d = {{0}};
    if (template_fill(bad_fills[i].tmpl, slots, bad_fills[i].nslots, &o, &d) != -1)
      fail_msg("%s: filled", bad_fills[i].what);
    for (size_t w = 0; w < COUNT_OF(bad_fills[i].words); w++)
      assert_has(bad_fills[i].what, d.msg, bad_fills[i].words[w]);
    out_free(&o);
  }
}

static void test_template_load(void **state) {
  (void)state;
  Out o;
  out_init(&o);
  Diag d = {{0}};
  assert_int_equal(template_load(TEMPLATES, "probe_gemm.cu.in", &o, &d), 0);
  assert_has("probe_gemm", o.buf, "@{PRODUCT}");
  assert_int_equal(template_load(TEMPLATES, "no_such.cu.in", &o, &d), -1);
  assert_has("missing template", d.msg, "cannot read template templates/no_such.cu.in");
  out_free(&o);
}

/* ========================================================= lower.c */

static WgmmaReq req(int n, int k, OperandSrc src, Major am, Major bm) {
  WgmmaReq r = {.arch = ARCH_SM90A, .m = 64, .n = n, .k = k, .a = DT_BF16, .b = DT_BF16,
                .c = DT_F32, .a_src = src, .c_src = SRC_REG, .a_major = am, .b_major = bm,
                .a_from_acc = 0, .first_thread = 0, .nthreads = 128};
  return r;
}

/* The product of the issue: 64 x 64 x 64 bf16, both K-major 128B. */
static Product ss_product(void) {
  Product pr = {.req = req(64, 64, SRC_SMEM, MAJOR_K, MAJOR_K),
                .a_tile = {DT_BF16, MAJOR_K, SWZ_128B, 64, 64},
                .b_tile = {DT_BF16, MAJOR_K, SWZ_128B, 64, 64},
                .acc = "acc", .a_regs = "a", .a_base = "sa", .b_base = "sb",
                .scale_d = "first_scale"};
  return pr;
}

/* Emits pr and expects a refusal naming `word`, with nothing written into
 * the Out or the prelude. */
static void expect_refused(const char *what, const Product *pr, const char *word) {
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  size_t prelude_len = p.text.len;
  Out o;
  out_init(&o);
  Diag d = {{0}};
  if (emit_product(&p, &o, pr, &d) != -1)
    fail_msg("%s: emitted", what);
  assert_has(what, d.msg, word);
  if (o.len != 0)
    fail_msg("%s: refused, but wrote into the Out:\n%.*s", what, (int)o.len, o.buf);
  assert_int_equal(p.text.len, prelude_len);
  out_free(&o);
  prelude_free(&p);
}

static void test_product_refusals(void **state) {
  (void)state;
  Product pr = ss_product();
  pr.req.n = 24;
  expect_refused("N = 24", &pr, "N must be one of");
  pr = ss_product();
  pr.req.arch = ARCH_SM90;
  expect_refused("sm_90", &pr, "sm_90a");
  pr = ss_product();
  pr.b_tile.k = 32; /* K = 64 does not fit */
  pr.b_tile.swz = SWZ_NONE;
  expect_refused("B too short", &pr, "leaves its");
  pr = ss_product();
  pr.a_tile.major = MAJOR_MN;
  expect_refused("A tile of the wrong major", &pr, "A tile is bf16 MN-major");
  pr = ss_product();
  pr.ksteps = 0x11; /* K = 64 has k-steps 0-3 */
  expect_refused("a k-step past K", &pr, "past K = 64");
}

/* A slice offset desc_for refuses must be refused before any text is
 * written, like every other refusal (gdngen.h: "on failure nothing"). */
static void test_product_refuses_bad_offsets_cleanly(void **state) {
  (void)state;
  Product pr = ss_product();
  pr.b_tile.k = 128;
  pr.b_k0 = 8;
  expect_refused("B k0 = 8", &pr, "k0 = 8");
  pr = ss_product();
  pr.a_tile.mn = 128;
  pr.a_mn0 = 4;
  expect_refused("A mn0 = 4", &pr, "mn0 = 4");
}

/* One parsed wgmma call of a product. */
typedef struct Call {
  int a_reg[4];          /* RS */
  unsigned a_start;      /* SS */
  unsigned long long a_high;
  unsigned b_start;
  unsigned long long b_high;
  char scale[64];
} Call;

/* The descriptor `var` = gdn_desc(base + start, high) of a product's block. */
static void parse_first(const char *text, const char *var, const char *base, unsigned *start,
                        unsigned long long *high) {
  char head[64], fmt[96];
  snprintf(head, sizeof head, "const u64 %s = ", var);
  const char *s = strstr(text, head);
  if (!s)
    fail_msg("no %s in %.200s", head, text);
  snprintf(fmt, sizeof fmt, "gdn_desc(%s + %%uu, 0x%%llxull);", base);
  if (sscanf(s + strlen(head), fmt, start, high) != 2)
    fail_msg("cannot parse %.160s", s);
}

/* gdn_desc_at(var, delta) at `q`: the descriptor whose start is `start0`
 * moved by delta, which must be a whole number of 16-byte units. */
static const char *parse_at(const char *q, const char *var, unsigned start0, unsigned *start) {
  char fmt[64];
  unsigned delta;
  int used = 0;
  snprintf(fmt, sizeof fmt, "gdn_desc_at(%s, %%uu)%%n", var);
  if (sscanf(q, fmt, &delta, &used) != 1 || !used)
    fail_msg("cannot parse a %s step at %.120s", var, q);
  if (delta % 16)
    fail_msg("%s moved by %u bytes, not a multiple of 16", var, delta);
  *start = start0 + delta;
  return q + used;
}

/* Parses every call of wrapper `name` in `text`; returns their count. Each
 * descriptor is rebuilt from the block's first one and the call's delta. */
static int parse_calls(const char *text, const char *name, int rs, Call *calls, int max) {
  char head[96];
  snprintf(head, sizeof head, "%s(acc, ", name);
  unsigned a0 = 0, b0;
  unsigned long long ah = 0, bh;
  parse_first(text, "db_", "sb", &b0, &bh);
  if (!rs)
    parse_first(text, "da_", "sa", &a0, &ah);
  int n = 0;
  for (const char *s = strstr(text, head); s; s = strstr(s + 1, head)) {
    if (n == max)
      fail_msg("more than %d calls of %s", max, name);
    Call *c = &calls[n++];
    const char *q = s + strlen(head);
    if (rs) {
      int used = 0;
      if (sscanf(q, "a[%d], a[%d], a[%d], a[%d], %n", &c->a_reg[0], &c->a_reg[1], &c->a_reg[2],
                 &c->a_reg[3], &used) != 4 || !used)
        fail_msg("cannot parse call %d of %s: %.160s", n, name, s);
      q += used;
    } else {
      q = parse_at(q, "da_", a0, &c->a_start) + 2;
      c->a_high = ah;
    }
    q = parse_at(q, "db_", b0, &c->b_start);
    c->b_high = bh;
    if (sscanf(q, ", %63[^)]", c->scale) != 1)
      fail_msg("cannot parse call %d's scale_d: %.60s", n, q);
  }
  return n;
}

static void check_desc(const char *what, int j, const SmemTile *t, int mn0, int k0,
                       unsigned start, unsigned long long high) {
  DescParts dp;
  assert_int_equal(desc_for(t, mn0, k0, &dp, NULL), 0);
  if (start != dp.start || high != desc_high(&dp))
    fail_msg("%s call %d: start %u high 0x%llx, desc_for says %u 0x%llx", what, j, start, high,
             dp.start, (unsigned long long)desc_high(&dp));
}

/* Emits pr into a fresh prelude and Out, which the caller frees; a
 * refusal fails the test. */
static void emit_ok(const char *what, const Product *pr, Prelude *p, Out *o) {
  prelude_init(p, ARCH_SM90A);
  out_init(o);
  Diag d = {{0}};
  if (emit_product(p, o, pr, &d) != 0)
    fail_msg("%s: %s", what, d.msg);
}

/* Emits pr and checks that its text lacks `word`. */
static void assert_lacks_product(const char *what, const Product *pr, const char *word) {
  Prelude p;
  Out o;
  emit_ok(what, pr, &p, &o);
  assert_lacks(what, o.buf, word);
  out_free(&o);
  prelude_free(&p);
}

/* Emits pr and checks: one call per k step (those of pr->ksteps where it
 * is set), scale_d then 1, each descriptor the one desc_for gives for its
 * k step, accumulator fences around, no commit. */
static void check_product(const char *what, const Product *pr, const char *must) {
  Prelude p;
  Out o;
  emit_ok(what, pr, &p, &o);
  const WgmmaReq *r = &pr->req;
  int rs = r->a_src == SRC_REG, steps = r->k / 16, step[16], n = 0;
  for (int j = 0; j < steps; j++)
    if (!pr->ksteps || (pr->ksteps >> j & 1))
      step[n++] = j;
  WgmmaForm f = {r->n, r->a, r->a_src, r->a_major, r->b_major};
  const char *name = emit_wgmma(&p, &f); /* already emitted: just its name */
  Call calls[16];
  assert_int_equal(parse_calls(o.buf, name, rs, calls, 16), n);
  for (int i = 0; i < n; i++) {
    const int j = step[i];
    assert_string_equal(calls[i].scale, i == 0 ? pr->scale_d : "1");
    check_desc(what, j, &pr->b_tile, pr->b_mn0, pr->b_k0 + 16 * j, calls[i].b_start,
               calls[i].b_high);
    if (rs)
      for (int e = 0; e < 4; e++)
        assert_int_equal(calls[i].a_reg[e], 4 * j + e);
    else
      check_desc(what, j, &pr->a_tile, pr->a_mn0, pr->a_k0 + 16 * j, calls[i].a_start,
                 calls[i].a_high);
  }
  char fence[96];
  snprintf(fence, sizeof fence, "i_ < %d; ++i_) fence_operand(acc[i_]);", r->n / 2);
  assert_int_equal(count_of(o.buf, fence), 2);
  assert_true(strstr(o.buf, "wgmma_fence();") < strstr(o.buf, name));
  assert_lacks(what, o.buf, "commit"); /* the schedule places commit and wait */
  assert_lacks(what, o.buf, "wait");
  if (must)
    assert_has(what, o.buf, must);
  if (rs) {
    char a_past[32];
    snprintf(a_past, sizeof a_past, "a[%d]", 4 * steps);
    assert_lacks(what, o.buf, a_past);
    assert_has(what, p.text.buf, "fence_operand(u32 &x)");
  }
  out_free(&o);
  prelude_free(&p);
}

/* gdn_desc_at, as the prelude writes it, gives every k-step's descriptor
 * exactly: for each swizzle, major-ness and k-step of a 64 x 128 tile, at
 * every 1024-byte-aligned base a CTA's shared memory can hold, the first
 * step's descriptor moved by the delta the emitter writes equals the
 * step's own encoding. */
static void test_desc_at_exact(void **state) {
  (void)state;
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  assert_has("prelude", p.text.buf,
             "return (first & 0xFFFFFFFF00000000ull) | (u32)((u32)first + (delta >> 4));");
  prelude_free(&p);
  const Swizzle swz[] = {SWZ_NONE, SWZ_32B, SWZ_64B, SWZ_128B};
  for (int s = 0; s < 4; s++)
    for (int m = 0; m < 2; m++) {
      SmemTile t = {DT_BF16, m ? MAJOR_MN : MAJOR_K, swz[s], 64, 128};
      DescParts d0, dj;
      assert_int_equal(desc_for(&t, 0, 0, &d0, NULL), 0);
      for (int k0 = 16; k0 < 128; k0 += 16) {
        assert_int_equal(desc_for(&t, 0, k0, &dj, NULL), 0);
        uint32_t delta = dj.start - d0.start;
        assert_true(dj.start >= d0.start && delta % 16 == 0);
        for (uint32_t base = 0; base + 64 * 128 * 2 <= 232448; base += 1024) {
          uint64_t first = desc_encode(base, &d0);
          uint64_t at = (first & 0xFFFFFFFF00000000ull) | (uint32_t)((uint32_t)first + (delta >> 4));
          if (at != desc_encode(base, &dj))
            fail_msg("swizzle %d, major %d, k0 %d, base %u: 0x%llx against 0x%llx", s, m, k0, base,
                     (unsigned long long)at, (unsigned long long)desc_encode(base, &dj));
        }
      }
    }
}

static void test_product_ss(void **state) {
  (void)state;
  Product pr = ss_product();
  check_product("SS 128B", &pr, "gdn_desc(sa + 0u, 0x4000004000010000ull)");
  check_product("SS 128B", &pr, "gdn_desc_at(da_, 32u)");
  /* B MN-major: one k16 step is 16 rows of 128 B. */
  pr.req.b_major = MAJOR_MN;
  pr.b_tile.major = MAJOR_MN;
  check_product("SS B MN-major", &pr, "gdn_desc_at(db_, 2048u)");
  /* A from the second half of a 64 x 128 64B tile: the start jumps to the
   * next atom column at k0 = 96. */
  pr = ss_product();
  pr.a_tile = (SmemTile){DT_BF16, MAJOR_K, SWZ_64B, 64, 128};
  pr.a_k0 = 64;
  pr.req.n = 32;
  pr.b_tile = (SmemTile){DT_BF16, MAJOR_K, SWZ_NONE, 32, 64};
  check_product("SS offsets", &pr, "gdn_desc(sa + 8192u, ");
  check_product("SS offsets", &pr, "gdn_desc_at(da_, 4096u)");
  pr = ss_product();
  pr.req.n = 128;
  pr.req.k = 128;
  pr.a_tile.k = 128;
  pr.b_tile = (SmemTile){DT_BF16, MAJOR_K, SWZ_128B, 128, 128};
  check_product("SS n128 k128", &pr, "i_ < 64");
}

static void test_product_rs(void **state) {
  (void)state;
  Product pr = ss_product();
  pr.req.a_src = SRC_REG;
  check_product("RS k64", &pr, "i_ < 16; ++i_) fence_operand(a[i_]);");
  pr.req.a_from_acc = 1;
  pr.req.k = 128;
  pr.b_tile.k = 128;
  check_product("RS accumulator as A, k128", &pr, "a[28], a[29], a[30], a[31]");
  /* k-steps 1 and 3 alone: the first issued overwrites, and only their
   * registers are fenced and read. */
  pr.req.k = 64;
  pr.b_tile.k = 64;
  pr.ksteps = 0xa;
  check_product("RS k-steps 1 and 3", &pr, "for (int i_ = 12; i_ < 16; ++i_) fence_operand(a[i_]);");
  assert_lacks_product("RS k-steps 1 and 3", &pr, "a[0]");
  assert_lacks_product("RS k-steps 1 and 3", &pr, "a[8]");
  pr = ss_product();
  pr.ksteps = 0x3;
  check_product("SS k-steps 0 and 1", &pr, "gdn_desc_at(db_, 32u)");
  assert_lacks_product("SS k-steps 0 and 1", &pr, "gdn_desc_at(db_, 64u)");
}

/* Emits steps j0 .. j1 - 1 of the packing of `acc` (which holds the
 * registers from `first` on) into `a` and checks each line: a[4j + r] =
 * pack(d[8j + 2r], d[8j + 2r + 1]), hopper.md's reuse rule, and no other. */
static void check_acc_to_a(const char *what, const char *acc, int first, const char *a, int j0,
                           int j1, Prelude *p) {
  Out o;
  out_init(&o);
  emit_acc_to_a_steps(p, &o, acc, first, a, j0, j1, DT_BF16);
  assert_int_equal(count_of(o.buf, "\n"), 4 * (j1 - j0));
  for (int j = j0; j < j1; j++)
    for (int r = 0; r < 4; r++) {
      char line[96];
      snprintf(line, sizeof line, "%s[%d] = pack_bf16(%s[%d], %s[%d]);\n", a, 4 * j + r, acc,
               8 * j + 2 * r - first, acc, 8 * j + 2 * r + 1 - first);
      assert_has(what, o.buf, line);
    }
  out_free(&o);
}

/* The whole packing, then steps 2-3 alone from an accumulator that holds
 * the registers from 16 on (an m64n32 half of an m64n64 fragment): the
 * count of lines in check_acc_to_a leaves no room for steps 0 and 1. */
static void test_acc_to_a(void **state) {
  (void)state;
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  check_acc_to_a("acc to a", "acc", 0, "a2", 0, 2, &p);
  check_acc_to_a("acc to a, steps 2-3", "hi", 16, "xa", 2, 4, &p);
  /* cvt puts its first source in the upper half: hi goes first. */
  assert_has("pack", p.text.buf, "cvt.rn.bf16x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo)");
  prelude_free(&p);
}

/* ========================================================== emit.c */

typedef struct FormCase {
  WgmmaForm f;
  const char *must[3];
  const char *must_not;
} FormCase;

/* Operand numbers: N/2 accumulators first, then A (descriptor, or four
 * registers), B's descriptor and scale_d, which the predicate reads. */
static const FormCase form_cases[] = {
    {{64, DT_BF16, SRC_SMEM, MAJOR_K, MAJOR_K},
     {"wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", "setp.ne.b32 p, %34, 0",
      "}, %32, %33, p, 1, 1, 0, 0;"},
     "d[32]"},
    {{64, DT_BF16, SRC_SMEM, MAJOR_MN, MAJOR_K}, {"m64n64k16.f32.bf16.bf16", "p, 1, 1, 1, 0;", NULL}, NULL},
    {{64, DT_BF16, SRC_SMEM, MAJOR_K, MAJOR_MN}, {"m64n64k16.f32.bf16.bf16", "p, 1, 1, 0, 1;", NULL}, NULL},
    {{128, DT_F16, SRC_SMEM, MAJOR_MN, MAJOR_MN},
     {"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "setp.ne.b32 p, %66, 0",
      "}, %64, %65, p, 1, 1, 1, 1;"},
     "d[64]"},
    {{64, DT_BF16, SRC_REG, MAJOR_K, MAJOR_K},
     {"m64n64k16.f32.bf16.bf16", "setp.ne.b32 p, %37, 0", "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;"},
     "d[32]"},
    {{16, DT_BF16, SRC_REG, MAJOR_K, MAJOR_MN},
     {"m64n16k16.f32.bf16.bf16", "setp.ne.b32 p, %13, 0", "}, {%8, %9, %10, %11}, %12, p, 1, 1, 1;"},
     "d[8]"},
};

static void test_emit_wgmma_forms(void **state) {
  (void)state;
  for (size_t i = 0; i < COUNT_OF(form_cases); i++) {
    const FormCase *c = &form_cases[i];
    Prelude p;
    prelude_init(&p, ARCH_SM90A);
    const char *name = emit_wgmma(&p, &c->f);
    char what[96], last[32];
    snprintf(what, sizeof what, "form %zu (%s)", i, name);
    assert_has(what, p.text.buf, name);
    for (size_t w = 0; w < COUNT_OF(c->must) && c->must[w]; w++)
      assert_has(what, p.text.buf, c->must[w]);
    snprintf(last, sizeof last, "\"+f\"(d[%d])", c->f.n / 2 - 1);
    assert_has(what, p.text.buf, last);
    if (c->must_not)
      assert_lacks(what, p.text.buf, c->must_not);
    prelude_free(&p);
  }
}

static void test_emit_wgmma_dedup(void **state) {
  (void)state;
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  const WgmmaForm f = {64, DT_BF16, SRC_SMEM, MAJOR_K, MAJOR_K};
  char first[64];
  snprintf(first, sizeof first, "%s", emit_wgmma(&p, &f));
  size_t len = p.text.len;
  assert_string_equal(emit_wgmma(&p, &f), first);
  assert_int_equal(p.text.len, len);
  assert_int_equal(count_of(p.text.buf, "wgmma.mma_async"), 1);
  const WgmmaForm g = {64, DT_BF16, SRC_SMEM, MAJOR_K, MAJOR_MN};
  assert_string_not_equal(emit_wgmma(&p, &g), first);
  assert_int_equal(count_of(p.text.buf, "wgmma.mma_async"), 2);
  emit_wgmma_wait(&p, 0);
  emit_wgmma_wait(&p, 0);
  emit_wgmma_wait(&p, 1);
  assert_int_equal(count_of(p.text.buf, "wgmma.wait_group.sync.aligned 0;"), 1);
  assert_int_equal(count_of(p.text.buf, "wgmma.wait_group.sync.aligned 1;"), 1);
  prelude_free(&p);
}

/* The 2-D and 3-D TMA loads, plain and under an L2 policy: the hinted
 * form names the qualifier and passes the policy as its last operand,
 * after the barrier's; each is emitted once however often it is asked for. */
static void test_emit_tma_load_forms(void **state) {
  (void)state;
  static const struct {
    void (*emit)(Prelude *, int);
    const char *plain, *hint_fn, *hinted, *op;
  } forms[] = {
      {emit_tma_load_2d, "[%1, {%2, %3}], [%4];", "void tma_load_2d_hint(",
       ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;", "cp.async.bulk.tensor.2d.shared::cluster"},
      {emit_tma_load_3d, "[%1, {%2, %3, %4}], [%5];", "void tma_load_3d_hint(",
       ".L2::cache_hint [%0], [%1, {%2, %3, %4}], [%5], %6;", "cp.async.bulk.tensor.3d.shared::cluster"},
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    Prelude p;
    prelude_init(&p, ARCH_SM90A);
    forms[i].emit(&p, 0);
    assert_has("plain", p.text.buf, forms[i].plain);
    assert_lacks("plain", p.text.buf, "cache_hint");
    forms[i].emit(&p, 1);
    forms[i].emit(&p, 1);
    forms[i].emit(&p, 0);
    assert_has("hinted", p.text.buf, forms[i].hint_fn);
    assert_has("hinted", p.text.buf, "u32 bar, u64 policy)");
    assert_has("hinted", p.text.buf, forms[i].hinted);
    assert_has("hinted", p.text.buf, "\"r\"(bar), \"l\"(policy)");
    assert_int_equal(count_of(p.text.buf, forms[i].op), 2);
    prelude_free(&p);
  }
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  emit_policy_evict_first(&p);
  emit_policy_evict_first(&p);
  assert_int_equal(count_of(p.text.buf, "createpolicy.fractional.L2::evict_first.b64 %0, 1.0;"), 1);
  prelude_free(&p);
}

/* The shared-memory count of HAND_SEEN: one atomic add that returns the
 * old value (a read adds 0), emitted once however often it is asked for. */
static void test_emit_atom_add_shared(void **state) {
  (void)state;
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  emit_atom_add_shared_u32(&p);
  emit_atom_add_shared_u32(&p);
  assert_has("atom", p.text.buf, "u32 atom_add_shared_u32(u32 at, u32 x)");
  assert_has("atom", p.text.buf, "atom.shared.add.u32 %0, [%1], %2;");
  assert_has("atom", p.text.buf, ": \"=r\"(old) : \"r\"(at), \"r\"(x)");
  assert_has("atom", p.text.buf, "return old;");
  assert_int_equal(count_of(p.text.buf, "atom.shared.add.u32"), 1);
  prelude_free(&p);
}

/* ====================================================== generated helpers */

/* Parses the offset arithmetic of an emitted tile function and evaluates
 * it for every element, against tile_offset. */
static void check_tile_offset_fn(const SmemTile *t) {
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  emit_tile_offset_fn(&p, "off", t);
  size_t len = p.text.len;
  emit_tile_offset_fn(&p, "off", t);
  assert_int_equal(p.text.len, len); /* emitted once */
  char row_var[8], e_var[8];
  unsigned E, col_bytes, span, E2, esz, mask = 0;
  const char *s = strstr(p.text.buf, "u32 row = ");
  assert_non_null(s);
  assert_int_equal(sscanf(s, "u32 row = %7[^,], e = %7[^;]; u32 a = (e / %uu) * %uu + row * %uu + "
                             "(e %% %uu) * %uu;",
                          row_var, e_var, &E, &col_bytes, &span, &E2, &esz), 7);
  assert_string_equal(row_var, t->major == MAJOR_K ? "mn" : "k");
  assert_int_equal(E, E2);
  const char *x = strstr(s, "return a ^ ((a & 0x");
  if (t->swz == SWZ_NONE)
    assert_null(x);
  else
    assert_int_equal(sscanf(x, "return a ^ ((a & 0x%xu) >> 3);", &mask), 1);
  for (unsigned mn = 0; mn < (unsigned)t->mn; mn++)
    for (unsigned k = 0; k < (unsigned)t->k; k++) {
      unsigned row = t->major == MAJOR_K ? mn : k, e = t->major == MAJOR_K ? k : mn;
      unsigned a = (e / E) * col_bytes + row * span + (e % E) * esz;
      a ^= (a & mask) >> 3;
      if (a != tile_offset(t, (int)mn, (int)k))
        fail_msg("%s: (%u, %u) emitted %u, tile_offset %u", swizzle_info(t->swz)->name, mn, k,
                 a, tile_offset(t, (int)mn, (int)k));
    }
  prelude_free(&p);
}

static void test_tile_offset_fn(void **state) {
  (void)state;
  static const SmemTile tiles[] = {
      {DT_BF16, MAJOR_K, SWZ_128B, 64, 128}, {DT_BF16, MAJOR_MN, SWZ_64B, 64, 64},
      {DT_BF16, MAJOR_K, SWZ_NONE, 64, 64},  {DT_BF16, MAJOR_MN, SWZ_32B, 32, 64},
  };
  for (size_t i = 0; i < COUNT_OF(tiles); i++)
    check_tile_offset_fn(&tiles[i]);
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  emit_tile_offset_fn(&p, "off128", &tiles[0]);
  assert_has("128B tile", p.text.buf, "0x380u");
  prelude_free(&p);
}

static void test_tail_copy_fn(void **state) {
  (void)state;
  static const struct {
    SmemTile t;
    const char *must[5];
  } cases[] = {
      {{DT_BF16, MAJOR_K, SWZ_128B, 64, 128},
       {"it < 8;", "int v = it * 128 + tid;", "row = v / 16, e = (v % 16) * 8;", "0x380u",
        "st_shared_v4(dst + tail_off(row, e)"}},
      {{DT_BF16, MAJOR_MN, SWZ_64B, 64, 64},
       {"it < 4;", "int v = it * 128 + tid;", "row = v / 8, e = (v % 8) * 8;", "0x180u",
        "st_shared_v4(dst + tail_off(e, row)"}},
  };
  for (size_t i = 0; i < COUNT_OF(cases); i++) {
    TailPlan tp;
    assert_int_equal(tail_plan(&cases[i].t, 128, &tp, NULL), 0);
    Prelude p;
    prelude_init(&p, ARCH_SM90A);
    emit_tail_copy_fn(&p, "tail", &tp);
    size_t len = p.text.len;
    emit_tail_copy_fn(&p, "tail", &tp);
    assert_int_equal(p.text.len, len);
    for (size_t w = 0; w < COUNT_OF(cases[i].must); w++)
      assert_has("tail copy", p.text.buf, cases[i].must[w]);
    /* Rows past `valid` are zeros and never read. */
    assert_has("tail copy", p.text.buf, "if (row < valid) ld_global_v4(");
    prelude_free(&p);
  }
}

/* The zeroing of rows past a sequence's end: the same vector split and
 * offsets as the masked copy, stores only (no load), and only rows >= valid. */
static void test_tail_zero_fn(void **state) {
  (void)state;
  static const SmemTile t = {DT_BF16, MAJOR_K, SWZ_128B, 64, 128};
  TailPlan tp;
  assert_int_equal(tail_plan(&t, 32, &tp, NULL), 0);
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  emit_tail_zero_fn(&p, "zero", &tp);
  size_t len = p.text.len;
  emit_tail_zero_fn(&p, "zero", &tp);
  assert_int_equal(p.text.len, len); /* emitted once */
  static const char *const must[] = {
      "void zero(u32 dst, int valid, int tid)", "#pragma unroll 4", "it < 32;",
      "int v = it * 32 + tid;", "row = v / 16, e = (v % 16) * 8;", "0x380u",
      "if (row >= valid) st_shared_v4(dst + zero_off(row, e), 0u, 0u, 0u, 0u);"};
  for (size_t w = 0; w < COUNT_OF(must); w++)
    assert_has("tail zero", p.text.buf, must[w]);
  assert_null(strstr(p.text.buf, "ld_global_v4(src"));
  prelude_free(&p);
}

static void test_frag_fn(void **state) {
  (void)state;
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  FragMap m = frag_acc(64);
  emit_frag_fn(&p, "acc64", &m);
  /* hopper.md: row 16 w + l / 4 + 8 ((i >> 1) & 1), col 8 (i >> 2) + 2 (l % 4) + (i & 1). */
  assert_has("acc64", p.text.buf,
             "int acc64_row(int t, int r) { return ((t >> 5) & 3) * 16 + ((t >> 2) & 7) * 1 + "
             "((r >> 1) & 1) * 8; }");
  assert_has("acc64", p.text.buf,
             "int acc64_col(int t, int r) { return (r >> 2) * 8 + ((t >> 0) & 3) * 2 + "
             "((r >> 0) & 1) * 1; }");
  prelude_free(&p);
}

/* ========================================================= probe.c */

/* probe.c promises a probe for every legal (N, SS/RS, swizzle, B major). */
static void test_probe_list_covers_products(void **state) {
  (void)state;
  ProbeSpec specs[128];
  int n = probe_list(specs, 128);
  assert_true(n > 0 && n < 128);
  static const int ns[] = {16, 32, 64, 128};
  int combos = 0;
  for (int src = 0; src < 2; src++)
    for (size_t i = 0; i < COUNT_OF(ns); i++)
      for (int s = 0; s < SWZ_COUNT; s++)
        for (int m = 0; m < 2; m++) {
          SmemTile b = {DT_BF16, (Major)m, (Swizzle)s, ns[i], 128};
          if (tile_check(&b, NULL) != 0)
            continue;
          combos++;
          int found = 0;
          for (int j = 0; j < n; j++)
            found |= specs[j].kind == PROBE_GEMM && specs[j].n == ns[i] &&
                     specs[j].a_src == (OperandSrc)src && specs[j].b_swz == (Swizzle)s &&
                     specs[j].b_major == (Major)m;
          if (!found)
            fail_msg("no probe for %s n%d B %s %s-major", src ? "RS" : "SS", ns[i],
                     swizzle_info((Swizzle)s)->name, m ? "MN" : "K");
        }
  assert_true(combos >= 40);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (strcmp(specs[i].name, specs[j].name) == 0)
        fail_msg("two probes named %s", specs[i].name);
}

static const char *probe_files[] = {"probes_ss.cu", "probes_rs.cu", "probes_misc.cu", "probes.h",
                                    "probe_step.cu"};

static char *read_all(const char *dir, const char *name, size_t *len) {
  char *path = path_join(dir, name);
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("cannot read %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  free(path);
  *len = (size_t)n;
  return buf;
}

/* Removes a temporary directory of plain files. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char *path = path_join(dir, e->d_name);
    remove(path);
    free(path);
  }
  closedir(d);
  rmdir(dir);
}

static int entries_in(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  if (d)
    closedir(d);
  return n;
}

/* Two fresh output folders per test; teardown removes them even when the
 * test fails half way. */
typedef struct TmpDirs {
  char a[32], b[32];
} TmpDirs;

static int make_dirs(void **state) {
  TmpDirs *t = malloc(sizeof *t);
  if (!t)
    return -1;
  snprintf(t->a, sizeof t->a, "/tmp/gdngen_emit_XXXXXX");
  snprintf(t->b, sizeof t->b, "/tmp/gdngen_emit_XXXXXX");
  *state = t;
  return mkdtemp(t->a) && mkdtemp(t->b) ? 0 : -1;
}

static int remove_dirs(void **state) {
  TmpDirs *t = *state;
  remove_dir(t->a);
  remove_dir(t->b);
  free(t);
  return 0;
}

static void test_probe_emit_deterministic(void **state) {
  const TmpDirs *t = *state;
  Diag d = {{0}};
  if (probe_emit(TEMPLATES, t->a, ARCH_SM90A, &d) != 0 ||
      probe_emit(TEMPLATES, t->b, ARCH_SM90A, &d) != 0)
    fail_msg("probe_emit: %s", d.msg);
  /* Exactly the four files, no leftover temporaries. */
  assert_int_equal(entries_in(t->a), (int)COUNT_OF(probe_files));
  for (size_t i = 0; i < COUNT_OF(probe_files); i++) {
    size_t n1, n2;
    char *a = read_all(t->a, probe_files[i], &n1), *b = read_all(t->b, probe_files[i], &n2);
    assert_true(n1 > 0);
    if (n1 != n2 || memcmp(a, b, n1) != 0)
      fail_msg("%s differs between two runs", probe_files[i]);
    free(a);
    free(b);
  }
}

static void test_probe_emit_errors(void **state) {
  const TmpDirs *t = *state;
  Diag d = {{0}};
  assert_int_equal(probe_emit("no_such_templates", t->a, ARCH_SM90A, &d), -1);
  assert_has("no templates", d.msg, "cannot read template no_such_templates/");
  char *missing = path_join(t->a, "missing");
  assert_int_equal(probe_emit(TEMPLATES, missing, ARCH_SM90A, &d), -1);
  assert_has("no out dir", d.msg, "cannot write");
  free(missing);
  assert_int_equal(entries_in(t->a), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_template_fills_slots),
      cmocka_unit_test(test_template_fill_errors),
      cmocka_unit_test(test_template_load),
      cmocka_unit_test(test_product_refusals),
      cmocka_unit_test(test_product_refuses_bad_offsets_cleanly),
      cmocka_unit_test(test_desc_at_exact),
      cmocka_unit_test(test_product_ss),
      cmocka_unit_test(test_product_rs),
      cmocka_unit_test(test_acc_to_a),
      cmocka_unit_test(test_emit_wgmma_forms),
      cmocka_unit_test(test_emit_wgmma_dedup),
      cmocka_unit_test(test_emit_tma_load_forms),
      cmocka_unit_test(test_emit_atom_add_shared),
      cmocka_unit_test(test_tile_offset_fn),
      cmocka_unit_test(test_tail_copy_fn),
      cmocka_unit_test(test_tail_zero_fn),
      cmocka_unit_test(test_frag_fn),
      cmocka_unit_test(test_probe_list_covers_products),
      cmocka_unit_test_setup_teardown(test_probe_emit_deterministic, make_dirs, remove_dirs),
      cmocka_unit_test_setup_teardown(test_probe_emit_errors, make_dirs, remove_dirs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
