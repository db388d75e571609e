#!/usr/bin/env python3
"""The tables of scripts/reproduce.sh (issue 17), rebuilt from the committed
results of its runs: RESULTS/<experiment>/<run>/{metrics.jsonl, config.json,
run.txt} for trainings, RESULTS/<experiment>/<run>/output.jsonl for timings
and analyses. Standard library only.

  reproduce_summary.py best-lr RESULTS MODEL "LR ..."
      the sweep's learning rate of MODEL with the best validation accuracy;
      prints nothing while a run of the sweep is unfinished
  reproduce_summary.py figures RESULTS "LR ..."
      one line per curve figure: PNG path, run folders, labels (for hkt-plot)
  reproduce_summary.py summary RESULTS "LR ..." MATCHED_DFF [RESULTS_MD]
      writes RESULTS/summary.md and, when given, replaces the text between
      the summary markers of RESULTS_MD with it

Statistics: mean ± sample standard deviation over seeds; the paired
difference HKT − MHA per seed (the same seed: the same data order) with a
95 % Student-t interval; Welch's t-test of the two groups as a second view.
Verdict rules (docs/RESULTS.md): "not evaluable" unless both groups have 3
seeds and MHA's validation accuracy is at least twice the majority class;
then "confirmed" when the paired interval lies above 0, "contradicted" when
it lies below 0, else "not separable at this budget".
"""
import json
import math
import os
import re
import sys

from reproduce_stats import mean_std, paired_interval, welch

BEGIN, END = "<!-- reproduce-summary:begin -->", "<!-- reproduce-summary:end -->"
SEEDS = (0, 1, 2)
PAPER = {"listops": "HKT-Small 55.10 ± 0.29 % vs retrained MHA 50.33 ± 0.12 %",
         "fmnist": "(sequential CIFAR-10, T = 1024, in the paper: 35.45 ± 0.09 % vs 34.01 ± 0.19 %)"}


