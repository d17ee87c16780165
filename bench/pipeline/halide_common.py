"""Halide 14 harness shared by the pipeline (bench/pipeline) and the iterated-
stencil (bench/stencil) benchmarks: the Bench record, input/output buffers,
the naive and autoscheduler schedules, and the `time` / `dump` commands.

Arrays on the numpy side are planar and C-ordered: (C, H, W) for images,
(N,), (N, N), (N, N, N) for stencil grids, i.e. the reverse of Halide's
dimension order (x fastest).  A Halide buffer's numpy view (np.asarray) has
Halide's dimension order, so `.T` of it is the planar numpy array.

Needs Debian's python3-halide (Halide 14) and /usr/bin/python3.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import halide as hl

f32 = hl.f32
PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu/halide14"
AUTOSCHEDULERS = {
    "mullapudi2016": ("Mullapudi2016", "libautoschedule_mullapudi2016.so"),
    "adams2019": ("Adams2019", "libautoschedule_adams2019.so"),
    "li2018": ("Li2018", "libautoschedule_li2018.so"),
}
SCHEDULES = ("naive", "manual") + tuple(AUTOSCHEDULERS)
INPUT_SEED = 0


class Bench:
    """One freshly built algorithm (new Funcs: a schedule is applied once).

    in_shape / out_shape / out_min are in Halide dimension order (x first);
    stages are the real stages other than the output (boundary-condition
    wrappers and constant tables are not stages: they stay inlined);
    manual(vec) applies the hand schedule; par_dim is the argument the naive
    schedule parallelizes (y for images, the outermost grid axis for
    stencils; None for 1-D grids, which are split into chunks); out_ndim is
    the rank of the planar numpy output (3 for images: a one-channel Halide
    output (x, y) comes back as (1, H, W)); repeat > 1: one run applies the
    pipeline `repeat` times, each output the next input (iterated stencils
    compiled in chunks of steps; input and output shapes equal); pad: the
    input buffer carries `pad` extra cells on each side of its first
    `spatial` dims (a ghost zone, or room for a schedule that reads past the
    input, which Halide rejects otherwise)."""

    def __init__(self, name, inp, output, stages, in_shape, out_shape, manual,
                 out_min=None, par_dim=1, out_ndim=None, repeat=1, spatial=None, info=None):
        self.name = name
        self.input = inp
        self.output = output
        self.stages = stages
        self.in_shape = list(in_shape)
        self.out_shape = list(out_shape)
        self.out_min = list(out_min or [0] * len(out_shape))
        self.manual = manual
        self.par_dim = par_dim
        self.out_ndim = out_ndim or len(out_shape)
        self.repeat = repeat
        self.spatial = spatial or len(in_shape)
        self.pad = 0
        self.info = info or {}


def machine_params(spec=None):
    """(parallelism, last-level cache bytes per core, balance) for the
    autoschedulers.  `spec` ("P,LLC,B") wins, then $HL_MACHINE, else
    P = $HL_NUM_THREADS (or the CPU count), LLC = this CPU's L2 size per core
    (the private cache a core's tile lives in; sysfs), balance 40 (Halide's
    MachineParams::generic value: cost of a load relative to an arithmetic op)."""
    spec = spec or os.environ.get("HL_MACHINE")
    if spec:
        vals = [int(v) for v in spec.split(",")]
        if len(vals) != 3:
            raise ValueError("machine params must be P,LLC,BALANCE: %r" % spec)
        return tuple(vals)
    cores = int(os.environ.get("HL_NUM_THREADS") or os.cpu_count() or 1)
    llc = 1 << 20
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as fh:
            s = fh.read().strip()
        llc = int(s[:-1]) * {"K": 1 << 10, "M": 1 << 20}[s[-1]] if s[-1] in "KM" else int(s)
    except (OSError, ValueError, KeyError):
        pass
    return (cores, llc, 40)


def make_input_array(shape_np, seed=INPUT_SEED):
    """The benchmark input: float32, numpy shape shape_np (planar), uniform in
    [0.05, 1) from numpy's default_rng(seed) (the same draw as
    reference Halide harness for the same shape)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.05, 1.0, size=tuple(shape_np)).astype(np.float32)


def to_halide(arr, pad=0, spatial=None, pad_value=0.5):
    """hl.Buffer (Halide dims = reversed numpy axes) holding a copy of the
    planar array.  pad > 0: the first `spatial` Halide dims (default all) get
    `pad` extra cells on each side filled with pad_value, min = -pad."""
    arr = np.asarray(arr, dtype=np.float32)
    hshape = list(reversed(arr.shape))
    nsp = (spatial or len(hshape)) if pad else 0
    full = [n + 2 * pad if d < nsp else n for d, n in enumerate(hshape)]
    buf = hl.Buffer(hl.Float(32), full)
    view = np.asarray(buf)
    if pad:
        view[...] = pad_value
        view[tuple(slice(pad, pad + n) if d < nsp else slice(None)
                   for d, n in enumerate(hshape))] = arr.T
        buf.set_min([-pad if d < nsp else 0 for d in range(len(hshape))])
    else:
        view[...] = arr.T
    return buf


