#!/usr/bin/env python3
"""The variant space's bound against oneDNN (bench/space_bound.sh).

  space_bound.py top DIST.csv K OUT.csv
      per layer of an --exhaustive --dist file, the K fastest schedules
      (name,schedule: the --candidates format; OUT '-': stdout)
  space_bound.py table ROUND.csv [ROUND.csv ...]
      per layer and round: the chosen plan's and the best candidate's
      ratio to oneDNN timed in the same alternating trials
      (onednn_ms / polysci_ms and onednn_ms / min(polysci_ms, best_ms)),
      then their geomeans per round and the median over rounds per layer.

The fastest of hundreds of noisy exhaustive timings is biased low (fast
partly by luck), so the bound comes from the re-timed candidates beside
oneDNN, not from the exhaustive minimum.
"""
import collections
import csv
import math
import statistics
import sys


def top(dist, k, out):
    by = collections.OrderedDict()
    for r in csv.DictReader(open(dist)):
        by.setdefault(r['name'], []).append(r)
    f = sys.stdout if out == '-' else open(out, 'w', newline='')
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['name', 'schedule'])
    for name, rs in by.items():
        rs.sort(key=lambda r: float(r['ms']))
        for r in rs[:k]:
            w.writerow([name, r['schedule']])
    if f is not sys.stdout:
        f.close()


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float('nan')


def table(paths):
    rounds = []
    for p in paths:
        rows = {}
        for r in csv.DictReader(open(p)):
            if not r['onednn_ms'] or not r['polysci_ms']:
                sys.exit('%s: %s lacks onednn_ms/polysci_ms (run with --vs onednn)' % (p, r['name']))
            ours, dnn = float(r['polysci_ms']), float(r['onednn_ms'])
            best = min(ours, float(r['best_ms'])) if r['best_ms'] else ours
            rows[r['name']] = (dnn / ours, dnn / best)
        rounds.append(rows)
    names = list(rounds[0])
    print('| layer | chosen / oneDNN (per round) | best of space / oneDNN (per round) | median chosen | median best |')
    print('|---|---|---|---:|---:|')
    med_c, med_b = [], []
    for n in names:
        c = [r[n][0] for r in rounds if n in r]
        b = [r[n][1] for r in rounds if n in r]
        med_c.append(statistics.median(c))
        med_b.append(statistics.median(b))
        print('| %s | %s | %s | %.3f | %.3f |' % (n, ' / '.join('%.3f' % x for x in c),
                                                  ' / '.join('%.3f' % x for x in b), med_c[-1], med_b[-1]))
    gc = [geomean([r[n][0] for n in names if n in r]) for r in rounds]
    gb = [geomean([r[n][1] for n in names if n in r]) for r in rounds]
    print('| **geomean** | %s | %s | %.3f | %.3f |' % (' / '.join('%.3f' % x for x in gc),
                                                      ' / '.join('%.3f' % x for x in gb),
                                                      geomean(med_c), geomean(med_b)))
    lowest = min(zip(med_b, names))
    print('\nlowest best-of-space layer: %s %.3f' % (lowest[1], lowest[0]))


if __name__ == '__main__':
    if len(sys.argv) == 5 and sys.argv[1] == 'top':
        top(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) >= 3 and sys.argv[1] == 'table':
        table(sys.argv[2:])
    else:
        sys.exit(__doc__)
