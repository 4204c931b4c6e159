"""Exact checkpoint/resume from Python: Pipeline.checkpoint() / checkpoint= / restore(), and the
iterators' state_dict() / load_state_dict(). A resumed pipeline must deliver byte for byte the
batches the uninterrupted one delivered, mid-epoch, with prefetch in flight, across an epoch
boundary and with another thread count; mismatches raise errors naming what differs."""
import numpy as np
import pytest

from stoker import StokerError, fn, pipeline_def
from stoker.iterator import NumpyIterator

from checkpoint_text import edit


@pipeline_def(batch_size=3, num_threads=1, seed=11, prefetch_queue_depth=3)
def augmented(root, size=24):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs)
    images = fn.random_resized_crop(images, size=[size, size])
    images = fn.crop_mirror_normalize(images, mean=[128.0, 128.0, 128.0], std=[64.0, 64.0, 64.0],
                                      mirror=fn.random.coin_flip())
    return images, labels


def batches(pipe, count):
    """count batches as lists of host arrays, resetting at each end of epoch."""
    out = []
    while len(out) < count:
        try:
            outputs = pipe.run()
        except StopIteration:
            pipe.reset()
            continue
        out.append([np.array(np.from_dlpack(o), copy=True) for o in outputs])
    return out


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for bx, by in zip(a, b) for x, y in zip(bx, by))


def test_checkpoint_resume_is_exact(small_dataset):
    # 20 samples, batch 3: 7 batches an epoch; 12 batches cross the boundary.
    ref = batches(augmented(small_dataset), 12)
    for k, threads in ((2, 1), (5, 3), (7, 2), (9, 3)):
        pipe = augmented(small_dataset, num_threads=threads, enable_checkpointing=True)
        batches(pipe, k)
        state = pipe.checkpoint()
        pipe.close()
        assert isinstance(state, str) and len(state) < 1024
        resumed = augmented(small_dataset, num_threads=4 - threads, checkpoint=state.encode())
        assert same(batches(resumed, 12 - k), ref[k:]), "resume after %d batches differs" % k
        resumed.close()


def test_restore_on_a_built_pipeline_rewinds(small_dataset):
    ref = batches(augmented(small_dataset), 10)
    pipe = augmented(small_dataset)
    batches(pipe, 4)
    state = pipe.checkpoint()
    batches(pipe, 3)
    pipe.restore(state)
    assert same(batches(pipe, 6), ref[4:])


def test_mismatched_or_corrupt_checkpoint_is_refused(small_dataset, tmp_path):
    pipe = augmented(small_dataset)
    batches(pipe, 2)
    state = pipe.checkpoint()
    pipe.close()
    with pytest.raises(StokerError, match="seed 11, this pipeline has seed 12"):
        augmented(small_dataset, seed=12, checkpoint=state).build()
    with pytest.raises(StokerError, match="another pipeline graph"):
        augmented(small_dataset, size=32, checkpoint=state).build()
    with pytest.raises(StokerError, match="version 7"):
        augmented(small_dataset, checkpoint=edit(state, "stoker-checkpoint 5", "stoker-checkpoint 7")).build()
    flipped = state.replace("position=2", "position=3")  # '2' is 0x32, '3' 0x33: one bit
    assert flipped != state
    with pytest.raises(StokerError, match="corrupt: checksum [0-9a-f]+ does not match"):
        augmented(small_dataset, checkpoint=flipped).build()
    with pytest.raises(StokerError, match="not a stoker checkpoint"):
        augmented(small_dataset, checkpoint="garbage").build()
    other = tmp_path / "other"
    (other / "class_00").mkdir(parents=True)
    import shutil, glob

    for path in sorted(glob.glob(small_dataset + "/*/*.jpg"))[:10]:
        shutil.copy(path, other / "class_00" / path.replace("/", "_")[-30:])
    with pytest.raises(StokerError, match="another data set"):
        augmented(str(other), checkpoint=state).build()


def test_iterator_state_dict_round_trip(small_dataset):
    ref_it = NumpyIterator(augmented(small_dataset), ["images", "labels"], reader_name="Reader")
    ref = [step[0]["images"].copy() for step in ref_it]
    it = NumpyIterator(augmented(small_dataset, num_threads=2), ["images", "labels"], reader_name="Reader")
    state0 = it.state_dict()  # before the first batch was handed out (it is prefetched already)
    got = [next(it)[0]["images"].copy() for _ in range(3)]
    state = it.state_dict()
    assert len(state["pipelines"][0]) < 1024
    fresh = NumpyIterator(augmented(small_dataset, num_threads=3), ["images", "labels"], reader_name="Reader")
    fresh.load_state_dict(state)
    rest = [step[0]["images"].copy() for step in fresh]
    assert len(got) + len(rest) == len(ref)
    assert all(np.array_equal(a, b) for a, b in zip(got + rest, ref))
    fresh.load_state_dict(state0)
    assert all(np.array_equal(step[0]["images"], r) for step, r in zip(fresh, ref))
