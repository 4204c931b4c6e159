"""stoker.parallel_source: ``fn.external_source(..., parallel=True)`` -- DALI's parallel external
source. The user's callable ``source`` runs in worker processes, so the pipeline's Python side
(and the GIL) only gathers results.

* ``batch=False`` (per-sample): ``source(sample_info)`` for every sample; each batch is split into
  one contiguous chunk per worker. ``batch=True``: ``source(batch_info)`` (or the iteration index,
  or nothing, as for a plain external source) once per batch, batches spread over the workers.
* The pipeline's ``py_num_workers`` (default 1) and ``py_start_method`` (``"fork"``, the default,
  or ``"spawn"``: the source must then be picklable, e.g. a module-level function or a callable
  object; ``fork`` after CUDA was used in the parent is unsafe, as in DALI).
* Prefetch: ``prefetch_queue_depth`` batches (the source's, else the pipeline's) are in the
  workers ahead of the one the pipeline takes.
* Deterministic: sample i of iteration k is ``source(SampleInfo(k * batch_size + i, i, k, epoch))``
  whichever worker computes it, and batches are delivered in iteration order.
* Results come back through shared memory (multiprocessing.shared_memory): a worker writes a
  task's arrays into one new block and sends its name and the arrays' layout; the main process
  copies them out, then unlinks the block (no block outlives its batch, none leaks at exit).
* Errors: an exception in ``source`` is raised again in the main process (the same exception when
  it pickles, else a StokerError) with the worker's formatted traceback as its ``__cause__``;
  StopIteration ends the epoch (with ``exec_dynamic``, the samples before it form a last, shorter
  batch), as for a plain per-sample source. A worker that dies is an error naming its exit code.
* Shutdown: ``pipe.close()``, garbage collection or interpreter exit stop the workers (a sentinel,
  then terminate after a timeout) and join them: no zombie processes.

Hot path: gathering is once per batch (a copy out of shared memory per array).
"""
import multiprocessing
import os
import queue
import traceback
import weakref
from multiprocessing import resource_tracker, shared_memory

import numpy as np

from .errors import ArgumentError, StokerError
from .external_source import BatchInfo, SampleInfo, _Source

_JOIN_TIMEOUT = 5.0
_POLL = 0.2  # seconds between liveness checks while waiting for a result


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process (the __cause__ of the re-raise)."""

    def __str__(self):
        return self.args[0]


# -- worker process side -----------------------------------------------------------------------
def _pack(arrays):
    """Writes arrays into one new shared memory block: (block name, [(dtype str, shape, offset)])."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    metas, offset = [], 0
    for a in arrays:
        metas.append((a.dtype.str, a.shape, offset))
        offset += (a.nbytes + 63) // 64 * 64
    block = shared_memory.SharedMemory(create=True, size=max(offset, 1))
    for a, (_, _, start) in zip(arrays, metas):
        if a.nbytes:
            np.frombuffer(block.buf, np.uint8, a.nbytes, start)[:] = a.reshape(-1).view(np.uint8)
    name = block.name
    block.close()  # the main process unlinks it once it has copied the arrays out
    return name, metas


def _flatten(outputs, num_outputs, per_sample):
    """The arrays of a task's result, and its structure to rebuild it from them."""
    arrays, shape = [], []
    if per_sample:  # outputs: list of samples, each a list of num_outputs arrays
        for sample in outputs:
            arrays.extend(sample)
        return arrays, ("samples", len(outputs), num_outputs)
    for batch in outputs:  # outputs: num_outputs batches, each a list of arrays or one dense array
        if isinstance(batch, (list, tuple)):
            arrays.extend(batch)
            shape.append(len(batch))
        else:
            arrays.append(batch)
            shape.append(-1)
    return arrays, ("batches", shape)


def _worker_main(source, per_sample, batch_info, num_outputs, multiple, tasks, results):
    call, _ = _Source._callable_adapter(source, not per_sample, batch_info)
    while True:
        task = tasks.get()
        if task is None:
            return
        key, infos = task
        try:
            outputs, stopped = [], False
            for info in infos:
                try:
                    item = call(info)
                except StopIteration:
                    stopped = True
                    break
                if not multiple:
                    item = [item]
                elif not isinstance(item, (tuple, list)) or len(item) != num_outputs:
                    raise StokerError("with num_outputs=%d the source must give a tuple of %d, got %s"
                                      % (num_outputs, num_outputs, type(item).__name__))
                outputs.append(list(item))
            if not per_sample and outputs:
                outputs = outputs[0]
            arrays, structure = _flatten(outputs, num_outputs, per_sample)
            name, metas = _pack(arrays) if arrays else (None, [])
            results.put((key, "ok", (name, metas, structure, stopped)))
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the main process
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
            try:
                import pickle

                pickle.dumps(error)
                payload = error
            except Exception:  # noqa: BLE001 - an exception that does not pickle travels as text
                payload = None
            results.put((key, "error", (payload, "%s: %s" % (type(error).__name__, error), text, os.getpid())))


