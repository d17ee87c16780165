"""Time-iterated stencils from Python (iterated.h): one stencil update over a
1-D, 2-D or 3-D grid applied T times, planned once with time tiling
(overlapped, split or hybrid tiles derived with isl), run on numpy arrays in
place many times.

    st = polysci.IteratedStencil((4000, 4000), steps=64)          # fixed boundary
    u = st.add_array("u")
    st.set_update(u, [(u, (-1, 0), 0.125), (u, (0, -1), 0.125), (u, (0, 0), 0.5),
                      (u, (0, 1), 0.125), (u, (1, 0), 0.125)])
    plan = st.plan()                                             # the cost model's tiling
    plan.execute(grid)                                           # grid now holds step 64

or ``polysci.IteratedStencil.example("heat2d", (4000, 4000), steps=64)``.

A tap is (array, offsets, weight): offsets one integer per dimension,
outermost first. The update is evaluated in the order of its taps, each term
a fused multiply-add where the CPU has one, so every tiling gives the
step-by-step run's values bit for bit.
"""

import collections
import ctypes
import threading

from ._lib import (IterBoundary, IterExample, IterInfoC, IterOptionsC, IterPlanStatsC, IterSplitOrder, IterTapC,
                   IterTiling, Status, lib, PS_ITER_MAX_DIMS, PS_ITER_MAX_TAPS)
from ._lib import has_symbol as _lib_has, path as _lib_path
from .core import (Context, Error, _Closable, _Owner, _ThreadWorkspace, _arg_error, _check, _check_array,
                   _check_disjoint, _enum, _int, _int_range, _snprintf_call, default_context)

_BOUNDARIES = {"fixed": IterBoundary.FIXED, "dirichlet": IterBoundary.FIXED, "periodic": IterBoundary.PERIODIC}
_TILINGS = {"auto": IterTiling.AUTO, "step": IterTiling.STEP, "overlap": IterTiling.OVERLAP,
            "split": IterTiling.SPLIT, "hybrid": IterTiling.HYBRID}
_SPLIT_ORDERS = {"auto": IterSplitOrder.AUTO, "phases": IterSplitOrder.PHASES, "pipelined": IterSplitOrder.PIPELINED}
_EXAMPLES = {"heat1d": IterExample.HEAT1D, "heat2d": IterExample.HEAT2D, "heat3d": IterExample.HEAT3D,
             "jacobi2d": IterExample.JACOBI2D}
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


def has_iterated():
    """True when the loaded library plans and runs iterated stencils."""
    return _lib_has("ps_iter_plan_create") and _lib_has("ps_iter_execute")


def _need():
    if not has_iterated():
        raise Error(Status.ERR_UNSUPPORTED, "the loaded libpolysci (%s) has no iterated stencils" % _lib_path)


def _extents(shape):
    try:
        dims = [_int("shape", v) for v in shape]
    except TypeError:
        dims = [_int("shape", shape)]
    if not 1 <= len(dims) <= PS_ITER_MAX_DIMS:
        raise _arg_error("shape must have 1 to %d extents (got %d)" % (PS_ITER_MAX_DIMS, len(dims)))
    return dims


IterInfo = collections.namedtuple("IterInfo", "shape boundary steps n_arrays radius updated_points taps")
IterInfo.__doc__ = """A descriptor's facts (ps_iter_get_info): shape (extents,
outermost first), boundary ("fixed" or "periodic"), steps, n_arrays, radius
(per dimension, over the updates set so far), updated_points (per array and
step: the interior, or the whole grid when periodic), taps (multiply-adds per
grid point and step, all updates)."""

IterPlanStats = collections.namedtuple(
    "IterPlanStats", "tiling band tile skew_width phases split_order points_computed points_needed "
                     "redundant_fraction scratch_bytes workspace_bytes model_ms plan_ms")
IterPlanStats.__doc__ = """An iterated plan's choice and counts
(ps_iter_plan_get_stats): tiling ("step", "overlap", "split" or "hybrid"),
band (time steps per band), tile (per dimension; the extent where untiled),
skew_width (the hybrid's skewed tiles, else 0), phases (barrier-separated
phases per band), split_order ("phases" or "pipelined" for split tiles, else
None), points_computed / points_needed (one execute, all arrays),
redundant_fraction (computed / needed - 1), scratch_bytes (per thread),
workspace_bytes, model_ms (the cost model's estimate), plan_ms."""


