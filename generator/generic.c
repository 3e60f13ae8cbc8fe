/* generic.c: the generic pipeline, the route of every call that no
 * specialisation matches: gdn_prepare (128 threads, one CTA per chunk slot
 * and output head) then gdn_scan (384 threads: state, output and producer
 * warpgroups; one CTA per sequence, output head and 64-row half of the
 * state). docs/generic.md explains the split. docs/numerics.md is the
 * contract; templates/gdn_*.cu.in hold the control flow; everything
 * layout-dependent below comes from the rule modules.
 */
#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

/* A q or k chunk: rows t, K = the head dimension (two 128B atom columns). */
static const SmemTile TILE_QK = {DT_BF16, MAJOR_K, SWZ_128B, 64, 128};
/* The same bytes read as B[t][d] with N = d: the state update's operand. */
static const SmemTile TILE_K_MN = {DT_BF16, MAJOR_MN, SWZ_128B, 128, 64};
/* v rows t, one 64-column half; P and W rows t, K = s; o staged [t][v]. */
static const SmemTile TILE_64 = {DT_BF16, MAJOR_K, SWZ_128B, 64, 64};
/* The ladder's fp16 B operands D and Z: storage row = matrix row. */
static const SmemTile TILE_D = {DT_F16, MAJOR_MN, SWZ_128B, 64, 64};
/* The value operands' format (docs/numerics.md, "Why the value operands are
 * fp16"): P and W, which prepare publishes, and X and Ub, which the scan
 * forms, meet only each other in products (U = W X, the output's P Ub), so
 * they are fp16, three more bits than bf16 at the same rate, where the
 * state operand and Ud, which meet the caller's bf16 q and k, are bf16.
 * P and W as the scan's B operands: */
#define VALUE_DT DT_F16
static const SmemTile TILE_VALUE = {VALUE_DT, MAJOR_K, SWZ_128B, 64, 64};

static uint32_t carve(uint32_t *off, uint32_t bytes, uint32_t align) {
  uint32_t at = (*off + align - 1) / align * align;
  *off = at + bytes;
  return at;
}

/* The K-major q/k tile and its MN-major reading must be the same bytes,
 * or the state update would read a different matrix than KS did. */
static int check_k_views(Diag *d) {
  for (int t = 0; t < 64; t++)
    for (int e = 0; e < 128; e++)
      if (tile_offset(&TILE_QK, t, e) != tile_offset(&TILE_K_MN, e, t))
        return diag_fail(d, "generic: the K-major and MN-major views of a k tile differ at (%d, %d)",
                         t, e);
  return 0;
}

/* TMA loads of a tile from a [T, H, 128] tensor through the 3-D map
 * {128, H, T}: one box per atom column, at (inner0 + box, head, tok); under
 * the L2 policy that the expression `policy` gives, unless it is NULL.
 * With dst NULL, the same boxes brought into L2 only, for a later load. */
static int loads_3d(Out *o, const SmemTile *t, const char *dst, const char *map,
                    const char *inner0, const char *head, const char *tok, const char *policy,
                    Diag *d) {
  TmaBox boxes[16];
  int n = tma_tile_boxes(t, boxes, 16, d);
  for (int i = 0; i < n; i++) {
    if (!dst)
      out_line(o, "tma_prefetch_3d(%s, %s + %d, %s, %s + %d);", map, inner0, boxes[i].inner,
               head, tok, boxes[i].outer);
    else
      out_line(o, "%s(%s + %uu, %s, %s + %d, %s, %s + %d, bar%s%s);",
               policy ? "tma_load_3d_hint" : "tma_load_3d", dst, boxes[i].smem_off, map, inner0,
               boxes[i].inner, head, tok, boxes[i].outer, policy ? ", " : "",
               policy ? policy : "");
  }
  return n < 0 ? -1 : 0;
}

/* One 2-D TMA load of box `b`, under `policy` if there is one. */
static void load_box_2d(Out *o, const char *pad, const char *dst, const char *map,
                        const char *row, const TmaBox *b, const char *policy) {
  out_line(o, "%s%s(%s + %uu, %s, %d, (int)%s + %d, bar%s%s);", pad,
           policy ? "tma_load_2d_hint" : "tma_load_2d", dst, b->smem_off, map, b->inner, row,
           b->outer, policy ? ", " : "", policy ? policy : "");
}

/* TMA loads of a 64 x 64 workspace tile through the 2-D map {64, rows}.
 * With `when`, each box is loaded under `policy` where that holds and
 * without one where it does not (a constant once the producer is inlined). */
static int loads_2d(Out *o, const SmemTile *t, const char *dst, const char *map, const char *row,
                    const char *policy, const char *when, Diag *d) {
  TmaBox boxes[16];
  int n = tma_tile_boxes(t, boxes, 16, d);
  for (int i = 0; i < n; i++) {
    if (when) {
      out_line(o, "if (%s)", when);
      load_box_2d(o, "  ", dst, map, row, &boxes[i], policy);
      out_line(o, "else");
      load_box_2d(o, "  ", dst, map, row, &boxes[i], NULL);
    } else {
      load_box_2d(o, "", dst, map, row, &boxes[i], policy);
    }
  }
  return n < 0 ? -1 : 0;
}

static WgmmaReq rq(int n, int k, DType t, OperandSrc src, Major bm, int first_thread) {
  WgmmaReq r = {ARCH_SM90A, 64, n, k, t, t, DT_F32, src, SRC_REG, MAJOR_K, bm,
                src == SRC_REG, first_thread, 128};
  return r;
}

typedef struct Operands {
  const SmemTile *a, *b;
  const char *acc, *a_regs, *a_base, *b_base, *scale;
  int b_mn0, b_k0; /* where in its tile B's slice starts */
} Operands;

static int product_steps(Prelude *p, Slots *sl, const char *slot, int indent, WgmmaReq r,
                         Operands ops, unsigned ksteps, Diag *d) {
  Product pr = {r, *(ops.a ? ops.a : ops.b), *ops.b, 0, 0, ops.b_mn0, ops.b_k0, ops.acc,
                ops.a_regs, ops.a_base, ops.b_base, ops.scale, ksteps};
  Out o;
  out_init(&o);
  o.indent = indent;
  if (emit_product(p, &o, &pr, d)) {
    out_free(&o);
    return -1;
  }
  slot_out(sl, slot, &o);
  return 0;
}

static int product(Prelude *p, Slots *sl, const char *slot, int indent, WgmmaReq r,
                   Operands ops, Diag *d) {
  return product_steps(p, sl, slot, indent, r, ops, 0, d);
}

static void to_a_steps(Prelude *p, Slots *sl, const char *slot, int indent, const char *acc,
                       int first, const char *a, int j0, int j1, DType dt) {
  Out o;
  out_init(&o);
  o.indent = indent;
  emit_acc_to_a_steps(p, &o, acc, first, a, j0, j1, dt);
  slot_out(sl, slot, &o);
}

