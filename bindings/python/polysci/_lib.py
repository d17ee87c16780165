"""Low level: finding libpolysci, mirroring its structs in ctypes, prototypes.

Everything here follows include/polysci/*.h exactly. The struct mirrors are
checked against the library when it is loaded (see ``_check_abi``): every
``*_init`` function of the C API writes ``sizeof`` of its struct into
``struct_size``, so the library itself reports the sizes it was compiled
with, and the defaults it writes land at the offsets we expect.
"""

import ctypes
import ctypes.util
import enum
import os

# ----------------------------------------------------------------- enums

PS_SUCCESS = 0


class Status(enum.IntEnum):
    """ps_status (include/polysci/status.h)."""
    SUCCESS = 0
    ERR_NULL_POINTER = 1
    ERR_INVALID_ARG = 2
    ERR_UNSUPPORTED = 3
    ERR_OVERFLOW = 4
    ERR_OUT_OF_MEMORY = 5
    ERR_INVALID_SCHEDULE = 6
    ERR_BACKEND = 7
    ERR_BAD_WEIGHTS = 8
    ERR_BUFFER_TOO_SMALL = 9
    ERR_IO = 10
    ERR_PARSE = 11
    ERR_STALE = 12


class OpKind(enum.IntEnum):
    CONV_FWD = 1
    GEMM = 2


class ActLayout(enum.IntEnum):
    NHWC = 0
    NCHW = 1


class WeightLayout(enum.IntEnum):
    KCRS = 0  # oihw: PyTorch
    KRSC = 1  # ohwi
    RSCK = 2  # hwio: TensorFlow


class MatrixOrder(enum.IntEnum):
    COL_MAJOR = 0
    ROW_MAJOR = 1


class Ranker(enum.IntEnum):
    """ps_ranker: how the planner orders candidate schedules."""
    DEFAULT = 0  # the ranker that measured best: DNN for convolutions of N >= 2 where the L3 is fast, else NONE
    COST = 1     # PolyScientist cost model
    DNN = 2      # pairwise neural ranking
    NONE = 3     # no search: the expert schedule (fixed order; GEMMs: L2 band tiles)
    VOLUME = 4   # Eq. 1 over estimated data volumes per level


class Dim(enum.IntEnum):
    N = 0
    K = 1
    OH = 2
    OW = 3
    C = 4


class Boundary(enum.IntEnum):
    """ps_boundary (graph.h): how a stage answers reads outside its input's domain."""
    ZERO = 0
    CLAMP = 1
    VALID = 2
    IGNORE = 3


class Reduce(enum.IntEnum):
    """ps_reduce (graph.h)."""
    SUM = 0
    MAX = 1
    MIN = 2


class Resample(enum.IntEnum):
    """ps_resample (graph.h)."""
    UP2_NEAREST = 0
    UP2_BILINEAR = 1
    DOWN2_AVERAGE = 2


class Fusion(enum.IntEnum):
    """ps_fusion (graph.h): how the graph planner groups stages."""
    DP = 0
    GREEDY = 1
    NONE = 2
    FIXED = 3


class ExprOp(enum.IntEnum):
    """ps_expr_op (expr.h)."""
    CONST = 0
    INPUT = 1
    NEG = 10
    ABS = 11
    SQRT = 12
    EXP = 13
    LOG = 14
    FLOOR = 15
    ADD = 20
    SUB = 21
    MUL = 22
    DIV = 23
    MIN = 24
    MAX = 25
    LT = 30
    LE = 31
    GT = 32
    GE = 33
    EQ = 34
    NE = 35
    SELECT = 40
    CLAMP = 41


class IterBoundary(enum.IntEnum):
    """ps_iter_boundary (iterated.h)."""
    FIXED = 0
    PERIODIC = 1


class IterTiling(enum.IntEnum):
    """ps_iter_tiling (iterated.h)."""
    AUTO = 0
    STEP = 1
    OVERLAP = 2
    SPLIT = 3
    HYBRID = 4


class IterSplitOrder(enum.IntEnum):
    """ps_iter_split_order (iterated.h)."""
    AUTO = 0
    PHASES = 1
    PIPELINED = 2


