#!/usr/bin/env python3
"""Geomeans and per-layer means of run.sh's CSVs: v0 the library, v2 the
control (fold computed, discarded), v1 the operands folded into cache.
usage: python3 summary.py [DIR] [--layers]"""
import csv, glob, math, os, sys

d = next((a for a in sys.argv[1:] if not a.startswith('--')), os.path.dirname(os.path.abspath(__file__)))
def load(f): return {x['name']: float(x['ratio']) for x in csv.DictReader(open(f))}
def gm(v): return math.exp(sum(map(math.log, v)) / len(v))
print('| set | N | library (r1 / r2) | control | operands in cache |')
print('|---|---|---|---|---|')
for s in ['resnet50', 'fastrcnn', 'mobilenet', 'alexnet', 'overfeat', 'vgga']:
    for n in (2, 1):
        cells = []
        for v in (0, 2, 1):
            runs = [load(f'{d}/{s}_N{n}_v{v}_r{r}.csv') for r in (1, 2)]
            cells.append(' / '.join(f'{gm(x.values()):.3f}' for x in runs))
        print(f'| {s} | {n} | ' + ' | '.join(cells) + ' |')
if '--layers' in sys.argv:
    for f in sorted(glob.glob(f'{d}/*_v0_r1.csv')):
        base = f[:-len('_v0_r1.csv')]
        runs = {v: [load(f'{base}_v{v}_r{r}.csv') for r in (1, 2)] for v in (0, 2, 1)}
        print(f'\n{os.path.basename(base)}: layer, library, control, in cache (mean of two rounds)')
        for name in runs[0][0]:
            m = [sum(x[name] for x in runs[v]) / 2 for v in (0, 2, 1)]
            print(f'  {name} {m[0]:.3f} {m[1]:.3f} {m[2]:.3f}')
