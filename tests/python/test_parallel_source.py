"""external_source(parallel=True): the source runs in worker processes (stoker.parallel_source)."""
import multiprocessing
import os
import sys

import numpy as np
import pytest

from stoker import StokerError, fn, pipeline_def

sys.path.insert(0, os.path.dirname(__file__))
import parallel_sources  # noqa: E402


def children():
    return {p.pid for p in multiprocessing.active_children()}


def make(source, start_method, workers=3, batch_size=4, **kwargs):
    @pipeline_def(batch_size=batch_size, num_threads=1, py_num_workers=workers, py_start_method=start_method,
                  **kwargs.pop("pipe", {}))
    def par():
        return fn.external_source(source=source, parallel=True, **kwargs)

    return par()


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_samples_come_in_order_from_several_workers_and_the_epoch_ends(start_method):
    pipe = make(parallel_sources.Squares(length=10), start_method, batch=False, num_outputs=2, prefetch_queue_depth=2,
                pipe={"exec_dynamic": True})
    with pipe:
        pipe.build()
        for epoch in range(2):
            seen, pids = [], set()
            while True:
                try:
                    values, pid = pipe.run()
                except StopIteration:
                    break
                seen.extend(int(v[0]) for v in values.as_array())
                assert all(int(v[1]) == int(v[0]) ** 2 for v in values.as_array())
                pids.update(int(p[0]) for p in pid.as_array())
            assert seen == list(range(10))  # 4 + 4 + 2 (exec_dynamic keeps the short last batch)
            assert len(pids) > 1 and os.getpid() not in pids  # computed in several worker processes
            pipe.reset()
        workers = pipe._external_source.members[0].worker_pids
        assert set(workers) <= children()
    assert not set(workers) & children()  # close() joined them: no zombies, no strays
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_worker_error_is_raised_in_the_main_process_with_its_traceback():
    with make(parallel_sources.failing, "fork", batch=False, workers=2, pipe={"prefetch_queue_depth": 1}) as pipe:
        pipe.build()
        pipe.run()  # samples 0..3 (sample 5's batch is computed ahead, its error raised when it is due)
        with pytest.raises(ValueError, match="sample five is broken") as raised:
            pipe.run()
        cause = raised.value.__cause__
        assert cause is not None and "parallel_sources.py" in str(cause) and "in failing" in str(cause)


def test_batch_source_and_garbage_collection_stop_the_workers():
    pipe = make(parallel_sources.batch_source, "fork", batch=True, batch_info=True, workers=2)
    pipe.build()
    for k in range(4):
        (out,) = pipe.run()
        assert len(out) == 4
        np.testing.assert_array_equal(out[0], np.zeros((k + 1,), np.int32))
    workers = pipe._external_source.members[0].worker_pids
    del out
    pipe.close()
    assert not set(workers) & children()
    pipe2 = make(parallel_sources.batch_source, "fork", batch=True, batch_info=True, workers=2)
    pipe2.build()
    pipe2.run()
    workers = pipe2._external_source.members[0].worker_pids
    source = pipe2._external_source.members[0]
    del pipe2
    import gc

    gc.collect()
    source.close()  # idempotent; the finalizer already ran or runs now
    assert not set(workers) & children()


def test_a_source_that_does_not_pickle_under_spawn_is_a_clear_error():
    with pytest.raises(StokerError, match="starting worker process 0 \\(spawn\\) failed"):
        pipe = make(lambda info: np.zeros(1), "spawn", batch=False, workers=1)
        pipe.build()
