#!/usr/bin/python3
"""docs/perf/selection.md from bench/selection/run.sh's CSVs (`polysci bench conv --random ... --exhaustive
--vs onednn --csv`), given as MODE:FAMILY:SEED:PATH. Per layer: pick efficiency = the fastest variant's time
of the fastest variants / the chosen schedule's, those and the chosen one timed again in alternating trials
among themselves (final_best_ms / final_chosen_ms); in the variants' loops = best_ms (every variant timed in
its own loop) / the chosen schedule's time in the same loops (chosen_series_ms; polysci_ms where the choice is
no ranked variant); the plan in the alternating trials = best_ms / polysci_ms; vs oneDNN = onednn_ms /
polysci_ms; plan_ms = cold plan creation."""
import argparse
import csv
import math
import statistics


def eff_final(r):
    """The choice against the fastest finalists, all timed again in alternating trials among themselves."""
    if r.get("final_chosen_ms") and r.get("final_best_ms"):
        return float(r["final_best_ms"]) / float(r["final_chosen_ms"])
    return eff_series(r)


def eff_series(r):
    """The choice against the fastest variant, both timed in the variants' loops."""
    t = r.get("chosen_series_ms") or r["polysci_ms"]
    return float(r["best_ms"]) / float(t)


def eff_plan(r):
    """The plan in the alternating trials against the fastest variant in its loop."""
    return float(r["best_ms"]) / float(r["polysci_ms"])


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--commit", default="?")
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--command", default="bash bench/selection/run.sh")
    ap.add_argument("--top-k", default="?")
    ap.add_argument("--budget-ms", default="?")
    ap.add_argument("--info", default="")
    a = ap.parse_args()
    rows = {}  # mode -> list of (family, seed, row)
    for spec in a.runs:
        mode, family, seed, path = spec.split(":", 3)
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                rows.setdefault(mode, []).append((family, seed, r))
    out = ["# Selection on generated shapes", "",
           "Convolution layers drawn by `polysci bench conv --random COUNT --seed S --family F` from seeds that no "
           "ranker was trained or tuned on (families: `general` — channels 3-2048, images 7-300, 1x1 to 7x7 and "
           "1x7/7x1 filters, strides 1-2, N 1-4; `few-channel` — 1-16 input channels, 16-96 outputs). Every "
           "variant of each layer is timed (`--exhaustive`), and the plan and oneDNN 2.6 (its blocked layouts, "
           "the faster form) are timed in alternating trials in the same process, 2 threads. *Pick efficiency* = "
           "the fastest finalist's time / the chosen schedule's: the five fastest variants of the exhaustive "
           "pass and the chosen schedule timed again, in alternating trials among themselves (1 = the plan "
           "chose a schedule as fast as the fastest; the fastest of hundreds of noisy timings is biased low, "
           "so the front runners are measured anew beside the choice). *In the variants' loops* = the fastest "
           "variant's time / the chosen schedule's, both from the exhaustive pass. *Plan / fastest* = the "
           "fastest variant's time / the plan's time in the alternating trials with oneDNN: two different "
           "loops of the same process, so values above 1 occur. "
           "*static*: the default options (no timing at plan time); *measured*: `top_k = %s`, "
           "`time_budget_ms = %s` (the expert schedule and the ranker's candidates timed at plan time, kept in "
           "wisdom). Planning times are cold (plan cache emptied, median of 3)." % (a.top_k, a.budget_ms), "",
           "Command: `%s` (commit %s, %d s)." % (a.command, a.commit, a.seconds), ""]
    out += ["| mode | layers | pick efficiency geomean | min | in the variants' loops geomean | min "
            "| plan / fastest geomean | min | vs oneDNN geomean | min | cold plan ms median | max |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for mode in ("static", "measured"):
        rs = [r for _, _, r in rows.get(mode, []) if r.get("best_ms") and r.get("polysci_ms")]
        if not rs:
            continue
        fin = [eff_final(r) for r in rs]
        eff = [eff_series(r) for r in rs]
        plan = [eff_plan(r) for r in rs]
        vs = [float(r["ratio"]) for r in rs if r.get("ratio")]
        pm = [float(r["plan_ms"]) for r in rs if r.get("plan_ms")]
        out.append("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f |" % (
            mode, len(rs), geomean(fin), min(fin), geomean(eff), min(eff), geomean(plan), min(plan),
            geomean(vs) if vs else float("nan"),
            min(vs) if vs else float("nan"), statistics.median(pm) if pm else float("nan"),
            max(pm) if pm else float("nan")))
    out += ["", "Per layer (static | measured; rank = the plan's place among all variants by time; the shapes: "
            "`polysci bench conv --random COUNT --seed S --family F --list`):", "",
            "| layer | family | N | variants | static: eff. | loops | plan / fastest | rank | vs oneDNN | plan ms | "
            "measured: eff. | loops | plan / fastest | rank | vs oneDNN | plan ms |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    meas = {(f, s, r["name"]): r for f, s, r in rows.get("measured", [])}
    for f, s, r in rows.get("static", []):
        m = meas.get((f, s, r["name"]))

        def cells(x):
            if not x or not x.get("best_ms") or not x.get("polysci_ms"):
                return "- | - | - | - | - | -"
            return "%.3f | %.3f | %.3f | %s/%s | %s | %.2f" % (eff_final(x), eff_series(x), eff_plan(x), x["chosen_rank"],
                                                 x["n_variants"], "%.3f" % float(x["ratio"]) if x.get("ratio") else "-",
                                                 float(x["plan_ms"]))
        out.append("| %s | %s | %s | %s | %s | %s |" % (r["name"], f, r["N"], r["n_variants"], cells(r), cells(m)))
    if a.info:
        out += ["", "The machine (`polysci info`):", "", "```text", a.info.strip(), "```"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
