/* stepprobe.c: timing probes of one step of the state chain
 * (templates/probe_step.cu.in, bench/chain_step.c): gdn_scan's half form
 * (S[v][k] for 64 rows of v, every product written transposed so that S
 * and each result are register operands), a quarter form (S^T[k][v] for
 * 32 columns of v, two m64n32 accumulators, every operand of the chain
 * through shared memory), and each with the new values as one product
 * from u and w formed off the chain. Only the time counts: the operands
 * are whatever shared memory holds, so no product here is checked.
 */
#include <stdlib.h>

#include "gdngen.h"

static const SmemTile T_QK = {DT_BF16, MAJOR_K, SWZ_128B, 64, 128};   /* k, q [t][d] */
static const SmemTile T_K_MN = {DT_BF16, MAJOR_MN, SWZ_128B, 128, 64}; /* k as [d][t] */
static const SmemTile T_64 = {DT_BF16, MAJOR_K, SWZ_128B, 64, 64};    /* W, P [t][s] */
static const SmemTile T_SB = {DT_BF16, MAJOR_MN, SWZ_64B, 32, 128};   /* bf16(S^T) [d][v] */
static const SmemTile T_V_MN = {DT_BF16, MAJOR_MN, SWZ_128B, 64, 64}; /* v [t][v] as A[v][t] */
static const SmemTile T_XB = {DT_BF16, MAJOR_MN, SWZ_64B, 32, 64};    /* X, Ud [t][v] */

/* One product of a form: its slot, shape (m64 n k), where A comes from
 * (a register array, or a tile at a_mn0 of a_base) and B (a tile at
 * b_base), the accumulator, and scale_d for its first k-step. */
typedef struct StepProduct {
  const char *slot;
  int n, k;
  const SmemTile *a; /* NULL: A from registers (a_regs) */
  int a_mn0;
  Major a_major, b_major;
  const SmemTile *b;
  const char *acc, *a_regs, *a_base, *b_base, *scale;
} StepProduct;

#define RS(name, n, k, bm, b, acc, regs, bbase, sc) \
  {name, n, k, 0, 0, MAJOR_K, bm, b, acc, regs, "", bbase, sc}
#define SS(name, n, k, a, mn0, am, bm, b, acc, abase, bbase, sc) \
  {name, n, k, a, mn0, am, bm, b, acc, "", abase, bbase, sc}

