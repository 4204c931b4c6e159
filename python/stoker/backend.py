"""stoker.backend: the output classes under ``nvidia.dali.backend``'s names (TensorListCPU,
TensorListGPU, TensorCPU, TensorGPU: stoker.tensors)."""
from .tensors import TensorCPU, TensorGPU, TensorListCPU, TensorListGPU

__all__ = ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]
