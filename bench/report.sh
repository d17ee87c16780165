#!/usr/bin/env bash
# Every performance table of the documentation from one command.
#
# usage: bash bench/report.sh [--out DIR] [--quick] [--layers] [--pipelines] [--stencils]
#                             [--sets LIST] [--N LIST] [--threads T] [--halide-timeout S]
#                             [--stencil-halide LIST] [--recalibrate] [--fill|--no-fill]
#
# Parts (all three unless some are named):
#   --layers     every conv layer set of bench/layers (--sets, default resnet50 fastrcnn mobilenet alexnet
#                overfeat vgga) at each batch size of --N (default "2 1"), and the GEMM set: polysci's
#                default plans against oneDNN (`polysci bench conv|gemm --vs onednn`), one process per set
#                and batch size. Writes SET.md (geomean and per-layer ratio, GFLOP/s, fraction of the
#                measured peak), csv/SET_N<N>.csv, SET.png, and summary.md (one row per set).
#   --pipelines  `polysci bench pipeline`: polysci's fusion plans and Halide 14's schedules in alternating
#                processes: pipelines.md, csv/pipelines.csv, pipelines.png.
#   --stencils   `polysci bench stencil` where this build has it (else skipped, said so): stencils.md,
#                csv/stencils.csv, stencils.png.
# Always: machine.md (`polysci info` after `polysci info --calibrate`: CPU, caches and each figure's source,
# measured peak and bandwidths; date, commit, package versions, the exact commands, each part's duration)
# and machine.json (the same model as `polysci info --json`: the peak the fractions divide by).
#
# Everything runs serialized, one timing process at a time, and a lock keeps a second report.sh from
# starting beside it. The numbers only mean something on a quiet machine: nothing else running.
#
# --out DIR      where to write (default docs/perf, the committed results; with --quick a new folder
#                under /tmp). Writing into docs/perf also fills the generated blocks of README.md and
#                docs/performance.md (between `<!-- report.sh:NAME begin -->` and `... end -->`) unless
#                --no-fill; --fill fills them from any DIR.
# --quick        tiny rounds and sizes (one batch size, one small GEMM, small images and grids, one round):
#                a few seconds to a minute per part, to test this script, not to measure. The calibration
#                profile then goes into DIR (XDG_CACHE_HOME), not into the machine's cache.
# --sets LIST    conv layer sets of --layers, comma or space separated (default all six)
# --N LIST       their batch sizes (default "2 1"; --quick: 1)
# --threads T    threads of every implementation (default 2)
# --halide-timeout S  limit of one Halide stencil process, compilation included (default: the stencil bench's,
#                600 s); an autoscheduler that runs past it is reported as not finishing
# --stencil-halide LIST  the Halide schedules of --stencils (default the stencil bench's: manual and the three
#                autoschedulers, most of which do not finish on the T-step chains: ~50 of its ~55 minutes);
#                e.g. "manual"
# --recalibrate  measure the machine anew (PS_CALIBRATE=force) instead of loading a saved profile
# Environment: POLYSCI (the CLI, default build/tools/polysci), PYTHON (default /usr/bin/python3).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
P="${POLYSCI:-build/tools/polysci}"
PY="${PYTHON:-/usr/bin/python3}"
OUT="" QUICK=0 THREADS=2 RECAL=0 FILL=1 HTIMEOUT= SHALIDE=   # FILL 0: never, 1: when writing docs/perf, 2: always
SETS="resnet50 fastrcnn mobilenet alexnet overfeat vgga"
NS=""
DO_LAYERS=0 DO_PIPELINES=0 DO_STENCILS=0

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=${2:?--out needs a folder}; shift ;;
    --quick) QUICK=1 ;;
    --layers) DO_LAYERS=1 ;;
    --pipelines) DO_PIPELINES=1 ;;
    --stencils) DO_STENCILS=1 ;;
    --sets) SETS=${2:?--sets needs a list}; shift ;;
    --N) NS=${2:?--N needs a list}; shift ;;
    --threads) THREADS=${2:?--threads needs a number}; shift ;;
    --halide-timeout) HTIMEOUT=${2:?--halide-timeout needs seconds}; shift ;;
    --stencil-halide) SHALIDE=${2:?--stencil-halide needs a list}; shift ;;
    --recalibrate) RECAL=1 ;;
    --no-fill) FILL=0 ;;
    --fill) FILL=2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "report.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
