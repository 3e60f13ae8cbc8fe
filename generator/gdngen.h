/* gdngen.h: the one internal header of the generator.
 *
 * Reads as a table of contents: shared types first, then one banner per
 * source file with what that file owns. The five lowering rules (legality,
 * fragment, smem, tma, tail) are pure functions of their arguments; the
 * emitters write text only through out.c; the schedules (probe.c,
 * generic.c) combine rules and templates into kernels.
 */
#ifndef GDNGEN_H
#define GDNGEN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GDNGEN_VERSION "0.1.0"
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* A diagnostic: the sentence that names a broken rule. */
typedef struct Diag {
  char msg[320];
} Diag;


/* ---------------------------------------------------------- target.c */
typedef enum ArchId { ARCH_SM80, ARCH_SM90, ARCH_SM90A, ARCH_SM100A, ARCH_COUNT } ArchId;
typedef struct ArchInfo {
  const char *name;    /* "sm_90a" */
  int sm;              /* 90 */
  int wgmma;           /* wgmma.mma_async and setmaxnreg exist */
  const char *gencode; /* nvcc flag, NULL when gdngen cannot target it */
  unsigned smem_max;   /* dynamic shared memory a CTA may opt in to, bytes */
  unsigned regs;       /* 32-bit registers of one SM */
} ArchInfo;
const ArchInfo *arch_info(ArchId a);
unsigned arch_entry_regs(ArchId a, unsigned threads); /* per thread, 1 CTA an SM */
int arch_setmaxnreg_fits(ArchId a, const char *kernel, unsigned threads, unsigned regs,
                         Diag *d); /* -1 and a diagnostic if regs exceed the entry pool */
int arch_parse(const char *name, ArchId *out); /* -1 if unknown */

typedef enum DType { DT_BF16, DT_F16, DT_F32, DT_COUNT } DType;
typedef struct DTypeInfo {
  const char *name; /* "bf16" */
  const char *ptx;  /* wgmma type suffix: "bf16" */
  int bytes;
  int tma_code;     /* CUtensorMapDataType value */
} DTypeInfo;
const DTypeInfo *dtype_info(DType t);
int dtype_parse(const char *name, DType *out);

/* ------------------------------------------------------- legality.c */
typedef enum OperandSrc { SRC_SMEM, SRC_REG } OperandSrc;
typedef enum Major { MAJOR_K, MAJOR_MN } Major;

/* One wgmma request, as a schedule asks for it. */
typedef struct WgmmaReq {
  ArchId arch;
  int m, n, k;          /* k: the whole reduction, issued as k/16 instructions */
  DType a, b, c;        /* c is the accumulator type */
  OperandSrc a_src;     /* SS (smem) or RS (registers) */
  OperandSrc c_src;     /* must be registers */
  Major a_major, b_major;
  int a_from_acc;       /* A is an fp32 accumulator cast to a */
  int first_thread;     /* the issuing scope: [first_thread, +nthreads) */
  int nthreads;
} WgmmaReq;
int wgmma_check(const WgmmaReq *r, Diag *d); /* 0 legal, -1 with the rule */
int wgmma_rule_count(void);
const char *wgmma_rule_name(int i);

/* ------------------------------------------------------- fragment.c */
/* A fragment map sends (thread t of the warpgroup, register index r) to a
 * (row, col) of the matrix: a sum of terms ((x >> shift) & mask) * scale
 * with x = t or r. The same table drives the C evaluation, the tests and
 * the text of the emitted index arithmetic. */
typedef struct FragTerm {
  char var;  /* 't' or 'r' */
  int shift, mask, scale;
} FragTerm;
typedef struct FragMap {
  const char *name;
  int rows, cols;     /* the matrix the map covers */
  int regs;           /* registers (elements) per thread */
  int nrow, ncol;
  FragTerm row[4], col[4];
} FragMap;
typedef struct Coord {
  int row, col;
} Coord;
FragMap frag_acc(int n);    /* m64nN fp32 accumulator, regs = n / 2      */
FragMap frag_a_k16(void);   /* RS A of one k16 step: element e = 2 reg + half */
Coord frag_eval(const FragMap *m, int t, int r);
int frag_check_bijective(const FragMap *m, Diag *d);
/* Register of the accumulator that A element e of k16 step j reads when
 * an accumulator is reused as A (columns 16j .. 16j + 15). */
