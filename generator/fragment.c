/* fragment.c: which thread and register hold which matrix element.
 *
 * With w = t / 32 the warp of the warpgroup and l = t % 32 its lane, the
 * fp32 accumulator of m64nN keeps in register i the element
 *   row = 16 w + l / 4 + 8 ((i >> 1) & 1)
 *   col = 8 (i >> 2) + 2 (l % 4) + (i & 1)
 * and the register A operand of one k16 step (four u32, two halves each,
 * element e = 2 reg + half) is laid out exactly like an m64n16 accumulator.
 * That equality is what lets an accumulator feed the next product as A.
 */
#include <stdlib.h>

#include "gdngen.h"

/* Terms shared by every map: the thread picks 16 rows per warp, 8 row
 * groups of 4 lanes, and a column pair per lane within the group. */
#define T_WARP {'t', 5, 3, 16}
#define T_ROW {'t', 2, 7, 1}
#define T_COLPAIR {'t', 0, 3, 2}

FragMap frag_acc(int n) {
  FragMap m = {
      .name = "acc",
      .rows = 64,
      .cols = n,
      .regs = n / 2,
      .nrow = 3,
      .ncol = 3,
      .row = {T_WARP, T_ROW, {'r', 1, 1, 8}},
      .col = {{'r', 2, 0, 8}, T_COLPAIR, {'r', 0, 1, 1}},
  };
  return m;
}

FragMap frag_a_k16(void) {
  FragMap m = frag_acc(16);
  m.name = "a_k16";
  return m;
}

static int term_eval(const FragTerm *f, int t, int r) {
  int x = f->var == 't' ? t : r;
  x >>= f->shift;
  if (f->mask)
    x &= f->mask;
  return x * f->scale;
}

Coord frag_eval(const FragMap *m, int t, int r) {
  Coord c = {0, 0};
  for (int i = 0; i < m->nrow; i++)
    c.row += term_eval(&m->row[i], t, r);
  for (int i = 0; i < m->ncol; i++)
    c.col += term_eval(&m->col[i], t, r);
  return c;
}

/* Every (thread, register) must land on a distinct element and together
 * cover the matrix: a fragment map is a bijection or it is wrong. */
int frag_check_bijective(const FragMap *m, Diag *d) {
  int cells = m->rows * m->cols;
  if (m->regs * 128 != cells)
    return diag_fail(d, "fragment %s: 128 x %d registers cannot cover %d x %d", m->name,
                     m->regs, m->rows, m->cols);
  unsigned char *hit = calloc((size_t)cells, 1);
  int rc = 0;
  for (int t = 0; t < 128 && rc == 0; t++)
    for (int r = 0; r < m->regs && rc == 0; r++) {
      Coord c = frag_eval(m, t, r);
      if (c.row < 0 || c.row >= m->rows || c.col < 0 || c.col >= m->cols)
        rc = diag_fail(d, "fragment %s: thread %d reg %d falls outside at (%d, %d)", m->name,
                       t, r, c.row, c.col);
      else if (hit[c.row * m->cols + c.col]++)
        rc = diag_fail(d, "fragment %s: (%d, %d) is held twice (thread %d reg %d)", m->name,
                       c.row, c.col, t, r);
    }
  free(hit);
  return rc;
}

/* A of k16 step j is columns 16j .. 16j+15 of the accumulator, and those
 * are registers 8j .. 8j+7 in the same order as A's elements. */
int frag_acc_as_a(int j, int e) { return 8 * j + e; }

int frag_slice_first(int n, int n0, int w, Diag *d) {
  if (w <= 0 || n0 % 8 != 0 || w % 8 != 0 || n0 < 0 || n0 + w > n)
    return diag_fail(d, "accumulator slice [%d, %d) of m64n%d must be 8-aligned and inside",
                     n0, n0 + w, n);
  return n0 / 2;
}

/* Registers 2p and 2p + 1 of an accumulator-layout map hold, in thread
 * t = 32 w + l, the elements (row0 + 16 w + l / 4, col0 + 2 (l % 4) + e) of
 * one 8 x 8 block: exactly what `ldmatrix .trans` delivers to lane l from
 * the transposed block stored in shared memory. Gives the block origin
 * (for warp 0) and checks that every thread agrees with it. */
int frag_pair_block(const FragMap *m, int p, int *row0, int *col0, Diag *d) {
  Coord o = frag_eval(m, 0, 2 * p);
  *row0 = o.row;
  *col0 = o.col;
  for (int t = 0; t < 128; t++)
    for (int e = 0; e < 2; e++) {
      Coord c = frag_eval(m, t, 2 * p + e);
      int w = t >> 5, l = t & 31;
      if (c.row != o.row + 16 * w + l / 4 || c.col != o.col + 2 * (l % 4) + e)
        return diag_fail(d, "fragment %s: register pair %d of thread %d is not an ldmatrix block",
                         m->name, p, t);
    }
  return 0;
}
