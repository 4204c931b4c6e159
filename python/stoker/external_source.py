"""stoker.external_source: ``fn.external_source`` (DALI's spelling and semantics) and the driver
that calls the user's ``source`` and feeds the C pipeline.

The C operator ``external_source`` is a reader whose batches come from ``stk_pipeline_feed_input``;
the pipeline never plans a batch ahead of its data. As in DALI, the Python ``source`` is called on
the consumer's thread: ``Pipeline.run()`` first tops the fed queue up to ``prefetch_queue_depth``
iterations (calling the source), then takes the next batch. When the source is exhausted, an end
mark is fed, and once the batches fed before it are consumed ``run()`` raises StopIteration;
``reset()`` starts the next epoch (a cycling source restarts, see ``cycle``).

``source`` forms (DALI's):

* an iterable (not callable), or a generator function: ``next()`` gives a batch (``batch=True``)
  or one sample (``batch=False``); ``cycle`` = ``"no"``/``False``/``None`` (iterated once: once
  exhausted, every epoch ends at once), ``"quiet"``/``True`` (restarts silently, never ends),
  ``"raise"`` (ends the epoch, restarts after ``reset()``);
* a callable: ``batch=True``: called with no argument, or with the iteration index (an int), or
  with a :class:`BatchInfo` when ``batch_info=True``; ``batch=False``: called once per sample,
  with a :class:`SampleInfo` (idx_in_epoch, idx_in_batch, iteration, epoch_idx) when it takes an
  argument. Raising StopIteration ends the epoch.

A batch is a list of arrays (one per sample; shapes may differ), or one array whose first axis is
the batch; with ``num_outputs`` a tuple of that many batches (or, per sample, of that many
arrays). Anything NumPy can view (``np.asarray``: NumPy arrays, CPU torch tensors, lists) is
accepted, and so are GPU arrays (``__cuda_array_interface__``: torch CUDA tensors, CuPy; CUDA
DLPack producers; stoker.gpu_input), C-contiguous, on the pipeline's GPU, read by their device
pointers (no host copy). ``device="gpu"`` makes the node a GPU node: GPU arrays are copied
device-to-device into the pipeline's own GPU memory when fed (after the producer's stream, as the
CUDA array interface's ``stream`` says), or with ``no_copy=True`` borrowed until their batch is
released and copied into the batch on the pipeline's stream; host arrays are copied up by the
pipeline. ``device="cpu"`` fed GPU arrays copies them to host memory.

Hot path: the driver runs once per batch (per sample with ``batch=False``).
"""
import collections
import inspect
import sys
from typing import Any, Optional

import numpy as np

from .errors import ArgumentError, StokerError
from .gpu_input import gpu_array, is_gpu_array
from .graph import DataNode
from .types import BatchInfo, SampleInfo  # noqa: F401  (parallel_source imports them from here)

# stk_dtype codes (include/stoker/pipeline.h) and stoker's type names, by NumPy type name.
_DTYPES = {
    "uint8": (0, "uint8"),
    "int32": (1, "int32"),
    "int64": (2, "int64"),
    "float32": (3, "float"),
    "float16": (4, "float16"),
    "bool": (5, "bool"),
    "int8": (6, "int8"),
    "int16": (7, "int16"),
    "uint16": (8, "uint16"),
    "uint32": (9, "uint32"),
    "uint64": (10, "uint64"),
    "float64": (11, "float64"),
}
_TYPE_NAMES = {code: name for code, name in _DTYPES.values()}
# the same codes by NumPy dtype (native byte order; others are looked up by name, as before)
_DTYPE_CODES = {np.dtype(name): code for name, (code, _) in _DTYPES.items()}


def _dtype_name(op_name, value):
    """stoker's type name for a dtype given as a NumPy dtype, a string or a DALI-like type."""
    name = getattr(value, "name", value)
    if isinstance(name, str) and name.upper() == name:  # DALI's types.UINT8 spelling
        name = name.lower()
    if name == "float":
        name = "float32"
    try:
        key = np.dtype(name).name
    except TypeError:
        key = str(name)
    if key not in _DTYPES:
        raise ArgumentError("%s: argument 'dtype' %r is not a supported type (%s)" % (op_name, value, ", ".join(_DTYPES)))
    return _DTYPES[key][1]


