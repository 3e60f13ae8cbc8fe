/* emit.c: one emitter per PTX instruction, and the generated helpers that
 * turn the rule tables into device code.
 *
 * Each emitter writes one small __device__ wrapper around one inline-asm
 * statement into the Prelude of a generated file, once; kernels call the
 * wrappers, so all PTX text of gdngen lives in this file.
 */
#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

#define FN "static __device__ __forceinline__"

void prelude_init(Prelude *p, ArchId arch) {
  memset(p, 0, sizeof *p);
  out_init(&p->text);
  Out *o = &p->text;
  outf(o, "// Built only for %s: the wgmma and bulk-tensor instructions below do not\n",
       arch_info(arch)->name);
  outf(o, "// exist elsewhere. No includes, so NVRTC compiles this file as it is.\n");
  outf(o, "typedef unsigned short u16;\ntypedef unsigned int u32;\n");
  outf(o, "typedef unsigned long long u64;\ntypedef long long i64;\n\n");
  outf(o, "// A CUtensorMap: 128 opaque bytes, 64-byte aligned, passed by value.\n");
  outf(o, "struct alignas(64) TmaMap { u64 opaque[16]; };\n\n");
  outf(o, "// A matrix descriptor: the constant fields, plus the start address >> 4.\n");
  outf(o, FN " u64 gdn_desc(u32 addr, u64 high) {\n");
  outf(o, "  return high | (u64)((addr & 0x3FFFFu) >> 4);\n}\n\n");
  outf(o, "// A later k-step's descriptor: the first step's, its start moved by `delta`\n");
  outf(o, "// bytes in the low word alone (shared addresses stay below 2^18, so the\n");
  outf(o, "// start field never carries), so that only the first step is masked and shifted.\n");
  outf(o, FN " u64 gdn_desc_at(u64 first, u32 delta) {\n");
  outf(o, "  return (first & 0xFFFFFFFF00000000ull) | (u32)((u32)first + (delta >> 4));\n}\n\n");
}

int emit_cu_file(const Prelude *p, const Out *kernels, const char *out_dir, const char *stem,
                 const char *what, ArchId arch, Diag *d) {
  Out file;
  out_init(&file);
  gen_header(&file, what, arch, "//");
  outf(&file, "\n");
  out_append(&file, &p->text);
  out_append(&file, kernels);
  char name[96];
  snprintf(name, sizeof name, "%s.cu", stem);
  char *path = path_join(out_dir, name);
  int rc = out_write_file(&file, path, d);
  free(path);
  out_free(&file);
  return rc;
}

void prelude_free(Prelude *p) {
  out_free(&p->text);
  for (int i = 0; i < p->nseen; i++)
    free(p->seen[i]);
}

int seen_name(Prelude *p, const char *name);

static int find_seen(const Prelude *p, const char *name) {
  for (int i = 0; i < p->nseen; i++)
    if (strcmp(p->seen[i], name) == 0)
      return i;
  return -1;
}

/* 1 if `name` was emitted before; otherwise remembers it. */
static int seen(Prelude *p, const char *name) {
  if (find_seen(p, name) >= 0)
    return 1;
  if (p->nseen == (int)COUNT_OF(p->seen)) {
    fprintf(stderr, "gdngen: too many prelude entries\n");
    exit(1);
  }
  p->seen[p->nseen++] = xstrdup(name);
  return 0;
}

void emit_smem_u32(Prelude *p) {
  if (seen(p, "smem_u32"))
    return;
  outf(&p->text, "// cvta.to.shared: the 32-bit shared-window address of a generic pointer.\n");
  outf(&p->text, FN " u32 smem_u32(const void *ptr) {\n  u32 r;\n");
  outf(&p->text, "  asm(\"{ .reg .u64 a; cvta.to.shared.u64 a, %%1; cvt.u32.u64 %%0, a; }\"\n");
  outf(&p->text, "      : \"=r\"(r) : \"l\"(ptr));\n  return r;\n}\n\n");
}

void emit_wgmma_fence(Prelude *p) {
  if (seen(p, "wgmma_fence"))
    return;
  outf(&p->text, "// Orders register writes before the wgmma that reads them.\n");
  outf(&p->text, FN " void wgmma_fence() {\n");
  outf(&p->text, "  asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n}\n\n");
}

void emit_wgmma_commit(Prelude *p) {
  if (seen(p, "wgmma_commit"))
    return;
  outf(&p->text, FN " void wgmma_commit() {\n");
  outf(&p->text, "  asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n}\n\n");
}

