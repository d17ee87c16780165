#!/usr/bin/env python3
"""Writes the seed corpus (tests/fuzz/corpus) in the byte encoding that
fuzz_polysci.c decodes. Re-run after changing the decoder."""
import os, sys

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(out, exist_ok=True)

def sz(v):           # size_field: 1 + byte % typ  (v in 1..typ)
    return bytes([0, v - 1])
def pad(v):          # size_field(typ 4) - 1
    return bytes([0, v])
def en(v):           # enum_field
    return bytes([0, v])
def opts(threads=1, ranker=0, top_k=0, flags=0, how=0, sched=0):
    return bytes([threads]) + en(ranker) + bytes([top_k]) + en(flags) + bytes([0, how, 0, sched])

def conv(N, C, K, H, W, R, S, sh=1, sw=1, pads=(0, 0, 0, 0), dh=1, dw=1, layout=0, wl=0, post=0, **o):
    text = o.pop("text", b"")
    b = bytes([0]) + sz(N) + sz(C) + sz(K) + sz(H) + sz(W) + sz(R) + sz(S) + sz(sh) + sz(sw)
    b += b"".join(pad(p) for p in pads) + sz(dh) + sz(dw) + en(layout) + en(wl) + en(post) + bytes([0])
    return b + opts(**o) + text

def gemm(M, N, K, order=0, ta=0, tb=0, alpha=0, beta=1, lds=(0, 0, 0), **o):
    text = o.pop("text", b"")
    b = bytes([1]) + sz(M) + sz(N) + sz(K) + en(order) + en(ta) + en(tb)
    b += b"".join(bytes([0]) if d == 0 else bytes([200, d]) for d in lds)  # tight, or min_ld + d
    b += bytes([0, alpha, 0, beta, 0])  # float table indices: 0 -> 1.0, 1 -> 0.0, 3 -> 0.5, 4 -> 2.0
    return b + opts(**o) + text

def fnv(b):
    h = 1469598103934665603
    for c in b:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h

CONV_KEY = ("conv N=1 C=16 K=32 H=8 W=8 R=3 S=3 sh=1 sw=1 pt=1 pb=1 pl=1 pr=1 dh=1 dw=1 "
            "layout=0 wl=0 post=3 threads=1 ranker=3 topk=1")
GEMM_KEY = ("gemm M=64 N=48 K=32 order=0 ta=0 tb=0 lda=0 ldb=0 ldc=0 alpha=0x1p+0 beta=0x0p+0 "
            "threads=1 ranker=3 topk=1")
body = f"plan {CONV_KEY}\t32x8x16/1 : n* k* oh* ow c\nplan {GEMM_KEY}\t64x24x32/1 : m* n* k\n".encode()

seeds = {
    "conv_3x3_pad_bias_relu": conv(1, 16, 32, 8, 8, 3, 3, pads=(1, 1, 1, 1), post=3),
    "conv_1x1_stride2_nchw": conv(2, 24, 40, 9, 11, 1, 1, sh=2, sw=2, layout=1, wl=2, how=0x87),
    "conv_dilated_krsc": conv(1, 8, 20, 12, 14, 3, 2, dh=2, dw=3, pads=(2, 1, 0, 3), wl=1, post=1, ranker=1, top_k=2),
    "conv_text_schedule": conv(1, 16, 32, 8, 8, 3, 3, pads=(1, 1, 1, 1), sched=1,
                               text=b"32x8x16/1 : n* k* oh ow c"),
    "conv_built_schedule": conv(1, 16, 32, 8, 8, 3, 3, sched=3) + sz(32) + sz(6) + sz(16) + sz(1) +
                           bytes([5]) + bytes([1]) + sz(1) + bytes([1]) + bytes([3]) + sz(1) + bytes([0]) +
                           bytes([4]) + sz(1) + bytes([0]) + bytes([2]) + sz(1) + bytes([0]) + bytes([5]) + sz(1) + bytes([0]),
    "gemm_col": gemm(67, 45, 33, ranker=1, how=2),
    "gemm_row_trans_alpha_beta_ld": gemm(40, 24, 64, order=1, ta=1, tb=1, alpha=3, beta=4, lds=(3, 1, 5), how=0x41),
    "gemm_text_schedule": gemm(64, 48, 32, sched=1, text=b"64x24x32/1 : m* n* k"),
    "gemm_volume_topk": gemm(20, 70, 100, ranker=4, top_k=2, flags=1),
    "wisdom_framed": bytes([3, 0x80]) + body,
    "schedule_conv": bytes([4, 0]) + b"64x28x64/4 : n* k:4* oh k ow c",
    "schedule_gemm": bytes([4, 1]) + b"64x24x64/8 : m:4* n m k",
}
# Stage graphs (mode 5): builder calls, then plan options (fuzz_graph).
FLOAT = {1.0: 0, 0.0: 1, -1.0: 2, 0.5: 3, 2.0: 4, 1.5: 5, -0.25: 6, 3.0: 7}
def fl(v):           # float_field: table entry
    return bytes([0, FLOAT[v]])
