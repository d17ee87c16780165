#!/usr/bin/env python3
"""Session 27: schedules timed as --candidates beside the plan and the default schedule
(64 rows, fixed order), three processes per batch size, in DIR: cand_N*.csv, N{n}_r{r}.csv and
N{n}_r{r}.dist.csv. Prints chosen_ms / schedule_ms per layer, schedule and process (> 1: faster
than the plan).
  m32_short_blocks: the 64-row plans whose width is not a multiple of 6, with 32-row kernels
                    (the plan's width, and 14 columns).
  batch_streamed:   the 32x49 streamed-weights plans with half and a quarter of the batch
                    (sw_layers.txt also holds resnet_17 and fastrcnn_24: the default schedule only).
usage: python3 compare_candidates.py DIR"""
import collections, csv, glob, os, sys
if len(sys.argv) != 2:
    sys.exit(__doc__)
here = sys.argv[1]
res = collections.defaultdict(list)
for f in sorted(glob.glob(os.path.join(here, 'N?_r?.csv'))):
    N = os.path.basename(f)[1]
    chosen = {x['name']: float(x['polysci_ms']) for x in csv.DictReader(open(f))}
    for x in csv.DictReader(open(f[:-4] + '.dist.csv')):
        res[(N, x['name'], x['schedule'])].append(chosen[x['name']] / float(x['ms']))
for k in sorted(res):
    print('N=%s %-12s %-36s' % k, ' '.join('%.3f' % v for v in res[k]))
