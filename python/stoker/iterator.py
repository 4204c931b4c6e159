"""stoker.iterator: the framework-free iterator behind stoker.torch, with DALI's last-batch
policies (FILL / DROP / PARTIAL) and padding semantics.

DALI's docstring table, for the data set [1..7] and batch size 2 (last batch of the epoch):

====================  ==================  ===============
policy                last_batch_padded   last batch
====================  ==================  ===============
PARTIAL               True / False        [7]
FILL                  True                [7, 7]
FILL                  False               [7, 1]
DROP                  True / False        [5, 6] (the partial [7, x] is dropped)
====================  ==================  ===============

How it works: stoker's readers say how many samples of each batch are real
(``Batch.valid_samples``; the rest are the reader's fill: copies of the last sample with
``pad_last_batch=True``, else samples wrapped from the start of the shard) and end the epoch
themselves (``run()`` raises StopIteration). So FILL returns whole batches, PARTIAL trims the
last one to its real samples, DROP drops a batch that is not full and ends the epoch there. With
``reader_name`` every rank (shard) takes the same number of steps, as DDP needs: the readers give
every shard ceil(largest shard / batch) batches (a smaller shard's last one may be all fill, so
PARTIAL can return an empty batch there: use FILL or DROP with DDP), and DROP stops every rank
after the full batches of the smallest shard, floor(floor(N / shards) / batch). These counts are
the reader's for the epoch being read (``reader_meta``: ``epoch_batches``, ``epoch_full_batches``),
read at the start of every epoch, counted from the batch the pipeline delivers next
(``epoch_next_batch``): an iterator over a pipeline restored mid-epoch continues that epoch (len()
is its remaining steps), and a resharded remainder has its own counts. With
``reader_name`` the padding flag comes from the reader (``last_batch_padded`` must not be given),
as in DALI. Without ``reader_name`` and with ``size > 0`` the iterator counts samples like DALI's
legacy mode (the pipeline streams on across its own epochs); with neither, FILL becomes PARTIAL.

Several readers in one pipeline: the pipeline's epochs are its epoch reader's (its external
source, else its first reader: ``reader_meta()["epoch_reader"]``). An iterator whose
``reader_name`` is another reader counts that reader's epoch itself: it streams over the epoch
reader's epoch ends (the pipeline is reset there, keeping its prefetch), ends its own epoch after
that reader's batches of the epoch, takes the real samples of each batch from that reader, and its
reset() does not reset the pipeline (that reader goes on into its next epoch, as DALI's do).

Deliberate difference from DALI: ``reset()`` in the middle of an epoch really starts the next
epoch (the pipeline drops what is in flight) instead of being ignored.

Memory: outputs are zero-copy views (DLPack) of the batch, which the pipeline recycles only after
this iterator was asked for the next batch and the views are gone (see stoker.pipeline).

Hot path: ``__next__`` once per batch (Python bookkeeping plus one DLPack export per output).
"""
from __future__ import annotations

import math
import warnings
from enum import Enum
from typing import Any, Dict, List, Optional, Sequence, Union

from .errors import ArgumentError

# The most batches of an epoch's tail LastBatchPolicy.DROP takes and drops at reset (_take_epoch_tail).
_EPOCH_TAIL_MAX = 4


class LastBatchPolicy(Enum):
    """What to do with the last batch of an epoch when the shard does not fill it."""

    FILL = "fill"  # return the whole batch, completed with the reader's fill
    DROP = "drop"  # drop a batch that is not full
    PARTIAL = "partial"  # return only the real samples of the last batch


def _auto_reset(value: Any) -> bool:
    """DALI's auto_reset values: "no", False, None (reset() by hand) or "yes", "quiet", True."""
    if value in (None, False, "no", "False"):
        return False
    if value in (True, "yes", "quiet", "True"):
        return True
    raise ArgumentError("auto_reset must be one of False, True, \"no\", \"yes\", \"quiet\"; got %r" % (value,))