def _per_output(op_name, arg, value, num_outputs, convert):
    if value is None:
        return []
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) not in (1, num_outputs):
        raise ArgumentError("%s: argument '%s' has %d entries; give one, or one per output (num_outputs=%d)"
                            % (op_name, arg, len(values), num_outputs))
    return [convert(v) for v in values]


class _Source:
    """Calls one external source's ``source`` and turns what it gives into feeds."""

    def __init__(self, name, source, num_outputs, batch, batch_info, cycle, layouts, no_copy, multiple):
        self.name = name
        self.num_outputs = num_outputs
        self.multiple = multiple  # the source gives a tuple of num_outputs batches/samples
        self.batch = batch
        self.layouts = layouts
        self.no_copy = no_copy
        self.source = source
        self.device_id = -1  # the pipeline's GPU: GPU arrays that do not say theirs are taken to be on it
        self.epoch_idx = 0
        self.iteration = 0
        self.idx_in_epoch = 0
        self.queue = collections.deque()  # feed_input batches not fed yet: (outputs, layouts, no_copy)
        self.dtype_codes = []  # per output: the stk_dtype code the `dtype` argument asks for ([] = any)
        self.ndims = []
        self._iterator = None
        self._call = None
        self._call_takes_info = False
        self._cycle = cycle
        if source is None:
            return
        if inspect.isgeneratorfunction(source) or not callable(source):
            self._factory = source if inspect.isgeneratorfunction(source) else (lambda: iter(source))
            try:
                self._iterator = iter(self._factory())
            except TypeError:
                raise ArgumentError("external_source %s: source must be callable or iterable, got %r" % (name, source))
        else:
            if cycle not in ("no", None):
                raise ArgumentError("external_source %s: cycle applies to an iterable (or generator function) "
                                    "source, not a callable" % name)
            self._call, self._call_takes_info = self._callable_adapter(source, batch, batch_info)

    @staticmethod
    def _callable_adapter(source, batch, batch_info):
        """(a function of the BatchInfo/SampleInfo, whether the source takes one argument)."""
        try:
            params = [p for p in inspect.signature(source).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
            takes_arg = len(params) >= 1
        except (TypeError, ValueError):  # builtins without a signature
            takes_arg = False
        if not takes_arg:
            return (lambda info: source()), False
        if batch and not batch_info:
            return (lambda info: source(info.iteration)), True
        return source, True

    # -- one step ------------------------------------------------------------------------------
    def _next_item(self, info):
        """One batch (batch=True) or sample from the source; StopIteration at the end."""
        if self._call is not None:
            return self._call(info)
        try:
            return next(self._iterator)
        except StopIteration:
            if self._cycle in ("quiet", True):
                self._iterator = iter(self._factory())
                return next(self._iterator)  # an empty source ends even when cycling
            raise

    def next_batch(self, batch_size, dynamic):
        """The next batch as num_outputs lists of arrays (or dense arrays), or None at the end."""
        if self.batch:
            item = self._next_item(BatchInfo(self.iteration, self.epoch_idx))
            outputs = self._split(item, "batch")
        else:
            samples = []
            for i in range(batch_size):
                info = SampleInfo(self.idx_in_epoch + i, i, self.iteration, self.epoch_idx)
                try:
                    samples.append(self._split(self._next_item(info), "sample"))
                except StopIteration:
                    if not samples or not dynamic:
                        raise  # a partial batch is dropped without exec_dynamic (its size must be batch_size)
                    break
            self.idx_in_epoch += len(samples)
            outputs = [[sample[o] for sample in samples] for o in range(self.num_outputs)]
        self.iteration += 1
        return outputs

    def _split(self, item, what):
        if not self.multiple:
            return [item]
        if not isinstance(item, (tuple, list)) or len(item) != self.num_outputs:
            raise StokerError("external_source %s: with num_outputs=%d the source must give a tuple of %d %ses, got %s"
                              % (self.name, self.num_outputs, self.num_outputs, what, type(item).__name__))
        return list(item)

    def take_fed(self, data, layout, no_copy):
        """pipe.feed_input's batch (a tuple of num_outputs batches with num_outputs) queued until the
        group feeds it: (outputs, layouts, no_copy)."""
        if self.source is not None:
            raise StokerError("feed_input: external_source %s has a source; feed_input is for one without" % self.name)
        outputs = list(data) if self.multiple else [data]
        if len(outputs) != self.num_outputs:
            raise ArgumentError("feed_input(%s): give a tuple of %d batches (num_outputs)"
                                % (self.name, self.num_outputs))
        layouts = self.layouts
        if layout is not None:
            given = [layout] * self.num_outputs if isinstance(layout, str) else list(layout)
            for o, (want, got) in enumerate(zip(self.layouts, given)):
                if want and got and want != got:
                    raise StokerError("external_source %s: sample 0 of output %d has the wrong layout "
                                      "(\"%s\", expected \"%s\")" % (self.name, o, got, want))
            layouts = given
        self.queue.append((outputs, layouts, self.no_copy if no_copy is None else bool(no_copy)))

    def check(self, descriptions, count):
        """dtype/ndim of the described samples (output-major) against the arguments."""
        for o in range(self.num_outputs):
            for s in range(count):
                d = descriptions[o * count + s]
                if self.dtype_codes and d[1] != self.dtype_codes[o]:
                    raise StokerError("external_source %s: sample %d of output %d has the wrong dtype (%s, expected %s)"
                                      % (self.name, s, o, _TYPE_NAMES[d[1]], _TYPE_NAMES[self.dtype_codes[o]]))
                if self.ndims and len(d[2]) != self.ndims[o]:
                    raise StokerError("external_source %s: sample %d of output %d has the wrong number of dimensions "
                                      "(%d, expected ndim=%d)" % (self.name, s, o, len(d[2]), self.ndims[o]))

    def resume(self, epoch, position, batch_size):
        """A checkpoint restore, with DALI's rule: a callable taking the batch index, BatchInfo or
        SampleInfo continues from the checkpoint's batch `position` of `epoch`; any other source
        (an iterable, a generator, a callable without an argument) has no state in the checkpoint
        and starts from its beginning."""
        self.queue.clear()
        self.epoch_idx = epoch
        if self.resumable:
            self.iteration = position
            self.idx_in_epoch = position * batch_size
            return
        self.iteration = self.idx_in_epoch = 0
        if self._iterator is not None:
            self._iterator = iter(self._factory())

    @property
    def resumable(self):
        """DALI checkpoints a source only when it is a callable taking one argument."""
        return self._call is not None and self._call_takes_info

    def restart(self):
        """A new epoch (reset): cycle="raise" and generator functions rewind; "no" does not."""
        self.queue.clear()
        self.epoch_idx += 1
        self.iteration = 0
        self.idx_in_epoch = 0
        if self._iterator is not None and self._cycle == "raise":
            self._iterator = iter(self._factory())


def _refuse_oversized(where, value, no_copy, host_budget):
    """A host array over the pipeline's host memory budget is refused by its declared size, before
    NumPy makes it contiguous (a 0-stride view of 3 GiB would be copied whole) or C copies it.
    `where` is the sample's name, or a callable giving it (formatted only for the error)."""
    nbytes = getattr(value, "nbytes", None)
    if no_copy or not host_budget or not isinstance(nbytes, int) or nbytes <= host_budget:
        return
    raise StokerError("%s holds %.1f MiB, more than the host memory budget of %.1f MiB; refused before copying it"
                      % (where() if callable(where) else where, nbytes / 1048576.0, host_budget / 1048576.0))


def _torch_tensor_type():
    """torch.Tensor when the process has imported torch (never imported here), else None."""
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None)