static void to_a(Prelude *p, Slots *sl, const char *slot, int indent, const char *acc,
                 const char *a, int ksteps, DType dt) {
  to_a_steps(p, sl, slot, indent, acc, 0, a, 0, ksteps, dt);
}

/* The masked copy (zero = 0) or the zeroing of rows past the end (zero = 1)
 * of a tile, by `threads` threads. */
static int tail_fn(Prelude *p, const char *name, const SmemTile *t, int threads, int zero,
                   Diag *d) {
  TailPlan tp;
  if (tail_plan(t, threads, &tp, d))
    return -1;
  if (zero)
    emit_tail_zero_fn(p, name, &tp);
  else
    emit_tail_copy_fn(p, name, &tp);
  return 0;
}

/* The instructions every GDN kernel uses, emitted in a fixed order so the
 * generated file does not depend on which kernel asked first. */
static void common_prelude(Prelude *p) {
  FragMap a64 = frag_acc(64), a128 = frag_acc(128);
  emit_smem_u32(p);
  emit_mbar_init(p);
  emit_fence_mbar_init(p);
  emit_mbar_expect_tx(p);
  emit_mbar_wait(p);
  emit_tma_load_3d(p, 0);
  emit_fence_proxy_async(p);
  emit_griddep_launch(p);
  emit_griddep_wait(p);
  emit_wgmma_commit(p);
  emit_wgmma_wait(p, 0);
  emit_wgmma_wait(p, 1);
  emit_bar_sync(p);
  emit_st_shared_u32(p);
  emit_ld_shared_v4(p);
  emit_ld_shared_v2_f32(p);
  emit_st_global_v4(p);
  emit_cvt_pack(p, DT_BF16);
  emit_cvt_pack(p, DT_F16);
  emit_cvt_f32_bf16(p);
  emit_round_f16(p);
  emit_frag_fn(p, "acc64", &a64);
  emit_frag_fn(p, "acc128", &a128);
  emit_tile_offset_fn(p, "tile_64", &TILE_64);
  emit_tile_offset_fn(p, "tile_d", &TILE_D);
}

/* What the runtime needs to launch a kernel (written to gdn_kernels.h). */
typedef struct KernelInfo {
  const char *name;
  unsigned threads, smem;
} KernelInfo;

/* Prepare units per CTA of gdn_fused after its first wave: one per
 * warpgroup. Two, not three: three to a CTA make more units a second but
 * each one later (up to about 12 us against 5.5 alone, on the H200), and
 * the chains waited for them; two measured faster (docs/generic.md).
 * gdn_prepare's __launch_bounds__ minimum: CTAs that share an SM. */
enum { FUSED_UNITS = 2, PREPARE_CTAS_PER_SM = 4 };
/* gdn_prepare_lean's: one more CTA an SM, for launches of more than one
 * wave of gdn_prepare (prepare_unit's LEAN form fits the registers). */
enum { PREPARE_LEAN_CTAS_PER_SM = 5 };

/* The prepare unit that warpgroup wg of gdn_fused's prepare CTA j runs (-1:
 * none): the first `single` CTAs one unit each, then FUSED_UNITS each (a
 * warpgroup past those, of the kernel's three, runs none). One
 * text, in the kernel and in gdn_kernels.h, so that the host's grid size
 * and the CPU tests use the kernel's own map. */
#define FUSED_UNIT_FMT "((wg) >= %d ? -1 : (j) < (single) ? ((wg) == 0 ? (j) : -1) : (single) + ((j) - (single)) * %d + (wg))"

/* A split launch runs its units by runners instead: runner r of R = 2 P
 * runs units r, r + R, r + 2 R, ..., so the first runners hold the first
 * chunk slots. Warpgroup 0 of prepare CTA j of P is runner j. Chunk slots
 * 0 and 1's units (runners 0 .. H - 1, H = min(2 Ho, P)) are on every
 * chain's path, and a unit alone on its SM is a fifth shorter: warpgroup
 * 1 of those CTAs starts once warpgroup 0's first unit is done (on named
 * barrier LATE_BAR), and takes the last runners, whose first units are
 * needed last; warpgroup 1 of CTA j >= H is runner P + j - H. -1: none
 * (the third warpgroup). */
#define SPLIT_H "(2 * (Ho) < (P) ? 2 * (Ho) : (P))"
#define SPLIT_RUNNER_FMT                                                                 \
  "((wg) >= %d ? -1 : (wg) == 0 ? (j) : (j) >= " SPLIT_H " ? (P) + (j) - " SPLIT_H        \
  " : 2 * (P) - " SPLIT_H " + (j))"

/* A split pair's output CTA has nothing to output until its chain's first
 * hand-off, so its warpgroup 0 runs one unit first, alone on its SM, in
 * the part of the k/v/W ring that its extra hand-off slots leave. Output
 * CTA s runs unit SPLIT_OFF + s: the units of runner positions 2 P - H
 * on, which fall to the second warpgroups of the CTAs that run chunk
 * slots 0 and 1 alone, and so would start only once those units are
 * done. It does so only where, with them, every unit runs in the runners'
 * first two rounds (t1024-hv16): where there are more rounds (t4096-h16),
 * the first hand-offs took longer with those units beside them. Those
 * SPLIT_OUT units are taken out of the runners' order: runner position x
 * runs unit SPLIT_UNIT(x). SPLIT_OUT_FMT's %d is the units two rounds
 * give a prepare CTA (2 SPLIT_UNITS). */
#define SPLIT_OFF "(2 * (P) - " SPLIT_H ")"
#define SPLIT_OUT_FMT                                                                    \
  "((units) > %d * (P) + (nscan) || (units) - " SPLIT_OFF " <= 0 ? 0 : (units) - " SPLIT_OFF       \
  " < (nscan) ? (units) - " SPLIT_OFF " : (nscan))"
#define SPLIT_UNIT_FMT "((x) < " SPLIT_OFF " ? (x) : (x) + (out))"

/* Runners a prepare CTA of a split launch holds (SPLIT_RUNNER_FMT's map
 * is written for two). */
enum { SPLIT_UNITS = 2 };

/* Row pitch of P staged in shared memory before it leaves in 16-byte
 * stores: 128 bytes of bf16 and 16 more, so that consecutive rows start
 * four banks apart. (W leaves from the ladder's D tile instead.) */
enum { OUT_ROW = 64 * 2 + 16 };

/* The ladder's tensor-core rung at block size b (docs/numerics.md) merges
 * pairs of b-blocks through C_b, which is nonzero only in the rows of each
 * odd b-block, at the columns of the block before it (the mask that `rung`
 * in gdn_prepare.cu.in applies). Z = C_b D_b then needs only the k-steps over
 * C_b's nonzero columns, and M = D_b Z only those over Z's nonzero rows,
 * which are C_b's: every other k-step would add products with a factor
 * that is exactly zero, so leaving it out changes no value. Bit j of the
 * result is k-step j (columns or rows 16 j .. 16 j + 15). */
