/* probes.c: runs every probe kernel of generated/probes.h on the GPU and
 * compares it element by element with a CPU product on fresh random data.
 *
 * The tolerance is fp32 accumulation error (2e-6 of sum |a b|), far below
 * the size of one misplaced element; each probe also proves that by
 * showing that its own output with two elements swapped fails the check.
 * Run from the repository root: build/tests/gpu_probes [seed].
 */
#include <stdint.h>
#include <string.h>

#include "gdngen.h"
#include "gpucheck.h"
#include "probes.h"
#include "ref.h"

typedef struct Operand {
  uint16_t *host;   /* storage view, rows x row_elems; missing rows are 0 */
  CUdeviceptr dev;  /* only the rows that exist */
  CUtensorMap map;
} Operand;

static int storage_rows_present(const gdn_probe_operand *op) { return op->global_rows; }

/* The TMA parameters come from the manifest; the rule module checks them
 * before the driver sees them. */
static void encode(const gdn_probe_operand *op, CUdeviceptr addr, CUtensorMap *m) {
  TmaSpec s = {DT_BF16, 2, {(uint64_t)op->row_elems, (uint64_t)op->global_rows},
               {(uint64_t)op->row_elems * 2}, {op->box[0], op->box[1]}, {1, 1},
               SWZ_NONE, addr, 1};
  for (int i = 0; i < SWZ_COUNT; i++)
    if (swizzle_info((Swizzle)i)->tma_code == op->swizzle)
      s.swz = (Swizzle)i;
  Diag d;
  if (tma_check(&s, &d) != 0) {
    fprintf(stderr, "probe tensor map refused: %s\n", d.msg);
    exit(2);
  }
  cuuint64_t dims[2] = {s.dims[0], s.dims[1]}, strides[1] = {s.strides[0]};
  cuuint32_t box[2] = {s.box[0], s.box[1]}, es[2] = {1, 1};
  CU(cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)addr, dims, strides,
                            box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            (CUtensorMapSwizzle)op->swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

static void operand_make(const gdn_probe_operand *op, ref_rng *rng, Operand *o) {
  memset(o, 0, sizeof *o);
  if (op->kind == GDN_PROBE_NONE)
    return;
  size_t n = (size_t)op->rows * op->row_elems;
  o->host = calloc(n, sizeof *o->host);
  size_t present = (size_t)storage_rows_present(op) * op->row_elems;
  for (size_t i = 0; i < present; i++)
    o->host[i] = ref_bf16((float)ref_normal(rng));
  CU(cuMemAlloc(&o->dev, present * 2));
  CU(cuMemcpyHtoD(o->dev, o->host, present * 2));
  if (op->kind == GDN_PROBE_TMA)
    encode(op, o->dev, &o->map);
}

static void operand_free(Operand *o) {
  free(o->host);
  if (o->dev)
    cuMemFree(o->dev);
}

/* Logical element (mn, k) of an operand; storage rows >= valid are zero. */
static double elem(const gdn_probe_operand *op, const Operand *o, int mn, int k, int valid) {
  int row = op->major == 0 ? mn : k, e = op->major == 0 ? k : mn;
  if (row >= valid)
    return 0.0;
  return ref_bf16_to_f32(o->host[(size_t)row * op->row_elems + e]);
}

/* want = A B and mag = |A| |B| for the 64 x n result, A from `a`. */
static void product(int n, int k, double (*a)(const void *, int, int), const void *actx,
                    const gdn_probe_operand *bop, const Operand *b, int bvalid, double *want,
                    double *mag) {
  for (int m = 0; m < 64; m++)
    for (int j = 0; j < n; j++) {
      double s = 0, t = 0;
      for (int kk = 0; kk < k; kk++) {
        double x = a(actx, m, kk) * elem(bop, b, j, kk, bvalid);
        s += x;
        t += fabs(x);
      }
      want[m * n + j] = s;
      mag[m * n + j] = t;
    }
}

typedef struct AFromOperand {
  const gdn_probe_operand *op;
  const Operand *o;
} AFromOperand;

static double a_operand(const void *ctx, int m, int k) {
  const AFromOperand *a = ctx;
  return elem(a->op, a->o, m, k, a->op->rows);
}

typedef struct AFromD1 {
  const float *d1;
  int n;
} AFromD1;

/* The chain's A is the GPU's own D1 rounded to bf16, as the kernel does. */
static double a_d1(const void *ctx, int m, int k) {
  const AFromD1 *a = ctx;
  return ref_bf16_to_f32(ref_bf16(a->d1[m * a->n + k]));
}

/* 0 if every element is within tolerance; else describes the first miss. */
static int compare(const float *got, const double *want, const double *mag, int n, char *msg,
                   size_t len) {
  double worst = 0;
  for (int i = 0; i < 64 * n; i++) {
    double err = fabs((double)got[i] - want[i]), tol = 2e-6 * mag[i] + 1e-7;
    if (!(err <= tol)) {
      snprintf(msg, len, "D[%d][%d] = %.7g, want %.7g (tol %.2g)", i / n, i % n, got[i],
               want[i], tol);
      return -1;
    }
    if (mag[i] > 0 && err / mag[i] > worst)
      worst = err / mag[i];
  }
  snprintf(msg, len, "max err %.2g of sum|ab|", worst);
  return 0;
}

/* The check must be able to fail: two swapped elements must be caught. */
static int sharp(const float *got, const double *want, const double *mag, int n) {
  float *c = malloc(sizeof(float) * 64 * n);
  memcpy(c, got, sizeof(float) * 64 * n);
  float x = c[0];
  c[0] = c[n + 1];
  c[n + 1] = x;
  char msg[160];
  int caught = compare(c, want, mag, n, msg, sizeof msg) != 0;
  free(c);
  return caught;
}

typedef struct Run {
  CUfunction fn;
  Operand a, b, c;
  CUdeviceptr d1, d2;
  float *h1, *h2;
} Run;

static void launch(const gdn_probe *p, Run *r, int valid) {
  size_t n1 = 64 * (size_t)p->n, n2 = 64 * (size_t)(p->n2 ? p->n2 : 1);
  CU(cuMemsetD8(r->d1, 0xFF, n1 * 4)); /* NaN poison: unwritten shows */
  CU(cuMemsetD8(r->d2, 0xFF, n2 * 4));
  void *args[] = {&r->a.map, &r->b.map, &r->c.map, &r->a.dev, &r->b.dev, &r->d1, &r->d2, &valid};
  CU(cuLaunchKernel(r->fn, 1, 1, 1, 128, 1, 1, p->smem_bytes, NULL, args, NULL));
  CU(cuCtxSynchronize());
  CU(cuMemcpyDtoH(r->h1, r->d1, n1 * 4));
  CU(cuMemcpyDtoH(r->h2, r->d2, n2 * 4));
}

static void check(gpu_tally *t, const char *name, const float *got, const double *want,
                  const double *mag, int n, int need_sharp) {
  char msg[200];
  int ok = compare(got, want, mag, n, msg, sizeof msg) == 0;
  if (ok && need_sharp && !sharp(got, want, mag, n)) {
    ok = 0;
    snprintf(msg, sizeof msg, "the check did not catch two swapped elements");
  }
  gpu_record(t, ok, name, msg);
}

static void run_probe(gpu_tally *t, CUmodule mod, const gdn_probe *p, ref_rng *rng) {
  Run r;
  memset(&r, 0, sizeof r);
  CU(cuModuleGetFunction(&r.fn, mod, p->name));
  CU(cuFuncSetAttribute(r.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)p->smem_bytes));
  operand_make(&p->a, rng, &r.a);
  operand_make(&p->b, rng, &r.b);
  operand_make(&p->c, rng, &r.c);
  int n2 = p->n2 ? p->n2 : 1;
  CU(cuMemAlloc(&r.d1, 64 * (size_t)p->n * 4));
  CU(cuMemAlloc(&r.d2, 64 * (size_t)n2 * 4));
  r.h1 = malloc(64 * (size_t)p->n * 4);
  r.h2 = malloc(64 * (size_t)n2 * 4);
  double *want = malloc(sizeof(double) * 64 * 128), *mag = malloc(sizeof(double) * 64 * 128);
  AFromOperand ac = {&p->a, &r.a};
  static const int valid_rows[] = {0, 1, 37, 1 << 20};
  int nvalid = p->kind == GDN_PROBE_TAIL ? 4 : 1;
  for (int v = 0; v < nvalid; v++) {
    int valid = p->kind == GDN_PROBE_TAIL ? valid_rows[v] : p->b.global_rows;
    if (valid > p->b.rows)
      valid = p->b.rows;
    launch(p, &r, valid);
    product(p->n, p->k, a_operand, &ac, &p->b, &r.b, valid, want, mag);
    char name[128];
    snprintf(name, sizeof name, "%s%s", p->name, "");
    if (p->kind == GDN_PROBE_TAIL)
      snprintf(name, sizeof name, "%s valid=%d", p->name, valid);
    check(t, name, r.h1, want, mag, p->n, valid > 0);
    if (p->kind == GDN_PROBE_CHAIN) {
      AFromD1 a2 = {r.h1, p->n};
      product(p->n2, p->n, a_d1, &a2, &p->c, &r.c, p->c.global_rows, want, mag);
      snprintf(name, sizeof name, "%s second product", p->name);
      check(t, name, r.h2, want, mag, p->n2, 1);
    }
  }
  free(want);
  free(mag);
  free(r.h1);
  free(r.h2);
  cuMemFree(r.d1);
  cuMemFree(r.d2);
  operand_free(&r.a);
  operand_free(&r.b);
  operand_free(&r.c);
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x9e3779b97f4a7c15ull;
  gpu_init(0);
  gpu_tally t = {0, 0};
  ref_rng rng = ref_rng_seed(seed);
  printf("probes: %d kernels, seed 0x%llx\n", GDN_PROBE_COUNT, (unsigned long long)seed);
  for (int i = 0; i < GDN_PROBE_COUNT; i++) {
    const gdn_probe *p = &gdn_probes[i];
    char path[256];
    snprintf(path, sizeof path, "build/kernels/%s.cubin", p->file);
    CUmodule mod;
    CU(cuModuleLoad(&mod, path));
    run_probe(&t, mod, p, &rng);
    CU(cuModuleUnload(mod));
  }
  return gpu_summary(&t, "probes");
}
