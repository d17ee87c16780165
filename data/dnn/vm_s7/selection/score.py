#!/usr/bin/python3
"""Selection quality from one re-timing run (from this folder: /usr/bin/python3 score.py). Per layer the
best is the fastest of everything timed in that layer's alternating trials: the default plan (the shipped
DNN's first choice, polysci_ms), the expert schedule (default_ms) and the candidates (the 6 fastest variants
of ../<set>_N2_t2.csv and the DNN's pick); prints best/chosen geomeans per set."""
import collections, csv, math


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


every_dnn, every_expert = [], []
for st in "resnet50 fastrcnn mobilenet alexnet overfeat vgga".split():
    best = collections.defaultdict(lambda: math.inf)
    for r in csv.DictReader(open(f'{st}_dist.csv')):
        best[r['name']] = min(best[r['name']], float(r['ms']))
    dnn, expert, low = [], [], []
    for r in csv.DictReader(open(f'{st}.csv')):
        chosen, fixed = float(r['polysci_ms']), float(r['default_ms'])
        b = min(best[r['name']], chosen, fixed)
        dnn.append(b / chosen)
        expert.append(b / fixed)
        if dnn[-1] < 0.93:
            low.append("%s %.2f" % (r['name'], dnn[-1]))
    every_dnn += dnn
    every_expert += expert
    print("%-9s %2d layers: DNN %.3f (min %.3f), expert %.3f; DNN below 0.93: %s"
          % (st, len(dnn), geomean(dnn), min(dnn), geomean(expert), ", ".join(low) or "-"))
print("all       %2d layers: DNN %.3f (min %.3f, %d below 0.90), expert %.3f (min %.3f)"
      % (len(every_dnn), geomean(every_dnn), min(every_dnn), sum(v < 0.9 for v in every_dnn),
         geomean(every_expert), min(every_expert)))
