"""Stage graphs from Python (graph.h, expr.h): build a pipeline of stencils,
pointwise expressions, channel mixes and resampling, plan it once, run it on
numpy arrays many times.

    g = polysci.Graph()
    img = g.input("img", shape=(1, 480, 640, 3), layout="nhwc")      # (N, H, W, C)
    gray = g.channel_mix(img, [[0.299, 0.587, 0.114]], name="gray")
    bx = g.stencil(gray, taps=[(0, -1, 1/3), (0, 0, 1/3), (0, 1, 1/3)])   # (dy, dx, w)
    sharp = g.pointwise(lambda a, b: 2 * a - b, gray, bx)
    g.output(sharp)
    plan = g.plan(fusion="dp")
    out = plan(img_array)

Expressions are :class:`Expr` objects, each owning one C tree (ps_expr*).
The C constructors take their operands (__take), so every operator hands
them fresh copies (ps_expr_copy) of its operands' trees: an Expr stays valid
and may be used in any number of places, and each tree is freed exactly once,
by the finalizer of the Expr that owns it.
"""

import collections
import ctypes
import threading

import numpy as np

from ._lib import (ActLayout, Boundary, ConvStageC, ExprOp, Fusion, GraphOptionsC, GraphPlanStatsC, PoolStageC, Reduce,
                   Resample, Status, StencilC, TensorInfoC, lib, PS_GRAPH_NO_INLINE, PS_GRAPH_NO_EPILOGUE, PS_GRAPH_NO_CODEGEN,
                   PS_POINTWISE_MAX_INPUTS)
from ._lib import has_symbol as _lib_has, path as _lib_path
from .core import (Context, Error, _LAYOUTS, _Closable, _Owner, _ThreadWorkspace, _arg_error, _check, _check_array,
                   _check_disjoint, _enum, _int, _int_range, _ms, _pair, _snprintf_call, default_context)

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


def _need(symbol):
    if not _lib_has(symbol):
        raise Error(Status.ERR_UNSUPPORTED, "the loaded libpolysci (%s) has no %s" % (_lib_path, symbol))


def has_engine():
    """True when the loaded library can plan and execute graphs
    (ps_graph_plan_create and ps_graph_execute); building works without."""
    return _lib_has("ps_graph_plan_create") and _lib_has("ps_graph_execute")


# ----------------------------------------------------------------- expressions


def _out_of_memory(what):
    return Error(Status.ERR_OUT_OF_MEMORY, "%s: out of memory" % what)


