"""polysci: f32 convolutions and GEMMs planned as outer-loop schedules around
LIBXSMM batch-reduce GEMM microkernels — Python bindings (ctypes over the C API).

    import numpy as np, polysci
    ctx = polysci.Context()
    desc = polysci.ConvDesc(N=1, C=64, K=64, H=56, W=56, R=3, S=3, padding=1)
    plan = ctx.plan(desc)
    w = plan.pack_weights(weights)            # (K, C, R, S) float32
    y = plan.execute(x, w)                    # x: (N, H, W, C) float32

The shared library is found through $POLYSCI_LIBRARY, next to this package,
in <repo>/build/lib, or on the system library path. See README.md.
"""

from ._lib import (ActLayout, Dim, MatrixOrder, OpKind, Ranker, Status, WeightLayout,
                   LibraryNotFound, AbiMismatch, has_symbol)
from ._lib import path as library_path
from ._lib import lib as _clib
from .core import (ALIGNMENT, ArgumentError, Context, ConvDesc, CostReport, Error, GemmDesc, PackedWeights, VariantCost,
                   ParseError, Plan, Schedule, ScheduleError, StaleWisdomError, Workspace,
                   default_context)

__all__ = [
    "ActLayout", "Dim", "MatrixOrder", "OpKind", "Ranker", "Status", "WeightLayout",
    "LibraryNotFound", "AbiMismatch", "has_symbol", "library_path",
    "ALIGNMENT", "ArgumentError", "Context", "ConvDesc", "CostReport", "Error", "GemmDesc", "PackedWeights",
    "VariantCost",
    "ParseError", "Plan", "Schedule", "ScheduleError", "StaleWisdomError", "Workspace", "default_context",
    "version", "api_version",
]


def version():
    """The loaded library's version string (ps_version)."""
    return _clib.ps_version().decode("ascii")


def api_version():
    """PS_API_VERSION of the loaded library."""
    return _clib.ps_api_version()


__version__ = version()
