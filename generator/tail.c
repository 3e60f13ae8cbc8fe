/* tail.c: the masked copy of a tile whose first P storage rows are valid.
 *
 * TMA clips only at the end of the whole tensor, so the last chunk of a
 * sequence would read rows of the next one. On that path each thread moves
 * 16-byte vectors itself: vector v = iter * nthreads + tid lies in storage
 * row v / vecs_per_row; a row < P is read, any other row is written as
 * zeros and not read at all. The destination is the same swizzled offset
 * the TMA path and the descriptors use (smem.c), so both paths fill the
 * tile identically.
 */
#include "gdngen.h"

int tail_plan(const SmemTile *t, int nthreads, TailPlan *p, Diag *d) {
  if (tile_check(t, d) != 0)
    return -1;
  if (nthreads <= 0 || nthreads % 32 != 0)
    return diag_fail(d, "tail copy: %d threads is not a whole number of warps", nthreads);
  int esz = dtype_info(t->dt)->bytes;
  int row_bytes = tile_row_elems(t) * esz;
  int vecs = tile_rows(t) * row_bytes / 16;
  if (vecs % nthreads != 0)
    return diag_fail(d, "tail copy: %d vectors do not split evenly over %d threads", vecs,
                     nthreads);
  p->tile = *t;
  p->nthreads = nthreads;
  p->vecs_per_row = row_bytes / 16;
  p->iters = vecs / nthreads;
  return 0;
}

TailLane tail_lane(const TailPlan *p, int tid, int iter, int valid_rows) {
  TailLane l;
  int v = iter * p->nthreads + tid;
  int per_vec = 16 / dtype_info(p->tile.dt)->bytes;
  l.row = v / p->vecs_per_row;
  l.col = (v % p->vecs_per_row) * per_vec;
  l.load = l.row < valid_rows;
  if (p->tile.major == MAJOR_K)
    l.smem_off = tile_offset(&p->tile, l.row, l.col);
  else
    l.smem_off = tile_offset(&p->tile, l.col, l.row);
  return l;
}