#define RUNG_C(b, t, s) ((((t) / (b)) & 1) && (s) / (b) == (t) / (b) - 1)
#define RUNG_TEXT_(x) #x
#define RUNG_TEXT(x) RUNG_TEXT_(x)

static unsigned rung_ksteps(int b, int by_rows) {
  unsigned m = 0;
  for (int t = 0; t < 64; t++)
    for (int s = 0; s < 64; s++)
      if (RUNG_C(b, t, s))
        m |= 1u << ((by_rows ? t : s) / 16);
  return m;
}

/* The rung's two products: every k-step (the lean unit's), and at b = 16
 * and b = 32 over their k-steps alone (the full unit's); and C_b's mask as
 * the template applies it, the same expression as above. */
static int rung_products(Prelude *p, Slots *sl, Diag *d) {
  slot_add(sl, "RUNG_C", "%s", RUNG_TEXT(RUNG_C(b, t, s)));
  Operands z = {NULL, &TILE_D, "z", "ca", NULL, "sd", "0", 0, 0};
  Operands m = {NULL, &TILE_D, "z", "da", NULL, "sz", "0", 0, 0};
  WgmmaReq r = rq(64, 64, DT_F16, SRC_REG, MAJOR_MN, 0);
  static const struct {
    int b;
    const char *z, *m; /* template slots; the names are kept, not copied */
  } rungs[] = {{16, "PRODUCT_Z16", "PRODUCT_M16"}, {32, "PRODUCT_Z32", "PRODUCT_M32"}};
  int rc = product_steps(p, sl, "PRODUCT_Z", 2, r, z, 0, d);
  rc = rc ? rc : product_steps(p, sl, "PRODUCT_M", 2, r, m, 0, d);
  for (size_t i = 0; i < COUNT_OF(rungs) && rc == 0; i++) {
    rc = product_steps(p, sl, rungs[i].z, 2, r, z, rung_ksteps(rungs[i].b, 0), d);
    rc = rc ? rc : product_steps(p, sl, rungs[i].m, 2, r, m, rung_ksteps(rungs[i].b, 1), d);
  }
  return rc;
}

/* What the prepare template takes for granted of the accumulator's
 * fragment layout, checked where the rules can say no. */
static int check_prepare_frags(Diag *d) {
  /* The ladder keeps D as fp16 pairs that are their own A operand
   * (store_f16_pairs in the template): that needs accumulator registers
   * 2i and 2i + 1 to be A register i of every k-step. */
  for (int j = 0; j < 4; j++)
    for (int e = 0; e < 8; e++)
      if (frag_acc_as_a(j, e) != 8 * j + e)
        return diag_fail(d, "generic: the ladder's D pairs are not the A operand's registers");
  /* BY_WARP in the template compiles each warp's copy with its 8 x 8
   * blocks known: an element's block must depend on the warp and the
   * register alone, not on the lane. */
  FragMap acc = frag_acc(64);
  for (int t = 0; t < 128; t++)
    for (int r = 0; r < acc.regs; r++) {
      Coord c = frag_eval(&acc, t, r), w = frag_eval(&acc, t & ~31, r), z = frag_eval(&acc, 0, r);
      if (c.row >> 3 != w.row >> 3 || c.col >> 3 != z.col >> 3)
        return diag_fail(d, "generic: an accumulator element's 8 x 8 block depends on its lane");
    }
  return 0;
}

static int emit_prepare(Prelude *p, const char *tmpl_dir, Out *o, KernelInfo *ki, Diag *d) {
  uint32_t off = 0, q = carve(&off, tile_bytes(&TILE_QK), 1024),
           k = carve(&off, tile_bytes(&TILE_QK), 1024), g = carve(&off, 256, 16),
           b = carve(&off, 256, 16), gi = carve(&off, 256, 16), a8 = carve(&off, 2048, 16),
           d8 = carve(&off, 2048, 16), c8 = carve(&off, 1024, 16), l8 = carve(&off, 1024, 16),
           bar = carve(&off, 8, 8);
  *ki = (KernelInfo){"gdn_prepare", 128, off + 1024};
  emit_fence_acq_rel_gpu(p);
  emit_st_relaxed_gpu(p);
  Slots sl = {.n = 0};
  Out ld;
  out_init(&ld);
  ld.indent = 3;
  emit_st_shared_v4(p);
  int rc = tail_fn(p, "tail_qk128", &TILE_QK, 128, 0, d);
  rc = rc ? rc : loads_3d(&ld, &TILE_QK, "sq", "a.mq", "0", "hq", "t0", NULL, d);
  if (rc == 0)
    slot_out(&sl, "LOAD_Q", &ld);
  ld.indent = 3;
  rc = rc ? rc : loads_3d(&ld, &TILE_QK, "sk", "a.mk", "0", "hk", "t0", NULL, d);
  if (rc == 0)
    slot_out(&sl, "LOAD_K", &ld);
  const struct {
    const char *name;
    uint32_t v;
  } nums[] = {{"Q_OFF", q}, {"K_OFF", k}, {"G_OFF", g}, {"B_OFF", b}, {"GI_OFF", gi}, {"A8_OFF", a8},
              {"D8_OFF", d8}, {"C8_OFF", c8}, {"L8_OFF", l8}, {"BAR_OFF", bar},
              {"QK_BYTES", 2 * tile_bytes(&TILE_QK)}, {"Z_IN_K", tile_bytes(&TILE_D)},
              {"UNIT_BYTES", off}, {"OUT_ROW", OUT_ROW},
              {"CTAS_PER_SM", PREPARE_CTAS_PER_SM},
              {"LEAN_CTAS_PER_SM", PREPARE_LEAN_CTAS_PER_SM}};
  for (size_t i = 0; i < COUNT_OF(nums); i++)
    slot_add(&sl, nums[i].name, "%u", nums[i].v);
  /* A (fp32, fragment order) takes q's bytes, D and Z take k's. */
  if (tile_bytes(&TILE_QK) < 32 * 128 * 4 || tile_bytes(&TILE_QK) < 2 * tile_bytes(&TILE_D) ||
      tile_bytes(&TILE_QK) < 64 * OUT_ROW)
    rc = diag_fail(d, "generic: the q and k tiles are too small to hold A, D and Z, or P's staging");
  slot_add(&sl, "TAIL_QK", "tail_qk128");
  slot_add(&sl, "PACK_VALUE", "pack_%s", dtype_info(VALUE_DT)->ptx); /* emit_cvt_pack's name */
  slot_add(&sl, "VALUE_NAME", "%s", dtype_info(VALUE_DT)->name);
  slot_add(&sl, "ACC", "acc64");
  slot_add(&sl, "D_TILE", "tile_d");
  Operands qk = {&TILE_QK, &TILE_QK, "qk", NULL, "sq", "sk", "0", 0, 0};
  Operands kk = {&TILE_QK, &TILE_QK, "kk", NULL, "sk", "sk", "0", 0, 0};
  rc = rc ? rc : product(p, &sl, "PRODUCT_QK", 1, rq(64, 128, DT_BF16, SRC_SMEM, MAJOR_K, 0), qk, d);
  rc = rc ? rc : product(p, &sl, "PRODUCT_KK", 1, rq(64, 128, DT_BF16, SRC_SMEM, MAJOR_K, 0), kk, d);
  rc = rc ? rc : rung_products(p, &sl, d);
  rc = rc ? rc : check_prepare_frags(d);
  if (rc == 0) {
    to_a(p, &sl, "C_TO_A", 2, "c", "ca", 4, DT_F16);
    static const char *const tmpl[] = {"gdn_prepare.cu.in"};
    rc = template_emit(tmpl_dir, tmpl, 1, &sl, o, d);
  }
  out_free(&ld);
  slots_free(&sl);
  return rc;
}

