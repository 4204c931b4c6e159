"""stoker.graph: graph nodes (:class:`DataNode`) and operator calls made outside a pipeline.

Inside a pipeline's definition (a ``@pipeline_def`` function, a ``with pipe:`` block, a
``define_graph`` method) an ``fn.*`` call adds its operator to that pipeline's C graph at once, so
a wrong argument raises on that line. Outside any pipeline, as DALI allows, the call is recorded
(a :class:`DeferredCall`) and its nodes are unbound; the pipeline that uses one of them
(``set_outputs``, ``build``, or an operator called inside its definition) replays the recorded
calls it depends on into its own graph, inputs first, once per pipeline. Arguments are checked
against the schema when the call is recorded, and by the C side when it is replayed.

Not on a hot path (definition time only).
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence

from .errors import ArgumentError

_local = threading.local()


def current_stack() -> List[Any]:
    """The pipelines being defined on this thread, innermost last."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


class DataNode:
    """One output of an operator in a pipeline graph (what ``fn.*`` returns).

    ``name`` is the C graph's reference ("decode" or "reader[1]"; None until a pipeline binds a
    node made outside one); ``device`` is "cpu" or "gpu". Using a node as a condition (``if node:``)
    raises TypeError: conditionals on data are not supported yet.
    """

    def __init__(self, pipeline: Any, name: Optional[str], device: str, op_name: str, to_gpu: bool = False,
                 deferred: Optional["DeferredCall"] = None, index: int = 0) -> None:
        self.pipeline = pipeline
        self.name = name
        self.device = device
        self.op_name = op_name
        self.to_gpu = to_gpu
        self._deferred = deferred
        self._index = index

    def gpu(self) -> "DataNode":
        """This node on the GPU. Fed to an operator, that operator runs on the GPU (``device="gpu"``
        unless given). As a pipeline output, a CPU node marked with ``.gpu()`` stays a host output of
        ``pipe.run()`` and is moved to the pipeline's GPU by the PyTorch iterators (labels, as in
        DALI's ``labels.gpu()``)."""
        if self.device == "gpu":
            return self
        return DataNode(self.pipeline, self.name, "gpu", self.op_name, to_gpu=True, deferred=self._deferred,
                        index=self._index)

    def cpu(self) -> "DataNode":
        """This node on the CPU: a CPU node is itself; moving GPU data back is not supported."""
        if self.device == "cpu":
            return self
        if self.to_gpu:
            return DataNode(self.pipeline, self.name, "cpu", self.op_name, deferred=self._deferred, index=self._index)
        raise ArgumentError("%s: moving GPU data back to the CPU inside a pipeline (.cpu()) is not supported" %
                            self.op_name)

    def bind(self, pipe: Any) -> "DataNode":
        """This node in pipeline `pipe`: itself when made there; a node made outside any pipeline
        replays its operator (and the ones it depends on) into `pipe` first."""
        if self.pipeline is pipe:
            return self
        if self.pipeline is not None or self._deferred is None:
            raise ArgumentError("node %s (%s) belongs to another pipeline" % (self.name, self.op_name))
        node = self._deferred.bind(pipe)[self._index]
        if self.to_gpu and node.device == "cpu":
            node = node.gpu()
        return node

    def __bool__(self) -> bool:
        raise TypeError(
            "%s: a graph node has no truth value at definition time; `if`/`while`/`and`/`or` on pipeline data "
            "needs @pipeline_def(enable_conditionals=True), as in DALI (docs/porting.md)" % self.op_name)

    def __iter__(self) -> Any:
        raise TypeError("%s: a graph node is one output, not a sequence of outputs" % self.op_name)

    def __repr__(self) -> str:
        return "DataNode(%r, device=%r, op=%r)" % (self.name, self.device, self.op_name)


def bind_value(value: Any, pipe: Any) -> Any:
    """An argument value with its nodes bound to `pipe` (lists of nodes element by element)."""
    if isinstance(value, DataNode):
        return value.bind(pipe)
    if isinstance(value, (list, tuple)) and any(isinstance(v, DataNode) for v in value):
        return type(value)(bind_value(v, pipe) for v in value)
    return value


class DeferredCall:
    """An operator call made outside any pipeline: replayed into each pipeline that uses its nodes
    (once per pipeline; the pipeline holds the result only as long as it lives)."""

    def __init__(self, call: Callable[..., Any], inputs: Sequence[Any], kwargs: Dict[str, Any], op_name: str,
                 devices: Sequence[str]) -> None:
        self.call = call
        self.inputs = tuple(inputs)
        self.kwargs = dict(kwargs)
        self.op_name = op_name
        self.nodes = [DataNode(None, None, device, op_name, deferred=self, index=i) for i, device in enumerate(devices)]
        self._bound: "weakref.WeakKeyDictionary[Any, List[DataNode]]" = weakref.WeakKeyDictionary()

    def bind(self, pipe: Any) -> List[DataNode]:
        nodes = self._bound.get(pipe)
        if nodes is None:
            inputs = [bind_value(v, pipe) for v in self.inputs]
            kwargs = {k: bind_value(v, pipe) for k, v in self.kwargs.items()}
            stack = current_stack()
            stack.append(pipe)
            try:
                result = self.call(*inputs, **kwargs)
            finally:
                stack.pop()
            nodes = [result] if isinstance(result, DataNode) else list(result)
            self._bound[pipe] = nodes
        return nodes

    def result(self) -> Any:
        """What the fn.* call returns: its one node, or the list of its nodes (DALI's shape)."""
        return self.nodes[0] if len(self.nodes) == 1 else list(self.nodes)
