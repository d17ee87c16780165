import csv, sys, collections
dist, out = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(dist)))
by = collections.defaultdict(list)
for r in rows: by[r['name']].append(r)
with open(out, 'w') as f:
    f.write('name,schedule\n')
    for name, rs in by.items():
        rs.sort(key=lambda r: float(r['ms']))
        f.write('%s,"%s"\n' % (name, rs[0]['schedule']))
        print(name, len(rs), rs[0]['schedule'], rs[0]['ms'], 'worst', rs[-1]['ms'])
