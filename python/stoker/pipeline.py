"""stoker.pipeline: Pipeline, @pipeline_def, graph nodes and batch outputs.

The graph is built eagerly in C: every ``fn.*`` call inside a ``@pipeline_def`` function (or a
``with pipe:`` block) adds its operator to the C pipeline at once, so a wrong argument raises
:class:`stoker.ArgumentError` at definition time, naming the operator and the argument.

Batch memory contract (read this before keeping outputs around):

* ``pipe.run()`` returns the outputs of one batch as :class:`TensorOutput` objects. They are views
  of the pipeline's buffers, valid until the same thread's next ``run()`` (or its ``reset()``, or
  ``close()``): asking for the next batch gives the previous batch's buffers back to the pipeline,
  after which the old ``TensorOutput`` objects raise ``StokerError`` when used.
* Arrays and tensors made from an output through DLPack (``out.as_array()``, ``np.from_dlpack(out)``,
  ``torch.from_dlpack(out)``) are zero-copy and hold a reference on the batch: its memory is not
  reused while any of them is alive, even after the next ``run()``. Holding many of them keeps
  those buffers out of the pipeline's pool (the pipeline then needs more memory), so copy
  (``np.array(x)``, ``t.clone()``) what you keep beyond the training step.

Threads: ``run()``, ``reset()`` and ``build()`` from several threads are serialized (a thread waits
its turn), and each thread's ``run()`` gives back only the batch that thread got last: a batch handed
to one thread is never released by another thread's ``run()``. Ctrl-C interrupts a ``run()`` that
waits (within a fraction of a second); the interrupted call goes on, and the next ``run()`` returns
the batch it was waiting for. ``close()`` works from any thread at any time and never waits for a
``run()`` in progress (that ``run()`` raises ``StokerError``).

Hot path: ``run()`` once per batch (a C call that releases the GIL while it waits).
"""
import itertools
import threading

from . import _stoker, conditionals, distributed
from .errors import ArgumentError, StokerError
from .external_source import ExternalSourceFeeding

_local = threading.local()

# Arguments of @pipeline_def/Pipeline (given to the decorator or at call time).
PIPELINE_ARGUMENTS = (
    "batch_size",
    "num_threads",
    "device_id",
    "seed",
    "prefetch_queue_depth",
    "pin_threads",
    "affinity_mask",
    "verbose",
    "enable_conditionals",
    "stream_priority",
    "enable_checkpointing",
    "checkpoint",
    *("exec_dynamic", "max_batch_size", "stop_at_epoch_end"),  # stoker.external_source
    *("py_num_workers", "py_start_method"),  # stoker.parallel_source
)

_DLPACK_CPU = 1
_DLPACK_CUDA = 2


def _current_stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


class DataNode:
    """One output of an operator in a pipeline graph (what ``fn.*`` returns).

    ``name`` is the C graph's reference ("decode" or "reader[1]"); ``device`` is "cpu" or "gpu".
    """

    def __init__(self, pipeline, name, device, op_name, to_gpu=False):
        self.pipeline = pipeline
        self.name = name
        self.device = device
        self.op_name = op_name
        self.to_gpu = to_gpu

    def gpu(self):
        """This node on the GPU. Fed to an operator, that operator runs on the GPU (``device="gpu"``
        unless given). As a pipeline output, a CPU node marked with ``.gpu()`` stays a host output of
        ``pipe.run()`` and is moved to the pipeline's GPU by the PyTorch iterators (labels, as in
        DALI's ``labels.gpu()``)."""
        if self.device == "gpu":
            return self
        return DataNode(self.pipeline, self.name, "gpu", self.op_name, to_gpu=True)

    def __repr__(self):
        return "DataNode(%r, device=%r, op=%r)" % (self.name, self.device, self.op_name)