void emit_wgmma_wait(Prelude *p, int n) {
  char name[32];
  snprintf(name, sizeof name, "wgmma_wait_%d", n);
  if (seen(p, name))
    return;
  outf(&p->text, "// Waits until at most %d committed wgmma groups are pending.\n", n);
  outf(&p->text, FN " void %s() {\n", name);
  outf(&p->text, "  asm volatile(\"wgmma.wait_group.sync.aligned %d;\" ::: \"memory\");\n}\n\n", n);
}

/* An empty asm that "changes" a register, so the compiler cannot move its
 * reads or writes across the asynchronous wgmma that owns it. */
void emit_fence_operand(Prelude *p, int packed) {
  if (seen(p, packed ? "fence_operand u32" : "fence_operand f32"))
    return;
  if (packed)
    outf(&p->text, FN " void fence_operand(u32 &x) { asm volatile(\"\" : \"+r\"(x) :: \"memory\"); }\n\n");
  else
    outf(&p->text, FN " void fence_operand(float &x) { asm volatile(\"\" : \"+f\"(x) :: \"memory\"); }\n\n");
}

void emit_fence_proxy_async(Prelude *p) {
  if (seen(p, "fence_proxy_async"))
    return;
  outf(&p->text, "// Makes ordinary shared-memory stores visible to wgmma and TMA.\n");
  outf(&p->text, FN " void fence_proxy_async() {\n");
  outf(&p->text, "  asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n}\n\n");
}

/* Programmatic dependent launch: a primary grid lets its dependent start
 * early; the dependent waits for the primary's completion and memory only
 * where it reads what the primary wrote. Both are no-ops without the launch
 * attribute. */
void emit_griddep_launch(Prelude *p) {
  if (seen(p, "griddep_launch"))
    return;
  outf(&p->text, FN " void griddep_launch() {\n");
  outf(&p->text, "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n}\n\n");
}

void emit_griddep_wait(Prelude *p) {
  if (seen(p, "griddep_wait"))
    return;
  outf(&p->text, FN " void griddep_wait() {\n");
  outf(&p->text, "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n}\n\n");
}

void emit_mbar_init(Prelude *p) {
  if (seen(p, "mbar_init"))
    return;
  outf(&p->text, FN " void mbar_init(u32 bar, u32 count) {\n");
  outf(&p->text, "  asm volatile(\"mbarrier.init.shared::cta.b64 [%%0], %%1;\" :: \"r\"(bar), \"r\"(count) : \"memory\");\n}\n\n");
}

void emit_fence_mbar_init(Prelude *p) {
  if (seen(p, "fence_mbar_init"))
    return;
  outf(&p->text, FN " void fence_mbar_init() {\n");
  outf(&p->text, "  asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n}\n\n");
}

void emit_mbar_expect_tx(Prelude *p) {
  if (seen(p, "mbar_expect_tx"))
    return;
  outf(&p->text, "// Arrives on the barrier and announces `bytes` of bulk copies to come.\n");
  outf(&p->text, FN " void mbar_expect_tx(u32 bar, u32 bytes) {\n");
  outf(&p->text, "  asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%0], %%1;\"\n");
  outf(&p->text, "               :: \"r\"(bar), \"r\"(bytes) : \"memory\");\n}\n\n");
}

/* The bytes alone, without an arrival: a thread that arrives later, once
 * its own writes to the stage are done, can start the stage's copies first. */
void emit_mbar_add_tx(Prelude *p) {
  if (seen(p, "mbar_add_tx"))
    return;
  outf(&p->text, "// Announces `bytes` of bulk copies to come, without arriving.\n");
  outf(&p->text, FN " void mbar_add_tx(u32 bar, u32 bytes) {\n");
  outf(&p->text, "  asm volatile(\"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%%0], %%1;\"\n");
  outf(&p->text, "               :: \"r\"(bar), \"r\"(bytes) : \"memory\");\n}\n\n");
}

/* The body of a wait on a barrier's phase: try_wait with `sem` (its
 * semantics and scope, or nothing for the default), until it succeeds. */
static void try_wait_loop(Prelude *p, const char *name, const char *sem) {
  outf(&p->text, FN " void %s(u32 bar, u32 parity) {\n", name);
  outf(&p->text, "  asm volatile(\"{\\n .reg .pred done;\\n WAIT:\\n\"\n");
  outf(&p->text, "               \" mbarrier.try_wait.parity%s.shared::cta.b64 done, [%%0], %%1;\\n\"\n",
       sem);
  outf(&p->text, "               \" @!done bra WAIT;\\n}\" :: \"r\"(bar), \"r\"(parity) : \"memory\");\n}\n\n");
}

void emit_mbar_wait(Prelude *p) {
  if (seen(p, "mbar_wait"))
    return;
  outf(&p->text, "// Spins until the barrier's phase `parity` has completed.\n");
  try_wait_loop(p, "mbar_wait", "");
}