class NumpyIterator:
    """Iterates over one or more pipelines (one per GPU in this process), returning per batch a
    list with one dict {output name: array} per pipeline: the framework-free iterator (NumPy
    arrays, host outputs) that stoker.torch's ``GenericIterator`` (DALI's
    ``DALIGenericIterator``) builds on.

    Arguments follow DALI's ``DALIGenericIterator``, in its order: ``pipelines`` (one or a list),
    ``output_map`` (names for the pipeline outputs, in order), ``size`` (samples per epoch for the
    legacy counting mode; -1 = use the reader), ``reader_name``, ``auto_reset`` (False/"no",
    True/"yes"/"quiet"), ``fill_last_batch`` (DALI's deprecated spelling: True = FILL, False =
    PARTIAL), ``dynamic_shape`` (accepted, no effect: outputs always have their batch's shape),
    ``last_batch_padded``, ``last_batch_policy``, ``prepare_first_batch`` (start the pipelines and
    fetch the first batch now, so errors surface at construction).
    """

    def __init__(
        self,
        pipelines: Any,
        output_map: Sequence[str],
        size: int = -1,
        reader_name: Optional[str] = None,
        auto_reset: Union[bool, str, None] = False,
        fill_last_batch: Optional[bool] = None,
        dynamic_shape: Any = False,
        last_batch_padded: bool = False,
        last_batch_policy: "LastBatchPolicy" = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
    ) -> None:
        if fill_last_batch is not None:
            warnings.warn("fill_last_batch is deprecated (as in DALI): use last_batch_policy", DeprecationWarning,
                          stacklevel=2)
            last_batch_policy = LastBatchPolicy.FILL if fill_last_batch else LastBatchPolicy.PARTIAL
        if not isinstance(pipelines, (list, tuple)):
            pipelines = [pipelines]
        if not pipelines:
            raise ArgumentError("the iterator needs at least one pipeline")
        self._pipes = list(pipelines)
        self.batch_size = self._pipes[0].batch_size
        if any(p.batch_size != self.batch_size for p in self._pipes):
            raise ArgumentError("all pipelines must have the same batch_size")
        self.output_map = list(output_map)
        if len(set(self.output_map)) != len(self.output_map):
            raise ArgumentError("output_map names must be distinct: %r" % (self.output_map,))
        if not isinstance(last_batch_policy, LastBatchPolicy):
            raise ArgumentError("last_batch_policy must be a LastBatchPolicy, got %r" % (last_batch_policy,))
        self._size = int(size)
        if self._size == 0:
            raise ArgumentError("size cannot be 0")
        if reader_name is not None and self._size > 0:
            raise ArgumentError("give either reader_name or size, not both")
        if reader_name is not None and last_batch_padded:
            raise ArgumentError("with reader_name, last_batch_padded comes from the reader's pad_last_batch; do not set it")
        self._reader_name = reader_name
        self._auto_reset = _auto_reset(auto_reset)
        self._policy = last_batch_policy
        self._last_batch_padded = bool(last_batch_padded)
        if self._size < 0 and reader_name is None and self._policy == LastBatchPolicy.FILL:
            self._policy = LastBatchPolicy.PARTIAL

        for pipe in self._pipes:
            names = getattr(pipe, "output_names", ())
            if names and len(names) != len(self.output_map):
                raise ArgumentError(
                    "output_map has %d names but the pipeline has %d outputs" % (len(self.output_map), len(names))
                )
            pipe.build()
        self._shard_size = None
        self._further_reader = False  # reader_name is not the pipeline's epoch reader (module doc)
        if reader_name is not None:
            meta = self._pipes[0].reader_meta(reader_name)
            self._further_reader = not meta.get("epoch_reader", True)
            self._last_batch_padded = bool(meta["pad_last_batch"])
            shards = max(1, meta["number_of_shards"])
            if meta["epoch_size"] < 0:
                self._shard_size = -1  # not known before the data is read (webdataset without an index)
            elif self._last_batch_padded:
                self._shard_size = meta["epoch_size_padded"] // shards
            else:
                self._shard_size = math.ceil(meta["epoch_size"] / shards)
            # DALI's iterators keep the shard's size in _size (its ResNet-50 example reads it)
            self._size = self._shard_size
        self._counter = 0
        self._begin_epoch()
        self._ended = False
        self._current = []
        self._first = None
        self._state_before_first = None
        if prepare_first_batch:
            # The first batch is fetched now but handed out later: state_dict() before that must
            # not count it, so the state is taken first (None when the reader cannot seek).
            self._state_before_first = self._try_checkpoints()
            try:
                self._first = self._next_batches()
            except StopIteration:
                self._first = None
                self._ended = True

    # -- conversion hook -----------------------------------------------------------------------
    def _convert(self, output, count):
        """Output `output` (a TensorOutput) trimmed to its first `count` samples."""
        import numpy as np

        array = np.from_dlpack(output)
        return array if count == array.shape[0] else array[:count]

    # -- the epoch's count (reader_name) --------------------------------------------------------
    def _begin_epoch(self):
        """With reader_name, where the epoch being read ends, in batches: read from the readers
        at the start of each pass over an epoch (construction, reset, load_state_dict). The epoch
        is the pipelines' current one, counted from the batch they deliver next (0 after a reset,
        the checkpoint's position after a restore): FILL and PARTIAL run to the readers' end of
        epoch (every shard gives the same number of batches), DROP stops after the batches that
        are full on every shard of this epoch (a resharded remainder has its own), so that every
        rank takes the same number of steps. None where the readers cannot know before reading."""
        self._step = self._epoch_first = 0
        self._epoch_end = None
        if self._reader_name is None:
            return
        metas = [pipe.reader_meta(self._reader_name) for pipe in self._pipes]
        self._step = self._epoch_first = max(m["epoch_next_batch"] for m in metas)
        if self._policy == LastBatchPolicy.DROP:
            ends = [m["epoch_full_batches"] for m in metas]
            self._epoch_end = min(ends) if min(ends) >= 0 else None
        else:
            ends = [m["epoch_batches"] for m in metas]
            self._epoch_end = max(ends) if min(ends) >= 0 else None

    # -- policy ----------------------------------------------------------------------------------
    def _release_current(self):
        for batch in self._current:
            batch.release()
        self._current = []

    def _take_epoch_tail(self):
        """DROP ended the epoch before the readers' last batches (the partial one, a larger shard's
        extra ones): each pipeline's remaining batches of the epoch are taken and released unseen,
        so its reset comes at the epoch's end and keeps the next epoch's batches it prefetched
        meanwhile. A reset before them would discard that prefetch and start the next epoch from an
        empty queue: a whole batch's latency at every epoch, in the training loop's critical path.
        Only a short tail is taken (they are prefetched already or next in line); a longer one is
        left to the reset's discard."""
        for pipe in self._pipes:
            meta = pipe.reader_meta(self._reader_name)
            left = meta["epoch_batches"] - meta["epoch_next_batch"]
            if meta["epoch_batches"] < 0 or (left > _EPOCH_TAIL_MAX and not self._further_reader):
                continue
            for _ in range(left):
                try:
                    self._fetch(pipe, self._further_reader).release()
                except StopIteration:
                    break

    def _end_epoch(self):
        self._ended = True
        self._release_current()
        if self._auto_reset:
            self.reset()
        raise StopIteration

    def _fetch(self, pipe, stream_on):
        try:
            return pipe.run_batch()
        except StopIteration:
            if not stream_on:
                raise
            pipe.reset()  # legacy size mode: the data streams on across the pipeline's epochs
            return pipe.run_batch()

    def _next_batches(self):
        """One batch from every pipeline, as a list of (Batch, count) with the policy applied."""
        self._release_current()
        legacy = self._size > 0 and self._reader_name is None
        step = self.batch_size * len(self._pipes)
        if legacy:
            if self._counter >= self._size:
                self._end_epoch()
            if self._policy == LastBatchPolicy.DROP and self._counter + step > self._size:
                self._end_epoch()
        if self._reader_name is not None and (self._policy == LastBatchPolicy.DROP or self._further_reader):
            if self._epoch_end is not None and self._step >= self._epoch_end:
                self._end_epoch()  # equal steps on every rank: the larger shards' extra samples are dropped
        batches = []
        try:
            for pipe in self._pipes:
                batches.append(self._fetch(pipe, legacy or self._further_reader))
        except StopIteration:
            self._current = batches
            self._end_epoch()
        self._current = batches
        self._step += 1
        if legacy:
            before = self._counter
            self._counter += step
            counts = [self.batch_size] * len(batches)
            if self._policy == LastBatchPolicy.PARTIAL and self._counter > self._size:
                remaining = self._size - before
                counts = []
                for _ in batches:
                    take = max(0, min(self.batch_size, remaining))
                    counts.append(take)
                    remaining -= take
                pairs = [(b, c) for b, c in zip(batches, counts) if c > 0]
                return pairs
            return list(zip(batches, counts))
        counts = []
        for batch in batches:
            valid = batch.reader_valid_samples(self._reader_name)[0] if self._further_reader else batch.valid_samples
            if valid < batch.size and self._policy == LastBatchPolicy.DROP:
                self._end_epoch()
            counts.append(valid if self._policy == LastBatchPolicy.PARTIAL else batch.size)
        self._counter += sum(counts)
        return list(zip(batches, counts))

    # -- iteration -------------------------------------------------------------------------------
    def __iter__(self) -> "NumpyIterator":
        return self

    def __next__(self) -> List[Dict[str, Any]]:
        if self._first is not None:
            pairs, self._first = self._first, None
        else:
            if self._ended:
                raise StopIteration
            pairs = self._next_batches()
        result = []
        for batch, count in pairs:
            if len(batch.outputs) != len(self.output_map):
                raise ArgumentError(
                    "output_map has %d names but the pipeline has %d outputs" % (len(self.output_map), len(batch.outputs))
                )
            result.append({name: self._convert(out, count) for name, out in zip(self.output_map, batch.outputs)})
        return result

    next = __next__

    def reset(self) -> None:
        """Starts the next epoch. With a reader (or size=-1) the pipelines start their next epoch;
        in legacy size mode the data streams on and only the count restarts."""
        self._release_current()
        self._first = None
        legacy = self._size > 0 and self._reader_name is None
        if legacy:
            if self._policy == LastBatchPolicy.FILL and not self._last_batch_padded:
                self._counter = self._counter % self._size
            else:
                self._counter = 0
        else:
            self._counter = 0
            if self._ended and self._policy == LastBatchPolicy.DROP and self._reader_name is not None:
                self._take_epoch_tail()
            if not self._further_reader:  # a further reader goes on into its next epoch by itself
                for pipe in self._pipes:
                    pipe.reset()
        self._begin_epoch()
        self._ended = False

    # -- checkpoints (PyTorch style) --------------------------------------------------------------
    def _try_checkpoints(self):
        try:
            return [pipe.checkpoint() for pipe in self._pipes]
        except Exception:
            return None

    def checkpoints(self) -> List[str]:
        """One checkpoint string per pipeline (DALI's iterator ``checkpoints()``): pipelines built
        with ``checkpoint=`` these (same definitions) continue with the batches this iterator
        would return next. Before the first batch is taken they are the pipelines' state before
        it, so the prepared first batch is not lost."""
        return list(self.state_dict()["pipelines"])

    def state_dict(self) -> Dict[str, Any]:
        """The iterator's position as a small dict (one pipeline checkpoint string per pipeline,
        plus the iterator's count), to save with the model: ``load_state_dict`` on an iterator over
        pipelines of the same definition continues with exactly the batches this one would return
        next."""
        if self._first is not None:
            if self._state_before_first is None:
                [pipe.checkpoint() for pipe in self._pipes]  # raises the reason
            pipelines = list(self._state_before_first)
            counter = 0
        else:
            pipelines = [pipe.checkpoint() for pipe in self._pipes]
            counter = self._counter
        return {"version": 1, "pipelines": pipelines, "counter": counter, "ended": self._ended}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues from a ``state_dict()``: the pipelines drop what they prefetched and seek to
        the saved position (nothing skipped is decoded). A state of other pipelines, data, seed or
        batch size raises StokerError naming what differs."""
        if not isinstance(state, dict) or state.get("version") != 1 or "pipelines" not in state:
            raise ArgumentError("not a stoker iterator state_dict (version 1)")
        if len(state["pipelines"]) != len(self._pipes):
            raise ArgumentError(
                "the state has %d pipelines, this iterator %d" % (len(state["pipelines"]), len(self._pipes))
            )
        self._release_current()
        self._first = None
        for pipe, text in zip(self._pipes, state["pipelines"]):
            pipe.restore(text)
        self._begin_epoch()  # with reader_name the count goes on from the pipelines' position
        self._counter = int(state.get("counter", 0))
        self._ended = bool(state.get("ended", False))

    def __len__(self) -> int:
        """Steps of the epoch being read. With reader_name: the readers' batches of the epoch
        (DROP: those full on every shard), counted from where this pass began, so an iterator over
        pipelines restored mid-epoch (``checkpoint=``, ``load_state_dict``) gives the remaining
        steps of that epoch, then whole epochs after reset(); constant within a pass. TypeError
        where it is unknown (no reader_name and no size; a reader that cannot know, e.g.
        readers.webdataset without index_paths)."""
        if self._reader_name is not None:
            if self._epoch_end is None:
                raise TypeError("the iterator's length is unknown: reader %r cannot count its epoch before reading it "
                                "(readers.webdataset without index_paths)" % self._reader_name)
            return max(0, self._epoch_end - self._epoch_first)
        if self._size > 0:
            samples = self._size
            per_step = self.batch_size * len(self._pipes)
        else:
            raise TypeError("the iterator's length is unknown: give reader_name or size")
        if self._policy == LastBatchPolicy.DROP:
            return samples // per_step
        return math.ceil(samples / per_step)

    @property
    def size(self) -> int:
        return self._shard_size if self._reader_name is not None else self._size
