#!/usr/bin/python3
"""Per set, vs oneDNN in the same alternating trials: the shipped model's first choice, the retrained
model's first choice and the expert schedule (geomeans over the set's layers).
Usage (from this folder): /usr/bin/python3 compare.py 1   (or 2: the run)."""
import collections, csv, math, sys

run = sys.argv[1]
old = {r['name']: r['schedule'] for r in csv.DictReader(open('picks_shipped.csv'))}
new = {r['name']: r['schedule'] for r in csv.DictReader(open('picks_retrained.csv'))}


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


every = collections.defaultdict(list)
for st in "resnet50 fastrcnn mobilenet alexnet overfeat vgga".split():
    ms = collections.defaultdict(dict)
    for r in csv.DictReader(open(f'run{run}_{st}_dist.csv')):
        ms[r['name']][r['schedule']] = float(r['ms'])
    ratios = collections.defaultdict(list)
    for s in csv.DictReader(open(f'run{run}_{st}.csv')):
        n, onednn = s['name'], float(s['onednn_ms'])
        ratios['shipped'].append(onednn / ms[n][old[n]])
        ratios['retrained'].append(onednn / ms[n][new[n]])
        ratios['expert'].append(onednn / float(s['default_ms']))
    for k, v in ratios.items():
        every[k] += v
    print("%-9s" % st, "  ".join("%s %.3f" % (k, geomean(v)) for k, v in ratios.items()))
print("%-9s" % "all", "  ".join("%s %.3f" % (k, geomean(v)) for k, v in every.items()))