def fit(factor, extent):
    """A split factor no larger than the extent: Halide's default tail
    strategy for an output (ShiftInwards) needs extent >= factor, so the hand
    schedules use this to also run at small verification sizes (identical at
    benchmark sizes)."""
    return max(1, min(factor, extent))


def from_halide(buf):
    """Planar float32 numpy copy of a Halide buffer."""
    return np.array(np.asarray(buf).T, dtype=np.float32, copy=True)


def make_output(b):
    """Output buffer of a Bench, pre-filled with NaN so that an element a
    schedule fails to write shows up."""
    out = hl.Buffer(hl.Float(32), b.out_shape)
    out.set_min(b.out_min)
    np.asarray(out)[...] = np.nan
    return out


class Runner:
    """Runs a compiled Bench on one input into one output buffer, both
    allocated once (plus, for repeat > 1, one ping-pong buffer)."""

    def __init__(self, b, p, target, inp_buf):
        self.b, self.p, self.target, self.inp = b, p, target, inp_buf
        self.out = make_output(b)
        self.tmp = make_output(b) if b.repeat > 1 else None

    def __call__(self):
        src = self.inp
        for i in range(self.b.repeat):
            # alternate so that the last application writes self.out
            dst = self.out if (self.b.repeat - 1 - i) % 2 == 0 else self.tmp
            self.b.input.set(src)
            self.p.realize(dst, self.target)
            src = dst
        return self.out


def naive(b, vec):
    """Breadth-first, no fusion: every stage (and the output) computed whole,
    rows (the par_dim argument) in parallel, x vectorized.  1-D grids: x split
    into chunks of 64 vectors, chunks in parallel."""
    for f in list(b.stages.values()) + [b.output]:
        args = f.args()
        if f is not b.output:
            f.compute_root()
        if b.par_dim is None:
            xo, xi = hl.Var(f.name() + "_xo"), hl.Var(f.name() + "_xi")
            f.split(args[0], xo, xi, fit(64 * vec, b.out_shape[0])).parallel(xo).vectorize(xi, vec)
        else:
            f.parallel(args[b.par_dim]).vectorize(args[0], vec)


def apply_schedule(b, sched, target, machine):
    """Schedules b in place; returns (Pipeline, info dict)."""
    vec = target.natural_vector_size(hl.Float(32))
    p = hl.Pipeline(b.output)
    info = {}
    if sched == "naive":
        naive(b, vec)
    elif sched == "manual":
        b.manual(vec)
    elif sched in AUTOSCHEDULERS:
        name, lib = AUTOSCHEDULERS[sched]
        hl.load_plugin(os.path.join(PLUGIN_DIR, lib))
        res = p.auto_schedule(name, target, hl.MachineParams(*machine))
        info["schedule_source"] = res.schedule_source
    else:
        raise ValueError("unknown schedule %r (one of %s)" % (sched, ", ".join(SCHEDULES)))
    return p, info


def compile_bench(b, sched, target, machine):
    """Schedule + JIT-compile; returns (pipeline, info) with schedule_s (the
    autoscheduler's time; ~0 for naive/manual) and compile_s (lowering + LLVM)."""
    t0 = time.perf_counter()
    p, info = apply_schedule(b, sched, target, machine)
    t1 = time.perf_counter()
    p.compile_jit(target)
    t2 = time.perf_counter()
    info["schedule_s"] = t1 - t0
    info["compile_s"] = t2 - t1
    return p, info


def planar_output(b, buf):
    """The output buffer as a planar float32 numpy array of rank b.out_ndim."""
    res = from_halide(buf)
    return res.reshape((1,) * (b.out_ndim - res.ndim) + res.shape)


def input_buffer(b, inp_np):
    return to_halide(inp_np, pad=b.pad, spatial=b.spatial)


def run_once(b, sched, inp_np, machine=None, target=None):
    """Schedules and compiles the fresh Bench b, runs it once on the planar
    array inp_np; returns the planar float32 output (rank b.out_ndim)."""
    target = target or hl.get_jit_target_from_environment()
    p, _ = compile_bench(b, sched, target, machine or machine_params())
    return planar_output(b, Runner(b, p, target, input_buffer(b, inp_np))())


def checked_run(make_bench, sched, inp_np, machine, compare):
    """(ok, message): builds a Bench with make_bench(), runs schedule `sched` on
    inp_np and hands the output to compare(out) -> (ok, message).  A build,
    compile or run error is a failed check, not an exception, so a
    verification goes on with the other cases."""
    try:
        b = make_bench()
        return compare(run_once(b, sched, inp_np, machine))
    except Exception as e:
        return False, "FAILED %s" % repr(e)[:300]


