"""stoker.source_group: the external sources of one pipeline, fed to the C pipeline as one
``external_source`` node (a C pipeline has at most one; DALI lets a pipeline have several
external sources, e.g. images and labels from two sources). That node is the pipeline's epoch
reader: its data ending ends the epoch, and the pipeline's other readers go on (src/core/graph.c).

Each ``fn.external_source`` call takes the next ``num_outputs`` output slots of the group's node
(named after the first source; its outputs ``name``, ``name[1]``, ...): the graph refers to a
later source's outputs by slot, ``pipe.feed_input`` by the source's own name. The node is added to
the C graph when the pipeline is built (add_to_graph), once every source is known. Every
iteration takes one batch from every source -- calling those with a ``source``, the oldest
``feed_input`` batch of those without -- checks them (each source's ``dtype``/``ndim``/``layout``,
errors naming that source and its output and sample), and feeds them as one batch; the sources
must agree on its size. One source ending (StopIteration) ends the epoch for all. The sources of
one pipeline share a device (all ``"cpu"`` or all ``"gpu"``) and at most 8 outputs.

Hot path: once per batch, under the pipeline's lock.
"""
import collections

from .errors import ArgumentError, StokerError
from .external_source import describe_batch

_MAX_SLOTS = 8  # the C operator's outputs
_NO_COPY = 1  # STK_FEED_NO_COPY


