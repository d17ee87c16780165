import re,collections,statistics as st,sys
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    m=re.search(r'stagger\s+(\S+)(?: \S+)?: polysci ([\d.]+) onednn ([\d.]+) ratio ([\d.]+)',l)
    d[m[1]].append((float(m[2]),float(m[3]),float(m[4])))
for s,v in sorted(d.items()):
    print(s, 'n=%d ratio med %.3f min %.3f max %.3f'%(len(v),st.median(x[2] for x in v),min(x[2] for x in v),max(x[2] for x in v)), 'ps med %.3f'%st.median(x[0] for x in v), 'dnn med %.3f'%st.median(x[1] for x in v))
