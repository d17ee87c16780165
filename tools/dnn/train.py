#!/usr/bin/python3
"""Trains the PolyScientist-DNN pairwise ranker (paper §5.2.2) and writes it
as C source for the library (lib/ranking/dnn_weights.c).

Data: CSV files written by `polysci bench conv|gemm ... --exhaustive --dist
FILE` (header name,N,threads,rank_by_cost,schedule,ms,gflops,cost,ws_l1,
ws_l2,ws_l3,ws_mem), one row per (layer, variant). A layer is a (file, name,
N, threads) group; its variants are compared pairwise:

  input   each variant's 10 statistics: the Alg. 2 working sets (ws_l1,
          ws_l2, ws_l3, ws_mem: the paper's 4) and the shape statistics
          (kernel_m, kernel_n, kernel_k * kernel_batch, par_iters, par_eff,
          red_steps: what tells apart variants with equal working sets);
          for the pair (A, B): A_i / (A_i + B_i) for each statistic, then
          B_i / (A_i + B_i) (0/0 = 0.5): 20 inputs
  label   class 0 when A is faster, 1 when B is; pairs whose times differ
          by less than --noise (2%) are skipped (measurement noise), and so
          are pairs with identical statistics (the model cannot tell them
          apart); every pair is used in both orders (A, B) and (B, A)
  model   20 -> 64 relu -> 32 relu -> 16 softsign -> 8 relu -> 2 softmax,
          cross-entropy, Adam, mini-batches; float64 while training, shipped
          as float32 (what the C inference uses)

The ranking is the library's (lib/ranking/dnn.c), mirrored here: a game A vs
B is won by A when p[0] > 0.6 (equivalently z0 - z1 > ln 1.5), by B when
p[1] > 0.6, else drawn; every variant plays every other twice (once as A,
once as B); the order is most wins, fewest losses, then the Eq. 1 order
(rank_by_cost, which already breaks cost ties by generation order).

Modes:
  train.py FILES...                 train on every layer; write the weights
                                    (--out) and the test vectors (--vectors)
  train.py --test TEST_FILES... --report R FILES...
                                    train on FILES, rank the layers of
                                    TEST_FILES (another machine's data, or
                                    held-out seeds of generated layers),
                                    write a markdown report; the shipped
                                    weights are not touched
  train.py --holdout-frac 0.3 --split-seed S --report R FILES...
                                    train on 70% of the layer names of each
                                    layer set, rank the held-out 30% with
                                    the tournament and the Eq. 1 cost model,
                                    write a markdown report; the shipped
                                    weights are not touched. --replicate
                                    FILES (a second exhaustive run) also
                                    scores the picks against it; --retimed
                                    FILES (polysci bench --candidates) scores
                                    them against a low-noise re-timing
  --candidates FILE (either mode)   per layer, the schedules worth that
                                    re-timing (tools/dnn/retime.sh)

Deterministic: the same files, options and seed give a bitwise identical
weights file (numpy only, one BLAS thread, float64 training).
"""
import os

# One BLAS thread: reproducible sums, and polite on a shared machine.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import csv  # noqa: E402
import hashlib  # noqa: E402
import math  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LEVELS = ("ws_l1", "ws_l2", "ws_l3", "ws_mem")
# The shape statistics (lib/ranking/rank.h, PS_SHAPE_*); kernel_k and
# kernel_batch enter as their product.
SHAPE = ("kernel_m", "kernel_n", "kernel_k", "kernel_batch", "par_iters", "par_eff", "red_steps")
N_STATS = len(LEVELS) + len(SHAPE) - 1
SIZES = (2 * N_STATS, 64, 32, 16, 8, 2)
ACTS = ("relu", "relu", "softsign", "relu")
THETA = 0.6
# ln(θ / (1 - θ)) as the C code spells it (PS_DNN_LOGIT_THRESHOLD in dnn.h).
LOGIT = np.float32(0.4054651081081644)
assert abs(float(LOGIT) - math.log(THETA / (1 - THETA))) < 1e-7


# ---------------------------------------------------------------- data

class Layer:
    """One layer's variants in Eq. 1 order (rank_by_cost ascending)."""

    def __init__(self, lset, name, n, threads, rows):
        rows.sort(key=lambda r: r[0])
        self.lset, self.name, self.N, self.threads = lset, name, n, threads
        self.rank = np.array([r[0] for r in rows], dtype=np.int64)
        self.ms = np.array([r[1] for r in rows], dtype=np.float64)
        self.stats = np.array([r[2] for r in rows], dtype=np.float64).reshape(-1, N_STATS)
        self.schedule = [r[3] for r in rows]

    @property
    def label(self):
        return "%s (N=%d, %d thr)" % (self.name, self.N, self.threads) if self.N else \
            "%s (%d thr)" % (self.name, self.threads)


def layer_set(path):
    """resnet50_N2_t2.csv -> resnet50; gemm_t2.csv -> gemm; random_few-channel_s203_t2.csv (generated layers,
    tools/dnn/collect_random.sh) -> random_few-channel."""
    parts = os.path.basename(path).split(".")[0].split("_")
    return "_".join(parts[:2]) if parts[0] == "random" and len(parts) > 2 else parts[0]