# ---- reading runs ------------------------------------------------------------
def read_run(folder):
    """The run's evaluations, test line and config; None when it is not finished."""
    metrics = os.path.join(folder, "metrics.jsonl")
    if not os.path.isfile(metrics):
        return None
    run = {"folder": folder, "evals": [], "step_ms": [], "test": None, "parameters": None}
    with open(metrics) as lines:
        for line in lines:
            entry = json.loads(line)
            if entry["type"] == "eval":
                run["evals"].append((entry["step"], entry["val_accuracy"], entry["val_loss"]))
            elif entry["type"] == "train" and entry["step"] > 1:
                run["step_ms"].append((entry["step"], entry["step_ms"]))
            elif entry["type"] == "test":
                run["test"] = entry
    if run["test"] is None or not run["evals"]:
        return None
    with open(os.path.join(folder, "config.json")) as config:
        run["config"] = json.load(config)
    header = os.path.join(folder, "run.txt")
    resumed_at = 0
    if os.path.isfile(header):
        text = open(header).read()
        found = re.search(r", (\d+) parameters,", text)
        run["parameters"] = int(found.group(1)) if found else None
        found = re.search(r"resuming at step (\d+)", text)
        resumed_at = int(found.group(1)) if found else 0
    # The step time of the machine that finished the run: a run resumed on
    # another machine (begun on a GPU, say) is timed from its resume on.
    run["best_val"] = max(accuracy for _, accuracy, _ in run["evals"])
    run["test_accuracy"] = run["test"]["test_accuracy"]
    times = sorted(ms for step, ms in run["step_ms"] if step > resumed_at)
    run["median_ms"] = times[len(times) // 2] if times else float("nan")
    return run


def read_jsonl(path):
    if not os.path.isfile(path):
        return []
    with open(path) as lines:
        return [json.loads(line) for line in lines if line.strip()]


def best_lr(results, model, lrs):
    scores = []
    for lr in lrs:
        run = read_run(os.path.join(results, "listops-lr", f"{model}-lr{lr}-seed0"))
        if run is None:
            return None
        scores.append((run["best_val"], lr))
    return max(scores, key=lambda score: score[0])[1]  # the first rate of equal scores


def group_runs(results, experiment, names):
    """{seed: run} of the finished runs among `names` (seed → run name)."""
    runs = {}
    for seed, name in names.items():
        run = read_run(os.path.join(results, experiment, name)) if name else None
        if run is not None:
            runs[seed] = run
    return runs


def majority_share(results, split="val"):
    """The largest class's share of the ListOps split, from listops-gen's summary."""
    path = os.path.join(results, "data", "listops-T512", f"{split}.summary.txt")
    if not os.path.isfile(path):
        return None
    found = re.search(r"largest class ([0-9.]+)%", open(path).read())
    return float(found.group(1)) / 100 if found else None


# ---- tables --------------------------------------------------------------------
def percent(value):
    return "–" if value is None or math.isnan(value) else f"{100 * value:.2f}"


def pm(values):
    if not values:
        return "–"
    mean, std = mean_std(values)
    return f"{100 * mean:.2f} ± {100 * std:.2f}" if len(values) > 1 else f"{100 * mean:.2f}"


def pm_ms(values):
    if not values:
        return "–"
    mean, std = mean_std(values)
    return f"{mean:.0f} ± {std:.0f}" if len(values) > 1 else f"{mean:.0f}"


def group_table(groups):
    """groups: [(label, {seed: run})]."""
    out = ["| model | parameters | seeds | best val accuracy % | test accuracy % (best-val model) | step ms (median) |",
           "|---|---|---|---|---|---|"]
    for label, runs in groups:
        values = list(runs.values())
        parameters = next((r["parameters"] for r in values if r["parameters"]), None)
        out.append(f"| {label} | {parameters or '–'} | {len(values)} | {pm([r['best_val'] for r in values])} | "
                   f"{pm([r['test_accuracy'] for r in values])} | "
                   f"{pm_ms([r['median_ms'] for r in values])} |")
    out.append("")
    out.append("Per seed (best val % / test % / best step):")
    out.append("")
    for label, runs in groups:
        cells = [f"seed {seed}: {percent(r['best_val'])} / {percent(r['test_accuracy'])} / {r['test'].get('best_step', '–')}"
                 for seed, r in sorted(runs.items())]
        out.append(f"- {label}: " + ("; ".join(cells) if cells else "no finished run"))
    return out


def comparison(label_a, runs_a, label_b, runs_b, learned_runs=None, majority=None):
    """The paired difference a − b of test accuracy per seed, Welch's test, and the verdict."""
    seeds = sorted(set(runs_a) & set(runs_b))
    differences = [runs_a[s]["test_accuracy"] - runs_b[s]["test_accuracy"] for s in seeds]
    out = [f"Paired difference {label_a} − {label_b} of test accuracy (points), per seed: " +
           (", ".join(f"seed {s}: {100 * d:+.2f}" for s, d in zip(seeds, differences)) or "none yet") + "."]
    if len(differences) >= 2:
        mean, (low, high) = paired_interval(differences)
        out.append(f"Mean {100 * mean:+.2f}, 95 % interval [{100 * low:+.2f}, {100 * high:+.2f}] (Student t, "
                   f"{len(differences) - 1} degrees of freedom).")
    test = welch([r["test_accuracy"] for r in runs_a.values()], [r["test_accuracy"] for r in runs_b.values()])
    if test:
        out.append(f"Welch's t-test: t = {test[0]:.2f}, {test[1]:.1f} degrees of freedom, two-sided p = {test[2]:.3f}.")
    out.append(f"**Verdict: {verdict(differences, runs_a, runs_b, learned_runs, majority)}**")
    return out


def verdict(differences, runs_a, runs_b, learned_runs, majority):
    if len(runs_a) < len(SEEDS) or len(runs_b) < len(SEEDS) or len(differences) < len(SEEDS):
        return f"not evaluable yet ({len(runs_a)} and {len(runs_b)} of {len(SEEDS)} seeds finished)"
    if learned_runs is not None and majority is not None:
        mean_val = mean_std([r["best_val"] for r in learned_runs.values()])[0]
        if mean_val < 2 * majority:
            return (f"not evaluable: the MHA reference did not learn (validation {100 * mean_val:.1f} % < twice the "
                    f"majority class, {200 * majority:.1f} %)")
    _, (low, high) = paired_interval(differences)
    if low > 0:
        return "confirmed (the interval lies above 0)"
    if high < 0:
        return "contradicted (the interval lies below 0)"
    return "not separable at this budget (the interval contains 0)"


def curve_table(groups):
    steps = sorted({step for _, runs in groups for r in runs.values() for step, _, _ in r["evals"]})
    if not steps:
        return []
    out = ["| step | " + " | ".join(label for label, _ in groups) + " |", "|---" * (len(groups) + 1) + "|"]
    for step in steps:
        cells = []
        for _, runs in groups:
            values = [acc for r in runs.values() for s, acc, _ in r["evals"] if s == step]
            cells.append(f"{100 * sum(values) / len(values):.2f}" if values else "")
        out.append(f"| {step} | " + " | ".join(cells) + " |")
    return out


def sweep_table(results, lrs):
    out = ["| model | lr | best val accuracy % (step) | last val accuracy % | test accuracy % | chosen |",
           "|---|---|---|---|---|---|"]
    for model in ("mha", "hkt"):
        chosen = best_lr(results, model, lrs)
        for lr in lrs:
            run = read_run(os.path.join(results, "listops-lr", f"{model}-lr{lr}-seed0"))
            if run is None:
                out.append(f"| {model.upper()} | {lr} | (not finished) | | | |")
                continue
            best_step = max(run["evals"], key=lambda e: e[1])[0]
            out.append(f"| {model.upper()} | {lr} | {percent(run['best_val'])} ({best_step}) | "
                       f"{percent(run['evals'][-1][1])} | {percent(run['test_accuracy'])} | "
                       f"{'yes' if lr == chosen else ''} |")
    return out


def main_runs(results, model, lrs):
    """{seed: run} of the main ListOps comparison: seed 0 is the sweep's run at the chosen rate."""
    lr = best_lr(results, model, lrs)
    runs = group_runs(results, "listops", {s: f"{model}-seed{s}" for s in SEEDS[1:]})
    if lr is not None:
        runs.update(group_runs(results, "listops-lr", {0: f"{model}-lr{lr}-seed0"}))
    return runs


def cost_table(results):
    out = ["| L | MHA ms/step | HKT ms/step | HKT / MHA | score-count bound Σ 4^-l | paper |",
           "|---|---|---|---|---|---|"]
    rows = 0
    for levels in (1, 2, 3, 4):
        # hkt-bench step's output: a machine line, one "bench": "step" line per
        # model, then (newer versions) a "step_pair" line: both models' steps
        # interleaved in one process. Its medians are the ones to compare on a
        # shared machine (a burst of load lands on both); the separate runs are
        # the fallback for older outputs.
        output = read_jsonl(os.path.join(results, "cost", f"step-L{levels}", "output.jsonl"))
        pairs = [line for line in output if line.get("bench") == "step_pair" and "hkt_median_ms" in line]
        lines = {line["model"]: line for line in output if line.get("bench") == "step" and "model" in line}
        if pairs:
            mha, hkt = pairs[-1]["mha_median_ms"], pairs[-1]["hkt_median_ms"]
            ratio = pairs[-1].get("ratio", hkt / mha)  # the median of the per-step ratios
        elif "mha" in lines and "hkt" in lines and "median_ms" in lines["hkt"]:
            mha, hkt = lines["mha"]["median_ms"], lines["hkt"]["median_ms"]
            ratio = hkt / mha
        else:
            continue
        rows += 1
        bound = sum(4.0 ** -l for l in range(levels))
        out.append(f"| {levels} | {mha:.0f} | {hkt:.0f} | {ratio:.2f} | {bound:.4f} | "
                   f"{'1.31×' if levels == 3 else ''} |")
    return out if rows else ["(no timing yet)"]


def analysis_table(results):
    out = ["| model | seeds | κ of the fused score (mean over blocks) | κ per level | antisymmetric share of Wq Wkᵀ |",
           "|---|---|---|---|---|"]
    for model in ("mha", "hkt"):
        fused, shares, per_level = [], [], {}
        for seed in SEEDS:
            lines = read_jsonl(os.path.join(results, "analysis", f"{model}-seed{seed}", "output.jsonl"))
            if not lines:
                continue
            report = lines[-1]
            kappas = [row["kappa"] for row in report["kurtosis"] if row["level"] == "fused" and row["kappa"]]
            fused.append(sum(kappas) / len(kappas))
            for row in report["kurtosis"]:
                if row["level"] != "fused" and row["kappa"]:
                    per_level.setdefault(row["level"], []).append(row["kappa"])
            # ‖M‖² = ‖sym‖² + ‖anti‖²: the antisymmetric part's share of the energy, averaged over heads.
            parts = [row["antisymmetric"] ** 2 / row["norm"] ** 2 for row in report["bilinear"] if row["norm"] > 0]
            shares.append(sum(parts) / len(parts))
        if not fused:
            out.append(f"| {model.upper()} | 0 | (not run) | | |")
            continue
        levels = "; ".join(f"l = {level}: {mean_std(values)[0]:.1f}" for level, values in sorted(per_level.items()))
        out.append(f"| {model.upper()} | {len(fused)} | {mean_std(fused)[0]:.1f}"
                   f"{f' ± {mean_std(fused)[1]:.1f}' if len(fused) > 1 else ''} | {levels} | "
                   f"{100 * mean_std(shares)[0]:.1f} % |")
    return out


def summary(results, lrs, matched_dff):
    majority = majority_share(results)
    mha, hkt = main_runs(results, "mha", lrs), main_runs(results, "hkt", lrs)
    out = ["## ListOps, T = 512: the learning-rate sweep (seed 0)", ""] + sweep_table(results, lrs)
    out += ["", "## ListOps, T = 512: HKT (L = 3) vs MHA", "",
            f"Paper: {PAPER['listops']}. Majority class of the validation split: "
            f"{percent(majority) if majority else '–'} %.", ""]
    groups = [("HKT (L = 3)", hkt), ("MHA", mha)]
    out += group_table(groups) + [""] + comparison("HKT", hkt, "MHA", mha, mha, majority)
    out += ["", "Validation accuracy % during training (mean over the finished seeds):", ""] + curve_table(groups)

    ablation = {name: group_runs(results, "listops-ablation", {s: f"{name}-seed{s}" for s in SEEDS})
                for name in ("hkt-L1", "hkt-L2", "mha-matched")}
    out += ["", "## ListOps ablation: levels and parameter count", "",
            f"HKT L = 1 and L = 2 at HKT's rate, and an MHA with d_ff = {matched_dff} (as many parameters as HKT "
            "L = 3) at MHA's rate; HKT L = 3 and MHA are the runs above. The paper: L = 1 loses most of the gain; "
            "the gain is not from the parameter count.", ""]
    groups = [("HKT L = 1", ablation["hkt-L1"]), ("HKT L = 2", ablation["hkt-L2"]), ("HKT L = 3", hkt),
              ("MHA, parameter-matched", ablation["mha-matched"]), ("MHA", mha)]
    out += group_table(groups) + [""]
    for label, runs in (("HKT L = 1", ablation["hkt-L1"]), ("HKT L = 2", ablation["hkt-L2"]),
                        ("MHA, parameter-matched", ablation["mha-matched"])):
        out += comparison("HKT L = 3", hkt, label, runs, mha, majority) + [""]
    out += ["Validation accuracy % during training:", ""] + curve_table(groups)

    fmnist = {model: group_runs(results, "fmnist", {s: f"{model}-seed{s}" for s in SEEDS}) for model in ("mha", "hkt")}
    out += ["", "## Sequential Fashion-MNIST, T = 784", "",
            f"Paper {PAPER['fmnist']}. Balanced classes: the majority class is 10 %.", ""]
    groups = [("HKT (L = 3)", fmnist["hkt"]), ("MHA", fmnist["mha"])]
    out += group_table(groups) + [""] + comparison("HKT", fmnist["hkt"], "MHA", fmnist["mha"], fmnist["mha"], 0.10)
    out += ["", "Validation accuracy % during training:", ""] + curve_table(groups)

    out += ["", "## Cost per training step, HKT / MHA (hkt-bench step, one thread, steps interleaved)", ""] + cost_table(results)
    out += ["", "## Analysis of the trained ListOps models (hkt-inspect analysis, best-validation checkpoints)", "",
            "Mardia's κ normalised so that a Gaussian gives 1; the paper reports about 33 for trained HKT.", ""]
    out += analysis_table(results)
    return "\n".join(out) + "\n"


def figures(results, lrs):
    """One line per curve figure: its file, the run folders and their labels (tab-separated, commas inside)."""
    mha, hkt = main_runs(results, "mha", lrs), main_runs(results, "hkt", lrs)
    sets = {"listops": [(f"HKT seed {s}", r) for s, r in sorted(hkt.items())] +
                       [(f"MHA seed {s}", r) for s, r in sorted(mha.items())]}
    sets["listops-lr"] = [(f"{model} lr {lr}", os.path.join(results, "listops-lr", f"{model}-lr{lr}-seed0"))
                          for model in ("hkt", "mha") for lr in lrs
                          if read_run(os.path.join(results, "listops-lr", f"{model}-lr{lr}-seed0"))]
    for experiment, names in (("listops-ablation", ("hkt-L1", "hkt-L2", "mha-matched")), ("fmnist", ("hkt", "mha"))):
        sets[experiment] = [(f"{name} seed {s}", os.path.join(results, experiment, f"{name}-seed{s}"))
                            for name in names for s in SEEDS
                            if read_run(os.path.join(results, experiment, f"{name}-seed{s}"))]
    lines = []
    for experiment, runs in sets.items():
        folders = [r if isinstance(r, str) else r["folder"] for _, r in runs]
        if folders:
            lines.append("\t".join([os.path.join(results, experiment, "curves.png"), ",".join(folders),
                                    ",".join(label for label, _ in runs)]))
    return lines


def replace_between_markers(path, text):
    with open(path) as f:
        document = f.read()
    begin, end = document.find(BEGIN), document.find(END)
    if begin < 0 or end < begin:
        sys.exit(f"reproduce_summary.py: {path} has no {BEGIN} ... {END} markers; add them where the tables go")
    with open(path, "w") as f:
        f.write(document[:begin + len(BEGIN)] + "\n" + text + document[end:])


def main(argv):
    if len(argv) >= 4 and argv[0] == "best-lr":
        lr = best_lr(argv[1], argv[2], argv[3].split())
        if lr:
            print(lr)
        return 0
    if len(argv) == 3 and argv[0] == "figures":
        for line in figures(argv[1], argv[2].split()):
            print(line)
        return 0
    if len(argv) in (4, 5) and argv[0] == "summary":
        text = summary(argv[1], argv[2].split(), argv[3])
        os.makedirs(argv[1], exist_ok=True)
        with open(os.path.join(argv[1], "summary.md"), "w") as f:
            f.write(text)
        print(f"wrote {os.path.join(argv[1], 'summary.md')}")
        if len(argv) == 5:
            replace_between_markers(argv[4], text)
            print(f"updated {argv[4]}")
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
