/* lower.c: the rules turned into device code: wgmma products with their
 * descriptors, fragment index functions, tile offsets and masked copies.
 * Everything here is derived from legality.c, fragment.c, smem.c and
 * tail.c; no layout constant is written by hand.
 */
#include <string.h>

#include "gdngen.h"

#define FN "static __device__ __forceinline__"

static int check_tile_use(const char *which, const SmemTile *t, DType dt, Major major, int mn0,
                          int mn, int k0, int k, Diag *d) {
  if (tile_check(t, d) != 0)
    return -1;
  if (t->dt != dt || t->major != major)
    return diag_fail(d, "product: %s tile is %s %s-major, the request wants %s %s-major", which,
                     dtype_info(t->dt)->name, t->major == MAJOR_K ? "K" : "MN",
                     dtype_info(dt)->name, major == MAJOR_K ? "K" : "MN");
  if (mn0 + mn > t->mn || k0 + k > t->k)
    return diag_fail(d, "product: %s slice [%d, %d) x [%d, %d) leaves its %d x %d tile", which,
                     mn0, mn0 + mn, k0, k0 + k, t->mn, t->k);
  /* Every k16 step's descriptor is checked before any text is written: the
   * later steps only add 16 to k0 inside the tile, so the first decides. */
  DescParts first;
  return desc_for(t, mn0, k0, &first, d);
}

/* The descriptors of an operand's k16 steps: the first issued one in full,
 * as `var` (its parts in *first), the others as gdn_desc_at(var, delta),
 * delta the step's start less the first's. That is exact only where every
 * step shares the first's fields but the start, and starts never fall
 * behind the first's; desc_text checks both, so the text never relies on
 * them unchecked. */
static int desc_first(Out *o, const SmemTile *t, int mn0, int k0, const char *base,
                      const char *var, DescParts *first, Diag *d) {
  if (desc_for(t, mn0, k0, first, d) != 0)
    return -1;
  out_line(o, "const u64 %s = gdn_desc(%s + %uu, 0x%016llxull);", var, base, first->start,
           (unsigned long long)desc_high(first));
  return 0;
}

static int desc_text(const SmemTile *t, int mn0, int k0, const DescParts *first, const char *var,
                     char *buf, size_t n, Diag *d) {
  DescParts dp;
  if (desc_for(t, mn0, k0, &dp, d) != 0)
    return -1;
  if (desc_high(&dp) != desc_high(first) || dp.start < first->start ||
      (dp.start - first->start) % 16)
    return diag_fail(d, "descriptor: k0 = %d is not the first step's descriptor moved by its start",
                     k0);
  snprintf(buf, n, "gdn_desc_at(%s, %uu)", var, dp.start - first->start);
  return 0;
}

static void fence_acc(Out *o, const char *acc, int regs) {
  out_line(o, "#pragma unroll");
  out_line(o, "for (int i_ = 0; i_ < %d; ++i_) fence_operand(%s[i_]);", regs, acc);
}

/* The k-step instructions of a product, from k-step j0 (the first issued,
 * which takes scale_d) on, inside a block that holds the first step's
 * descriptors. */
static int emit_steps(Out *o, const Product *pr, const char *name, unsigned steps, int j0,
                      Diag *d) {
  const WgmmaReq *r = &pr->req;
  int rs = r->a_src == SRC_REG;
  DescParts a0, b0;
  if (desc_first(o, &pr->b_tile, pr->b_mn0, pr->b_k0 + 16 * j0, pr->b_base, "db_", &b0, d) ||
      (!rs && desc_first(o, &pr->a_tile, pr->a_mn0, pr->a_k0 + 16 * j0, pr->a_base, "da_", &a0, d)))
    return -1;
  for (int j = j0; j < r->k / 16; j++) {
    if (!(steps >> j & 1))
      continue;
    char da[80], db[80];
    if (desc_text(&pr->b_tile, pr->b_mn0, pr->b_k0 + 16 * j, &b0, "db_", db, sizeof db, d))
      return -1;
    const char *sd = j == j0 ? pr->scale_d : "1";
    if (rs) {
      out_line(o, "%s(%s, %s[%d], %s[%d], %s[%d], %s[%d], %s, %s);", name, pr->acc, pr->a_regs,
               4 * j, pr->a_regs, 4 * j + 1, pr->a_regs, 4 * j + 2, pr->a_regs, 4 * j + 3, db, sd);
    } else {
      if (desc_text(&pr->a_tile, pr->a_mn0, pr->a_k0 + 16 * j, &a0, "da_", da, sizeof da, d))
        return -1;
      out_line(o, "%s(%s, %s, %s, %s);", name, pr->acc, da, db, sd);
    }
  }
  return 0;
}

