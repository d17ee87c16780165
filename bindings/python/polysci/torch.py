"""PyTorch models as fused polysci graphs.

    import torch, torchvision, polysci.torch
    body = torchvision.models.mobilenet_v2().features.eval()
    fused = polysci.torch.compile(body, (1, 3, 224, 224))
    y = fused(x.contiguous(memory_format=torch.channels_last))

:func:`compile` traces the module with ``torch.fx`` and turns its nodes into
one polysci graph: Conv2d (dense or depthwise, zero padding), BatchNorm2d
(eval; folded into the convolution before it), ReLU, ReLU6 (and Hardtanh(0,
6)), MaxPool2d, AvgPool2d (count_include_pad), AdaptiveAvgPool2d(1),
Identity and Dropout (eval), residual ``+`` and ``torch.cat`` along the
channels. Anything else raises :class:`polysci.Error` (PS_ERR_UNSUPPORTED)
naming the node. The graph is planned once for the given input shape; the
returned module runs the plan. Inputs and outputs are NCHW-shaped tensors
stored channels-last: a channels-last input is read in place and the output
is a channels-last view of the array the plan wrote (no copies); any other
input is converted first.
"""

import operator

from ._lib import Status
from .core import Error, default_context
from .graph import Graph

try:
    import torch
    import torch.fx
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - torch is an optional dependency
    raise ImportError("polysci.torch needs PyTorch (Debian: python3-torch): %s" % e) from None

__all__ = ["compile", "PolysciModule"]


def _unsupported(node, why):
    return Error(Status.ERR_UNSUPPORTED, "polysci.torch: node %r (%s): %s" % (node.name, _target_name(node), why))


def _target_name(node):
    t = node.target
    if isinstance(t, str):
        return t
    return getattr(t, "__name__", repr(t))


def _np(t):
    return t.detach().to(torch.float32).cpu().numpy()


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv_padding(node, m):
    if m.padding_mode != "zeros":
        raise _unsupported(node, "padding_mode %r (only 'zeros')" % m.padding_mode)
    p = m.padding
    if isinstance(p, str):
        if p == "valid":
            return (0, 0, 0, 0)
        # 'same' (stride 1): PyTorch puts the odd extra pixel at the end
        eh = m.dilation[0] * (m.kernel_size[0] - 1)
        ew = m.dilation[1] * (m.kernel_size[1] - 1)
        return (eh // 2, eh - eh // 2, ew // 2, ew - ew // 2)
    ph, pw = _pair(p)
    return (ph, ph, pw, pw)


class _Converter:
    def __init__(self, module, shape, name):
        self.module = module
        self.shape = tuple(int(s) for s in shape)
        if len(self.shape) != 4:
            raise Error(Status.ERR_INVALID_ARG, "polysci.torch: input shape must be (N, C, H, W), got %r" % (shape,))
        self.g = Graph()
        self.env = {}
        self.name = name
        self.mods = dict(module.named_modules())

    def tensor(self, node, arg):
        if not isinstance(arg, torch.fx.Node) or arg not in self.env:
            raise _unsupported(node, "argument %r is not a tensor computed by the graph" % (arg,))
        return self.env[arg]

    def channels(self, t):
        return t.shape[3]

    def convert(self):
        try:
            gm = torch.fx.symbolic_trace(self.module)
        except Exception as e:  # torch.fx.proxy.TraceError and what tracing raises from user code
            raise Error(Status.ERR_UNSUPPORTED, "polysci.torch: torch.fx cannot trace %s: %s" % (self.name, e)) from e
        inputs = 0
        outputs = []
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                if inputs:
                    raise _unsupported(node, "a second input (one image tensor only)")
                n, c, h, w = self.shape
                self.env[node] = self.g.input("x", (n, h, w, c), layout="nhwc")
                inputs += 1
            elif node.op == "call_module":
                self.env[node] = self.call_module(node, self.mods[node.target])
            elif node.op == "call_function":
                self.env[node] = self.call_function(node)
            elif node.op == "call_method":
                self.env[node] = self.call_method(node)
            elif node.op == "output":
                res = node.args[0]
                outs = res if isinstance(res, (tuple, list)) else (res,)
                for o in outs:
                    outputs.append(self.tensor(node, o))
            else:
                raise _unsupported(node, "operation %r" % node.op)
        seen = set()
        for t in outputs:
            if t.index in seen:
                raise _unsupported(node, "the same tensor returned twice")
            seen.add(t.index)
            if t.is_input:
                raise _unsupported(node, "the input returned unchanged")
            self.g.output(t, layout="nhwc")
        return self.g, len(outputs)

    def call_module(self, node, m):
        x = self.tensor(node, node.args[0])
        name = node.name[:63]
        if isinstance(m, nn.Conv2d):
            groups = m.groups
            if groups != 1 and not (groups == m.in_channels == m.out_channels):
                raise _unsupported(node, "groups %d with %d -> %d channels (1 or depthwise only)"
                                   % (groups, m.in_channels, m.out_channels))
            return self.g.conv(x, _np(m.weight), bias=_np(m.bias) if m.bias is not None else None,
                               stride=m.stride, padding=_conv_padding(node, m), dilation=m.dilation, groups=groups,
                               name=name)
        if isinstance(m, nn.BatchNorm2d):
            if m.training:
                raise _unsupported(node, "BatchNorm2d in training mode (call .eval())")
            if m.running_mean is None or m.running_var is None:
                raise _unsupported(node, "BatchNorm2d without running statistics")
            return self.g.batchnorm(x, _np(m.running_mean), _np(m.running_var),
                                    gamma=_np(m.weight) if m.weight is not None else None,
                                    beta=_np(m.bias) if m.bias is not None else None, eps=m.eps, name=name)
        if isinstance(m, nn.ReLU):
            return self.g.relu(x, name=name)
        if isinstance(m, nn.ReLU6) or (isinstance(m, nn.Hardtanh) and m.min_val == 0.0 and m.max_val == 6.0):
            return self.g.relu6(x, name=name)
        if isinstance(m, nn.MaxPool2d):
            if _pair(m.dilation) != (1, 1) or m.return_indices:
                raise _unsupported(node, "MaxPool2d with dilation or return_indices")
            ph, pw = _pair(m.padding)
            return self.g.pool(x, "max", _pair(m.kernel_size), _pair(m.stride), (ph, ph, pw, pw), m.ceil_mode, name=name)
        if isinstance(m, nn.AvgPool2d):
            if not m.count_include_pad or m.divisor_override is not None:
                raise _unsupported(node, "AvgPool2d without count_include_pad or with divisor_override")
            ph, pw = _pair(m.padding)
            return self.g.pool(x, "avg", _pair(m.kernel_size), _pair(m.stride), (ph, ph, pw, pw), m.ceil_mode, name=name)
        if isinstance(m, nn.AdaptiveAvgPool2d):
            if _pair(m.output_size) != (1, 1):
                raise _unsupported(node, "AdaptiveAvgPool2d to %r (only 1 x 1)" % (m.output_size,))
            return self.g.global_avg_pool(x, name=name)
        if isinstance(m, (nn.Identity, nn.Dropout)) and not (isinstance(m, nn.Dropout) and m.training):
            return x
        raise _unsupported(node, "module %s" % type(m).__name__)

    def call_function(self, node):
        f = node.target
        name = node.name[:63]
        if f in (operator.add, operator.iadd, torch.add):
            if len(node.args) != 2 or node.kwargs:
                raise _unsupported(node, "add with alpha or other arguments")
            a, b = (self.tensor(node, v) for v in node.args)
            return self.g.add(a, b, name=name)
        if f in (torch.relu, F.relu):
            return self.g.relu(self.tensor(node, node.args[0]), name=name)
        if f is F.relu6:
            return self.g.relu6(self.tensor(node, node.args[0]), name=name)
        if f is F.hardtanh and tuple(node.args[1:3]) == (0.0, 6.0):
            return self.g.relu6(self.tensor(node, node.args[0]), name=name)
        if f is torch.cat:
            dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else 0)
            if dim not in (1, -3):
                raise _unsupported(node, "torch.cat along dimension %r (channels, 1, only)" % (dim,))
            parts = [self.tensor(node, t) for t in node.args[0]]
            return self.g.concat(parts, name=name)
        if f is F.adaptive_avg_pool2d:
            if _pair(node.args[1]) != (1, 1):
                raise _unsupported(node, "adaptive_avg_pool2d to %r (only 1 x 1)" % (node.args[1],))
            return self.g.global_avg_pool(self.tensor(node, node.args[0]), name=name)
        raise _unsupported(node, "function %s" % _target_name(node))

    def call_method(self, node):
        name = node.name[:63]
        if node.target in ("relu", "relu_"):
            return self.g.relu(self.tensor(node, node.args[0]), name=name)
        if node.target in ("add", "add_", "__add__") and len(node.args) == 2:
            return self.g.add(self.tensor(node, node.args[0]), self.tensor(node, node.args[1]), name=name)
        if node.target == "contiguous":
            return self.tensor(node, node.args[0])
        raise _unsupported(node, "method .%s()" % node.target)