_TORCH_CODES = {}  # torch dtype -> stk_dtype code, filled on first use


def _torch_code(torch_dtype):
    if not _TORCH_CODES:
        torch = sys.modules["torch"]
        for name, (code, _) in _DTYPES.items():
            if hasattr(torch, name):
                _TORCH_CODES[getattr(torch, name)] = code
    return _TORCH_CODES.get(torch_dtype)


def _torch_stream(tensor):
    """The producer's stream of a torch CUDA tensor: torch's current stream on its device (whose
    queued work the feed waits for), in stoker.gpu_input's convention (1: the legacy default
    stream, which torch calls 0)."""
    stream = sys.modules["torch"].cuda.current_stream(tensor.device).cuda_stream
    return stream or 1


def _describe_torch_cuda(name, tensor, output, sample, layout):
    """A torch CUDA tensor's description read from the tensor itself (what DLPack would give,
    without a capsule per sample): pointer, dtype, shape, bytes, GPU ordinal."""
    code = _torch_code(tensor.dtype)
    if code is None:
        raise StokerError("external_source %s: sample %d of output %d has dtype %s, which stoker does not carry (%s)"
                          % (name, sample, output, tensor.dtype, ", ".join(_DTYPES)))
    if not tensor.is_contiguous():
        raise StokerError("external_source %s: sample %d of output %d is a non-contiguous GPU array (strides %s for "
                          "shape %s); make it contiguous first (e.g. tensor.contiguous())"
                          % (name, sample, output, tuple(tensor.stride()), tuple(tensor.shape)))
    return (tensor.data_ptr(), code, tuple(tensor.shape), tensor.numel() * tensor.element_size(), layout, 1,
            tensor.get_device())