/* One product: the operand fences, wgmma.fence and k/16 instructions, or
 * those of the k-steps in pr->ksteps. The first issued takes scale_d (0:
 * overwrite), the rest accumulate. */
int emit_product(Prelude *p, Out *o, const Product *pr, Diag *d) {
  const WgmmaReq *r = &pr->req;
  if (wgmma_check(r, d) != 0)
    return -1;
  int rs = r->a_src == SRC_REG;
  if (!rs && check_tile_use("A", &pr->a_tile, r->a, r->a_major, pr->a_mn0, r->m, pr->a_k0, r->k, d))
    return -1;
  if (check_tile_use("B", &pr->b_tile, r->b, r->b_major, pr->b_mn0, r->n, pr->b_k0, r->k, d))
    return -1;
  unsigned all = r->k / 16 >= 32 ? ~0u : (1u << r->k / 16) - 1, steps = pr->ksteps ? pr->ksteps : all;
  if (steps & ~all)
    return diag_fail(d, "product: k-steps 0x%x named past K = %d", steps, r->k);
  WgmmaForm f = {r->n, r->a, r->a_src, r->a_major, r->b_major};
  const char *name = emit_wgmma(p, &f);
  emit_fence_operand(p, 0);
  emit_wgmma_fence(p);
  fence_acc(o, pr->acc, r->n / 2);
  if (rs) {
    emit_fence_operand(p, 1);
    if (steps == all)
      fence_acc(o, pr->a_regs, r->k / 16 * 4);
    else /* only the registers of the steps issued */
      for (int j = 0; j < r->k / 16; j++)
        if (steps >> j & 1)
          out_line(o, "for (int i_ = %d; i_ < %d; ++i_) fence_operand(%s[i_]);", 4 * j,
                   4 * j + 4, pr->a_regs);
  }
  out_line(o, "wgmma_fence();");
  int j0 = 0;
  while (!(steps >> j0 & 1))
    j0++;
  out_line(o, "{");
  o->indent++;
  int rc = emit_steps(o, pr, name, steps, j0, d);
  o->indent--;
  out_line(o, "}");
  if (rc)
    return -1;
  fence_acc(o, pr->acc, r->n / 2);
  return 0;
}

/* a[4j + r] packs the accumulator registers that fragment.c says hold
 * A element 2r and 2r + 1 of k16 step j, for steps j0 .. j1 - 1 (a product
 * whose k-steps are issued as their operands become ready); `acc` holds
 * the registers from `first` on (an accumulator of N / 2 columns). */
void emit_acc_to_a_steps(Prelude *p, Out *o, const char *acc, int first, const char *a, int j0,
                         int j1, DType dt) {
  emit_cvt_pack(p, dt);
  for (int j = j0; j < j1; j++)
    for (int r = 0; r < 4; r++)
      out_line(o, "%s[%d] = pack_%s(%s[%d], %s[%d]);", a, 4 * j + r, dtype_info(dt)->ptx, acc,
               frag_acc_as_a(j, 2 * r) - first, acc, frag_acc_as_a(j, 2 * r + 1) - first);
}

void emit_acc_to_a(Prelude *p, Out *o, const char *acc, const char *a, int ksteps, DType dt) {
  emit_acc_to_a_steps(p, o, acc, 0, a, 0, ksteps, dt);
}

static void emit_terms(Out *o, const FragTerm *t, int n) {
  for (int i = 0; i < n; i++) {
    const char *v = t[i].var == 't' ? "t" : "r";
    if (t[i].mask)
      outf(o, "%s((%s >> %d) & %d) * %d", i ? " + " : "", v, t[i].shift, t[i].mask, t[i].scale);
    else
      outf(o, "%s(%s >> %d) * %d", i ? " + " : "", v, t[i].shift, t[i].scale);
  }
}

void emit_frag_fn(Prelude *p, const char *fname, const FragMap *m) {
  char key[96];
  snprintf(key, sizeof key, "frag %s", fname);
  if (seen_name(p, key))
    return;
  Out *o = &p->text;
  outf(o, "// Fragment %s (%d x %d, %d registers a thread): row and column of\n", m->name,
       m->rows, m->cols, m->regs);
  outf(o, "// register r of warpgroup thread t.\n");
  outf(o, FN " int %s_row(int t, int r) { return ", fname);
  emit_terms(o, m->row, m->nrow);
  outf(o, "; }\n" FN " int %s_col(int t, int r) { return ", fname);
  emit_terms(o, m->col, m->ncol);
  outf(o, "; }\n\n");
}

