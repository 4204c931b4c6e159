"""stoker.errors: the exceptions the Python layer raises.

``StokerError`` is the C extension's error type: every failure reported by the C library arrives
as one, carrying the C side's message (which names the file, operator and sample) and the status
code's name in ``.status`` (``"STK_EINVAL"``, ...). ``ArgumentError`` is raised at pipeline
definition time for a bad operator argument, naming the operator and the argument.
"""
from . import _stoker

StokerError = _stoker.Error


class ArgumentError(StokerError, ValueError):
    """A wrong operator argument (unknown name, wrong type, bad device, wrong inputs)."""

    def __init__(self, message, status="STK_EINVAL"):
        super().__init__(message)
        self.status = status
        self.code = 1
