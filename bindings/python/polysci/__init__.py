"""polysci: f32 convolutions and GEMMs planned as outer-loop schedules around
LIBXSMM batch-reduce GEMM microkernels — Python bindings (ctypes over the C API).

    import numpy as np, polysci
    ctx = polysci.Context()
    desc = polysci.ConvDesc(N=1, C=64, K=64, H=56, W=56, R=3, S=3, padding=1)
    plan = ctx.plan(desc)
    w = plan.pack_weights(weights)            # (K, C, R, S) float32
    y = plan.execute(x, w)                    # x: (N, H, W, C) float32

Fused pipelines of stencils, pointwise expressions, channel mixes and
resampling (polysci.Graph, see graph.py):

    g = polysci.Graph()
    x = g.input("x", shape=(1, 480, 640, 1))
    bx = g.stencil(x, taps=[(0, -1, 1/3), (0, 0, 1/3), (0, 1, 1/3)])
    g.output(g.pointwise(lambda a, b: 2 * a - b, x, bx))
    out = g.plan()(x_array)

Stencils applied T times, time-tiled (polysci.IteratedStencil, see
iterated.py):

    st = polysci.IteratedStencil.example("heat2d", (4000, 4000), steps=64)
    st.plan()(grid)                           # grid: (4000, 4000) float32, now step 64

The shared library is found through $POLYSCI_LIBRARY, next to this package,
in <repo>/build/lib, or on the system library path. See README.md.
"""

from ._lib import (ActLayout, Boundary, Dim, ExprOp, Fusion, MatrixOrder, OpKind, Ranker, Reduce, Resample, Status,
                   WeightLayout, LibraryNotFound, AbiMismatch, has_symbol)
from ._lib import path as library_path
from ._lib import lib as _clib
from .core import (ALIGNMENT, ArgumentError, Context, ConvDesc, CostReport, Error, GemmDesc, PackedWeights, VariantCost,
                   ParseError, Plan, Schedule, ScheduleError, StaleWisdomError, Workspace,
                   default_context)
from .graph import (Expr, Graph, GraphPlan, GraphPlanStats, Tensor, TensorInfo, clamp, exp, floor, has_engine, inp,
                    log, maximum, minimum, select, sqrt)
from .iterated import IterInfo, IteratedPlan, IteratedStencil, IterPlanStats, has_iterated

__all__ = [
    "ActLayout", "Boundary", "Dim", "ExprOp", "Fusion", "MatrixOrder", "OpKind", "Ranker", "Reduce", "Resample",
    "Status", "WeightLayout",
    "LibraryNotFound", "AbiMismatch", "has_symbol", "library_path",
    "ALIGNMENT", "ArgumentError", "Context", "ConvDesc", "CostReport", "Error", "GemmDesc", "PackedWeights",
    "VariantCost",
    "ParseError", "Plan", "Schedule", "ScheduleError", "StaleWisdomError", "Workspace", "default_context",
    "Expr", "Graph", "GraphPlan", "GraphPlanStats", "Tensor", "TensorInfo", "clamp", "exp", "floor", "has_engine",
    "inp", "log", "maximum", "minimum", "select", "sqrt",
    "IterInfo", "IteratedPlan", "IteratedStencil", "IterPlanStats", "has_iterated",
    "version", "api_version",
]


def version():
    """The loaded library's version string (ps_version)."""
    return _clib.ps_version().decode("ascii")


def api_version():
    """PS_API_VERSION of the loaded library."""
    return _clib.ps_api_version()


__version__ = version()
