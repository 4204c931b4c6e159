"""stoker.pipeline: Pipeline, @pipeline_def and batches (graph nodes: stoker.graph; outputs:
stoker.tensors).

Inside a pipeline's definition every ``fn.*`` call adds its operator to the C pipeline at once,
so a wrong argument raises :class:`stoker.ArgumentError` at definition time, naming the operator
and the argument; ``fn.*`` calls made outside any pipeline join the graph of the pipeline that
uses their nodes (stoker.graph).

Batch memory contract (read this before keeping outputs around):

* ``pipe.run()`` returns the outputs of one batch as TensorListCPU / TensorListGPU objects. They are views
  of the pipeline's buffers, valid until the same thread's next ``run()`` (or its ``reset()``, or
  ``close()``): asking for the next batch gives the previous batch's buffers back to the pipeline,
  after which the old output objects raise ``StokerError`` when used.
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
from __future__ import annotations

import inspect
import itertools
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, overload

from . import _stoker, conditionals, distributed
from . import pipeline_options as _options
from .errors import ArgumentError, ArgumentTypeError, StokerError
from .external_source import ExternalSourceFeeding
from .graph import DataNode, current_stack
from .tensors import TensorListCPU, TensorOutput, tensor_list  # noqa: F401  (TensorOutput: older name)

# Arguments @pipeline_def takes for the pipeline rather than for the function (besides those of
# Pipeline.__init__, read from its signature below).
_DECORATOR_ARGUMENTS = ("enable_conditionals", "debug")


class Batch:
    """One batch from the pipeline: its outputs plus epoch and fill information (internal; the
    iterators use it). ``valid_samples`` counts the real samples; the rest are the reader's fill
    (padding or samples wrapped from the start of the shard)."""

    def __init__(self, c_batch: Any, names: Sequence[str], to_gpu: Sequence[bool]) -> None:
        self._c = c_batch
        info = c_batch.info()
        self.size = info["size"]
        self.epoch = info["epoch"]
        self.valid_samples = info["valid_samples"]
        self.outputs = tuple(tensor_list(c_batch, i, names[i], to_gpu[i]) for i in range(len(names)))

    def reader_valid_samples(self, reader: str) -> Tuple[int, bool]:
        """(real samples, last batch of its epoch) of reader ``reader`` in this batch: a pipeline
        with several readers has them per reader (``valid_samples`` is the epoch reader's)."""
        return self._c.reader_valid_samples(reader)

    def release(self) -> None:
        """Gives the buffers back to the pipeline (DLPack exports keep their memory alive)."""
        self._c.release()


# stk_stream_priority values (include/stoker/pipeline.h)
_STREAM_PRIORITIES = {"high": 0, "normal": 1}


class Pipeline(ExternalSourceFeeding):
    """A data-loading pipeline (DALI's ``Pipeline``: same arguments, in DALI's order).

    Arguments: ``batch_size`` (default 256), ``num_threads`` (4), ``device_id`` (None or -1 = CPU
    only; a CUDA ordinal enables mixed/GPU operators; the default ``"auto"`` is the launcher rank's
    GPU under torchrun / srun / mpirun, else CPU only: see stoker.distributed), ``seed`` (None or
    -1 = 42: stoker is reproducible by default, where DALI draws a random seed; the same seed gives
    the same batches whatever the thread count or timing), ``prefetch_queue_depth`` (None:
    decided at ``build()``, 3 when the pipeline has the mixed JPEG decoder -- a third batch in flight
    keeps the GPU's JPEG engines fed, docs/gpu.md -- else DALI's 2; the property then reports it;
    DALI's ``{"cpu_size": x, "gpu_size": y}`` takes the larger),
    ``pin_threads`` (True: pin workers next to the GPU, or per ``STOKER_AFFINITY_MASK``; DALI's
    ``set_affinity=True`` asks for the same), ``affinity_mask`` (one CPU per worker, in order,
    comma-separated, e.g. ``"0,2,4,6"``; overrides that variable), ``verbose``, ``stream_priority`` (``"high"``, the default: the pipeline's CUDA
    streams outrank the training loop's; ``"normal"``: CUDA's default priority; DALI's
    ``default_cuda_stream_priority`` maps negative values to "high", others to "normal"),
    ``enable_checkpointing`` (True: ``build()`` fails unless the pipeline can be checkpointed),
    ``checkpoint`` (a ``checkpoint()`` string or bytes to resume from: the pipeline then delivers
    exactly the batches the checkpointed one would have delivered next; docs/checkpoint.md),
    ``exec_dynamic`` / ``experimental_exec_dynamic`` / ``max_batch_size`` (batches as large as the
    external source gave, up to max_batch_size = batch_size by default), ``stop_at_epoch_end`` (see
    run()), ``py_num_workers`` / ``py_start_method`` (worker processes of
    ``external_source(parallel=True)``: 1 and ``"fork"`` by default; stoker.parallel_source),
    ``output_dtype`` / ``output_ndim`` (checked after every batch: RuntimeError on a mismatch, as
    DALI). DALI's ``exec_pipelined``, ``exec_async``, ``bytes_per_sample``, ``max_streams``,
    ``enable_memory_stats``, ``py_callback_pickler`` and ``enable_conditionals`` are accepted; they
    change nothing in stoker (stoker.pipeline_options.NO_EFFECT says why; docs/porting.md).

    Lifecycle: define (``@pipeline_def``, ``with pipe:`` + ``set_outputs``, ``fn.*`` nodes made
    anywhere and given to ``set_outputs``, or a subclass's ``define_graph``) -> ``build()`` (or the
    first ``run()``, ``reader_meta()``, ``epoch_size()``) -> ``run()`` ... -> ``reset()`` -> ... ->
    ``close()``. A subclass's ``iter_setup()`` runs before every batch (feed_input goes there). As
    a context manager, leaving a ``with`` block in which the pipeline was built closes it (a
    ``with pipe:`` block used only to define the graph leaves it open).
    """

    def __init__(
        self,
        batch_size: int = 256,
        num_threads: int = 4,
        device_id: Union[int, str, None] = "auto",
        seed: Optional[int] = None,
        exec_pipelined: bool = True,
        prefetch_queue_depth: Union[int, Dict[str, int], None] = None,
        exec_async: bool = True,
        bytes_per_sample: int = 0,
        set_affinity: bool = False,
        max_streams: int = -1,
        default_cuda_stream_priority: Optional[int] = None,
        *,
        enable_memory_stats: bool = False,
        enable_checkpointing: bool = False,
        checkpoint: Union[str, bytes, None] = None,
        py_num_workers: int = 1,
        py_start_method: str = "fork",
        py_callback_pickler: Any = None,
        output_dtype: Any = None,
        output_ndim: Any = None,
        exec_dynamic: bool = False,
        experimental_exec_dynamic: bool = False,
        enable_conditionals: bool = False,
        pin_threads: bool = True,
        affinity_mask: Optional[str] = None,
        verbose: bool = False,
        stream_priority: Optional[str] = None,
        max_batch_size: Optional[int] = None,
        stop_at_epoch_end: bool = False,
    ) -> None:
        if isinstance(prefetch_queue_depth, dict):
            prefetch_queue_depth = max(prefetch_queue_depth.values())
        _options.check_start_method(py_start_method, py_callback_pickler)
        self.output_dtype = _options.normalize_output_dtype(output_dtype)
        self.output_ndim = _options.normalize_output_ndim(output_ndim)
        self.exec_pipelined = bool(exec_pipelined)
        self.exec_async = bool(exec_async)
        self.enable_conditionals = bool(enable_conditionals)
        self.enable_checkpointing = bool(enable_checkpointing)
        stream_priority = _options.dali_stream_priority(default_cuda_stream_priority, stream_priority)
        pin_threads = bool(pin_threads) or bool(set_affinity)
        self.batch_size = int(batch_size)
        exec_dynamic = bool(exec_dynamic) or bool(experimental_exec_dynamic)
        self._init_feeding(exec_dynamic, max_batch_size, stop_at_epoch_end, py_num_workers, py_start_method)
        self.num_threads = int(num_threads)
        self.device_id, affinity_mask = distributed.placement(device_id, num_threads, pin_threads, affinity_mask)
        self.seed = 42 if seed is None or seed < 0 else int(seed)
        if prefetch_queue_depth is not None and int(prefetch_queue_depth) < 1:
            raise ArgumentError("Pipeline: prefetch_queue_depth must be at least 1 (batches prepared ahead; None: "
                                "the pipeline decides at build), got %r" % (prefetch_queue_depth,))
        # None until build() resolves the default (0 asks the C pipeline to decide)
        self._prefetch_depth = None if prefetch_queue_depth is None else int(prefetch_queue_depth)
        if stream_priority not in _STREAM_PRIORITIES:
            choices = ", ".join(_STREAM_PRIORITIES)
            raise ValueError("stream_priority must be one of %s, not %r" % (choices, stream_priority))
        try:
            self._c = _stoker.Pipeline(
                batch_size=self.max_batch_size,
                num_threads=self.num_threads,
                device_id=self.device_id,
                seed=self.seed,
                prefetch_queue_depth=self._prefetch_depth or 0,
                pin_threads=pin_threads,
                affinity_mask=affinity_mask,
                verbose=bool(verbose),
                stream_priority=_STREAM_PRIORITIES[stream_priority],
                enable_checkpointing=self.enable_checkpointing,
                checkpoint=_checkpoint_text(checkpoint),
                exec_dynamic=self.exec_dynamic,
            )
        except StokerError as error:
            if getattr(error, "status", "") == "STK_EINVAL":
                raise ArgumentError(str(error)) from None
            raise
        self._is_restored_from_checkpoint = checkpoint is not None
        self._restore_text = _checkpoint_text(checkpoint)  # the external sources resume from it at build
        self._names: Tuple[str, ...] = ()
        self._to_gpu: Tuple[bool, ...] = ()
        self._readers: List[str] = []
        self._node_ids = itertools.count()
        self._instance_names: set = set()
        self._built = False
        self._defined = False
        self._lock = threading.Lock()  # serializes build/run/reset of several threads
        self._held: Dict[int, Batch] = {}  # thread id -> the Batch that thread got last (released by its next run)
        self._entered_built: List[bool] = []

    # -- definition ------------------------------------------------------------------------
    @staticmethod
    def current() -> Optional["Pipeline"]:
        """The pipeline being defined on this thread (inside @pipeline_def or ``with pipe:``)."""
        stack = current_stack()
        return stack[-1] if stack else None

    def __enter__(self) -> "Pipeline":
        current_stack().append(self)
        self._entered_built.append(self._built)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        stack = current_stack()
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

    def set_outputs(self, *outputs: Any) -> None:
        """Marks the pipeline's outputs (DataNodes, in order). Nodes made outside any pipeline are
        bound here: their operators (and those they depend on) join this pipeline's graph."""
        self._check_open()
        if len(outputs) == 1 and isinstance(outputs[0], (list, tuple)):
            outputs = tuple(outputs[0])
        if not outputs:
            raise ArgumentError("set_outputs: give at least one output")
        for node in outputs:
            if not isinstance(node, DataNode):
                raise ArgumentTypeError("pipeline outputs must be graph nodes (fn.* results), got %r" % (node,))
        outputs = tuple(node.bind(self) for node in outputs)
        self._c.set_outputs([node.name for node in outputs])
        self._names = tuple(node.name for node in outputs)
        self._to_gpu = tuple(node.to_gpu for node in outputs)
        self._defined = True

    def define_graph(self) -> Any:
        """Overridden by subclasses (DALI's Pipeline subclass idiom): returns the pipeline's outputs,
        made from ``ops.*`` objects or ``fn.*`` calls; ``build()`` calls it inside the pipeline."""
        raise StokerError("the pipeline has no outputs: define them with @pipeline_def, set_outputs() or a "
                          "define_graph() method")

    def iter_setup(self) -> None:
        """Overridden by subclasses: runs before every batch (``feed_input`` calls go here)."""

    def _define_from_method(self) -> None:
        """A subclass's define_graph, run inside the pipeline (at build)."""
        stack = current_stack()
        stack.append(self)
        try:
            outputs = self.define_graph()
        finally:
            stack.pop()
        if isinstance(outputs, DataNode):
            outputs = (outputs,)
        if not isinstance(outputs, (list, tuple)):
            raise ArgumentTypeError("define_graph must return the pipeline's outputs (a node or a list/tuple of "
                                    "nodes), got %r" % (outputs,))
        self.set_outputs(*outputs)

    def add_builtin(self, name: str, data_dir: str) -> None:
        """Defines the graph as a built-in pipeline ("rn50-train", "rn50-val") reading data_dir.
        Output names then come from the C side (positional)."""
        self._check_open()
        self._c.add_builtin(name, data_dir)
        self._defined = True

    # -- running ---------------------------------------------------------------------------
    def _check_open(self):
        if self._c.is_closed():
            raise StokerError("the pipeline is closed")

    def build(self) -> None:
        """Validates the graph, starts the worker threads and begins prefetching (idempotent)."""
        self._check_open()
        with self._lock:
            self._build_locked()

    def _build_locked(self):
        if not self._built:
            if not self._defined:
                self._define_from_method()
            if not self._readers and self._external_source is None:
                self._add_iteration_source()
            self._feed_prepare_build()  # external sources join the graph once all are known
            self._c.build()
            self._built = True
            self._prefetch_depth = self._c.stats()["prefetch_queue_depth"]
            self._feed_depth_resolved(self._prefetch_depth)
            self._feed_resume(self._restore_text)

    def _add_iteration_source(self):
        """DALI builds pipelines without a reader (generators only: fn.random.*, fn.constant) and runs
        them for ever. stoker's engine plans batches from a reader, so such a pipeline gets a hidden
        external source, ``_iteration``, that feeds each iteration a batch of empty samples (no
        output reads it; the generators draw by (seed, operator, sample) as under any reader)."""
        import numpy as np

        from .external_source import external_source

        empty = [np.zeros(0, np.uint8)] * self.max_batch_size
        current_stack().append(self)
        try:
            external_source(source=lambda: empty, name="_iteration")
        finally:
            current_stack().pop()

    @property
    def prefetch_queue_depth(self) -> Optional[int]:
        """Batches prepared ahead of the consumer: the option given, else the pipeline's choice once
        built (None before)."""
        return self._prefetch_depth

    @property
    def is_built(self) -> bool:
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

    def run_batch(self) -> Batch:
        """The next :class:`Batch` (outputs plus valid_samples/epoch). Gives back the batch this
        thread got last first (never another thread's). Raises StopIteration at the end of the
        epoch (call ``reset()``)."""
        self._check_open()
        thread_id = threading.get_ident()
        if type(self).iter_setup is not Pipeline.iter_setup:
            self.iter_setup()  # before the lock: it may call feed_input, which takes it
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
            if self.output_dtype is not None or self.output_ndim is not None:
                _options.check_outputs(batch.outputs, self.output_dtype, self.output_ndim)
            self._held[thread_id] = batch
            return batch

    def run(self) -> Tuple[TensorListCPU, ...]:
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

    def reset(self) -> None:
        """Starts the next epoch. At an epoch's end the pipeline has already been preparing the next
        epoch's batches (it plans across the boundary, as DALI does) and keeps them; mid-epoch,
        batches in flight are discarded. Gives back the batch this thread got last."""
        self._check_open()
        with self._lock:
            self._release_held(threading.get_ident())
            self._c.reset()
            self._feed_restart()

    def checkpoint(self) -> str:
        """The pipeline's position as a short string (well under 1 KB): a pipeline built with
        ``checkpoint=`` this string (same graph, data, seed and batch size) delivers exactly,
        byte for byte, the batches this one would deliver after those ``run()`` returned so far
        (prefetched batches do not count). Raises StokerError when the reader cannot seek."""
        self._check_open()
        with self._lock:
            self._build_locked()
            return self._c.checkpoint()

    def restore(self, checkpoint: Union[str, bytes]) -> None:
        """Resumes from a ``checkpoint()`` string: before ``build()`` like ``checkpoint=``; on a
        built pipeline the batches in flight are dropped and the next ``run()`` returns the
        checkpoint's next batch. A mismatched or corrupt checkpoint raises StokerError naming what
        differs."""
        self._check_open()
        with self._lock:
            self._release_held(threading.get_ident())
            text = _checkpoint_text(checkpoint)
            self._c.restore(text)
            if self._built:
                self._feed_resume(text)
            else:
                self._restore_text = text

    def _reader_names(self) -> List[str]:
        return list(self._readers)

    def _meta(self, name: str) -> Dict[str, Any]:
        try:
            return self._c.reader_meta(name)
        except StokerError as error:
            if getattr(error, "status", "") != "STK_ENOENT":
                raise
            known = ", ".join(repr(r) for r in self._readers) or "none"
            raise StokerError("reader_meta: the pipeline has no reader named %r (its readers: %s)" % (name, known)) \
                from None

    def reader_meta(self, name: Optional[str] = None) -> Dict[str, Any]:
        """Reader metadata (DALI's keys): epoch_size, epoch_size_padded, shard_size, shard_id,
        number_of_shards, pad_last_batch, stick_to_shard; and stoker's count of the current epoch
        in batches: epoch, epoch_next_batch, epoch_batches, epoch_full_batches (docs/python.md,
        Epoch length and resume). ``name=None``: ``{reader name: metadata}`` for every reader, as
        DALI. Builds the pipeline first (as DALI does); a name that is no reader raises StokerError
        (a RuntimeError) naming the pipeline's readers."""
        self.build()
        if name is not None:
            return self._meta(name)
        if not self._readers:
            return {None: self._c.reader_meta(None)} if self._has_builtin_reader() else {}
        return {reader: self._meta(reader) for reader in self._readers}

    def _has_builtin_reader(self) -> bool:
        try:
            self._c.reader_meta(None)
            return True
        except StokerError:
            return False

    def epoch_size(self, name: Optional[str] = None) -> Any:
        """Samples in one epoch of reader ``name`` (the whole data set, all shards); with
        ``name=None``, a dict {reader name: epoch size} (DALI's spelling). Builds first."""
        if name is not None:
            return self.reader_meta(name)["epoch_size"]
        return {reader: meta["epoch_size"] for reader, meta in self.reader_meta().items()}

    # -- DALI's scheduling API: stoker always runs ahead on its own threads -------------------
    def schedule_run(self) -> None:
        """DALI's asynchronous start of an iteration: stoker prepares batches ahead anyway, so this
        only builds the pipeline; ``outputs()`` returns the next batch."""
        self.build()

    def outputs(self) -> Tuple[TensorListCPU, ...]:
        """The next batch's outputs (after ``schedule_run()``): the same as ``run()``."""
        return self.run()

    def share_outputs(self) -> Tuple[TensorListCPU, ...]:
        """The next batch's outputs, valid until ``release_outputs()`` or the next call."""
        return self.run()

    def release_outputs(self) -> None:
        """Gives this thread's last batch back to the pipeline now (run() does it anyway)."""
        with self._lock:
            self._release_held(threading.get_ident())

    @property
    def is_restored_from_checkpoint(self) -> bool:
        """True when the pipeline was made with ``checkpoint=``."""
        return self._is_restored_from_checkpoint

    def stats(self) -> Dict[str, Any]:
        """Counters of the C pipeline (batches, images, allocations, per-operator seconds, the
        thread->CPU map, ...)."""
        self._check_open()
        return self._c.stats()

    @property
    def output_names(self) -> Tuple[str, ...]:
        return self._names

    def close(self) -> None:
        """Stops the threads and frees the pipeline (idempotent; from any thread, at any time: a
        ``run()`` waiting in another thread raises ``StokerError`` at once). Arrays/tensors exported
        through DLPack stay valid; TensorOutput objects of the batches held become unusable."""
        self._release_all()
        self._c.close()
        self._feed_close()  # parallel external sources' worker processes

    @property
    def is_closed(self) -> bool:
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


def _pipeline_parameters() -> Tuple[str, ...]:
    names = [p for p in inspect.signature(Pipeline.__init__).parameters if p != "self"]
    return tuple(names) + _DECORATOR_ARGUMENTS


def _function_takes(func: Callable[..., Any], name: str) -> bool:
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters and parameters[name].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                             inspect.Parameter.KEYWORD_ONLY)