class TensorOutput:
    """One output of one batch: a zero-copy view with DLPack export.

    Valid until the pipeline is asked for the next batch (see the module's memory contract).
    ``__dlpack__``/``__dlpack_device__`` make it usable by ``np.from_dlpack`` (host outputs) and
    ``torch.from_dlpack`` (host or GPU); for GPU outputs the consumer's stream is made to wait on
    the batch's CUDA event before the tensor is handed over.
    """

    def __init__(self, batch, index, name, to_gpu=False):
        self._batch = batch
        self._index = index
        self.name = name
        self.to_gpu = to_gpu
        self._info = batch.output_info(index)  # None when ragged

    # -- metadata --------------------------------------------------------------------------
    @property
    def is_dense(self):
        return self._info is not None

    def _dense_info(self):
        if self._info is None:
            raise StokerError(
                "output %r is ragged (its samples differ in shape); use out[i] per sample, or "
                "resize/crop to one shape in the pipeline" % self.name
            )
        return self._info

    @property
    def shape(self):
        """Shape of the dense batch tensor (batch dimension first)."""
        return self._dense_info()["shape"]

    @property
    def dtype(self):
        """Element type name: "uint8", "int32", "int64", "float", "float16" or "bool"."""
        if self._info is not None:
            return self._info["dtype"]
        return self._batch.sample_info(self._index, 0)["dtype"]

    @property
    def layout(self):
        if self._info is not None:
            return self._info["layout"]
        return self._batch.sample_info(self._index, 0)["layout"]

    @property
    def device(self):
        """"cpu" or "gpu"."""
        if self._info is not None:
            return self._info["device"]
        return self._batch.sample_info(self._index, 0)["device"]

    @property
    def device_id(self):
        info = self._info if self._info is not None else self._batch.sample_info(self._index, 0)
        return info["device_id"]

    def __len__(self):
        return self._batch.info()["size"]

    # -- DLPack ----------------------------------------------------------------------------
    def __dlpack__(self, stream=None, **_ignored):
        # max_version/dl_device/copy (DLPack 1.0 keywords) are accepted and ignored: the export is
        # a DLPack 0.8 "dltensor" capsule, which every consumer still accepts.
        return self._batch.to_dlpack(self._index, stream)

    def __dlpack_device__(self):
        info = self._dense_info()
        if info["device"] == "gpu":
            return (_DLPACK_CUDA, info["device_id"])
        return (_DLPACK_CPU, 0)

    # -- host access -----------------------------------------------------------------------
    def as_array(self):
        """The output as a NumPy array (host outputs only). Dense outputs come zero-copy (the array
        keeps the batch's memory alive); ragged outputs come as a list of per-sample copies."""
        import numpy as np

        if self.device != "cpu":
            raise StokerError("output %r lives on the GPU: use torch.from_dlpack (or cupy) instead" % self.name)
        if self._info is None:
            return [self[i] for i in range(len(self))]
        return np.from_dlpack(self)

    as_tensor = as_array

    def __getitem__(self, sample):
        """A host copy of one sample as a NumPy array."""
        import numpy as np

        count = len(self)
        if sample < 0:
            sample += count
        info = self._batch.sample_info(self._index, sample)
        data = self._batch.sample_bytes(self._index, sample)
        return np.frombuffer(data, dtype=_numpy_dtype(info["dtype"])).reshape(info["shape"]).copy()

    def __repr__(self):
        try:
            if self._info is None:
                return "TensorOutput(%r, ragged, dtype=%s)" % (self.name, self.dtype)
            return "TensorOutput(%r, shape=%s, dtype=%s, layout=%s, device=%s)" % (
                self.name,
                self.shape,
                self.dtype,
                self.layout,
                self.device,
            )
        except StokerError:
            return "TensorOutput(%r, released)" % self.name


def _numpy_dtype(name):
    return {
        "uint8": "u1",
        "int32": "<i4",
        "int64": "<i8",
        "float": "<f4",
        "float32": "<f4",
        "float16": "<f2",
        "bool": "?",
    }[name]