/* How many chunks ahead of its W and g a one-grid chain CTA's warp 3
 * brings a chunk's v into L2: v is read from HBM by the scan alone, and
 * its fill was the longest of a stage's loads (four ahead measured the
 * same, docs/generic.md). */
enum { SCAN_V_AHEAD = 2 };

/* A split chain CTA prefetches no v: its TMA unit also sends each hand-off
 * to the output CTA, and a prefetch queued behind that copy holds back the
 * W and g loads issued after it (docs/generic.md). Its output CTA's warp 3
 * brings every chunk's v from its own SM: chunks SCAN_V_AHEAD ..
 * SCAN_VPF_OUT - 1 at its start, then chunk c + SCAN_VPF_OUT once chunk c's
 * hand-off has landed (the chain is then about two chunks on, and loads
 * that chunk's v about three later). Against chunks 2-7 from the chain CTA:
 * on an H200, t1024-hv16 and t4096-h16 faster in every pass of an A/B, by
 * 0.4-1.3 % and 0.1-0.5 % (row 317 of docs/experiments.md). */
enum { SCAN_VPF_OUT = 7 };

/* The scan's copies of a chunk. v is read by the scan alone, once (prepare
 * never reads it): its lines go first when L2 needs room, before q and k,
 * which prepare read before, and the workspace's P and W. P and W are read
 * by both halves of a head: a CTA with one item (`a.ws_first`) reads them
 * about when its other half does, then marks them first to go (n10 2 %
 * faster on an H100); lanes drift apart, and there evict-first cost n20
 * 2.6 %, so they load without a policy. */
static int scan_loads(Prelude *p, Slots *sl, Diag *d) {
  struct {
    const char *slot;
    int indent, ws;
    const SmemTile *t;
    const char *dst, *map, *inner, *head, *policy, *when;
  } rows[] = {
      {"LOAD_W", 2, 1, &TILE_64, "sw", "a.mw", NULL, NULL, "policy_evict_first()", "a.ws_first"},
      {"LOAD_P", 2, 1, &TILE_64, "sp", "a.mp", NULL, NULL, "policy_evict_first()", "a.ws_first"},
      {"LOAD_K", 3, 0, &TILE_QK, "sk", "a.mk", "0", "hk", NULL, NULL},
      {"LOAD_V", 3, 0, &TILE_64, "sv", "a.mv", "v0", "hv", "policy_evict_first()", NULL},
      {"LOAD_Q", 3, 0, &TILE_QK, "sq", "a.mq", "0", "hq", NULL, NULL},
      /* v of a later chunk into L2 (prefetch_v), for its load later */
      {"PREFETCH_V", 1, 0, &TILE_64, NULL, "a.mv", "v0", "hv", NULL, NULL},
  };
  emit_policy_evict_first(p);
  emit_tma_load_2d(p, 0);
  emit_tma_load_2d(p, 1);
  emit_tma_load_3d(p, 1);
  emit_tma_prefetch_3d(p);
  for (size_t i = 0; i < COUNT_OF(rows); i++) {
    Out o;
    out_init(&o);
    o.indent = rows[i].indent;
    int rc = rows[i].ws ? loads_2d(&o, rows[i].t, rows[i].dst, rows[i].map, "row",
                                   rows[i].policy, rows[i].when, d)
                        : loads_3d(&o, rows[i].t, rows[i].dst, rows[i].map, rows[i].inner,
                                   rows[i].head, "t0", rows[i].policy, d);
    if (rc) {
      out_free(&o);
      return -1;
    }
    slot_out(sl, rows[i].slot, &o);
  }
  slot_add(sl, "V_AHEAD", "%d", SCAN_V_AHEAD);
  slot_add(sl, "VPF_OUT", "%d", SCAN_VPF_OUT);
  return 0;
}


/* Warpgroup 0 (threads 0-127) owns the state chain, warpgroup 1 the output. */
static int scan_products(Prelude *p, Slots *sl, Diag *d) {
  struct {
    const char *slot;
    WgmmaReq r;
    Operands ops;
  } rows[] = {
      /* K S^T in two halves of the chunk's tokens s (ks: 0-31, kt: 32-63;
       * an m64n32 fragment's registers are the m64n64 one's first or last
       * sixteen), and U's k-steps over each half, so that X of one half is
       * formed while the other's products run (the same sums: each
       * element's k order is unchanged). */
      {"PRODUCT_KS_A", rq(32, 128, DT_BF16, SRC_REG, MAJOR_K, 0), {NULL, &TILE_QK, "ks", "sa", NULL, "sk", "0", 0, 0}},
      {"PRODUCT_KS_B", rq(32, 128, DT_BF16, SRC_REG, MAJOR_K, 0), {NULL, &TILE_QK, "kt", "sa", NULL, "sk", "0", 32, 0}},
      {"PRODUCT_U_A", rq(64, 32, VALUE_DT, SRC_REG, MAJOR_K, 0), {NULL, &TILE_VALUE, "u", "xa", NULL, "sw", "0", 0, 0}},
      {"PRODUCT_U_B", rq(64, 32, VALUE_DT, SRC_REG, MAJOR_K, 0), {NULL, &TILE_VALUE, "u", "(xa + 8)", NULL, "sw", "1", 0, 32}},
      {"PRODUCT_S", rq(128, 64, DT_BF16, SRC_REG, MAJOR_MN, 0), {NULL, &TILE_K_MN, "S", "uda", NULL, "sk", "1", 0, 0}},
      {"PRODUCT_OP", rq(64, 128, DT_BF16, SRC_REG, MAJOR_K, 128), {NULL, &TILE_QK, "op", "sa", NULL, "sq", "0", 0, 0}},
      {"PRODUCT_O", rq(64, 64, VALUE_DT, SRC_REG, MAJOR_K, 128), {NULL, &TILE_VALUE, "op", "ua", NULL, "sp", "1", 0, 0}},
  };
  for (size_t i = 0; i < COUNT_OF(rows); i++)
    if (product(p, sl, rows[i].slot, 1, rows[i].r, rows[i].ops, d))
      return -1;
  to_a(p, sl, "S_TO_A", 1, "S", "sa", 8, DT_BF16);
  to_a_steps(p, sl, "X_TO_A_A", 1, "ks", 0, "xa", 0, 2, VALUE_DT);
  to_a_steps(p, sl, "X_TO_A_B", 1, "kt", 16, "xa", 2, 4, VALUE_DT);
  to_a(p, sl, "U_TO_A", 1, "u", "ua", 4, VALUE_DT);
  to_a(p, sl, "UD_TO_A", 1, "u", "uda", 4, DT_BF16);
  return 0;
}