class IterExample(enum.IntEnum):
    """ps_iter_example (iterated.h)."""
    HEAT1D = 0
    HEAT2D = 1
    HEAT3D = 2
    JACOBI2D = 3


PS_ITER_MAX_DIMS = 3
PS_ITER_MAX_ARRAYS = 8
PS_ITER_MAX_TAPS = 1024
PS_ITER_MAX_OFFSET = 16
PS_ITER_NAME_MAX = 63

PS_GRAPH_MAX_TENSORS = 4096
PS_STENCIL_MAX_TAPS = 1024
PS_STENCIL_MAX_STRIDE = 8
PS_GRAPH_NAME_MAX = 63
PS_POINTWISE_MAX_INPUTS = 16  # ps_graph_add_pointwise: 1 <= n_inputs <= 16
PS_GRAPH_NO_INLINE = 1
PS_GRAPH_NO_EPILOGUE = 2
PS_GRAPH_NO_CODEGEN = 8

PS_POST_BIAS = 1
PS_POST_RELU = 2
PS_PLAN_NO_CACHE = 1
PS_SCHEDULE_MAX_LOOPS = 16

# C enums are int-sized with the compilers and ABIs polysci supports
# (checked below through the struct sizes the library reports).
c_enum = ctypes.c_int

# ----------------------------------------------------------------- structs


class ConvDescC(ctypes.Structure):
    _fields_ = [
        ("N", ctypes.c_int64), ("C", ctypes.c_int64), ("K", ctypes.c_int64),
        ("H", ctypes.c_int64), ("W", ctypes.c_int64),
        ("R", ctypes.c_int64), ("S", ctypes.c_int64),
        ("stride_h", ctypes.c_int64), ("stride_w", ctypes.c_int64),
        ("pad_top", ctypes.c_int64), ("pad_bottom", ctypes.c_int64),
        ("pad_left", ctypes.c_int64), ("pad_right", ctypes.c_int64),
        ("dilation_h", ctypes.c_int64), ("dilation_w", ctypes.c_int64),
        ("layout", c_enum),
        ("weight_layout", c_enum),
        ("post_ops", ctypes.c_uint),
        ("dst_pixel_stride", ctypes.c_int64),
    ]


class GemmDescC(ctypes.Structure):
    _fields_ = [
        ("M", ctypes.c_int64), ("N", ctypes.c_int64), ("K", ctypes.c_int64),
        ("order", c_enum),
        ("trans_a", ctypes.c_int), ("trans_b", ctypes.c_int),
        ("lda", ctypes.c_int64), ("ldb", ctypes.c_int64), ("ldc", ctypes.c_int64),
        ("alpha", ctypes.c_float), ("beta", ctypes.c_float),
    ]


class _DescUnion(ctypes.Union):
    _fields_ = [
        ("conv", ConvDescC),
        ("gemm", GemmDescC),
        ("reserved_", ctypes.c_ubyte * 512),
    ]


class DescC(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("kind", c_enum),
        ("u", _DescUnion),
    ]


class ContextOptionsC(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("num_threads", ctypes.c_int),
        ("memory_limit", ctypes.c_size_t),
        ("n_cache_sizes", ctypes.c_int),
        ("cache_sizes", ctypes.c_size_t * 4),
    ]


class PlanOptionsC(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("schedule", ctypes.c_void_p),  # const ps_schedule *
        ("num_threads", ctypes.c_int),
        ("ranker", c_enum),
        ("top_k", ctypes.c_int),
        ("flags", ctypes.c_uint),
        ("time_budget_ms", ctypes.c_double),
    ]


class ExecArgsC(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("src", ctypes.c_void_p),
        ("weights", ctypes.c_void_p),
        ("bias", ctypes.c_void_p),
        ("dst", ctypes.c_void_p),
        ("a", ctypes.c_void_p),
        ("b", ctypes.c_void_p),
        ("c", ctypes.c_void_p),
        ("workspace", ctypes.c_void_p),
        ("sum", ctypes.c_void_p),
    ]