/* Bulk tensor copy of one 2-D box; with `hint`, tma_load_2d_hint, the same
 * under an L2 policy given as its last operand. */
void emit_tma_load_2d(Prelude *p, int hint) {
  const char *name = hint ? "tma_load_2d_hint" : "tma_load_2d";
  if (seen(p, name))
    return;
  if (!hint)
    outf(&p->text, "// Bulk tensor copy of one box at (c0 innermost, c1), completing on `bar`.\n");
  outf(&p->text, FN " void %s(u32 dst, const TmaMap *map, int c0, int c1, u32 bar%s) {\n", name,
       hint ? ", u64 policy" : "");
  outf(&p->text, "  asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes\"\n");
  outf(&p->text, "               \"%s [%%0], [%%1, {%%2, %%3}], [%%4]%s;\"\n",
       hint ? ".L2::cache_hint" : "", hint ? ", %5" : "");
  outf(&p->text, "               :: \"r\"(dst), \"l\"((u64)map), \"r\"(c0), \"r\"(c1), \"r\"(bar)%s : \"memory\");\n}\n\n",
       hint ? ", \"l\"(policy)" : "");
}

void emit_prefetch_tensormap(Prelude *p) {
  if (seen(p, "prefetch_tensormap"))
    return;
  outf(&p->text, FN " void prefetch_tensormap(const TmaMap *map) {\n");
  outf(&p->text, "  asm volatile(\"prefetch.tensormap [%%0];\" :: \"l\"((u64)map) : \"memory\");\n}\n\n");
}

void emit_ld_global_v4(Prelude *p) {
  if (seen(p, "ld_global_v4"))
    return;
  outf(&p->text, FN " void ld_global_v4(const void *src, u32 &x, u32 &y, u32 &z, u32 &w) {\n");
  outf(&p->text, "  asm volatile(\"ld.global.v4.u32 {%%0, %%1, %%2, %%3}, [%%4];\"\n");
  outf(&p->text, "               : \"=r\"(x), \"=r\"(y), \"=r\"(z), \"=r\"(w) : \"l\"(src));\n}\n\n");
}

void emit_st_shared_v4(Prelude *p) {
  if (seen(p, "st_shared_v4"))
    return;
  outf(&p->text, FN " void st_shared_v4(u32 dst, u32 x, u32 y, u32 z, u32 w) {\n");
  outf(&p->text, "  asm volatile(\"st.shared.v4.u32 [%%0], {%%1, %%2, %%3, %%4};\"\n");
  outf(&p->text, "               :: \"r\"(dst), \"r\"(x), \"r\"(y), \"r\"(z), \"r\"(w) : \"memory\");\n}\n\n");
}

/* cvt.rn.{bf16,f16}x2.f32 puts its first source in the upper half, so the
 * wrapper takes (lo, hi) in element order and swaps them. */
void emit_cvt_pack(Prelude *p, DType dt) {
  const char *t = dtype_info(dt)->ptx;
  char name[32];
  snprintf(name, sizeof name, "pack_%s", t);
  if (seen(p, name))
    return;
  outf(&p->text, "// Two floats rounded to nearest even into one %sx2 (lo = lower address).\n", t);
  outf(&p->text, FN " u32 %s(float lo, float hi) {\n  u32 r;\n", name);
  outf(&p->text, "  asm(\"cvt.rn.%sx2.f32 %%0, %%1, %%2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n", t);
  outf(&p->text, "  return r;\n}\n\n");
}

void emit_setmaxnreg(Prelude *p, int inc, int regs) {
  char name[48];
  snprintf(name, sizeof name, "setmaxnreg_%s_%d", inc ? "inc" : "dec", regs);
  if (seen(p, name))
    return;
  outf(&p->text, FN " void %s() {\n", name);
  outf(&p->text, "  asm volatile(\"setmaxnreg.%s.sync.aligned.u32 %d;\");\n}\n\n", inc ? "inc" : "dec",
       regs);
}

static void wgmma_name(const WgmmaForm *f, char *buf, size_t n) {
  snprintf(buf, n, "wgmma_m64n%dk16_%s_%s_%c%c", f->n, f->a_src == SRC_REG ? "rs" : "ss",
           dtype_info(f->ab)->ptx, f->a_src == SRC_REG ? 'r' : (f->a_major == MAJOR_K ? 'k' : 'm'),
           f->b_major == MAJOR_K ? 'k' : 'm');
}