static const StepProduct PRODUCTS[] = {
    /* The half form: KS^T = Sb K^T, U^T = X^T W^T, S += Ud K; its output
     * O^T = Sb Q^T + Ub P^T. */
    RS("H_KS", 64, 128, MAJOR_K, &T_QK, "ks", "sa", "sk", "0"),
    RS("H_U", 64, 64, MAJOR_K, &T_64, "u", "xa", "sw", "0"),
    RS("H_UPD", 128, 64, MAJOR_MN, &T_K_MN, "S", "uda", "sk", "1"),
    RS("H_OQ", 64, 128, MAJOR_K, &T_QK, "op", "sa", "sq", "0"),
    RS("H_OP", 64, 64, MAJOR_K, &T_64, "op", "ua", "sp", "1"),
    /* The quarter form: KS = K Sb, U = W Xb, S^T += K^T Udb in two m64
     * halves of d; its output O = Q Sb + P Udb. */
    SS("Q_KS", 32, 128, &T_QK, 0, MAJOR_K, MAJOR_MN, &T_SB, "ks", "sk", "ssb", "0"),
    SS("Q_U", 32, 64, &T_64, 0, MAJOR_K, MAJOR_MN, &T_XB, "u", "sw", "sxb", "0"),
    SS("Q_UPD0", 32, 64, &T_K_MN, 0, MAJOR_MN, MAJOR_MN, &T_XB, "S0", "sk", "sud", "1"),
    SS("Q_UPD1", 32, 64, &T_K_MN, 64, MAJOR_MN, MAJOR_MN, &T_XB, "S1", "sk", "sud", "1"),
    SS("Q_OQ", 32, 128, &T_QK, 0, MAJOR_K, MAJOR_MN, &T_SB, "op", "sq", "ssb", "0"),
    SS("Q_OP", 32, 64, &T_64, 0, MAJOR_K, MAJOR_MN, &T_XB, "op", "sp", "sud", "1"),
    /* The w/u forms: the new values u - w Sb^T in one product, from an
     * accumulator that starts at u; then w = (W diag(g)) K and u = W V
     * (u^T = V^T W^T for the half form) for the warpgroup that forms them,
     * once and for two chunks in flight (sets A and B). */
    RS("H_WS", 64, 128, MAJOR_K, &T_QK, "ks", "sa", "sww", "1"),
    SS("Q_WS", 32, 128, &T_QK, 0, MAJOR_K, MAJOR_MN, &T_SB, "ks", "sww", "ssb", "1"),
    SS("HP_W", 128, 64, &T_64, 0, MAJOR_K, MAJOR_MN, &T_K_MN, "hw", "sw", "sk", "0"),
    SS("HP_UH", 64, 64, &T_V_MN, 0, MAJOR_MN, MAJOR_K, &T_64, "hu", "sv", "sw", "0"),
    SS("HP_UQ", 32, 64, &T_64, 0, MAJOR_K, MAJOR_MN, &T_XB, "hu", "sw", "sv", "0"),
    SS("HPP_WA", 128, 64, &T_64, 0, MAJOR_K, MAJOR_MN, &T_K_MN, "hwa", "sw", "sk", "0"),
    SS("HPP_UHA", 64, 64, &T_V_MN, 0, MAJOR_MN, MAJOR_K, &T_64, "hua", "sv", "sw", "0"),
    SS("HPP_UQA", 32, 64, &T_64, 0, MAJOR_K, MAJOR_MN, &T_XB, "hua", "sw", "sv", "0"),
    SS("HPP_WB", 128, 64, &T_64, 0, MAJOR_K, MAJOR_MN, &T_K_MN, "hwb", "sw", "sk", "0"),
    SS("HPP_UHB", 64, 64, &T_V_MN, 0, MAJOR_MN, MAJOR_K, &T_64, "hub", "sv", "sw", "0"),
    SS("HPP_UQB", 32, 64, &T_64, 0, MAJOR_K, MAJOR_MN, &T_XB, "hub", "sw", "sv", "0"),
};

/* The half forms' accumulators turned into bf16 A operands (k-steps). */
static const struct {
  const char *slot, *acc, *a;
  int ksteps;
} TO_A[] = {
    {"H_S_TO_A", "S", "sa", 8}, {"H_X_TO_A", "ks", "xa", 4},
    {"H_UD_TO_A", "u", "uda", 4}, {"HW_UD_TO_A", "ks", "uda", 4},
};

/* Product s's k-steps [k0, k0 + k) into o: the whole product (k0 = 0,
 * k = s->k), or one piece of it, whose later pieces accumulate. */
static int step_product(Prelude *p, Out *o, const StepProduct *s, int k0, int k, Diag *d) {
  const OperandSrc src = s->a ? SRC_SMEM : SRC_REG;
  char regs[32];
  snprintf(regs, sizeof regs, k0 ? "(%s + %d)" : "%s", s->a_regs, k0 / 4);
  WgmmaReq r = {ARCH_SM90A, 64, s->n, k, DT_BF16, DT_BF16, DT_F32, src, SRC_REG,
                s->a_major, s->b_major, src == SRC_REG, 0, 128};
  Product pr = {r, *(s->a ? s->a : s->b), *s->b, s->a_mn0, s->a ? k0 : 0, 0, k0, s->acc, regs,
                s->a_base, s->b_base, k0 ? "1" : s->scale, 0};
  return emit_product(p, o, &pr, d);
}

