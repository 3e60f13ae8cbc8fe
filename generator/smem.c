/* smem.c: shared-memory tiles in the canonical wgmma layouts, their
 * swizzles, and the 64-bit matrix descriptors that read them.
 *
 * A tile is stored as TMA writes it: `rows` of the strided dimension, the
 * contiguous dimension cut into atoms of `span` bytes (the swizzle width,
 * or 16 bytes without swizzle), one column of atoms after another:
 *
 *   linear(row, e) = (e / E) * rows * span + row * span + (e % E) * esize
 *
 * with E = span / esize elements per atom row. The swizzle then XORs the
 * row-within-8 into the 16-byte chunk index. Without swizzle the same
 * formula yields 8 x 16 B core matrices, each 128 contiguous bytes.
 */
#include <string.h>

#include "gdngen.h"

/* desc_type: descriptor bits 62-63; tma_code: CUtensorMapSwizzle. */
static const SwizzleInfo swizzle_table[] = {
    [SWZ_NONE] = {"none", 16, 128, 0, 0, 0x000},
    [SWZ_32B] = {"32B", 32, 256, 3, 1, 0x080},
    [SWZ_64B] = {"64B", 64, 512, 2, 2, 0x180},
    [SWZ_128B] = {"128B", 128, 1024, 1, 3, 0x380},
};
_Static_assert(COUNT_OF(swizzle_table) == SWZ_COUNT, "one row per Swizzle");

const SwizzleInfo *swizzle_info(Swizzle s) { return &swizzle_table[s]; }

int swizzle_parse(const char *name, Swizzle *out) {
  for (int i = 0; i < SWZ_COUNT; i++)
    if (strcmp(name, swizzle_table[i].name) == 0) {
      *out = (Swizzle)i;
      return 0;
    }
  return -1;
}

/* Bits 7.. (the row inside the 8-row period) flip the 16-byte chunk. */
uint32_t swizzle_apply(Swizzle s, uint32_t a) {
  uint32_t m = swizzle_table[s].xor_mask;
  return a ^ ((a & m) >> 3);
}

static int esize(const SmemTile *t) { return dtype_info(t->dt)->bytes; }
static int span(const SmemTile *t) { return swizzle_table[t->swz].span; }
static int atom_elems(const SmemTile *t) { return span(t) / esize(t); }

int tile_rows(const SmemTile *t) { return t->major == MAJOR_K ? t->mn : t->k; }
int tile_row_elems(const SmemTile *t) { return t->major == MAJOR_K ? t->k : t->mn; }

int tile_check(const SmemTile *t, Diag *d) {
  if (t->dt != DT_BF16 && t->dt != DT_F16)
    return diag_fail(d, "smem tile: wgmma operands are bf16 or f16, not %s",
                     dtype_info(t->dt)->name);
  if (t->mn <= 0 || t->mn % 8 != 0)
    return diag_fail(d, "smem tile: MN extent %d must be a positive multiple of 8", t->mn);
  if (t->k <= 0 || t->k % 16 != 0)
    return diag_fail(d, "smem tile: K extent %d must be a positive multiple of 16", t->k);
  int e = atom_elems(t);
  if (tile_row_elems(t) % e != 0)
    return diag_fail(d, "smem tile: a %s-major %s tile needs its contiguous extent (%d) to be "
                        "a multiple of the %d-element atom row",
                     t->major == MAJOR_K ? "K" : "MN", swizzle_table[t->swz].name,
                     tile_row_elems(t), e);
  if (tile_rows(t) > 256)
    return diag_fail(d, "smem tile: %d rows exceed the TMA box limit of 256", tile_rows(t));
  return 0;
}

uint32_t tile_bytes(const SmemTile *t) { return (uint32_t)(t->mn * t->k * esize(t)); }

static uint32_t storage_linear(const SmemTile *t, int row, int e) {
  int E = atom_elems(t);
  return (uint32_t)((e / E) * tile_rows(t) * span(t) + row * span(t) + (e % E) * esize(t));
}

uint32_t tile_linear(const SmemTile *t, int mn, int k) {
  return t->major == MAJOR_K ? storage_linear(t, mn, k) : storage_linear(t, k, mn);
}

uint32_t tile_offset(const SmemTile *t, int mn, int k) {
  return swizzle_apply(t->swz, tile_linear(t, mn, k));
}

/* LBO and SBO per canonical layout (PTX "matrix descriptor"; the roles of
 * the two swap between swizzled and non-swizzled MN-major):
 *   K-major, swizzled:  SBO = 8-row group stride (8 span); LBO unused (1).
 *   K-major, none:      SBO = next 8 MN rows (128 B); LBO = next 8 K (rows * 16).
 *   MN-major, swizzled: SBO = next 8 k rows (8 span); LBO = next MN atom column.
 *   MN-major, none:     SBO = next 8 MN (rows * 16); LBO = next 8 k rows (128 B). */
int desc_for(const SmemTile *t, int mn0, int k0, DescParts *p, Diag *d) {
  if (tile_check(t, d) != 0)
    return -1;
  int E = atom_elems(t);
  if (k0 % 16 != 0 || k0 < 0 || k0 >= t->k)
    return diag_fail(d, "descriptor: k0 = %d must be a multiple of 16 inside K = %d", k0, t->k);
  int mn_align = (t->major == MAJOR_MN) ? E : 8;
  if (mn0 % mn_align != 0 || mn0 < 0 || mn0 >= t->mn)
    return diag_fail(d, "descriptor: mn0 = %d must be a multiple of %d inside MN = %d", mn0,
                     mn_align, t->mn);
  int rows = tile_rows(t), sp = span(t);
  p->start = tile_linear(t, mn0, k0);
  p->type = swizzle_table[t->swz].desc_type;
  if (t->major == MAJOR_K) {
    p->sbo = t->swz == SWZ_NONE ? 128u : (uint32_t)(8 * sp);
    p->lbo = t->swz == SWZ_NONE ? (uint32_t)(rows * 16) : 16u;
  } else {
    p->sbo = t->swz == SWZ_NONE ? (uint32_t)(rows * 16) : (uint32_t)(8 * sp);
    p->lbo = t->swz == SWZ_NONE ? 128u : (uint32_t)(rows * sp);
  }
  return 0;
}

/* Fields: start 0-13, LBO 16-29, SBO 32-45 (all >> 4), base offset 49-51
 * (0: every tile is aligned to its swizzle period), layout type 62-63. */
uint64_t desc_high(const DescParts *p) {
  uint64_t v = 0;
  v |= (uint64_t)((p->lbo >> 4) & 0x3FFF) << 16;
  v |= (uint64_t)((p->sbo >> 4) & 0x3FFF) << 32;
  v |= (uint64_t)(p->type & 3) << 62;
  return v;
}

uint64_t desc_encode(uint32_t smem_addr, const DescParts *p) {
  return desc_high(p) | (uint64_t)(((smem_addr + p->start) & 0x3FFFF) >> 4);
}
