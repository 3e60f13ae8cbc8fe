/* probe.c: the family of probe kernels that proves each rule on the GPU
 * before a GDN kernel relies on it.
 *
 * Every legal (N, SS/RS, swizzle, B major) product, a few MN-major A and
 * accumulator-as-A chains, TMA tiles that run past the tensor's end, and
 * masked tail copies. The GPU test (tests/gpu/probes.c) reads the manifest
 * written here and checks each probe against a CPU product.
 */
#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

#define PROBE_K 128
#define MAX_PROBES 128

/* How an operand reaches the kernel; the manifest repeats these names. */
enum { GDN_PROBE_NONE, GDN_PROBE_TMA, GDN_PROBE_REGS, GDN_PROBE_MASKED, OPERAND_KINDS };
static const char *operand_kind_names[] = {"GDN_PROBE_NONE", "GDN_PROBE_TMA", "GDN_PROBE_REGS",
                                           "GDN_PROBE_MASKED"};
_Static_assert(COUNT_OF(operand_kind_names) == OPERAND_KINDS, "one name per operand kind");

static int legal_tile(int mn, int k, Major m, Swizzle s) {
  SmemTile t = {DT_BF16, m, s, mn, k};
  return tile_check(&t, NULL) == 0;
}

static ProbeSpec gemm(int n, OperandSrc src, Swizzle as, Major am, Swizzle bs, Major bm) {
  ProbeSpec p = {.kind = PROBE_GEMM, .n = n, .k = PROBE_K, .a_src = src, .a_swz = as,
                 .a_major = am, .b_swz = bs, .b_major = bm};
  /* Clip the last rows of B's tensor on the wider products, so every
   * swizzle and both majors meet TMA's zero fill somewhere. */
  p.b_clip = n >= 64 ? 5 : 0;
  snprintf(p.name, sizeof p.name, "probe_%s_n%d_a%s%s_b%s%s%s", src == SRC_REG ? "rs" : "ss", n,
           src == SRC_REG ? "reg" : swizzle_info(as)->name, src == SRC_REG ? "" : (am == MAJOR_K ? "k" : "mn"),
           swizzle_info(bs)->name, bm == MAJOR_K ? "k" : "mn", p.b_clip ? "_clip" : "");
  return p;
}

static ProbeSpec chain(int n, int n2, Swizzle cs, Major cm) {
  ProbeSpec p = {.kind = PROBE_CHAIN, .n = n, .k = 64, .n2 = n2, .a_src = SRC_SMEM,
                 .a_swz = SWZ_128B, .a_major = MAJOR_K, .b_swz = SWZ_128B, .b_major = MAJOR_K,
                 .c_swz = cs, .c_major = cm};
  snprintf(p.name, sizeof p.name, "probe_chain_n%d_n%d_c%s%s", n, n2, swizzle_info(cs)->name,
           cm == MAJOR_K ? "k" : "mn");
  return p;
}

static ProbeSpec tail(Swizzle bs, Major bm) {
  ProbeSpec p = {.kind = PROBE_TAIL, .n = 64, .k = bm == MAJOR_K ? PROBE_K : 64,
                 .a_src = SRC_SMEM, .a_swz = SWZ_128B, .a_major = MAJOR_K, .b_swz = bs, .b_major = bm};
  snprintf(p.name, sizeof p.name, "probe_tail_b%s%s", swizzle_info(bs)->name,
           bm == MAJOR_K ? "k" : "mn");
  return p;
}

