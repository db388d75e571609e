import collections, sys
R=int(sys.argv[1])
res={}
for d in ("wt-base","wt-exp"):
    acc=collections.defaultdict(list)
    for r in range(1,R+1):
        lines=open(f"/tmp/exp/cyc-{d}-{r}.txt").read().split("\n")
        print(d, r, lines[0])
        for l in lines[1:]:
            if l.strip():
                n,a,b=l.split(); acc[n].append((float(a),float(b)))
    res[d]=acc
print(f"{'section':12} {'base mha':>9} {'base hkt':>9} {'exp mha':>9} {'exp hkt':>9}  (min of {R})")
ta=[0,0,0,0]
b,e=res["wt-base"],res["wt-exp"]
for n in b:
    v=[min(x[0] for x in b[n]),min(x[1] for x in b[n]),min(x[0] for x in e[n]),min(x[1] for x in e[n])]
    ta=[p+q for p,q in zip(ta,v)]
    print(f"{n:12} "+" ".join(f"{x:9.1f}" for x in v))
print(f"{'total':12} "+" ".join(f"{x:9.1f}" for x in ta), f" hkt/mha base {ta[1]/ta[0]:.3f} exp {ta[3]/ta[2]:.3f}")