class ConvStageC(ctypes.Structure):
    """ps_conv_stage (graph_dl.h)."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("input", ctypes.c_int),
        ("k", ctypes.c_int64), ("groups", ctypes.c_int64),
        ("r", ctypes.c_int), ("s", ctypes.c_int),
        ("stride_h", ctypes.c_int), ("stride_w", ctypes.c_int),
        ("dilation_h", ctypes.c_int), ("dilation_w", ctypes.c_int),
        ("pad_top", ctypes.c_int), ("pad_bottom", ctypes.c_int), ("pad_left", ctypes.c_int), ("pad_right", ctypes.c_int),
        ("weights", ctypes.POINTER(ctypes.c_float)),
        ("bias", ctypes.POINTER(ctypes.c_float)),
    ]


class PoolStageC(ctypes.Structure):
    """ps_pool_stage (graph_dl.h)."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("input", ctypes.c_int),
        ("kind", c_enum),
        ("r", ctypes.c_int), ("s", ctypes.c_int),
        ("stride_h", ctypes.c_int), ("stride_w", ctypes.c_int),
        ("pad_top", ctypes.c_int), ("pad_bottom", ctypes.c_int), ("pad_left", ctypes.c_int), ("pad_right", ctypes.c_int),
        ("ceil_mode", ctypes.c_int),
    ]


class StencilC(ctypes.Structure):
    """ps_stencil (graph.h)."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("input", ctypes.c_int),       # ps_tensor
        ("boundary", c_enum),
        ("reduce", c_enum),
        ("stride_h", ctypes.c_int), ("stride_w", ctypes.c_int),
        ("n_taps", ctypes.c_int),
        ("dy", ctypes.POINTER(ctypes.c_int)), ("dx", ctypes.POINTER(ctypes.c_int)),
        ("weights", ctypes.POINTER(ctypes.c_float)),
        ("per_channel_weights", ctypes.c_int),
    ]


class TensorInfoC(ctypes.Structure):
    """ps_tensor_info (graph.h). No *_init: the caller sets struct_size and the
    library rejects any other value with the size it expects (test_abi)."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("name", ctypes.c_char_p),     # owned by the graph
        ("n", ctypes.c_int64), ("h", ctypes.c_int64), ("w", ctypes.c_int64), ("c", ctypes.c_int64),
        ("y0", ctypes.c_int64), ("x0", ctypes.c_int64),
        ("is_input", ctypes.c_int),
        ("output_index", ctypes.c_int),
        ("layout", c_enum),
    ]


class GraphOptionsC(ctypes.Structure):
    """ps_graph_options (graph.h)."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("num_threads", ctypes.c_int),
        ("fusion", c_enum),
        ("tile_h", ctypes.c_int64), ("tile_w", ctypes.c_int64), ("chunk_w", ctypes.c_int64),
        ("group_of", ctypes.POINTER(ctypes.c_int)),
        ("n_group_of", ctypes.c_int),
        ("group_limit", ctypes.c_int),
        ("flags", ctypes.c_uint),
        ("layer_top_k", ctypes.c_int),
        ("layer_time_budget_ms", ctypes.c_double),
    ]


class GraphPlanStatsC(ctypes.Structure):
    """ps_graph_plan_stats (graph.h). No *_init: checked like TensorInfoC."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("n_stages", ctypes.c_int),
        ("n_groups", ctypes.c_int),
        ("plan_ms", ctypes.c_double),
        ("redundant_fraction", ctypes.c_double),
        ("scratch_bytes", ctypes.c_size_t),
        ("workspace_bytes", ctypes.c_size_t),
        ("cost", ctypes.c_double),
    ]


class IterTapC(ctypes.Structure):
    """ps_iter_tap (iterated.h)."""
    _fields_ = [
        ("array", ctypes.c_int),
        ("offset", ctypes.c_int * PS_ITER_MAX_DIMS),
        ("weight", ctypes.c_float),
    ]


