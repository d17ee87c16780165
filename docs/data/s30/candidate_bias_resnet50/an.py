import csv, collections, math, sys
for n in (1, 2):
    per = collections.defaultdict(list)
    allr = []
    for r in (1, 2, 3):
        plan = {x['name']: float(x['polysci_ms']) for x in csv.DictReader(open('r%d_%d.csv' % (n, r)))}
        cop = collections.defaultdict(list)
        for x in csv.DictReader(open('d%d_%d.csv' % (n, r))):
            if x['rank_by_cost'] == '' or True:
                cop[x['name']].append((x['schedule'], float(x['ms'])))
        sched = {}
        for x in csv.DictReader(open('r%d_%d.csv' % (n, r))):
            pass
        for name, lst in cop.items():
            # copies: entries whose schedule equals the plan's (appear >= 2 times beyond plan)
            cnt = collections.Counter(s for s, _ in lst)
            ps = max(cnt, key=cnt.get)
            copies = [ms for s, ms in lst if s == ps]
            # first entry in dist is the plan itself
            c = copies[1:] if len(copies) == 3 else copies
            ratio = plan[name] / (sum(c) / len(c))
            per[name].append(ratio)
            allr.append(math.log(ratio))
    print('N=%d geomean plan/copies %.4f' % (n, math.exp(sum(allr) / len(allr))))
    for k in sorted(per):
        print('  %s %s' % (k, ' '.join('%.3f' % v for v in per[k])))