def tref(back=0):    # tensor_ref: the tensor `back` before the newest
    return bytes([0, back])
def g_input(n, h, w, c, layout=0):
    return bytes([0, 0]) + sz(n) + sz(h) + sz(w) + sz(c) + bytes([0]) + en(layout)
def g_stencil(back, taps, weights=None, boundary=1, reduce=0, sh=1, sw=1, per_channel=False):
    b = bytes([1, 0]) + tref(back) + en(boundary) + en(reduce) + sz(sh) + sz(sw) + sz(len(taps))
    b += b"".join(bytes([dy + 4, dx + 4]) for dy, dx in taps)
    how = 0 if weights is None else (1 if per_channel else 2)
    b += bytes([how]) + (b"".join(fl(w) for w in weights) if weights else b"")
    return b + bytes([0])
def e_in(i):
    return bytes([0, i])
def e_const(v):
    return bytes([1]) + fl(v)
EXPR_OPS = ["neg", "abs", "sqrt", "exp", "log", "floor", "add", "sub", "mul", "div", "min", "max",
            "lt", "le", "gt", "ge", "eq", "ne", "select", "clamp"]
def e_op(name, *args):  # shape 2: the op's own arity
    return bytes([100, EXPR_OPS.index(name), 2]) + b"".join(args)
def g_pointwise(backs, expr):
    return bytes([2, 0, len(backs) - 1]) + b"".join(tref(b) for b in backs) + expr + bytes([7, 0])
def g_mix(back, k, weights, bias=None):
    return bytes([3, 0]) + tref(back) + sz(k) + bytes([1 if bias else 0]) + b"".join(fl(w) for w in weights) + \
        (b"".join(fl(v) for v in bias) if bias else b"")
def g_resample(back, kind, boundary=1):
    return bytes([4, 0]) + tref(back) + en(kind) + en(boundary)
def g_output(back, layout=0):
    return bytes([5]) + tref(back) + en(layout)
def g_region(back, dy0, dx0, h, w):  # corner offsets from the domain's (-1..3), sizes 1..
    return bytes([6]) + tref(back) + bytes([0, dy0 + 1, 0, dx0 + 1, 0, h - 1, 0, w - 1])
def g_opts(n_tensors, fusion=0, threads=1, tile=None, groups=None, how=0):
    b = en(fusion) + bytes([threads])
    b += bytes([0]) if tile is None else bytes([128, tile[0] - 1, tile[1] - 1])
    b += bytes(groups if groups else [0] * (n_tensors + 1)) + bytes([0, 0]) + en(0) + bytes([0, how, 0])
    return b
def graph(calls, n_tensors, **o):
    return bytes([5, len(calls)]) + b"".join(calls) + g_opts(n_tensors, **o)

blur = [g_input(1, 9, 11, 1), g_stencil(0, [(0, -1), (0, 0), (0, 1)], [0.5, 1.0, 0.5]),
        g_stencil(0, [(-1, 0), (0, 0), (1, 0)], [0.5, 1.0, 0.5]), g_output(0)]
seeds["graph_blur3x3"] = graph(blur, 3)
seeds["graph_blur3x3_none_tile"] = graph(blur, 3, fusion=2, threads=2, tile=(3, 5), how=4)
unsharp = [g_input(2, 8, 7, 3, 1), g_stencil(0, [(-1, 0), (0, 0), (1, 0)], [0.5, 1.0, 0.5], boundary=0),
           g_stencil(0, [(0, -1), (0, 0), (0, 1)], [0.5, 1.0, 0.5], boundary=0),
           g_pointwise([2, 0], e_op("add", e_in(0), e_op("mul", e_const(1.5), e_op("sub", e_in(0), e_in(1))))),
           g_output(0, 1), g_region(0, 1, 0, 2, 3)]
