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

typedef struct StepSlots {
  Slot s[32];
  Out text[32];
  int n;
} StepSlots;

/* A new slot's text. The table is fixed by this file's own slots, so
 * running out of it is this file's bug, not the user's. */
static Out *slot_new(StepSlots *sl, const char *name) {
  if (sl->n == (int)COUNT_OF(sl->s)) {
    fprintf(stderr, "gdngen: stepprobe.c has more slots than its table's %d\n", sl->n);
    abort();
  }
  out_init(&sl->text[sl->n]);
  sl->text[sl->n].indent = 1;
  sl->s[sl->n].name = name;
  return &sl->text[sl->n++];
}

static WgmmaReq req(int n, int k, OperandSrc src, Major am, Major bm) {
  WgmmaReq r = {ARCH_SM90A, 64, n, k, DT_BF16, DT_BF16, DT_F32, src, SRC_REG, am, bm,
                src == SRC_REG, 0, 128};
  return r;
}

static int prod(Prelude *p, StepSlots *sl, const char *name, WgmmaReq r, const SmemTile *a,
                int a_mn0, const SmemTile *b, const char *acc, const char *aregs,
                const char *abase, const char *bbase, const char *scale, Diag *d) {
  Product pr = {r, *(a ? a : b), *b, a_mn0, 0, 0, 0, acc, aregs, abase, bbase, scale};
  return emit_product(p, slot_new(sl, name), &pr, d);
}

static void to_a(Prelude *p, StepSlots *sl, const char *name, const char *acc, const char *a,
                 int ksteps) {
  emit_acc_to_a(p, slot_new(sl, name), acc, a, ksteps, DT_BF16);
}