int probe_list(ProbeSpec *out, int max) {
  static const int ns[] = {16, 32, 64, 128};
  int n = 0;
  for (int src = 0; src < 2; src++)
    for (size_t i = 0; i < COUNT_OF(ns); i++)
      for (int s = 0; s < SWZ_COUNT; s++)
        for (int m = 0; m < 2; m++) {
          if (!legal_tile(ns[i], PROBE_K, (Major)m, (Swizzle)s) || n == max)
            continue;
          out[n++] = gemm(ns[i], (OperandSrc)src, (Swizzle)s, MAJOR_K, (Swizzle)s, (Major)m);
        }
  for (int s = 0; s < SWZ_COUNT && n < max; s++) /* MN-major A, SS only */
    out[n++] = gemm(64, SRC_SMEM, (Swizzle)s, MAJOR_MN, (Swizzle)(SWZ_COUNT - 1 - s), MAJOR_K);
  const ProbeSpec chains[] = {chain(64, 64, SWZ_128B, MAJOR_K), chain(128, 32, SWZ_64B, MAJOR_MN),
                              chain(64, 128, SWZ_128B, MAJOR_MN), chain(32, 16, SWZ_NONE, MAJOR_K)};
  for (size_t i = 0; i < COUNT_OF(chains) && n < max; i++)
    out[n++] = chains[i];
  for (int s = 0; s < SWZ_COUNT && n < max; s++)
    out[n++] = tail((Swizzle)s, MAJOR_K);
  if (n < max)
    out[n++] = tail(SWZ_128B, MAJOR_MN);
  return n;
}

/* ------------------------------------------------------------ layout */

typedef struct ProbeLayout {
  SmemTile a, b, c;
  int a_tma, b_tma, c_tma; /* which tiles arrive by TMA */
  uint32_t a_off, b_off, c_off, bar_off, smem_bytes, tx_bytes;
} ProbeLayout;

static uint32_t align1024(uint32_t x) { return (x + 1023u) & ~1023u; }

static void probe_layout(const ProbeSpec *s, ProbeLayout *l) {
  memset(l, 0, sizeof *l);
  l->a = (SmemTile){DT_BF16, s->a_major, s->a_swz, 64, s->k};
  l->b = (SmemTile){DT_BF16, s->b_major, s->b_swz, s->n, s->k};
  l->c = (SmemTile){DT_BF16, s->c_major, s->c_swz, s->n2, s->n};
  l->a_tma = s->a_src == SRC_SMEM;
  l->b_tma = s->kind != PROBE_TAIL;
  l->c_tma = s->kind == PROBE_CHAIN;
  uint32_t off = 0;
  if (l->a_tma) {
    l->a_off = off;
    off = align1024(off + tile_bytes(&l->a));
    l->tx_bytes += tile_bytes(&l->a);
  }
  l->b_off = off;
  off = align1024(off + tile_bytes(&l->b));
  if (l->b_tma)
    l->tx_bytes += tile_bytes(&l->b);
  if (l->c_tma) {
    l->c_off = off;
    off = align1024(off + tile_bytes(&l->c));
    l->tx_bytes += tile_bytes(&l->c);
  }
  l->bar_off = off;
  l->smem_bytes = off + 16 + 1024; /* barrier, and slack to align the base */
}

/* ------------------------------------------------------------- text */

static int emit_loads(Out *o, const SmemTile *t, const char *dst, const char *map, Diag *d) {
  TmaBox boxes[32];
  int n = tma_tile_boxes(t, boxes, (int)COUNT_OF(boxes), d);
  if (n < 0)
    return -1;
  for (int i = 0; i < n; i++)
    outf(o, "    tma_load_2d(%s + %uu, &%s, %d, %d, bar);\n", dst, boxes[i].smem_off, map,
         boxes[i].inner, boxes[i].outer);
  return 0;
}

static WgmmaReq req(int n, int k, OperandSrc src, Major am, Major bm) {
  WgmmaReq r = {ARCH_SM90A, 64, n, k, DT_BF16, DT_BF16, DT_F32, src, SRC_REG, am, bm, 0, 0, 128};
  return r;
}

static void tile_desc(char *buf, size_t n, const SmemTile *t) {
  snprintf(buf, n, "%dx%d %s-major, %s swizzle", t->mn, t->k, t->major == MAJOR_K ? "K" : "MN",
           swizzle_info(t->swz)->name);
}

/* The RS A operand read straight from global A [64][K] through the A map. */
static void emit_a_frags(Out *o, int k) {
  outf(o, "  u32 a_frag[%d];\n", k / 16 * 4);
  outf(o, "#pragma unroll\n  for (int j = 0; j < %d; ++j)\n#pragma unroll\n", k / 16);
  outf(o, "    for (int r = 0; r < 4; ++r)\n");
  outf(o, "      a_frag[4 * j + r] = *(const u32 *)(a_glob + a_k16_row(tid, 2 * r) * %d +\n", k);
  outf(o, "                                        16 * j + a_k16_col(tid, 2 * r));\n");
}