seeds["graph_unsharp_greedy"] = graph(unsharp, 4, fusion=1)
pyramid = [g_input(1, 9, 9, 2), g_resample(0, 2, 1), g_resample(0, 1, 1),
           g_pointwise([2, 0], e_op("sub", e_in(0), e_in(1))), g_mix(0, 1, [0.5, -0.25]),
           g_stencil(1, [(-1, -1), (0, 0), (1, 1)], None, boundary=2, reduce=1), g_output(0), g_output(1, 1)]
seeds["graph_pyramid_fixed"] = graph(pyramid, 6, fusion=3, groups=[0, 0, 1, 1, 2, 2, 0])
select = [g_input(1, 5, 6, 4), g_input(1, 5, 6, 1, 1),
          g_pointwise([1, 0], e_op("select", e_op("lt", e_in(0), e_in(1)), e_op("sqrt", e_op("abs", e_in(0))),
                                   e_op("clamp", e_in(1), e_const(-0.25), e_const(0.5)))),
          g_stencil(0, [(0, 0), (0, 1), (1, 0)], [1.0, -1.0, 0.5, 2.0, 0.5, 1.0, -0.25, 1.5, 1.0, 0.0, 3.0, 1.0],
                    boundary=0, sh=2, sw=1, per_channel=True), g_output(0)]
seeds["graph_select_broadcast_dp"] = graph(select, 4, fusion=0, threads=2)

head = b"polysci-wisdom 1 0.1.0\nmachine some-other-cpu;cores=2;L1=32768\n" + body
seeds["wisdom_raw_other_machine"] = bytes([2]) + head + b"checksum %016x\n" % fnv(head)
# Iterated stencils (mode 6): grid, boundary, steps, arrays, taps, plan options (fuzz_iter).
def it_tap(array, offs, w):
    return bytes([0, array]) + b"".join(bytes([0, o + 2]) for o in offs) + fl(w)
def it_stencil(n, taps_per_array, boundary=0, T=5, threads=1, tiling=0, how=0):
    nd = len(n)
    b = bytes([6, nd, 0]) + b"".join(sz(v) for v in n) + en(boundary) + bytes([0, T])
    b += bytes([len(taps_per_array) - 1]) + bytes([0]) * len(taps_per_array) + bytes([0])
    for taps in taps_per_array:
        b += bytes([0, len(taps) - 1]) + b"".join(it_tap(*t) for t in taps) + bytes([0])
    return b + bytes([threads]) + en(tiling) + bytes([0, 0, 0, 0, 0, how])

seeds["iter_heat1d"] = it_stencil([250], [[(0, [-1], 0.5), (0, [0], 0.5), (0, [1], 0.5)]], T=9, threads=2)
seeds["iter_heat2d_periodic"] = it_stencil([13, 37], [[(0, [-1, 0], 0.5), (0, [0, -1], 0.5), (0, [0, 0], 1.0),
                                                        (0, [0, 1], 0.5), (0, [1, 0], 0.5)]], boundary=1, T=7, how=7)
seeds["iter_jacobi2d_split"] = it_stencil([11, 40], [[(0, [dy, dx], 0.5) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]],
                                          T=6, threads=2, tiling=3, how=2)
seeds["iter_heat3d_hybrid"] = it_stencil([6, 7, 12], [[(0, [-1, 0, 0], 0.5), (0, [0, -1, 0], 0.5), (0, [0, 0, -1], 0.5),
                                                        (0, [0, 0, 0], 1.0), (0, [0, 0, 1], 0.5), (0, [0, 1, 0], 0.5),
                                                        (0, [1, 0, 0], 0.5)]], T=4, tiling=4)
seeds["iter_coupled"] = it_stencil([9, 21], [[(1, [0, -1], 0.5), (0, [1, 1], -0.25)], [(0, [-2, 0], 1.5), (1, [0, 2], 0.5)]],
                                   T=8, threads=3, tiling=2, how=1)

for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {out}")
