"""scripts/dali_examples.py EXAMPLE FILE DATA_DIR DEVICE: runs one of DALI's examples, already
copied with only its imports swapped (nvidia.dali -> stoker) by scripts/run-dali-examples.sh, on
small data, and prints each output's type, layout, dtype and sample shapes.

EXAMPLE is one of
  resnet50      use_cases/pytorch/resnet50/main.py: create_dali_pipeline, training and validation,
                then DALIClassificationIterator as the example's main() drives it (torch only);
  efficientnet  use_cases/pytorch/efficientnet/image_classification/dali.py: training_pipe and
                validation_pipe as its dataloaders.py calls them, automatic augmentation "disabled",
                "autoaugment" and "trivialaugment" (only "disabled" without stoker.auto_aug), and
                training/validation_pipe_external_source fed DATA_DIR's JPEG paths, encoded;
  webdataset    general/data_loading/dataloading_webdataset.ipynb;
  video         sequence_processing/video/video_reader_simple_example.ipynb.
Notebooks run cell by cell in one namespace, leaving out display cells (matplotlib, `%` magics);
DALI_EXTRA_PATH points at a tree laid out as DALI_extra's (db/webdataset/MNIST/devel-0.tar from
DATA_DIR's JPEGs, db/video/sintel/video_files/ from VIDEO_DIR's clips) and a `wds2idx` written here
is on PATH, so the cells' own paths and index step run unchanged.

DEVICE "cpu" on a machine without a GPU: DALI's code asks for the GPU where it offers no choice
(`.gpu()`, device="mixed"/"gpu", device_id=0); the runner then maps those to the CPU (a stand-in
of this runner, not a stoker behaviour: stoker refuses them without a GPU, as DALI does), so every
operator call and argument of the example runs, on the CPU. DEVICE "gpu" runs the code as written.
Exit status 0 when the example ran, 1 with the error otherwise.
"""
import ast
import functools
import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import types as pytypes


def cpu_stand_in():
    """Maps the GPU requests of DALI's code to the CPU (see the module doc)."""
    from stoker import fn, graph, pipeline

    graph.DataNode.gpu = lambda self: self
    choose = fn._choose_device

    def choose_cpu(schema, inputs, kwargs):
        kwargs = dict(kwargs)
        if kwargs.get("device") in ("mixed", "gpu"):
            kwargs["device"] = "cpu"
        return choose(schema, inputs, kwargs)

    fn._choose_device = choose_cpu
    init = pipeline.Pipeline.__init__

    @functools.wraps(init)  # keeps the signature pipeline_def reads the Pipeline arguments from
    def init_cpu(self, *args, **kwargs):
        if len(args) >= 3:
            args = args[:2] + (None,) + args[3:]
        if "device_id" in kwargs:
            kwargs["device_id"] = None
        init(self, *args, **kwargs)

    pipeline.Pipeline.__init__ = init_cpu


def stub_auto_aug():
    """True when stoker.auto_aug is there; else an empty stand-in (the EfficientNet file imports it
    at module level) and False: the runs then leave automatic augmentation off."""
    try:
        import stoker.auto_aug  # noqa: F401
        return True
    except ImportError:
        pass

    def missing(*args, **kwargs):
        raise NotImplementedError("stoker.auto_aug is not in this tree")

    package = pytypes.ModuleType("stoker.auto_aug")
    for name in ("auto_augment", "trivial_augment", "rand_augment"):
        module = pytypes.ModuleType("stoker.auto_aug." + name)
        module.__getattr__ = lambda attr: missing
        setattr(package, name, module)
        sys.modules[module.__name__] = module
    sys.modules[package.__name__] = package
    print("note: stoker.auto_aug absent here: an empty stand-in is imported, automatic augmentation off")
    return False


def have_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def load_module(path):
    """The example file as a module; without torch, its torch/torchvision imports and its
    `if __name__ == "__main__"` block are left out (the data-loading code does not use them)."""
    source = open(path).read()
    tree = ast.parse(source, path)
    if not have_torch():
        def keep(node):
            if isinstance(node, ast.Import):
                return not any(a.name.split(".")[0] in ("torch", "torchvision") for a in node.names)
            if isinstance(node, ast.ImportFrom):
                return (node.module or "").split(".")[0] not in ("torch", "torchvision")
            return not isinstance(node, ast.If)
        tree.body = [node for node in tree.body if keep(node)]
        print("note: no torch here: the example's torch/torchvision imports are left out")
    module = pytypes.ModuleType(os.path.splitext(os.path.basename(path))[0])
    module.__file__ = path
    exec(compile(tree, path, "exec"), module.__dict__)
    return module