@overload
def pipeline_def(fn: Callable[..., Any], *, enable_conditionals: bool = ...,
                 **pipeline_kwargs: Any) -> Callable[..., "Pipeline"]: ...


@overload
def pipeline_def(fn: None = ..., *, enable_conditionals: bool = ...,
                 **pipeline_kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., "Pipeline"]]: ...


def pipeline_def(fn: Optional[Callable[..., Any]] = None, *, enable_conditionals: bool = False,
                 **pipeline_kwargs: Any) -> Any:
    """Decorator turning a graph-defining function into a pipeline factory (DALI's spelling).

    ``@pipeline_def(batch_size=..., num_threads=..., device_id=..., seed=..., ...)`` takes every
    :class:`Pipeline` argument (and DALI's ``enable_conditionals``, ``debug``); calling the
    decorated function with any of those keywords overrides the decorator's, the remaining
    arguments go to the function (a pipeline argument the function itself declares, e.g.
    ``batch_size``, goes to both, as in DALI). The function returns the pipeline's outputs (a node
    or a tuple/list of nodes). The graph is built in C as the function runs, so argument errors
    raise here, at definition time.
    """
    parameters = _pipeline_parameters()
    unknown = sorted(set(pipeline_kwargs) - set(parameters))
    if unknown:
        raise ArgumentTypeError("pipeline_def: unknown pipeline argument '%s'" % unknown[0])
    pipeline_kwargs["enable_conditionals"] = enable_conditionals

    def decorator(func):
        # enable_conditionals: `if` on pipeline data becomes a per-sample merge of both branches
        body = conditionals.convert(func) if enable_conditionals else func

        def create(*args, **kwargs):
            options = dict(pipeline_kwargs)
            for key in parameters:
                if key in kwargs:
                    options[key] = kwargs[key] if _function_takes(func, key) else kwargs.pop(key)
            for key in parameters:
                if key in options and key not in kwargs and _function_takes(func, key):
                    kwargs[key] = options[key]
            _options.check_debug(options.pop("debug", False))
            pipe = Pipeline(**options)
            stack = current_stack()
            stack.append(pipe)
            try:
                outputs = body(*args, **kwargs)
                if isinstance(outputs, DataNode):
                    outputs = (outputs,)
                elif isinstance(outputs, list):
                    outputs = tuple(outputs)
                if not isinstance(outputs, tuple) or not outputs:
                    raise ArgumentTypeError(
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


def _experimental_module() -> Any:
    """``stoker.pipeline.experimental``, as DALI's ``nvidia.dali.pipeline.experimental``: its
    ``pipeline_def`` is the one above (conditionals and every Pipeline option included), so DALI
    code importing it from there (the EfficientNet example's dali.py) runs unchanged. Registered in
    sys.modules because stoker.pipeline is a module, not a package."""
    import sys
    import types as _pytypes

    module = _pytypes.ModuleType(__name__ + ".experimental", _experimental_module.__doc__)
    module.pipeline_def = pipeline_def  # type: ignore[attr-defined]
    module.Pipeline = Pipeline  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    return module


experimental = _experimental_module()
