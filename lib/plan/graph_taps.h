/* Internal: the tap programs of a graph plan (graph_exec.h: ps_gx_member's
 * tap, tap2, rows, inlined_into; lib/codegen/codegen.h: ps_tprog). */
#ifndef PS_GRAPH_TAPS_H
#define PS_GRAPH_TAPS_H

#include "execution/graph_exec.h"

/* For each pointwise member of G whose producer epilogues are all planar
 * sums of unit column stride: its tap program, its two-row form and their
 * rows; the pointwise producers of those sums that qualify are marked
 * inlined; G's bands are as tall as the two-row form needs. Before the tile
 * programs are laid out (the rings of the inlined producers' inputs grow).
 * Nothing where the plan does not compile code. */
ps_status ps_graph_taps_plan(ps_graph_plan *pl, ps_gx_group *G);

/* Sibling sums of G (graph_exec.h: sib_lead, n_sib, stap): after the tile
 * programs are laid out, since the siblings' steps must coincide. */
ps_status ps_graph_sibs_plan(ps_graph_plan *pl, ps_gx_group *G);

/* After compilation: drops the programs without code (their producers or
 * siblings computed again) and the tile-program steps of producers still
 * inlined and of siblings computed by their lead. */
void ps_graph_taps_drop_failed(ps_gx_group *G);

/* Frees M's tap programs and rows. */
void ps_graph_taps_free(ps_gx_member *M);

#endif
