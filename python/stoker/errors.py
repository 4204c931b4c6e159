"""stoker.errors: the exceptions the Python layer raises.

``StokerError`` is the C extension's error type (a ``RuntimeError``, as DALI's backend errors
are): every failure reported by the C library arrives as one, carrying the C side's message
(which names the file, operator and sample) and the status code's name in ``.status``
(``"STK_EINVAL"``, ...). ``ArgumentError`` (also a ``ValueError``) is raised at pipeline
definition time for a bad operator argument, naming the operator and the argument;
``ArgumentTypeError`` (also a ``TypeError``) for an argument of the wrong type or an unknown
argument name, where DALI raises TypeError.
"""
from . import _stoker

StokerError = _stoker.Error


class ArgumentError(StokerError, ValueError):
    """A wrong operator argument (unknown name, wrong type, bad device, wrong inputs)."""

    def __init__(self, message: str, status: str = "STK_EINVAL") -> None:
        super().__init__(message)
        self.status = status
        self.code = 1


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type, or one the operator does not have."""