def make_parser(doc, benches):
    """The CLI of halide_pipelines.py / halide_stencils.py: MODE (time, dump,
    list), --bench, the schedule and timing options; callers add the sizes."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("mode", choices=["time", "dump", "list"])
    ap.add_argument("--bench", choices=list(benches))
    ap.add_argument("--prefix", default=None, help="dump: write PREFIX_in.npy, PREFIX_out.npy")
    ap.add_argument("--sched", default="naive", choices=SCHEDULES)
    ap.add_argument("--machine", default=None,
                    help="autoscheduler machine params P,LLC_BYTES_PER_CORE,BALANCE "
                         "(default $HL_MACHINE, else threads, L2 per core, 40)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default=None, help="time: also append the JSON line to this file")
    ap.add_argument("--save-schedule", default=None,
                    help="time: write the autoscheduler's schedule source here")
    ap.add_argument("--check", action="store_true",
                    help="time: check the output against the float64 reference after the runs")
    return ap


def cmd_time(b, a, rec, check=None):
    """One bench x schedule: compile (excluded from the times), a.warmup runs,
    then a.reps timed runs into the same output buffer.  Prints one JSON line.
    minflt_per_run: page faults per run -- Halide allocates a compute_root
    intermediate on every run, and glibc serves blocks over its mmap
    threshold (32 MiB at most) with fresh pages, so a schedule with
    image-sized intermediates pays first-touch faults each run.
    check(inp, out) -> (ok, message), if given, judges the output after the
    timed runs (full-size correctness, e.g. against the float64 reference)."""
    target = hl.get_jit_target_from_environment()
    machine = machine_params(a.machine)
    rec.update(sched=a.sched, threads=os.environ.get("HL_NUM_THREADS", "default"),
               machine=list(machine), target=str(target),
               malloc="jemalloc" if "jemalloc" in os.environ.get("LD_PRELOAD", "") else "glibc",
               malloc_conf=os.environ.get("MALLOC_CONF"))
    try:
        p, info = compile_bench(b, a.sched, target, machine)
    except Exception as e:  # a schedule that fails to build is a result, not a crash
        rec.update(status="FAILED", error=repr(e)[:2000])
        _emit(rec, a.out)
        return 1
    rec.update(status="ok", schedule_s=round(info["schedule_s"], 3),
               compile_s=round(info["compile_s"], 3))
    inp = make_input_array(list(reversed(b.in_shape)))
    run = Runner(b, p, target, input_buffer(b, inp))
    ts = []
    try:
        for _ in range(a.warmup):
            run()
        flt0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(a.reps):
            t0 = time.perf_counter()
            run()
            ts.append((time.perf_counter() - t0) * 1e3)
        flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt0
    except Exception as e:  # e.g. a schedule that reads past the input: --pad
        rec.update(status="FAILED", error=repr(e)[:2000])
        _emit(rec, a.out)
        return 1
    rec.update(warmup=a.warmup, reps=a.reps, times_ms=[round(t, 4) for t in ts],
               minflt_per_run=round(flt / max(1, a.reps)),
               median_ms=round(statistics.median(ts), 4) if ts else None,
               nan=int(np.isnan(np.asarray(run.out)).sum()))
    if rec["nan"]:  # the output is NaN-filled once: some of it was never written
        rec["status"] = "INVALID"
    if a.save_schedule and "schedule_source" in info:
        with open(a.save_schedule, "w") as fh:
            fh.write(info["schedule_source"])
    rc = 1 if rec["nan"] else 0
    if check is not None:
        ok, msg = check(inp, planar_output(b, run.out))
        rec.update(check_ok=bool(ok), check=msg)
        rc = rc if ok else 1
    _emit(rec, a.out)
    return rc


def run_command(ap, a, b, rec, check=None):
    """The `time` or `dump` command (a.mode) on the built Bench b; --check
    passes `check` to time."""
    if a.mode == "time":
        return cmd_time(b, a, rec, check if a.check else None)
    if not a.prefix:
        ap.error("dump needs --prefix")
    return cmd_dump(b, a, a.prefix, rec)


def cmd_dump(b, a, prefix, rec):
    """Writes PREFIX_in.npy and PREFIX_out.npy (planar float32) of one run."""
    inp = make_input_array(list(reversed(b.in_shape)))
    out = run_once(b, a.sched, inp, machine_params(a.machine))
    np.save(prefix + "_in.npy", inp)
    np.save(prefix + "_out.npy", out)
    rec.update(sched=a.sched, input=prefix + "_in.npy", output=prefix + "_out.npy",
               in_shape=list(inp.shape), out_shape=list(out.shape),
               out_origin=list(reversed(b.out_min)))
    _emit(rec, None)
    return 0


def _emit(rec, path):
    line = json.dumps(rec)
    print(line, flush=True)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a") as fh:
            fh.write(line + "\n")


def parse_size(s):
    """'WxH' -> (W, H)."""
    try:
        w, h = (int(v) for v in s.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("size must be WxH, e.g. 4256x2832")
    if w < 1 or h < 1:
        raise argparse.ArgumentTypeError("size must be positive")
    return w, h


def warn_quiet():
    import warnings
    warnings.simplefilter("ignore", RuntimeWarning)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