SETS=${SETS//,/ } NS=${NS//,/ }
[ $((DO_LAYERS + DO_PIPELINES + DO_STENCILS)) -eq 0 ] && DO_LAYERS=1 DO_PIPELINES=1 DO_STENCILS=1
case "$THREADS" in '' | *[!0-9]* | 0) echo "report.sh: --threads must be a positive integer" >&2; exit 2 ;; esac
case "$HTIMEOUT" in *[!0-9]* | 0) echo "report.sh: --halide-timeout must be a positive integer" >&2; exit 2 ;; esac
[ -n "$NS" ] || { [ $QUICK = 1 ] && NS="1" || NS="2 1"; }
for n in $NS; do case "$n" in *[!0-9]* | 0) echo "report.sh: --N takes positive integers, not '$n'" >&2; exit 2 ;; esac; done
for s in $SETS; do [ -f "bench/layers/$s.txt" ] || { echo "report.sh: no layer set bench/layers/$s.txt" >&2; exit 2; }; done
bash scripts/install-deps.sh --bench
[ -x "$P" ] || { echo "report.sh: $P is not built (bash scripts/build.sh)" >&2; exit 1; }
[ -x "$PY" ] || { echo "report.sh: $PY not found (set PYTHON)" >&2; exit 1; }

if [ -z "$OUT" ]; then
  if [ $QUICK = 1 ]; then OUT=$(mktemp -d /tmp/polysci-report-quick.XXXXXX) || exit 1; else OUT=docs/perf; fi