/* Each product of the table, and the half form's output products in pieces
 * of 2 and 1 k-steps, each waited for before the next is issued, so that
 * the output leaves the tensor pipe to the chain between them (the
 * template commits and waits after the last piece). */
static int step_slots(Prelude *p, Slots *sl, Diag *d) {
  static const struct { const char *slot; int product, ksteps; } CHOPS[] = {
      {"H_OQ_C2", 3, 2}, {"H_OP_C2", 4, 2}, {"H_OQ_C1", 3, 1}, {"H_OP_C1", 4, 1}};
  Out o;
  out_init(&o);
  o.indent = 1;
  for (size_t i = 0; i < COUNT_OF(TO_A); i++) {
    emit_acc_to_a(p, &o, TO_A[i].acc, TO_A[i].a, TO_A[i].ksteps, DT_BF16);
    slot_out(sl, TO_A[i].slot, &o);
    o.indent = 1;
  }
  for (size_t i = 0; i < COUNT_OF(PRODUCTS); i++) {
    if (step_product(p, &o, &PRODUCTS[i], 0, PRODUCTS[i].k, d)) {
      out_free(&o);
      return -1;
    }
    slot_out(sl, PRODUCTS[i].slot, &o);
    o.indent = 1;
  }
  for (size_t i = 0; i < COUNT_OF(CHOPS); i++) {
    const StepProduct *s = &PRODUCTS[CHOPS[i].product];
    for (int k0 = 0; k0 < s->k; k0 += 16 * CHOPS[i].ksteps) {
      if (k0 > 0)
        out_line(&o, "wgmma_commit();"), out_line(&o, "wgmma_wait_0();");
      if (step_product(p, &o, s, k0, 16 * CHOPS[i].ksteps, d)) {
        out_free(&o);
        return -1;
      }
    }
    slot_out(sl, CHOPS[i].slot, &o);
    o.indent = 1;
  }
  return 0;
}

/* Shared memory, one region after another, each 1024-byte aligned (the
 * swizzled tiles' period at most). The quarter forms' bf16(S^T), X and Ud
 * take the half forms' hand-off region, which they do not use. */
static uint32_t region(uint32_t *off, uint32_t bytes) {
  uint32_t at = *off;
  *off = (at + bytes + 1023u) & ~1023u;
  return at;
}

static int step_layout(Out *o, Diag *d) {
  uint32_t off = 0, t64 = tile_bytes(&T_64), tqk = tile_bytes(&T_QK);
  const uint32_t k = region(&off, tqk), q = region(&off, tqk), w = region(&off, t64),
                 pp = region(&off, t64), v = region(&off, t64), g = region(&off, 2 * 64 * 4),
                 hs = region(&off, tqk), hu = region(&off, t64), so = region(&off, t64),
                 ww = region(&off, tqk), ub = region(&off, 64 * 64 * 4);
  uint32_t q_off = hs;
  const uint32_t sb = region(&q_off, tile_bytes(&T_SB)), xb = region(&q_off, tile_bytes(&T_XB)),
                 ud = region(&q_off, tile_bytes(&T_XB));
  if (q_off > hs + tqk)
    return diag_fail(d, "probe_step: the quarter forms' %u bytes leave the %u of the hand-off",
                     q_off - hs, tqk);
  if (off + 1024u > arch_info(ARCH_SM90A)->smem_max)
    return diag_fail(d, "probe_step: %u bytes of shared memory, more than a CTA may have", off);
  const struct { const char *name, *what; uint32_t at; } defs[] = {
      {"K_OFF", "k [t][d]", k}, {"Q_OFF", "q [t][d]", q}, {"W_OFF", "W [t][s]", w},
      {"P_OFF", "P [t][s]", pp}, {"V_OFF", "v [t][v]", v}, {"G_OFF", "g, then g_L / g", g},
      {"HS_OFF", "half: bf16(S) for the output", hs}, {"HU_OFF", "half: bf16(U)", hu},
      {"SB_OFF", "quarter: bf16(S^T) [d][v]", sb}, {"XB_OFF", "quarter: X [t][v]", xb},
      {"UD_OFF", "quarter: Ud [t][v]", ud}, {"O_OFF", "the output's staging", so},
      {"SWW_OFF", "w/u forms: w [t][d]; step_half_two: chain B's bf16(S)", ww},
      {"UB_OFF", "w/u forms: u, fp32, fragment order; step_half_two: chain B's bf16(U)", ub},
      {"SMEM_USED", "bytes from the aligned base", off},
  };
  for (size_t i = 0; i < COUNT_OF(defs); i++)
    outf(o, "#define %s %uu // %s\n", defs[i].name, defs[i].at, defs[i].what);
  return 0;
}