typedef struct Texts {
  Out loads, a_frags, product, product2, to_a;
} Texts;

static void texts_free(Texts *t) {
  out_free(&t->loads);
  out_free(&t->a_frags);
  out_free(&t->product);
  out_free(&t->product2);
  out_free(&t->to_a);
}

static int probe_texts(Prelude *p, const ProbeSpec *s, const ProbeLayout *l, Texts *t, Diag *d) {
  memset(t, 0, sizeof *t);
  if (l->a_tma && emit_loads(&t->loads, &l->a, "sa", "map_a", d))
    return -1;
  if (l->b_tma && emit_loads(&t->loads, &l->b, "sb", "map_b", d))
    return -1;
  if (l->c_tma && emit_loads(&t->loads, &l->c, "sc", "map_c", d))
    return -1;
  if (s->a_src == SRC_REG) {
    FragMap a = frag_a_k16();
    emit_frag_fn(p, "a_k16", &a);
    emit_a_frags(&t->a_frags, s->k);
  }
  Product pr = {req(s->n, s->k, s->a_src, s->a_major, s->b_major), l->a, l->b, 0, 0, 0, 0,
                "acc", "a_frag", "sa", "sb", "0", 0};
  t->product.indent = 1;
  if (emit_product(p, &t->product, &pr, d))
    return -1;
  if (s->kind == PROBE_CHAIN) {
    t->to_a.indent = 1;
    emit_acc_to_a(p, &t->to_a, "acc", "a2", s->n / 16, DT_BF16);
    Product p2 = {req(s->n2, s->n, SRC_REG, MAJOR_K, s->c_major), l->a, l->c, 0, 0, 0, 0,
                  "acc2", "a2", "sa", "sc", "0", 0};
    p2.req.a_from_acc = 1;
    t->product2.indent = 1;
    if (emit_product(p, &t->product2, &p2, d))
      return -1;
  }
  return 0;
}

/* The texts a probe's slots take, besides the emitted code. */
typedef struct ProbeNames {
  char num[11][32], adesc[96], bdesc[96], frag[16], frag2[16], title[160], tailfn[80];
} ProbeNames;

static void probe_names(const ProbeSpec *s, const ProbeLayout *l, ProbeNames *n) {
  snprintf(n->frag, sizeof n->frag, "acc%d", s->n);
  snprintf(n->frag2, sizeof n->frag2, "acc%d", s->n2);
  tile_desc(n->adesc, sizeof n->adesc, &l->a);
  if (s->a_src == SRC_REG)
    snprintf(n->adesc, sizeof n->adesc, "64x%d in registers", s->k);
  tile_desc(n->bdesc, sizeof n->bdesc, &l->b);
  snprintf(n->title, sizeof n->title, "%s: 64 x %d x %d", s->name, s->n, s->k);
  snprintf(n->tailfn, sizeof n->tailfn, "tail_%s", s->name);
  const unsigned v[11] = {(unsigned)s->n, (unsigned)s->n / 2, l->a_off, l->b_off, l->bar_off,
                          l->tx_bytes, l->c_off, (unsigned)s->n2, (unsigned)s->n2 / 2,
                          (unsigned)s->n / 16 * 4, (unsigned)tile_row_elems(&l->b) * 2};
  for (int i = 0; i < 11; i++)
    snprintf(n->num[i], sizeof n->num[i], "%u", v[i]);
}