class Batch:
    """One batch from the pipeline: its outputs plus epoch and fill information (internal; the
    iterators use it). ``valid_samples`` counts the real samples; the rest are the reader's fill
    (padding or samples wrapped from the start of the shard)."""

    def __init__(self, c_batch, names, to_gpu):
        self._c = c_batch
        info = c_batch.info()
        self.size = info["size"]
        self.epoch = info["epoch"]
        self.valid_samples = info["valid_samples"]
        self.outputs = tuple(TensorOutput(c_batch, i, names[i], to_gpu[i]) for i in range(len(names)))

    def release(self):
        """Gives the buffers back to the pipeline (DLPack exports keep their memory alive)."""
        self._c.release()


# stk_stream_priority values (include/stoker/pipeline.h)
_STREAM_PRIORITIES = {"high": 0, "normal": 1}


class Pipeline(ExternalSourceFeeding):
    """A data-loading pipeline (DALI's ``Pipeline`` spelling).

    Arguments: ``batch_size`` (default 256), ``num_threads`` (4), ``device_id`` (None or -1 = CPU
    only; a CUDA ordinal enables mixed/GPU operators; the default ``"auto"`` is the launcher rank's
    GPU under torchrun / srun / mpirun, else CPU only: see stoker.distributed), ``seed`` (None =
    42; the same seed gives the same batches whatever the thread count or timing),
    ``prefetch_queue_depth`` (2),
    ``pin_threads`` (True: pin workers next to the GPU, or per ``STOKER_AFFINITY_MASK``),
    ``affinity_mask`` (a cpulist overriding that variable), ``verbose``, ``stream_priority``
    (``"high"``, the default: the pipeline's CUDA streams outrank the training loop's, so its short
    kernels and copies do not queue behind a training step's; ``"normal"``: CUDA's default
    priority, beside them), ``enable_checkpointing`` (True: ``build()`` fails unless the pipeline
    can be checkpointed), ``checkpoint`` (a ``checkpoint()`` string or bytes to resume from: the
    pipeline then delivers exactly the batches the checkpointed one would have delivered next;
    docs/checkpoint.md), ``exec_dynamic`` / ``max_batch_size`` (batches as large as the external
    source gave, up to max_batch_size = batch_size by default), ``stop_at_epoch_end`` (see run()),
    ``py_num_workers`` / ``py_start_method`` (worker processes of ``external_source(parallel=True)``:
    1 and ``"fork"`` by default; stoker.parallel_source).

    Lifecycle: define (``@pipeline_def`` or ``with pipe:`` + ``set_outputs``) -> ``build()`` ->
    ``run()`` ... -> ``reset()`` -> ... -> ``close()``. As a context manager, leaving the ``with``
    block closes a built pipeline (a ``with pipe:`` block used only to define the graph, before
    ``build()``, leaves it open).
    """

    def __init__(
        self,
        batch_size=256,
        num_threads=4,
        device_id="auto",
        seed=None,
        prefetch_queue_depth=2,
        pin_threads=True,
        affinity_mask=None,
        verbose=False,
        stream_priority="high",
        enable_checkpointing=False,
        checkpoint=None,
        exec_dynamic=False,
        max_batch_size=None,
        stop_at_epoch_end=False,
        py_num_workers=1,
        py_start_method="fork",
        enable_conditionals=False,
    ):
        if isinstance(prefetch_queue_depth, dict):
            prefetch_queue_depth = max(prefetch_queue_depth.values())
        self.batch_size = int(batch_size)
        self._init_feeding(exec_dynamic, max_batch_size, stop_at_epoch_end, py_num_workers, py_start_method)
        self.num_threads = int(num_threads)
        self.device_id, affinity_mask = distributed.placement(device_id, num_threads, pin_threads, affinity_mask)
        self.seed = 42 if seed is None or seed < 0 else int(seed)
        self.prefetch_queue_depth = int(prefetch_queue_depth)
        if stream_priority not in _STREAM_PRIORITIES:
            choices = ", ".join(_STREAM_PRIORITIES)
            raise ValueError("stream_priority must be one of %s, not %r" % (choices, stream_priority))
        try:
            self._c = _stoker.Pipeline(
                batch_size=self.max_batch_size,
                num_threads=self.num_threads,
                device_id=self.device_id,
                seed=self.seed,
                prefetch_queue_depth=self.prefetch_queue_depth,
                pin_threads=bool(pin_threads),
                affinity_mask=affinity_mask,
                verbose=bool(verbose),
                stream_priority=_STREAM_PRIORITIES[stream_priority],
                enable_checkpointing=bool(enable_checkpointing),
                checkpoint=_checkpoint_text(checkpoint),
                exec_dynamic=self.exec_dynamic,
            )
        except StokerError as error:
            if getattr(error, "status", "") == "STK_EINVAL":
                raise ArgumentError(str(error)) from None
            raise
        self._names = ()
        self._to_gpu = ()
        self._readers = []
        self._node_ids = itertools.count()
        self._instance_names = set()
        self._built = False
        self._defined = False
        self._lock = threading.Lock()  # serializes build/run/reset of several threads
        self._held = {}  # thread id -> the Batch that thread got last (released by its next run)
        self._entered_built = []

    # -- definition ------------------------------------------------------------------------
    @staticmethod
    def current():
        """The pipeline being defined on this thread (inside @pipeline_def or ``with pipe:``)."""
        stack = _current_stack()
        return stack[-1] if stack else None

    def __enter__(self):
        _current_stack().append(self)
        self._entered_built.append(self._built)
        return self

    def __exit__(self, exc_type, exc, tb):
        stack = _current_stack()
        if stack and stack[-1] is self:
            stack.pop()
        self._entered_built.pop()
        if self._built or exc_type is not None:
            self.close()
        return False

    def _unique_name(self, op_name, requested):
        if requested is not None:
            if requested in self._instance_names:
                raise ArgumentError("%s: name %r is already used by another operator" % (op_name, requested))
            name = requested
        else:
            base = op_name.replace(".", "_")
            while True:
                name = "%s_%d" % (base, next(self._node_ids))
                if name not in self._instance_names:
                    break
        self._instance_names.add(name)
        return name

    def _add_op(self, op_name, instance_name, inputs, args, is_reader):
        self._check_open()
        if self._built:
            raise StokerError("cannot add %s: the pipeline is already built" % op_name)
        try:
            self._c.add_op(op_name, instance_name, inputs, args)
        except ArgumentError:
            raise
        except StokerError as error:
            if getattr(error, "status", "") == "STK_EINVAL":
                raise ArgumentError(str(error)) from None
            raise
        if is_reader:
            self._readers.append(instance_name)

    def set_outputs(self, *outputs):
        """Marks the pipeline's outputs (DataNodes, in order)."""
        self._check_open()
        if len(outputs) == 1 and isinstance(outputs[0], (list, tuple)):
            outputs = tuple(outputs[0])
        for node in outputs:
            if not isinstance(node, DataNode):
                raise ArgumentError("pipeline outputs must be graph nodes (fn.* results), got %r" % (node,))
            if node.pipeline is not self:
                raise ArgumentError("output %r belongs to another pipeline" % node.name)
        self._c.set_outputs([node.name for node in outputs])
        self._names = tuple(node.name for node in outputs)
        self._to_gpu = tuple(node.to_gpu for node in outputs)
        self._defined = True

    def add_builtin(self, name, data_dir):
        """Defines the graph as a built-in pipeline ("rn50-train", "rn50-val") reading data_dir.
        Output names then come from the C side (positional)."""
        self._check_open()
        self._c.add_builtin(name, data_dir)
        self._defined = True

    # -- running ---------------------------------------------------------------------------
    def _check_open(self):
        if self._c.is_closed():
            raise StokerError("the pipeline is closed")

    def build(self):
        """Validates the graph, starts the worker threads and begins prefetching (idempotent)."""
        self._check_open()
        with self._lock:
            self._build_locked()

    def _build_locked(self):
        if not self._built:
            self._feed_prepare_build()  # external sources join the graph once all are known
            self._c.build()
            self._built = True

    @property
    def is_built(self):
        return self._built

    def _release_held(self, thread_id):
        batch = self._held.pop(thread_id, None)
        if batch is not None:
            batch.release()

    def _release_all(self):
        while self._held:
            _, batch = self._held.popitem()
            batch.release()

    def _forget_finished_threads(self):
        """Releases the batches of threads that ended (they cannot ask for their next batch)."""
        alive = {thread.ident for thread in threading.enumerate()}
        for thread_id in [t for t in self._held if t not in alive]:
            self._release_held(thread_id)

    def run_batch(self):
        """The next :class:`Batch` (outputs plus valid_samples/epoch). Gives back the batch this
        thread got last first (never another thread's). Raises StopIteration at the end of the
        epoch (call ``reset()``)."""
        self._check_open()
        thread_id = threading.get_ident()
        with self._lock:
            self._build_locked()
            self._release_held(thread_id)
            if self._held:
                self._forget_finished_threads()
            self._feed_before_next()  # calls an external source's `source`, as DALI does here
            c_batch = self._c.next()
            if c_batch is None:
                raise StopIteration
            count = c_batch.num_outputs()
            names = self._names if len(self._names) == count else tuple("output_%d" % i for i in range(count))
            to_gpu = self._to_gpu if len(self._to_gpu) == count else (False,) * count
            batch = Batch(c_batch, names, to_gpu)
            self._feed_taken(batch)
            self._held[thread_id] = batch
            return batch

    def run(self):
        """The next batch's outputs (:class:`TensorOutput`), valid until this thread's next call. As
        DALI's, it runs on across a reader's epochs (unless ``stop_at_epoch_end=True``, then it stops
        at each as run_batch() and the iterators do); StopIteration = the external source ended."""
        try:
            return self.run_batch().outputs
        except StopIteration:
            if self._stop_at_epoch_end or self._external_source is not None:
                raise
        self.reset()
        return self.run_batch().outputs

    def reset(self):
        """Starts the next epoch. At an epoch's end the pipeline has already been preparing the next
        epoch's batches (it plans across the boundary, as DALI does) and keeps them; mid-epoch,
        batches in flight are discarded. Gives back the batch this thread got last."""
        self._check_open()
        with self._lock:
            self._release_held(threading.get_ident())
            self._c.reset()
            self._feed_restart()

    def checkpoint(self):
        """The pipeline's position as a short string (well under 1 KB): a pipeline built with
        ``checkpoint=`` this string (same graph, data, seed and batch size) delivers exactly,
        byte for byte, the batches this one would deliver after those ``run()`` returned so far
        (prefetched batches do not count). Raises StokerError when the reader cannot seek."""
        self._check_open()
        with self._lock:
            self._build_locked()
            return self._c.checkpoint()

    def restore(self, checkpoint):
        """Resumes from a ``checkpoint()`` string: before ``build()`` like ``checkpoint=``; on a
        built pipeline the batches in flight are dropped and the next ``run()`` returns the
        checkpoint's next batch. A mismatched or corrupt checkpoint raises StokerError naming what
        differs."""
        self._check_open()
        with self._lock:
            self._release_held(threading.get_ident())
            self._c.restore(_checkpoint_text(checkpoint))

    def reader_meta(self, name=None):
        """Reader metadata (DALI's keys): epoch_size, epoch_size_padded, shard_size, shard_id,
        number_of_shards, pad_last_batch, stick_to_shard; and stoker's count of the current epoch
        in batches: epoch, epoch_next_batch, epoch_batches, epoch_full_batches (docs/python.md,
        Epoch length and resume). ``name=None`` returns a dict for every reader when there are
        several, else the only reader's."""
        self._check_open()
        if name is None and len(self._readers) > 1:
            return {reader: self._c.reader_meta(reader) for reader in self._readers}
        return self._c.reader_meta(name)

    def epoch_size(self, name=None):
        """Samples in one epoch of reader ``name`` (the whole data set, all shards); with
        ``name=None``, a dict {reader name: epoch size} (DALI's spelling)."""
        self._check_open()
        if name is not None:
            return self._c.reader_meta(name)["epoch_size"]
        if not self._readers:
            return {None: self._c.reader_meta(None)["epoch_size"]}
        return {reader: self._c.reader_meta(reader)["epoch_size"] for reader in self._readers}

    def stats(self):
        """Counters of the C pipeline (batches, images, allocations, per-operator seconds, the
        thread->CPU map, ...)."""
        self._check_open()
        return self._c.stats()

    @property
    def output_names(self):
        return self._names

    def close(self):
        """Stops the threads and frees the pipeline (idempotent; from any thread, at any time: a
        ``run()`` waiting in another thread raises ``StokerError`` at once). Arrays/tensors exported
        through DLPack stay valid; TensorOutput objects of the batches held become unusable."""
        self._release_all()
        self._c.close()
        self._feed_close()  # parallel external sources' worker processes

    @property
    def is_closed(self):
        return self._c.is_closed()

    def __del__(self):
        c = getattr(self, "_c", None)
        if c is not None:
            try:
                self._release_all()
                c.close()
            except Exception:
                pass


