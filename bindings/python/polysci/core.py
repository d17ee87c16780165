"""The Python face of polysci: contexts, descriptors, schedules, plans."""

import collections
import ctypes
import json
import operator
import threading
import weakref

import numpy as np

from ._lib import (ActLayout, DescC, ExecArgsC, MatrixOrder, OpKind, PlanOptionsC,
                   ContextOptionsC, Ranker, Status, VariantCostC, WeightLayout, Dim, lib,
                   PS_POST_BIAS, PS_POST_RELU, PS_PLAN_NO_CACHE)
from ._lib import has_symbol as _lib_has, path as _lib_path

ALIGNMENT = 64  # bytes; packed weights and workspaces are aligned to this

# ----------------------------------------------------------------- errors


class Error(Exception):
    """A polysci failure.

    ``status`` is a :class:`Status` (the C ``ps_status``), ``status_name`` its
    C constant name ("PS_ERR_INVALID_ARG"), ``message`` the detail: the
    library's ``ps_last_error_message()`` for failures inside the C library,
    or the bindings' own text for argument checks done in Python.
    """

    def __init__(self, status, message):
        try:
            status = Status(status)
        except ValueError:
            status = int(status)
        self.status = status
        self.status_name = lib.ps_status_str(int(status)).decode("ascii", "replace")
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))


class ArgumentError(Error, ValueError):
    """An argument polysci rejected (PS_ERR_INVALID_ARG / PS_ERR_NULL_POINTER, or
    an array of the wrong dtype, shape or memory layout). Also a ValueError."""


class ScheduleError(Error, ValueError):
    """A schedule that cannot run the descriptor, or an impossible kernel
    shape or loop (PS_ERR_INVALID_SCHEDULE). Also a ValueError."""


class ParseError(Error, ValueError):
    """Malformed text: schedule text, a corrupt wisdom file (PS_ERR_PARSE).
    Also a ValueError."""


class StaleWisdomError(Error):
    """Wisdom made for another machine or library version (PS_ERR_STALE); it
    was ignored and the context keeps what it had."""


_ERROR_CLASSES = {
    Status.ERR_INVALID_ARG: ArgumentError,
    Status.ERR_NULL_POINTER: ArgumentError,
    Status.ERR_PARSE: ParseError,
    Status.ERR_INVALID_SCHEDULE: ScheduleError,
    Status.ERR_STALE: StaleWisdomError,
}


def _error(status, message):
    return _ERROR_CLASSES.get(status, Error)(status, message)


def _check(status):
    """Raises the error of a failed C call. Must run right after the call, on
    the same thread: the C message is per thread and valid until its next call."""
    if status != 0:
        msg = lib.ps_last_error_message()
        msg = msg.decode("utf-8", "replace") if msg else ""
        raise _error(status, msg)


def _arg_error(message):
    return ArgumentError(Status.ERR_INVALID_ARG, message)


# ----------------------------------------------------------------- helpers

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _int(name, v):
    try:
        v = operator.index(v)
    except TypeError:
        raise _arg_error("%s must be an integer (got %r)" % (name, v)) from None
    if not _I64_MIN <= v <= _I64_MAX:
        raise Error(Status.ERR_OVERFLOW, "%s = %d does not fit in int64" % (name, v))
    return v


def _pair(name, v):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise _arg_error("%s must be an int or a pair (got %r)" % (name, v))
        return _int(name, v[0]), _int(name, v[1])
    v = _int(name, v)
    return v, v


_LAYOUTS = {"nhwc": ActLayout.NHWC, "channels_last": ActLayout.NHWC,
            "nchw": ActLayout.NCHW, "channels_first": ActLayout.NCHW}
_WLAYOUTS = {"kcrs": WeightLayout.KCRS, "oihw": WeightLayout.KCRS,
             "krsc": WeightLayout.KRSC, "ohwi": WeightLayout.KRSC,
             "rsck": WeightLayout.RSCK, "hwio": WeightLayout.RSCK}
_ORDERS = {"col": MatrixOrder.COL_MAJOR, "col_major": MatrixOrder.COL_MAJOR, "f": MatrixOrder.COL_MAJOR,
           "row": MatrixOrder.ROW_MAJOR, "row_major": MatrixOrder.ROW_MAJOR, "c": MatrixOrder.ROW_MAJOR}
_RANKERS = {"default": Ranker.DEFAULT, "cost": Ranker.COST, "dnn": Ranker.DNN, "none": Ranker.NONE,
            "volume": Ranker.VOLUME}
_KINDS = {"conv": OpKind.CONV_FWD, "conv_fwd": OpKind.CONV_FWD, "gemm": OpKind.GEMM}
_DIMS = {"n": Dim.N, "k": Dim.K, "oh": Dim.OH, "ow": Dim.OW, "c": Dim.C}
_GEMM_DIMS = {"m": Dim.K, "n": Dim.OW, "k": Dim.C}  # schedule.h: gemm uses K, OW, C


def _enum(name, v, table, enum_cls):
    if isinstance(v, enum_cls):
        return v
    if isinstance(v, str):
        try:
            return table[v.lower()]
        except KeyError:
            raise _arg_error("unknown %s %r (one of %s)" % (name, v, ", ".join(sorted(table)))) from None
    if isinstance(v, int) and not isinstance(v, bool):
        try:
            return enum_cls(v)
        except ValueError:
            pass
    raise _arg_error("unknown %s %r" % (name, v))


def _kind_of(kind):
    if isinstance(kind, (ConvDesc, GemmDesc)):
        return kind.kind
    return _enum("operation kind", kind, _KINDS, OpKind)