class PolysciModule(nn.Module):
    """Runs a planned polysci graph: forward(x) for x of the compiled shape
    (N, C, H, W), float32. Returns an NCHW-shaped, channels-last tensor (a
    tuple when the module returns several)."""

    def __init__(self, graph, n_outputs, shape, plan):
        super().__init__()
        self.graph = graph
        self.plan = plan
        self.shape = tuple(shape)
        self.n_outputs = n_outputs

    def forward(self, x):
        if tuple(x.shape) != self.shape:
            raise Error(Status.ERR_INVALID_ARG, "polysci.torch: input of shape %s, compiled for %s"
                        % (tuple(x.shape), self.shape))
        if x.dtype != torch.float32:
            x = x.to(torch.float32)
        nhwc = x.detach().permute(0, 2, 3, 1)
        if not nhwc.is_contiguous():
            nhwc = nhwc.contiguous()
        outs = self.plan(nhwc.numpy())
        if not isinstance(outs, tuple):
            outs = (outs,)
        res = tuple(torch.from_numpy(o).permute(0, 3, 1, 2) for o in outs)
        return res if self.n_outputs > 1 else res[0]

    def describe(self):
        """The plan's description: groups, tiles, costs (ps_graph_plan_describe)."""
        return self.plan.describe()


def compile(module, shape, fusion="dp", threads=0, context=None, layer_top_k=0, layer_time_budget_ms=0.0):
    """Traces `module` (an nn.Module in eval mode) with torch.fx and plans
    it as one polysci graph for inputs of `shape` (N, C, H, W). fusion:
    "dp" (default), "greedy" or "none" (layer at a time). layer_top_k,
    layer_time_budget_ms: the measured mode for the convolutions planned as
    layers (e.g. 32 and 50; 0: static). Returns a :class:`PolysciModule`."""
    if module.training:
        raise Error(Status.ERR_INVALID_ARG, "polysci.torch.compile: the module is in training mode (call .eval())")
    conv = _Converter(module, shape, type(module).__name__)
    g, n_out = conv.convert()
    plan = g.plan(ctx=context if context is not None else default_context(), fusion=fusion, threads=threads,
                  layer_top_k=layer_top_k, layer_time_budget_ms=layer_time_budget_ms)
    return PolysciModule(g, n_out, shape, plan)