/* Shared memory of the scan: the k/v/W and q/P rings (3 stages each), two
 * hand-off slots (bf16 S and U in fragment order), the mbarriers of
 * SCAN_BARS, and cu_seqlens for the longest-first order. o is staged in
 * the q tile of its chunk. */
typedef struct ScanLayout {
  uint32_t k_in, v_in, w_in, g_in, kvw_stride, q_in, p_in, gq_in, qp_stride;
  uint32_t hand_u, hand_stride, kvw, qp, hand, bar, seqs, end;
} ScanLayout;

/* Batches of up to this many sequences are scanned longest first. */
enum { SCAN_LPT_MAX = 128 };

/* A split scan pair (gdn_fused): launches of at most SPLIT_MAX_SCAN scan
 * CTAs run each as a cluster of a chain CTA and an output CTA. */
enum { SPLIT_MAX_SCAN = 64 };

/* Hand-off slots of a split pair's output CTA: its own two and two in the
 * place of the k/v/W ring it does not use, so that the chain CTA's copy
 * warps can run up to four chunks ahead of the output. */
enum { SPLIT_OUT_SLOTS = 4 };

/* And of its chain CTA: its own two and two in the place of the q/P ring,
 * so that the state warpgroup does not wait for a copy's round trip. A
 * power of two (the chain's slot is c & (slots - 1)). */
enum { SPLIT_CHAIN_SLOTS_LOG2 = 2, SPLIT_CHAIN_SLOTS = 1 << SPLIT_CHAIN_SLOTS_LOG2 };

/* The scan's mbarriers, in shared-memory order: how many of each (one per
 * stage or slot) and how many arrivals complete a phase. */
static const struct {
  const char *name;
  int n, arrivals;
  const char *who;
} SCAN_BARS[] = {
    {"KVW_FULL", 3, 32, "the k/v/W producer warp (lane 0 also expects the bytes)"},
    {"KVW_EMPTY", 3, 128, "warpgroup 0, done with the stage"},
    {"QP_FULL", 3, 32, "the q/P producer warp (lane 0 also expects the bytes)"},
    {"QP_EMPTY", 3, 128, "warpgroup 1, done with the stage"},
    {"HAND_FULL", SPLIT_OUT_SLOTS, 128, "warpgroup 0, Sb and Ub stored (split: the copy landed)"},
    {"HAND_EMPTY", SPLIT_OUT_SLOTS, 128, "the output warpgroup, Sb and Ub loaded (split: the copy landed)"},
    {"OUT_FREE", SPLIT_OUT_SLOTS, 1, "a split output CTA's warp 2: its slot is read"},
    {"TAIL_KV", 1, 1, "the short chunk's raw k and v (bytes only)"},
    {"TAIL_Q", 1, 1, "the short chunk's raw q (bytes only)"},
};

/* The bytes at a.bar: the barriers, then HAND_SEEN's word (scan_bar_slots). */
static uint32_t scan_bar_bytes(void) {
  uint32_t n = 0;
  for (size_t i = 0; i < COUNT_OF(SCAN_BARS); i++)
    n += 8u * (uint32_t)SCAN_BARS[i].n;
  return n + 8u;
}

/* BAR_MAP: one macro per barrier kind, its address from the ScanArgs;
 * BAR_INIT: their initialisation, by thread 0. */
static void scan_bar_slots(Slots *sl) {
  Out map, init;
  out_init(&map);
  out_init(&init);
  init.indent = 1;
  uint32_t off = 0;
  for (size_t i = 0; i < COUNT_OF(SCAN_BARS); i++) {
    const char *nm = SCAN_BARS[i].name;
    if (SCAN_BARS[i].n == 1) {
      outf(&map, "#define %s(a) ((a).bar + %uu)\n", nm, off);
      out_line(&init, "mbar_init(%s(a), %d); // %s", nm, SCAN_BARS[i].arrivals, SCAN_BARS[i].who);
    } else {
      outf(&map, "#define %s(a, s) ((a).bar + %uu + 8u * (u32)(s))\n", nm, off);
      out_line(&init, "for (int s = 0; s < %d; ++s) // %s", SCAN_BARS[i].n, SCAN_BARS[i].who);
      out_line(&init, "  mbar_init(%s(a, s), %d);", nm, SCAN_BARS[i].arrivals);
    }
    off += 8u * (uint32_t)SCAN_BARS[i].n;
  }
  /* Not a barrier: a count that only grows, so that a warp that reads it
   * late cannot miss a phase (hand_seen). */
  outf(&map, "#define HAND_SEEN(a) ((a).bar + %uu)\n", off);
  out_line(&init, "st_shared_u32(HAND_SEEN(a), 0u); // a split output CTA's hand-offs landed");
  slot_out(sl, "BAR_MAP", &map);
  slot_out(sl, "BAR_INIT", &init);
}

static void scan_layout(ScanLayout *l) {
  uint32_t off = 0;
  l->k_in = carve(&off, tile_bytes(&TILE_QK), 1024);
  l->v_in = carve(&off, tile_bytes(&TILE_64), 1024);
  l->w_in = carve(&off, tile_bytes(&TILE_64), 1024);
  l->g_in = carve(&off, 512, 16);
  l->kvw_stride = carve(&off, 0, 1024);
  off = 0;
  l->q_in = carve(&off, tile_bytes(&TILE_QK), 1024);
  l->p_in = carve(&off, tile_bytes(&TILE_64), 1024);
  l->gq_in = carve(&off, 512, 16);
  l->qp_stride = carve(&off, 0, 1024);
  l->hand_u = 32 * 128 * 4;
  l->hand_stride = l->hand_u + 16 * 128 * 4;
  off = 0;
  l->kvw = carve(&off, 3 * l->kvw_stride, 1024);
  l->qp = carve(&off, 3 * l->qp_stride, 1024);
  l->hand = carve(&off, 2 * l->hand_stride, 1024);
  l->bar = carve(&off, scan_bar_bytes(), 8);
  /* cu_seqlens; the sequence and the work of each rank; the CTA's ranks and their count */
  l->seqs = carve(&off, (4 * SCAN_LPT_MAX + 2) * 4, 16);
  l->end = off;
}