def _name(table, value):
    return next(k for k, v in table.items() if v == value)


class IteratedStencil(_Closable):
    """An iterated-stencil descriptor (ps_iter).

    IteratedStencil(shape, steps, boundary="fixed"): a grid of 1 to 3
    extents (outermost first; the last is contiguous), ``steps`` >= 0
    applications of the update, boundary "fixed" (cells within the radius of
    a face keep their values) or "periodic" (every cell updated, reads wrap
    around). Add arrays with :meth:`add_array`, give each one update with
    :meth:`set_update`, then :meth:`plan`.

    Every call checks its arguments and leaves the descriptor unchanged on
    error. The descriptor may be planned from several threads; changing it
    is serialised by a lock.
    """

    def __init__(self, shape, steps, boundary="fixed"):
        self._create(lib.ps_iter_create, shape, steps, boundary)

    @classmethod
    def example(cls, which, shape, steps, boundary="fixed"):
        """A benchmark stencil (ps_iter_create_example) over `shape`, one array
        "u": "heat1d" (3 taps), "heat2d" (5), "heat3d" (7), "jacobi2d" (9),
        with the coefficients of PolyBench / Pluto and of bench/stencil's
        Halide versions."""
        kind = _enum("example", which, _EXAMPLES, IterExample)
        self = cls.__new__(cls)
        self._create(lambda ndim, n, bnd, t, h: lib.ps_iter_create_example(kind, n, bnd, t, h), shape, steps, boundary)
        return self

    def _create(self, create, shape, steps, boundary):
        """Checks the arguments, calls create(ndim, extents, boundary, steps,
        &handle) and takes the descriptor it gives."""
        _need()
        dims = _extents(shape)
        n = (ctypes.c_int64 * PS_ITER_MAX_DIMS)(*(dims + [1] * (PS_ITER_MAX_DIMS - len(dims))))
        h = ctypes.c_void_p()
        _check(create(len(dims), n, _enum("boundary", boundary, _BOUNDARIES, IterBoundary), _int("steps", steps),
                      ctypes.byref(h)))
        self._owner = _Owner(h.value, lib.ps_iter_destroy)
        self._lock = threading.RLock()

    _what = "descriptor"

    @property
    def handle(self):
        """The ps_iter* as an int (owned by this object)."""
        return self._handle()

    @property
    def info(self):
        """An :class:`IterInfo`."""
        i = IterInfoC()
        i.struct_size = ctypes.sizeof(i)
        _check(lib.ps_iter_get_info(self._handle(), ctypes.byref(i)))
        boundary = "periodic" if i.boundary == IterBoundary.PERIODIC else "fixed"
        return IterInfo(tuple(i.n[:i.ndim]), boundary, i.steps, i.n_arrays, tuple(i.radius[:i.ndim]),
                        i.updated_points, i.taps)

    @property
    def shape(self):
        return self.info.shape

    def add_array(self, name=None):
        """A new array (numbered from 0 in the order of these calls); returns
        its number. name: at most 63 bytes (None: "a<number>")."""
        if name is not None and not isinstance(name, str):
            raise _arg_error("name must be a str or None (got %s)" % type(name).__name__)
        idx = ctypes.c_int(-1)
        with self._lock:
            _check(lib.ps_iter_add_array(self._handle(), None if name is None else name.encode("utf-8"),
                                         ctypes.byref(idx)))
        return idx.value

    def set_update(self, array, taps, constant=0.0):
        """The update of `array`: a'(i) = constant + sum of weight * src(i +
        offsets) over `taps`, a sequence of (src_array, offsets, weight) with
        one offset per dimension (|offset| <= 16), evaluated in that order.
        Each array gets exactly one update."""
        ndim = len(self.shape)
        try:
            items = list(taps)
        except TypeError:
            raise _arg_error("taps must be a sequence of (array, offsets, weight)") from None
        if not 1 <= len(items) <= PS_ITER_MAX_TAPS:
            raise _arg_error("an update has 1 to %d taps (got %d)" % (PS_ITER_MAX_TAPS, len(items)))
        c = (IterTapC * len(items))()
        for k, t in enumerate(items):
            try:
                src, offsets, weight = t
            except (TypeError, ValueError):
                raise _arg_error("tap %d must be (array, offsets, weight) (got %r)" % (k, t)) from None
            try:
                offs = [_int_range("tap %d offset" % k, o, _INT_MIN, _INT_MAX) for o in offsets]
            except TypeError:
                offs = [_int_range("tap %d offset" % k, offsets, _INT_MIN, _INT_MAX)]
            if len(offs) != ndim:
                raise _arg_error("tap %d has %d offsets; the grid has %d dimensions" % (k, len(offs), ndim))
            c[k].array = _int_range("tap %d array" % k, src, _INT_MIN, _INT_MAX)
            for d in range(PS_ITER_MAX_DIMS):
                c[k].offset[d] = offs[d] if d < ndim else 0
            try:
                c[k].weight = float(weight)
            except (TypeError, ValueError):
                raise _arg_error("tap %d weight must be a number (got %r)" % (k, weight)) from None
        try:
            const = float(constant)
        except (TypeError, ValueError):
            raise _arg_error("constant must be a number (got %r)" % (constant,)) from None
        with self._lock:
            _check(lib.ps_iter_set_update(self._handle(), _int_range("array", array, _INT_MIN, _INT_MAX), len(items),
                                          c, const))

    def get_update(self, array):
        """(name, taps, constant) of `array`; taps as set_update takes them
        (an empty list before its update is set)."""
        h = self._handle()
        a = _int_range("array", array, _INT_MIN, _INT_MAX)
        name, n, const = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_float()
        _check(lib.ps_iter_get_update(h, a, ctypes.byref(name), ctypes.byref(n), None, 0, ctypes.byref(const)))
        c = (IterTapC * max(n.value, 1))()
        _check(lib.ps_iter_get_update(h, a, None, ctypes.byref(n), c, n.value, None))
        ndim = len(self.shape)
        taps = [(c[k].array, tuple(c[k].offset[:ndim]), c[k].weight) for k in range(n.value)]
        return name.value.decode("utf-8"), taps, const.value

    def plan(self, ctx=None, **options):
        """An :class:`IteratedPlan` (see there for the options)."""
        return IteratedPlan(ctx if ctx is not None else default_context(), self, **options)

    def __repr__(self):
        if not self._owner:
            return "<polysci.IteratedStencil closed>"
        i = self.info
        return "<polysci.IteratedStencil %s %s, %d steps, %d array%s>" % (
            "x".join(map(str, i.shape)), i.boundary, i.steps, i.n_arrays, "" if i.n_arrays == 1 else "s")