# -- main process side ---------------------------------------------------------------------------
def _unpack(name, metas):
    if name is None:
        return []
    block = shared_memory.SharedMemory(name=name)
    try:
        return [np.frombuffer(block.buf, np.dtype(d), int(np.prod(s, dtype=np.int64)), off).reshape(s).copy()
                for d, s, off in metas]
    finally:
        block.close()
        block.unlink()


def _discard(payload):
    """Unlinks the shared memory of a result nobody will take."""
    name = payload[0]
    if name is not None:
        try:
            block = shared_memory.SharedMemory(name=name)
            block.close()
            block.unlink()
        except FileNotFoundError:
            pass


def _shutdown(processes, tasks, results, pending):
    for q in tasks:
        try:
            q.put(None)
        except (OSError, ValueError):
            pass
    for p in processes:
        p.join(_JOIN_TIMEOUT)
        if p.is_alive():
            p.terminate()
            p.join(_JOIN_TIMEOUT)
    while True:  # results still queued: free their blocks
        try:
            key, status, payload = results.get_nowait()
        except (queue.Empty, OSError, ValueError, EOFError):
            break
        if status == "ok":
            _discard(payload)
    for got in pending.values():  # received, never taken
        for status, payload in got.values():
            if status == "ok":
                _discard(payload)
    pending.clear()
    for q in list(tasks) + [results]:
        q.close()
        q.join_thread()