class Expr:
    """A pointwise expression (ps_expr): the body of :meth:`Graph.pointwise`.

    Built from :func:`inp` (the stage's input number i), float constants
    (numbers are wrapped automatically) and operators: ``+ - * /``, unary
    ``-``, ``abs()``, the comparisons ``< <= > >= == !=`` (each an Expr
    worth 1.0 or 0.0, not a bool), and :func:`select`, :func:`clamp`,
    :func:`minimum`, :func:`maximum`, :func:`sqrt`, :func:`exp`, :func:`log`,
    :func:`floor`. Arithmetic is IEEE single precision in the order the
    tree gives. ``str(e)`` is ps_expr_to_str's infix text.

    An Expr is immutable. Because ``==`` builds an expression, an Expr has no
    truth value (``if e:`` raises TypeError; use :func:`select`) and no hash.
    """
    __slots__ = ("_owner",)
    # numpy scalars and arrays defer to our reflected operators (np.float32(2) * e is an Expr).
    __array_ufunc__ = None
    __hash__ = None

    def __init__(self, value):
        """Expr(number): a constant; Expr(expr): a copy of expr."""
        if isinstance(value, Expr):
            ptr, what = lib.ps_expr_copy(value._owner.ptr), "ps_expr_copy"
        else:
            v = _number(value)
            if v is None:
                raise TypeError("polysci.Expr: expected a number or an Expr (got %s)" % type(value).__name__)
            _need("ps_expr_const")
            ptr, what = lib.ps_expr_const(v), "ps_expr_const"
        if not ptr:
            raise _out_of_memory(what)
        self._owner = _Owner(ptr, lib.ps_expr_free)

    @classmethod
    def _wrap(cls, ptr, what):
        """Takes ownership of a fresh tree (raises on NULL)."""
        if not ptr:
            raise _out_of_memory(what)
        e = cls.__new__(cls)
        e._owner = _Owner(ptr, lib.ps_expr_free)
        return e

    @property
    def handle(self):
        """The ps_expr* as an int (owned by this object; __keep it)."""
        return self._owner.ptr

    def copy(self):
        return Expr(self)

    # -- operators

    def __add__(self, o): return _operator(ExprOp.ADD, self, o)
    def __radd__(self, o): return _operator(ExprOp.ADD, o, self)
    def __sub__(self, o): return _operator(ExprOp.SUB, self, o)
    def __rsub__(self, o): return _operator(ExprOp.SUB, o, self)
    def __mul__(self, o): return _operator(ExprOp.MUL, self, o)
    def __rmul__(self, o): return _operator(ExprOp.MUL, o, self)
    def __truediv__(self, o): return _operator(ExprOp.DIV, self, o)
    def __rtruediv__(self, o): return _operator(ExprOp.DIV, o, self)
    def __lt__(self, o): return _operator(ExprOp.LT, self, o)
    def __le__(self, o): return _operator(ExprOp.LE, self, o)
    def __gt__(self, o): return _operator(ExprOp.GT, self, o)
    def __ge__(self, o): return _operator(ExprOp.GE, self, o)
    def __eq__(self, o): return _operator(ExprOp.EQ, self, o)
    def __ne__(self, o): return _operator(ExprOp.NE, self, o)
    def __neg__(self): return _unary(ExprOp.NEG, self)
    def __abs__(self): return _unary(ExprOp.ABS, self)

    def __pos__(self):
        return self

    def __bool__(self):
        raise TypeError("a polysci.Expr has no truth value (it is evaluated per pixel); "
                        "use polysci.select(condition, a, b)")

    def __str__(self):
        p = self._owner.ptr
        n = lib.ps_expr_to_str(p, None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        lib.ps_expr_to_str(p, buf, n + 1)
        return buf.value.decode("utf-8")

    def __repr__(self):
        return "<polysci.Expr %s>" % self


def _number(v):
    """v as a Python float when it is a real number (not a bool), else None."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, float, np.integer, np.floating)):
        return float(v)
    return None


def _is_operand(v):
    return isinstance(v, Expr) or _number(v) is not None


def _as_expr(v):
    if isinstance(v, Expr):
        return v
    if _number(v) is not None:
        return Expr(v)
    raise TypeError("a polysci expression operand must be an Expr or a number (got %s)" % type(v).__name__)


def _build(make, what, *args):
    """An Expr from make(*trees), a C constructor that takes (__take) its
    operands. Coercion comes first (it may raise); the copies come last, from
    calls that cannot raise, and go straight to the constructor, which frees
    them all if one is NULL (out of memory)."""
    exprs = [_as_expr(a) for a in args]
    return Expr._wrap(make(*[lib.ps_expr_copy(e._owner.ptr) for e in exprs]), what)


def _unary(op, a):
    return _build(lambda pa: lib.ps_expr_unary(op, pa), "ps_expr_unary", a)


def _binary(op, a, b):
    return _build(lambda pa, pb: lib.ps_expr_binary(op, pa, pb), "ps_expr_binary", a, b)


def _operator(op, a, b):
    """A binary operator method: NotImplemented for an operand it does not
    know, so Python tries the other operand's method (and then raises)."""
    if not (_is_operand(a) and _is_operand(b)):
        return NotImplemented
    return _binary(op, a, b)


def inp(i):
    """The pointwise stage's input number i (0-based position in the inputs
    passed to :meth:`Graph.pointwise`), at the pixel being computed."""
    _need("ps_expr_input")
    i = _int_range("input index", i, 0, PS_POINTWISE_MAX_INPUTS - 1)
    return Expr._wrap(lib.ps_expr_input(i), "ps_expr_input")


def select(cond, a, b):
    """cond != 0 ? a : b, per pixel."""
    return _build(lib.ps_expr_select, "ps_expr_select", cond, a, b)


def clamp(x, lo, hi):
    """min(max(x, lo), hi), per pixel."""
    return _build(lib.ps_expr_clamp, "ps_expr_clamp", x, lo, hi)


def minimum(a, b):
    return _binary(ExprOp.MIN, a, b)


def maximum(a, b):
    return _binary(ExprOp.MAX, a, b)


def sqrt(a):
    return _unary(ExprOp.SQRT, a)


def exp(a):
    return _unary(ExprOp.EXP, a)


def log(a):
    return _unary(ExprOp.LOG, a)


def floor(a):
    return _unary(ExprOp.FLOOR, a)


# ----------------------------------------------------------------- tensors

_BOUNDARIES = {"zero": Boundary.ZERO, "clamp": Boundary.CLAMP, "valid": Boundary.VALID, "ignore": Boundary.IGNORE}
_REDUCES = {"sum": Reduce.SUM, "max": Reduce.MAX, "min": Reduce.MIN}
_RESAMPLES = {"up2_nearest": Resample.UP2_NEAREST, "up2_bilinear": Resample.UP2_BILINEAR,
              "down2_average": Resample.DOWN2_AVERAGE}
_FUSIONS = {"dp": Fusion.DP, "greedy": Fusion.GREEDY, "none": Fusion.NONE, "fixed": Fusion.FIXED}

TensorInfo = collections.namedtuple("TensorInfo", "name shape origin is_input output_index layout")
TensorInfo.__doc__ = """ps_tensor_info: name; shape (N, H, W, C) of the domain,
or for an output of its stored region; origin (y0, x0), that rectangle's
corner; is_input; output_index (-1: not an output); layout (an ActLayout,
for inputs and outputs)."""


def _user_shape(n, h, w, c, layout):
    """The numpy shape of a tensor of n x h x w x c held in `layout`."""
    return (n, h, w, c) if layout == ActLayout.NHWC else (n, c, h, w)


class Tensor:
    """A tensor of a :class:`Graph`: a graph input or a stage's result.

    ``index`` is its number in the graph (creation order). ``shape`` is
    (N, H, W, C) of its domain (for an output: of the stored region),
    ``origin`` the (y0, x0) corner of that rectangle; ``array_shape`` the
    numpy shape of an input or output array in its layout.
    """
    __slots__ = ("graph", "index")

    def __init__(self, graph, index):
        self.graph = graph
        self.index = index

    @property
    def info(self):
        return self.graph._info(self.index)

    @property
    def name(self):
        return self.info.name

    @property
    def shape(self):
        return self.info.shape

    @property
    def origin(self):
        return self.info.origin

    @property
    def channels(self):
        return self.info.shape[3]

    @property
    def is_input(self):
        return self.info.is_input

    @property
    def output_index(self):
        return self.info.output_index

    @property
    def layout(self):
        return self.info.layout

    @property
    def array_shape(self):
        i = self.info
        return _user_shape(*i.shape, i.layout)

    def __eq__(self, other):
        return isinstance(other, Tensor) and other.graph is self.graph and other.index == self.index

    def __hash__(self):
        return hash((id(self.graph), self.index))

    def __repr__(self):
        if self.graph.closed:
            return "<polysci.Tensor %d of a closed graph>" % self.index
        i = self.info
        return "<polysci.Tensor %d %r shape=%s origin=%s%s>" % (
            self.index, i.name, i.shape, i.origin,
            " input" if i.is_input else " output %d" % i.output_index if i.output_index >= 0 else "")


# ----------------------------------------------------------------- graph


def _name(name):
    if name is None:
        return None
    if not isinstance(name, str):
        raise _arg_error("name must be a str or None (got %s)" % type(name).__name__)
    b = name.encode("utf-8")
    if b"\0" in b:
        raise _arg_error("name contains a NUL byte")
    return b


def _bias(what, bias, k):
    """None, or bias as K float32 values (what names the stage in errors)."""
    if bias is None:
        return None
    b = _floats("%s bias" % what, bias, 1)
    if b.shape[0] != k:
        raise _arg_error("%s bias has %d values for K = %d" % (what, b.shape[0], k))
    return b


def _floats(name, v, ndims):
    """v as a C-contiguous float32 array with a number of dimensions in
    `ndims` (an int or a tuple); copied when it is not one already."""
    ndims = (ndims,) if isinstance(ndims, int) else ndims
    try:
        a = np.ascontiguousarray(v, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise _arg_error("%s must be numbers (%s)" % (name, e)) from None
    if a.ndim not in ndims:
        raise _arg_error("%s must have %s dimension%s (got shape %s)" % (
            name, " or ".join(map(str, ndims)), "" if ndims == (1,) else "s", a.shape))
    return a


def _pads(padding):
    """(top, bottom, left, right) from an int, (h, w) or four values."""
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        p = tuple(padding)
    else:
        ph, pw = _pair("padding", padding)
        p = (ph, ph, pw, pw)
    return tuple(_int_range("padding", v, _INT_MIN, _INT_MAX) for v in p)


def _fptr(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


class Graph:
    """A stage graph (ps_graph): inputs, stages, outputs; append-only.

    Every method that adds a stage validates it completely in the library
    and returns its :class:`Tensor`; on error it raises (an
    :class:`ArgumentError` for PS_ERR_INVALID_ARG, an :class:`Error` with
    PS_ERR_UNSUPPORTED or PS_ERR_OVERFLOW otherwise) with the library's
    message and the graph is unchanged. ``name`` (optional, unique, at most
    63 bytes) names the tensor in messages and in the plan's description.

    Boundaries (``boundary=``): "zero" (reads outside the input's domain
    are 0), "clamp" (the nearest pixel: repeat edge), "valid" (none: the
    stage is defined only where every read is inside, so its domain shrinks
    and may start past (0, 0)) or "ignore" (the domain of "zero"; the read
    takes no part: 0 in a sum, -inf in a max, +inf in a min).
    """

    def __init__(self):
        _need("ps_graph_create")
        h = ctypes.c_void_p()
        _check(lib.ps_graph_create(ctypes.byref(h)))
        self._owner = _Owner(h.value, lib.ps_graph_destroy)
        # The C graph may be read from several threads while none modifies
        # it; one lock around every call keeps that true from Python.
        self._lock = threading.RLock()

    # -- handles

    @property
    def handle(self):
        """The ps_graph* as an int."""
        return self._handle()

    def _handle(self):
        if not self._owner:
            raise _arg_error("the graph is closed")
        return self._owner.ptr

    @property
    def closed(self):
        return not self._owner

    def close(self):
        """Destroys the graph now (plans made from it stay valid)."""
        with self._lock:
            self._owner.finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _tensor(self, t, what="tensor"):
        """A Tensor of this graph, from a Tensor, an index or a name."""
        if isinstance(t, Tensor):
            if t.graph is not self:
                raise _arg_error("%s %r belongs to another graph" % (what, t))
            return t.index
        if isinstance(t, str):
            for i in range(len(self)):
                if self._info(i).name == t:
                    return i
            raise _arg_error("%s: no tensor named %r in this graph" % (what, t))
        # An index: range-checked by the library (with its message).
        return _int_range(what, t, _INT_MIN, _INT_MAX)

    def _add(self, fn, *args):
        out = ctypes.c_int(-1)
        with self._lock:
            _check(fn(self._handle(), *args, ctypes.byref(out)))
        return Tensor(self, out.value)

    # -- building

    def input(self, name, shape, layout="nhwc"):
        """A graph input. shape: (N, H, W, C) whatever the layout; layout
        "nhwc" (the array passed to the plan is (N, H, W, C)) or "nchw"
        (planar: the array is (N, C, H, W))."""
        if not isinstance(shape, (tuple, list)) or len(shape) != 4:
            raise _arg_error("shape must be (N, H, W, C) (got %r)" % (shape,))
        n, h, w, c = (_int("shape", s) for s in shape)
        return self._add(lib.ps_graph_add_input, _name(name), n, h, w, c,
                         _enum("layout", layout, _LAYOUTS, ActLayout))

    def stencil(self, input, taps, weights=None, stride=1, boundary="clamp", reduce="sum", name=None):
        """out(n, y, x, c) = reduce over t of w_t(c) * in(n, sy*y + dy_t, sx*x + dx_t, c).

        taps: a sequence of (dy, dx, w) (shared weights) or of (dy, dx) with
        ``weights``: None (every weight 1), n_taps numbers shared by all
        channels, or an (n_taps, C) array of per-channel weights (depthwise).
        stride: an int or (sy, sx). boundary: "zero", "clamp" or "valid".
        reduce: "sum", "max" or "min" (of the weighted reads)."""
        t_in = self._tensor(input, "input")
        try:
            taps = [tuple(t) for t in taps]
        except TypeError:
            raise _arg_error("taps must be a sequence of (dy, dx) or (dy, dx, w)") from None
        if not taps:
            raise _arg_error("a stencil needs at least one tap")
        widths = {len(t) for t in taps}
        if len(widths) != 1 or widths.pop() not in (2, 3):
            raise _arg_error("taps must all be (dy, dx) or all be (dy, dx, w) (got %r)" % (taps[:4],))
        n = len(taps)
        dy = (ctypes.c_int * n)(*(_int_range("tap dy", t[0], _INT_MIN, _INT_MAX) for t in taps))
        dx = (ctypes.c_int * n)(*(_int_range("tap dx", t[1], _INT_MIN, _INT_MAX) for t in taps))
        per_channel = False
        if len(taps[0]) == 3:
            if weights is not None:
                raise _arg_error("weights given twice: in the taps and in weights=")
            w = _floats("tap weights", [t[2] for t in taps], 1)
        elif weights is None:
            w = None
        else:
            w = _floats("weights", weights, (1, 2))
            if w.ndim == 1 and w.shape[0] != n:
                raise _arg_error("weights has %d values for %d taps" % (w.shape[0], n))
            if w.ndim == 2:
                # The library reads n_taps * C weights: the shape must be exact.
                c = self._info_checked(t_in, "input").shape[3]
                if w.shape != (n, c):
                    raise _arg_error("per-channel weights must have shape (n_taps, C) = (%d, %d) (got %s)"
                                     % (n, c, w.shape))
                per_channel = True
        sy, sx = _pair("stride", stride)
        st = StencilC()
        lib.ps_stencil_init(ctypes.byref(st))
        st.input = t_in
        st.boundary = _enum("boundary", boundary, _BOUNDARIES, Boundary)
        st.reduce = _enum("reduce", reduce, _REDUCES, Reduce)
        st.stride_h = _int_range("stride", sy, _INT_MIN, _INT_MAX)
        st.stride_w = _int_range("stride", sx, _INT_MIN, _INT_MAX)
        st.n_taps = _int_range("number of taps", n, 0, _INT_MAX)
        st.dy, st.dx = dy, dx
        if w is not None:
            st.weights = _fptr(w)
        st.per_channel_weights = int(per_channel)
        return self._add(lib.ps_graph_add_stencil, _name(name), ctypes.byref(st))

    def pointwise(self, fn, *inputs, name=None):
        """out = fn(in_0, ..., in_k-1) at every pixel. fn: a function traced
        once over the inputs as :class:`Expr` objects (``lambda a, b: 2 * a - b``),
        or an Expr built with :func:`inp` (``2 * polysci.inp(0) - polysci.inp(1)``).
        Inputs (1 to 16; also accepted as one list) have the same N and C
        channels or 1 (broadcast over the channels); the result has the
        largest C and the intersection of their domains."""
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = tuple(inputs[0])
        if not 1 <= len(inputs) <= PS_POINTWISE_MAX_INPUTS:
            raise _arg_error("pointwise takes 1..%d inputs (got %d)" % (PS_POINTWISE_MAX_INPUTS, len(inputs)))
        ids = (ctypes.c_int * len(inputs))(*(self._tensor(t, "input %d" % i) for i, t in enumerate(inputs)))
        if isinstance(fn, Expr):
            expr = fn
        elif callable(fn):
            expr = fn(*(inp(i) for i in range(len(inputs))))
            try:
                expr = _as_expr(expr)
            except TypeError:
                raise _arg_error("the pointwise function returned %s, not an Expr or a number"
                                 % type(expr).__name__) from None
        else:
            try:
                expr = _as_expr(fn)
            except TypeError:
                raise _arg_error("pointwise needs a function, an Expr or a number (got %s)"
                                 % type(fn).__name__) from None
        # ps_graph_add_pointwise copies the tree (__keep): expr stays ours.
        return self._add(lib.ps_graph_add_pointwise, _name(name), expr.handle, len(inputs), ids)

    def channel_mix(self, input, weights, bias=None, name=None):
        """out(n, y, x, k) = bias[k] + sum over c of weights[k, c] * in(n, y, x, c).
        weights: K x C (C the input's channels); bias: None or K values."""
        t_in = self._tensor(input, "input")
        w = _floats("channel_mix weights", weights, 2)
        c = self._info_checked(t_in, "input").shape[3]
        if w.shape[1] != c:
            raise _arg_error("channel_mix weights must be K x C with C = %d, the input's channels (got shape %s)"
                             % (c, w.shape))
        k = w.shape[0]
        b = _bias("channel_mix", bias, k)
        return self._add(lib.ps_graph_add_channel_mix, _name(name), t_in, k, _fptr(w),
                         _fptr(b) if b is not None else None)

    def resample(self, input, kind, boundary="clamp", name=None):
        """Resampling by two in y and x. kind: "up2_nearest" (out(y, x) =
        in(y//2, x//2)), "up2_bilinear" (samples in at ((y - 0.5)/2, (x - 0.5)/2):
        weights 3/4 and 1/4) or "down2_average" (mean of the 2 x 2 block at
        (2y, 2x)). boundary: "zero" or "clamp"."""
        return self._add(lib.ps_graph_add_resample, _name(name), self._tensor(input, "input"),
                         _enum("resampling", kind, _RESAMPLES, Resample),
                         _enum("boundary", boundary, _BOUNDARIES, Boundary))

    # -- deep-learning stages (graph_dl.h)

    def conv(self, input, weights, bias=None, stride=1, padding=0, dilation=1, groups=1, name=None):
        """PyTorch's Conv2d: weights (K, C/groups, R, S); bias None or K values;
        stride, dilation: an int or (h, w); padding: an int, (h, w) or
        (top, bottom, left, right). groups: 1 (dense) or C = K (depthwise).
        The output (OH x OW from (0, 0)) reads input row
        stride*y - pad_top + dilation*r; reads outside the input are 0."""
        _need("ps_graph_add_conv")
        t_in = self._tensor(input, "input")
        w = _floats("conv weights", weights, 4)
        k = w.shape[0]
        b = _bias("conv", bias, k)
        c = self._info_checked(t_in, "input").shape[3]
        g = _int("groups", groups)
        if g >= 1 and c % g == 0 and w.shape[1] != c // g:
            raise _arg_error("conv weights must be (K, C/groups, R, S) = (%d, %d, R, S) (got %s)" % (k, c // g, w.shape))
        cv = ConvStageC()
        lib.ps_conv_stage_init(ctypes.byref(cv))
        cv.input = t_in
        cv.k = k
        cv.groups = g
        cv.r, cv.s = w.shape[2], w.shape[3]
        cv.stride_h, cv.stride_w = (_int_range("stride", v, _INT_MIN, _INT_MAX) for v in _pair("stride", stride))
        cv.dilation_h, cv.dilation_w = (_int_range("dilation", v, _INT_MIN, _INT_MAX) for v in _pair("dilation", dilation))
        cv.pad_top, cv.pad_bottom, cv.pad_left, cv.pad_right = _pads(padding)
        cv.weights = _fptr(w)
        if b is not None:
            cv.bias = _fptr(b)
        return self._add(lib.ps_graph_add_conv, _name(name), ctypes.byref(cv))

    def pool(self, input, kind, kernel, stride=None, padding=0, ceil_mode=False, name=None):
        """PyTorch's MaxPool2d / AvgPool2d (count_include_pad): kind "max" or
        "avg"; kernel, stride (default: the kernel) an int or (h, w); padding
        an int, (h, w) or (top, bottom, left, right). Max pooling's padding
        takes no part in the maximum."""
        _need("ps_graph_add_pool")
        kinds = {"max": 0, "avg": 1}
        if kind not in kinds:
            raise _arg_error("pool kind must be 'max' or 'avg' (got %r)" % (kind,))
        r, s_ = _pair("kernel", kernel)
        sh, sw = _pair("stride", stride if stride is not None else kernel)
        p = PoolStageC()
        lib.ps_pool_stage_init(ctypes.byref(p))
        p.input = self._tensor(input, "input")
        p.kind = kinds[kind]
        p.r, p.s = _int_range("kernel", r, _INT_MIN, _INT_MAX), _int_range("kernel", s_, _INT_MIN, _INT_MAX)
        p.stride_h, p.stride_w = _int_range("stride", sh, _INT_MIN, _INT_MAX), _int_range("stride", sw, _INT_MIN, _INT_MAX)
        p.pad_top, p.pad_bottom, p.pad_left, p.pad_right = _pads(padding)
        p.ceil_mode = int(bool(ceil_mode))
        return self._add(lib.ps_graph_add_pool, _name(name), ctypes.byref(p))

    def batchnorm(self, input, mean, var, gamma=None, beta=None, eps=1e-5, name=None):
        """BatchNorm2d in eval mode: (x - mean) * gamma / sqrt(var + eps) + beta,
        per channel (gamma, beta: None for 1 and 0). Folded into a preceding
        convolution that nothing else reads."""
        _need("ps_graph_add_batchnorm")
        t_in = self._tensor(input, "input")
        c = self._info_checked(t_in, "input").shape[3]
        arrs = []
        for what, v in (("mean", mean), ("var", var), ("gamma", gamma), ("beta", beta)):
            if v is None:
                arrs.append(None)
                continue
            a = _floats("batchnorm " + what, v, 1)
            if a.shape[0] != c:
                raise _arg_error("batchnorm %s has %d values for %d channels" % (what, a.shape[0], c))
            arrs.append(a)
        if arrs[0] is None or arrs[1] is None:
            raise _arg_error("batchnorm needs mean and var")
        return self._add(lib.ps_graph_add_batchnorm, _name(name), t_in,
                         *(_fptr(a) if a is not None else None for a in arrs), float(eps))

    def concat(self, inputs, name=None):
        """torch.cat along channels: the channels of inputs[0], then inputs[1], ...
        (2 to 16 tensors with the same images and domain)."""
        _need("ps_graph_add_concat")
        inputs = list(inputs)
        ids = (ctypes.c_int * len(inputs))(*(self._tensor(t, "input %d" % i) for i, t in enumerate(inputs)))
        return self._add(lib.ps_graph_add_concat, _name(name), len(inputs), ids)

    def global_avg_pool(self, input, name=None):
        """AdaptiveAvgPool2d(1): the mean over the domain, one pixel."""
        _need("ps_graph_add_global_avg_pool")
        return self._add(lib.ps_graph_add_global_avg_pool, _name(name), self._tensor(input, "input"))

    def relu(self, input, name=None):
        """max(x, 0)."""
        return self.pointwise(maximum(inp(0), 0.0), input, name=name)

    def relu6(self, input, name=None):
        """min(max(x, 0), 6)."""
        return self.pointwise(minimum(maximum(inp(0), 0.0), 6.0), input, name=name)

    def add(self, a, b, name=None):
        """a + b (the residual add)."""
        return self.pointwise(inp(0) + inp(1), a, b, name=name)

    def output(self, tensor, layout="nhwc", region=None):
        """Makes `tensor` a graph output (numbered in the order of these
        calls), stored in `layout`. region: None (the whole domain) or
        (y0, x0, h, w) inside the domain, in the tensor's coordinates; the
        output array then holds that rectangle. Returns the tensor."""
        t = self._tensor(tensor)
        lay = _enum("layout", layout, _LAYOUTS, ActLayout)
        if region is not None:
            if not isinstance(region, (tuple, list)) or len(region) != 4:
                raise _arg_error("region must be (y0, x0, h, w) (got %r)" % (region,))
            y0, x0, h, w = (_int("region", v) for v in region)
        with self._lock:
            if region is not None:
                # Checked before marking, so a bad region leaves the graph
                # unchanged (the library checks again).
                i = self._info_checked(t, "tensor")
                (dy0, dx0), (_, dh, dw, _) = i.origin, i.shape
                if h < 1 or w < 1 or y0 < dy0 or x0 < dx0 or y0 + h > dy0 + dh or x0 + w > dx0 + dw:
                    raise _arg_error("output %r: region [%d, %d) x [%d, %d) is not inside the domain "
                                     "[%d, %d) x [%d, %d)" % (i.name, y0, y0 + h, x0, x0 + w,
                                                              dy0, dy0 + dh, dx0, dx0 + dw))
            _check(lib.ps_graph_mark_output(self._handle(), t, lay))
            if region is not None:
                _check(lib.ps_graph_set_output_region(self._handle(), t, y0, x0, h, w))
        return Tensor(self, t)

    # -- introspection

    def _info(self, t):
        info = TensorInfoC()
        info.struct_size = ctypes.sizeof(info)
        with self._lock:
            _check(lib.ps_graph_tensor_info(self._handle(), t, ctypes.byref(info)))
            name = info.name.decode("utf-8", "replace")  # owned by the graph: read under the lock
        return TensorInfo(name, (info.n, info.h, info.w, info.c), (info.y0, info.x0), bool(info.is_input),
                          info.output_index, ActLayout(info.layout))

    def _info_checked(self, t, what):
        if not 0 <= t < len(self):
            raise _arg_error("%s %d is not a tensor of this graph (0..%d)" % (what, t, len(self) - 1))
        return self._info(t)

    def __len__(self):
        return lib.ps_graph_num_tensors(self._handle())

    def tensor(self, t):
        """The Tensor with this index or name."""
        i = self._tensor(t)
        self._info_checked(i, "tensor")
        return Tensor(self, i)

    __getitem__ = tensor

    @property
    def tensors(self):
        return [Tensor(self, i) for i in range(len(self))]

    @property
    def inputs(self):
        h = self._handle()
        return [Tensor(self, lib.ps_graph_input(h, i)) for i in range(lib.ps_graph_num_inputs(h))]

    @property
    def outputs(self):
        h = self._handle()
        return [Tensor(self, lib.ps_graph_output(h, i)) for i in range(lib.ps_graph_num_outputs(h))]

    # -- planning

    def plan(self, ctx=None, fusion="dp", threads=0, tile=None, group_of=None, group_limit=0, no_inline=False,
             no_epilogue=False, chunk=0, layer_top_k=0, layer_time_budget_ms=0.0, no_codegen=False):
        """A :class:`GraphPlan` of this graph (see there); ctx None: the
        process-wide :func:`default_context`."""
        return GraphPlan(default_context() if ctx is None else ctx, self, fusion=fusion, threads=threads,
                         tile=tile, group_of=group_of, group_limit=group_limit, no_inline=no_inline,
                         no_epilogue=no_epilogue, chunk=chunk, layer_top_k=layer_top_k,
                         layer_time_budget_ms=layer_time_budget_ms, no_codegen=no_codegen)

    def __repr__(self):
        if not self._owner:
            return "<polysci.Graph closed>"
        h = self._handle()
        return "<polysci.Graph %d tensors, %d inputs, %d outputs>" % (
            len(self), lib.ps_graph_num_inputs(h), lib.ps_graph_num_outputs(h))


# ----------------------------------------------------------------- plans

GraphPlanStats = collections.namedtuple(
    "GraphPlanStats", "n_stages n_groups plan_ms redundant_fraction scratch_bytes workspace_bytes cost")
GraphPlanStats.__doc__ = """ps_graph_plan_stats: n_stages (executed, after
inlining), n_groups, plan_ms (time ps_graph_plan_create took),
redundant_fraction (points computed / points needed - 1), scratch_bytes (per
thread), workspace_bytes, cost (sum of the groups' model costs)."""

class _Port(collections.namedtuple("_Port", "name nhwc layout label")):
    """A graph input or output as execute sees it: its (N, H, W, C) and layout."""

    @property
    def array_shape(self):
        return _user_shape(*self.nhwc, self.layout)

    def check(self, a, writeable=False):
        """The array's address (_check_array); data in the other layout fails
        with the conversion in the message."""
        other = ActLayout.NCHW if self.layout == ActLayout.NHWC else ActLayout.NHWC
        if isinstance(a, np.ndarray) and a.shape != self.array_shape and a.shape == _user_shape(*self.nhwc, other):
            fix = "allocate it in %s (GraphPlan.new_outputs)" % self.layout.name if writeable else \
                "convert with np.ascontiguousarray(a.transpose(%s))" % (
                    "0, 2, 3, 1" if other == ActLayout.NCHW else "0, 3, 1, 2")
            raise _arg_error("%s must have shape %s (got %s, the %s shape); %s" % (
                self.label, self.array_shape, a.shape, other.name, fix))
        return _check_array(self.label, a, self.array_shape, writeable=writeable)


def _destroy_graph_plan(ptr, ctx_owner):
    lib.ps_graph_plan_destroy(ptr)


class GraphPlan(_Closable, _ThreadWorkspace):
    """A plan of a :class:`Graph` (ps_graph_plan): created once, executed many times.

    GraphPlan(ctx, graph, fusion="dp", threads=0, tile=None, group_of=None,
    group_limit=0, no_inline=False, no_epilogue=False, chunk=0, layer_top_k=0,
    layer_time_budget_ms=0.0, no_codegen=False), or ``graph.plan(...)``.

    fusion: "dp" (dynamic-programming grouping with the cost and tile-size
    model), "greedy" (maximal fusion), "none" (every stage alone) or "fixed"
    (the grouping in group_of: a sequence with one group number per tensor of
    the graph, or a mapping {tensor, name or index: group}; stages left out
    of a mapping are groups of their own). threads: 0 = the context's.
    tile: None (the model) or (h, w) (an int for both): every group's tiles
    in pixels of its output. group_limit: the largest group the bounded
    grouping's first pass forms (0: the library's default). no_inline: keep
    pointwise stages as stages of their own. no_epilogue: store every stage's
    rows (no producer epilogues). chunk: > 0 runs the bands of a tile in
    chunks of so many columns (0: the model's). layer_top_k,
    layer_time_budget_ms: the measured mode (Plan's top_k, time_budget_ms)
    for the convolutions that run alone as layer plans (0: static).
    no_codegen: run expressions in the interpreter instead of code compiled
    at plan time (PS_GRAPH_NO_CODEGEN; the same values bit for bit).

    The plan copies what it needs: the graph may change or close afterwards.
    It holds a reference to its context.

    ``plan(*inputs, out=None)`` runs it: inputs in the order of the graph's
    inputs (or by name as keywords), float32 C-contiguous arrays in each
    input's layout ((N, H, W, C) for NHWC, (N, C, H, W) for NCHW); returns the
    output array (a tuple of them when the graph has several), allocated or
    the ``out=`` array(s) given. Every output element is written. The
    workspace is allocated once per calling thread and reused, so one plan
    may run from several threads at once (each with its own outputs).
    """

    def __init__(self, ctx, graph, fusion="dp", threads=0, tile=None, group_of=None, group_limit=0,
                 no_inline=False, no_epilogue=False, chunk=0, layer_top_k=0, layer_time_budget_ms=0.0,
                 no_codegen=False):
        if not isinstance(ctx, Context):
            raise _arg_error("ctx must be a polysci.Context (got %s)" % type(ctx).__name__)
        if not isinstance(graph, Graph):
            raise _arg_error("graph must be a polysci.Graph (got %s)" % type(graph).__name__)
        for sym in ("ps_graph_options_init", "ps_graph_plan_create", "ps_graph_execute"):
            _need(sym)
        opts = GraphOptionsC()
        lib.ps_graph_options_init(ctypes.byref(opts))
        opts.num_threads = _int_range("threads", threads, _INT_MIN, _INT_MAX)
        opts.fusion = _enum("fusion", fusion, _FUSIONS, Fusion)
        if tile is not None:
            opts.tile_h, opts.tile_w = _pair("tile", tile)
        opts.group_limit = _int_range("group_limit", group_limit, _INT_MIN, _INT_MAX)
        opts.flags = ((PS_GRAPH_NO_INLINE if no_inline else 0) | (PS_GRAPH_NO_EPILOGUE if no_epilogue else 0) |
                      (PS_GRAPH_NO_CODEGEN if no_codegen else 0))
        opts.chunk_w = _int_range("chunk", chunk, 0, 1 << 24)
        opts.layer_top_k = _int_range("layer_top_k", layer_top_k, _INT_MIN, _INT_MAX)
        opts.layer_time_budget_ms = _ms("layer_time_budget_ms", layer_time_budget_ms)
        with graph._lock:
            groups = None
            if group_of is not None:
                if opts.fusion != Fusion.FIXED:
                    raise _arg_error("group_of is for fusion=\"fixed\" (fusion is %r)" % (fusion,))
                groups = self._groups(graph, group_of)
                opts.group_of = groups
                opts.n_group_of = len(groups)
            self.inputs = [self._port(graph, t, "input %d" % i) for i, t in enumerate(graph.inputs)]
            self.outputs = [self._port(graph, t, "out[%d]" % i) for i, t in enumerate(graph.outputs)]
            h = ctypes.c_void_p()
            with ctx._lock:
                _check(lib.ps_graph_plan_create(ctx._handle(), graph._handle(), ctypes.byref(opts), ctypes.byref(h)))
                # The finalizer holds the context's owner: the context outlives the plan.
                self._owner = _Owner(h.value, _destroy_graph_plan, ctx._owner)
                self.context = ctx
                ctx._plans.add(self)
        ws = ctypes.c_size_t()
        _check(lib.ps_graph_plan_workspace_size(h, ctypes.byref(ws)))
        self.workspace_size = ws.value
        self._names = {p.name: i for i, p in enumerate(self.inputs)}
        self._tls = threading.local()

    @staticmethod
    def _port(graph, t, label):
        i = t.info
        return _Port(i.name, i.shape, i.layout, "%s (%r, %s)" % (label, i.name, i.layout.name))

    @staticmethod
    def _groups(graph, group_of):
        n = len(graph)
        if isinstance(group_of, dict):
            given = {graph._tensor(k, "group_of key"): _int_range("group", v, _INT_MIN, _INT_MAX)
                     for k, v in group_of.items()}
            if any(not 0 <= k < n for k in given):
                raise _arg_error("group_of names tensors outside 0..%d" % (n - 1))
            fresh = max(list(given.values()) + [-1]) + 1
            vals = []
            for t in range(n):
                if t in given:
                    vals.append(given[t])
                else:
                    vals.append(fresh)
                    fresh += 1
        else:
            try:
                vals = [_int_range("group", v, _INT_MIN, _INT_MAX) for v in group_of]
            except TypeError:
                raise _arg_error("group_of must be a sequence of group numbers or a dict") from None
            if len(vals) != n:
                raise _arg_error("group_of has %d entries; the graph has %d tensors" % (len(vals), n))
        return (ctypes.c_int * n)(*vals)

    # -- introspection

    @property
    def handle(self):
        """The ps_graph_plan* as an int."""
        return self._handle()

    _what = "plan"

    def describe(self):
        """ps_graph_plan_describe: groups and why, tile sizes, redundant
        computation, scratch bytes, costs, schedule trees (text)."""
        h = self._handle()
        return _snprintf_call(lambda buf, n, need: lib.ps_graph_plan_describe(h, buf, n, need), 16384)

    @property
    def stats(self):
        """A :class:`GraphPlanStats` (ps_graph_plan_get_stats)."""
        s = GraphPlanStatsC()
        s.struct_size = ctypes.sizeof(s)
        _check(lib.ps_graph_plan_get_stats(self._handle(), ctypes.byref(s)))
        return GraphPlanStats(s.n_stages, s.n_groups, s.plan_ms, s.redundant_fraction, s.scratch_bytes,
                              s.workspace_bytes, s.cost)

    @property
    def input_shapes(self):
        """numpy shapes of the input arrays, in order."""
        return [p.array_shape for p in self.inputs]

    @property
    def output_shapes(self):
        return [p.array_shape for p in self.outputs]

    # -- execution

    def new_outputs(self):
        """Uninitialised output arrays of the right shapes (a list)."""
        return [np.empty(p.array_shape, dtype=np.float32) for p in self.outputs]

    def execute(self, *inputs, out=None, **named):
        """Runs the plan (see the class); ``plan(...)`` is the same."""
        h = self._handle()
        if named:
            if inputs:
                raise _arg_error("pass the inputs by position or by name, not both")
            unknown = sorted(set(named) - set(self._names))
            if unknown:
                raise _arg_error("no graph input named %s (inputs: %s)" % (
                    ", ".join(map(repr, unknown)), ", ".join(repr(p.name) for p in self.inputs)))
            inputs = [named.get(p.name) for p in self.inputs]
            missing = [p.name for p, a in zip(self.inputs, inputs) if a is None]
            if missing:
                raise _arg_error("input%s %s not given" % ("s" if len(missing) > 1 else "",
                                                            ", ".join(map(repr, missing))))
        if len(inputs) != len(self.inputs):
            raise _arg_error("the graph has %d input%s (%s); got %d arrays" % (
                len(self.inputs), "" if len(self.inputs) == 1 else "s",
                ", ".join(repr(p.name) for p in self.inputs), len(inputs)))
        in_ptrs = (ctypes.c_void_p * max(len(inputs), 1))(
            *(p.check(a) for p, a in zip(self.inputs, inputs)))
        single = len(self.outputs) == 1
        if out is None:
            outs = self.new_outputs()
        else:
            outs = [out] if single and isinstance(out, np.ndarray) else list(out) \
                if isinstance(out, (list, tuple)) else None
            if outs is None or len(outs) != len(self.outputs):
                raise _arg_error("out must be %s" % (
                    "an array (or a list of one)" if single else "a list of %d arrays" % len(self.outputs)))
        out_ptrs = (ctypes.c_void_p * max(len(outs), 1))(
            *(p.check(a, writeable=True) for p, a in zip(self.outputs, outs)))
        if out is not None:
            named_in = {"input %d" % i: a for i, a in enumerate(inputs)}
            for i, a in enumerate(outs):
                _check_disjoint("out[%d]" % i, a, **named_in, **{"out[%d]" % j: b for j, b in enumerate(outs[:i])})
        _check(lib.ps_graph_execute(h, in_ptrs, out_ptrs, self._workspace()))
        return outs[0] if single else tuple(outs)

    __call__ = execute

    def __repr__(self):
        if not self._owner:
            return "<polysci.GraphPlan closed>"
        s = self.stats
        return "<polysci.GraphPlan %d stages in %d groups, %d inputs, %d outputs>" % (
            s.n_stages, s.n_groups, len(self.inputs), len(self.outputs))
