"""stoker.plugin.base_iterator: ``nvidia.dali.plugin.base_iterator``'s ``LastBatchPolicy``."""
from ..iterator import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