def _aligned_empty(nbytes, align=ALIGNMENT):
    """uint8 array of nbytes whose data is align-byte aligned (owns its memory
    through .base)."""
    raw = np.empty(nbytes + align, dtype=np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + nbytes]


def _describe_array(a):
    return "shape %s dtype %s strides %s%s" % (
        a.shape, a.dtype, a.strides, "" if a.flags.c_contiguous else " (not C-contiguous)")


def _check_array(name, a, shape, writeable=False):
    """A C-contiguous, aligned, native float32 array of exactly `shape`."""
    if not isinstance(a, np.ndarray):
        raise _arg_error("%s must be a numpy.ndarray (got %s)" % (name, type(a).__name__))
    if a.dtype != np.float32:
        raise _arg_error("%s must have dtype float32 (got %s); convert with "
                         "np.ascontiguousarray(x, dtype=np.float32)" % (name, a.dtype))
    if a.shape != tuple(shape):
        raise _arg_error("%s must have shape %s (got %s)" % (name, tuple(shape), a.shape))
    if not a.flags.c_contiguous:
        raise _arg_error("%s must be C-contiguous (%s); use np.ascontiguousarray" % (name, _describe_array(a)))
    if not a.flags.aligned:
        raise _arg_error("%s is not aligned to 4 bytes" % name)
    if writeable and not a.flags.writeable:
        raise _arg_error("%s is read-only" % name)
    return a.ctypes.data


def _check_disjoint(out_name, out, **inputs):
    for n, a in inputs.items():
        if a is not None and np.may_share_memory(out, a):
            raise _arg_error("%s overlaps %s; polysci needs separate output memory" % (out_name, n))


# ----------------------------------------------------------------- context


class _Owner:
    """Owns one C handle; destroyed (by weakref.finalize) once nothing refers
    to it. Plans' finalizers hold their context's owner, so a context is
    destroyed only after every plan made from it, whatever the collection
    order (cycles, interpreter exit)."""
    __slots__ = ("ptr", "finalizer", "__weakref__")

    def __init__(self, ptr, destroy, *keep):
        self.ptr = ptr
        self.finalizer = weakref.finalize(self, destroy, ptr, *keep)

    def __bool__(self):
        return self.finalizer.alive


class _Closable:
    """An object whose C handle an _Owner holds (self._owner): _handle()
    refuses a closed one, close() (or leaving a with block) destroys it now
    instead of when unreferenced. _what names it in the error."""
    _what = "object"

    def _handle(self):
        if not self._owner:
            raise _arg_error("the %s is closed" % self._what)
        return self._owner.ptr

    @property
    def closed(self):
        return not self._owner

    def close(self):
        """Destroys it now (else when unreferenced)."""
        self._owner.finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _ThreadWorkspace:
    """A plan's workspace of workspace_size bytes, allocated once per calling
    thread (so one plan runs from several threads at once) and reused."""

    def _workspace(self):
        if not self.workspace_size:
            return None
        ws = getattr(self._tls, "ws", None)
        if ws is None:
            ws = self._tls.ws = _aligned_empty(self.workspace_size)
        return ws.ctypes.data


def _destroy_plan(ptr, ctx_owner):
    lib.ps_plan_destroy(ptr)


