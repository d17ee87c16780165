#!/usr/bin/env python3
"""Session 27: the chosen schedules of the 64-row layers whose width is not a multiple of 6,
with 32-row kernels (same width, and 14 columns), timed beside the plan and the default schedule
(64 rows, fixed order) as --candidates
(cand_N*.csv; N{n}_r{r}.csv / .dist.csv, three processes per batch size).
Prints chosen_ms / schedule_ms per layer, schedule and process (> 1: faster than the plan).
usage: python3 compare.py"""
import collections, csv, glob, os
here = os.path.dirname(os.path.abspath(__file__))
res = collections.defaultdict(list)
for f in sorted(glob.glob(os.path.join(here, 'N?_r?.csv'))):
    base = os.path.basename(f)
    N = base[1]
    chosen = {x['name']: float(x['polysci_ms']) for x in csv.DictReader(open(f))}
    for x in csv.DictReader(open(f[:-4] + '.dist.csv')):
        res[(N, x['name'], x['schedule'])].append(chosen[x['name']] / float(x['ms']))
for k in sorted(res):
    print('N=%s %-12s %-36s' % k, ' '.join('%.3f' % v for v in res[k]))
