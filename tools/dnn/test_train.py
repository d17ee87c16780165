"""Tests of the DNN trainer's held-out evaluation (tools/dnn/train.py) on small
synthetic `polysci bench --dist` files: the report's numbers are checked
against values computed here, in particular the --replicate table."""

import csv
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train.py")
HEADER = ["name", "N", "threads", "rank_by_cost", "schedule", "ms", "gflops", "cost", "ws_l1", "ws_l2", "ws_l3",
          "ws_mem", "kernel_m", "kernel_n", "kernel_k", "kernel_batch", "par_iters", "par_eff", "red_steps"]
SETS = ("aset", "bset")
LAYERS, VARIANTS = 4, 24


def make_rows(seed):
    """{set: [row dict]}: per layer VARIANTS variants whose time depends on
    their statistics (so there is something to learn) plus noise."""
    rng = np.random.default_rng(seed)
    out = {}
    for s in SETS:
        rows = []
        for li in range(LAYERS):
            for v in range(VARIANTS):
                ws = rng.uniform(1e3, 1e6, 4)
                km, kn = int(rng.choice([16, 32, 64])), int(rng.choice([7, 14, 28]))
                ms = 1.0 + ws[1] / 1e6 + 8.0 / km + 4.0 / kn + rng.uniform(0, 0.05)
                rows.append({"name": "%s_%02d" % (s, li), "N": 2, "threads": 2, "rank_by_cost": v + 1,
                             "schedule": "%dx%dx64/1 : v%d" % (km, kn, v), "ms": "%.4f" % ms, "gflops": 1,
                             "cost": v, "ws_l1": ws[0], "ws_l2": ws[1], "ws_l3": ws[2], "ws_mem": ws[3],
                             "kernel_m": km, "kernel_n": kn, "kernel_k": 64, "kernel_batch": 1,
                             "par_iters": 8, "par_eff": 1, "red_steps": 1})
        out[s] = rows
    return out


def write_sets(dirname, sets):
    os.makedirs(dirname, exist_ok=True)
    paths = []
    for s, rows in sets.items():
        p = os.path.join(dirname, "%s_N2_t2.csv" % s)
        with open(p, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=HEADER)
            w.writeheader()
            w.writerows(rows)
        paths.append(p)
    return paths


def run_train(args):
    return subprocess.run([sys.executable, TRAIN, "--epochs", "2", "--pairs-per-layer", "100"] + args,
                          capture_output=True, text=True, timeout=300)


def holdout_report(tmp_path, opts, data):
    """Runs a --holdout-frac 0.5 evaluation with `opts`; returns the report's text."""
    report = str(tmp_path / "r.md")
    r = run_train(["--holdout-frac", "0.5"] + opts + ["--report", report] + data)
    assert r.returncode == 0, r.stderr
    with open(report) as f:
        return f.read()


def held_out_names(report):
    """The layer names of the report's per-held-out-layer table."""
    return {m.group(1) for m in re.finditer(r"^\| ((?:aset|bset)_\d+) \(N=2", report, re.M)}


def train_module():
    """tools/dnn/train.py imported (for its functions)."""
    sys.path.insert(0, HERE)
    try:
        import train
    finally:
        sys.path.pop(0)
    return train


def replicate_table(report):
    """{'held-out': (count, oracle, eq1, dnn, top4), 'training': ...}"""
    rows = {}
    for m in re.finditer(r"^\| (held-out|training) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
                         report, re.M):
        rows[m.group(1)] = (int(m.group(2)),) + tuple(float(x) for x in m.group(3, 4, 5, 6))
    return rows


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


def perturbed(sets, change):
    """Another run of `sets`: change(rows) gets a copy of one layer's rows and
    returns (the rows that run has, the expectation for that layer); returns
    ({set: rows}, {layer name: expectation})."""
    out_sets, expect = {}, {}
    for s, rows in sets.items():
        out = []
        for name in sorted({r["name"] for r in rows}):
            layer_rows, expect[name] = change([dict(r) for r in rows if r["name"] == name])
            out += layer_rows
        out_sets[s] = out
    return out_sets, expect