class Context:
    """A polysci context (ps_context): machine model, threads, JIT state.

    ``num_threads`` 0 means OpenMP's default; ``memory_limit`` (bytes, 0 = none)
    caps the largest buffer a plan may require. Plans keep their context alive;
    :meth:`close` refuses while plans made from it are still open.
    """

    def __init__(self, num_threads=0, memory_limit=0):
        opts = ContextOptionsC()
        lib.ps_context_options_init(ctypes.byref(opts))
        opts.num_threads = _int_range("num_threads", num_threads, -(1 << 31), (1 << 31) - 1)
        opts.memory_limit = _int_range("memory_limit", memory_limit, 0, (1 << 64) - 1)
        h = ctypes.c_void_p()
        _check(lib.ps_context_create(ctypes.byref(opts), ctypes.byref(h)))
        self._owner = _Owner(h.value, lib.ps_context_destroy)
        self._plans = weakref.WeakSet()
        self._lock = threading.Lock()

    @property
    def handle(self):
        """The ps_context* as an int (for other ctypes code)."""
        return self._handle()

    def _handle(self):
        if not self._owner:
            raise _arg_error("the context is closed")
        return self._owner.ptr

    @property
    def closed(self):
        return not self._owner

    @property
    def num_threads(self):
        return lib.ps_context_num_threads(self._handle())

    def plan(self, desc, schedule=None, num_threads=0, ranker="default", top_k=0, cache=True, time_budget_ms=0.0):
        """A :class:`Plan` for `desc` (see Plan)."""
        return Plan(self, desc, schedule=schedule, num_threads=num_threads, ranker=ranker,
                    top_k=top_k, cache=cache, time_budget_ms=time_budget_ms)

    # -- cost queries (cost.h)

    def cost_query(self, desc, num_threads=0, ranker="default"):
        """ps_cost_query: the planner's candidate schedules for `desc`, ranked by
        its cost model, without executing anything. Returns a :class:`CostReport`.
        num_threads: 0 = the context's; ranker: "default" or "cost" (Eq. 1),
        "volume", or "dnn" (tournament order; cost = games lost); "none" has no
        ranking: PS_ERR_UNSUPPORTED. Raises PS_ERR_UNSUPPORTED when the loaded
        library predates cost queries."""
        if not _lib_has("ps_cost_query"):
            raise Error(Status.ERR_UNSUPPORTED, "the loaded libpolysci (%s) has no ps_cost_query" % _lib_path)
        desc = _as_desc(desc)
        opts = PlanOptionsC()
        lib.ps_plan_options_init(ctypes.byref(opts))
        opts.num_threads = _int_range("num_threads", num_threads, -(1 << 31), (1 << 31) - 1)
        opts.ranker = _enum("ranker", ranker, _RANKERS, Ranker)
        rep = ctypes.c_void_p()
        _check(lib.ps_cost_query(self._handle(), ctypes.byref(desc.c_desc), ctypes.byref(opts), ctypes.byref(rep)))
        try:
            variants = []
            v = VariantCostC()
            for i in range(lib.ps_cost_report_size(rep)):
                _check(lib.ps_cost_report_get(rep, i, ctypes.byref(v)))
                variants.append(VariantCost(v.rank, v.schedule.decode("utf-8"), v.cost,
                                            dict(zip(("L1", "L2", "L3", "mem"), list(v.ws_bytes))),
                                            (v.kernel_m, v.kernel_n, v.kernel_k, v.kernel_batch),
                                            v.parallel_iterations, v.parallel_efficiency, v.reduction_steps))
            text = _snprintf_call(lambda buf, n, need: lib.ps_cost_report_to_json(rep, 0, buf, n, need))
        finally:
            lib.ps_cost_report_destroy(rep)
        return CostReport(desc, variants, text)

    # -- wisdom (wisdom.h): the plan cache, saved and restored

    @property
    def cached_plans(self):
        """Number of plans in the context's plan cache."""
        return lib.ps_context_cached_plans(self._handle())

    def forget_plans(self):
        """Empties the plan cache."""
        lib.ps_context_forget_plans(self._handle())

    def export_wisdom(self, path):
        """Writes the plan cache to `path` (atomically)."""
        _check(lib.ps_wisdom_export(self._handle(), _fspath(path)))

    def import_wisdom(self, path):
        """Reads wisdom from `path`; returns the number of plans added. A corrupt
        file raises ParseError, one from another machine/version
        StaleWisdomError; either way the context keeps what it had."""
        n = ctypes.c_int()
        _check(lib.ps_wisdom_import(self._handle(), _fspath(path), ctypes.byref(n)))
        return n.value

    def import_wisdom_bytes(self, data):
        """The same from a bytes object."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise _arg_error("wisdom data must be bytes (got %s)" % type(data).__name__)
        data = bytes(data)
        n = ctypes.c_int()
        _check(lib.ps_wisdom_import_buffer(self._handle(), data, len(data), ctypes.byref(n)))
        return n.value

    def close(self):
        """Destroys the context now. Refused while plans made from it are open
        (close them first); without close() it goes when unreferenced."""
        with self._lock:
            if not self._owner:
                return
            live = [p for p in self._plans if not p.closed]
            if live:
                raise _arg_error("cannot close a context while %d of its plans are open" % len(live))
            self._owner.finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if not self._owner:
            return "<polysci.Context closed>"
        return "<polysci.Context num_threads=%d>" % self.num_threads


def _snprintf_call(call, size=4096):
    """Text from a snprintf-like C function call(buf, len, &needed)."""
    needed = ctypes.c_size_t()
    while True:
        buf = ctypes.create_string_buffer(size)
        st = call(buf, size, ctypes.byref(needed))
        if st == Status.ERR_BUFFER_TOO_SMALL and needed.value + 1 > size:
            size = needed.value + 1
            continue
        _check(st)
        return buf.value.decode("utf-8")


VariantCost = collections.namedtuple(
    "VariantCost", "rank schedule cost ws_bytes kernel parallel_iterations parallel_efficiency reduction_steps")
VariantCost.__doc__ = """One ranked candidate (ps_variant_cost): rank (1 = the
planner's first choice), schedule (text), cost (Eq. 1, lower is better),
ws_bytes ({"L1", "L2", "L3", "mem"}: bytes of working sets each level serves),
kernel ((m, n, k, batch) of the microkernel), parallel_iterations (of the
parallel band), parallel_efficiency (how evenly the threads split them: 1.0 =
evenly), reduction_steps (microkernel calls along the reduction)."""


class CostReport:
    """The result of :meth:`Context.cost_query`: ``variants`` (list of
    :class:`VariantCost` in rank order), ``json`` (ps_cost_report_to_json text),
    ``desc``. Iterable and indexable like the list; ``best`` is rank 1."""

    def __init__(self, desc, variants, json_text):
        self.desc = desc
        self.variants = variants
        self.json = json_text

    def to_dict(self):
        return json.loads(self.json)

    @property
    def best(self):
        return self.variants[0] if self.variants else None

    def schedule(self, i=0):
        """The i-th ranked variant as a :class:`Schedule` (for ctx.plan(schedule=...))."""
        return Schedule.parse(self.variants[i].schedule, self.desc.kind)

    def __len__(self):
        return len(self.variants)

    def __iter__(self):
        return iter(self.variants)

    def __getitem__(self, i):
        return self.variants[i]

    def __repr__(self):
        return "<polysci.CostReport %d variants; best %r cost %.4g>" % (
            len(self), self.best.schedule if self.best else None, self.best.cost if self.best else float("nan"))


def _fspath(path):
    import os
    p = os.fsencode(path)
    if b"\0" in p:
        raise _arg_error("path contains a NUL byte")
    return p


def _int_range(name, v, lo, hi):
    try:
        v = operator.index(v)
    except TypeError:
        raise _arg_error("%s must be an integer (got %r)" % (name, v)) from None
    if not lo <= v <= hi:
        raise _arg_error("%s = %d out of range [%d, %d]" % (name, v, lo, hi))
    return v


def _ms(name, v):
    """A duration in milliseconds as a float; the library checks its range."""
    try:
        return float(v)
    except (TypeError, ValueError):
        raise _arg_error("%s must be a number of milliseconds (got %r)" % (name, v)) from None


_default_ctx = None
_default_lock = threading.Lock()


def default_context():
    """A process-wide Context created on first use (OpenMP's thread count)."""
    global _default_ctx
    with _default_lock:
        if _default_ctx is None:
            _default_ctx = Context()
        return _default_ctx


# ----------------------------------------------------------------- descriptors


class _Desc:
    kind = None
    _FIELDS = ()

    def __init__(self):
        self._c = DescC()

    @classmethod
    def _from_c(cls, c):
        d = cls.__new__(cls)
        d._c = DescC()
        ctypes.memmove(ctypes.byref(d._c), ctypes.byref(c), ctypes.sizeof(DescC))
        return d

    @property
    def c_desc(self):
        """The ctypes ps_desc mirror (``ctypes.byref(d.c_desc)`` is a ``const ps_desc *``)."""
        return self._c

    def validate(self):
        """ps_desc_validate: raises :class:`Error` unless every field is valid."""
        _check(lib.ps_desc_validate(ctypes.byref(self._c)))
        return self

    @property
    def flops(self):
        """Nominal floating-point operations (ps_desc_flops)."""
        return lib.ps_desc_flops(ctypes.byref(self._c))

    def replace(self, **changes):
        """A copy with some constructor arguments changed."""
        kw = self._kwargs()
        kw.update(changes)
        return type(self)(**kw)

    def __eq__(self, other):
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "polysci.%s(%s)" % (type(self).__name__,
                                   ", ".join("%s=%r" % kv for kv in self._kwargs().items()))


class ConvDesc(_Desc):
    """A forward f32 convolution (ps_conv_desc).

    ConvDesc(N, C, K, H, W, R, S, stride=1, padding=0, dilation=1,
             layout="nhwc", weight_layout="kcrs", bias=False, relu=False)

    stride, dilation: an int or (h, w). padding: an int, (pad_h, pad_w) or
    (top, bottom, left, right). layout: "nhwc" or "nchw" (src and dst).
    weight_layout: "kcrs" (= "oihw", PyTorch), "krsc" (= "ohwi") or "rsck"
    (= "hwio", TensorFlow). bias adds dst[k] += bias[k]; relu clamps at 0
    after the bias.
    """
    kind = OpKind.CONV_FWD
    _INTS = ("N", "C", "K", "H", "W", "R", "S", "stride_h", "stride_w",
             "pad_top", "pad_bottom", "pad_left", "pad_right", "dilation_h", "dilation_w")

    def __init__(self, N, C, K, H, W, R, S, stride=1, padding=0, dilation=1,
                 layout="nhwc", weight_layout="kcrs", bias=False, relu=False):
        super().__init__()
        lib.ps_desc_init_conv(ctypes.byref(self._c))
        c = self._c.u.conv
        for name, v in (("N", N), ("C", C), ("K", K), ("H", H), ("W", W), ("R", R), ("S", S)):
            setattr(c, name, _int(name, v))
        c.stride_h, c.stride_w = _pair("stride", stride)
        c.dilation_h, c.dilation_w = _pair("dilation", dilation)
        if isinstance(padding, (tuple, list)) and len(padding) == 4:
            c.pad_top, c.pad_bottom, c.pad_left, c.pad_right = (_int("padding", p) for p in padding)
        else:
            ph, pw = _pair("padding", padding)
            c.pad_top = c.pad_bottom = ph
            c.pad_left = c.pad_right = pw
        c.layout = _enum("layout", layout, _LAYOUTS, ActLayout)
        c.weight_layout = _enum("weight layout", weight_layout, _WLAYOUTS, WeightLayout)
        c.post_ops = (PS_POST_BIAS if bias else 0) | (PS_POST_RELU if relu else 0)

    def __getattr__(self, name):
        if name in ConvDesc._INTS:
            return getattr(self._c.u.conv, name)
        raise AttributeError(name)

    @property
    def stride(self):
        return (self.stride_h, self.stride_w)

    @property
    def dilation(self):
        return (self.dilation_h, self.dilation_w)

    @property
    def padding(self):
        """(top, bottom, left, right)"""
        return (self.pad_top, self.pad_bottom, self.pad_left, self.pad_right)

    @property
    def layout(self):
        return ActLayout(self._c.u.conv.layout)

    @property
    def weight_layout(self):
        return WeightLayout(self._c.u.conv.weight_layout)

    @property
    def post_ops(self):
        return self._c.u.conv.post_ops

    @property
    def bias(self):
        return bool(self.post_ops & PS_POST_BIAS)

    @property
    def relu(self):
        return bool(self.post_ops & PS_POST_RELU)

    def output_size(self):
        """(OH, OW) via ps_conv_output_size (validates the descriptor)."""
        oh, ow = ctypes.c_int64(), ctypes.c_int64()
        _check(lib.ps_conv_output_size(ctypes.byref(self._c), ctypes.byref(oh), ctypes.byref(ow)))
        return oh.value, ow.value

    def _act_shape(self, ch, h, w):
        if self.layout == ActLayout.NHWC:
            return (self.N, h, w, ch)
        return (self.N, ch, h, w)

    @property
    def src_shape(self):
        """Shape of src as a C-contiguous array in the descriptor's layout."""
        return self._act_shape(self.C, self.H, self.W)

    @property
    def dst_shape(self):
        oh, ow = self.output_size()
        return self._act_shape(self.K, oh, ow)

    @property
    def weight_shape(self):
        """Shape of the user's (unpacked) weights in weight_layout."""
        K, C, R, S = self.K, self.C, self.R, self.S
        return {WeightLayout.KCRS: (K, C, R, S), WeightLayout.KRSC: (K, R, S, C),
                WeightLayout.RSCK: (R, S, C, K)}[self.weight_layout]

    @property
    def bias_shape(self):
        return (self.K,)

    def _kwargs(self):
        return dict(N=self.N, C=self.C, K=self.K, H=self.H, W=self.W, R=self.R, S=self.S,
                    stride=self.stride, padding=self.padding, dilation=self.dilation,
                    layout=self.layout.name.lower(), weight_layout=self.weight_layout.name.lower(),
                    bias=self.bias, relu=self.relu)

    def _key(self):
        return tuple(getattr(self, n) for n in self._INTS) + (int(self.layout), int(self.weight_layout), self.post_ops)


class GemmDesc(_Desc):
    """An f32 GEMM (ps_gemm_desc): C = alpha * op(A) op(B) + beta * C, with
    op(A) M x K and op(B) K x N.

    GemmDesc(M, N, K, order="col", trans_a=False, trans_b=False,
             lda=0, ldb=0, ldc=0, alpha=1.0, beta=0.0)

    order: "col" (column-major, Fortran-ordered numpy arrays) or "row"
    (row-major, C-ordered arrays). A is stored K x M when trans_a, B is stored
    N x K when trans_b. ld*: leading dimensions, 0 = tight. With beta == 0, C
    is not read.
    """
    kind = OpKind.GEMM

    def __init__(self, M, N, K, order="col", trans_a=False, trans_b=False,
                 lda=0, ldb=0, ldc=0, alpha=1.0, beta=0.0):
        super().__init__()
        lib.ps_desc_init_gemm(ctypes.byref(self._c))
        g = self._c.u.gemm
        g.M, g.N, g.K = _int("M", M), _int("N", N), _int("K", K)
        g.order = _enum("matrix order", order, _ORDERS, MatrixOrder)
        for name, v in (("trans_a", trans_a), ("trans_b", trans_b)):
            if v not in (0, 1, False, True):
                raise _arg_error("%s must be a bool (got %r)" % (name, v))
            setattr(g, name, int(v))
        g.lda, g.ldb, g.ldc = _int("lda", lda), _int("ldb", ldb), _int("ldc", ldc)
        try:
            g.alpha, g.beta = float(alpha), float(beta)
        except (TypeError, ValueError):
            raise _arg_error("alpha and beta must be numbers (got %r, %r)" % (alpha, beta)) from None

    def __getattr__(self, name):
        if name in ("M", "N", "K", "lda", "ldb", "ldc", "alpha", "beta"):
            return getattr(self._c.u.gemm, name)
        raise AttributeError(name)

    @property
    def order(self):
        return MatrixOrder(self._c.u.gemm.order)

    @property
    def trans_a(self):
        return bool(self._c.u.gemm.trans_a)

    @property
    def trans_b(self):
        return bool(self._c.u.gemm.trans_b)

    @property
    def a_shape(self):
        """(rows, cols) of A as stored: (M, K), or (K, M) when trans_a."""
        return (self.K, self.M) if self.trans_a else (self.M, self.K)

    @property
    def b_shape(self):
        return (self.N, self.K) if self.trans_b else (self.K, self.N)

    @property
    def c_shape(self):
        return (self.M, self.N)

    def _effective_ld(self, ld, shape):
        if ld:
            return ld
        return shape[0] if self.order == MatrixOrder.COL_MAJOR else shape[1]

    @property
    def effective_ld(self):
        """(lda, ldb, ldc) with the tight defaults filled in."""
        return (self._effective_ld(self.lda, self.a_shape), self._effective_ld(self.ldb, self.b_shape),
                self._effective_ld(self.ldc, self.c_shape))

    def _kwargs(self):
        return dict(M=self.M, N=self.N, K=self.K, order="col" if self.order == MatrixOrder.COL_MAJOR else "row",
                    trans_a=self.trans_a, trans_b=self.trans_b, lda=self.lda, ldb=self.ldb, ldc=self.ldc,
                    alpha=self.alpha, beta=self.beta)

    def _key(self):
        return (self.M, self.N, self.K, int(self.order), self.trans_a, self.trans_b,
                self.lda, self.ldb, self.ldc, self.alpha, self.beta)


def _desc_from_c(c):
    if c.kind == OpKind.CONV_FWD:
        return ConvDesc._from_c(c)
    if c.kind == OpKind.GEMM:
        return GemmDesc._from_c(c)
    raise Error(Status.ERR_INVALID_ARG, "descriptor of unknown kind %d" % c.kind)


def _as_desc(desc):
    if not isinstance(desc, (ConvDesc, GemmDesc)):
        raise _arg_error("expected a polysci.ConvDesc or polysci.GemmDesc (got %s)" % type(desc).__name__)
    return desc


# ----------------------------------------------------------------- schedules


class Schedule:
    """A schedule (ps_schedule): the outer loops around the microkernel.

    Build one from its text form, ``Schedule.parse("64x28x64/4 : n* k:4* oh k ow c",
    "conv")``, from a descriptor's default, ``Schedule.default(desc)``, or
    loop by loop: ``Schedule(m, n, k, batch, kind="conv").add_loop("k", 4,
    parallel=True)...``. ``str(s)`` is the text form.
    """

    def __init__(self, m, n, k, batch, kind="conv"):
        self.kind = _kind_of(kind)
        h = ctypes.c_void_p()
        _check(lib.ps_schedule_create(_int_range("m", m, -(1 << 31), (1 << 31) - 1),
                                      _int_range("n", n, -(1 << 31), (1 << 31) - 1),
                                      _int_range("k", k, -(1 << 31), (1 << 31) - 1),
                                      _int_range("batch", batch, -(1 << 31), (1 << 31) - 1),
                                      ctypes.byref(h)))
        self._owner = _Owner(h.value, lib.ps_schedule_destroy)

    @classmethod
    def _wrap(cls, h, kind):
        s = cls.__new__(cls)
        s._owner = _Owner(h.value if isinstance(h, ctypes.c_void_p) else h, lib.ps_schedule_destroy)
        s.kind = kind
        return s

    @classmethod
    def parse(cls, text, kind="conv"):
        """ps_schedule_parse. kind: "conv", "gemm", or a descriptor."""
        kind = _kind_of(kind)
        if not isinstance(text, str):
            raise _arg_error("schedule text must be a str (got %s)" % type(text).__name__)
        h = ctypes.c_void_p()
        _check(lib.ps_schedule_parse(kind, text.encode("utf-8"), ctypes.byref(h)))
        return cls._wrap(h, kind)

    @classmethod
    def default(cls, desc):
        """ps_schedule_default: the fixed-loop-order baseline for desc."""
        desc = _as_desc(desc)
        h = ctypes.c_void_p()
        _check(lib.ps_schedule_default(ctypes.byref(desc.c_desc), ctypes.byref(h)))
        return cls._wrap(h, desc.kind)

    def add_loop(self, dim, tile=1, parallel=False):
        """Appends a loop (innermost so far). dim: a loop name of this kind
        ("n k oh ow c" for conv, "m n k" for gemm) or a polysci.Dim."""
        if isinstance(dim, str):
            table = _GEMM_DIMS if self.kind == OpKind.GEMM else _DIMS
            try:
                dim = table[dim.lower()]
            except KeyError:
                raise ScheduleError(Status.ERR_INVALID_SCHEDULE, "unknown %s loop name %r (one of %s)" % (
                    "gemm" if self.kind == OpKind.GEMM else "conv", dim, " ".join(table))) from None
        _check(lib.ps_schedule_add_loop(self._handle(), int(dim), _int("tile", tile), 1 if parallel else 0))
        return self

    def check(self, desc):
        """ps_schedule_check: raises unless this schedule can run desc."""
        desc = _as_desc(desc)
        _check(lib.ps_schedule_check(self._handle(), ctypes.byref(desc.c_desc)))
        return self

    def copy(self):
        h = lib.ps_schedule_copy(self._handle())
        if not h:
            raise Error(Status.ERR_OUT_OF_MEMORY, "ps_schedule_copy: out of memory")
        return Schedule._wrap(h, self.kind)

    def format(self, kind=None):
        """The text form (ps_schedule_format)."""
        kind = self.kind if kind is None else _kind_of(kind)
        h = self._handle()
        return _snprintf_call(lambda buf, n, need: lib.ps_schedule_format(h, kind, buf, n, need), 256)

    @property
    def handle(self):
        """The ps_schedule* as an int."""
        return self._handle()

    def _handle(self):
        if not self._owner:
            raise _arg_error("the schedule is closed")
        return self._owner.ptr

    def close(self):
        self._owner.finalizer()

    def __str__(self):
        return self.format()

    def __repr__(self):
        return "polysci.Schedule.parse(%r, %r)" % (self.format(), self.kind.name.lower())

    def __eq__(self, other):
        return isinstance(other, Schedule) and self.kind == other.kind and self.format() == other.format()

    __hash__ = None


# ----------------------------------------------------------------- plans


class PackedWeights:
    """Conv weights packed for a plan (ps_plan_pack_weights), in a 64-byte
    aligned buffer this object owns. Pass it to :meth:`Plan.execute`; any plan
    with the same packed layout accepts it (the library checks the header)."""

    def __init__(self, plan, nbytes):
        self.buffer = _aligned_empty(nbytes)  # numpy uint8 view, 64-byte aligned
        self.plan_desc = plan.desc

    @property
    def nbytes(self):
        return self.buffer.nbytes

    @property
    def ptr(self):
        return self.buffer.ctypes.data

    def __repr__(self):
        return "<polysci.PackedWeights %d bytes at 0x%x>" % (self.nbytes, self.ptr)


class Workspace:
    """A scratch buffer for :meth:`Plan.execute` (ps_plan_workspace_size bytes,
    64-byte aligned). A plan may run from several threads at once, each with
    its own workspace and output."""

    def __init__(self, nbytes):
        self.buffer = _aligned_empty(nbytes)

    @property
    def nbytes(self):
        return self.buffer.nbytes

    @property
    def ptr(self):
        return self.buffer.ctypes.data


class Plan(_Closable):
    """A plan (ps_plan): created once per shape, executed many times.

    Plan(ctx, desc, schedule=None, num_threads=0, ranker="default", top_k=0,
    cache=True, time_budget_ms=0.0). schedule: None (the planner chooses), a :class:`Schedule`,
    or schedule text. num_threads: 0 = the context's. ranker: "default"
    (what measured best: "dnn" for convolutions, "none" for GEMMs),
    "cost" (PolyScientist cost model), "dnn" (pairwise neural ranking) or
    "none" (no search: the expert schedule: Schedule.default's kernel, the
    input-stationary order for convolutions whose weights fit in half of L2,
    else Schedule.default's order, with L2 band tiles for GEMMs where they
    balance over the threads). top_k:
    time the k best-ranked variants and the expert schedule, keep the fastest (0/1: purely static;
    with ranker "default" the candidates are the DNN's first k). time_budget_ms (with top_k > 1):
    planning time after which no further candidate is timed (the expert schedule and the
    ranker's first candidate are timed where both timings are predicted to fit in it, else
    nothing is and the plan is the static default's; 0: no limit). cache=False: neither
    read nor fill the context's plan cache. The plan holds a reference to
    its context.

    Conv: ``w = plan.pack_weights(weights)``, then ``plan.execute(src, w,
    bias=None, out=None)`` (or ``plan(src, w, ...)``) returns dst. GEMM:
    ``plan.gemm(a, b, c=None)`` returns c. Arrays must be float32 and laid
    out as the descriptor says; nothing is copied or converted.
    """

    def __init__(self, ctx, desc, schedule=None, num_threads=0, ranker="default", top_k=0, cache=True,
                 time_budget_ms=0.0):
        if not isinstance(ctx, Context):
            raise _arg_error("ctx must be a polysci.Context (got %s)" % type(ctx).__name__)
        desc = _as_desc(desc)
        opts = PlanOptionsC()
        lib.ps_plan_options_init(ctypes.byref(opts))
        opts.num_threads = _int_range("num_threads", num_threads, -(1 << 31), (1 << 31) - 1)
        opts.ranker = _enum("ranker", ranker, _RANKERS, Ranker)
        opts.top_k = _int_range("top_k", top_k, -(1 << 31), (1 << 31) - 1)
        opts.flags = 0 if cache else PS_PLAN_NO_CACHE
        opts.time_budget_ms = _ms("time_budget_ms", time_budget_ms)
        if isinstance(schedule, str):
            schedule = Schedule.parse(schedule, desc.kind)
        if schedule is not None:
            if not isinstance(schedule, Schedule):
                raise _arg_error("schedule must be a polysci.Schedule, schedule text or None")
            opts.schedule = schedule._handle()
        h = ctypes.c_void_p()
        with ctx._lock:
            _check(lib.ps_plan_create(ctx._handle(), ctypes.byref(desc.c_desc), ctypes.byref(opts), ctypes.byref(h)))
            # The finalizer holds the context's owner: the context outlives the plan.
            self._owner = _Owner(h.value, _destroy_plan, ctx._owner)
            self.context = ctx
            ctx._plans.add(self)
        self.desc = _desc_from_c(lib.ps_plan_get_desc(h).contents)
        self.kind = self.desc.kind
        ws = ctypes.c_size_t()
        _check(lib.ps_plan_workspace_size(h, ctypes.byref(ws)))
        self.workspace_size = ws.value
        if self.kind == OpKind.CONV_FWD:
            pb = ctypes.c_size_t()
            _check(lib.ps_plan_packed_weights_size(h, ctypes.byref(pb)))
            self.packed_weights_size = pb.value
            d = self.desc
            # Per-call constants, computed once.
            self._src_shape, self._dst_shape = d.src_shape, d.dst_shape
            self._bias_shape, self._has_bias = d.bias_shape, d.bias
            self._weight_shape = d.weight_shape
            lay = d.layout.name
            self._src_name, self._dst_name = "src (%s)" % lay, "out (%s)" % lay
        else:
            self.packed_weights_size = 0
            d = self.desc
            col = d.order == MatrixOrder.COL_MAJOR
            self._gemm = (d.a_shape, d.b_shape, d.c_shape, d.effective_ld, col, d.beta)

    # -- introspection

    _what = "plan"

    @property
    def handle(self):
        """The ps_plan* as an int."""
        return self._handle()

    @property
    def schedule(self):
        """A copy of the schedule the plan runs."""
        h = lib.ps_schedule_copy(lib.ps_plan_get_schedule(self._handle()))
        if not h:
            raise Error(Status.ERR_OUT_OF_MEMORY, "ps_schedule_copy: out of memory")
        return Schedule._wrap(h, self.kind)

    def describe(self):
        """ps_plan_describe: descriptor, schedule, kernels, sizes (text)."""
        h = self._handle()
        return _snprintf_call(lambda buf, n, need: lib.ps_plan_describe(h, buf, n, need))

    @property
    def flops(self):
        return self.desc.flops

    def new_workspace(self):
        """A :class:`Workspace` for this plan, or None when it needs none."""
        return Workspace(self.workspace_size) if self.workspace_size else None

    # -- conv

    def _need(self, kind, what):
        if self.kind != kind:
            raise _arg_error("%s needs a %s plan; this is a %s plan" % (
                what, "conv" if kind == OpKind.CONV_FWD else "gemm",
                "conv" if self.kind == OpKind.CONV_FWD else "gemm"))

    def pack_weights(self, weights):
        """Packs user weights (float32, C-contiguous, desc.weight_shape) into a
        new :class:`PackedWeights`."""
        self._need(OpKind.CONV_FWD, "pack_weights")
        ptr = _check_array("weights", weights, self._weight_shape)
        pw = PackedWeights(self, self.packed_weights_size)
        _check(lib.ps_plan_pack_weights(self._handle(), ptr, pw.ptr))
        return pw

    def _workspace_ptr(self, workspace):
        if workspace is None:
            return None
        buf = workspace.buffer if isinstance(workspace, Workspace) else workspace
        if not isinstance(buf, np.ndarray) or not buf.flags.c_contiguous or not buf.flags.writeable:
            raise _arg_error("workspace must be a polysci.Workspace or a writeable C-contiguous numpy array")
        if buf.nbytes < self.workspace_size:
            raise _arg_error("workspace has %d bytes; the plan needs %d" % (buf.nbytes, self.workspace_size))
        return buf.ctypes.data

    def execute(self, src, weights, bias=None, out=None, workspace=None):
        """Runs a conv plan: dst = conv(src, weights) (+ bias) (relu).

        src: float32 C-contiguous of desc.src_shape ((N, H, W, C) for NHWC,
        (N, C, H, W) for NCHW). weights: PackedWeights from pack_weights.
        bias: float32 (K,) when the descriptor has bias=True, else None.
        out: optional float32 C-contiguous array of desc.dst_shape, fully
        overwritten; allocated when None. Returns dst."""
        self._need(OpKind.CONV_FWD, "execute")
        args = ExecArgsC()
        lib.ps_exec_args_init(ctypes.byref(args))
        args.src = _check_array(self._src_name, src, self._src_shape)
        if not isinstance(weights, PackedWeights):
            raise _arg_error("weights must be PackedWeights from Plan.pack_weights (got %s)" % type(weights).__name__)
        args.weights = weights.ptr
        if self._has_bias:
            if bias is None:
                raise _arg_error("the plan adds a bias (bias=True) but bias is None")
            args.bias = _check_array("bias", bias, self._bias_shape)
        elif bias is not None:
            raise _arg_error("bias given but the descriptor has bias=False")
        if out is None:
            out = np.empty(self._dst_shape, dtype=np.float32)
        else:
            _check_disjoint("out", out, src=src, bias=bias)
        args.dst = _check_array(self._dst_name, out, self._dst_shape, writeable=True)
        args.workspace = self._workspace_ptr(workspace)
        _check(lib.ps_plan_execute(self._handle(), ctypes.byref(args)))
        return out

    # -- gemm

    def _check_matrix(self, name, a, shape, ld, col, writeable=False):
        if not isinstance(a, np.ndarray):
            raise _arg_error("%s must be a numpy.ndarray (got %s)" % (name, type(a).__name__))
        if a.dtype != np.float32:
            raise _arg_error("%s must have dtype float32 (got %s)" % (name, a.dtype))
        if a.shape != shape:
            raise _arg_error("%s must have shape %s as stored (got %s)" % (name, shape, a.shape))
        inner, outer = (0, 1) if col else (1, 0)
        ok = (a.shape[inner] == 1 or a.strides[inner] == 4) and (a.shape[outer] == 1 or a.strides[outer] == 4 * ld)
        if not ok:
            raise _arg_error(
                "%s must be a %s matrix with leading dimension %d (a %s array%s); got strides %s" % (
                    name, "column-major" if col else "row-major", ld,
                    "Fortran-ordered (np.asfortranarray)" if col else "C-ordered (np.ascontiguousarray)",
                    " or a view of one with that %s stride" % ("column" if col else "row") if ld != shape[inner] else "",
                    a.strides))
        if not a.flags.aligned:
            raise _arg_error("%s is not aligned to 4 bytes" % name)
        if writeable and not a.flags.writeable:
            raise _arg_error("%s is read-only" % name)
        return a.ctypes.data

    def new_c(self):
        """An uninitialised C matrix in the plan's order with its ldc (a view
        into a padded array when ldc is padded)."""
        d = self.desc
        ldc = d.effective_ld[2]
        if d.order == MatrixOrder.COL_MAJOR:
            return np.empty((ldc, d.N), dtype=np.float32, order="F")[:d.M, :]
        return np.empty((d.M, ldc), dtype=np.float32)[:, :d.N]

    def gemm(self, a, b, c=None, workspace=None):
        """Runs a GEMM plan: c = alpha * op(a) op(b) + beta * c.

        a, b, c are float32 2-D arrays with their *stored* shapes (desc.a_shape,
        b_shape, c_shape) in the plan's order: Fortran-ordered for "col",
        C-ordered for "row", with the plan's leading dimensions (views of
        wider arrays for padded ld). c may be None when beta == 0 (a new one
        is returned). Returns c."""
        self._need(OpKind.GEMM, "gemm")
        a_shape, b_shape, c_shape, (lda, ldb, ldc), col, beta = self._gemm
        args = ExecArgsC()
        lib.ps_exec_args_init(ctypes.byref(args))
        args.a = self._check_matrix("a", a, a_shape, lda, col)
        args.b = self._check_matrix("b", b, b_shape, ldb, col)
        if c is None:
            if beta != 0:
                raise _arg_error("beta = %g: c is read, so it must be given" % beta)
            c = self.new_c()
        else:
            _check_disjoint("c", c, a=a, b=b)
        args.c = self._check_matrix("c", c, c_shape, ldc, col, writeable=True)
        args.workspace = self._workspace_ptr(workspace)
        _check(lib.ps_plan_execute(self._handle(), ctypes.byref(args)))
        return c

    def __call__(self, *args, **kwargs):
        if self.kind == OpKind.GEMM:
            return self.gemm(*args, **kwargs)
        return self.execute(*args, **kwargs)

    # Cost queries are per descriptor, not per plan: Context.cost_query(self.desc).

    def close(self):
        """Destroys the plan now (else when unreferenced). PackedWeights stay valid memory."""
        _Closable.close(self)

    def __repr__(self):
        if not self._owner:
            return "<polysci.Plan closed>"
        return "<polysci.Plan %r schedule %r>" % (self.desc, str(self.schedule))
