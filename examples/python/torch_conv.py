#!/usr/bin/env python3
"""polysci convolutions inside PyTorch: a torch.nn.Module whose forward runs a
polysci plan, checked against torch.nn.functional.conv2d on ResNet-50 layers.

    python3 examples/python/torch_conv.py            # a subset of the layers, N=1
    python3 examples/python/torch_conv.py --all -N 2 # every layer, batch 2

PolysciConv2d works on CPU float32 tensors, forward (inference) only. It
takes channels-last tensors (torch.channels_last: NCHW shape, NHWC memory) and
plain contiguous NCHW ones, and runs an NHWC or NCHW plan to match, so the
input and output are used in place: no copy is made (the script checks that
the numpy views polysci sees alias the torch tensors). The output has the
input's memory format, as with nn.Conv2d.

Every result is compared with a float64 reference (torch conv2d in double) under
the bound polysci's C tests use, |err| <= tol(L) * sum|terms|, tol(L) = 8u*sqrt(L)
+ 2u (u = 2^-24, L = C*R*S + 1): the error of f32 arithmetic, not of a bug.
torch's own f32 error is printed beside it.

Columns: max|err| and err/bnd: polysci against the float64 reference (err/bnd
> 1 is a mismatch); torch: torch's own err/bnd; |ps-torch|: max difference of
the two f32 results; first ms: the first forward (plan + pack + run); ps ms,
torch ms: medians of --reps runs of polysci's forward and of F.conv2d on the
same channels-last input; nchw ms: F.conv2d on the input in plain NCHW memory
(torch is much faster in one format or the other depending on the layer);
speedup: torch's faster format over polysci. Timings on a machine shared with
other work are noisy; with several threads, preemption makes them jump.

Exit status: 0 all layers match, 1 a mismatch, 77 PyTorch is not installed
(skip), 2 bad arguments or no layer file.
"""

import argparse
import math
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_conv.py: PyTorch is not installed (on Debian: apt-get install python3-torch); skipping.",
          file=sys.stderr)
    sys.exit(77)


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
try:
    import polysci
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
    import polysci


class PolysciConv2d(torch.nn.Module):
    """A 2-D convolution (like nn.Conv2d, groups=1, f32, CPU) run by polysci.

    Plans are made per input shape and memory format and cached; weights are
    packed once and re-packed only when the weight tensor changes (its
    version counter or storage). relu=True fuses a ReLU after the bias.
    Inference only: call it under torch.no_grad() or torch.inference_mode().
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 bias=True, relu=False, ctx=None):
        super().__init__()
        pair = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v, v)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = pair(kernel_size), pair(stride)
        self.padding, self.dilation = pair(padding), pair(dilation)
        self.relu = relu
        self.weight = torch.nn.Parameter(torch.empty(out_channels, in_channels, *self.kernel_size))
        self.bias = torch.nn.Parameter(torch.empty(out_channels)) if bias else None
        # nn.Conv2d's initialisation
        torch.nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(in_channels * self.kernel_size[0] * self.kernel_size[1])
            torch.nn.init.uniform_(self.bias, -bound, bound)
        self.ctx = ctx if ctx is not None else polysci.default_context()
        self._plans = {}
        self._packed = {}
        self.copies = 0  # tensors this module had to copy (0 for float32 CPU inputs)

    @classmethod
    def from_conv2d(cls, conv, relu=False, ctx=None):
        """The same convolution, with (a copy of) conv's parameters."""
        if conv.groups != 1 or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
            raise ValueError("PolysciConv2d: only groups=1, zero padding given as numbers")
        m = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                conv.dilation, bias=conv.bias is not None, relu=relu, ctx=ctx)
        with torch.no_grad():
            m.weight.copy_(conv.weight)
            if conv.bias is not None:
                m.bias.copy_(conv.bias)
        return m

    def _plan(self, N, H, W, layout):
        key = (N, H, W, layout)
        plan = self._plans.get(key)
        if plan is None:
            d = polysci.ConvDesc(N=N, C=self.in_channels, K=self.out_channels, H=H, W=W,
                                 R=self.kernel_size[0], S=self.kernel_size[1], stride=self.stride,
                                 padding=self.padding, dilation=self.dilation, layout=layout,
                                 weight_layout="kcrs", bias=self.bias is not None, relu=self.relu)
            plan = self._plans[key] = self.ctx.plan(d)
        return plan

    def _weights(self, key, plan):
        # Packed layouts depend on the plan's blocking: one packed copy per plan,
        # re-packed when the weight tensor changed (in-place ops bump _version).
        w = self.weight
        version = (w._version, w.data_ptr())
        hit = self._packed.get(key)
        if hit is None or hit[0] != version:
            wd = w.detach()
            if not wd.is_contiguous():
                wd = wd.contiguous()
                self.copies += 1
            hit = self._packed[key] = (version, plan.pack_weights(wd.numpy()))
        return hit[1]

    def forward(self, x):
        if torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad):
            raise RuntimeError("PolysciConv2d is inference-only: run it under torch.no_grad() or torch.inference_mode()")
        if x.dim() != 4 or x.dtype != torch.float32 or x.device.type != "cpu":
            raise TypeError("PolysciConv2d: expected a 4-D float32 CPU tensor, got %s %s on %s"
                            % (tuple(x.shape), x.dtype, x.device))
        N, C, H, W = x.shape
        if x.is_contiguous(memory_format=torch.channels_last):
            layout = "nhwc"
        elif x.is_contiguous():
            layout = "nchw"
        else:
            x = x.contiguous(memory_format=torch.channels_last)
            layout = "nhwc"
            self.copies += 1
        key = (N, H, W, layout)
        plan = self._plan(*key)
        _, K, OH, OW = (N, self.out_channels) + plan.desc.output_size()
        if layout == "nhwc":
            out = torch.empty((N, K, OH, OW), dtype=torch.float32, memory_format=torch.channels_last)
            src, dst = x.permute(0, 2, 3, 1).numpy(), out.permute(0, 2, 3, 1).numpy()  # NHWC views, no copy
        else:
            out = torch.empty((N, K, OH, OW), dtype=torch.float32)
            src, dst = x.numpy(), out.numpy()
        # Zero copy: polysci reads and writes the tensors' own memory.
        assert src.ctypes.data == x.data_ptr() and dst.ctypes.data == out.data_ptr()
        bias = self.bias.detach().numpy() if self.bias is not None else None
        plan.execute(src, self._weights(key, plan), bias=bias, out=dst)
        return out

    def extra_repr(self):
        return "%d, %d, kernel_size=%s, stride=%s, padding=%s, dilation=%s, bias=%s, relu=%s" % (
            self.in_channels, self.out_channels, self.kernel_size, self.stride, self.padding,
            self.dilation, self.bias is not None, self.relu)