int frag_acc_as_a(int j, int e);
/* The 8 x 8 block that register pair p (2p, 2p + 1) of an accumulator map
 * covers in warp 0, checked to be what ldmatrix .trans delivers. */
int frag_pair_block(const FragMap *m, int p, int *row0, int *col0, Diag *d);
/* First register of the column slice [n0, n0 + w) of an m64nN accumulator. */
int frag_slice_first(int n, int n0, int w, Diag *d);

/* ----------------------------------------------------------- smem.c */
typedef enum Swizzle { SWZ_NONE, SWZ_32B, SWZ_64B, SWZ_128B, SWZ_COUNT } Swizzle;
typedef struct SwizzleInfo {
  const char *name;   /* "128B" */
  int span;           /* bytes of one swizzled row (16 for none: a core-matrix row) */
  int period;         /* alignment and repeat of the pattern in bytes */
  int desc_type;      /* descriptor bits 62-63 */
  int tma_code;       /* CUtensorMapSwizzle value */
  uint32_t xor_mask;  /* address bits that are XORed into bits 4.. */
} SwizzleInfo;
const SwizzleInfo *swizzle_info(Swizzle s);
int swizzle_parse(const char *name, Swizzle *out);
uint32_t swizzle_apply(Swizzle s, uint32_t byte_addr);

/* A matrix tile in shared memory: mn x k elements, in one of the canonical
 * wgmma layouts, based at a 1024-byte aligned address. The storage order
 * is the TMA order: "rows" are the strided dimension (mn for K-major, k for
 * MN-major), atoms of `span` bytes hold the contiguous one. */
typedef struct SmemTile {
  DType dt;
  Major major;
  Swizzle swz;
  int mn, k;
} SmemTile;
int tile_check(const SmemTile *t, Diag *d);
uint32_t tile_bytes(const SmemTile *t);
int tile_rows(const SmemTile *t);          /* TMA outer extent */
int tile_row_elems(const SmemTile *t);     /* TMA inner extent */
uint32_t tile_linear(const SmemTile *t, int mn, int k); /* before swizzle */
uint32_t tile_offset(const SmemTile *t, int mn, int k); /* swizzled */

/* The descriptor of the wgmma operand slice at (mn0, k0): its start offset
 * from the tile base, LBO, SBO (bytes) and layout type. */
typedef struct DescParts {
  uint32_t start, lbo, sbo;
  int type;
} DescParts;
int desc_for(const SmemTile *t, int mn0, int k0, DescParts *p, Diag *d);
uint64_t desc_encode(uint32_t smem_addr, const DescParts *p);
uint64_t desc_high(const DescParts *p); /* the encoding without the start field */

/* ------------------------------------------------------------ tma.c */
/* The parameters of cuTensorMapEncodeTiled, checked before any call. */
typedef struct TmaSpec {
  DType dt;
  int rank;
  uint64_t dims[5];      /* innermost first, in elements */
  uint64_t strides[4];   /* bytes, dims 1 .. rank-1 */
  uint32_t box[5];
  uint32_t elem_strides[5];
  Swizzle swz;
  uint64_t addr;         /* global base address (0 for a table entry) */
  int check_addr;        /* addr is real: check its alignment */
} TmaSpec;
int tma_check(const TmaSpec *s, Diag *d);
/* One TMA load of a tile: its box origin relative to the tile origin
 * (inner in elements, outer in rows) and its destination offset. */
typedef struct TmaBox {
  int inner, outer;
  uint32_t smem_off;
} TmaBox;
int tma_tile_boxes(const SmemTile *t, TmaBox *boxes, int max, Diag *d);
void tma_tile_box_dims(const SmemTile *t, uint32_t box[2]);

/* ----------------------------------------------------------- tail.c */
/* A masked copy of a tile whose first P storage rows are valid: 16-byte
 * vectors spread over the threads; rows >= P are zero-filled, nothing past
 * them is read. */