def describe_batch(name, outputs, layouts, no_copy, device_id=-1, host_budget=0):
    """(sample descriptions for the C feed, sample count, arrays to keep alive, producer's CUDA
    stream or 0). GPU arrays (stoker.gpu_input) are described by their device pointers; errors
    name the source and the sample. Host arrays over host_budget bytes (0: not checked) are
    refused before any copy unless borrowed (no_copy). NumPy arrays and torch CUDA tensors, the
    common samples, are read directly (a few attribute reads each); the rest as before."""
    descriptions = [[] for _ in outputs]
    keep = []
    streams = set()
    count = None
    tensor_type = _torch_tensor_type()
    for o, batch in enumerate(outputs):
        layout = layouts[o] if o < len(layouts) else ""
        described = descriptions[o]
        if isinstance(batch, (list, tuple)):
            torch_stream = None
            for s, sample in enumerate(batch):
                # contiguous, native, of a carried dtype, not 0-d (made 1-d below): read directly
                code = _DTYPE_CODES.get(sample.dtype) if type(sample) is np.ndarray else None
                if code is not None and sample.ndim and sample.flags.c_contiguous:
                    if host_budget and not no_copy:
                        _refuse_oversized(lambda: _where(name, s, o), sample, no_copy, host_budget)
                    described.append((sample.ctypes.data, code, sample.shape, sample.nbytes, layout))
                    keep.append(sample)
                    continue
                if tensor_type is not None and isinstance(sample, tensor_type) and sample.is_cuda:
                    described.append(_describe_torch_cuda(name, sample, o, s, layout))
                    if torch_stream is None:
                        torch_stream = _torch_stream(sample)
                        streams.add(torch_stream)
                    keep.append(sample)
                    continue
                if is_gpu_array(sample):
                    array = gpu_array(sample, _where(name, s, o), device_id)
                    streams.add(array.stream)
                    described.append(_describe_gpu(name, array, array.pointer, array.shape, o, s, layout))
                    keep.append(array.owner)
                    continue
                _refuse_oversized(lambda: _where(name, s, o), sample, no_copy, host_budget)
                try:
                    array = _native(np.ascontiguousarray(sample))
                except Exception as error:  # noqa: BLE001 - reported with the source and sample
                    raise StokerError("%s is not an array: %s" % (_where(name, s, o), error)) from None
                keep.append(array)
                described.append(_describe(name, array, array.ctypes.data, array.shape, o, s, layout))
            n = len(batch)
        elif is_gpu_array(batch):
            array = gpu_array(batch, "external_source %s: output %d" % (name, o), device_id)
            _check_batch_axis(name, o, array.shape)
            streams.add(array.stream)
            keep.append(array.owner)
            n = array.shape[0]
            stride = array.nbytes // n if n else 0
            for s in range(n):
                described.append(_describe_gpu(name, array, array.pointer + s * stride, array.shape[1:], o, s, layout))
        else:
            _refuse_oversized("external_source %s: output %d" % (name, o), batch, no_copy, host_budget)
            array = _native(np.ascontiguousarray(batch))
            _check_batch_axis(name, o, array.shape)
            keep.append(array)
            n = array.shape[0]
            stride = array.nbytes // n if n else 0
            base = array.ctypes.data
            for s in range(n):
                described.append(_describe(name, array, base + s * stride, array.shape[1:], o, s, layout))
        if count is None:
            count = n
        elif n != count:
            raise StokerError("external_source %s: output %d has %d samples but output 0 has %d" % (name, o, n, count))
    streams.discard(None)
    if len(streams) > 1:
        raise StokerError("external_source %s: the GPU arrays of one batch come from %d different CUDA streams %s; "
                          "give them on one stream (or synchronize first)" % (name, len(streams), sorted(streams)))
    flat = [d for per_output in descriptions for d in per_output]
    return flat, count or 0, keep, (streams.pop() if streams else 0)