class IterInfoC(ctypes.Structure):
    """ps_iter_info (iterated.h). No *_init: ps_iter_get_info checks struct_size."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("ndim", ctypes.c_int),
        ("n", ctypes.c_int64 * PS_ITER_MAX_DIMS),
        ("boundary", c_enum),
        ("steps", ctypes.c_int64),
        ("n_arrays", ctypes.c_int),
        ("radius", ctypes.c_int * PS_ITER_MAX_DIMS),
        ("updated_points", ctypes.c_int64),
        ("taps", ctypes.c_int64),
    ]


class IterOptionsC(ctypes.Structure):
    """ps_iter_options (iterated.h)."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("num_threads", ctypes.c_int),
        ("tiling", c_enum),
        ("band", ctypes.c_int64),
        ("tile", ctypes.c_int64 * PS_ITER_MAX_DIMS),
        ("skew_width", ctypes.c_int64),
        ("split_order", c_enum),
    ]


class IterPlanStatsC(ctypes.Structure):
    """ps_iter_plan_stats (iterated.h). No *_init: ps_iter_plan_get_stats checks struct_size."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("tiling", c_enum),
        ("band", ctypes.c_int64),
        ("tile", ctypes.c_int64 * PS_ITER_MAX_DIMS),
        ("skew_width", ctypes.c_int64),
        ("phases", ctypes.c_int),
        ("split_order", c_enum),
        ("points_computed", ctypes.c_double),
        ("points_needed", ctypes.c_double),
        ("redundant_fraction", ctypes.c_double),
        ("scratch_bytes", ctypes.c_size_t),
        ("workspace_bytes", ctypes.c_size_t),
        ("model_ms", ctypes.c_double),
        ("plan_ms", ctypes.c_double),
    ]


# ----------------------------------------------------------------- loading

_HERE = os.path.dirname(os.path.abspath(__file__))
# bindings/python/polysci -> repository root
_REPO = os.path.normpath(os.path.join(_HERE, "..", "..", ".."))
_LIBNAMES = ("libpolysci.so", "libpolysci.so.1", "libpolysci.dylib")


def candidate_paths():
    """Where the library is looked for, in order (see README.md)."""
    out = []
    env = os.environ.get("POLYSCI_LIBRARY")
    if env:
        out.append(("POLYSCI_LIBRARY", env))
        return out
    for n in _LIBNAMES:
        out.append(("package", os.path.join(_HERE, n)))
    for n in _LIBNAMES:
        out.append(("build tree", os.path.join(_REPO, "build", "lib", n)))
    found = ctypes.util.find_library("polysci")
    if found:
        out.append(("system", found))
    return out


class LibraryNotFound(ImportError):
    pass


def _load():
    tried = []
    for origin, path in candidate_paths():
        if origin != "system" and not os.path.exists(path):
            tried.append("%s (%s): not found" % (path, origin))
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s): %s" % (path, origin, e))
            if origin == "POLYSCI_LIBRARY":
                break
    raise LibraryNotFound(
        "polysci: cannot load libpolysci. Set POLYSCI_LIBRARY to the path of "
        "libpolysci.so, put it next to the package, or build it into build/lib "
        "of the repository (cmake -S . -B build && cmake --build build --target polysci).\n  tried: "
        + "\n  tried: ".join(tried))


lib, path = _load()

_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_st = c_enum

_PROTOTYPES = {
    # version.h
    "ps_version": (ctypes.c_char_p, []),
    "ps_api_version": (ctypes.c_int, []),
    # status.h
    "ps_status_str": (ctypes.c_char_p, [_st]),
    "ps_last_error_message": (ctypes.c_char_p, []),
    # context.h
    "ps_context_options_init": (None, [_p]),
    "ps_context_create": (_st, [ctypes.POINTER(ContextOptionsC), _pp]),
    "ps_context_destroy": (None, [_p]),
    "ps_context_num_threads": (ctypes.c_int, [_p]),
    # desc.h
    "ps_desc_init_conv": (None, [_p]),
    "ps_desc_init_gemm": (None, [_p]),
    "ps_desc_validate": (_st, [ctypes.POINTER(DescC)]),
    "ps_conv_output_size": (_st, [ctypes.POINTER(DescC), ctypes.POINTER(ctypes.c_int64),
                                  ctypes.POINTER(ctypes.c_int64)]),
    "ps_desc_flops": (ctypes.c_double, [ctypes.POINTER(DescC)]),
    # schedule.h
    "ps_schedule_create": (_st, [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, _pp]),
    "ps_schedule_add_loop": (_st, [_p, c_enum, ctypes.c_int64, ctypes.c_int]),
    "ps_schedule_parse": (_st, [c_enum, ctypes.c_char_p, _pp]),
    "ps_schedule_format": (_st, [_p, c_enum, ctypes.c_char_p, ctypes.c_size_t,
                                 ctypes.POINTER(ctypes.c_size_t)]),
    "ps_schedule_copy": (_p, [_p]),
    "ps_schedule_destroy": (None, [_p]),
    "ps_schedule_check": (_st, [_p, ctypes.POINTER(DescC)]),
    "ps_schedule_default": (_st, [ctypes.POINTER(DescC), _pp]),
    # plan.h
    "ps_plan_options_init": (None, [_p]),
    "ps_plan_create": (_st, [_p, ctypes.POINTER(DescC), ctypes.POINTER(PlanOptionsC), _pp]),
    "ps_plan_destroy": (None, [_p]),
    "ps_plan_get_desc": (ctypes.POINTER(DescC), [_p]),
    "ps_plan_get_schedule": (_p, [_p]),
    "ps_plan_describe": (_st, [_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "ps_plan_packed_weights_size": (_st, [_p, ctypes.POINTER(ctypes.c_size_t)]),
    "ps_plan_pack_weights": (_st, [_p, _p, _p]),
    "ps_plan_workspace_size": (_st, [_p, ctypes.POINTER(ctypes.c_size_t)]),
    "ps_exec_args_init": (None, [_p]),
    "ps_plan_execute": (_st, [_p, ctypes.POINTER(ExecArgsC)]),
    "ps_conv_execute": (_st, [_p, _p, _p, _p, _p]),
    "ps_gemm_execute": (_st, [_p, _p, _p, _p]),
    # wisdom.h
    "ps_wisdom_export": (_st, [_p, ctypes.c_char_p]),
    "ps_wisdom_import": (_st, [_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "ps_wisdom_import_buffer": (_st, [_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]),
    "ps_context_cached_plans": (ctypes.c_int, [_p]),
    "ps_context_forget_plans": (None, [_p]),
}

for _name, (_res, _args) in _PROTOTYPES.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        raise ImportError("polysci: %s does not export %s (library and bindings out of step?)"
                          % (path, _name)) from None
    _f.restype = _res
    _f.argtypes = _args

# Optional entry points: bound only when the loaded library has them (they
# are newer than the core API), so the bindings still load against an older
# libpolysci; the Python methods using them raise PS_ERR_UNSUPPORTED there.


class VariantCostC(ctypes.Structure):
    """ps_variant_cost (cost.h). No struct_size to check it by; the tests
    compare it field by field with ps_cost_report_to_json."""
    _fields_ = [
        ("rank", ctypes.c_int),
        ("schedule", ctypes.c_char_p),  # owned by the report
        ("cost", ctypes.c_double),
        ("ws_bytes", ctypes.c_double * 4),  # PS_COST_L1, L2, L3, MEM
        ("kernel_m", ctypes.c_int),
        ("kernel_n", ctypes.c_int),
        ("kernel_k", ctypes.c_int),
        ("kernel_batch", ctypes.c_int),
        ("parallel_iterations", ctypes.c_longlong),
        ("parallel_efficiency", ctypes.c_double),
        ("reduction_steps", ctypes.c_longlong),
    ]


PS_COST_LEVELS = 4

_OPTIONAL_PROTOTYPES = {
    # cost.h
    "ps_cost_query": (_st, [_p, ctypes.POINTER(DescC), ctypes.POINTER(PlanOptionsC), _pp]),
    "ps_cost_report_size": (ctypes.c_int, [_p]),
    "ps_cost_report_get": (_st, [_p, ctypes.c_int, ctypes.POINTER(VariantCostC)]),
    "ps_cost_report_to_json": (_st, [_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_size_t)]),
    "ps_cost_report_destroy": (None, [_p]),
    # expr.h
    "ps_expr_const": (_p, [ctypes.c_float]),
    "ps_expr_input": (_p, [ctypes.c_int]),
    "ps_expr_unary": (_p, [c_enum, _p]),
    "ps_expr_binary": (_p, [c_enum, _p, _p]),
    "ps_expr_select": (_p, [_p, _p, _p]),
    "ps_expr_clamp": (_p, [_p, _p, _p]),
    "ps_expr_copy": (_p, [_p]),
    "ps_expr_free": (None, [_p]),
    "ps_expr_to_str": (ctypes.c_int, [_p, ctypes.c_char_p, ctypes.c_int]),
    # graph.h: building
    "ps_stencil_init": (None, [_p]),
    "ps_graph_create": (_st, [_pp]),
    "ps_graph_destroy": (None, [_p]),
    "ps_graph_add_input": (_st, [_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                 ctypes.c_int64, c_enum, ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_add_stencil": (_st, [_p, ctypes.c_char_p, ctypes.POINTER(StencilC), ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_add_pointwise": (_st, [_p, ctypes.c_char_p, _p, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                     ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_add_channel_mix": (_st, [_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int64,
                                       ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_float),
                                       ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_add_resample": (_st, [_p, ctypes.c_char_p, ctypes.c_int, c_enum, c_enum, ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_mark_output": (_st, [_p, ctypes.c_int, c_enum]),
    # graph_dl.h
    "ps_conv_stage_init": (None, [_p]),
    "ps_pool_stage_init": (None, [_p]),
    "ps_graph_add_conv": (_st, [_p, ctypes.c_char_p, ctypes.POINTER(ConvStageC), ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_add_pool": (_st, [_p, ctypes.c_char_p, ctypes.POINTER(PoolStageC), ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_add_batchnorm": (_st, [_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float),
                                     ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_float),
                                     ctypes.POINTER(ctypes.c_float), ctypes.c_float, ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_add_concat": (_st, [_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                  ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_add_global_avg_pool": (_st, [_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]),
    "ps_graph_set_output_region": (_st, [_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                         ctypes.c_int64]),
    # graph.h: introspection
    "ps_graph_num_tensors": (ctypes.c_int, [_p]),
    "ps_graph_num_inputs": (ctypes.c_int, [_p]),
    "ps_graph_num_outputs": (ctypes.c_int, [_p]),
    "ps_graph_tensor_info": (_st, [_p, ctypes.c_int, ctypes.POINTER(TensorInfoC)]),
    "ps_graph_input": (ctypes.c_int, [_p, ctypes.c_int]),
    "ps_graph_output": (ctypes.c_int, [_p, ctypes.c_int]),
    # graph.h: planning and execution
    "ps_graph_options_init": (None, [_p]),
    "ps_graph_plan_create": (_st, [_p, _p, ctypes.POINTER(GraphOptionsC), _pp]),
    "ps_graph_plan_destroy": (None, [_p]),
    "ps_graph_plan_workspace_size": (_st, [_p, ctypes.POINTER(ctypes.c_size_t)]),
    "ps_graph_execute": (_st, [_p, _pp, _pp, _p]),
    "ps_graph_plan_describe": (_st, [_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "ps_graph_plan_get_stats": (_st, [_p, ctypes.POINTER(GraphPlanStatsC)]),
    # iterated.h
    "ps_iter_create": (_st, [ctypes.c_int, ctypes.POINTER(ctypes.c_int64), c_enum, ctypes.c_int64, _pp]),
    "ps_iter_destroy": (None, [_p]),
    "ps_iter_add_array": (_st, [_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "ps_iter_set_update": (_st, [_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(IterTapC), ctypes.c_float]),
    "ps_iter_create_example": (_st, [c_enum, ctypes.POINTER(ctypes.c_int64), c_enum, ctypes.c_int64, _pp]),
    "ps_iter_get_info": (_st, [_p, ctypes.POINTER(IterInfoC)]),
    "ps_iter_get_update": (_st, [_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int),
                                 ctypes.POINTER(IterTapC), ctypes.c_int, ctypes.POINTER(ctypes.c_float)]),
    "ps_iter_options_init": (None, [_p]),
    "ps_iter_plan_create": (_st, [_p, _p, ctypes.POINTER(IterOptionsC), _pp]),
    "ps_iter_plan_destroy": (None, [_p]),
    "ps_iter_plan_workspace_size": (_st, [_p, ctypes.POINTER(ctypes.c_size_t)]),
    "ps_iter_execute": (_st, [_p, _pp, _p]),
    "ps_iter_plan_describe": (_st, [_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "ps_iter_plan_get_stats": (_st, [_p, ctypes.POINTER(IterPlanStatsC)]),
}

for _name, (_res, _args) in _OPTIONAL_PROTOTYPES.items():
    _f = getattr(lib, _name, None)
    if _f is not None:
        _f.restype = _res
        _f.argtypes = _args

OPTIONAL_SYMBOLS = tuple(_OPTIONAL_PROTOTYPES)


def has_symbol(name):
    try:
        getattr(lib, name)
        return True
    except AttributeError:
        return False


# ----------------------------------------------------------------- ABI check

class AbiMismatch(ImportError):
    pass


def _reported_size(init):
    """struct_size that the library's *_init writes (its sizeof)."""
    buf = (ctypes.c_ubyte * 4096)()
    init(ctypes.cast(buf, ctypes.c_void_p))
    return ctypes.c_size_t.from_buffer(buf).value


