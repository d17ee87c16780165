/* The row-kernel tables (lib/kernels/kernels.h) this CPU runs, each once:
 * AVX-512, AVX2 + FMA and the baseline, as the machine model's vector width
 * selects them; a width whose instructions the CPU lacks falls back to a
 * table already listed. White-box tests run their checks on each. */
#ifndef POLYSCI_TESTS_ROW_TABLES_H
#define POLYSCI_TESTS_ROW_TABLES_H

#include "kernels/kernels.h"

/* Fills tables[] and lanes[] (the vector width that selects each); returns their number (1-3). */
static inline int tu_row_tables(const ps_row_kernels *tables[3], int lanes[3])
{
    static const int widths[3] = {16, 8, 4};
    int n = 0;
    for (int l = 0; l < 3; l++) {
        const ps_row_kernels *k = ps_row_kernels_for(widths[l]);
        int seen = 0;
        for (int j = 0; j < n; j++) seen |= tables[j] == k;
        if (seen) continue;
        lanes[n] = widths[l];
        tables[n++] = k;
    }
    return n;
}

#endif