def file_id(path):
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    rel = os.path.relpath(os.path.abspath(path), REPO)
    return (path if rel.startswith("..") else rel), digest


def load(paths):
    groups = {}
    for path in paths:
        lset = layer_set(path)
        with open(path, newline="") as f:
            rd = csv.DictReader(f)
            need = {"name", "N", "threads", "rank_by_cost", "schedule", "ms"} | set(LEVELS) | set(SHAPE)
            missing = need - set(rd.fieldnames or ())
            if missing:
                sys.exit("%s: not a `polysci bench --dist` file (missing columns %s; files from before the shape "
                         "columns: tools/dnn/add_stats.py)" % (path, sorted(missing)))
            for row in rd:
                try:
                    ms = float(row["ms"])
                    v = {c: float(row[c]) for c in LEVELS + SHAPE}
                    ws = [v[c] for c in LEVELS] + [v["kernel_m"], v["kernel_n"], v["kernel_k"] * v["kernel_batch"],
                                                   v["par_iters"], v["par_eff"], v["red_steps"]]
                except ValueError:
                    continue  # a variant that was not timed
                if not (ms > 0 and math.isfinite(ms)) or not all(math.isfinite(w) and w >= 0 for w in ws):
                    continue
                key = (lset, row["name"], int(row["N"] or 0), int(row["threads"]))
                groups.setdefault(key, []).append((int(row["rank_by_cost"]), ms, ws, row["schedule"]))
    layers = []
    for key in sorted(groups):
        rows = groups[key]
        if len({r[0] for r in rows}) != len(rows):
            sys.exit("layer %s: a rank_by_cost appears twice (the same layer in two files?)" % (key,))
        layers.append(Layer(*key, rows))
    if not layers:
        sys.exit("no usable rows in %s" % " ".join(paths))
    return layers


def features(a, b):
    """The model input for games (a, b): arrays (..., N_STATS) of statistics
    -> (..., 2 N_STATS) float32, as ps_dnn_features computes it (division in
    double)."""
    s = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        fa = np.where(s > 0, a / np.where(s > 0, s, 1.0), 0.5)
        fb = np.where(s > 0, b / np.where(s > 0, s, 1.0), 0.5)
    return np.concatenate([fa, fb], axis=-1).astype(np.float32)


def layer_pairs(layer, noise, focus=0.0):
    """(i, j, y) for i < j: y = 0 when i is faster, 1 when j is. focus > 0
    keeps only pairs whose faster variant is within focus x the layer's best
    (the games that decide the top of the tournament)."""
    n = len(layer.ms)
    i, j = np.triu_indices(n, 1)
    ti, tj = layer.ms[i], layer.ms[j]
    keep = np.abs(ti - tj) >= noise * np.minimum(ti, tj)
    if focus > 0:
        keep &= np.minimum(ti, tj) <= focus * layer.ms.min()
    keep &= np.any(layer.stats[i] != layer.stats[j], axis=1)
    i, j = i[keep], j[keep]
    return i, j, (layer.ms[i] > layer.ms[j]).astype(np.int64)


# ---------------------------------------------------------------- model

def init_params(rng):
    params = []
    for k in range(5):
        fan_in, fan_out = SIZES[k], SIZES[k + 1]
        # He for layers feeding relu, Glorot for softsign and the output.
        std = math.sqrt(2.0 / fan_in) if k < 4 and ACTS[k] == "relu" else math.sqrt(2.0 / (fan_in + fan_out))
        params.append([rng.normal(0.0, std, (fan_out, fan_in)), np.zeros(fan_out)])
    return params


def act(name, z):
    return np.maximum(z, 0) if name == "relu" else z / (1 + np.abs(z))


def act_grad(name, z):
    return (z > 0).astype(z.dtype) if name == "relu" else 1.0 / (1 + np.abs(z)) ** 2


def forward(params, x):
    """Logits, and what the backward pass needs."""
    hs, zs = [x], []
    h = x
    for k, (w, b) in enumerate(params):
        z = h @ w.T + b
        zs.append(z)
        h = act(ACTS[k], z) if k < 4 else z
        hs.append(h)
    return h, hs, zs


def log_softmax(z):
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


