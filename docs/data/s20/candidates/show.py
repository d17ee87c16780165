import csv,sys,collections
d=collections.OrderedDict()
for f in sys.argv[1:]:
    for r in csv.DictReader(open(f)):
        d.setdefault(r['name'],collections.OrderedDict()).setdefault(r['schedule'],[]).append(float(r['ms']))
for n,v in d.items():
    base=None
    for k,x in v.items():
        med=sorted(x)[len(x)//2]
        if base is None: base=med
        print("%-12s %-36s %s  %.3f"%(n,k,"/".join("%.4f"%y for y in x),base/med))
