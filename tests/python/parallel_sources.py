"""Module-level sources for test_parallel_source.py (importable, so they pickle under spawn)."""
import os

import numpy as np


class Squares:
    """Sample i: [i, i*i] (int64) plus the worker's pid; ends the epoch after `length` samples."""

    def __init__(self, length=None):
        self.length = length

    def __call__(self, info):
        if self.length is not None and info.idx_in_epoch >= self.length:
            raise StopIteration
        return np.array([info.idx_in_epoch, info.idx_in_epoch ** 2], np.int64), np.array([os.getpid()], np.int64)


def failing(info):
    if info.idx_in_epoch == 5:
        raise ValueError("sample five is broken")
    return np.zeros((2,), np.float32)


def batch_source(info):
    return [np.full((info.iteration + 1,), info.epoch_idx, np.int32) for _ in range(4)]
