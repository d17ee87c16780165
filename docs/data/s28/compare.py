#!/usr/bin/env python3
"""Session 28: schedules timed as --candidates beside the plan (and the default schedule), three
processes per batch size, in DIR: r{N}_{R}.csv (the bench CSV) and d{N}_{R}.csv (--dist). Prints
plan_ms / schedule_ms per layer, schedule and process (> 1: the schedule ran faster than the plan)
and the plan against oneDNN.
  first_layers_m32_same_loops: merged-tap first layers, the plan's loops with 32-channel blocks.
  first_layers_m32_k_inner:    the same with the output-channel loop innermost (and row tiles).
usage: python3 compare.py DIR"""
import collections, csv, os, sys
if len(sys.argv) != 2:
    sys.exit(__doc__)
d = sys.argv[1]
res = collections.defaultdict(list)
for n in (1, 2):
    for r in (1, 2, 3):
        f = os.path.join(d, 'r%d_%d.csv' % (n, r))
        if not os.path.exists(f):
            continue
        plan = {x['name']: (float(x['polysci_ms']), float(x['onednn_ms'])) for x in csv.DictReader(open(f))}
        for x in csv.DictReader(open(os.path.join(d, 'd%d_%d.csv' % (n, r)))):
            res[(n, x['name'], x['schedule'])].append(plan[x['name']][0] / float(x['ms']))
        for name, (p, o) in plan.items():
            res[(n, name, 'plan / oneDNN')].append(o / p)
for k in sorted(res):
    print('N=%d %-12s %-36s' % k, ' '.join('%.3f' % v for v in res[k]))
