"""One pipeline used from several threads, and a run() that waits: batches handed to one thread stay
valid while another thread asks for more, Ctrl-C interrupts a waiting run() within a second, and
close() from another thread always succeeds (CPU only)."""
import fcntl
import os
import signal
import threading
import time

import numpy as np
import pytest

from conftest import make_dataset
from stoker import StokerError, fn, pipeline_def


@pipeline_def
def image_pipe(root, size=16):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs)
    images = fn.resize(images, resize_x=size, resize_y=size)
    return images, labels


@pipeline_def
def labels_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    return labels


def snapshot(outputs):
    """Host copies of every sample of every output (raises if the batch was released)."""
    return [[out.at(i).tobytes() for i in range(len(out))] for out in outputs]


def test_two_threads_never_release_each_others_batch(small_dataset):
    """Two threads call run() on one pipeline; each keeps its batch for a moment and checks that it
    was neither released nor changed meanwhile by the other thread's run()."""
    rounds = 25
    failures = []
    start = threading.Barrier(2)

    def consumer(pipe):
        start.wait()
        for _ in range(rounds):
            try:
                outputs = pipe.run()
            except StopIteration:
                pipe.reset()
                continue
            except Exception as error:  # noqa: BLE001 - every failure is recorded and reported
                failures.append("run(): %r" % error)
                continue
            try:
                before = snapshot(outputs)
                time.sleep(0.002)  # let the other thread ask for its batches meanwhile
                after = snapshot(outputs)
            except StokerError as error:
                failures.append("held batch was released by the other thread: %s" % error)
                continue
            if before != after:
                failures.append("held batch changed while held")

    with image_pipe(small_dataset, batch_size=2, num_threads=2, seed=3) as pipe:
        pipe.build()
        threads = [threading.Thread(target=consumer, args=(pipe,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not any(thread.is_alive() for thread in threads), "a consumer thread hung"
    assert not failures, "%d of %d rounds failed, first: %s" % (len(failures), 2 * rounds, failures[0])


def test_each_thread_gets_distinct_batches(numbered_dataset):
    """Serialized run() calls from two threads split one epoch between them: every sample once."""
    seen = []
    lock = threading.Lock()

    def consumer(pipe):
        while True:
            try:
                batch = pipe.run_batch()
            except StopIteration:
                return
            labels = [int(v) for v in np.asarray(batch.outputs[0].as_array()).reshape(-1)]
            with lock:
                seen.extend(labels[: batch.valid_samples])

    with labels_pipe(numbered_dataset, batch_size=1, num_threads=1) as pipe:
        pipe.build()
        threads = [threading.Thread(target=consumer, args=(pipe,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert sorted(seen) == list(range(13))


# ---- A run() that waits on a file that cannot be opened yet ------------------------------------
#
# The blocking source is a lease: the test holds a write lease (fcntl F_SETLEASE) on the data set's
# only JPEG, so the reader's open() of it waits until the lease is given up (or the kernel breaks it
# after /proc/sys/fs/lease-break-time, 45 s by default) - a regular file whose read cannot make
# progress, as on a hung network file system. Giving the lease up lets the pipeline go on.

F_SETLEASE = getattr(fcntl, "F_SETLEASE", 1024)


class LeasedFile:
    def __init__(self, path):
        self.path = path
        self.fd = None

    def hold(self):
        self.fd = os.open(self.path, os.O_RDWR)
        try:
            fcntl.fcntl(self.fd, F_SETLEASE, fcntl.F_WRLCK)
        except OSError as error:
            os.close(self.fd)
            self.fd = None
            pytest.skip("cannot take a file lease here (%s): no blocking source" % error)

    def give_up(self):
        if self.fd is not None:
            fcntl.fcntl(self.fd, F_SETLEASE, fcntl.F_UNLCK)
            os.close(self.fd)
            self.fd = None


@pytest.fixture
def blocked(tmp_path):
    """(data folder with one JPEG, its lease): a pipeline reading it blocks until lease.give_up()."""
    root = str(tmp_path / "blocked")
    (path, _label), = make_dataset(root, [1])
    previous = signal.signal(signal.SIGIO, signal.SIG_IGN)  # the lease break notice
    lease = LeasedFile(path)
    lease.hold()
    yield root, lease
    lease.give_up()
    signal.signal(signal.SIGIO, previous)


def start_run(pipe, first=True):
    """Calls pipe.run_batch() in a new thread; returns (thread, outcome): outcome gets the Batch or
    the exception. When run() returns within 0.3 s, the first call skips the test (the source did
    not block); a later call fails it (it should have waited behind the first)."""
    outcome = []

    def call():
        try:
            outcome.append(pipe.run_batch())
        except BaseException as error:  # noqa: BLE001 - the test inspects it
            outcome.append(error)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join(0.3)
    if not thread.is_alive():
        if first:
            pytest.skip("the reader did not wait on the leased file (%r): no blocking source" % outcome)
        pytest.fail("a second run() did not wait behind the first: %r" % outcome)
    return thread, outcome


class SigintSoon:
    """Sends SIGINT to this process after `delay` seconds; the handler raises KeyboardInterrupt (as
    Python's default one does) only while armed, so a late signal cannot hit another test."""

    def __init__(self, delay):
        self.delay = delay
        self.armed = False

    def _handler(self, signum, frame):
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt

    def __enter__(self):
        self.previous = signal.signal(signal.SIGINT, self._handler)
        self.armed = True
        self.timer = threading.Timer(self.delay, os.kill, (os.getpid(), signal.SIGINT))
        self.sent = time.monotonic() + self.delay
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.armed = False
        self.timer.cancel()
        self.timer.join()
        time.sleep(0.05)  # a signal sent meanwhile reaches the disarmed handler, not the previous one
        signal.signal(signal.SIGINT, self.previous)
        return False


def test_ctrl_c_interrupts_a_waiting_run_and_the_batch_is_not_lost(blocked):
    root, lease = blocked
    pipe = labels_pipe(root, batch_size=1, num_threads=1)
    pipe.build()
    with SigintSoon(0.3) as sigint:
        with pytest.raises(KeyboardInterrupt):
            pipe.run()
        late = time.monotonic() - sigint.sent
    assert late < 1.0, "KeyboardInterrupt arrived %.2f s after SIGINT" % late
    # The interrupted call goes on in the background; once the file opens, the next run() gets
    # the batch it was waiting for.
    lease.give_up()
    (labels,) = pipe.run()
    assert [int(v) for v in np.asarray(labels.as_array()).reshape(-1)] == [0]
    pipe.close()
    assert pipe.is_closed


def native_threads():
    return len(os.listdir("/proc/self/task"))


def assert_threads_back_to(count, seconds=3.0):
    """The pipeline's threads (workers, call thread) end once the blocked call returns."""
    deadline = time.monotonic() + seconds
    while native_threads() > count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert native_threads() <= count, "%d threads left over" % (native_threads() - count)


def test_close_after_ctrl_c_while_still_blocked(blocked):
    root, lease = blocked
    threads_before = native_threads()
    pipe = labels_pipe(root, batch_size=1, num_threads=1)
    pipe.build()
    with SigintSoon(0.3):
        with pytest.raises(KeyboardInterrupt):
            pipe.run()
    started = time.monotonic()
    pipe.close()  # the C call still waits on the file: close() must not wait for it, nor refuse
    assert time.monotonic() - started < 1.0
    assert pipe.is_closed
    with pytest.raises(StokerError, match="closed"):
        pipe.run()
    lease.give_up()  # the background call ends and frees the pipeline
    assert_threads_back_to(threads_before)


def test_close_from_another_thread_while_run_waits(blocked):
    root, lease = blocked
    threads_before = native_threads()
    pipe = labels_pipe(root, batch_size=1, num_threads=1)
    pipe.build()
    thread, outcome = start_run(pipe)
    started = time.monotonic()
    pipe.close()
    assert time.monotonic() - started < 1.0, "close() waited for the blocked run()"
    thread.join(1.0)
    assert not thread.is_alive(), "run() still waits after close()"
    assert isinstance(outcome[0], StokerError) and "closed" in str(outcome[0]), outcome
    lease.give_up()  # the background call ends and frees the pipeline
    assert_threads_back_to(threads_before)


def test_run_from_another_thread_waits_its_turn(blocked):
    """While one thread's run() waits, a second thread's run() waits behind it (no "busy" error);
    once the file opens, one gets the epoch's only batch and the other the end of the epoch."""
    root, lease = blocked
    pipe = labels_pipe(root, batch_size=1, num_threads=1)
    pipe.build()
    first, first_outcome = start_run(pipe)
    second, second_outcome = start_run(pipe, first=False)
    lease.give_up()
    first.join(5)
    second.join(5)
    assert not first.is_alive() and not second.is_alive()
    outcomes = first_outcome + second_outcome
    assert sorted(type(o).__name__ for o in outcomes) == ["Batch", "StopIteration"], outcomes
    pipe.close()


def test_a_fifo_in_the_data_folder_is_refused_or_interruptible(tmp_path):
    """A FIFO named x.jpg (issue 14): the reader either refuses it at once with an error naming it,
    or waits in open() - and then Ctrl-C interrupts run() within a second and close() succeeds."""
    root = tmp_path / "fifo"
    make_dataset(str(root), [1])
    fifo = root / "class_00" / "x.jpg"
    os.mkfifo(fifo)
    pipe = labels_pipe(str(root), batch_size=2, num_threads=1)
    try:
        pipe.build()
        outcome = None
        with SigintSoon(0.3) as sigint:
            try:
                pipe.run()
                outcome = "returned"
            except KeyboardInterrupt:
                outcome = "interrupted"
                late = time.monotonic() - sigint.sent
            except StokerError as error:
                outcome = error
        if isinstance(outcome, StokerError):
            assert "x.jpg" in str(outcome), outcome
            return
        if outcome == "returned":
            pytest.skip("the reader skips the FIFO without a word: nothing waits here")
        assert late < 1.0, "KeyboardInterrupt arrived %.2f s after SIGINT" % late
        started = time.monotonic()
        pipe.close()
        assert time.monotonic() - started < 1.0 and pipe.is_closed
    finally:
        pipe.close()
        try:  # a writer lets the reader's open() return, so the background call ends
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        time.sleep(0.2)


def test_close_in_a_forked_child_does_not_hang(small_dataset):
    """A child forked after build() has none of the pipeline's threads: its close() (or the
    pipeline's garbage collection) must forget the pipeline, not join threads that are not there."""
    with labels_pipe(small_dataset, batch_size=2, num_threads=2) as pipe:
        pipe.build()
        pipe.run()
        pid = os.fork()
        if pid == 0:  # the child: close, then leave without running the parent's test teardown
            try:
                pipe.close()
                os._exit(0 if pipe.is_closed else 1)
            finally:
                os._exit(2)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("close() in the forked child hung")
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        pipe.run()  # the parent's pipeline goes on