# ---------------------------------------------------------------- the check

U = 2.0 ** -24
DEFAULT_SUBSET = ("resnet_00", "resnet_03", "resnet_05", "resnet_07", "resnet_12", "resnet_14", "resnet_17")


def read_layers(path):
    layers = []
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].split()
            if not line:
                continue
            name, vals = line[0], [int(v) for v in line[1:10]]
            layers.append((name,) + tuple(vals))  # name H W C K R S stride pad_h pad_w
    return layers


DEFAULT_LAYERS = os.path.join(REPO, "bench", "layers", "resnet50.txt")


def median_ms(fn, reps):
    fn()  # warm-up
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def check_layer(layer, N, reps, relu, ctx):
    name, H, W, C, K, R, S, stride, ph, pw = layer
    torch.manual_seed(hash(name) & 0xFFFF)
    conv = torch.nn.Conv2d(C, K, (R, S), stride=stride, padding=(ph, pw), bias=True)
    mod = PolysciConv2d.from_conv2d(conv, relu=relu, ctx=ctx)
    x = torch.randn(N, C, H, W).contiguous(memory_format=torch.channels_last)
    w, b = conv.weight.detach(), conv.bias.detach()

    def torch_fwd(inp=x):
        y = F.conv2d(inp, w, b, stride=stride, padding=(ph, pw))
        return F.relu(y) if relu else y

    x_nchw = x.contiguous()  # the same values in plain NCHW memory, for torch's other path

    with torch.no_grad():
        t0 = time.perf_counter()
        got = mod(x)
        first_ms = (time.perf_counter() - t0) * 1e3  # plan + pack + run
        ref_t = torch_fwd()
        # float64 reference and the magnitude sum|terms| for the error bound
        y64 = F.conv2d(x.double(), w.double(), b.double(), stride=stride, padding=(ph, pw))
        if relu:
            y64 = F.relu(y64)
        mag = F.conv2d(x.double().abs(), w.double().abs(), b.double().abs(), stride=stride, padding=(ph, pw))
        L = C * R * S + 1
        bound = (8 * U * math.sqrt(L) + 2 * U) * mag + 1e-30
        err = (got.double() - y64).abs()
        bad = int((~(err <= bound)).sum())
        norm = float((err / bound).max())
        torch_norm = float(((ref_t.double() - y64).abs() / bound).max())
        assert got.is_contiguous(memory_format=torch.channels_last) and got.shape == ref_t.shape
        t_ps = median_ms(lambda: mod(x), reps)
        t_torch = median_ms(torch_fwd, reps)
        t_torch_nchw = median_ms(lambda: torch_fwd(x_nchw), reps)
    flops = 2.0 * N * K * C * R * S * got.shape[2] * got.shape[3]
    return dict(name=name, shape="%dx%dx%d->%d %dx%d/%d" % (H, W, C, K, R, S, stride), bad=bad,
                max_abs=float(err.max()), norm=norm, torch_norm=torch_norm,
                vs_torch=float((got - ref_t).abs().max()), first_ms=first_ms, t_ps=t_ps, t_torch=t_torch,
                t_torch_nchw=t_torch_nchw, gf_ps=flops / t_ps / 1e6, copies=mod.copies,
                schedule=str(next(iter(mod._plans.values())).schedule))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", help="layer file (name H W C K R S stride pad_h pad_w); "
                    "default: bench/layers/resnet50.txt")
    ap.add_argument("--all", action="store_true", help="every layer (default: %s)" % " ".join(DEFAULT_SUBSET))
    ap.add_argument("--only", nargs="+", metavar="NAME", help="just these layers")
    ap.add_argument("-N", "--batch", type=int, default=1, help="batch size (default 1)")
    ap.add_argument("--reps", type=int, default=7, help="timed runs per layer; the median is shown (default 7)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for both polysci and torch")
    ap.add_argument("--relu", action="store_true", help="fuse ReLU after the bias (torch: F.relu(conv2d))")
    ap.add_argument("--nchw", action="store_true", help="also check one layer with a plain NCHW tensor")
    args = ap.parse_args(argv)

    path = args.layers or DEFAULT_LAYERS
    if not os.path.exists(path):
        print("torch_conv.py: no layer file %s; pass --layers FILE" % path, file=sys.stderr)
        return 2
    layers = read_layers(path)
    if args.only:
        layers = [l for l in layers if l[0] in args.only]
    elif not args.all:
        layers = [l for l in layers if l[0] in DEFAULT_SUBSET] or layers
    if not layers or args.batch < 1 or args.reps < 1 or args.threads < 1:
        print("torch_conv.py: nothing to run (check --only/--batch/--reps/--threads)", file=sys.stderr)
        return 2

    torch.set_num_threads(args.threads)
    ctx = polysci.Context(num_threads=args.threads)
    print("polysci %s (%s), torch %s, %d threads, N=%d, %s, %s" % (
        polysci.version(), polysci.library_path, torch.__version__, args.threads, args.batch,
        "bias+relu" if args.relu else "bias", path))
    hdr = "%-10s %-22s %9s %7s %7s %10s %8s %8s %8s %8s %7s %7s  %s" % (
        "layer", "HxWxC->K RxS/stride", "max|err|", "err/bnd", "torch", "|ps-torch|",
        "first ms", "ps ms", "torch ms", "nchw ms", "ps GF/s", "speedup", "schedule")
    print(hdr)
    failed = 0
    ratios = []
    for layer in layers:
        r = check_layer(layer, args.batch, args.reps, args.relu, ctx)
        ok = r["bad"] == 0 and r["copies"] == 0
        failed += not ok
        speedup = min(r["t_torch"], r["t_torch_nchw"]) / r["t_ps"]
        ratios.append(speedup)
        print("%-10s %-22s %9.3g %7.3f %7.3f %10.3g %8.1f %8.3f %8.3f %8.3f %7.1f %6.2fx  %s%s" % (
            r["name"], r["shape"], r["max_abs"], r["norm"], r["torch_norm"], r["vs_torch"], r["first_ms"],
            r["t_ps"], r["t_torch"], r["t_torch_nchw"], r["gf_ps"], speedup, r["schedule"],
            "" if ok else "   MISMATCH (%d elements over the bound, %d copies)" % (r["bad"], r["copies"])))
        sys.stdout.flush()

    if args.nchw:
        # A plain NCHW tensor runs an NCHW plan, also without copies.
        name, H, W, C, K, R, S, stride, ph, pw = layers[0]
        conv = torch.nn.Conv2d(C, K, (R, S), stride=stride, padding=(ph, pw))
        mod = PolysciConv2d.from_conv2d(conv, ctx=ctx)
        x = torch.randn(args.batch, C, H, W)
        with torch.no_grad():
            got, want = mod(x), conv(x)
        err = float((got - want).abs().max())
        scale = float(want.abs().max())
        ok = got.is_contiguous() and mod.copies == 0 and err <= 1e-4 * max(scale, 1.0)
        failed += not ok
        print("%s NCHW: max |polysci - torch| = %.3g (max |y| %.3g), copies %d%s" % (
            name, err, scale, mod.copies, "" if ok else "   MISMATCH"))

    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print("%d layers, %d mismatches; polysci vs torch's faster memory format: geometric-mean speedup %.2fx "
          "(>1 = polysci faster)" % (len(layers), failed, geo))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
