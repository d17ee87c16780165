"""PyTorch eager on the blocks of `polysci bench chain` (the same names and
shapes, built from torchvision's own modules with random weights), and the
same modules compiled by polysci.torch (the Python entry point: one fused
polysci graph per module, called through ctypes).

    /usr/bin/python3 bench/chain/torch_eager.py [--N 1] [--threads 2] [--reps 20]
        [--sets mobilenet_v2,resnet50,resnet18,vgg16,mobilenet_v2_body,resnet50_body] [--csv FILE]

Prints and writes one CSV row per block: set,block,N,threads,torch_ms,polysci_torch_ms
(medians of --reps calls after warm-up; channels-last inputs, torch.no_grad,
eval mode).
"""
import argparse
import csv
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))

import torch  # noqa: E402
import torchvision  # noqa: E402


def blocks(set_name):
    """(name, module, input shape without N) of a set, in `polysci bench chain`'s order."""
    torch.manual_seed(0)
    out = []
    if set_name in ("mobilenet_v2", "mobilenet_v2_body"):
        f = torchvision.models.mobilenet_v2().features
        if set_name == "mobilenet_v2_body":
            return [("mobilenet_v2_body", f, (3, 224, 224))]
        x = torch.zeros(1, 3, 224, 224)
        with torch.no_grad():
            x = f[0](x)
            for i in range(1, 18):
                out.append(("mbv2_b%02d" % i, f[i], tuple(x.shape[1:])))
                x = f[i](x)
        return out
    if set_name in ("resnet50", "resnet18", "resnet50_body"):
        net = getattr(torchvision.models, "resnet50" if set_name != "resnet18" else "resnet18")()
        if set_name == "resnet50_body":
            body = torch.nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool, net.layer1, net.layer2, net.layer3,
                                       net.layer4)
            return [("resnet50_body", body, (3, 224, 224))]
        prefix = "r50" if set_name == "resnet50" else "r18"
        shape = (64, 56, 56)
        k = 1
        for layer in (net.layer1, net.layer2, net.layer3, net.layer4):
            for blk in layer:
                out.append(("%s_b%02d" % (prefix, k), blk, shape))
                with torch.no_grad():
                    shape = tuple(blk(torch.zeros(1, *shape)).shape[1:])
                k += 1
        return out
    if set_name == "vgg16":
        f = torchvision.models.vgg16().features
        group, shape, g = [], (3, 224, 224), 1
        for m in f:
            group.append(m)
            if isinstance(m, torch.nn.MaxPool2d):
                seq = torch.nn.Sequential(*group)
                out.append(("vgg16_g%d" % g, seq, shape))
                with torch.no_grad():
                    shape = tuple(seq(torch.zeros(1, *shape)).shape[1:])
                group, g = [], g + 1
        return out
    raise SystemExit("unknown set %r" % set_name)


def median_ms(fn, x, reps):
    for _ in range(3):
        fn(x)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(x)
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="mobilenet_v2,resnet50,resnet18,vgg16")
    ap.add_argument("--N", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--csv")
    ap.add_argument("--no-polysci", action="store_true", help="time PyTorch only")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    pst = None
    if not a.no_polysci:
        import polysci.torch as pst
    rows = []
    w = csv.writer(sys.stdout)
    w.writerow(["set", "block", "N", "threads", "torch_ms", "polysci_torch_ms"])
    for s in a.sets.split(","):
        for name, m, shape in blocks(s):
            m = m.eval().to(memory_format=torch.channels_last)
            x = torch.randn(a.N, *shape).contiguous(memory_format=torch.channels_last)
            with torch.no_grad():
                t_torch = median_ms(m, x, a.reps)
            t_ps = ""
            if pst is not None:
                f = pst.compile(m, (a.N,) + tuple(shape))
                t_ps = "%.4f" % median_ms(f, x, a.reps)
            row = [s, name, a.N, a.threads, "%.4f" % t_torch, t_ps]
            w.writerow(row)
            sys.stdout.flush()
            rows.append(row)
    if a.csv:
        with open(a.csv, "w", newline="") as fh:
            cw = csv.writer(fh)
            cw.writerow(["set", "block", "N", "threads", "torch_ms", "polysci_torch_ms"])
            cw.writerows(rows)


if __name__ == "__main__":
    main()