class ParallelSource(_Source):
    """An external source whose callable runs in worker processes (see the module's doc)."""

    def __init__(self, name, source, num_outputs, batch, batch_info, layouts, no_copy, multiple, depth):
        if source is None or not callable(source):
            raise ArgumentError("external_source %s: parallel=True needs a callable source (a function or a "
                                "callable object; with py_start_method=\"spawn\" a picklable one)" % name)
        import inspect

        if inspect.isgeneratorfunction(source):
            raise ArgumentError("external_source %s: parallel=True does not take a generator function; give a "
                                "callable taking sample_info (batch=False) or batch_info" % name)
        super().__init__(name, source, num_outputs, batch, batch_info, "no", layouts, no_copy, multiple)
        self._raw = source
        self._batch_info = batch_info
        self.depth = depth
        self._processes = []
        self._tasks = []
        self._results = None
        self._pending = {}  # (epoch, iteration) -> {chunk: payload}
        self._chunks = {}  # (epoch, iteration) -> number of chunks sent
        self._submitted = 0  # iterations of the current epoch handed to workers
        self._finalizer = None
        self._epoch_over = False  # a shorter last batch was given: the next call ends the epoch

    # -- workers ---------------------------------------------------------------------------------
    def start(self, num_workers, start_method):
        if self._processes:
            return
        if num_workers < 1:
            raise ArgumentError("py_num_workers must be at least 1 for parallel external sources, got %r" % num_workers)
        if start_method not in ("fork", "spawn"):
            raise ArgumentError("py_start_method must be \"fork\" or \"spawn\", got %r" % (start_method,))
        ctx = multiprocessing.get_context(start_method)
        # One resource tracker for this process and its workers (forked ones would otherwise start
        # their own), so a block a worker made and the main process unlinked is forgotten by both.
        resource_tracker.ensure_running()
        self._results = ctx.Queue()
        for w in range(num_workers):
            tasks = ctx.Queue()
            process = ctx.Process(target=_worker_main, name="stoker-%s-%d" % (self.name, w), daemon=True,
                                  args=(self._raw, not self.batch, self._batch_info, self.num_outputs, self.multiple,
                                        tasks, self._results))
            try:
                process.start()
            except Exception as error:  # noqa: BLE001 - e.g. a source that does not pickle under spawn
                _shutdown(self._processes, self._tasks, self._results, self._pending)
                self._processes = []
                raise StokerError("external_source %s: starting worker process %d (%s) failed: %s"
                                  % (self.name, w, start_method, error)) from error
            self._processes.append(process)
            self._tasks.append(tasks)
        self._finalizer = weakref.finalize(self, _shutdown, self._processes, self._tasks, self._results,
                                           self._pending)

    def close(self):
        if self._finalizer is not None:
            self._finalizer()

    @property
    def worker_pids(self):
        return [p.pid for p in self._processes]

    # -- batches ---------------------------------------------------------------------------------
    def _submit(self, iteration, batch_size):
        key = (self.epoch_idx, iteration)
        workers = len(self._processes)
        if self.batch:
            self._tasks[iteration % workers].put((key + (0,), [BatchInfo(iteration, self.epoch_idx)]))
            self._chunks[key] = 1
            return
        per = -(-batch_size // workers)
        chunks = 0
        for w, first in enumerate(range(0, batch_size, per)):
            infos = [SampleInfo(iteration * batch_size + i, i, iteration, self.epoch_idx)
                     for i in range(first, min(batch_size, first + per))]
            self._tasks[w].put((key + (chunks,), infos))
            chunks += 1
        self._chunks[key] = chunks

    def _wait(self, key):
        """Every chunk's result of iteration `key`, in chunk order."""
        got = self._pending.setdefault(key, {})
        while len(got) < self._chunks[key]:
            try:
                (epoch, iteration, chunk), status, payload = self._results.get(timeout=_POLL)
            except queue.Empty:
                for w, p in enumerate(self._processes):
                    if not p.is_alive():
                        raise StokerError("external_source %s: worker process %d (pid %d) exited with code %s"
                                          % (self.name, w, p.pid, p.exitcode))
                continue
            if (epoch, iteration) not in self._chunks:
                if status == "ok":
                    _discard(payload)  # a prefetched batch of an epoch that ended
                continue
            self._pending.setdefault((epoch, iteration), {})[chunk] = (status, payload)
        del self._chunks[key]
        results = [got[c] for c in sorted(self._pending.pop(key))]
        failed = [payload for status, payload in results if status == "error"]
        if failed:  # raised when its batch is due, not when a prefetched one fails early
            for status, payload in results:
                if status == "ok":
                    _discard(payload)
            self._raise(failed[0])
        return [payload for _, payload in results]

    def _raise(self, payload):
        error, summary, text, pid = payload
        cause = RemoteTraceback("worker process pid %d:\n%s" % (pid, text))
        if error is None:
            raise StokerError("external_source %s: the source raised in a worker process: %s"
                              % (self.name, summary)) from cause
        raise error from cause

    def next_batch(self, batch_size, dynamic):
        if not self._processes:
            raise StokerError("external_source %s: its worker processes are not running (the pipeline is closed or "
                              "not built)" % self.name)
        if self._epoch_over:
            raise StopIteration
        while self._submitted < self.iteration + max(1, self.depth):
            self._submit(self._submitted, batch_size)
            self._submitted += 1
        parts = self._wait((self.epoch_idx, self.iteration))
        stopped = False
        if self.batch:
            name, metas, structure, stopped = parts[0]
            if stopped:
                raise StopIteration
            outputs = _rebuild_batches(_unpack(name, metas), structure[1])
        else:
            samples = []
            for name, metas, structure, chunk_stopped in parts:
                if stopped:
                    _discard((name,))
                    continue
                arrays = _unpack(name, metas)
                _, count, n_out = structure
                samples.extend(arrays[i * n_out:(i + 1) * n_out] for i in range(count))
                stopped = chunk_stopped
            if stopped and (not samples or not dynamic):
                raise StopIteration
            self.idx_in_epoch += len(samples)
            outputs = [[sample[o] for sample in samples] for o in range(self.num_outputs)]
        self.iteration += 1
        self._epoch_over = stopped
        return outputs

    def restart(self):
        for key in list(self._chunks):  # prefetched for the ended epoch: discarded as they arrive
            del self._chunks[key]
        for got in self._pending.values():
            for status, payload in got.values():
                if status == "ok":
                    _discard(payload)
        self._pending.clear()
        self._submitted = 0
        self._epoch_over = False
        super().restart()


def _rebuild_batches(arrays, shape):
    outputs, at = [], 0
    for n in shape:
        if n < 0:
            outputs.append(arrays[at])
            at += 1
        else:
            outputs.append(arrays[at:at + n])
            at += n
    return outputs