static void scan_layout_slots(Slots *sl, const ScanLayout *l) {
  const struct {
    const char *name;
    uint32_t v;
  } rows[] = {
      {"K_IN", l->k_in}, {"V_IN", l->v_in}, {"W_IN", l->w_in}, {"G_IN", l->g_in},
      {"KVW_STRIDE", l->kvw_stride}, {"Q_IN", l->q_in}, {"P_IN", l->p_in}, {"GQ_IN", l->gq_in},
      {"QP_STRIDE", l->qp_stride}, {"HAND_U", l->hand_u}, {"HAND_STRIDE", l->hand_stride},
      {"KVW_OFF", l->kvw}, {"QP_OFF", l->qp}, {"HAND_OFF", l->hand},
      {"BAR_OFF", l->bar}, {"SEQS_OFF", l->seqs}, {"LPT_MAX", SCAN_LPT_MAX},
      {"KV_BYTES", tile_bytes(&TILE_QK) + tile_bytes(&TILE_64)},
      {"Q_BYTES", tile_bytes(&TILE_QK)},
      {"KVW_BYTES", tile_bytes(&TILE_QK) + 2 * tile_bytes(&TILE_64) + 512},
      {"WG_BYTES", tile_bytes(&TILE_64) + 512},
      {"QP_BYTES", tile_bytes(&TILE_QK) + tile_bytes(&TILE_64) + 512},
      {"PG_BYTES", tile_bytes(&TILE_64) + 512},
  };
  for (size_t i = 0; i < COUNT_OF(rows); i++)
    slot_add(sl, rows[i].name, "%u", rows[i].v);
  slot_add(sl, "VALUE_NAME", "%s", dtype_info(VALUE_DT)->name);
}

/* One ldmatrix/stmatrix .trans call of block_moves: its four 8 x 8 blocks. */
typedef struct BlockCall {
  int r0[4], c0[4]; /* block origins (v, t) of lanes 0-7, 8-15, 16-23, 24-31 in warp 0 */
} BlockCall;

/* The byte offset lane `lane` of warp `w` gives ldmatrix in call bc. */
static uint32_t block_lane_offset(const BlockCall *bc, int w, int lane) {
  int i = lane >> 3, rr = lane & 7;
  return tile_offset(&TILE_64, bc->c0[i] + rr, 16 * w + bc->r0[i]);
}

/* The constant by which every lane's address in call b exceeds its
 * address in call a, or -1 where none does. The 128B swizzle XORs a row's
 * low three bits into the address, so calls a multiple of 8 rows apart
 * differ by the same bytes in every lane: the emitted code forms each
 * thread's address once and adds the constant, an immediate of the
 * instruction, so that no per-call address stays live across a loop. */
static int64_t block_call_delta(const BlockCall *a, const BlockCall *b) {
  int64_t delta = -1;
  for (int w = 0; w < 4; w++)
    for (int lane = 0; lane < 32; lane++) {
      int64_t dl = (int64_t)block_lane_offset(b, w, lane) - (int64_t)block_lane_offset(a, w, lane);
      if (dl < 0 || (delta >= 0 && dl != delta))
        return -1;
      delta = dl;
    }
  return delta;
}

/* The 8 x 8 blocks of the m64n64 accumulator layout moved to or from a
 * [t][v] tile (rows t) with ldmatrix/stmatrix .trans: register pair p
 * covers block (v0 + 16 w, t0) of the transposed matrix, so lane l of call
 * `call` addresses row t0 + l % 8 of block 4 call + l / 8. Used to load V^T
 * fragments (X^T) and to stage O^T for row-wise stores. */
static int block_moves(Prelude *p, Slots *sl, const char *slot, const char *insn,
                       const char *tile, const char *regs, Diag *d) {
  FragMap m = frag_acc(64);
  BlockCall bc[8];
  int calls = m.regs / 8;
  for (int call = 0; call < calls; call++)
    for (int i = 0; i < 4; i++)
      if (frag_pair_block(&m, 4 * call + i, &bc[call].r0[i], &bc[call].c0[i], d))
        return -1;
  Out o;
  out_init(&o);
  o.indent = 2;
  const BlockCall *b0 = &bc[0];
  out_line(&o, "const u32 %s_lane = %s + tile_64((i == 0 ? %d : i == 1 ? %d : i == 2 ? %d : %d) + rr,",
           tile, tile, b0->c0[0], b0->c0[1], b0->c0[2], b0->c0[3]);
  out_line(&o, "                                   vw + (i == 0 ? %d : i == 1 ? %d : i == 2 ? %d : %d));",
           b0->r0[0], b0->r0[1], b0->r0[2], b0->r0[3]);
  for (int call = 0; call < calls; call++) {
    int64_t delta = block_call_delta(b0, &bc[call]);
    if (delta < 0) {
      out_free(&o);
      return diag_fail(d, "%s: call %d of %s is not call 0's addresses moved by one constant",
                       slot, call, insn);
    }
    char at[64]; /* call 0's address as it is, the others plus their constant */
    if (delta)
      snprintf(at, sizeof at, "%s_lane + %lldu", tile, (long long)delta);
    else
      snprintf(at, sizeof at, "%s_lane", tile);
    out_line(&o, "%s(%s, %s[%d], %s[%d], %s[%d], %s[%d]);", insn, at, regs, 4 * call, regs,
             4 * call + 1, regs, 4 * call + 2, regs, 4 * call + 3);
  }
  (void)p;
  slot_out(sl, slot, &o);
  return 0;
}

/* What a kernel asks of one SM: its shared memory (with the 1 KB the
 * kernel spends aligning its base) and `regs`, the registers its
 * warpgroups ask setmaxnreg for in all (0: none, left to ptxas and the
 * launch bounds; arch_setmaxnreg_fits). */
static int fits_sm(ArchId arch, const KernelInfo *ki, unsigned regs, Diag *d) {
  const ArchInfo *a = arch_info(arch);
  if (ki->smem > a->smem_max)
    return diag_fail(d, "%s needs %u bytes of shared memory; %s allows %u", ki->name, ki->smem,
                     a->name, a->smem_max);
  return arch_setmaxnreg_fits(arch, ki->name, ki->threads, regs, d);
}

/* Three warpgroups; the producer gives registers to the state and output
 * warpgroups (setmaxnreg). Their sum must fit what 384 threads enter with,
 * 168 each: 504 (fits_sm). */
enum { SCAN_REGS_STATE = 232, SCAN_REGS_OUTPUT = 216, SCAN_REGS_PRODUCER = 56 };

