/* route.c: which schedule serves a call, and whether the generic pipeline
 * runs as one grid (gdn_fused_plan). Only host-visible facts count: T,
 * N, the head counts, which optional tensors are given, force_generic.
 * cu_seqlens is never read (no device-to-host copy, no synchronisation), so
 * a call stays capturable in a CUDA graph.
 *
 * Specialisations are data: generated/gdn_routes.h holds the exact keys
 * gdngen was configured with (generator/default.routes, docs/routes.md).
 * A call whose key equals a row's takes that row's schedule if this build
 * emitted it; everything else, near misses included, takes the generic
 * pipeline, which serves every valid call. The route reported by
 * gdn_query_route is the one taken, never merely the one configured. */
#include "internal.h"
#include "gdn_routes.h"

/* The contract (shared/reference/gdn.md) gives a specialised route only to
 * calls with both gates; a call without them takes the generic pipeline,
 * which substitutes 1 for a missing one. */
static int gates_given(const gdn_prefill_args *a) { return a->alpha != 0 && a->beta != 0; }

static int key_matches(const gdn_route_key *r, const gdn_prefill_args *a) {
  return r->T == a->T && r->N == a->N && r->Hq == a->Hq && r->Hk == a->Hk && r->Hv == a->Hv &&
         r->init == (a->initial_state != 0) && r->final == (a->final_state != 0);
}

const gdn_route_key *gdn_route_lookup(const gdn_prefill_args *a) {
  if (!gates_given(a))
    return NULL;
  for (int i = 0; i < GDN_ROUTE_ROWS; i++)
    if (key_matches(&gdn_route_table[i], a))
      return &gdn_route_table[i];
  return NULL;
}

gdn_route gdn_route_decide(const gdn_route_key *hit, const gdn_prefill_args *a) {
  if (a->force_generic || !gates_given(a) || !hit || !hit->built)
    return GDN_ROUTE_GENERIC;
  return hit->route;
}

gdn_route gdn_pick_route(const gdn_prefill_args *a, const gdn_plan *plan) {
  (void)plan; /* the plan holds nothing the key does not */
  return gdn_route_decide(gdn_route_lookup(a), a);
}

/* Chunk slots whose units run one to a CTA in gdn_fused. A unit alone on
 * an SM is done in about 5.5 us, two together in about 9.5, and the chain
 * takes about 1.1 us a chunk: singles for the first three slots feed it
 * soonest, and the rest of the first wave, two units a CTA from the start,
 * is done by the time it reaches them. Singles on every free SM left the
 * doubles to a second wave that started after them, and the chains waited
 * for it (H200, docs/generic.md). */
enum { FUSED_SINGLE_SLOTS = 3 };

/* A split launch (docs/generic.md, "Split pairs") takes two SMs a scan CTA
 * and leaves at least this many to the prepare CTAs. */
enum { SPLIT_SPARE_SMS = 16 };

/* A split launch also pays where gdn_prepare is one wave but holds more
 * than one unit on some SM (t1024-hv16: 256 units on 132 SMs). There
 * gdn_scan_pairs' CTAs enter only as whole SMs drain of units, about 7 us
 * in; gdn_fused's chains enter at once and begin on chunk slot 0's units,
 * which run alone. Its chain steps more slowly (0.83 us against 0.77), so
 * where the units fit one an SM (t512, t1024-h8) and the pairs enter as
 * soon, the two grids stay faster (H100, docs/generic.md). */
static int units_share_sms(const gdn_plan *p, int sms) {
  return gdn_prepare_slots(p) * p->Ho > sms;
}

int gdn_fused_plan(const gdn_plan *p, int sms, gdn_fused_grid *g) {
  int64_t nscan = 2 * (int64_t)p->Ho * p->N, units = p->slots * p->Ho;
  int split = nscan <= GDN_SPLIT_MAX_SCAN && 2 * nscan + SPLIT_SPARE_SMS <= sms;
  int waves = units > (int64_t)GDN_PREPARE_CTAS_PER_SM * sms;
  if (2 * nscan > sms || !(waves || (split && units_share_sms(p, sms))))
    return 0;
  g->nscan = (int)nscan;
  g->units = units;
  g->split = split;
  if (g->split) { /* a prepare CTA of runners on each SM the pairs leave, in clusters of two */
    g->single = 0;
    g->ctas = (unsigned)(2 * nscan + ((sms - 2 * nscan) & ~(int64_t)1));
    return 1;
  }
  g->single = sms - (int)nscan; /* SMs the scan leaves */
  if (g->single > FUSED_SINGLE_SLOTS * p->Ho)
    g->single = FUSED_SINGLE_SLOTS * p->Ho;
  g->ctas = (unsigned)(nscan + g->single +
                       (units - g->single + GDN_FUSED_UNITS - 1) / GDN_FUSED_UNITS);
  return 1;
}

/* One sequence uses ceil(T / 64) of its T / 64 + 1 slots: the CTA of the
 * unused one would only take an SM's place (one slot and head per CTA, and
 * the scan waits for the whole grid). */
int64_t gdn_prepare_slots(const gdn_plan *p) {
  return p->N == 1 ? (p->T + 63) / 64 : p->slots;
}

/* A unit of gdn_prepare_lean takes longer alone (5.1 us against 4.5 on the
 * H200) but five share an SM instead of four: it pays where gdn_prepare's
 * units would take more than one wave (n10: 592 CTAs on 132 SMs, n20), not
 * where they all run at once (docs/generic.md). */
int gdn_prepare_lean_plan(const gdn_plan *p, int sms) {
  return gdn_prepare_slots(p) * p->Ho > (int64_t)GDN_PREPARE_CTAS_PER_SM * sms;
}

/* Pairs take the output off the chain's SM (its step 0.86 us instead of
 * 1.06), at the cost of a hand-off across SMs; where the SMs hold every
 * pair at once, no pair waits for an SM. */
int gdn_scan_pairs_plan(const gdn_plan *p, int sms) {
  return 4 * (int64_t)p->Ho * p->N <= sms;
}

/* A CTA for each sequence, head and half takes 2 Ho N SMs. Where that is
 * several waves, each CTA started in a later wave pays its start (the
 * initial state, the first copies) and the end of its output with the SM
 * otherwise idle; so the scan runs as one wave of 2 Ho L CTAs instead,
 * each scanning a lane of sequences one after another (gdn_scan_lanes,
 * scan_items balances them), the copies and output of one sequence
 * overlapping the chain of the next. Measured on the H200: n20's 640 CTAs
 * (4.8 waves) gain, n10's 160 (1.2) lose, so lanes start past two waves
 * (docs/generic.md). Heads that alone take more than the SMs keep a CTA
 * for each sequence. */
enum { LANES_MIN_WAVES = 2 };

int gdn_scan_lanes(const gdn_plan *p, int sms) {
  int64_t per = 2 * (int64_t)p->Ho; /* CTAs of one lane */
  if (per * p->N <= (int64_t)LANES_MIN_WAVES * sms || per > sms)
    return p->N;
  return (int)(sms / per);
}