def _native(array):
    """array in the machine's byte order (a big-endian '>u2' sample keeps its values; C reads native)."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def _where(name, sample, output):
    return "external_source %s: sample %d of output %d" % (name, sample, output)


def _check_batch_axis(name, output, shape):
    if len(shape) < 1:
        raise StokerError("external_source %s: output %d is a scalar; a batch is a list of samples or an array "
                          "whose first axis is the batch" % (name, output))


def _describe(name, array, pointer, shape, output, sample, layout):
    entry = _DTYPES.get(array.dtype.name)
    if entry is None:
        raise StokerError("external_source %s: sample %d of output %d has dtype %s, which stoker does not carry (%s)"
                          % (name, sample, output, array.dtype, ", ".join(_DTYPES)))
    nbytes = int(np.prod(shape, dtype=np.int64)) * array.dtype.itemsize
    return (pointer, entry[0], tuple(int(d) for d in shape), nbytes, layout)


def _describe_gpu(name, array, pointer, shape, output, sample, layout):
    """A GPU sample's description: the host one plus the GPU ordinal (the C side checks it)."""
    return _describe(name, array, pointer, shape, output, sample, layout) + (1, int(array.device_id))


def external_source(source=None, num_outputs=None, *, batch=True, batch_info=False, cycle=None, name=None,
                    device="cpu", layout=None, dtype=None, ndim=None, no_copy=False, parallel=False,
                    prefetch_queue_depth=None, blocking=None, cuda_stream=None, use_copy_kernel=None, **unknown):
    """A graph input fed from Python (DALI's ``fn.external_source``); see the module's doc.

    ``name`` is the node name ``pipe.feed_input(name, data)`` feeds (generated when not given);
    without ``source`` the data comes only from ``feed_input``. ``dtype``, ``ndim`` and
    ``layout`` (one, or one per output) are checked on every fed sample; a mismatch raises naming
    the source, the output and the sample. ``no_copy=True`` borrows the arrays instead of copying
    them (stoker keeps them referenced until the batch made from them is released). Returns one
    node, or a tuple of ``num_outputs`` nodes. A pipeline may have several external sources
    (stoker.source_group: one batch from each per iteration, of one size, on one device).
    ``device="gpu"`` and GPU arrays: see the module's doc.
    """
    from .pipeline import DataNode, Pipeline  # pipeline.py imports this module

    op_name = "external_source"
    if unknown:
        raise ArgumentError("%s: unknown argument '%s'" % (op_name, sorted(unknown)[0]))
    pipe = Pipeline.current()
    if pipe is None:
        raise ArgumentError("fn.external_source must be called while defining a pipeline (inside a @pipeline_def "
                            "function or a `with pipe:` block)")
    if device not in ("cpu", "gpu"):
        raise ArgumentError("%s: argument 'device' must be \"cpu\" or \"gpu\", got %r" % (op_name, device))
    if device == "gpu" and pipe.device_id < 0:
        raise ArgumentError("%s: device='gpu' needs a GPU pipeline (device_id >= 0)" % op_name)
    if cycle not in (None, "no", "quiet", "raise", True, False):
        raise ArgumentError("%s: argument 'cycle' must be \"no\", \"quiet\" or \"raise\", got %r" % (op_name, cycle))
    cycle = {False: "no", None: "no", True: "quiet"}.get(cycle, cycle)
    if source is None and cycle != "no":
        raise ArgumentError("%s: cycle needs a source" % op_name)
    multiple = num_outputs is not None
    count = 1 if num_outputs is None else int(num_outputs)
    if not 1 <= count <= 8:
        raise ArgumentError("%s: num_outputs must lie in 1..8, got %r" % (op_name, num_outputs))
    dtypes = _per_output(op_name, "dtype", dtype, count, lambda v: _dtype_name(op_name, v))
    ndims = _per_output(op_name, "ndim", ndim, count, int)
    layouts = _per_output(op_name, "layout", layout, count, str)
    if name is not None and not isinstance(name, str):
        raise ArgumentError("%s: argument 'name' must be a string, got %r" % (op_name, name))
    instance = pipe._unique_name(op_name, name)
    full_layouts = (layouts * count if len(layouts) == 1 else layouts) if layouts else []
    if parallel:
        from .parallel_source import ParallelSource  # it imports this module

        if cycle != "no":
            raise ArgumentError("%s %s: parallel=True takes a callable source (cycle does not apply)"
                                % (op_name, instance))
        depth = pipe.prefetch_queue_depth if prefetch_queue_depth is None else int(prefetch_queue_depth)
        member = ParallelSource(instance, source, count, bool(batch), bool(batch_info), full_layouts, bool(no_copy),
                                multiple, depth)
    else:
        member = _Source(instance, source, count, bool(batch), bool(batch_info), cycle, full_layouts, bool(no_copy),
                         multiple)
    member.device_id = pipe.device_id if pipe.device_id is not None else -1
    codes = [_DTYPES["float32" if d == "float" else d][0] for d in dtypes]
    member.dtype_codes = codes * count if len(codes) == 1 else codes
    member.ndims = ndims * count if len(ndims) == 1 else ndims
    if pipe._external_source is None:
        from .source_group import SourceGroup  # it imports this module

        pipe._external_source = SourceGroup(instance, device)
    names = pipe._external_source.add(member, device)
    nodes = tuple(DataNode(pipe, node_name, device, op_name) for node_name in names)
    return nodes if multiple else nodes[0]