typedef struct TailPlan {
  SmemTile tile;
  int nthreads;
  int vecs_per_row;  /* 16-byte vectors in one storage row */
  int iters;         /* vectors per thread */
} TailPlan;
int tail_plan(const SmemTile *t, int nthreads, TailPlan *p, Diag *d);
typedef struct TailLane {
  int row, col;       /* storage row and first element of the vector */
  int load;           /* 1: read global, 0: write zeros */
  uint32_t smem_off;  /* swizzled destination */
} TailLane;
TailLane tail_lane(const TailPlan *p, int tid, int iter, int valid_rows);

/* ------------------------------------------------------------ out.c */
/* A growing text buffer; every emitted character goes through outf. */
typedef struct Out {
  char *buf;
  size_t len, cap;
  int indent;
} Out;
void out_init(Out *o);
void out_free(Out *o);
void outf(Out *o, const char *fmt, ...) PRINTF_LIKE(2, 3);
void out_line(Out *o, const char *fmt, ...) PRINTF_LIKE(2, 3); /* indented + \n */
void out_append(Out *o, const Out *src);
int out_write_file(const Out *o, const char *path, Diag *d);
/* The header comment every generated file starts with. */
void gen_header(Out *o, const char *what, ArchId arch, const char *comment);

/* ------------------------------------------------------- template.c */
/* Templates hold kernel skeletons with named slots @{NAME}. Every slot must
 * be given and every given value must be used. */
typedef struct Slot {
  const char *name;
  const char *text;
} Slot;
int template_load(const char *dir, const char *name, Out *text, Diag *d);
int template_fill(const char *tmpl, const Slot *slots, int n, Out *o, Diag *d);
/* One schedule's slots: names with texts the table owns. */
typedef struct Slots {
  Slot s[64];
  char *owned[64];
  int n;
} Slots;
void slot_add(Slots *sl, const char *name, const char *fmt, ...) PRINTF_LIKE(3, 4);
void slot_out(Slots *sl, const char *name, Out *o); /* takes over o's text */
void slots_free(Slots *sl);
/* The templates tmpl[0 .. ntmpl), one after another, filled from sl. */
int template_emit(const char *tmpl_dir, const char *const *tmpl, int ntmpl, Slots *sl, Out *o,
                  Diag *d);

/* ----------------------------------------------------------- emit.c */
/* One emitter per PTX instruction: each writes a __device__ wrapper around
 * one inline-asm statement, once per distinct form (the Prelude dedups). */
typedef struct Prelude {
  Out text;
  char *seen[256];
  int nseen;
} Prelude;
void prelude_init(Prelude *p, ArchId arch);
void prelude_free(Prelude *p);
/* out_dir/<stem>.cu: the header that says what made it (`what`), the
 * prelude's wrappers, then the kernels. */
int emit_cu_file(const Prelude *p, const Out *kernels, const char *out_dir, const char *stem,
                 const char *what, ArchId arch, Diag *d);