fi
mkdir -p "$OUT/csv" || exit 1
OUT=$(cd "$OUT" && pwd)
case "$OUT" in "$ROOT"/*) OUT_REL=${OUT#"$ROOT"/} ;; *) OUT_REL=$OUT ;; esac
[ $FILL = 1 ] && [ "$OUT" != "$ROOT/docs/perf" ] && FILL=0
if [ $QUICK = 1 ] && [ "$OUT" = "$ROOT/docs/perf" ]; then
  echo "report.sh: --quick results are not measurements; pass --out to a folder other than docs/perf" >&2; exit 2
fi
LOG=$(mktemp -d /tmp/polysci-report-logs.XXXXXX) || exit 1
# the code measured: the tree before this run writes its tables and CSVs
commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2> /dev/null)" ] && commit+=" (with uncommitted changes)"

# One report at a time on this machine: two would time each other.
exec 9> /tmp/polysci-report.lock
if ! flock -n 9; then
  echo "report.sh: another bench/report.sh is running (lock /tmp/polysci-report.lock); timings must not overlap" >&2
  exit 1
fi
# A quick run keeps its calibration profile to itself.
[ $QUICK = 1 ] && export XDG_CACHE_HOME="$OUT/cache"
[ $RECAL = 1 ] && export PS_CALIBRATE=force

# Full-run estimates on a quiet 2-core machine (machine.md records what each part really took).
n_layers=0
for s in $SETS; do n_layers=$((n_layers + $(grep -c '^[^#[:space:]]' "bench/layers/$s.txt"))); done
# ~2 s per layer and batch size at 11 trials (polysci, the default schedule and oneDNN after a warm-up,
# plus checks and planning; 334 s for the six sets at N = 2 and 1 with the GEMMs on the Zen 4 VM).
est_layers=$((n_layers * $(echo $NS | wc -w) * 2 + 30))
est_pipelines=400 est_stencils=3300
[ -n "$SHALIDE" ] && est_stencils=400
fmt_min() { printf '%d min' $(( ($1 + 59) / 60 )); }

echo "bench/report.sh: writing into $OUT_REL (logs: $LOG)"
[ $QUICK = 1 ] && echo "  --quick: tiny rounds and sizes; these numbers measure nothing"
parts=""
[ $DO_LAYERS = 1 ] && parts+=" layers" && echo "  layers: sets $SETS, N = $NS, GEMMs; full run ~$(fmt_min $est_layers)"
[ $DO_PIPELINES = 1 ] && parts+=" pipelines" && echo "  pipelines: full run ~$(fmt_min $est_pipelines) (Halide compiles included)"
[ $DO_STENCILS = 1 ] && parts+=" stencils" && echo "  stencils: full run ~$(fmt_min $est_stencils)$([ -z "$SHALIDE" ] && echo ' (its Halide autoschedulers dominate)')"
read -r load1 _ < /proc/loadavg
echo "  load average now: $load1 on $(nproc) CPUs$(awk -v l="$load1" 'BEGIN { if (l > 0.5) print " -- not quiet: timings will be disturbed" }')"
START_LOAD=$load1

: > "$OUT/commands.txt.tmp"
status=0 skipped=""
# run LOGNAME CMD...: one timing process, logged; its command line is recorded as run from the root.
run() {
  local name=$1; shift
  printf '%q ' "$@" | sed 's/ $//' >> "$OUT/commands.txt.tmp"; echo >> "$OUT/commands.txt.tmp"
  printf '  $ %s\n' "$(printf '%q ' "$@")"
  "$@" > "$LOG/$name.log" 2>&1
  local rc=$?
  [ $rc = 0 ] && return 0
  echo "    FAILED (exit $rc): see $LOG/$name.log"; tail -3 "$LOG/$name.log" | sed 's/^/    | /'
  status=1; return 1
}
declare -A took
now() { date +%s; }

# --- the machine ---------------------------------------------------------------------------------------
echo "machine:"
# A calibration the tool does not keep (a busy machine) is reported, not fatal: the model then says
# which figures came from the table, and so do machine.md and every page's machine line.
for what in text json; do
  flag=(); [ $what = json ] && flag=(--json)
  printf '%s\n' "$P info --calibrate ${flag[*]}" | sed 's/ $//' >> "$OUT/commands.txt.tmp"
  printf '  $ %s info --calibrate %s\n' "$P" "${flag[*]}"
  "$P" info --calibrate "${flag[@]}" > "$LOG/info_$what.log" 2>&1 ||
    echo "    (exit $?: the calibration was not kept; see $LOG/info_$what.log)"
done
cp "$LOG/info_text.log" "$LOG/info.txt"
grep '^{' "$LOG/info_json.log" | tail -1 > "$OUT/machine.json"

# --- layers ----------------------------------------------------------------------------------------------
if [ $DO_LAYERS = 1 ]; then
  t0=$(now); echo "layers:"
  rm -f "$OUT"/csv/*_N*.csv "$OUT/csv/gemm.csv"   # nothing stale survives a failed process
  if [ $QUICK = 1 ]; then
    timing=(--reps 1 --min-trial-ms 1 --warmup-ms 0 --plan-reps 1); gemm_only=(--only gemm_256)
  else
    timing=(--reps 11 --plan-reps 3); gemm_only=()
  fi
  for set in $SETS; do
    for n in $NS; do
      run "${set}_N$n" "$P" bench conv --layers "$set" --N "$n" --threads "$THREADS" --vs onednn "${timing[@]}" \
        --csv "$OUT/csv/${set}_N$n.csv" --quiet
    done
  done
  run gemm "$P" bench gemm --layers gemm --threads "$THREADS" --vs onednn "${timing[@]}" "${gemm_only[@]}" \
    --csv "$OUT/csv/gemm.csv" --quiet
  took[layers]=$(( $(now) - t0 ))
fi

# --- pipelines -------------------------------------------------------------------------------------------
if [ $DO_PIPELINES = 1 ]; then
  t0=$(now); echo "pipelines:"
  rm -f "$OUT"/csv/pipelines.* "$OUT"/pipelines.*
  # five rounds: single rounds on the 2-core VMs spread by up to 30%
  if [ $QUICK = 1 ]; then pq=(--width 320 --height 200 --rounds 1 --reps 2 --halide manual); else pq=(--rounds 5); fi
  run pipelines "$P" bench pipeline --threads "$THREADS" "${pq[@]}" \
    --csv "$OUT/csv/pipelines.csv" --markdown "$OUT/csv/pipelines.table.md" --png "$OUT/pipelines.png"
  took[pipelines]=$(( $(now) - t0 ))
fi

# --- stencils --------------------------------------------------------------------------------------------
if [ $DO_STENCILS = 1 ]; then
  t0=$(now); echo "stencils:"
  rm -f "$OUT"/csv/stencils.* "$OUT"/stencils.*
  if "$P" bench stencil --help > "$LOG/stencil_help.txt" 2>&1; then
    # Pass each output and quick option the stencil bench lists in its --help.
    has() { grep -q -- "$1" "$LOG/stencil_help.txt"; }
    sa=(--threads "$THREADS")
    has '--csv' && sa+=(--csv "$OUT/csv/stencils.csv")
    has '--markdown' && sa+=(--markdown "$OUT/csv/stencils.table.md")
    has '--png' && sa+=(--png "$OUT/stencils.png")
    [ -n "$HTIMEOUT" ] && has '--halide-timeout' && sa+=(--halide-timeout "$HTIMEOUT")
    [ -n "$SHALIDE" ] && has '--halide ' && sa+=(--halide "$SHALIDE")
    if [ $QUICK = 1 ]; then
      if has '--quick'; then sa+=(--quick); else has '--rounds' && sa+=(--rounds 1); has '--reps' && sa+=(--reps 1); fi
    fi
    # Without --markdown, its printed table.
    run stencils "$P" bench stencil "${sa[@]}" && ! has '--markdown' && cp "$LOG/stencils.log" "$OUT/csv/stencils.table.md"
  else
    echo "  skipped: this polysci has no 'bench stencil' ($(head -1 "$LOG/stencil_help.txt"))"
    skipped+="stencils (this polysci has no 'bench stencil') "
    parts=${parts/ stencils/}
  fi
  took[stencils]=$(( $(now) - t0 ))
fi

# --- tables, figures, machine.md, the documents' generated blocks ---------------------------------------
durations=""
for k in layers pipelines stencils; do [ -n "${took[$k]:-}" ] && durations+="$k=${took[$k]} "; done
mv "$OUT/commands.txt.tmp" "$LOG/commands.txt"
versions=""
for pkg in libdnnl-dev libxsmm-dev libisl-dev libhwloc-dev python3-halide gcc; do
  v=$(dpkg-query -W -f='${Version}' "$pkg" 2> /dev/null) && versions+="$pkg=$v "
done
"$PY" - "$OUT" "$LOG" "$OUT_REL" "$QUICK" "$THREADS" "$SETS" "$NS" "$parts" "$durations" "$versions" "$commit" \
  "$START_LOAD" "$FILL" "$ROOT" "$skipped" << 'EOF' || status=1
import csv, datetime, json, math, os, platform, re, shutil, subprocess, sys

(out, log, out_rel, quick, threads, sets, ns, parts, durations, versions, commit, load, fill,
 root, skipped) = sys.argv[1:]
quick, threads, fill = quick == "1", int(threads), fill != "0"
sets, ns, parts = sets.split(), [int(n) for n in ns.split()], parts.split()
date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
commands = open(os.path.join(log, "commands.txt")).read().splitlines()
NAMES = {"resnet50": "ResNet-50", "fastrcnn": "Fast R-CNN", "mobilenet": "MobileNet", "alexnet": "AlexNet",
         "overfeat": "OverFeat", "vgga": "VGG-A", "googlenet": "GoogLeNet", "gemm": "GEMMs"}
info = {}
try:
    info = json.load(open(os.path.join(out, "machine.json")))
except (OSError, ValueError):
    pass
peak_core = info.get("peak_gflops_per_core") or float("nan")
peak = peak_core * threads
peak_src = info.get("peak_source", "unknown")
onednn = "oneDNN " + (re.search(r"libdnnl-dev=([0-9.]+)", versions) or re.search("()", "")).group(1)
QUICK_NOTE = ("\n> **--quick run: tiny rounds and sizes, written to test bench/report.sh. "
              "These numbers measure nothing.**\n" if quick else "")


def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def command_for(fragment):
    return next((c for c in commands if fragment in c), "")


def machine_line():
    cpu = info.get("cpu", platform.processor() or "unknown CPU")
    caches = ", ".join(f"L{c['level']} {c['size_bytes'] // 1024} KiB" if c["size_bytes"] < 1 << 20
                       else f"L{c['level']} {c['size_bytes'] >> 20} MiB" for c in info.get("caches", []))
    return (f"{cpu}, {info.get('cores', '?')} cores ({caches}); f32 peak {peak_core:.1f} GFLOP/s per core "
            f"({peak_src}), {threads} threads: {peak:.0f} GFLOP/s; memory {info.get('memory', {}).get('bandwidth_gbs', float('nan')):.1f} GB/s "
            f"({info.get('perf_source', 'unknown')})")


def header(title, what):
    return (f"# {title}\n\n{what}\n\nMachine: {machine_line()} ([machine.md](machine.md)). "
            f"Date: {date}. Commit: {commit}.\n{QUICK_NOTE}")


def layers_file(name):
    shapes = {}
    for line in open(os.path.join(root, "bench", "layers", name + ".txt")):
        f = line.split("#")[0].split()
        if not f:
            continue
        if name == "gemm":
            shapes[f[0]] = f"{f[1]}x{f[2]}x{f[3]}"
        else:
            H, W, C, K, R, S, st, ph, pw = f[1:10]
            pad = "" if ph == pw == "0" else f" pad {ph}" if ph == pw else f" pad {ph},{pw}"
            shapes[f[0]] = f"{H}x{W}, {C}->{K}, {R}x{S}/{st}{pad}"
    return shapes


def read_rows(path):
    try:
        return list(csv.DictReader(open(path)))
    except OSError:
        return None


def num(r, k):
    try:
        return float(r.get(k) or "nan")
    except ValueError:
        return float("nan")


def stats(rows):
    """geomean ratio, min, max, aggregate GFLOP/s of polysci and oneDNN, failures"""
    ratios = [num(r, "ratio") for r in rows]
    flops = [num(r, "polysci_gflops") * num(r, "polysci_ms") for r in rows]  # GFLOP/s x ms = Mflop
    t_ps = sum(num(r, "polysci_ms") for r in rows)
    t_dnn = sum(num(r, "onednn_ms") for r in rows)
    agg_ps = sum(flops) / t_ps if t_ps else float("nan")
    agg_dnn = sum(flops) / t_dnn if t_dnn else float("nan")
    fails = [r["name"] for r in rows if r.get("ok") != "1"]
    return geomean(ratios), min(ratios), max(ratios), agg_ps, agg_dnn, fails


def pct(g):
    return f"{100 * g / peak:.0f}%" if math.isfinite(peak) and peak > 0 and math.isfinite(g) else "-"


def layer_table(rows, shapes, gemm):
    vs = "`dnnl_sgemm`" if gemm else "oneDNN"
    t = [f"| layer | shape | polysci ms | {vs} ms | {vs} / polysci | polysci GFLOP/s | {vs} GFLOP/s "
         f"| polysci % of peak | polysci schedule |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        ok = "" if r.get("ok") == "1" else " **FAIL**"
        t.append(f"| {r['name']}{ok} | {shapes.get(r['name'], '')} | {num(r, 'polysci_ms'):.3f} | "
                 f"{num(r, 'onednn_ms'):.3f} | {num(r, 'ratio'):.3f} | {num(r, 'polysci_gflops'):.1f} | "
                 f"{num(r, 'onednn_gflops'):.1f} | {pct(num(r, 'polysci_gflops'))} | `{r.get('schedule', '')}` |")
    g, lo, hi, agg_ps, agg_dnn, fails = stats(rows)
    s = (f"Geomean {vs} / polysci: **{g:.3f}** over {len(rows)} layers (> 1: polysci faster; lowest {lo:.3f}, "
         f"highest {hi:.3f}). Whole set: polysci {agg_ps:.1f} GFLOP/s ({pct(agg_ps)} of peak), "
         f"{vs} {agg_dnn:.1f} GFLOP/s ({pct(agg_dnn)}).")
    if fails:
        s += f" **Failed checks: {', '.join(fails)}.**"
    return s + "\n\n" + "\n".join(t) + "\n"


def plot(name, series, title, path):
    """Clustered bars of onednn_ms / polysci_ms per layer, one series per batch size."""
    if not shutil.which("gnuplot"):
        print(f"  {os.path.basename(path)}: no gnuplot (apt-get install gnuplot-nox); figure skipped")
        return False
    names = [r["name"] for r in series[0][1]]
    dat = os.path.join(log, name + ".dat")
    with open(dat, "w") as f:
        for i, n in enumerate(names):
            vals = []
            for _, rows in series:
                m = {r["name"]: num(r, "ratio") for r in rows}
                vals.append(f"{m.get(n, float('nan')):.4f}")
            f.write(f"{n} {' '.join(vals)}\n")
    plots = ", ".join(f"'{dat}' using {i + 2}:xtic(1) title '{label}'" for i, (label, _) in enumerate(series))
    script = (f"set terminal pngcairo size {max(640, 28 * len(names) * len(series) + 200)},420 noenhanced; "
              f"set output '{path}'; set style data histograms; set style histogram clustered gap 1; "
              "set style fill solid 0.8 border -1; set xtics rotate by -45; set grid ytics; "
              "set ylabel 'oneDNN time / polysci time (> 1: polysci faster)'; set key top left; "
              f"set title '{title}'; set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2; "
              f"plot {plots}")
    r = subprocess.run(["gnuplot", "-e", script], stderr=subprocess.PIPE, text=True)
    if r.returncode:
        print(f"  {os.path.basename(path)}: gnuplot failed: {r.stderr.strip()}")
    return r.returncode == 0


summary = []
ok = True
if "layers" in parts:
    for s in sets + ["gemm"]:
        shapes = layers_file(s)
        gemm = s == "gemm"
        per_n = [(None, read_rows(os.path.join(out, "csv", "gemm.csv")))] if gemm else \
            [(n, read_rows(os.path.join(out, "csv", f"{s}_N{n}.csv"))) for n in ns]
        doc = [header(f"{NAMES.get(s, s)}: polysci against {'dnnl_sgemm' if gemm else 'oneDNN'}",
                      ("Row-major GEMMs `C = A B` (alpha 1, beta 0), polysci's default plan against oneDNN's "
                       "`dnnl_sgemm`, " if gemm else
                       "Forward f32 convolutions, NHWC activations, polysci's default plan against oneDNN's direct "
                       "convolution (`forward_inference`, layouts of its choice, reorders untimed), ")
                      + f"{threads} threads, alternating trials in one process, medians "
                      "(bench/README.md says exactly what is timed). GFLOP/s are nominal; the peak is the "
                      "measured one of machine.md.")]
        series = []
        for n, rows in per_n:
            frag = f"--csv {out}/csv/{'gemm' if gemm else f'{s}_N{n}'}.csv"
            cmd = command_for(frag).replace(out, out_rel)
            if gemm:
                doc.append("## Every shape\n")
            else:
                doc.append(f"## N = {n}\n")
            if not rows:
                doc.append("Not measured (the run failed; see its log).\n")
                ok = False
                continue
            doc.append(layer_table(rows, shapes, gemm))
            doc.append(f"Reproduce: `{cmd}`\n")
            g, lo, hi, agg_ps, agg_dnn, fails = stats(rows)
            summary.append((s, n, len(rows), g, lo, agg_ps, fails))
            series.append(("all shapes" if gemm else f"N = {n}", rows))
        if series and plot(s, series, f"{NAMES.get(s, s)}: oneDNN time / polysci time, {threads} threads",
                           os.path.join(out, f"{s}.png")):
            doc.append(f"![{NAMES.get(s, s)}: oneDNN / polysci per layer]({s}.png)\n")
        open(os.path.join(out, f"{s}.md"), "w").write("\n".join(doc))
    t = [header("polysci against oneDNN: every layer set",
                f"polysci's default plans against {onednn.strip()}, {threads} threads; geomean of oneDNN time / polysci "
                "time per set (> 1: polysci faster) and the whole set's GFLOP/s (total flops / total time) as a "
                "fraction of the measured peak. Per-layer tables: the linked pages."),
         "| layer set | N | layers | oneDNN / polysci (geomean) | lowest layer | polysci GFLOP/s | of peak |",
         "|---|---:|---:|---:|---:|---:|---:|"]
    for s, n, cnt, g, lo, agg, fails in summary:
        label = f"[{NAMES.get(s, s)}]({s}.md)" + (" vs `dnnl_sgemm`" if s == "gemm" else "")
        t.append(f"| {label} | {n or '-'} | {cnt} | **{g:.3f}** | {lo:.3f} | {agg:.0f} | {pct(agg)} |"
                 + (f" FAILED: {', '.join(fails)}" if fails else ""))
    t.append("\nReproduce: `bash bench/report.sh --layers` (every set; the command of each table is on its page).\n")
    open(os.path.join(out, "summary.md"), "w").write("\n".join(t))


def wrap(part, title, what, table_file, png):
    src = os.path.join(out, table_file)
    if not os.path.exists(src):
        return None
    body = open(src).read()
    cmd = command_for(f"bench {part}").replace(out, out_rel).replace(log, "LOGDIR")
    doc = header(title, what) + "\n" + body.rstrip() + "\n\nReproduce: `" + cmd + "`\n"
    if os.path.exists(os.path.join(out, png)):
        doc += f"\n![{title}]({png})\n"
    open(os.path.join(out, f"{part}s.md"), "w").write(doc)
    return doc


if "pipelines" in parts:
    wrap("pipeline", "Fused pipelines: polysci against Halide 14",
         f"The five benchmark pipelines (docs/graph.md, bench/pipeline/README.md) at full image size, {threads} "
         "threads: polysci's DP-fused plan against its greedy and unfused plans and Halide 14's hand-written and "
         "autoscheduled schedules, every implementation its own process, alternating, medians over rounds. "
         "Floor: the input read and the output written once at the memory bandwidth of machine.md.",
         "csv/pipelines.table.md", "pipelines.png")
if "stencils" in parts:
    wrap("stencil", "Iterated stencils: polysci against Halide 14",
         f"The iterated-stencil benchmarks (docs/iterated.md, bench/stencil/README.md), {threads} threads: "
         "polysci's time-tiled plans against Halide 14's schedules.",
         "csv/stencils.table.md", "stencils.png")

info_txt = open(os.path.join(log, "info.txt")).read().rstrip()
uname = platform.uname()
m = [f"# The machine of the last bench/report.sh run\n", f"- Date: {date}", f"- Commit: {commit}",
     f"- Host: {uname.system} {uname.release} {uname.machine}; load average at the start: {load}",
     f"- Threads of every implementation: {threads}", f"- Packages: {versions.strip() or 'unknown'}",
     f"- Parts: {' '.join(parts) or 'none'}; seconds each: {durations.strip() or '-'}"
     + (f"; skipped: {skipped.strip()}" if skipped.strip() else "")]
if quick:
    m.append(QUICK_NOTE)
m += ["\n## `polysci info --calibrate`\n",
      "What the planner and these tables use: each cache level's size and where it came from, the latency, "
      "bandwidth and peak figures and their source (a saved calibration profile, a measurement just made, or "
      "the built-in table).\n", "```text", info_txt, "```",
      "\n## The commands, in the order run (from the repository root)\n", "```sh"]
m += [c.replace(out, out_rel).replace(log, "LOGDIR") for c in commands]
m += ["```", "\nAll of it: `bash bench/report.sh` (bench/README.md).\n"]
open(os.path.join(out, "machine.md"), "w").write("\n".join(m))


def body(path, shift, title):
    """A page for inclusion: its title (if title) and sections, headings shifted down by shift;
    the description (if not title) without the machine line (the including page names the machine)."""
    if not os.path.exists(path):
        return None
    lines = open(path).read().splitlines()
    first = next((i for i, l in enumerate(lines) if l.startswith("## ")), len(lines))
    keep = ([lines[0], ""] + lines[first:]) if title else \
        [l for l in lines[1:] if not l.startswith("Machine: ") and not l.startswith("> **--quick")]
    return "\n".join(("#" * shift + l if l.startswith("#") else l) for l in keep).strip() + "\n"


def fill_block(path, name, text):
    doc = open(path).read()
    pat = re.compile(r"(<!-- report\.sh:%s begin -->\n).*?(<!-- report\.sh:%s end -->)" % (name, name), re.S)
    if not pat.search(doc):
        print(f"  {os.path.relpath(path, root)}: no block '{name}' to fill")
        return
    open(path, "w").write(pat.sub(lambda mt: mt.group(1) + text.rstrip() + "\n" + mt.group(2), doc))
    print(f"  filled {os.path.relpath(path, root)}: {name}")


if fill:
    readme, perf = os.path.join(root, "README.md"), os.path.join(root, "docs", "performance.md")
    gen = "Generated by `bash bench/report.sh` on %s.\n%s\n" % (date, QUICK_NOTE)
    if "layers" in parts:
        s = open(os.path.join(out, "summary.md")).read().splitlines()
        table = "\n".join(l.replace("](", "](docs/perf/") for l in s if l.startswith("|"))
        fill_block(readme, "summary", gen + f"Machine: {machine_line()}.\n\n" + table + "\n")
        fill_block(perf, "layers", gen + "\n".join(body(os.path.join(out, f"{s}.md"), 2, True)
                                                  for s in sets + ["gemm"] if os.path.exists(os.path.join(out, f"{s}.md"))
                                                  ).replace("](", "](perf/"))
    fill_block(perf, "machine", gen + f"{machine_line()}. Commit {commit}; the full `polysci info` output and "
               "every command: [perf/machine.md](perf/machine.md).\n")
    for part in ("pipelines", "stencils"):
        b = body(os.path.join(out, f"{part}.md"), 1, False) if part in parts else None
        if b:
            fill_block(perf, part, gen + b.replace("](", "](perf/"))
            lines = b.splitlines()
            # A page of several tables (one per stencil) ends with its summary: that one goes to the README.
            summary = next((i for i, l in enumerate(lines) if l.lstrip("#").strip() == "Summary"), None)
            if summary is not None:
                lines = lines[summary:]
            table = [l for l in lines if l.startswith("|")]
            after = [l for l in lines if l.startswith("geomean") or l.startswith("ms: median")]
            fill_block(readme, part, gen + "\n".join(table) + "\n\n" + "\n".join(after + [""]) +
                       f"\nDetails: [docs/perf/{part}.md](docs/perf/{part}.md).\n")

print("wrote:")
for f in sorted(os.listdir(out)):
    if f.endswith(".md") or f.endswith(".png"):
        print(f"  {out_rel}/{f}")
print(f"  {out_rel}/csv/ ({len(os.listdir(os.path.join(out, 'csv')))} CSV files)")
sys.exit(0 if ok else 1)
EOF

[ $status = 0 ] && echo "bench/report.sh: done" || echo "bench/report.sh: done, with failures (logs in $LOG)"
exit $status