def describe(outputs, label):
    """One line per output: class, layout, dtype, sample shapes (the first three)."""
    for index, out in enumerate(outputs):
        shapes = [tuple(s) for s in out.shape()]
        dtype = out.as_cpu().at(0).dtype if len(shapes) else None
        print("%s out[%d]: %s layout=%r dtype=%s samples=%d shapes=%s%s" % (
            label, index, type(out).__name__, str(out.layout()), dtype, len(shapes), shapes[:3],
            " ..." if len(shapes) > 3 else ""))


def run_pipe(pipe, label, iterations=2):
    pipe.build()
    for i in range(iterations):
        describe(pipe.run(), "%s run %d" % (label, i))


def resnet50(path, data, device):
    module = load_module(path)
    for training in (True, False):
        pipe = module.create_dali_pipeline(batch_size=8, num_threads=2, device_id=0, seed=12, data_dir=data,
                                           crop=224, size=256, dali_cpu=device == "cpu", shard_id=0,
                                           num_shards=1, is_training=training)
        run_pipe(pipe, "resnet50 %s" % ("train" if training else "val"))
    if not have_torch():
        print("resnet50 DALIClassificationIterator: not run (no torch here)")
        return
    pipe = module.create_dali_pipeline(batch_size=8, num_threads=2, device_id=0, seed=12, data_dir=data, crop=224,
                                       size=256, dali_cpu=device == "cpu", shard_id=0, num_shards=1, is_training=True)
    pipe.build()
    loader = module.DALIClassificationIterator(pipe, reader_name="Reader",
                                               last_batch_policy=module.LastBatchPolicy.PARTIAL)
    for i, batch in enumerate(loader):
        target = batch[0]["label"].squeeze(-1).long()
        print("resnet50 iterator batch %d: data %s %s label %s" % (i, tuple(batch[0]["data"].shape),
                                                                   batch[0]["data"].dtype, tuple(target.shape)))
        if i == 2:
            break
    loader.reset()


def efficientnet(path, data, device):
    augmentations = ("disabled", "autoaugment", "trivialaugment") if stub_auto_aug() else ("disabled",)
    module = load_module(path)
    types = sys.modules["stoker.types"]
    common = dict(batch_size=8, num_threads=2, device_id=0, seed=12)
    for augmentation in augmentations:  # the example's --automatic-augmentation choices
        pipe = module.training_pipe(data_dir=data, interpolation=types.INTERP_LINEAR, image_size=224,
                                    output_layout="CHW", automatic_augmentation=augmentation, dali_device=device,
                                    rank=0, world_size=1, prefetch_queue_depth=8, **common)
        run_pipe(pipe, "efficientnet train (%s)" % augmentation)
    print("efficientnet train epoch_size(Reader) = %d" % pipe.epoch_size("Reader"))
    pipe = module.validation_pipe(data_dir=data, interpolation=types.INTERP_TRIANGULAR, image_size=224 + 32,
                                  image_crop=224, output_layout="HWC", **common)
    run_pipe(pipe, "efficientnet val")
    paths = sorted(glob.glob(os.path.join(data, "**", "*.jpg"), recursive=True))
    for augmentation in augmentations:
        pipe = module.training_pipe_external_source(interpolation=types.INTERP_LINEAR, image_size=224,
                                                    output_layout="CHW", automatic_augmentation=augmentation,
                                                    dali_device=device, rank=0, world_size=1, **common)
        run_fed_pipe(pipe, "efficientnet train external source (%s)" % augmentation, paths)
    pipe = module.validation_pipe_external_source(interpolation=types.INTERP_TRIANGULAR, image_size=224 + 32,
                                                  image_crop=224, output_layout="HWC", **common)
    run_fed_pipe(pipe, "efficientnet val external source", paths)


