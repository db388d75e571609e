import json,statistics,re,sys
allv={"wt-base":[],"main":[]}
for f in sys.argv[1:]:
    d={"wt-base":[],"main":[]}
    for l in open(f):
        m=re.match(r"(\d+) (\S+) (\{.*\})",l)
        if m: d[m.group(2)].append(json.loads(m.group(3))["ratio"])
    for k,v in d.items():
        allv[k]+=v
        print(f.split('/')[-1], k, "median %.4f"%statistics.median(v), "range %.4f-%.4f"%(min(v),max(v)), "<=1.30: %d of %d"%(sum(x<=1.30 for x in v),len(v)))
    print("  after lower in", sum(b<a for a,b in zip(d["wt-base"],d["main"])), "of", len(d["main"]))
for k,v in allv.items(): print("all", k, "median %.4f"%statistics.median(v), "range %.4f-%.4f"%(min(v),max(v)), "<=1.30: %d of %d"%(sum(x<=1.30 for x in v),len(v)))
print("  after lower in", sum(b<a for a,b in zip(allv["wt-base"],allv["main"])), "of", len(allv["main"]))
