#!/usr/bin/env python3
"""Session 26: every 1x1 layer's chosen schedule with 32-row kernels (cand_N*.csv),
timed beside the chosen plan as --candidates (SET_N{n}_r{r}.csv / .dist.csv).
Prints chosen_ms / candidate_ms per layer and round (> 1: 32 rows faster).
usage: python3 compare.py [LAYERS_DIR]   (default ../../../../../shared/layers)"""
import collections, csv, glob, math, os, sys
here = os.path.dirname(os.path.abspath(__file__))
layers = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, '../../../../../shared/layers')
shape = {}
for f in glob.glob(os.path.join(layers, '*.txt')):
    for line in open(f):
        p = line.split()
        if p and not line.startswith('#') and len(p) == 10: shape[p[0]] = [int(v) for v in p[1:]]
cand = {N: {r['name'] for r in csv.DictReader(open(os.path.join(here, 'cand_N%s.csv' % N)))} for N in '12'}
res = collections.defaultdict(dict)
for f in sorted(glob.glob(os.path.join(here, '*_N?_r?.csv'))):
    base, r = f[:-7], f[-5]
    N = base[-1]
    chosen = {x['name']: float(x['polysci_ms']) for x in csv.DictReader(open(f))}
    for x in csv.DictReader(open(base + '_r%s.dist.csv' % r)):
        if x['name'] in cand[N] and x['schedule'].startswith('32x'):
            res[(N, x['name'])][r] = chosen[x['name']] / float(x['ms'])
for N in '12':
    logs = []
    for (n_, name), d in sorted(res.items()):
        if n_ != N: continue
        H, W, C, K, R, S, st = shape[name][:7]
        print('N=%s %-12s %4dx%-4d C=%5d K=%5d stride %d weights %5d KiB: %s' % (
            N, name, H, W, C, K, st, C * K * 4 // 1024, ' '.join('%.3f' % d[k] for k in sorted(d))))
        logs += [math.log(v) for v in d.values()]
    print('N=%s geomean over %d timings: %.3f\n' % (N, len(logs), math.exp(sum(logs) / len(logs))))