typedef struct WgmmaForm {
  int n;
  DType ab;
  OperandSrc a_src;
  Major a_major, b_major;
} WgmmaForm;
const char *emit_wgmma(Prelude *p, const WgmmaForm *f); /* returns the wrapper name */
void emit_wgmma_fence(Prelude *p);
void emit_wgmma_commit(Prelude *p);
void emit_wgmma_wait(Prelude *p, int n);
void emit_fence_operand(Prelude *p, int packed); /* f32 accumulators or u32 A */
void emit_fence_proxy_async(Prelude *p);
void emit_mbar_init(Prelude *p);
void emit_fence_mbar_init(Prelude *p);
void emit_mbar_expect_tx(Prelude *p);
void emit_mbar_wait(Prelude *p);
void emit_tma_load_2d(Prelude *p, int hint); /* hint: tma_load_2d_hint */
void emit_prefetch_tensormap(Prelude *p);
void emit_ld_global_v4(Prelude *p);
void emit_st_shared_v4(Prelude *p);
void emit_cvt_pack(Prelude *p, DType dt); /* cvt.rn.{bf16,f16}x2.f32 */
void emit_smem_u32(Prelude *p);
void emit_setmaxnreg(Prelude *p, int inc, int regs);
void emit_griddep_launch(Prelude *p);
void emit_griddep_wait(Prelude *p);
void emit_fence_acq_rel_gpu(Prelude *p);
void emit_st_relaxed_gpu(Prelude *p);
void emit_ld_relaxed_gpu(Prelude *p);
void emit_ld_acquire_gpu(Prelude *p);
void emit_fence_proxy_async_global(Prelude *p);
void emit_tma_store_3d(Prelude *p);
void emit_bulk_commit(Prelude *p);
void emit_bulk_wait(Prelude *p, int n, int read);
void emit_ld_shared_u16(Prelude *p);
void emit_st_shared_u16(Prelude *p);
void emit_atom_add_shared_u32(Prelude *p);
void emit_st_shared_u32(Prelude *p);
void emit_ld_shared_v4(Prelude *p);
void emit_st_global_v4(Prelude *p);
void emit_bar_sync(Prelude *p);
void emit_bar_arrive(Prelude *p);
void emit_cvt_bf16_f32(Prelude *p);  /* f32_to_bf16 */
void emit_cvt_f32_bf16(Prelude *p);  /* bf16_to_f32 */
void emit_cvt_f16_f32(Prelude *p);   /* f32_to_f16 */
void emit_cvt_f32_f16(Prelude *p);   /* f16_to_f32 */
void emit_round_f16(Prelude *p);     /* the two above, composed */
void emit_tma_load_3d(Prelude *p, int hint); /* hint: tma_load_3d_hint */
void emit_policy_evict_first(Prelude *p);
void emit_mbar_arrive(Prelude *p);
void emit_mapa(Prelude *p);            /* mapa_shared */
void emit_mbar_arrive_remote_n(Prelude *p);
void emit_mbar_expect_tx_remote(Prelude *p);
void emit_bulk_copy_cluster(Prelude *p);
void emit_mbar_wait_cluster(Prelude *p);
void emit_cluster_arrive(Prelude *p);
void emit_cluster_wait(Prelude *p);
void emit_cluster_sync(Prelude *p);
void emit_ldmatrix_x4_trans(Prelude *p);
void emit_stmatrix_x4_trans(Prelude *p);
void emit_bulk_load(Prelude *p);
void emit_bulk_prefetch_l2(Prelude *p);
void emit_tma_prefetch_3d(Prelude *p);
void emit_mbar_add_tx(Prelude *p);
void emit_ld_shared_v2_f32(Prelude *p);
int seen_name(Prelude *p, const char *name); /* 1 if emitted before, else records it */

/* ---------------------------------------------------------- lower.c */
/* Device helpers generated from the rule tables. */
void emit_frag_fn(Prelude *p, const char *fname, const FragMap *m);
void emit_tile_offset_fn(Prelude *p, const char *fname, const SmemTile *t);
void emit_tail_copy_fn(Prelude *p, const char *fname, const TailPlan *t);
void emit_tail_zero_fn(Prelude *p, const char *fname, const TailPlan *t);
void emit_acc_to_a(Prelude *p, Out *o, const char *acc, const char *a, int ksteps, DType dt);
void emit_acc_to_a_steps(Prelude *p, Out *o, const char *acc, int first, const char *a, int j0,
                         int j1, DType dt);

/* The text a schedule writes for one wgmma product: k/16 instructions with
 * descriptors advanced per the smem rules. It emits no commit or wait: the
 * schedule places those. Checks legality first; on failure nothing. */
typedef struct Product {
  WgmmaReq req;
  SmemTile a_tile, b_tile;   /* a_tile unused for RS */
  int a_mn0, a_k0, b_mn0, b_k0;
  const char *acc;           /* accumulator array name */
  const char *a_regs;        /* RS: array of k/16 * 4 u32, or an acc to cast */
  const char *a_base, *b_base; /* smem u32 address expressions */
  const char *scale_d;       /* expression for the first instruction */
  unsigned ksteps;           /* bit j: issue k-step j; 0: all. A step left out
                                must add exact zeros, which its caller shows */
} Product;
int emit_product(Prelude *p, Out *o, const Product *pr, Diag *d);