class ExternalSourceFeeding:
    """Pipeline's part in feeding its external source (a base class of stoker.Pipeline): the
    options, ``feed_input`` and the hooks ``run_batch``/``reset`` call under the pipeline's lock."""

    def _init_feeding(self, exec_dynamic, max_batch_size, stop_at_epoch_end, py_num_workers=1,
                      py_start_method="fork"):
        # DALI: the largest batch; batch_size's own range is checked by the C side
        self.max_batch_size = self.batch_size if max_batch_size is None else max(self.batch_size, int(max_batch_size))
        self.exec_dynamic = bool(exec_dynamic)
        self._stop_at_epoch_end = bool(stop_at_epoch_end)
        self.py_num_workers = int(py_num_workers)
        self.py_start_method = py_start_method
        self._external_source = None  # its SourceGroup (stoker.source_group), made by fn.external_source

    def feed_input(self, data_node: Any, data: Any, layout: Any = None, cuda_stream: Any = None,
                   use_copy_kernel: Any = None, no_copy: Optional[bool] = None) -> None:
        """Feeds one batch to the external source ``data_node`` (name or node) that has no
        ``source`` (DALI's spelling): see this module's doc for what a batch may be. Copied at once
        unless ``no_copy`` (default: the node's). Builds the pipeline first."""
        self._check_open()
        if isinstance(data_node, DataNode) and data_node.pipeline is None:
            data_node = data_node.bind(self)  # made outside any pipeline: bound to this one
        group = self._external_source
        if group is None or group.member(data_node) is None:
            raise ArgumentError("feed_input: the pipeline has no external_source named %r" % (data_node,))
        with self._lock:
            self._build_locked()
            group.feed_input(self._c, data_node, data, layout, no_copy)

    def _feed_prepare_build(self):
        """Before the C build: the external sources' node joins the graph (every source is known)."""
        if self._external_source is not None:
            self._external_source.add_to_graph(self)

    def _feed_depth_resolved(self, depth):
        """After the C build: parallel sources without a prefetch_queue_depth of their own take the
        pipeline's, now decided."""
        if self._external_source is not None:
            for source in self._external_source.members:
                if getattr(source, "depth", 0) is None:
                    source.depth = depth

    def _feed_close(self):
        if self._external_source is not None:
            self._external_source.close()

    def _feed_before_next(self):
        if self._external_source is not None:
            self._external_source.top_up(self._c, self.prefetch_queue_depth, self.max_batch_size, self.exec_dynamic)

    def _feed_taken(self, batch):
        if self._external_source is not None:
            batch._borrowed = self._external_source.taken()  # no_copy arrays live as long as the batch

    def _feed_restart(self):
        if self._external_source is not None:
            self._external_source.restart()

    def _feed_resume(self, checkpoint_text):
        """After a checkpoint restore: the sources continue from its position (DALI's rule:
        stoker.external_source._Source.resume)."""
        if self._external_source is None or not checkpoint_text:
            return
        fields = dict(line.split("=", 1) for line in checkpoint_text.splitlines() if "=" in line)
        self._external_source.resume(int(fields["epoch"]), int(fields["position"]), self.batch_size)
