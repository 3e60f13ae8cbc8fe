/* tma.c: tensor-map parameters for tiled bulk copies, checked before the
 * driver sees them (cuTensorMapEncodeTiled answers only "invalid value").
 *
 * Out-of-bounds elements of a box are filled with zeros (fill mode NONE):
 * that is how a tile past the end of the whole tensor is padded. It does
 * not stop at sequence boundaries; tail.c handles those.
 */
#include "gdngen.h"

#define TWO_POW_32 (1ull << 32)
#define TWO_POW_40 (1ull << 40)

static int check_shape(const TmaSpec *s, Diag *d) {
  if (s->rank < 1 || s->rank > 5)
    return diag_fail(d, "tma: rank %d is not in 1..5", s->rank);
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 1 || s->dims[i] > TWO_POW_32)
      return diag_fail(d, "tma: dim %d = %llu is not in 1..2^32", i,
                       (unsigned long long)s->dims[i]);
  uint64_t extent = s->dims[0] * (uint64_t)dtype_info(s->dt)->bytes;
  for (int i = 0; i + 1 < s->rank; i++) {
    uint64_t st = s->strides[i];
    if (st % 16 != 0)
      return diag_fail(d, "tma: stride %d = %llu bytes is not a multiple of 16", i + 1,
                       (unsigned long long)st);
    if (st >= TWO_POW_40)
      return diag_fail(d, "tma: stride %d = %llu bytes is not below 2^40", i + 1,
                       (unsigned long long)st);
    if (st < extent)
      return diag_fail(d, "tma: stride %d = %llu bytes is shorter than the %llu bytes it steps over",
                       i + 1, (unsigned long long)st, (unsigned long long)extent);
    extent = st * s->dims[i + 1];
  }
  return 0;
}

static int check_box(const TmaSpec *s, Diag *d) {
  for (int i = 0; i < s->rank; i++) {
    if (s->box[i] < 1 || s->box[i] > 256)
      return diag_fail(d, "tma: box dim %d = %u is not in 1..256", i, s->box[i]);
    if (s->elem_strides[i] != 1)
      return diag_fail(d, "tma: element stride %d = %u; gdngen copies dense boxes (1)", i,
                       s->elem_strides[i]);
  }
  uint32_t inner = s->box[0] * (uint32_t)dtype_info(s->dt)->bytes;
  if (inner % 16 != 0)
    return diag_fail(d, "tma: inner box of %u bytes is not a multiple of 16", inner);
  const SwizzleInfo *sw = swizzle_info(s->swz);
  if (s->swz != SWZ_NONE && inner > (uint32_t)sw->span)
    return diag_fail(d, "tma: inner box of %u bytes exceeds the %s swizzle span of %d bytes",
                     inner, sw->name, sw->span);
  return 0;
}

int tma_check(const TmaSpec *s, Diag *d) {
  if (check_shape(s, d) || check_box(s, d))
    return -1;
  if (s->check_addr && s->addr % 16 != 0)
    return diag_fail(d, "tma: global address 0x%llx is not 16-byte aligned",
                     (unsigned long long)s->addr);
  return 0;
}

/* One box per atom column: {atom elements, all rows}. */
void tma_tile_box_dims(const SmemTile *t, uint32_t box[2]) {
  box[0] = (uint32_t)(swizzle_info(t->swz)->span / dtype_info(t->dt)->bytes);
  box[1] = (uint32_t)tile_rows(t);
}

int tma_tile_boxes(const SmemTile *t, TmaBox *boxes, int max, Diag *d) {
  if (tile_check(t, d) != 0)
    return -1;
  uint32_t box[2];
  tma_tile_box_dims(t, box);
  int n = tile_row_elems(t) / (int)box[0];
  if (n > max)
    return diag_fail(d, "tma: tile needs %d boxes, room for %d", n, max);
  for (int c = 0; c < n; c++) {
    boxes[c].inner = c * (int)box[0];
    boxes[c].outer = 0;
    int e = c * (int)box[0];
    boxes[c].smem_off = t->major == MAJOR_K ? tile_linear(t, 0, e) : tile_linear(t, e, 0);
  }
  return n;
}