/* The slots of the probe's template; returns how many. */
static int probe_slots(const ProbeSpec *s, const ProbeNames *n, const Texts *t, Slot *slots) {
  const Slot common[] = {
      {"TITLE", n->title}, {"NAME", s->name}, {"N", n->num[0]}, {"REGS", n->num[1]},
      {"A_OFF", n->num[2]}, {"B_OFF", n->num[3]}, {"BAR_OFF", n->num[4]},
      {"TX_BYTES", n->num[5]}, {"LOADS", t->loads.buf ? t->loads.buf : ""},
      {"PRODUCT", t->product.buf}, {"FRAG", n->frag},
  };
  int k = (int)COUNT_OF(common);
  memcpy(slots, common, sizeof common);
  if (s->kind == PROBE_GEMM) {
    slots[k++] = (Slot){"A_DESC", n->adesc};
    slots[k++] = (Slot){"B_DESC", n->bdesc};
    slots[k++] = (Slot){"A_FRAGS", t->a_frags.buf ? t->a_frags.buf : ""};
  } else if (s->kind == PROBE_CHAIN) {
    slots[k++] = (Slot){"C_OFF", n->num[6]};
    slots[k++] = (Slot){"N2", n->num[7]};
    slots[k++] = (Slot){"REGS2", n->num[8]};
    slots[k++] = (Slot){"A2_REGS", n->num[9]};
    slots[k++] = (Slot){"TO_A", t->to_a.buf};
    slots[k++] = (Slot){"PRODUCT2", t->product2.buf};
    slots[k++] = (Slot){"FRAG2", n->frag2};
  } else {
    slots[k++] = (Slot){"TAIL_FN", n->tailfn};
    slots[k++] = (Slot){"B_ROW_BYTES", n->num[10]};
  }
  return k;
}

/* Prefixes a failure with the probe's name, once. */
static void name_failure(Diag *d, const char *name) {
  if (strncmp(d->msg, name, strlen(name)) == 0)
    return;
  char m[sizeof d->msg + 64 + 2];
  snprintf(m, sizeof m, "%s: %s", name, d->msg);
  m[sizeof d->msg - 1] = '\0';
  memcpy(d->msg, m, sizeof d->msg);
}

static int probe_kernel(Prelude *p, const char *tmpl_dir, const ProbeSpec *s, Out *o, Diag *d) {
  static const char *tmpl_name[] = {"probe_gemm.cu.in", "probe_chain.cu.in", "probe_tail.cu.in"};
  ProbeLayout l;
  probe_layout(s, &l);
  ProbeNames n;
  probe_names(s, &l, &n);
  Texts t;
  Out tmpl;
  out_init(&tmpl);
  int rc = probe_texts(p, s, &l, &t, d);
  FragMap acc = frag_acc(s->n), acc2 = frag_acc(s->n2 ? s->n2 : 16);
  emit_frag_fn(p, n.frag, &acc);
  if (s->kind == PROBE_CHAIN)
    emit_frag_fn(p, n.frag2, &acc2);
  if (rc == 0)
    rc = template_load(tmpl_dir, tmpl_name[s->kind], &tmpl, d);
  if (rc == 0 && s->kind == PROBE_TAIL) {
    TailPlan tp;
    rc = tail_plan(&l.b, 128, &tp, d);
    if (rc == 0)
      emit_tail_copy_fn(p, n.tailfn, &tp);
  }
  Slot slots[24];
  if (rc == 0)
    rc = template_fill(tmpl.buf, slots, probe_slots(s, &n, &t, slots), o, d);
  if (rc != 0)
    name_failure(d, s->name);
  texts_free(&t);
  out_free(&tmpl);
  return rc;
}

/* ---------------------------------------------------------- manifest */

/* The storage view of an operand: the global tensor is rows x row_elems,
 * row-major, of which global_rows exist (TMA zero-fills the others). */
static void manifest_operand(Out *o, const char *what, int kind, const SmemTile *t, int clip) {
  uint32_t box[2];
  tma_tile_box_dims(t, box);
  outf(o, "   .%s = {%d, %d, %d, %d, %d, %d, %d, %d, {%u, %u}},\n", what, kind, t->major,
       swizzle_info(t->swz)->tma_code, t->mn, t->k, tile_rows(t), tile_row_elems(t),
       tile_rows(t) - clip, box[0], box[1]);
}

static void manifest_entry(Out *o, const ProbeSpec *s, const char *file) {
  ProbeLayout l;
  probe_layout(s, &l);
  outf(o, "  {\"%s\", \"%s\", %d, %d, %d, %d, %u,\n", s->name, file, s->kind, s->n, s->k, s->n2,
       l.smem_bytes);
  manifest_operand(o, "a", s->a_src == SRC_REG ? GDN_PROBE_REGS : GDN_PROBE_TMA, &l.a, 0);
  manifest_operand(o, "b", s->kind == PROBE_TAIL ? GDN_PROBE_MASKED : GDN_PROBE_TMA, &l.b, s->b_clip);
  manifest_operand(o, "c", s->kind == PROBE_CHAIN ? GDN_PROBE_TMA : GDN_PROBE_NONE, &l.c, 0);
  outf(o, "  },\n");
}