const char *emit_wgmma(Prelude *p, const WgmmaForm *f) {
  char name[64];
  wgmma_name(f, name, sizeof name);
  int old = seen(p, name);
  const char *kept = p->seen[find_seen(p, name)];
  if (old)
    return kept;
  Out *o = &p->text;
  int regs = f->n / 2, rs = f->a_src == SRC_REG;
  const char *t = dtype_info(f->ab)->ptx;
  int ta = f->a_major == MAJOR_MN, tb = f->b_major == MAJOR_MN;
  outf(o, "// D(64x%d, f32) += A(64x16) B(16x%d), A %s, B %s-major.\n", f->n, f->n,
       rs ? "in registers" : (ta ? "MN-major" : "K-major"), tb ? "MN" : "K");
  if (rs)
    outf(o, FN " void %s(float (&d)[%d], u32 a0, u32 a1, u32 a2, u32 a3, u64 db, int scale_d) {\n",
         name, regs);
  else
    outf(o, FN " void %s(float (&d)[%d], u64 da, u64 db, int scale_d) {\n", name, regs);
  int nin = rs ? 6 : 3; /* inputs after the accumulators */
  outf(o, "  asm volatile(\"{\\n .reg .pred p;\\n setp.ne.b32 p, %%%d, 0;\\n\"\n", regs + nin - 1);
  outf(o, "      \" wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {\"\n", f->n, t, t);
  for (int i = 0; i < regs; i += 8) {
    outf(o, "      \"");
    for (int j = i; j < i + 8 && j < regs; j++)
      outf(o, "%%%d%s", j, j + 1 < regs ? ", " : "");
    outf(o, "\"\n");
  }
  if (rs)
    outf(o, "      \"}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, 1, 1, %d;\\n}\\n\"\n", regs, regs + 1,
         regs + 2, regs + 3, regs + 4, tb);
  else
    outf(o, "      \"}, %%%d, %%%d, p, 1, 1, %d, %d;\\n}\\n\"\n", regs, regs + 1, ta, tb);
  outf(o, "      : ");
  for (int i = 0; i < regs; i++)
    outf(o, "\"+f\"(d[%d])%s%s", i, i + 1 < regs ? ", " : "", (i % 8 == 7 && i + 1 < regs) ? "\n        " : "");
  if (rs)
    outf(o, "\n      : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"l\"(db), \"r\"(scale_d));\n}\n\n");
  else
    outf(o, "\n      : \"l\"(da), \"l\"(db), \"r\"(scale_d));\n}\n\n");
  return kept;
}

/* For helpers emitted outside this file (lower.c): 1 if already emitted. */
int seen_name(Prelude *p, const char *name) { return seen(p, name); }

/* ---- plain shared/global moves and conversions used by the GDN kernels */

void emit_ld_shared_u16(Prelude *p) {
  if (seen(p, "ld_shared_u16"))
    return;
  outf(&p->text, FN " u16 ld_shared_u16(u32 src) {\n  u16 x;\n");
  outf(&p->text, "  asm volatile(\"ld.shared.u16 %%0, [%%1];\" : \"=h\"(x) : \"r\"(src) : \"memory\");\n");
  outf(&p->text, "  return x;\n}\n\n");
}

void emit_st_shared_u16(Prelude *p) {
  if (seen(p, "st_shared_u16"))
    return;
  outf(&p->text, FN " void st_shared_u16(u32 dst, u16 x) {\n");
  outf(&p->text, "  asm volatile(\"st.shared.u16 [%%0], %%1;\" :: \"r\"(dst), \"h\"(x) : \"memory\");\n}\n\n");
}

/* An atomic add on shared memory, returning the old value: a count that
 * two warps share without a barrier (a read adds 0). */
void emit_atom_add_shared_u32(Prelude *p) {
  if (seen(p, "atom_add_shared_u32"))
    return;
  outf(&p->text, FN " u32 atom_add_shared_u32(u32 at, u32 x) {\n  u32 old;\n");
  outf(&p->text, "  asm volatile(\"atom.shared.add.u32 %%0, [%%1], %%2;\" : \"=r\"(old) : \"r\"(at), \"r\"(x) : \"memory\");\n");
  outf(&p->text, "  return old;\n}\n\n");
}

void emit_st_shared_u32(Prelude *p) {
  if (seen(p, "st_shared_u32"))
    return;
  outf(&p->text, FN " void st_shared_u32(u32 dst, u32 x) {\n");
  outf(&p->text, "  asm volatile(\"st.shared.u32 [%%0], %%1;\" :: \"r\"(dst), \"r\"(x) : \"memory\");\n}\n\n");
}