def train(layers, args):
    rng = np.random.default_rng(args.seed)
    params = init_params(rng)
    adam = [[np.zeros_like(p) for p in layer] for layer in params]
    adam2 = [[np.zeros_like(p) for p in layer] for layer in params]
    step = 0
    pairs = [layer_pairs(L, args.noise, args.focus) for L in layers]
    n_pairs = sum(len(p[0]) for p in pairs)
    if n_pairs == 0:
        sys.exit("no training pairs (all times within %.0f%% of each other?)" % (100 * args.noise))
    for epoch in range(args.epochs):
        xs, ys = [], []
        for L, (pi, pj, py) in zip(layers, pairs):
            if len(pi) == 0:
                continue
            take = rng.permutation(len(pi))[: args.pairs_per_layer]
            a, b, y = pi[take], pj[take], py[take]
            # Both orders: the model should not care which variant is A.
            xs += [features(L.stats[a], L.stats[b]), features(L.stats[b], L.stats[a])]
            ys += [y, 1 - y]
        x = np.concatenate(xs).astype(np.float64)
        y = np.concatenate(ys)
        order = rng.permutation(len(y))
        total = 0.0
        for s in range(0, len(y), args.batch):
            idx = order[s:s + args.batch]
            xb, yb = x[idx], y[idx]
            z, hs, zs = forward(params, xb)
            lp = log_softmax(z)
            total += -lp[np.arange(len(yb)), yb].sum()
            dz = np.exp(lp)
            dz[np.arange(len(yb)), yb] -= 1.0
            dz /= len(yb)
            step += 1
            for k in range(4, -1, -1):
                w, b = params[k]
                gw, gb = dz.T @ hs[k], dz.sum(axis=0)
                if k > 0:
                    dz = (dz @ w) * act_grad(ACTS[k - 1], zs[k - 1])
                for p, g, m1, m2 in ((w, gw, adam[k][0], adam2[k][0]), (b, gb, adam[k][1], adam2[k][1])):
                    m1 *= 0.9
                    m1 += 0.1 * g
                    m2 *= 0.999
                    m2 += 0.001 * g * g
                    p -= args.lr * (m1 / (1 - 0.9 ** step)) / (np.sqrt(m2 / (1 - 0.999 ** step)) + 1e-8)
        if args.verbose:
            print("epoch %3d: %d samples, loss %.4f" % (epoch + 1, len(y), total / len(y)), file=sys.stderr)
    return params, n_pairs


# ---------------------------------------------------------------- float32 inference + tournament (as lib/ranking/dnn.c)

def to_f32(params):
    return [(w.astype(np.float32), b.astype(np.float32)) for w, b in params]


def logits32(p32, x):
    h = x.astype(np.float32)
    for k, (w, b) in enumerate(p32):
        h = h @ w.T + b
        if k < 4:
            h = act(ACTS[k], h).astype(np.float32)
    return h


def softmax2(z):
    z = z.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def games(p32, ws_a, ws_b):
    """+1 (A wins), -1 (B wins), 0 (draw), and z0 - z1, for games (a, b)."""
    z = logits32(p32, features(ws_a, ws_b))
    d = (z[:, 0] - z[:, 1]).astype(np.float32)
    return np.where(d > LOGIT, 1, np.where(d < -LOGIT, -1, 0)), d