def test_identical_replicate_scores_like_the_first_run(tmp_path):
    sets = make_rows(1)
    data = write_sets(str(tmp_path / "run1"), sets)
    rep = write_sets(str(tmp_path / "run2"), sets)
    text = holdout_report(tmp_path, ["--replicate"] + rep, data)
    table = replicate_table(text)
    assert set(table) == {"held-out", "training"}
    count, oracle, eq1, dnn, top4 = table["held-out"]
    assert count == len(SETS) * 2  # half of each set's 4 layers held out
    assert oracle == 1.0  # the same timings: run 1's fastest is run 2's fastest
    # The in-run columns of the overall row must agree with the replicate row.
    m = re.search(r"^\| \*\*all\*\* \| (\d+) \| \d+ \| \*\*([\d.]+)\*\* \| \*\*([\d.]+)\*\* \|$", text, re.M)
    assert m and int(m.group(1)) == count
    assert (float(m.group(2)), float(m.group(3))) == (eq1, dnn)
    assert dnn <= top4 <= 1.0


def test_replicate_oracle_is_run1_fastest_timed_in_run2(tmp_path):
    sets = make_rows(2)
    data = write_sets(str(tmp_path / "run1"), sets)
    # Run 2: every layer's run-1 fastest variant runs 1.25x slower, and one
    # variant per layer is missing from run 2 (only variants timed in both count).
    def change(lr):
        fastest = min(lr, key=lambda r: float(r["ms"]))
        fastest["ms"] = "%.4f" % (1.25 * float(fastest["ms"]))
        slowest = max(lr, key=lambda r: float(r["ms"]))
        lr = [r for r in lr if r is not slowest]
        return lr, min(float(r["ms"]) for r in lr) / float(fastest["ms"])

    rep_sets, expect = perturbed(sets, change)
    rep = write_sets(str(tmp_path / "run2"), rep_sets)
    text = holdout_report(tmp_path, ["--replicate"] + rep, data)
    table = replicate_table(text)
    held = held_out_names(text)
    assert len(held) == 4
    want_held = geomean([e for n, e in expect.items() if n in held])
    want_train = geomean([e for n, e in expect.items() if n not in held])
    assert table["held-out"][1] == pytest.approx(want_held, abs=6e-4)
    assert table["training"][1] == pytest.approx(want_train, abs=6e-4)
    assert table["held-out"][1] < 1.0


def test_test_files_are_ranked_with_the_model_trained_on_the_data(tmp_path):
    """--test: trained on every layer of the data, the test files' layers
    ranked (another machine's data): its per-layer rows are the test layers,
    and their Eq. 1 pick efficiencies are those of the test files."""
    train_sets = make_rows(7)
    test_sets = {("c" + s[1:]): [dict(r, name="c" + r["name"][1:]) for r in rows] for s, rows in make_rows(8).items()}
    data = write_sets(str(tmp_path / "machine_a"), train_sets)
    test = write_sets(str(tmp_path / "machine_b"), test_sets)
    report = str(tmp_path / "r.md")
    out, vec = str(tmp_path / "w.c"), str(tmp_path / "v.txt")
    r = run_train(["--test"] + test + ["--report", report, "--out", out, "--vectors", vec] + data)
    assert r.returncode == 0, r.stderr
    # an evaluation: the weights and test vectors are not written
    assert not os.path.exists(out) and not os.path.exists(vec)
    text = open(report).read()
    assert "Trained on %d layers" % (len(SETS) * LAYERS) in text
    rows = re.findall(r"^\| ((?:a|b|c)set_\d+) \(N=2, 2 thr\) \| (\w+) \| \d+ \| ([\d.]+) \| ([\d.]+) \|", text, re.M)
    assert sorted(r[0] for r in rows) == sorted({r["name"] for rs in test_sets.values() for r in rs})
    for name, _, best, eq1 in rows:
        layer = [r for rs in test_sets.values() for r in rs if r["name"] == name]
        times = [float(r["ms"]) for r in layer]
        first = [float(r["ms"]) for r in layer if r["rank_by_cost"] == 1][0]
        assert float(best) == pytest.approx(min(times), abs=1e-4)
        assert float(eq1) == pytest.approx(min(times) / first, abs=6e-4)
    r = run_train(["--test"] + test + ["--holdout-frac", "0.5"] + data)
    assert r.returncode == 2 and "two different evaluations" in r.stderr


