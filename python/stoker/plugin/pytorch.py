"""stoker.plugin.pytorch: ``nvidia.dali.plugin.pytorch`` spelled ``stoker.plugin.pytorch``.

``DALIGenericIterator``, ``DALIClassificationIterator``, ``LastBatchPolicy`` and ``feed_ndarray``
with DALI's arguments: the same objects as stoker.torch's (see there). Importing this module does
not import torch; making an iterator does (ImportError without it).
"""
from ..iterator import LastBatchPolicy
from ..torch import (ClassificationIterator, DALIClassificationIterator, DALIGenericIterator, GenericIterator,
                     feed_ndarray)

__all__ = ["ClassificationIterator", "DALIClassificationIterator", "DALIGenericIterator", "GenericIterator",
           "LastBatchPolicy", "feed_ndarray"]
