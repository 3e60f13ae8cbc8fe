/* target.c: the tables of architectures and element types. */
#include <string.h>

#include "gdngen.h"

/* Only sm_90a has wgmma and setmaxnreg; the others are listed so that a
 * request for them is refused by name rather than as an unknown word. */
static const ArchInfo arch_table[] = {
    [ARCH_SM80] = {"sm_80", 80, 0, NULL, 163 * 1024, 65536},
    [ARCH_SM90] = {"sm_90", 90, 0, NULL, 227 * 1024, 65536},
    [ARCH_SM90A] = {"sm_90a", 90, 1, "-gencode=arch=compute_90a,code=sm_90a", 227 * 1024, 65536},
    [ARCH_SM100A] = {"sm_100a", 100, 0, NULL, 227 * 1024, 65536},
};
_Static_assert(COUNT_OF(arch_table) == ARCH_COUNT, "one row per ArchId");

/* tma_code: CU_TENSOR_MAP_DATA_TYPE_{BFLOAT16 = 9, FLOAT16 = 6, FLOAT32 = 7}. */
static const DTypeInfo dtype_table[] = {
    [DT_BF16] = {"bf16", "bf16", 2, 9},
    [DT_F16] = {"f16", "f16", 2, 6},
    [DT_F32] = {"f32", "f32", 4, 7},
};
_Static_assert(COUNT_OF(dtype_table) == DT_COUNT, "one row per DType");

const ArchInfo *arch_info(ArchId a) { return &arch_table[a]; }

/* A CTA launched one to an SM enters with the SM's registers shared out
 * evenly, in the 8-a-thread steps registers are allocated in, and at most
 * 256 a thread. That allocation is the CTA's whole pool for setmaxnreg: an
 * .inc beyond it blocks for good, since nothing else returns registers. */
unsigned arch_entry_regs(ArchId a, unsigned threads) {
  unsigned r = arch_table[a].regs / threads / 8 * 8;
  return r < 256 ? r : 256;
}

/* `regs`: the registers a kernel's warpgroups ask setmaxnreg for in all.
 * They must come out of what its `threads` threads entered with: the SM's
 * file is not the limit, the CTA's share of it is. */
int arch_setmaxnreg_fits(ArchId a, const char *kernel, unsigned threads, unsigned regs,
                         Diag *d) {
  unsigned entry = arch_entry_regs(a, threads);
  if (regs > entry * threads)
    return diag_fail(d,
                     "%s's warpgroups ask setmaxnreg for %u registers in all, but its %u "
                     "threads enter with %u each (%u), and setmaxnreg.inc would wait forever "
                     "for the rest",
                     kernel, regs, threads, entry, entry * threads);
  return 0;
}

const DTypeInfo *dtype_info(DType t) { return &dtype_table[t]; }

int arch_parse(const char *name, ArchId *out) {
  for (int i = 0; i < ARCH_COUNT; i++)
    if (strcmp(name, arch_table[i].name) == 0) {
      *out = (ArchId)i;
      return 0;
    }
  return -1;
}

int dtype_parse(const char *name, DType *out) {
  for (int i = 0; i < DT_COUNT; i++)
    if (strcmp(name, dtype_table[i].name) == 0) {
      *out = (DType)i;
      return 0;
    }
  return -1;
}