def _check_abi():
    problems = []
    for what, init, cls in (
            ("ps_desc (conv init)", lib.ps_desc_init_conv, DescC),
            ("ps_desc (gemm init)", lib.ps_desc_init_gemm, DescC),
            ("ps_context_options", lib.ps_context_options_init, ContextOptionsC),
            ("ps_plan_options", lib.ps_plan_options_init, PlanOptionsC),
            ("ps_exec_args", lib.ps_exec_args_init, ExecArgsC),
            ("ps_stencil", getattr(lib, "ps_stencil_init", None), StencilC),
            ("ps_conv_stage", getattr(lib, "ps_conv_stage_init", None), ConvStageC),
            ("ps_pool_stage", getattr(lib, "ps_pool_stage_init", None), PoolStageC),
            ("ps_graph_options", getattr(lib, "ps_graph_options_init", None), GraphOptionsC),
            ("ps_iter_options", getattr(lib, "ps_iter_options_init", None), IterOptionsC)):
        if init is None:  # an optional struct the loaded library predates
            continue
        got = _reported_size(init)
        if got != ctypes.sizeof(cls):
            problems.append("sizeof(%s): library %d, bindings %d" % (what, got, ctypes.sizeof(cls)))
    # Defaults land where the mirrors expect them (offsets of enum/float fields).
    d = DescC()
    lib.ps_desc_init_conv(ctypes.byref(d))
    c = d.u.conv
    if (d.kind, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w, c.layout, c.weight_layout, c.post_ops) != \
            (OpKind.CONV_FWD, 1, 1, 1, 1, ActLayout.NHWC, WeightLayout.KCRS, 0):
        problems.append("ps_desc_init_conv defaults are not where ps_conv_desc's mirror expects them")
    d = DescC()
    lib.ps_desc_init_gemm(ctypes.byref(d))
    g = d.u.gemm
    if (d.kind, g.order, g.alpha, g.beta, g.trans_a, g.trans_b) != (OpKind.GEMM, MatrixOrder.COL_MAJOR, 1.0, 0.0, 0, 0):
        problems.append("ps_desc_init_gemm defaults are not where ps_gemm_desc's mirror expects them")
    if has_symbol("ps_stencil_init"):
        st = StencilC()
        lib.ps_stencil_init(ctypes.byref(st))
        if (st.input, st.boundary, st.reduce, st.stride_h, st.stride_w, st.n_taps, st.per_channel_weights) != \
                (-1, Boundary.CLAMP, Reduce.SUM, 1, 1, 0, 0):
            problems.append("ps_stencil_init defaults are not where ps_stencil's mirror expects them")
    if lib.ps_api_version() != 1:
        problems.append("PS_API_VERSION of the library is %d; the bindings speak 1" % lib.ps_api_version())
    if problems:
        raise AbiMismatch("polysci: %s does not match the bindings: %s" % (path, "; ".join(problems)))


_check_abi()
