/* legality.c: which wgmma requests gdngen may lower, one rule per row.
 *
 * The rule set is narrower than PTX on purpose: M = 64, N in {16, 32, 64,
 * 128}, K a multiple of 16, bf16/fp16 in and fp32 out, one whole aligned
 * warpgroup, sm_90a. A request that breaks a rule is refused with the
 * rule's sentence; there is no fallback to another instruction.
 */
#include "gdngen.h"

typedef int (*RuleFn)(const WgmmaReq *r, Diag *d);

static int rule_arch(const WgmmaReq *r, Diag *d) {
  if (r->arch != ARCH_SM90A)
    return diag_fail(d, "wgmma needs target sm_90a, not %s (wgmma exists only on sm_90a)",
                     arch_info(r->arch)->name);
  return 0;
}

static int rule_m(const WgmmaReq *r, Diag *d) {
  if (r->m != 64)
    return diag_fail(d, "wgmma M must be 64, not %d", r->m);
  return 0;
}

static int rule_n(const WgmmaReq *r, Diag *d) {
  if (r->n != 16 && r->n != 32 && r->n != 64 && r->n != 128)
    return diag_fail(d, "wgmma N must be one of 16, 32, 64, 128, not %d", r->n);
  return 0;
}

static int rule_k(const WgmmaReq *r, Diag *d) {
  if (r->k < 16 || r->k % 16 != 0)
    return diag_fail(d, "wgmma K must be >= 16 and a multiple of 16, not %d", r->k);
  return 0;
}

static int rule_dtypes(const WgmmaReq *r, Diag *d) {
  int half = r->a == DT_BF16 || r->a == DT_F16;
  if (!half || r->a != r->b)
    return diag_fail(d, "wgmma A and B must be both bf16 or both f16, not %s and %s",
                     dtype_info(r->a)->name, dtype_info(r->b)->name);
  return 0;
}

static int rule_accumulator(const WgmmaReq *r, Diag *d) {
  if (r->c != DT_F32 || r->c_src != SRC_REG)
    return diag_fail(d, "wgmma accumulator must be f32 in registers, not %s in %s",
                     dtype_info(r->c)->name, r->c_src == SRC_REG ? "registers" : "shared memory");
  return 0;
}

static int rule_scope(const WgmmaReq *r, Diag *d) {
  if (r->nthreads != 128)
    return diag_fail(d, "wgmma must be issued by one full warpgroup of 128 threads, not %d",
                     r->nthreads);
  if (r->first_thread % 128 != 0)
    return diag_fail(d, "wgmma warpgroup must start at a warp index divisible by 4, "
                        "not at thread %d (warp %d)", r->first_thread, r->first_thread / 32);
  return 0;
}

/* A register A has no transpose bit: its fragment is K-major by layout. An
 * accumulator can serve as A only through registers. */
static int rule_register_a(const WgmmaReq *r, Diag *d) {
  if (r->a_src == SRC_REG && r->a_major != MAJOR_K)
    return diag_fail(d, "wgmma RS: A in registers must be K-major, not MN-major");
  if (r->a_from_acc && r->a_src != SRC_REG)
    return diag_fail(d, "wgmma: an accumulator reused as A must be an RS operand");
  return 0;
}

static const struct {
  const char *name;
  RuleFn fn;
} rules[] = {
    {"target", rule_arch},       {"M", rule_m},          {"N", rule_n},
    {"K", rule_k},               {"dtypes", rule_dtypes}, {"accumulator", rule_accumulator},
    {"warpgroup", rule_scope},   {"register A", rule_register_a},
};

int wgmma_check(const WgmmaReq *r, Diag *d) {
  for (size_t i = 0; i < COUNT_OF(rules); i++)
    if (rules[i].fn(r, d) != 0)
      return -1;
  return 0;
}

int wgmma_rule_count(void) { return (int)COUNT_OF(rules); }
const char *wgmma_rule_name(int i) { return rules[i].name; }