/* ---------------------------------------------------------- probe.c */
typedef enum ProbeKind { PROBE_GEMM, PROBE_CHAIN, PROBE_TAIL } ProbeKind;
typedef struct ProbeSpec {
  ProbeKind kind;
  char name[64];
  int n, k;
  OperandSrc a_src;
  Swizzle a_swz, b_swz;
  Major a_major, b_major;
  int b_clip;      /* rows of B's global tensor missing at its end (TMA zero fill) */
  int n2;          /* chain: N of the second product, whose B is C */
  Swizzle c_swz;
  Major c_major;
} ProbeSpec;
int probe_list(ProbeSpec *out, int max);
int probe_emit(const char *tmpl_dir, const char *out_dir, ArchId arch, Diag *d);

/* ------------------------------------------------------- stepprobe.c */
/* probe_step.cu: one step of the state chain in four forms, for timing
 * (bench/chain_step.c); probe_emit writes it with the other probes. */
int step_probe_emit(const char *tmpl_dir, const char *out_dir, Diag *d);

/* -------------------------------------------------------- generic.c */
int generic_emit(const char *tmpl_dir, const char *out_dir, ArchId arch, Diag *d);

/* --------------------------------------------------------- routes.c */
/* The route table: which exact call keys (T, N, Hq, Hk, Hv, initial state
 * given, final state wanted) take which schedule. Configuration, not code:
 * rows come from a file and --route flags, each checked as it is read (a
 * refusal names the file and line), and the table is emitted as
 * generated/gdn_routes.h for libgdn's router. */
typedef enum RouteField { RF_T, RF_N, RF_HQ, RF_HK, RF_HV, RF_INIT, RF_FINAL, RF_COUNT } RouteField;
#define ROUTE_ORIGIN_LEN 80
typedef struct RouteRow {
  int schedule;                  /* index into routes.c's schedule table */
  int64_t key[RF_COUNT];         /* init, final: 0 or 1 */
  char origin[ROUTE_ORIGIN_LEN]; /* "default.routes:9" or "--route #1" */
} RouteRow;
typedef struct RouteTable {
  RouteRow *rows;
  int n, cap;
} RouteTable;
void routes_init(RouteTable *t);
void routes_free(RouteTable *t);
int routes_load(RouteTable *t, const char *path, Diag *d); /* appends the file's rows */
/* Appends one row, "SCHEDULE T=.. N=.. Hq=.. Hk=.. Hv=.. init=0|1 final=0|1";
 * `where` names it in messages and in the emitted header. */
int routes_add(RouteTable *t, const char *spec, const char *where, Diag *d);
void routes_print(const RouteTable *t, FILE *f); /* gdngen --list */
int routes_emit(const RouteTable *t, const char *out_dir, ArchId arch, Diag *d);

/* ---------------------------------------------------------- ninja.c */
typedef struct KernelFile {
  const char *stem;  /* generated/<stem>.cu -> build/kernels/<stem>.cubin */
  int embed;         /* linked into libgdn */
} KernelFile;
int ninja_emit(const char *out_dir, ArchId arch, const KernelFile *files, int n, Diag *d);
int embed_files(const char *out_c, int nfiles, char **files, Diag *d);

/* ------------------------------------------------------- resources.c */
/* `gdngen resources OUT.md LOG...`: reads ptxas -v logs, writes the table
 * of registers, barriers, stack and spills per kernel; -1 (report written
 * all the same) when a kernel spills, has a stack or is serialized. */
int resources_report(const char *out_md, int nlogs, char **logs, Diag *d);

/* ------------------------------------------------------------ util.c */
int diag_fail(Diag *d, const char *fmt, ...) PRINTF_LIKE(2, 3); /* returns -1 */
char *xstrdup(const char *s);
char *path_join(const char *dir, const char *name); /* malloc'd */

#endif /* GDNGEN_H */