static void manifest_head(Out *o, int count) {
  gen_header(o, "probes.h: the probe kernels and how to feed them (tests/gpu/probes.c).",
             ARCH_SM90A, "//");
  outf(o, "#ifndef GDN_PROBES_H\n#define GDN_PROBES_H\n\n");
  outf(o, "enum { GDN_PROBE_GEMM, GDN_PROBE_CHAIN, GDN_PROBE_TAIL };\n");
  outf(o, "enum {");
  for (int i = 0; i < OPERAND_KINDS; i++)
    outf(o, " %s%s", operand_kind_names[i], i + 1 < OPERAND_KINDS ? "," : " };\n\n");
  outf(o, "// One operand: how it arrives, its layout (major 0 = K, 1 = MN; swizzle as\n");
  outf(o, "// CUtensorMapSwizzle), its logical mn x k, and its storage view: a row-major\n");
  outf(o, "// global tensor of rows x row_elems of which global_rows exist.\n");
  outf(o, "typedef struct gdn_probe_operand {\n  int kind, major, swizzle, mn, k;\n");
  outf(o, "  int rows, row_elems, global_rows;\n  unsigned box[2];\n} gdn_probe_operand;\n\n");
  outf(o, "typedef struct gdn_probe {\n  const char *name, *file;\n  int kind, n, k, n2;\n");
  outf(o, "  unsigned smem_bytes;\n  gdn_probe_operand a, b, c;\n} gdn_probe;\n\n");
  outf(o, "#define GDN_PROBE_COUNT %d\n", count);
  outf(o, "static const gdn_probe gdn_probes[GDN_PROBE_COUNT] = {\n");
}

/* -------------------------------------------------------------- files */

static const char *probe_file(const ProbeSpec *s) {
  if (s->kind != PROBE_GEMM)
    return "probes_misc";
  return s->a_src == SRC_REG ? "probes_rs" : "probes_ss";
}

static int write_probe_file(const char *tmpl_dir, const char *out_dir, const char *stem,
                            const ProbeSpec *specs, int n, Diag *d) {
  Prelude p;
  prelude_init(&p, ARCH_SM90A);
  emit_smem_u32(&p);
  emit_st_shared_v4(&p);
  emit_fence_proxy_async(&p);
  emit_mbar_init(&p);
  emit_fence_mbar_init(&p);
  emit_mbar_expect_tx(&p);
  emit_mbar_wait(&p);
  emit_tma_load_2d(&p, 0);
  emit_wgmma_commit(&p);
  emit_wgmma_wait(&p, 0);
  Out kernels;
  out_init(&kernels);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++)
    if (strcmp(probe_file(&specs[i]), stem) == 0)
      rc = probe_kernel(&p, tmpl_dir, &specs[i], &kernels, d);
  if (rc == 0) {
    char what[96];
    snprintf(what, sizeof what, "%s.cu: probe kernels proving the lowering rules.", stem);
    rc = emit_cu_file(&p, &kernels, out_dir, stem, what, ARCH_SM90A, d);
  }
  out_free(&kernels);
  prelude_free(&p);
  return rc;
}

int probe_emit(const char *tmpl_dir, const char *out_dir, ArchId arch, Diag *d) {
  (void)arch; /* probes exist to prove sm_90a rules; main checks the target */
  ProbeSpec specs[MAX_PROBES];
  int n = probe_list(specs, MAX_PROBES);
  static const char *stems[] = {"probes_ss", "probes_rs", "probes_misc"};
  for (size_t i = 0; i < COUNT_OF(stems); i++)
    if (write_probe_file(tmpl_dir, out_dir, stems[i], specs, n, d))
      return -1;
  Out m;
  out_init(&m);
  manifest_head(&m, n);
  for (int i = 0; i < n; i++)
    manifest_entry(&m, &specs[i], probe_file(&specs[i]));
  outf(&m, "};\n\n#endif\n");
  char *path = path_join(out_dir, "probes.h");
  int rc = out_write_file(&m, path, d);
  free(path);
  out_free(&m);
  return rc ? rc : step_probe_emit(tmpl_dir, out_dir, d);
}