def test_replicate_needs_holdout(tmp_path):
    data = write_sets(str(tmp_path / "run1"), make_rows(3))
    r = run_train(data + ["--replicate"] + data)
    assert r.returncode == 2
    assert "--replicate needs --holdout-frac" in r.stderr


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_candidates_are_the_front_runners(tmp_path):
    sets = make_rows(4)
    data = write_sets(str(tmp_path / "run1"), sets)
    cands = str(tmp_path / "c.csv")
    r = run_train(["--holdout-frac", "0.5", "--candidates", cands, "--candidates-top", "3"] + data)
    assert r.returncode == 0, r.stderr
    rows = read_csv(cands)
    assert set(rows[0]) == {"name", "schedule", "why"}
    assert len({(c["name"], c["schedule"]) for c in rows}) == len(rows)  # each schedule once per layer
    for s, lrows in sets.items():
        for name in sorted({x["name"] for x in lrows}):
            mine = [c for c in rows if c["name"] == name]
            have = {c["schedule"] for c in mine}
            lr = sorted((x for x in lrows if x["name"] == name), key=lambda x: float(x["ms"]))
            assert {x["schedule"] for x in lr[:3]} <= have  # the 3 fastest
            assert next(x["schedule"] for x in lrows if x["name"] == name and x["rank_by_cost"] == 1) in have
            # the DNN's four first choices lead, in order (a repeat would be listed once)
            assert [c["why"] for c in mine[:4]] == ["dnn1", "dnn2", "dnn3", "dnn4"]
            assert len(mine) <= 4 + 1 + 3


def retimed_table(report):
    """{'held-out': (count, oracle, two-run oracle or None, eq1, dnn, top4), ...} of the --retimed table."""
    rows = {}
    for m in re.finditer(r"^\| (held-out|training) \| (\d+) \| ([\d.]+) \| ([\d.]+|-) \| ([\d.]+) \| ([\d.]+) \| "
                         r"([\d.]+) \|$", report, re.M):
        two = None if m.group(4) == "-" else float(m.group(4))
        rows[m.group(1)] = (int(m.group(2)), float(m.group(3)), two) + tuple(float(x) for x in m.group(5, 6, 7))
    return rows


def test_retimed_scores_against_the_retimed_best(tmp_path):
    sets = make_rows(5)
    data = write_sets(str(tmp_path / "run1"), sets)
    # The re-timing: every variant at its run-1 time, except that each layer's
    # run-1 fastest runs 1.2x slower and Eq. 1's first choice 0.9x (faster).
    def change(lr):
        fastest = min(lr, key=lambda x: float(x["ms"]))
        first = next(x for x in lr if x["rank_by_cost"] == 1)
        fastest["ms"] = "%.6f" % (1.2 * float(fastest["ms"]))
        if first is not fastest:
            first["ms"] = "%.6f" % (0.9 * float(first["ms"]))
        best = min(float(x["ms"]) for x in lr)
        return lr, (best / float(fastest["ms"]), best / float(first["ms"]))

    rt_sets, expect = perturbed(sets, change)
    rt = write_sets(str(tmp_path / "retimed"), rt_sets)
    text = holdout_report(tmp_path, ["--retimed"] + rt, data)
    table = retimed_table(text)
    held = held_out_names(text)
    assert len(held) == 4 and set(table) == {"held-out", "training"}
    for what, names in (("held-out", held), ("training", set(expect) - held)):
        count, oracle, two, eq1, dnn, top4 = table[what]
        assert count == len(names) and two is None  # no --replicate: no two-run oracle
        assert oracle == pytest.approx(geomean([expect[n][0] for n in names]), abs=6e-4)
        assert eq1 == pytest.approx(geomean([expect[n][1] for n in names]), abs=6e-4)
        assert dnn <= top4 <= 1.0
    assert table["held-out"][1] < 0.98  # the 1.2x slowdown is seen


def test_average_takes_the_geometric_mean():
    train = train_module()
    stats = [0.0] * train.N_STATS
    L = train.Layer("aset", "aset_00", 2, 2, [(1, 1.0, stats, "a"), (2, 4.0, stats, "b"), (3, 2.0, stats, "c")])
    train.average([L], {("aset", "aset_00", 2, 2): {"a": 4.0, "b": 1.0}})  # c not in the second run
    assert list(L.ms) == pytest.approx([2.0, 2.0, 2.0])


def test_retimed_runs_are_averaged(tmp_path):
    train = train_module()
    hdr = "name,N,threads,rank_by_cost,schedule,ms\n"
    (tmp_path / "r1").mkdir()
    (tmp_path / "r2").mkdir()
    (tmp_path / "r1" / "aset_N2_t2.csv").write_text(hdr + 'aset_00,2,2,1,"a",1.0\naset_00,2,2,,"b",8.0\n')
    (tmp_path / "r2" / "aset_N2_t2.csv").write_text(hdr + 'aset_00,2,2,1,"a",4.0\naset_00,2,2,,"b",2.0\n')
    t = train.load_retimed([str(tmp_path / "r1" / "aset_N2_t2.csv"), str(tmp_path / "r2" / "aset_N2_t2.csv")])
    assert t[("aset", "aset_00", 2, 2)] == pytest.approx({"a": 2.0, "b": 4.0})