void emit_ld_shared_v4(Prelude *p) {
  if (seen(p, "ld_shared_v4"))
    return;
  outf(&p->text, FN " void ld_shared_v4(u32 src, u32 &x, u32 &y, u32 &z, u32 &w) {\n");
  outf(&p->text, "  asm volatile(\"ld.shared.v4.u32 {%%0, %%1, %%2, %%3}, [%%4];\"\n");
  outf(&p->text, "               : \"=r\"(x), \"=r\"(y), \"=r\"(z), \"=r\"(w) : \"r\"(src) : \"memory\");\n}\n\n");
}

/* Two fp32 values from shared memory, as a volatile asm: the compiler
 * keeps it in program order, so a loop that loads two values a step holds
 * two registers, not every step's values loaded ahead (the lean prepare
 * unit's decays, which fit its register bound only this way). */
void emit_ld_shared_v2_f32(Prelude *p) {
  if (seen(p, "ld_shared_v2_f32"))
    return;
  outf(&p->text, FN " float2 ld_shared_v2_f32(u32 src) {\n  float2 v;\n");
  outf(&p->text, "  asm volatile(\"ld.shared.v2.f32 {%%0, %%1}, [%%2];\" : \"=f\"(v.x), \"=f\"(v.y) : \"r\"(src));\n");
  outf(&p->text, "  return v;\n}\n\n");
}

void emit_st_global_v4(Prelude *p) {
  if (seen(p, "st_global_v4"))
    return;
  outf(&p->text, FN " void st_global_v4(void *dst, u32 x, u32 y, u32 z, u32 w) {\n");
  outf(&p->text, "  asm volatile(\"st.global.v4.u32 [%%0], {%%1, %%2, %%3, %%4};\"\n");
  outf(&p->text, "               :: \"l\"(dst), \"r\"(x), \"r\"(y), \"r\"(z), \"r\"(w) : \"memory\");\n}\n\n");
}

/* Named barrier `id` over `n` threads: one warpgroup syncs alone. */
void emit_bar_sync(Prelude *p) {
  if (seen(p, "bar_sync"))
    return;
  outf(&p->text, FN " void bar_sync(u32 id, u32 n) {\n");
  outf(&p->text, "  asm volatile(\"bar.sync %%0, %%1;\" :: \"r\"(id), \"r\"(n) : \"memory\");\n}\n\n");
}

void emit_bar_arrive(Prelude *p) {
  if (seen(p, "bar_arrive"))
    return;
  outf(&p->text, FN " void bar_arrive(u32 id, u32 n) {\n");
  outf(&p->text, "  asm volatile(\"bar.arrive %%0, %%1;\" :: \"r\"(id), \"r\"(n) : \"memory\");\n}\n\n");
}

void emit_cvt_bf16_f32(Prelude *p) {
  if (seen(p, "f32_to_bf16"))
    return;
  outf(&p->text, FN " u16 f32_to_bf16(float x) {\n  u16 r;\n");
  outf(&p->text, "  asm(\"cvt.rn.bf16.f32 %%0, %%1;\" : \"=h\"(r) : \"f\"(x));\n  return r;\n}\n\n");
}

void emit_cvt_f32_bf16(Prelude *p) {
  if (seen(p, "bf16_to_f32"))
    return;
  outf(&p->text, FN " float bf16_to_f32(u16 x) {\n  float r;\n");
  outf(&p->text, "  asm(\"cvt.f32.bf16 %%0, %%1;\" : \"=f\"(r) : \"h\"(x));\n  return r;\n}\n\n");
}

void emit_cvt_f16_f32(Prelude *p) {
  if (seen(p, "f32_to_f16"))
    return;
  outf(&p->text, FN " u16 f32_to_f16(float x) {\n  u16 r;\n");
  outf(&p->text, "  asm(\"cvt.rn.f16.f32 %%0, %%1;\" : \"=h\"(r) : \"f\"(x));\n  return r;\n}\n\n");
}

void emit_cvt_f32_f16(Prelude *p) {
  if (seen(p, "f16_to_f32"))
    return;
  outf(&p->text, FN " float f16_to_f32(u16 x) {\n  float r;\n");
  outf(&p->text, "  asm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(r) : \"h\"(x));\n  return r;\n}\n\n");
}

/* fp32 -> nearest fp16 value, kept in fp32: the ladder's rounding point. */
void emit_round_f16(Prelude *p) {
  emit_cvt_f16_f32(p);
  emit_cvt_f32_f16(p);
  if (seen(p, "round_f16"))
    return;
  outf(&p->text, FN " float round_f16(float x) { return f16_to_f32(f32_to_f16(x)); }\n\n");
}

/* With `hint`, tma_load_3d_hint: the same copy under an L2 policy
 * (policy_evict_first). */