class SourceGroup:
    """The pipeline's external sources (``stoker.external_source._Source`` objects, in slot order)."""

    def __init__(self, node_name, device):
        self.name = node_name  # the C node's name (the first source's)
        self.device = device
        self.members = []
        self.slots = 0
        self.added = False
        self.ended = False
        self.fed_ahead = 0  # iterations fed and not yet taken
        self.keep = collections.deque()  # per fed batch: the arrays a no_copy feed borrows (else None)
        self._budget = 0  # the pipeline's host memory budget, read at the first feed

    def add(self, source, device):
        """Gives `source` its slots; returns the graph names of its outputs."""
        if device != self.device:
            raise ArgumentError("external_source %s: device=%r, but external source %s of this pipeline is on %r; "
                                "the external sources of one pipeline share a device (move CPU data with .gpu())"
                                % (source.name, device, self.members[0].name, self.device))
        if self.slots + source.num_outputs > _MAX_SLOTS:
            raise ArgumentError("external_source %s: the external sources of one pipeline have at most %d outputs "
                                "together (%d taken)" % (source.name, _MAX_SLOTS, self.slots))
        source.slot = self.slots
        self.members.append(source)
        self.slots += source.num_outputs
        return [self.name if k == 0 else "%s[%d]" % (self.name, k)
                for k in range(source.slot, source.slot + source.num_outputs)]

    def member(self, node):
        """The source a feed_input names: its name, or one of its graph nodes."""
        ref = str(getattr(node, "name", node))
        slot = 0
        if ref.startswith(self.name + "[") and ref.endswith("]") and ref[len(self.name) + 1:-1].isdigit():
            slot = int(ref[len(self.name) + 1:-1])
        elif ref != self.name:
            for source in self.members:
                if source.name == ref:
                    return source
            return None
        for source in self.members:
            if source.slot <= slot < source.slot + source.num_outputs:
                return source
        return None

    def add_to_graph(self, pipe):
        """Adds the C node (at build: every source is known)."""
        if self.added:
            return
        layouts = [layout for source in self.members for layout in (source.layouts or [""] * source.num_outputs)]
        c_args = [("num_outputs", "int", self.slots), ("no_copy", "bool", False)]
        if any(layouts):
            c_args.append(("layout", "str_list", layouts))
        if self.device == "gpu":
            c_args.append(("device", "str", "gpu"))
        pipe._add_op("external_source", self.name, [], c_args, False)
        self.added = True
        for source in self.members:  # parallel ones: before the C pipeline's threads exist (fork)
            if hasattr(source, "start"):
                source.start(pipe.py_num_workers, pipe.py_start_method)

    def close(self):
        for source in self.members:
            if hasattr(source, "close"):
                source.close()

    # -- feeding (under the pipeline's lock) -----------------------------------------------------
    def _host_budget(self, c_pipe):
        """The pipeline's host memory budget in bytes (fixed once built; 0 when unknown)."""
        if not self._budget:
            budget = c_pipe.stats().get("host_memory_budget", 0)
            self._budget = 0 if budget >= (1 << 64) - 1 else budget
        return self._budget

    def _feed(self, c_pipe, parts):
        """parts: per member (outputs, layouts, no_copy) -> one C feed of all slots."""
        flat, keep, streams, count, first = [], [], set(), None, None
        no_copy = all(part[2] for part in parts)
        for source, (outputs, layouts, _) in zip(self.members, parts):
            described, n, kept, stream = describe_batch(source.name, outputs, layouts, no_copy, source.device_id,
                                                        self._host_budget(c_pipe))
            if count is None:
                count, first = n, source
            elif n != count:
                raise StokerError("external_source %s gave %d samples, but external_source %s gave %d: the external "
                                  "sources of one pipeline give batches of one size"
                                  % (source.name, n, first.name, count))
            source.check(described, n)
            flat.extend(described)
            keep.extend(kept)
            if stream:
                streams.add(stream)
        if len(streams) > 1:
            names = ", ".join(m.name for m in self.members)
            raise StokerError("external sources %s: their GPU arrays come from %d different CUDA streams; give them on "
                              "one stream (or synchronize first)" % (names, len(streams)))
        c_pipe.feed_input(self.name, flat, count or 0, _NO_COPY if no_copy else 0, streams.pop() if streams else 0)
        self.keep.append(keep if no_copy else None)
        self.fed_ahead += 1

    def _next_parts(self, max_batch_size, dynamic):
        """One batch from every source, or None when one without a source has nothing queued."""
        if any(source.source is None and not source.queue for source in self.members):
            return None
        parts = []
        for source in self.members:
            if source.source is None:
                parts.append(source.queue.popleft())
            else:
                outputs = source.next_batch(max_batch_size, dynamic)  # StopIteration: the end
                parts.append((outputs, source.layouts, source.no_copy))
        return parts

    def top_up(self, c_pipe, depth, max_batch_size, dynamic):
        """Feeds until `depth` iterations are ahead (DALI calls the sources on the consumer's thread
        too), or feeds the end mark when a source is exhausted."""
        while not self.ended and self.fed_ahead < max(1, depth):
            if all(source.source is None for source in self.members):
                return  # feed_input feeds these as their batches come
            try:
                parts = self._next_parts(max_batch_size, dynamic)
            except StopIteration:
                self.ended = True
                c_pipe.feed_input(self.name, [], -1)
                return
            if parts is None:
                return
            self._feed(c_pipe, parts)

    def feed_input(self, c_pipe, node, data, layout, no_copy):
        source = self.member(node)
        if source is None:
            raise ArgumentError("feed_input: the pipeline has no external_source named %r" % (node,))
        source.take_fed(data, layout, no_copy)
        if all(member.source is None for member in self.members):
            while all(member.queue for member in self.members):
                self._feed(c_pipe, [member.queue.popleft() for member in self.members])

    def taken(self):
        """A batch was taken: the arrays its no_copy feed borrowed (None when copied)."""
        self.fed_ahead = max(0, self.fed_ahead - 1)
        return self.keep.popleft() if self.keep else None

    def resume(self, epoch, position, batch_size):
        """A checkpoint restore: the C node dropped what was fed; each source continues from the
        checkpoint (or, not resumable, from its beginning)."""
        self.fed_ahead = 0
        self.keep.clear()
        self.ended = False
        for source in self.members:
            source.resume(epoch, position, batch_size)

    def restart(self):
        self.fed_ahead = 0
        self.keep.clear()
        self.ended = False
        for source in self.members:
            source.restart()