def tournament(p32, ws):
    """ws (statistics vectors) in Eq. 1 order -> (order, wins, losses), as ps_dnn_tournament."""
    n = len(ws)
    g = np.zeros((n, n), dtype=np.int64)
    rows = max(1, 65536 // max(n, 1))
    for i0 in range(0, n, rows):
        ii, jj = np.meshgrid(np.arange(i0, min(n, i0 + rows)), np.arange(n), indexing="ij")
        g[i0:i0 + rows] = games(p32, ws[ii.ravel()], ws[jj.ravel()])[0].reshape(ii.shape)
    np.fill_diagonal(g, 0)
    wins = (g == 1).sum(axis=1) + (g == -1).sum(axis=0)
    losses = (g == -1).sum(axis=1) + (g == 1).sum(axis=0)
    order = sorted(range(n), key=lambda i: (-wins[i], losses[i], i))
    return order, wins, losses


def pair_accuracy(p32, layers, noise):
    """Over non-noise pairs in both orders: (correct decisions, wrong, draws)."""
    right = wrong = draws = 0
    for L in layers:
        i, j, y = layer_pairs(L, noise)
        if len(i) == 0:
            continue
        for a, b, yy in ((i, j, y), (j, i, 1 - y)):
            g = games(p32, L.stats[a], L.stats[b])[0]
            want = np.where(yy == 0, 1, -1)
            right += int((g == want).sum())
            wrong += int((g == -want).sum())
            draws += int((g == 0).sum())
    return right, wrong, draws


# ---------------------------------------------------------------- outputs

def c_float(v):
    return "%.9ef" % float(v)


def c_array(name, a, indent="    "):
    a = np.asarray(a, dtype=np.float32)
    if a.ndim == 1:
        return "%s.%s = {%s}," % (indent, name, ", ".join(c_float(v) for v in a))
    rows = ["%s    {%s}," % (indent, ", ".join(c_float(v) for v in r)) for r in a]
    return "%s.%s = {\n%s\n%s}," % (indent, name, "\n".join(rows), indent)


def command_line():
    return "python3 tools/dnn/train.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def write_weights(path, p32, args, files, n_layers, n_pairs, acc):
    right, wrong, draws = acc
    total = right + wrong + draws
    lines = [
        "/* Generated by tools/dnn/train.py: do not edit; retrain with tools/dnn/retrain.sh",
        " * (docs/cost-model.md, \"DNN ranker\").",
        " *",
        " *   %s" % command_line(),
        " *",
        " * data (file, sha256 prefix):",
    ]
    lines += [" *   %s  %s" % f for f in files]
    if args.note:
        lines += [" * note: %s" % line.replace("*/", "* /") for line in args.note.split("\n")]
    lines += [
        " * %d layers, %d labelled pairs (times >= %g%% apart), seed %d, %d epochs, <= %d pairs per layer and"
        % (n_layers, n_pairs, 100 * args.noise, args.seed, args.epochs, args.pairs_per_layer),
        " * epoch (both orders), batch %d, Adam lr %g." % (args.batch, args.lr),
        " * Training accuracy of these float32 weights over all labelled pairs in both orders, threshold 0.6:",
        " * %.1f%% right, %.1f%% wrong, %.1f%% draws (%d games). */"
        % (100.0 * right / total, 100.0 * wrong / total, 100.0 * draws / total, total),
        '#include "ranking/dnn.h"',
        "",
        "const ps_dnn_model ps_dnn_weights = {",
    ]
    for k, (w, b) in enumerate(p32):
        lines.append(c_array("w%d" % (k + 1), w))
        lines.append(c_array("b%d" % (k + 1), b))
    lines.append("};")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def fmt(v):
    return "%.17g" % v


def write_vectors(path, p32, layers, weights_path, seed):
    """Single games (features and softmax) and whole tournaments, for the C
    test (tests/test_dnn.c) to compare with ps_dnn_* on the same weights."""
    rng = np.random.default_rng(seed)
    rel = os.path.relpath(os.path.abspath(weights_path), REPO)
    out = [
        "# PolyScientist-DNN test vectors: generated by tools/dnn/train.py together with %s" % rel,
        "# (same command; see its header). Checked by tests/test_dnn.c.",
        "# statistics of a variant (ps_dnn_stats): L1 L2 L3 mem m n k*batch par_iters par_eff red_steps",
        "# game <A's statistics> <B's statistics> | x0..x%d | p0 p1 | outcome (+1 A wins, -1 B wins, 0 draw)"
        % (2 * N_STATS - 1),
        "# tournament N, then N lines 'v <statistics>' in Eq. 1 order, then 'order' (Eq. 1 positions, best first),",
        "#   'wins' and 'losses' (per Eq. 1 position)",
    ]
    # Games: edge cases, then pairs from the data and random magnitudes.
    shape = [64, 28, 1024, 16, 1, 4]
    ga = [[0] * N_STATS, [1000, 0, 0, 0] + shape, [0] * N_STATS, [4096, 65536, 1 << 20, 0] + shape,
          list(range(1, N_STATS + 1))]
    gb = [[0] * N_STATS, [0, 0, 0, 0] + shape, [5] * N_STATS, [4096, 65536, 1 << 20, 0] + shape,
          list(range(N_STATS, 0, -1))]
    for L in layers[:8]:
        for _ in range(2):
            a, b = rng.integers(0, len(L.ms), 2)
            ga.append(list(L.stats[a]))
            gb.append(list(L.stats[b]))
    for _ in range(8):
        ga.append(list(np.floor(10 ** rng.uniform(0, 9, N_STATS)) * (rng.random(N_STATS) < 0.8)))
        gb.append(list(np.floor(10 ** rng.uniform(0, 9, N_STATS)) * (rng.random(N_STATS) < 0.8)))
    ga, gb = np.array(ga, dtype=np.float64), np.array(gb, dtype=np.float64)
    x = features(ga, gb)
    p = softmax2(logits32(p32, x))
    g, _ = games(p32, ga, gb)
    for k in range(len(ga)):
        out.append("game %s | %s | %s | %d" % (" ".join(fmt(v) for v in np.concatenate([ga[k], gb[k]])),
                                              " ".join(fmt(v) for v in x[k]), " ".join(fmt(v) for v in p[k]), g[k]))
    # Tournaments: part of a real layer, random statistics (>= 64 distinct:
    # the C code's threaded path) and few distinct vectors shared by many
    # variants (the C code plays distinct vectors only). Sets with a game
    # within 1e-4 of the threshold are redrawn: float32 sums in another order
    # could decide those either way.
    big = max(layers, key=lambda L: len(L.ms))
    cands = []
    for n, src in ((min(80, len(big.ms)), "layer"), (72, "random"), (70, "shared")):
        for _ in range(100):
            if src == "layer":
                ws = big.stats[np.sort(rng.choice(len(big.ms), n, replace=False))]
            elif src == "random":
                ws = np.floor(10 ** rng.uniform(2, 8, (n, N_STATS))) * (rng.random((n, N_STATS)) < 0.85)
            else:
                few = np.floor(10 ** rng.uniform(2, 8, (12, N_STATS))) * (rng.random((12, N_STATS)) < 0.85)
                ws = few[rng.integers(0, 12, n)]
            ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
            d = games(p32, ws[ii.ravel()], ws[jj.ravel()])[1]
            if np.all(np.abs(np.abs(d) - LOGIT) > 1e-4):
                cands.append(ws)
                break
    for ws in cands:
        order, wins, losses = tournament(p32, ws)
        out.append("tournament %d" % len(ws))
        out += ["v %s" % " ".join(fmt(v) for v in w) for w in ws]
        out.append("order %s" % " ".join(str(i) for i in order))
        out.append("wins %s" % " ".join(str(int(v)) for v in wins))
        out.append("losses %s" % " ".join(str(int(v)) for v in losses))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# ---------------------------------------------------------------- evaluation

def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def split(layers, frac, seed):
    """Held-out layer names: per layer set, round(frac * names) of them (at
    least one when the set has two or more), drawn with `seed`."""
    rng = np.random.default_rng(seed)
    held = set()
    for lset in sorted({L.lset for L in layers}):
        names = sorted({L.name for L in layers if L.lset == lset})
        k = int(round(frac * len(names)))
        if len(names) >= 2:
            k = min(max(k, 1), len(names) - 1)
        else:
            k = 0
        held |= {(lset, names[i]) for i in sorted(rng.permutation(len(names))[:k])}
    return held


TOP_K = (4, 16, 32)


def evaluate(p32, layers):
    """Per layer: (layer, Eq. 1 pick efficiency, DNN pick efficiency, n,
    {k: (Eq. 1, DNN) efficiency of the fastest of the k first-ranked})."""
    rows = []
    for L in layers:
        best = L.ms.min()
        order, _, _ = tournament(p32, L.stats)
        topk = {k: (best / L.ms[:k].min(), best / L.ms[order[:k]].min()) for k in TOP_K}
        rows.append((L, best / L.ms[0], best / L.ms[order[0]], len(L.ms), topk))
    return rows


def retimed_scores(p32, layers, replicate):
    """Pick efficiency scored against an independent re-timing of the same
    variants (`replicate`: (lset, name, N, threads) -> {schedule: ms}):
    per layer with a replicate, over the variants timed in both runs,
    (layer, n, oracle, Eq. 1, DNN, DNN top-4), where oracle is the variant
    that was fastest in the first run. The oracle's score is how far one
    run's fastest variant is from another run's: the share of a pick
    efficiency below 1 that is measurement noise."""
    rows = []
    for L in layers:
        rep = replicate.get((L.lset, L.name, L.N, L.threads))
        if not rep:
            continue
        common = [i for i, sch in enumerate(L.schedule) if sch in rep]
        if len(common) < 2:
            continue
        t = {i: rep[L.schedule[i]] for i in common}
        best = min(t.values())
        order, _, _ = tournament(p32, L.stats)
        dnn = [int(i) for i in order if int(i) in t]
        oracle = min(common, key=lambda i: L.ms[i])
        rows.append((L, len(common), best / t[oracle], best / t[common[0]], best / t[dnn[0]],
                     best / min(t[i] for i in dnn[:4])))
    return rows


def load_replicate(paths):
    return {(L.lset, L.name, L.N, L.threads): dict(zip(L.schedule, L.ms)) for L in load(paths)}


def load_retimed(paths):
    """`polysci bench --candidates ... --dist` files: (lset, name, N, threads)
    -> {schedule: ms}. Rows need only name, N, threads, schedule and ms (a
    re-timed schedule need not be a ranked variant). A schedule re-timed in
    several files (repeated runs, one process each) gets the geometric mean of
    its times: what differs between processes (where each plan's buffers
    land, the machine's state) averages out too."""
    runs = {}
    for path in paths:
        lset = layer_set(path)
        with open(path, newline="") as f:
            rd = csv.DictReader(f)
            missing = {"name", "N", "threads", "schedule", "ms"} - set(rd.fieldnames or ())
            if missing:
                sys.exit("%s: not a `polysci bench --dist` file (missing columns %s)" % (path, sorted(missing)))
            for row in rd:
                try:
                    ms = float(row["ms"])
                except ValueError:
                    continue
                if ms > 0 and math.isfinite(ms):
                    key = (lset, row["name"], int(row["N"] or 0), int(row["threads"]))
                    runs.setdefault(key, {}).setdefault(row["schedule"], []).append(ms)
    if not runs:
        sys.exit("no usable rows in %s" % " ".join(paths))
    return {key: {sch: geomean(v) for sch, v in t.items()} for key, t in runs.items()}


def retimed_picks(p32, layers, retimed, replicate=None):
    """Pick efficiency against a low-noise re-timing of each layer's front
    runners (`retimed`: the schedules of train.py --candidates, timed in
    interleaved trials by polysci bench --candidates). Per layer whose picks
    were all re-timed: (layer, n re-timed, oracle, Eq. 1, DNN, DNN top-4,
    two-run oracle or None); best = the fastest re-timed schedule. Oracle:
    the first run's fastest variant; two-run oracle: the fastest by the mean
    of the first run and `replicate`. Also returns the layers left out (a
    pick not re-timed)."""
    rows, missing = [], []
    for L in layers:
        t = retimed.get((L.lset, L.name, L.N, L.threads))
        order, _, _ = tournament(p32, L.stats)
        picks = [int(np.argmin(L.ms)), 0] + [int(i) for i in order[:4]]
        if not t or any(L.schedule[i] not in t for i in picks):
            missing.append(L)
            continue
        best = min(t.values())
        two = None
        rep = replicate.get((L.lset, L.name, L.N, L.threads)) if replicate else None
        if rep:
            both = [i for i, sch in enumerate(L.schedule) if sch in rep]
            if both:
                j = min(both, key=lambda i: L.ms[i] + rep[L.schedule[i]])
                two = best / t[L.schedule[j]] if L.schedule[j] in t else None
        eff = [best / t[L.schedule[i]] for i in picks[:3]]
        rows.append((L, len(t), eff[0], eff[1], eff[2], best / min(t[L.schedule[i]] for i in picks[2:]), two))
    return rows, missing


def average(layers, runs):
    """Replaces each variant's time by the geometric mean of its time and its
    time in `runs` (load_replicate's form), where timed there."""
    for L in layers:
        rep = runs.get((L.lset, L.name, L.N, L.threads))
        if rep:
            for i, sch in enumerate(L.schedule):
                if sch in rep:
                    L.ms[i] = math.sqrt(L.ms[i] * rep[sch])


def write_candidates(path, p32, layers, top, replicate=None):
    """Per layer, the schedules worth re-timing: the `top` fastest of the
    data (and of `replicate`), the Eq. 1 first choice and the DNN's four first
    (columns name, schedule, why; rows of other splits may be appended: the
    bench times each schedule of a layer once)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "schedule", "why"])
        for L in layers:
            seen = set()

            def put(sch, why):
                if sch not in seen:
                    seen.add(sch)
                    w.writerow([L.name, sch, why])
            order, _, _ = tournament(p32, L.stats)
            for k, i in enumerate(order[:4]):
                put(L.schedule[int(i)], "dnn%d" % (k + 1))
            put(L.schedule[0], "eq1")
            for i in np.argsort(L.ms, kind="stable")[:top]:
                put(L.schedule[int(i)], "fastest")
            rep = replicate.get((L.lset, L.name, L.N, L.threads)) if replicate else None
            if rep:
                for sch in sorted(rep, key=lambda s: rep[s])[:top]:
                    put(sch, "replicate_fastest")


def report(p32, train_layers, test_layers, args, files, n_pairs, replicate=None, retimed=None):
    out = []
    ev = evaluate(p32, test_layers)
    acc = pair_accuracy(p32, test_layers, args.noise)
    acc_tr = pair_accuracy(p32, train_layers, args.noise)
    out.append("DNN ranker, held-out evaluation (`%s`)." % command_line())
    out.append("")
    if args.test:
        out.append("Trained on %d layers of %s (%d labelled pairs, training seed %d), evaluated on the %d layers of "
                   "%s, which it never saw (another machine's or other seeds' timings). Pick efficiency = fastest "
                   "variant's time / time of the variant ranked first (1.0 = the ranker found the fastest); geomeans."
                   % (len(train_layers), ", ".join("`%s`" % f[0] for f in files), n_pairs, args.seed,
                      len(test_layers), ", ".join("`%s`" % file_id(p)[0] for p in args.test)))
    else:
        out.append("Data: %s. Trained on %d layers (%d labelled pairs), evaluated on %d held-out layers "
                   "(holdout fraction %g of the layer names per set, split seed %d, training seed %d). "
                   "Pick efficiency = fastest variant's time / time of the variant ranked first "
                   "(1.0 = the ranker found the fastest); geomeans."
                   % (", ".join("`%s`" % f[0] for f in files), len(train_layers), n_pairs, len(test_layers),
                      args.holdout_frac, args.split_seed, args.seed))
    out.append("")
    out.append("| layer set | held-out layers | variants | Eq. 1 pick eff. | DNN pick eff. |")
    out.append("|---|---:|---:|---:|---:|")
    for lset in sorted({r[0].lset for r in ev}):
        rs = [r for r in ev if r[0].lset == lset]
        out.append("| %s | %d | %d | %.3f | %.3f |" % (lset, len(rs), sum(r[3] for r in rs),
                                                     geomean([r[1] for r in rs]), geomean([r[2] for r in rs])))
    out.append("| **all** | %d | %d | **%.3f** | **%.3f** |" % (len(ev), sum(r[3] for r in ev),
                                                                geomean([r[1] for r in ev]), geomean([r[2] for r in ev])))
    out.append("")
    out.append("With `top_k` timing (the fastest of the ranker's k first variants), all held-out layers:")
    out.append("")
    out.append("| k | Eq. 1 | DNN |")
    out.append("|---:|---:|---:|")
    for k in (1,) + TOP_K:
        e = [r[1] if k == 1 else r[4][k][0] for r in ev]
        d = [r[2] if k == 1 else r[4][k][1] for r in ev]
        out.append("| %d | %.3f | %.3f |" % (k, geomean(e), geomean(d)))
    out.append("")
    for what, (r, w, d) in (("held-out", acc), ("training", acc_tr)):
        t = max(1, r + w + d)
        out.append("Pairwise decisions on %s layers (pairs >= %g%% apart, both orders, %d games): "
                   "%.1f%% right, %.1f%% wrong, %.1f%% draws." % (what, 100 * args.noise, r + w + d,
                                                                 100.0 * r / t, 100.0 * w / t, 100.0 * d / t))
    out.append("")
    if replicate:
        out.append("Scored against a second, independent exhaustive run of the same layers (%s): each ranker's "
                   "first choice (and the DNN's fastest of 4) timed in that run, over the variants both runs "
                   "timed. *Oracle* is the variant that was fastest in the first run: what a ranker that "
                   "reproduced the first run's timings exactly would score (a ranker beats it only where the "
                   "first run's fastest was lucky)."
                   % ", ".join("`%s`" % file_id(p)[0] for p in args.replicate))
        out.append("")
        out.append("| layers | count | oracle | Eq. 1 | DNN | DNN top-4 |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for what, ls in (("held-out", test_layers), ("training", train_layers)):
            rs = retimed_scores(p32, ls, replicate)
            if rs:
                out.append("| %s | %d | %.3f | %.3f | %.3f | %.3f |" % (
                    what, len(rs), *(geomean([r[j] for r in rs]) for j in range(2, 6))))
        out.append("")
    rt = {}
    if retimed:
        out.append("Scored against a low-noise re-timing (%s): each layer's front runners (the fastest variants of "
                   "the exhaustive run%s, the Eq. 1 and DNN first choices of every split's model) timed again in one "
                   "process, in interleaved trials (`polysci bench --candidates`; a schedule timed in several such "
                   "runs: the geometric mean); best = the fastest of them. "
                   "*Oracle*: the exhaustive run's fastest variant%s."
                   % (", ".join("`%s`" % file_id(p)[0] for p in args.retimed),
                      "s (and of the replicate)" if replicate else "",
                      "; *two-run oracle*: the fastest by the mean of both exhaustive runs" if replicate else ""))
        out.append("")
        out.append("| layers | count | oracle | two-run oracle | Eq. 1 | DNN | DNN top-4 |")
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for what, ls in (("held-out", test_layers), ("training", train_layers)):
            rs, miss = retimed_picks(p32, ls, retimed, replicate)
            rt.update({id(r[0]): r for r in rs})
            if rs:
                two = [r[6] for r in rs if r[6] is not None]
                out.append("| %s | %d | %.3f | %s | %.3f | %.3f | %.3f |" % (
                    what, len(rs), geomean([r[2] for r in rs]), "%.3f" % geomean(two) if two else "-",
                    *(geomean([r[j] for r in rs]) for j in range(3, 6))))
            if miss:
                out.append("| %s, not re-timed | %d | | | | | |" % (what, len(miss)))
            if what == "held-out":
                for lset in sorted({r[0].lset for r in rs}):
                    rl = [r for r in rs if r[0].lset == lset]
                    two = [r[6] for r in rl if r[6] is not None]
                    out.append("| held-out %s | %d | %.3f | %s | %.3f | %.3f | %.3f |" % (
                        lset, len(rl), geomean([r[2] for r in rl]), "%.3f" % geomean(two) if two else "-",
                        *(geomean([r[j] for r in rl]) for j in range(3, 6))))
        out.append("")
    out.append("Per held-out layer:")
    out.append("")
    out.append("| layer | set | variants | best ms | Eq. 1 pick eff. | DNN pick eff. |%s" % (
        " re-timed: best ms | Eq. 1 | DNN |" if retimed else ""))
    out.append("|---|---|---:|---:|---:|---:|%s" % ("---:|---:|---:|" if retimed else ""))
    for L, e1, ed, n, _ in ev:
        extra = ""
        if retimed:
            r = rt.get(id(L))
            extra = " %.4f | %.3f | %.3f |" % (min(retimed[(L.lset, L.name, L.N, L.threads)].values()), r[3], r[4]) \
                if r else " - | - | - |"
        out.append("| %s | %s | %d | %.4f | %.3f | %.3f |%s" % (L.label, L.lset, n, L.ms.min(), e1, ed, extra))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", nargs="+", help="CSV files from polysci bench ... --exhaustive --dist")
    ap.add_argument("--seed", type=int, default=1, help="training seed (default 1)")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--pairs-per-layer", type=int, default=3000,
                    help="labelled pairs drawn per layer and epoch (default 3000; each used in both orders)")
    ap.add_argument("--focus", type=float, default=1.5,
                    help="train only on pairs whose faster variant is within FOCUS x the layer's best "
                         "(default 1.5; 0: every pair)")
    ap.add_argument("--noise", type=float, default=0.02, help="skip pairs closer than this in time (default 0.02)")
    ap.add_argument("--out", default=os.path.join(REPO, "lib", "ranking", "dnn_weights.c"),
                    help="weights as C source (default lib/ranking/dnn_weights.c)")
    ap.add_argument("--vectors", default=os.path.join(REPO, "tests", "data", "dnn_vectors.txt"),
                    help="test vectors for the C inference (default tests/data/dnn_vectors.txt)")
    ap.add_argument("--holdout-frac", type=float, default=0.0,
                    help="evaluate: train on the other layers only; writes --report, not --out/--vectors")
    ap.add_argument("--split-seed", type=int, default=1, help="seed of the layer split (default 1)")
    ap.add_argument("--report", help="markdown evaluation report (with --holdout-frac or --test)")
    ap.add_argument("--test", nargs="+", metavar="FILE",
                    help="evaluate: train on the data files, rank the layers of these --dist files (another "
                         "machine's folder, held-out seeds of `polysci bench conv --random`); writes --report, "
                         "not --out/--vectors (takes every file up to the next option)")
    ap.add_argument("--replicate", nargs="+", metavar="FILE",
                    help="with --holdout-frac: --dist files of a second exhaustive run of the same layers; the "
                         "report also scores the picks against it (and the first run's fastest: the noise floor); "
                         "takes every file up to the next option, so put it after the data files or before "
                         "another option")
    ap.add_argument("--retimed", nargs="+", metavar="FILE",
                    help="with --holdout-frac: --dist files of `polysci bench --candidates` (a low-noise re-timing "
                         "of the front runners); the report also scores the picks against them (takes every file "
                         "up to the next option, like --replicate)")
    ap.add_argument("--average", nargs="+", metavar="FILE",
                    help="more exhaustive runs of the same layers: each variant's time becomes the geometric mean "
                         "of its times in the data and these files (less noisy labels; takes every file up to the "
                         "next option)")
    ap.add_argument("--candidates", metavar="FILE",
                    help="CSV name,schedule,why per layer: the --candidates-top fastest variants (of the data and "
                         "of --replicate), the Eq. 1 and the trained model's four first choices; the input of "
                         "`polysci bench --candidates` (tools/dnn/retime.sh)")
    ap.add_argument("--candidates-top", type=int, default=6, metavar="K",
                    help="fastest variants per layer and run in --candidates (default 6)")
    ap.add_argument("--note", help="a line for the weights file's header (e.g. where the data came from)")
    ap.add_argument("--verbose", action="store_true", help="loss per epoch on stderr")
    ap.add_argument("--picks", help="CSV name,schedule of the trained model's first choice per layer "
                                    "(for bench/plot_variants.py)")
    args = ap.parse_args()
    if not 0.0 <= args.holdout_frac < 1.0:
        ap.error("--holdout-frac must be in [0, 1)")
    if args.report and args.holdout_frac <= 0 and not args.test:
        ap.error("--report needs --holdout-frac or --test")
    if args.test and args.holdout_frac > 0:
        ap.error("--test and --holdout-frac are two different evaluations: give one")
    if args.retimed and args.holdout_frac <= 0:
        ap.error("--retimed needs --holdout-frac")
    if args.replicate and args.holdout_frac <= 0 and not args.candidates:
        ap.error("--replicate needs --holdout-frac or --candidates")

    files = [file_id(p) for p in args.data] + [file_id(p) for p in args.average or ()]
    layers = load(args.data)
    if args.average:
        average(layers, load_replicate(args.average))
    if args.test:
        te = load(args.test)
        params, n_pairs = train(layers, args)
        text = report(to_f32(params), layers, te, args, files, n_pairs)
        sys.stdout.write(text)
        if args.report:
            with open(args.report, "w") as f:
                f.write(text)
        return
    if args.holdout_frac > 0:
        held = split(layers, args.holdout_frac, args.split_seed)
        tr = [L for L in layers if (L.lset, L.name) not in held]
        te = [L for L in layers if (L.lset, L.name) in held]
        if not te:
            sys.exit("nothing held out (one layer per set?)")
        params, n_pairs = train(tr, args)
        rep = load_replicate(args.replicate) if args.replicate else None
        rtm = load_retimed(args.retimed) if args.retimed else None
        if args.candidates:
            write_candidates(args.candidates, to_f32(params), layers, args.candidates_top, rep)
        text = report(to_f32(params), tr, te, args, files, n_pairs, rep, rtm)
        sys.stdout.write(text)
        if args.report:
            with open(args.report, "w") as f:
                f.write(text)
        return
    params, n_pairs = train(layers, args)
    p32 = to_f32(params)
    acc = pair_accuracy(p32, layers, args.noise)
    write_weights(args.out, p32, args, files, len(layers), n_pairs, acc)
    write_vectors(args.vectors, p32, layers, args.out, args.seed)
    if args.candidates:
        write_candidates(args.candidates, p32, layers, args.candidates_top,
                         load_replicate(args.replicate) if args.replicate else None)
    if args.picks:
        with open(args.picks, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["name", "schedule"])
            for L in layers:
                w.writerow([L.name, L.schedule[tournament(p32, L.stats)[0][0]]])
    r, w, d = acc
    t = max(1, r + w + d)
    shown = [os.path.relpath(p) if not os.path.relpath(p).startswith("..") else p for p in (args.out, args.vectors)]
    print("trained on %d layers, %d labelled pairs: %.1f%% right, %.1f%% wrong, %.1f%% draws; wrote %s and %s"
          % (len(layers), n_pairs, 100.0 * r / t, 100.0 * w / t, 100.0 * d / t, shown[0], shown[1]))


if __name__ == "__main__":
    main()