void emit_tma_load_3d(Prelude *p, int hint) {
  const char *name = hint ? "tma_load_3d_hint" : "tma_load_3d";
  if (seen(p, name))
    return;
  if (!hint)
    outf(&p->text, "// Bulk tensor copy of one 3-D box at (c0 innermost, c1, c2).\n");
  outf(&p->text, FN " void %s(u32 dst, const TmaMap *map, int c0, int c1, int c2, u32 bar%s) {\n",
       name, hint ? ", u64 policy" : "");
  outf(&p->text, "  asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes\"\n");
  outf(&p->text, "               \"%s [%%0], [%%1, {%%2, %%3, %%4}], [%%5]%s;\"\n",
       hint ? ".L2::cache_hint" : "", hint ? ", %6" : "");
  outf(&p->text, "               :: \"r\"(dst), \"l\"((u64)map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(bar)%s\n",
       hint ? ", \"l\"(policy)" : "");
  outf(&p->text, "               : \"memory\");\n}\n\n");
}

/* TMA store of one 3-D box from shared memory, tracked by the issuing
 * thread's bulk async-group. */
void emit_tma_store_3d(Prelude *p) {
  if (seen(p, "tma_store_3d"))
    return;
  outf(&p->text, FN " void tma_store_3d(const TmaMap *map, u32 src, int c0, int c1, int c2) {\n");
  outf(&p->text, "  asm volatile(\"cp.async.bulk.tensor.3d.global.shared::cta.bulk_group\"\n");
  outf(&p->text, "               \" [%%0, {%%2, %%3, %%4}], [%%1];\"\n");
  outf(&p->text, "               :: \"l\"((u64)map), \"r\"(src), \"r\"(c0), \"r\"(c1), \"r\"(c2)\n");
  outf(&p->text, "               : \"memory\");\n}\n\n");
}

/* An L2 policy that marks the lines an access touches first to evict:
 * for data that no later read of the call wants kept. */
void emit_policy_evict_first(Prelude *p) {
  if (seen(p, "policy_evict_first"))
    return;
  outf(&p->text, FN " u64 policy_evict_first() {\n  u64 r;\n");
  outf(&p->text, "  asm(\"createpolicy.fractional.L2::evict_first.b64 %%0, 1.0;\" : \"=l\"(r));\n");
  outf(&p->text, "  return r;\n}\n\n");
}

void emit_bulk_commit(Prelude *p) {
  if (seen(p, "bulk_commit"))
    return;
  outf(&p->text, FN " void bulk_commit() { asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\"); }\n\n");
}

/* Waits until at most n of this thread's bulk groups are pending: with
 * `read`, only until their shared-memory sources have been read. */
void emit_bulk_wait(Prelude *p, int n, int read) {
  char name[40];
  snprintf(name, sizeof name, "bulk_wait%s_%d", read ? "_read" : "", n);
  if (seen(p, name))
    return;
  outf(&p->text, FN " void %s() {\n", name);
  outf(&p->text, "  asm volatile(\"cp.async.bulk.wait_group%s %d;\" ::: \"memory\");\n}\n\n",
       read ? ".read" : "", n);
}

/* Ready flags in global memory, set and read by CTAs of one grid that run
 * on different SMs (gpu scope). One fence.acq_rel before several relaxed
 * stores is the release of them all (each st.release is a fence of its
 * own), and it publishes the writes of the CTA's other threads that a
 * barrier ordered before it (the fence is cumulative). */
void emit_fence_acq_rel_gpu(Prelude *p) {
  if (seen(p, "fence_acq_rel_gpu"))
    return;
  outf(&p->text, FN " void fence_acq_rel_gpu() {\n");
  outf(&p->text, "  asm volatile(\"fence.acq_rel.gpu;\" ::: \"memory\");\n}\n\n");
}

void emit_st_relaxed_gpu(Prelude *p) {
  if (seen(p, "st_relaxed_gpu"))
    return;
  outf(&p->text, FN " void st_relaxed_gpu(unsigned *at, unsigned v) {\n");
  outf(&p->text, "  asm volatile(\"st.relaxed.gpu.global.u32 [%%0], %%1;\" :: \"l\"(at), \"r\"(v) : \"memory\");\n}\n\n");
}

/* A strong load that orders nothing: a poll's repeated reads, so that only
 * the read that ends it pays for an acquire (ld.acquire invalidates the
 * SM's L1 each time, CCTL.IVALL in the SASS). */