/* step_half_two's registers: two chains and one output, out of what 384
 * threads enter with (arch_setmaxnreg_fits). */
enum { TWO_STATE_REGS = 192, TWO_OUTPUT_REGS = 120 };

static int step_two_slots(Prelude *p, Slots *sl, Diag *d) {
  if (arch_setmaxnreg_fits(ARCH_SM90A, "step_half_two", 384,
                           128u * (2 * TWO_STATE_REGS + TWO_OUTPUT_REGS), d))
    return -1;
  emit_setmaxnreg(p, 1, TWO_STATE_REGS);
  emit_setmaxnreg(p, 0, TWO_OUTPUT_REGS);
  slot_add(sl, "TWO_STATE", "setmaxnreg_inc_%d", TWO_STATE_REGS);
  slot_add(sl, "TWO_OUTPUT", "setmaxnreg_dec_%d", TWO_OUTPUT_REGS);
  slot_add(sl, "TWO_ENTRY_REGS", "%u", arch_entry_regs(ARCH_SM90A, 384));
  slot_add(sl, "TWO_STATE_REGS", "%d", TWO_STATE_REGS);
  slot_add(sl, "TWO_OUTPUT_REGS", "%d", TWO_OUTPUT_REGS);
  return 0;
}

static void step_prelude(Prelude *p) {
  emit_smem_u32(p);
  emit_st_shared_v4(p);
  emit_st_shared_u32(p);
  emit_ld_shared_v4(p);
  emit_fence_proxy_async(p);
  emit_bar_sync(p);
  emit_bar_arrive(p);
  emit_wgmma_commit(p);
  emit_wgmma_wait(p, 0);
  emit_wgmma_wait(p, 1);
  emit_cvt_pack(p, DT_BF16);
  emit_cvt_f32_bf16(p);
  FragMap a32 = frag_acc(32), a64 = frag_acc(64);
  emit_frag_fn(p, "acc32", &a32);
  emit_frag_fn(p, "acc64", &a64);
  FragMap a128 = frag_acc(128);
  emit_frag_fn(p, "acc128", &a128);
  emit_tile_offset_fn(p, "qk_off", &T_QK);
  emit_tile_offset_fn(p, "sb_off", &T_SB);
  emit_tile_offset_fn(p, "xb_off", &T_XB);
}

int step_probe_emit(const char *tmpl_dir, const char *out_dir, Diag *d) {
  static const char *const tmpl[] = {"probe_step.cu.in"};
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  step_prelude(&p);
  Slots sl = {.n = 0};
  Out layout, kern;
  out_init(&layout);
  out_init(&kern);
  int rc = step_slots(&p, &sl, d);
  rc = rc ? rc : step_two_slots(&p, &sl, d);
  rc = rc ? rc : step_layout(&layout, d);
  slot_out(&sl, "LAYOUT", &layout);
  rc = rc ? rc : template_emit(tmpl_dir, tmpl, 1, &sl, &kern, d);
  rc = rc ? rc
          : emit_cu_file(&p, &kern, out_dir, "probe_step",
                         "probe_step.cu: one step of the state chain in four forms, timed "
                         "(bench/chain_step.c).",
                         ARCH_SM90A, d);
  slots_free(&sl);
  out_free(&kern);
  prelude_free(&p);
  return rc;
}