def _checkpoint_text(checkpoint):
    if checkpoint is None or isinstance(checkpoint, str):
        return checkpoint
    if isinstance(checkpoint, (bytes, bytearray)):
        return bytes(checkpoint).decode("ascii")
    raise ArgumentError("checkpoint must be a str or bytes from Pipeline.checkpoint(), not %s" % type(checkpoint).__name__)


def pipeline_def(fn=None, **pipeline_kwargs):
    """Decorator turning a graph-defining function into a pipeline factory (DALI's spelling).

    ``@pipeline_def(batch_size=..., num_threads=..., device_id=..., seed=...,
    prefetch_queue_depth=...)``; calling the decorated function with any of those keywords
    overrides the decorator's, the remaining arguments go to the function. The function returns
    the pipeline's outputs (a node or a tuple of nodes). The graph is built in C as the function
    runs, so argument errors raise here, at definition time.
    """

    def decorator(func):
        def create(*args, **kwargs):
            options = dict(pipeline_kwargs)
            for key in PIPELINE_ARGUMENTS:
                if key in kwargs:
                    options[key] = kwargs.pop(key)
            pipe = Pipeline(**options)
            body = conditionals.convert(func) if options.get("enable_conditionals") else func
            stack = _current_stack()
            stack.append(pipe)
            try:
                outputs = body(*args, **kwargs)
                if isinstance(outputs, DataNode):
                    outputs = (outputs,)
                elif isinstance(outputs, list):
                    outputs = tuple(outputs)
                if not isinstance(outputs, tuple) or not outputs:
                    raise ArgumentError(
                        "%s must return the pipeline's outputs (a node or a tuple of nodes), got %r"
                        % (getattr(func, "__name__", "the pipeline function"), outputs)
                    )
                pipe.set_outputs(*outputs)
            except BaseException:
                pipe.close()
                raise
            finally:
                if stack and stack[-1] is pipe:
                    stack.pop()
            return pipe

        create.__name__ = getattr(func, "__name__", "pipeline")
        create.__qualname__ = getattr(func, "__qualname__", create.__name__)
        create.__doc__ = func.__doc__
        create.__wrapped__ = func
        return create

    if fn is not None and callable(fn):
        return decorator(fn)
    return decorator