void emit_ld_relaxed_gpu(Prelude *p) {
  if (seen(p, "ld_relaxed_gpu"))
    return;
  outf(&p->text, FN " unsigned ld_relaxed_gpu(const unsigned *at) {\n  unsigned v;\n");
  outf(&p->text, "  asm volatile(\"ld.relaxed.gpu.global.u32 %%0, [%%1];\" : \"=r\"(v) : \"l\"(at) : \"memory\");\n");
  outf(&p->text, "  return v;\n}\n\n");
}

void emit_ld_acquire_gpu(Prelude *p) {
  if (seen(p, "ld_acquire_gpu"))
    return;
  outf(&p->text, FN " unsigned ld_acquire_gpu(const unsigned *at) {\n  unsigned v;\n");
  outf(&p->text, "  asm volatile(\"ld.acquire.gpu.global.u32 %%0, [%%1];\" : \"=r\"(v) : \"l\"(at) : \"memory\");\n");
  outf(&p->text, "  return v;\n}\n\n");
}

/* After an acquire of data other CTAs wrote with ordinary stores, orders
 * this thread's later TMA (async proxy) reads of it after the acquire. */
void emit_fence_proxy_async_global(Prelude *p) {
  if (seen(p, "fence_proxy_async_global"))
    return;
  outf(&p->text, FN " void fence_proxy_async_global() {\n");
  outf(&p->text, "  asm volatile(\"fence.proxy.async.global;\" ::: \"memory\");\n}\n\n");
}

/* A plain arrival (no transaction bytes): consumers release a buffer. */
void emit_mbar_arrive(Prelude *p) {
  if (seen(p, "mbar_arrive"))
    return;
  outf(&p->text, FN " void mbar_arrive(u32 bar) {\n");
  outf(&p->text, "  asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%%0];\" :: \"r\"(bar) : \"memory\");\n}\n\n");
}

/* A split scan pair (generic.c) is a cluster of two CTAs: the chain CTA's
 * bulk copies land in the output CTA's shared memory, and each side arrives
 * on the other's barriers. An arrival at cluster scope releases; a wait at
 * cluster scope on the other side acquires. */
void emit_mapa(Prelude *p) {
  if (seen(p, "mapa_shared"))
    return;
  outf(&p->text, "// The address of shared-memory location `addr` in the cluster's CTA `rank`.\n");
  outf(&p->text, FN " u32 mapa_shared(u32 addr, u32 rank) {\n  u32 r;\n");
  outf(&p->text, "  asm volatile(\"mapa.shared::cluster.u32 %%0, %%1, %%2;\" : \"=r\"(r) : \"r\"(addr), \"r\"(rank));\n");
  outf(&p->text, "  return r;\n}\n\n");
}

void emit_mbar_arrive_remote_n(Prelude *p) {
  if (seen(p, "mbar_arrive_remote_n"))
    return;
  outf(&p->text, FN " void mbar_arrive_remote_n(u32 bar, u32 n) {\n");
  outf(&p->text, "  asm volatile(\"mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%%0], %%1;\"\n");
  outf(&p->text, "               :: \"r\"(bar), \"r\"(n) : \"memory\");\n}\n\n");
}

void emit_mbar_expect_tx_remote(Prelude *p) {
  if (seen(p, "mbar_expect_tx_remote"))
    return;
  outf(&p->text, "// Announces `bytes` of bulk copies to come on another CTA's barrier.\n");
  outf(&p->text, FN " void mbar_expect_tx_remote(u32 bar, u32 bytes) {\n");
  outf(&p->text, "  asm volatile(\"mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%%0], %%1;\"\n");
  outf(&p->text, "               :: \"r\"(bar), \"r\"(bytes) : \"memory\");\n}\n\n");
}

void emit_bulk_copy_cluster(Prelude *p) {
  if (seen(p, "bulk_copy_cluster"))
    return;
  outf(&p->text, "// A bulk copy from this CTA's shared memory to another's, completing on its barrier.\n");
  outf(&p->text, FN " void bulk_copy_cluster(u32 dst, u32 src, u32 bytes, u32 bar) {\n");
  outf(&p->text, "  asm volatile(\"cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes\"\n");
  outf(&p->text, "               \" [%%0], [%%1], %%2, [%%3];\" :: \"r\"(dst), \"r\"(src), \"r\"(bytes), \"r\"(bar)\n");
  outf(&p->text, "               : \"memory\");\n}\n\n");
}

void emit_mbar_wait_cluster(Prelude *p) {
  if (seen(p, "mbar_wait_cluster"))
    return;
  outf(&p->text, "// mbar_wait at cluster scope: acquires what another CTA of the cluster released.\n");
  try_wait_loop(p, "mbar_wait_cluster", ".acquire.cluster");
}

/* The cluster barrier in its two halves, for a CTA that arrives early and
 * waits later, with other work between; cluster_sync is both at once. */