static int step_slots(Prelude *p, StepSlots *sl, Diag *d) {
  int rc = 0;
  /* The half form: KS^T = Sb K^T, U^T = X^T W^T, S += Ud K. */
  to_a(p, sl, "H_S_TO_A", "S", "sa", 8);
  rc |= prod(p, sl, "H_KS", req(64, 128, SRC_REG, MAJOR_K, MAJOR_K), 0, 0, &T_QK, "ks", "sa", "",
             "sk", "0", d);
  to_a(p, sl, "H_X_TO_A", "ks", "xa", 4);
  rc |= prod(p, sl, "H_U", req(64, 64, SRC_REG, MAJOR_K, MAJOR_K), 0, 0, &T_64, "u", "xa", "",
             "sw", "0", d);
  to_a(p, sl, "H_UD_TO_A", "u", "uda", 4);
  rc |= prod(p, sl, "H_UPD", req(128, 64, SRC_REG, MAJOR_K, MAJOR_MN), 0, 0, &T_K_MN, "S", "uda",
             "", "sk", "1", d);
  /* Its output: O^T = Sb Q^T + Ub P^T. */
  rc |= prod(p, sl, "H_OQ", req(64, 128, SRC_REG, MAJOR_K, MAJOR_K), 0, 0, &T_QK, "op", "sa", "",
             "sq", "0", d);
  rc |= prod(p, sl, "H_OP", req(64, 64, SRC_REG, MAJOR_K, MAJOR_K), 0, 0, &T_64, "op", "ua", "",
             "sp", "1", d);
  /* The quarter form: KS = K Sb, U = W Xb, S^T += K^T Udb (two m64 halves of d). */
  rc |= prod(p, sl, "Q_KS", req(32, 128, SRC_SMEM, MAJOR_K, MAJOR_MN), &T_QK, 0, &T_SB, "ks", "",
             "sk", "ssb", "0", d);
  rc |= prod(p, sl, "Q_U", req(32, 64, SRC_SMEM, MAJOR_K, MAJOR_MN), &T_64, 0, &T_XB, "u", "",
             "sw", "sxb", "0", d);
  rc |= prod(p, sl, "Q_UPD0", req(32, 64, SRC_SMEM, MAJOR_MN, MAJOR_MN), &T_K_MN, 0, &T_XB, "S0",
             "", "sk", "sud", "1", d);
  rc |= prod(p, sl, "Q_UPD1", req(32, 64, SRC_SMEM, MAJOR_MN, MAJOR_MN), &T_K_MN, 64, &T_XB, "S1",
             "", "sk", "sud", "1", d);
  /* Its output: O = Q Sb + P Udb. */
  rc |= prod(p, sl, "Q_OQ", req(32, 128, SRC_SMEM, MAJOR_K, MAJOR_MN), &T_QK, 0, &T_SB, "op", "",
             "sq", "ssb", "0", d);
  rc |= prod(p, sl, "Q_OP", req(32, 64, SRC_SMEM, MAJOR_K, MAJOR_MN), &T_64, 0, &T_XB, "op", "",
             "sp", "sud", "1", d);
  /* The w/u forms: the new values u - w Sb^T as one product on the chain,
   * from an accumulator that starts at u; w = (W diag(g)) K and u = W V
   * formed off the chain, by the output warpgroup here. */
  to_a(p, sl, "HW_UD_TO_A", "ks", "uda", 4);
  rc |= prod(p, sl, "H_WS", req(64, 128, SRC_REG, MAJOR_K, MAJOR_K), 0, 0, &T_QK, "ks", "sa", "",
             "sww", "1", d);
  rc |= prod(p, sl, "Q_WS", req(32, 128, SRC_SMEM, MAJOR_K, MAJOR_MN), &T_QK, 0, &T_SB, "ks", "",
             "sww", "ssb", "1", d);
  rc |= prod(p, sl, "HP_W", req(128, 64, SRC_SMEM, MAJOR_K, MAJOR_MN), &T_64, 0, &T_K_MN, "hw", "",
             "sw", "sk", "0", d);
  rc |= prod(p, sl, "HP_UH", req(64, 64, SRC_SMEM, MAJOR_MN, MAJOR_K), &T_V_MN, 0, &T_64, "hu", "",
             "sv", "sw", "0", d);
  rc |= prod(p, sl, "HP_UQ", req(32, 64, SRC_SMEM, MAJOR_K, MAJOR_MN), &T_64, 0, &T_XB, "hu", "",
             "sw", "sv", "0", d);
  /* The same two products for a helper that keeps two chunks in flight. */
  static const char *const names[2][5] = {{"HPP_WA", "HPP_UHA", "HPP_UQA", "hwa", "hua"},
                                          {"HPP_WB", "HPP_UHB", "HPP_UQB", "hwb", "hub"}};
  for (int i = 0; i < 2; i++) {
    const char *const *n = names[i];
    rc |= prod(p, sl, n[0], req(128, 64, SRC_SMEM, MAJOR_K, MAJOR_MN), &T_64, 0, &T_K_MN, n[3], "",
               "sw", "sk", "0", d);
    rc |= prod(p, sl, n[1], req(64, 64, SRC_SMEM, MAJOR_MN, MAJOR_K), &T_V_MN, 0, &T_64, n[4], "",
               "sv", "sw", "0", d);
    rc |= prod(p, sl, n[2], req(32, 64, SRC_SMEM, MAJOR_K, MAJOR_MN), &T_64, 0, &T_XB, n[4], "",
               "sw", "sv", "0", d);
  }
  return rc ? -1 : 0;
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
      {"SWW_OFF", "w/u forms: w [t][d]", ww}, {"UB_OFF", "w/u forms: u, fp32, fragment order", ub},
      {"SMEM_USED", "bytes from the aligned base", off},
  };
  for (size_t i = 0; i < COUNT_OF(defs); i++)
    outf(o, "#define %s %uu // %s\n", defs[i].name, defs[i].at, defs[i].what);
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
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  step_prelude(&p);
  StepSlots sl = {.n = 0};
  Out tmpl, kern, file;
  out_init(&tmpl);
  out_init(&kern);
  out_init(&file);
  int rc = step_slots(&p, &sl, d);
  Out *layout = slot_new(&sl, "LAYOUT");
  rc = rc ? rc : step_layout(layout, d);
  for (int i = 0; i < sl.n; i++)
    sl.s[i].text = sl.text[i].buf ? sl.text[i].buf : "";
  if (rc == 0)
    rc = template_load(tmpl_dir, "probe_step.cu.in", &tmpl, d);
  if (rc == 0)
    rc = template_fill(tmpl.buf, sl.s, sl.n, &kern, d);
  if (rc == 0) {
    gen_header(&file,
               "probe_step.cu: one step of the state chain in four forms, timed "
               "(bench/chain_step.c).",
               ARCH_SM90A, "//");
    outf(&file, "\n");
    out_append(&file, &p.text);
    out_append(&file, &kern);
    char *path = path_join(out_dir, "probe_step.cu");
    rc = out_write_file(&file, path, d);
    free(path);
  }
  for (int i = 0; i < sl.n; i++)
    out_free(&sl.text[i]);
  out_free(&tmpl);
  out_free(&kern);
  out_free(&file);
  prelude_free(&p);
  return rc;
}
