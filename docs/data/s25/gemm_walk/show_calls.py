import collections,sys
d=collections.defaultdict(dict)
for l in open(sys.argv[1]):
    t,i,c=l.split(); d[int(t)][int(i)]=float(c)
w=int(sys.argv[2]) if len(sys.argv)>2 else 11
for t in d:
    v=[d[t][i] for i in sorted(d[t])]
    print(t,len(v),'total',sum(v))
    for mb in range(0,len(v),w):
        print('  ', ' '.join('%6.0f'%x for x in v[mb:mb+w]))