void emit_cluster_arrive(Prelude *p) {
  if (seen(p, "cluster_arrive"))
    return;
  outf(&p->text, "// This thread's arrival at the cluster barrier, releasing what it wrote before.\n");
  outf(&p->text, FN " void cluster_arrive() {\n");
  outf(&p->text, "  asm volatile(\"barrier.cluster.arrive.release.aligned;\" ::: \"memory\");\n}\n\n");
}

void emit_cluster_wait(Prelude *p) {
  if (seen(p, "cluster_wait"))
    return;
  outf(&p->text, "// Waits for every thread of the cluster to have arrived (cluster_arrive).\n");
  outf(&p->text, FN " void cluster_wait() {\n");
  outf(&p->text, "  asm volatile(\"barrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n}\n\n");
}

void emit_cluster_sync(Prelude *p) {
  if (seen(p, "cluster_sync"))
    return;
  emit_cluster_arrive(p);
  emit_cluster_wait(p);
  outf(&p->text, "// Every thread of the cluster: barrier initialisation seen by the other CTA.\n");
  outf(&p->text, FN " void cluster_sync() {\n  cluster_arrive();\n  cluster_wait();\n}\n\n");
}

/* A 1-D bulk copy (no tensor map) of `bytes`, completing on `bar`. */
void emit_bulk_load(Prelude *p) {
  if (seen(p, "bulk_load"))
    return;
  outf(&p->text, FN " void bulk_load(u32 dst, const void *src, u32 bytes, u32 bar) {\n");
  outf(&p->text, "  asm volatile(\"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes\"\n");
  outf(&p->text, "               \" [%%0], [%%1], %%2, [%%3];\"\n");
  outf(&p->text, "               :: \"r\"(dst), \"l\"(src), \"r\"(bytes), \"r\"(bar) : \"memory\");\n}\n\n");
}

/* One 3-D box at (c0 innermost, c1, c2) into L2 through its tensor map,
 * for a load of the same box later: nothing lands in shared memory. */
void emit_tma_prefetch_3d(Prelude *p) {
  if (seen(p, "tma_prefetch_3d"))
    return;
  outf(&p->text, FN " void tma_prefetch_3d(const TmaMap *map, int c0, int c1, int c2) {\n");
  outf(&p->text, "  asm volatile(\"cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%%0, {%%1, %%2, %%3}];\"\n");
  outf(&p->text, "               :: \"l\"((u64)map), \"r\"(c0), \"r\"(c1), \"r\"(c2) : \"memory\");\n}\n\n");
}

/* `bytes` (a multiple of 16) from `src` into L2, for a load soon after. */
void emit_bulk_prefetch_l2(Prelude *p) {
  if (seen(p, "bulk_prefetch_l2"))
    return;
  outf(&p->text, FN " void bulk_prefetch_l2(const void *src, u32 bytes) {\n");
  outf(&p->text, "  asm volatile(\"cp.async.bulk.prefetch.L2.global [%%0], %%1;\"\n");
  outf(&p->text, "               :: \"l\"(src), \"r\"(bytes) : \"memory\");\n}\n\n");
}

/* Four 8 x 8 b16 blocks, transposed on the way: lane l receives elements
 * (2 (l % 4) + e, l / 4) of each block; lanes 8i .. 8i+7 address block i. */
void emit_ldmatrix_x4_trans(Prelude *p) {
  if (seen(p, "ldmatrix_x4_trans"))
    return;
  outf(&p->text, FN " void ldmatrix_x4_trans(u32 src, u32 &a, u32 &b, u32 &c, u32 &d) {\n");
  outf(&p->text, "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%%0, %%1, %%2, %%3}, [%%4];\"\n");
  outf(&p->text, "               : \"=r\"(a), \"=r\"(b), \"=r\"(c), \"=r\"(d) : \"r\"(src) : \"memory\");\n}\n\n");
}

/* The reverse of ldmatrix .trans: lane l's elements (2 (l % 4) + e, l / 4)
 * of four 8 x 8 b16 blocks are stored transposed; lanes 8i .. 8i+7 give
 * the row addresses of block i. */
void emit_stmatrix_x4_trans(Prelude *p) {
  if (seen(p, "stmatrix_x4_trans"))
    return;
  outf(&p->text, FN " void stmatrix_x4_trans(u32 dst, u32 a, u32 b, u32 c, u32 d) {\n");
  outf(&p->text, "  asm volatile(\"stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%%0], {%%1, %%2, %%3, %%4};\"\n");
  outf(&p->text, "               :: \"r\"(dst), \"r\"(a), \"r\"(b), \"r\"(c), \"r\"(d) : \"memory\");\n}\n\n");
}
