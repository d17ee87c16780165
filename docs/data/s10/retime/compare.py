"""Phase 2 of the selection re-timing: per round, the geomean vs oneDNN of the
default plan (polysci_ms), of the phase-1 winner (the --candidates schedule,
timed in the same alternating trials) and of the fixed order (default_ms);
with -v, per layer chosen_ms / winner_ms (> 1: the winner was faster).
usage: python3 compare.py PREFIX [-v]   (run in this directory; PREFIX r50, vgga, ...)"""
import csv, math, statistics, sys
pre = sys.argv[1]
per = {}
for i in (1, 2, 3):
    rows = list(csv.DictReader(open(f'{pre}_p2_{i}.csv')))
    dist = {r['name']: r for r in csv.DictReader(open(f'{pre}_p2_dist{i}.csv'))}
    g = [0.0, 0.0, 0.0]
    for r in rows:
        won, ch, on = float(dist[r['name']]['ms']), float(r['polysci_ms']), float(r['onednn_ms'])
        g[0] += math.log(on / ch); g[1] += math.log(on / won); g[2] += math.log(on / float(r['default_ms']))
        per.setdefault(r['name'], []).append(ch / won)
    n = len(rows)
    print(f'{pre} round {i}: vs oneDNN: chosen {math.exp(g[0]/n):.3f}  phase-1 winners {math.exp(g[1]/n):.3f}  '
          f'fixed order {math.exp(g[2]/n):.3f}')
if '-v' in sys.argv:
    for k, v in per.items():
        print(' ', k, ' '.join('%.3f' % x for x in v), 'median %.3f' % statistics.median(v))