def _destroy_iter_plan(ptr, ctx_owner):
    lib.ps_iter_plan_destroy(ptr)


class IteratedPlan(_Closable, _ThreadWorkspace):
    """A plan of an :class:`IteratedStencil` (ps_iter_plan): created once,
    executed many times.

    IteratedPlan(ctx, stencil, tiling="auto", band=0, tile=None,
    skew_width=0, split_order="auto", threads=0), or ``stencil.plan(...)``.
    tiling: "auto" (the cost model's choice), "step", "overlap", "split" or
    "hybrid". band: time steps per band (0: the model's). tile: None, an int
    for every dimension, or one per dimension (0: the model's; the extent or
    more: untiled). skew_width: the hybrid's skewed tiles (0: the model's).
    split_order: "auto", "phases" (seed 003) or "pipelined" (each thread a
    block of tiles; include/polysci/iterated.h). threads: 0 = the context's.

    The plan copies what it needs from the descriptor and holds a reference
    to its context. ``plan(*arrays)`` runs it in place: one float32
    C-contiguous array of the grid's shape per array of the descriptor (or a
    single array), read as step 0 and left holding step T. The workspace is
    allocated once per calling thread, so one plan may run from several
    threads at once on distinct arrays.
    """

    def __init__(self, ctx, stencil, tiling="auto", band=0, tile=None, skew_width=0, split_order="auto", threads=0):
        if not isinstance(ctx, Context):
            raise _arg_error("ctx must be a polysci.Context (got %s)" % type(ctx).__name__)
        if not isinstance(stencil, IteratedStencil):
            raise _arg_error("stencil must be a polysci.IteratedStencil (got %s)" % type(stencil).__name__)
        _need()
        opts = IterOptionsC()
        lib.ps_iter_options_init(ctypes.byref(opts))
        opts.num_threads = _int_range("threads", threads, _INT_MIN, _INT_MAX)
        opts.tiling = _enum("tiling", tiling, _TILINGS, IterTiling)
        opts.band = _int("band", band)
        opts.skew_width = _int("skew_width", skew_width)
        opts.split_order = _enum("split_order", split_order, _SPLIT_ORDERS, IterSplitOrder)
        with stencil._lock:
            info = stencil.info
            if tile is not None:
                try:
                    tiles = [_int("tile", t) for t in tile]
                except TypeError:
                    tiles = [_int("tile", tile)] * len(info.shape)
                if len(tiles) != len(info.shape):
                    raise _arg_error("tile has %d entries; the grid has %d dimensions" % (len(tiles), len(info.shape)))
                for d, t in enumerate(tiles):
                    opts.tile[d] = t
            h = ctypes.c_void_p()
            with ctx._lock:
                _check(lib.ps_iter_plan_create(ctx._handle(), stencil._handle(), ctypes.byref(opts), ctypes.byref(h)))
                self._owner = _Owner(h.value, _destroy_iter_plan, ctx._owner)
                self.context = ctx
                ctx._plans.add(self)
        self.shape = info.shape
        self.n_arrays = info.n_arrays
        ws = ctypes.c_size_t()
        _check(lib.ps_iter_plan_workspace_size(h, ctypes.byref(ws)))
        self.workspace_size = ws.value
        self._tls = threading.local()

    _what = "plan"

    @property
    def handle(self):
        """The ps_iter_plan* as an int."""
        return self._handle()

    def describe(self):
        """ps_iter_plan_describe: the dependences isl found, the conditions
        each tiling rests on, the choice with its sizes, redundant work and
        the modelled cost of every tiling's best candidate (text)."""
        h = self._handle()
        return _snprintf_call(lambda buf, n, need: lib.ps_iter_plan_describe(h, buf, n, need), 16384)

    @property
    def stats(self):
        """An :class:`IterPlanStats`."""
        s = IterPlanStatsC()
        s.struct_size = ctypes.sizeof(s)
        _check(lib.ps_iter_plan_get_stats(self._handle(), ctypes.byref(s)))
        order = _name(_SPLIT_ORDERS, IterSplitOrder(s.split_order)) if s.tiling == IterTiling.SPLIT else None
        return IterPlanStats(_name(_TILINGS, IterTiling(s.tiling)), s.band, tuple(s.tile[:len(self.shape)]),
                             s.skew_width, s.phases, order,
                             s.points_computed, s.points_needed, s.redundant_fraction, s.scratch_bytes,
                             s.workspace_bytes, s.model_ms, s.plan_ms)

    def execute(self, *arrays):
        """Runs the plan in place (see the class); returns the arrays (the
        array when there is one)."""
        h = self._handle()
        if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)):
            arrays = tuple(arrays[0])
        if len(arrays) != self.n_arrays:
            raise _arg_error("the stencil has %d array%s; got %d" % (self.n_arrays, "" if self.n_arrays == 1 else "s",
                                                                      len(arrays)))
        ptrs = (ctypes.c_void_p * max(len(arrays), 1))(
            *(_check_array("array %d" % i, a, self.shape, writeable=True) for i, a in enumerate(arrays)))
        for i, a in enumerate(arrays):
            _check_disjoint("array %d" % i, a, **{"array %d" % j: b for j, b in enumerate(arrays[:i])})
        _check(lib.ps_iter_execute(h, ptrs, self._workspace()))
        return arrays[0] if len(arrays) == 1 else arrays

    __call__ = execute

    def __repr__(self):
        if not self._owner:
            return "<polysci.IteratedPlan closed>"
        s = self.stats
        return "<polysci.IteratedPlan %s, band %d, tile %s, redundant %.2f%%>" % (
            s.tiling, s.band, "x".join(map(str, s.tile)), 100 * s.redundant_fraction)
