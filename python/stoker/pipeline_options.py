"""stoker.pipeline_options: the options of ``Pipeline`` / ``@pipeline_def`` that DALI has and
stoker treats its own way, in one table, and the checks of the outputs DALI's
``output_dtype`` / ``output_ndim`` ask for.

Each DALI option is either mapped onto stoker's (``set_affinity``, ``default_cuda_stream_priority``,
``experimental_exec_dynamic``), checked (``output_dtype``, ``output_ndim``, ``py_callback_pickler``,
``debug``), or accepted with no effect because stoker already behaves that way and results cannot
differ (the NO_EFFECT rows; docs/porting.md lists them with the same words). Not on a hot path
except check_outputs (once per batch, only when output_dtype/output_ndim were given).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .errors import ArgumentError, ArgumentTypeError
from .types import DALIDataType

#: DALI options that change nothing in stoker, and why (accepted so DALI code runs unchanged)
NO_EFFECT: Dict[str, str] = {
    "exec_pipelined": "stoker always overlaps reading, decoding and GPU work",
    "exec_async": "stoker always prepares batches on its own threads, ahead of run()",
    "bytes_per_sample": "stoker sizes its buffers itself (a steady-state batch allocates nothing)",
    "max_streams": "stoker chooses its CUDA streams itself",
    "enable_memory_stats": "stoker prints no operator memory statistics (Pipeline.stats() has its counters)",
    "enable_conditionals": "accepted; a pipeline that uses if/else on data raises TypeError naming it",
}


def dali_stream_priority(priority: Optional[int], stream_priority: Optional[str]) -> str:
    """stoker's stream_priority for DALI's default_cuda_stream_priority (CUDA's numbering: lower is
    higher; negative values ask for a priority above the default)."""
    if stream_priority is not None:
        return stream_priority
    if priority is None:
        return "high"
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ArgumentTypeError("default_cuda_stream_priority must be an int, got %r" % (priority,))
    return "high" if priority < 0 else "normal"


def check_start_method(py_start_method: str, py_callback_pickler: Any) -> None:
    """DALI's rule: a callback pickler is for the spawn start method only."""
    if py_callback_pickler is not None and py_start_method == "fork":
        raise ArgumentError("py_callback_pickler should not be set when the 'fork' start method is used")


def check_debug(debug: Any) -> None:
    if debug:
        raise ArgumentError("debug=True (DALI's eager debug mode) is not supported by stoker; run the pipeline and "
                            "inspect its outputs instead (docs/porting.md)")


def _per_output(value: Any, count: int, what: str) -> List[Any]:
    values = list(value) if isinstance(value, (list, tuple)) else [value] * count
    if len(values) != count:
        raise RuntimeError("%s has %d entries but the pipeline has %d outputs" % (what, len(values), count))
    return values


def normalize_output_dtype(output_dtype: Any) -> Any:
    """DALI's checks of output_dtype at construction: DALIDataType values (or None)."""
    values = output_dtype if isinstance(output_dtype, (list, tuple)) else [output_dtype]
    for dtype in values:
        if dtype is not None and not isinstance(dtype, DALIDataType):
            raise ArgumentTypeError("output_dtype must be a types.DALIDataType, a list of those or None; found %s"
                                    % type(dtype).__name__)
        if dtype == DALIDataType.NO_TYPE:
            raise ArgumentError("output_dtype cannot be types.NO_TYPE")
    return output_dtype


def normalize_output_ndim(output_ndim: Any) -> Any:
    values = output_ndim if isinstance(output_ndim, (list, tuple)) else [output_ndim]
    for ndim in values:
        if ndim is not None and (not isinstance(ndim, int) or isinstance(ndim, bool)):
            raise ArgumentTypeError("output_ndim must be an int, a list of those or None; found %s"
                                    % type(ndim).__name__)
        if ndim is not None and ndim < 0:
            raise ArgumentError("output_ndim must not be negative, got %d" % ndim)
    return output_ndim


def check_outputs(outputs: Sequence[Any], output_dtype: Any, output_ndim: Any) -> None:
    """RuntimeError when an output's type or sample dimensions differ from what the pipeline
    declared (DALI checks after every iteration)."""
    if output_dtype is not None:
        for i, (want, out) in enumerate(zip(_per_output(output_dtype, len(outputs), "output_dtype"), outputs)):
            if want is not None and out.dtype != want:
                raise RuntimeError("output %d (%s) has type %s, but output_dtype says %s"
                                   % (i, out.name, out.dtype, want))
    if output_ndim is not None:
        for i, (want, out) in enumerate(zip(_per_output(output_ndim, len(outputs), "output_ndim"), outputs)):
            shapes = out.shape()
            if want is not None and shapes and len(shapes[0]) != want:
                raise RuntimeError("output %d (%s) has %d-dimensional samples, but output_ndim says %d"
                                   % (i, out.name, len(shapes[0]), want))