static int emit_scan(Prelude *p, ArchId arch, const char *tmpl_dir, Out *o, KernelInfo *ki,
                     Diag *d) {
  ScanLayout l;
  scan_layout(&l);
  *ki = (KernelInfo){"gdn_scan", 384, l.end + 1024};
  if ((SPLIT_OUT_SLOTS - 2) * l.hand_stride > 3 * l.kvw_stride ||
      (SPLIT_CHAIN_SLOTS - 2) * l.hand_stride > 3 * l.qp_stride)
    return diag_fail(d, "a split pair's extra hand-off slots (%d and %d of %u bytes) do not "
                        "fit in the k/v/W ring (%u bytes) and the q/P ring (%u bytes)",
                     SPLIT_OUT_SLOTS - 2, SPLIT_CHAIN_SLOTS - 2, l.hand_stride,
                     3 * l.kvw_stride, 3 * l.qp_stride);
  if (fits_sm(arch, ki, 128u * (SCAN_REGS_STATE + SCAN_REGS_OUTPUT + SCAN_REGS_PRODUCER), d))
    return -1;
  Slots sl = {.n = 0};
  emit_mbar_arrive(p);
  emit_mapa(p);
  emit_mbar_arrive_remote_n(p);
  emit_mbar_expect_tx_remote(p);
  emit_bulk_copy_cluster(p);
  emit_mbar_wait_cluster(p);
  emit_cluster_sync(p);
  emit_atom_add_shared_u32(p);
  emit_ld_relaxed_gpu(p);
  emit_ld_acquire_gpu(p);
  emit_fence_proxy_async_global(p);
  emit_bulk_load(p);
  emit_bulk_prefetch_l2(p);
  emit_mbar_add_tx(p);
  emit_tma_store_3d(p);
  emit_bulk_commit(p);
  emit_bulk_wait(p, 1, 1);
  emit_bulk_wait(p, 0, 1);
  emit_bulk_wait(p, 0, 0);
  emit_st_shared_v4(p);
  int rc = check_k_views(d);
  rc = rc ? rc : tail_fn(p, "zero_rows_qk32", &TILE_QK, 32, 1, d);
  rc = rc ? rc : tail_fn(p, "zero_rows_v32", &TILE_64, 32, 1, d);
  rc = rc ? rc : scan_loads(p, &sl, d);
  rc = rc ? rc : scan_products(p, &sl, d);
  emit_ldmatrix_x4_trans(p);
  emit_stmatrix_x4_trans(p);
  emit_setmaxnreg(p, 1, SCAN_REGS_STATE);
  emit_setmaxnreg(p, 1, SCAN_REGS_OUTPUT);
  emit_setmaxnreg(p, 0, SCAN_REGS_PRODUCER);
  slot_add(&sl, "REGS_STATE", "setmaxnreg_inc_%d", SCAN_REGS_STATE);
  slot_add(&sl, "REGS_OUTPUT", "setmaxnreg_inc_%d", SCAN_REGS_OUTPUT);
  slot_add(&sl, "REGS_PRODUCER", "setmaxnreg_dec_%d", SCAN_REGS_PRODUCER);
  rc = rc ? rc : block_moves(p, &sl, "V_LDMATRIX", "ldmatrix_x4_trans", "sv", "vv", d);
  rc = rc ? rc : block_moves(p, &sl, "O_STMATRIX", "stmatrix_x4_trans", "so", "ob", d);
  scan_layout_slots(&sl, &l);
  scan_bar_slots(&sl);
  slot_add(&sl, "ZERO_QK", "zero_rows_qk32");
  slot_add(&sl, "ZERO_V", "zero_rows_v32");
  slot_add(&sl, "ACC", "acc64");
  slot_add(&sl, "ACC_S", "acc128");
  slot_add(&sl, "O_TILE", "tile_64");
  slot_add(&sl, "OUT_SLOTS", "%d", SPLIT_OUT_SLOTS);
  slot_add(&sl, "CHAIN_SLOTS", "%d", SPLIT_CHAIN_SLOTS);
  slot_add(&sl, "CHAIN_SLOTS_LOG2", "%d", SPLIT_CHAIN_SLOTS_LOG2);
  static const char *const tmpl[] = {"gdn_scan_helpers.cu.in", "gdn_scan.cu.in"};
  if (rc == 0)
    rc = template_emit(tmpl_dir, tmpl, 2, &sl, o, d);
  slots_free(&sl);
  return rc;
}

/* gdn_fused (templates/gdn_fused.cu.in): gdn_scan's CTAs and CTAs of
 * FUSED_UNITS prepare units in one grid; as much shared memory as the
 * larger of the two, and the scan's registers. */
static int emit_fused(Prelude *p, ArchId arch, const char *tmpl_dir, const KernelInfo *prep,
                      const KernelInfo *scan, Out *o, KernelInfo *ki, Diag *d) {
  uint32_t stride = (prep->smem - 1024 + 1023) / 1024 * 1024;
  uint32_t units = FUSED_UNITS * stride + 1024;
  *ki = (KernelInfo){"gdn_fused", 384, units > scan->smem ? units : scan->smem};
  if (SPLIT_UNITS * stride + 1024 > ki->smem)
    return diag_fail(d, "gdn_fused's %d split runners a prepare CTA need %u bytes of shared "
                        "memory, more than its %u",
                     SPLIT_UNITS, SPLIT_UNITS * stride + 1024, ki->smem);
  if (fits_sm(arch, ki, 128u * (SCAN_REGS_STATE + SCAN_REGS_OUTPUT + SCAN_REGS_PRODUCER), d))
    return -1;
  ScanLayout l; /* a split output CTA's unit: past its extra hand-off slots */
  scan_layout(&l);
  uint32_t out_unit = (l.kvw + (SPLIT_OUT_SLOTS - 2) * l.hand_stride + 1023) / 1024 * 1024;
  if (out_unit + stride > l.kvw + 3 * l.kvw_stride)
    return diag_fail(d, "a split output CTA's unit (%u bytes) does not fit in its k/v/W ring "
                        "past its extra hand-off slots (%u bytes left)",
                     stride, l.kvw + 3 * l.kvw_stride - out_unit);
  Slots sl = {.n = 0};
  slot_add(&sl, "UNITS", "%d", FUSED_UNITS);
  slot_add(&sl, "FUSED_UNIT", FUSED_UNIT_FMT, FUSED_UNITS, FUSED_UNITS);
  slot_add(&sl, "SPLIT_RUNNER", SPLIT_RUNNER_FMT, SPLIT_UNITS);
  slot_add(&sl, "SPLIT_UNITS", "%d", SPLIT_UNITS);
  emit_bar_arrive(p);
  slot_add(&sl, "SPLIT_H", "%s", SPLIT_H); /* the CTAs whose unit runs alone first */
  slot_add(&sl, "LATE_BAR", "%u", 1u + ki->threads / 128); /* past the units' own (1 + wg) */
  slot_add(&sl, "UNIT_STRIDE", "%u", stride);
  slot_add(&sl, "SPLIT_OUT", SPLIT_OUT_FMT, 2 * SPLIT_UNITS);
  slot_add(&sl, "SPLIT_OFF", "%s", SPLIT_OFF);
  slot_add(&sl, "SPLIT_UNIT", SPLIT_UNIT_FMT);
  slot_add(&sl, "OUT_UNIT_OFF", "%u", out_unit);
  static const char *const tmpl[] = {"gdn_fused.cu.in"};
  int rc = template_emit(tmpl_dir, tmpl, 1, &sl, o, d);
  slots_free(&sl);
  return rc;
}