def run_fed_pipe(pipe, label, paths, iterations=2):
    """run_pipe for the external-source pipes: their external_source "images" is fed each batch's
    file paths, encoded as the example's loader gives them (np.frombuffer(path.encode(), int8));
    io.file.read reads the files, and source_info() must give the paths back."""
    import numpy as np

    pipe.build()
    for i in range(iterations):
        batch = [paths[(i * pipe.batch_size + k) % len(paths)] for k in range(pipe.batch_size)]
        pipe.feed_input("images", [np.frombuffer(path.encode(), dtype=np.int8) for path in batch])
        outputs = pipe.run()
        if outputs[0].source_info() != batch:
            raise RuntimeError("%s: source_info() %r is not the fed paths %r" % (label, outputs[0].source_info(), batch))
        describe(outputs, "%s run %d" % (label, i))


WDS2IDX = r'''#!PYTHON
"""wds2idx TAR INDEX: a DALI-format (v1.2) index of a WebDataset tar, one line per sample:
`ext offset size name` for each of its components (written for this runner)."""
import sys, tarfile
samples = []
with tarfile.open(sys.argv[1]) as tar:
    for m in tar:
        if not m.isfile():
            continue
        key, _, ext = m.name.rpartition("/")[2].partition(".")
        if not samples or samples[-1][0] != key:
            samples.append((key, []))
        samples[-1][1].append("%s %d %d %s" % (ext, m.offset, m.size, m.name))
with open(sys.argv[2], "w") as out:
    out.write("v1.2 %d\n" % len(samples))
    for key, parts in samples:
        out.write(" ".join(parts) + "\n")
'''


def dali_extra(root, data):
    """A DALI_extra-like tree under root for the tutorials' own paths."""
    from PIL import Image

    wds = os.path.join(root, "db", "webdataset", "MNIST")
    os.makedirs(wds)
    staging = os.path.join(root, "staging")
    os.makedirs(staging)
    jpegs = sorted(glob.glob(os.path.join(data, "*", "*.jpg")))[:32]
    with tarfile.open(os.path.join(wds, "devel-0.tar"), "w") as tar:
        for i, path in enumerate(jpegs):
            small = os.path.join(staging, "%06d.jpg" % i)
            Image.open(path).convert("L").resize((28, 28)).save(small, "JPEG")
            tar.add(small, "%06d.jpg" % i)
            cls = os.path.join(staging, "%06d.cls" % i)
            with open(cls, "w") as f:
                f.write(str(i % 10))
            tar.add(cls, "%06d.cls" % i)
    clips = os.environ.get("VIDEO_DIR")
    videos = os.path.join(root, "db", "video", "sintel", "video_files")
    os.makedirs(videos)
    for i, clip in enumerate(sorted(glob.glob(os.path.join(clips or "/nonexistent", "**", "*.mp4"),
                                              recursive=True))):
        shutil.copy(clip, os.path.join(videos, "clip%02d.mp4" % i))
    bindir = os.path.join(root, "bin")
    os.makedirs(bindir)
    script = os.path.join(bindir, "wds2idx")
    with open(script, "w") as f:
        f.write(WDS2IDX.replace("PYTHON", sys.executable, 1))
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
    return bindir


def notebook(path, data, device):
    work = tempfile.mkdtemp(prefix="dali-nb-")
    try:
        bindir = dali_extra(work, data)
        os.environ["DALI_EXTRA_PATH"] = work
        os.environ["PATH"] = bindir + os.pathsep + os.environ["PATH"]
        os.chdir(work)
        cells = [c for c in json.load(open(path))["cells"] if c["cell_type"] == "code"]
        namespace = {"__name__": "__main__"}
        for number, cell in enumerate(cells):
            source = "".join(cell["source"])
            if "matplotlib" in source or "show_" in source or source.lstrip().startswith("%"):
                print("cell %d: display cell, left out" % number)
                continue
            print("cell %d: run" % number)
            exec(compile(source, "%s[cell %d]" % (os.path.basename(path), number), "exec"), namespace)
        if "pipe_out" in namespace:
            describe(namespace["pipe_out"], os.path.basename(path))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    example, path, data, device = sys.argv[1:5]
    path, data = os.path.abspath(path), os.path.abspath(data)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    if device == "cpu":
        cpu_stand_in()
    {"resnet50": resnet50, "efficientnet": efficientnet, "webdataset": notebook, "video": notebook}[example](
        path, data, device)


if __name__ == "__main__":
    main()