void emit_tile_offset_fn(Prelude *p, const char *fname, const SmemTile *t) {
  char key[96];
  snprintf(key, sizeof key, "tile %s", fname);
  if (seen_name(p, key))
    return;
  const SwizzleInfo *sw = swizzle_info(t->swz);
  int esz = dtype_info(t->dt)->bytes, E = sw->span / esz, rows = tile_rows(t);
  Out *o = &p->text;
  outf(o, "// Byte offset of element (mn, k) in a %d x %d %s %s-major tile, %s swizzle.\n", t->mn,
       t->k, dtype_info(t->dt)->name, t->major == MAJOR_K ? "K" : "MN", sw->name);
  outf(o, FN " u32 %s(u32 mn, u32 k) {\n", fname);
  outf(o, "  u32 row = %s, e = %s;\n", t->major == MAJOR_K ? "mn" : "k", t->major == MAJOR_K ? "k" : "mn");
  outf(o, "  u32 a = (e / %du) * %du + row * %du + (e %% %du) * %du;\n", E, rows * sw->span,
       sw->span, E, esz);
  if (t->swz == SWZ_NONE)
    outf(o, "  return a;\n}\n\n");
  else
    outf(o, "  return a ^ ((a & 0x%xu) >> 3);\n}\n\n", sw->xor_mask);
}

/* What the masked copy and the zeroing share: emitted once per name, the
 * tile's offset function `off`, and a loop over the thread's vectors that
 * ends with row, e (storage row, first element) in scope. Returns 0 when
 * the function exists already. */
static int tail_fn_begin(Prelude *p, const char *fname, const TailPlan *tp, char *off, size_t n) {
  char key[96];
  snprintf(key, sizeof key, "tail %s", fname);
  if (seen_name(p, key))
    return 0;
  snprintf(off, n, "%s_off", fname);
  emit_tile_offset_fn(p, off, &tp->tile);
  emit_st_shared_v4(p);
  return 1;
}

static void tail_loop(Out *o, const TailPlan *tp, const char *unroll) {
  outf(o, "#pragma unroll%s\n  for (int it = 0; it < %d; ++it) {\n", unroll, tp->iters);
  outf(o, "    int v = it * %d + tid;\n", tp->nthreads);
  outf(o, "    int row = v / %d, e = (v %% %d) * %d;\n", tp->vecs_per_row, tp->vecs_per_row,
       16 / dtype_info(tp->tile.dt)->bytes);
}

void emit_tail_copy_fn(Prelude *p, const char *fname, const TailPlan *tp) {
  char off[96];
  if (!tail_fn_begin(p, fname, tp, off, sizeof off))
    return;
  emit_ld_global_v4(p);
  const SmemTile *t = &tp->tile;
  Out *o = &p->text;
  outf(o, "// Masked copy of %d storage rows x %d elements: rows >= valid are written\n",
       tile_rows(t), tile_row_elems(t));
  outf(o, "// as zeros and never read (tail.c). `src` is storage row 0.\n");
  outf(o, FN " void %s(u32 dst, const char *src, i64 row_bytes, int valid, int tid) {\n", fname);
  tail_loop(o, tp, "");
  outf(o, "    u32 x = 0, y = 0, z = 0, w = 0;\n");
  outf(o, "    if (row < valid) ld_global_v4(src + row * row_bytes + e * %d, x, y, z, w);\n",
       dtype_info(t->dt)->bytes);
  outf(o, "    st_shared_v4(dst + %s(%s), x, y, z, w);\n  }\n}\n\n", off,
       t->major == MAJOR_K ? "row, e" : "e, row");
}

/* Zeroes the storage rows >= valid of a tile that a TMA load filled whole:
 * the rows past a sequence's end, read but never to be used. Same vector
 * split and swizzled offsets as the masked copy (tail.c). */
void emit_tail_zero_fn(Prelude *p, const char *fname, const TailPlan *tp) {
  char off[96], unroll[16];
  if (!tail_fn_begin(p, fname, tp, off, sizeof off))
    return;
  const SmemTile *t = &tp->tile;
  Out *o = &p->text;
  outf(o, "// Zeroes storage rows >= valid of a %d x %d tile (tail.c).\n", tile_rows(t),
       tile_row_elems(t));
  outf(o, FN " void %s(u32 dst, int valid, int tid) {\n", fname);
  /* Unrolled by 4 at most: a loop inside a caller's loop would otherwise
   * keep every iteration's address live in registers. */
  snprintf(unroll, sizeof unroll, " %d", tp->iters < 4 ? tp->iters : 4);
  tail_loop(o, tp, unroll);
  outf(o, "    if (row >= valid) st_shared_v4(dst + %s(%s), 0u, 0u, 0u, 0u);\n  }\n}\n\n", off,
       t->major == MAJOR_K ? "row, e" : "e, row");
}