/* The launch facts the runtime reads: kernels, tensor-map boxes, workspace. */
static void kernel_table(Out *o, const KernelInfo *ki, int n) {
  uint32_t box[2];
  tma_tile_box_dims(&TILE_QK, box);
  gen_header(o, "gdn_kernels.h: how libgdn launches the emitted kernels.", ARCH_SM90A, "//");
  outf(o, "#ifndef GDN_KERNELS_H\n#define GDN_KERNELS_H\n\n");
  outf(o, "typedef struct gdn_kernel_spec {\n  const char *name, *file;\n");
  outf(o, "  unsigned threads, smem_bytes;\n} gdn_kernel_spec;\n\n");
  outf(o, "enum { GDN_K_PREPARE, GDN_K_SCAN, GDN_K_FUSED, GDN_K_SCAN_PAIRS, GDN_K_SCAN_LANES, GDN_K_PREPARE_LEAN, GDN_K_COUNT };\n");
  outf(o, "static const gdn_kernel_spec gdn_kernel_specs[GDN_K_COUNT] = {\n");
  for (int i = 0; i < n; i++)
    outf(o, "  {\"%s\", \"gdn_generic\", %u, %u},\n", ki[i].name, ki[i].threads, ki[i].smem);
  outf(o, "};\n\n");
  outf(o, "// q, k, v: 3-D maps {128, H, T}, one box = %u columns x 1 head x %u tokens.\n",
       box[0], box[1]);
  outf(o, "#define GDN_CHUNK_BOX_INNER %uu\n#define GDN_CHUNK_BOX_ROWS %uu\n", box[0], box[1]);
  outf(o, "// P and W: 2-D maps {64, slots * Ho * 64} of %s, same box.\n",
       dtype_info(VALUE_DT)->name);
  outf(o, "#define GDN_WS_TMA_DTYPE %d /* CUtensorMapDataType */\n",
       dtype_info(VALUE_DT)->tma_code);
  outf(o, "// 1 where P, W, X and Ub are fp16, 0 where bf16 (docs/numerics.md).\n");
  outf(o, "#define GDN_VALUE_F16 %d\n", VALUE_DT == DT_F16);
  outf(o, "#define GDN_SWIZZLE %d /* CUtensorMapSwizzle */\n",
       swizzle_info(TILE_QK.swz)->tma_code);
  outf(o, "// Workspace per chunk slot and output head: P and W (%s 64 x 64), and\n",
       dtype_info(VALUE_DT)->name);
  outf(o, "// g then g_L / g (fp32 2 x 64).\n");
  outf(o, "#define GDN_WS_TILE_BYTES %uu\n#define GDN_WS_G_BYTES 512u\n", tile_bytes(&TILE_64));
  outf(o, "// gdn_fused: ready flags per slot and head (u32: two halves x two producer\n");
  outf(o, "// warps), and prepare units per CTA.\n");
  outf(o, "#define GDN_WS_FLAG_BYTES 16u\n#define GDN_FUSED_UNITS %du\n", FUSED_UNITS);
  outf(o, "// gdn_fused splits launches of at most this many scan CTAs into clusters of\n");
  outf(o, "// a chain CTA and an output CTA.\n#define GDN_SPLIT_MAX_SCAN %d\n", SPLIT_MAX_SCAN);
  outf(o, "// The unit warpgroup wg of gdn_fused's prepare CTA j runs (-1: none).\n");
  outf(o, "#define GDN_FUSED_UNIT(j, wg, single) " FUSED_UNIT_FMT "\n", FUSED_UNITS, FUSED_UNITS);
  outf(o, "// A split launch: the runner warpgroup wg of prepare CTA j of P is, with Ho\n");
  outf(o, "// output heads (-1: none).\n");
  outf(o, "#define GDN_SPLIT_RUNNER(j, wg, P, Ho) " SPLIT_RUNNER_FMT "\n", SPLIT_UNITS);
  outf(o, "// Units its output CTAs run (output CTA s: unit GDN_SPLIT_OFF + s), and the\n"
          "// unit of runner position x, with out = GDN_SPLIT_OUT(...).\n");
  outf(o, "#define GDN_SPLIT_OUT(units, P, Ho, nscan) " SPLIT_OUT_FMT "\n", 2 * SPLIT_UNITS);
  outf(o, "#define GDN_SPLIT_UNIT(x, out, P, Ho) " SPLIT_UNIT_FMT "\n");
  outf(o, "#define GDN_SPLIT_OFF(P, Ho) " SPLIT_OFF "\n");
  outf(o, "#define GDN_SPLIT_UNITS %du\n", SPLIT_UNITS);
  outf(o, "// Its prepare CTAs j < GDN_SPLIT_H hold warpgroup 1 until warpgroup 0's\n");
  outf(o, "// first unit, unit j, is done.\n");
  outf(o, "#define GDN_SPLIT_H(P, Ho) " SPLIT_H "\n");
  outf(o, "// gdn_prepare CTAs one SM holds (its launch bounds).\n");
  outf(o, "#define GDN_PREPARE_CTAS_PER_SM %du\n", PREPARE_CTAS_PER_SM);
  outf(o, "// And gdn_prepare_lean's.\n");
  outf(o, "#define GDN_PREPARE_LEAN_CTAS_PER_SM %du\n\n#endif\n", PREPARE_LEAN_CTAS_PER_SM);
}

int generic_emit(const char *tmpl_dir, const char *out_dir, ArchId arch, Diag *d) {
  Prelude p;
  prelude_init(&p, arch);
  common_prelude(&p);
  KernelInfo ki[6];
  Out kernels, table;
  out_init(&kernels);
  out_init(&table);
  int rc = emit_prepare(&p, tmpl_dir, &kernels, &ki[0], d);
  rc = rc ? rc : fits_sm(arch, &ki[0], 0, d);
  rc = rc ? rc : emit_scan(&p, arch, tmpl_dir, &kernels, &ki[1], d);
  rc = rc ? rc : emit_fused(&p, arch, tmpl_dir, &ki[0], &ki[1], &kernels, &ki[2], d);
  ki[3] = ki[1]; /* gdn_scan_pairs: gdn_scan's template, its threads and memory */
  ki[3].name = "gdn_scan_pairs";
  ki[4] = ki[1]; /* gdn_scan_lanes: the same */
  ki[4].name = "gdn_scan_lanes";
  ki[5] = ki[0]; /* gdn_prepare_lean: gdn_prepare's template, threads and memory */
  ki[5].name = "gdn_prepare_lean";
  rc = rc ? rc
          : emit_cu_file(&p, &kernels, out_dir, "gdn_generic",
                         "gdn_generic.cu: the generic pipeline, gdn_prepare then gdn_scan, or "
                         "both in gdn_fused.",
                         arch, d);
  if (rc == 0) {
    kernel_table(&table, ki, 6);
    char *path = path_join(out_dir, "gdn_kernels.h");
    rc = out_write_file(&table, path, d);
    free(path);
  }
  out_free(&kernels);
  out_free(&table);
  prelude_free(&p);
  return rc;
}
