#!/usr/bin/env python3
"""examples/train_resnet50.py: a few hundred ResNet-50 (or ResNet-18) training steps
(torchvision, AMP, channels-last, DistributedDataParallel) fed by stoker, NVIDIA DALI or a PyTorch
DataLoader, to compare the loaders against the step's ceiling.

    python examples/train_resnet50.py --data DIR --loader stoker  [--steps 300] [--seconds 20]
    python examples/train_resnet50.py --data DIR --loader pytorch [--workers 14]
    python examples/train_resnet50.py --data DIR --loader synthetic
    python examples/train_resnet50.py --data DIR --loader dali    [--decode cpu]   (NVIDIA DALI)
    python examples/train_resnet50.py --data DIR --loader synthetic,stoker,pytorch,dali \
        --arch resnet18 --image-size 160     # each in turn; shortfall of each from the ceiling

Many GPUs: the same command under torchrun, one process per GPU, DDP over NCCL (gloo with
--device cpu); each rank reads its own shard (stoker: from torchrun's environment, no argument;
DALI: shard_id=RANK, num_shards=WORLD_SIZE; DataLoader: a DistributedSampler). Several nodes:
the same command on every node with torchrun's rendezvous (examples/slurm_train.sh under Slurm):

    torchrun --nproc-per-node 8 examples/train_resnet50.py --data DIR --loader stoker
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \
        examples/train_resnet50.py --data DIR --loader stoker

img/s is the whole job's (every rank's images over the slowest rank's time); the GPU-idle and
next() columns are rank 0's. --device cpu trains on the CPU (no AMP, host timing only): a
functional check of the DDP wiring on a machine without a GPU, not a benchmark
(``torchrun --nproc-per-node 2 examples/train_resnet50.py --device cpu --arch resnet18
--image-size 64 --batch-size 8 --steps 6 --workers 1 --data DIR --loader synthetic,stoker,pytorch``).

DIR holds one subfolder of JPEGs per class (``stoker datagen DIR`` makes one). Both loaders do
the same work: random-resized-crop to --image-size (224), coin-flip mirror, ImageNet mean/std
normalization, float16 NCHW on the GPU. The DataLoader is set up as a careful user would:
torchvision's decode_jpeg (PIL for the few files it refuses) and transforms.v2 on uint8 in the
workers, pinned memory, and the usual side-stream prefetcher (apex's / timm's: the next batch's
host-to-device copy and normalization run on a second CUDA stream one batch ahead), one sampler
over many epochs so the workers never drain at an epoch boundary of a small sample set.

Prints one line: img/s of the whole training step (data + forward + backward + optimizer) over
the timed steps (after --warmup steps or --warmup-seconds, until --steps or --seconds, whichever
comes first; a synchronize starts and ends the window) and the time
the GPU sat idle waiting for data, measured on the GPU: the gap between an event recorded after
each step's last kernel and one recorded once the next batch is usable on the training stream
(after next() returned; for stoker after the stream's wait on the batch's CUDA event; for the
DataLoader after the copy and normalization it needs on that stream). ~0 when the loader keeps up.
Also: host time per step spent in next(), CPUs busy (all processes) and how often the training
thread was preempted per second, to see a loader that crowds the step's own thread.
``--loader synthetic`` feeds one batch made on the GPU again and again: the step's ceiling.
``--loader dali`` runs the same pipeline in NVIDIA DALI (the peer stoker's API is spelled after;
needs nvidia-dali installed), through its DALIClassificationIterator.
AMP uses bfloat16 where the GPU has it (no loss scaling, so no host synchronization per step),
else float16 with a GradScaler. Needs torch and torchvision (and a CUDA GPU unless --device cpu).

Not part of the library; a user-facing example and the GPU machine's end-to-end check.
"""
import argparse
import io
import math
import os
import sys
import time

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
LOADERS = ("stoker", "pytorch", "dali", "synthetic")
# stoker's A/B knobs read from the environment (DEVELOPERS.md): flag, variable, choices (or int: a
# number N), what they mean
ENV_KNOBS = (
    ("--pinned-shrink", "STOKER_PINNED_SHRINK", ["on", "off"],
     "on, the library's default: pinned buffers sized to their own samples and shrunk back; off: the list-wide "
     "high-water mark, docs/pipeline.md"),
    ("--packed-upload", "STOKER_PACKED_UPLOAD", ["on", "off"],
     "on, the library's default: a batch's host samples packed into one pinned block, one DMA; off: one DMA per "
     "sample from pinned buffers, docs/pipeline.md"),
    ("--shared-upload", "STOKER_SHARED_UPLOAD", ["on", "off"],
     "on, the library's default: one device copy of an uploaded host list per pipeline; off: one per slot; "
     "DEVELOPERS.md"),
    ("--torch-upload", "STOKER_TORCH_UPLOAD", ["record", "clone"],
     "how stoker.torch hands over the labels it copies to the GPU: record, the default, record_stream on the side "
     "stream's copy; clone, a clone made on the training stream; DEVELOPERS.md"),
    ("--fused-blocks", "STOKER_FUSED_BLOCKS", int,
     "the fused resize/normalize kernel on N looping blocks; 0: one block a tile; default 4 per SM; DEVELOPERS.md"),
    ("--fused-split", "STOKER_FUSED_SPLIT", int,
     "the fused kernel's batch in N launches, so the step's kernels wait at most one launch's time for the SMs; "
     "the library's default 1"),
)
# This example's own defaults where a training step shares the GPU with stoker's work (the library's,
# for pipelines on their own, stay: high priority, one launch). Session 25's ResNet-50 view (H200,
# protocol rows): 4,685 img/s against 4,660 with the library's, DALI 4,682; session 26's
# loader-bound view (H100, ResNet-18 at 160): 12,776 against 12,764, ranges overlapping
# (bench/RESULTS.md). The environment's STOKER_FUSED_SPLIT, when set, wins over the example's 8.
TRAINING_DEFAULTS = {"stream_priority": "normal", "STOKER_FUSED_SPLIT": 8}


def local_world_size():
    return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder with one subfolder of JPEGs per class")
    parser.add_argument("--loader", default="stoker",
                        help="stoker, pytorch, dali or synthetic (one batch made on the device once and fed again "
                             "every step: the step's ceiling), or several separated by commas, run in turn")
    parser.add_argument("--arch", choices=["resnet50", "resnet18"], default="resnet50",
                        help="resnet18 makes the step cheap enough for the loader to be the bottleneck")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu: train on the CPU (gloo, no AMP): a functional check without a GPU")
    parser.add_argument("--steps", type=int, default=300, help="steps in all, warm-up included")
    parser.add_argument("--seconds", type=float, default=0, help="stop the timed steps after this long (0 = no limit)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="steps not timed (default: min(20, steps/3); with --warmup-seconds, the least number "
                             "of warm-up steps, default 20)")
    parser.add_argument("--warmup-seconds", type=float, default=0,
                        help="warm-up by time (the protocol's >= 10 s): the timed steps start after the first step "
                             "that ends this many seconds after the first batch arrived and is at least the "
                             "--warmup'th (a first step of 14 s on a fresh machine once made a one-step warm-up, "
                             "the loader's own warm-up then fell in the window)")
    parser.add_argument("--batch-size", type=int, default=128, help="per rank")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // local_world_size() - 2),
                        help="stoker threads / DataLoader worker processes, per rank")
    parser.add_argument("--image-size", "--size", dest="size", type=int, default=224,
                        help="side of the training crop (e.g. 160: a cheaper step)")
    parser.add_argument("--gpu", type=int, default=None,
                        help="CUDA device (default: the launcher rank's GPU, as stoker resolves it; else 0)")
    parser.add_argument("--decode", choices=["mixed", "cpu"], default="mixed", help="stoker's (or DALI's) decoder device")
    parser.add_argument("--hw-decoder-load", type=float, default=None,
                        help="mixed decoder: share of images for the GPU's JPEG engines, the rest decoded on the "
                             "CPU threads (default: the operator's)")
    parser.add_argument("--profile", type=int, default=0, metavar="STEPS",
                        help="after the timed steps, profile this many more with torch.profiler and print the GPU "
                             "kernels of the whole process (the loader's too) by total time, to stderr")
    parser.add_argument("--profile-trace", default=None, metavar="FILE",
                        help="with --profile: keep the profiled steps' Chrome trace (chrome://tracing, Perfetto) here")
    parser.add_argument("--prefetch", type=int, default=3,
                        help="stoker's and DALI's prefetch_queue_depth (batches prepared ahead; the DataLoader's "
                             "prefetch_factor is its own, 4)")
    parser.add_argument("--pin-threads", choices=["on", "off"], default="on",
                        help="stoker: pin its worker threads next to the GPU (the default) or leave them to the OS")
    for flag, variable, choices, what in ENV_KNOBS:  # each sets its environment variable for this run
        kind = {"type": int, "metavar": "N"} if choices is int else {"choices": choices}
        parser.add_argument(flag, default=None, **kind,
                            help="stoker: %s for this run (%s); default: the environment's%s" %
                            (variable, what, ", else this example's %s" % TRAINING_DEFAULTS[variable]
                             if variable in TRAINING_DEFAULTS else ""))
    parser.add_argument("--stream-priority", choices=["high", "normal"], default=TRAINING_DEFAULTS["stream_priority"],
                        help="priority of stoker's CUDA streams against the training step's (the library's default: "
                             "high; this example's: %(default)s, the training stream's own)")
    parser.add_argument("--mixed-tuning", default=None, metavar="KEY=N[,KEY=N]",
                        help="stoker's mixed decoder A/B knobs (STOKER_MIXED_TUNING, DEVELOPERS.md) for this run")
    args = parser.parse_args()
    if args.mixed_tuning:
        os.environ["STOKER_MIXED_TUNING"] = args.mixed_tuning  # read when the decoder starts
    for flag, variable, _, _ in ENV_KNOBS:  # read when the pipeline (its GPU operators) or the iterator is made
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is None and variable in TRAINING_DEFAULTS and variable not in os.environ:
            value = TRAINING_DEFAULTS[variable]
        if value is not None:  # a number may be 0 (--fused-blocks 0: one block a tile)
            os.environ[variable] = {"on": "1", "off": "0"}.get(value, str(value))
    args.loaders = [name.strip() for name in args.loader.split(",") if name.strip()]
    unknown = [name for name in args.loaders if name not in LOADERS]
    if unknown or not args.loaders:
        parser.error("--loader: unknown %s (choose from %s)" % (", ".join(unknown) or "(none)", ", ".join(LOADERS)))
    if args.device == "cpu":
        if "dali" in args.loaders:
            parser.error("--loader dali needs --device cuda")
        args.decode = "cpu"
    return args


class Ranks:
    """torch.distributed under torchrun (WORLD_SIZE > 1): NCCL on GPUs, gloo on the CPU. One
    process, no process group, otherwise.

    Under DDP every rank must run the same number of steps (each backward is a collective), so the
    time-based warm-up and window end where the ranks agree: every CHECK_EVERY steps they take the
    minimum of "my clock has passed" over a CPU (gloo) group -- no device synchronize, and every
    rank's own window is at least --seconds long."""

    CHECK_EVERY = 4  # steps between agreements under torchrun (one process: every step)

    def __init__(self, device):
        import torch.distributed as dist

        self.dist = dist
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.flags = None  # the group the ranks agree in
        if self.world > 1:
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                    device_id=device if device.type == "cuda" else None)
            self.flags = dist.new_group(backend="gloo") if device.type == "cuda" else dist.group.WORLD

    def check_at(self, step):
        """Whether the ranks agree on a time-based decision at this step (the same on every rank)."""
        return self.world <= 1 or step % self.CHECK_EVERY == 0

    def all_past(self, passed):
        """True on every rank when `passed` is true on every rank (called by all at the same step)."""
        if self.world <= 1:
            return passed
        import torch

        flag = torch.tensor([1 if passed else 0], dtype=torch.int32)
        self.dist.all_reduce(flag, op=self.dist.ReduceOp.MIN, group=self.flags)
        return bool(flag.item())

    def wrap(self, model, device):
        if self.world <= 1:
            return model
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)

    def total(self, images, seconds):
        """(images of every rank, the slowest rank's seconds)."""
        if self.world <= 1:
            return images, seconds
        import torch

        counts = torch.tensor([float(images)], dtype=torch.float64)
        slowest = torch.tensor([seconds], dtype=torch.float64)
        if self.dist.get_backend() == "nccl":
            counts, slowest = counts.cuda(), slowest.cuda()
        self.dist.all_reduce(counts)
        self.dist.all_reduce(slowest, op=self.dist.ReduceOp.MAX)
        return int(counts.item()), float(slowest.item())

    def close(self):
        if self.world > 1:
            self.dist.destroy_process_group()


def stoker_loader(args, device, ranks):
    from stoker import fn, pipeline_def
    from stoker.torch import ClassificationIterator, LastBatchPolicy

    on_gpu = device.type == "cuda"
    gpu_ops = "gpu" if on_gpu else "cpu"

    @pipeline_def
    def train_pipe(root):
        # No shard_id/num_shards: under torchrun (srun, mpirun) each rank reads shard RANK of WORLD_SIZE.
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        # DALI's ResNet-50 example: only the random crop window is decoded, then resized on the GPU.
        images = fn.decoders.image_random_crop(jpegs, device=args.decode, **decoder_options(args))
        images = fn.resize(images, resize_x=args.size, resize_y=args.size, device=gpu_ops)
        images = fn.crop_mirror_normalize(images, dtype="float16" if on_gpu else "float", output_layout="CHW",
                                          mean=MEAN, std=STD, mirror=fn.random.coin_flip(probability=0.5),
                                          device=gpu_ops)
        return images, labels.gpu() if on_gpu else labels

    placement = {"device_id": device.index} if on_gpu else {"device_id": None}
    pipe = train_pipe(args.data, batch_size=args.batch_size, num_threads=args.workers,
                      prefetch_queue_depth=args.prefetch, stream_priority=args.stream_priority,
                      pin_threads=args.pin_threads == "on", **placement)
    # DROP: every rank takes the same number of full batches per epoch (DDP needs equal steps).
    iterator = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                      last_batch_policy=LastBatchPolicy.DROP)

    def close():
        # What the pipeline did while the model trained (stderr): busy seconds per operator and
        # buffer allocations after warm-up (should stay 0).
        stats = pipe.stats()
        busy = " ".join("%s=%.2fs" % (name, seconds) for name, seconds in stats.get("op_seconds", {}).items())
        waits = " ".join("%s=%.2fs" % (key, stats.get(key, 0.0))
                         for key in ("next_wait_s", "batch_latency_s", "gpu_stage_s", "upload_s", "slot_wait_s"))
        held = " ".join("%s=%.0fMB" % (key, stats.get(key, 0) / 2**20)
                        for key in ("pinned_bytes_held", "host_bytes_held", "device_bytes_held"))
        if ranks.rank == 0:
            print("stoker stats: batches=%s allocations=%s allocations_after_warmup=%s batches_discarded=%s %s %s %s"
                  % (stats.get("batches"), stats.get("allocations"), stats.get("allocations_after_warmup"),
                     stats.get("batches_discarded"), held, waits, busy), file=sys.stderr)
        pipe.close()

    return classification_batches(iterator), close


def classification_batches(iterator):
    """(images, labels) from a DALI-style classification iterator, epoch after epoch."""
    while True:
        for step in iterator:
            yield step[0]["data"], step[0]["label"].reshape(-1).long()


def decoder_options(args):
    """The random-crop decoder's extra arguments (the same for stoker and DALI)."""
    return {} if args.hw_decoder_load is None or args.decode != "mixed" else {"hw_decoder_load": args.hw_decoder_load}


def dali_loader(args, device, ranks):
    """The stoker pipeline above, in DALI (same operators and arguments; DALI wants an explicit
    .gpu() after a CPU decoder, and its shard from the caller)."""
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy

    @pipeline_def
    def train_pipe(root):
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, shard_id=ranks.rank,
                                        num_shards=ranks.world, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device=args.decode, output_type=types.RGB,
                                               **decoder_options(args))
        if args.decode == "cpu":
            images = images.gpu()
        images = fn.resize(images, resize_x=args.size, resize_y=args.size)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(probability=0.5))
        return images, labels.gpu()

    pipe = train_pipe(args.data, batch_size=args.batch_size, num_threads=args.workers, device_id=device.index,
                      prefetch_queue_depth=args.prefetch)
    pipe.build()
    iterator = DALIClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                          last_batch_policy=LastBatchPolicy.DROP)
    return classification_batches(iterator), lambda: None


class SideStreamPrefetcher:
    """The DataLoader's usual GPU feeder (apex's / timm's prefetcher): the next batch's copy to the
    GPU and its normalization are queued on a side stream one batch ahead, so they overlap the
    current step; the training stream waits on the side stream only when it takes the batch."""

    def __init__(self, batches, device, mean, std):
        import torch

        self.torch = torch
        self.batches = batches
        self.device = device
        self.mean, self.std = mean, std
        self.stream = torch.cuda.Stream(device)
        self.ready = None
        self._preload()

    def _preload(self):
        images, labels = next(self.batches)
        with self.torch.cuda.stream(self.stream):
            images = images.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            self.ready = (((images.float() - self.mean) / self.std).half(), labels)

    def __iter__(self):
        return self

    def __next__(self):
        current = self.torch.cuda.current_stream(self.device)
        current.wait_stream(self.stream)
        images, labels = self.ready
        images.record_stream(current)  # made on the side stream, used on the training stream
        labels.record_stream(current)
        self._preload()
        return images, labels


def pytorch_loader(args, device, ranks):
    import torch
    import torchvision
    from torchvision.transforms import v2

    from stoker.torch import worker_init_fn

    augment = v2.Compose([v2.RandomResizedCrop(args.size, antialias=True), v2.RandomHorizontalFlip()])

    def decode(path):
        data = torchvision.io.read_file(path)
        try:
            return torchvision.io.decode_jpeg(data, mode=torchvision.io.ImageReadMode.RGB)
        except RuntimeError:  # the few files libjpeg-turbo in torchvision refuses (some CMYK)
            import numpy as np
            from PIL import Image

            image = Image.open(io.BytesIO(data.numpy().tobytes())).convert("RGB")
            return torch.from_numpy(np.asarray(image)).permute(2, 0, 1).contiguous()

    class Folder(torch.utils.data.Dataset):
        def __init__(self, root):
            classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
            self.items = [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
                          for f in sorted(os.listdir(os.path.join(root, c))) if f.lower().endswith((".jpg", ".jpeg"))]

        def __len__(self):
            return len(self.items)

        def __getitem__(self, index):
            path, label = self.items[index]
            return augment(decode(path)), label  # uint8 CHW: 4x less to pin and copy than float

    class ManyEpochs(torch.utils.data.Sampler):
        """This rank's share of epoch after epoch (a DistributedSampler per epoch, chained): on a
        small sample set the workers would otherwise drain and refill at every epoch boundary,
        which a full-size data set rarely sees."""

        def __init__(self, dataset, epochs):
            self.epochs = epochs
            self.inner = torch.utils.data.distributed.DistributedSampler(
                dataset, num_replicas=ranks.world, rank=ranks.rank, shuffle=True, drop_last=True)

        def __iter__(self):
            for epoch in range(self.epochs):
                self.inner.set_epoch(epoch)
                yield from self.inner

        def __len__(self):
            return len(self.inner) * self.epochs

    init = None
    if device.type == "cuda":
        try:
            # as many processes as this node runs (torchrun's LOCAL_WORLD_SIZE; 1 alone), not one
            # per GPU: alone on a node of several GPUs the workers get every CPU next to this one
            init = worker_init_fn(gpu_id=device.index, nproc_per_node=local_world_size())
        except Exception as error:  # no plan (e.g. topology without this GPU): run unpinned
            print("note: workers not pinned (%s)" % error, file=sys.stderr)
    dataset = Folder(args.data)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=ManyEpochs(dataset, 1000),
                                         num_workers=args.workers, pin_memory=device.type == "cuda",
                                         drop_last=True, persistent_workers=True, prefetch_factor=4,
                                         worker_init_fn=init)
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    if device.type == "cuda":
        return SideStreamPrefetcher(iter(loader), device, mean, std), lambda: None

    def batches():
        for images, labels in loader:
            yield (images.float() - mean) / std, labels

    return batches(), lambda: None


def synthetic_loader(args, device, num_classes):
    import torch

    images = torch.randn(args.batch_size, 3, args.size, args.size, device=device)
    if device.type == "cuda":
        images = images.half()
    labels = torch.randint(0, max(num_classes, 2), (args.batch_size,), device=device)

    def batches():
        while True:
            yield images, labels

    return batches(), lambda: None


def train_step(model, optimizer, scaler, criterion, amp_dtype, images, labels):
    """One step: forward (in AMP on the GPU) on channels-last images, backward, optimizer. Returns
    the loss."""
    import torch

    images = images.contiguous(memory_format=torch.channels_last)
    if amp_dtype is None:  # CPU: float32
        loss = criterion(model(images.float()), labels)
    else:
        with torch.autocast("cuda", dtype=amp_dtype):
            loss = criterion(model(images), labels)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def profile_steps(args, batches, model, optimizer, scaler, criterion, amp_dtype):
    """--profile: args.profile more steps under torch.profiler (CUPTI sees every kernel of the
    process, the loader's included); prints GPU time per kernel name, largest first."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.profile):
            images, labels = next(batches)
            train_step(model, optimizer, scaler, criterion, amp_dtype, images, labels)
        torch.cuda.synchronize()
    print_timeline(args, prof)
    totals = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            name = event.name[:90]
            time_us, calls = totals.get(name, (0.0, 0))
            totals[name] = (time_us + event.time_range.elapsed_us(), calls + 1)
    whole = sum(t for t, _ in totals.values()) or 1.0
    print("profile: %d steps, GPU busy %.1f ms per step (kernels and copies, summed)" % (args.profile, whole / 1000.0 / args.profile),
          file=sys.stderr)
    for name, (time_us, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0])[:60]:
        print("profile: %8.3f ms/step %5.1f%% %6d calls  %s" % (time_us / 1000.0 / args.profile, 100.0 * time_us / whole, calls, name),
              file=sys.stderr)
    print_api_calls(args, prof)


def merge(intervals):
    """Sorted, overlapping (start, end) pairs joined: the union as disjoint pairs."""
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def overlap(a, b):
    """Time two unions (merge's output) share."""
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def print_timeline(args, prof):
    """--profile: where the training stream stood still. The stream with the most GPU time is the
    training step's; every other stream's kernels and copies are the loader's (or NCCL's). Each
    gap between two of the training stream's kernels is split into time the loader's work ran on
    the GPU (serialized with the step: a priority or an event the step waits on) and time the GPU
    did nothing (the host was late to launch). --profile-trace FILE keeps the Chrome trace."""
    import json
    import tempfile

    path = args.profile_trace
    if not path:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            path = f.name
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    except (OSError, ValueError, RuntimeError) as error:
        print("timeline: no trace (%s)" % error, file=sys.stderr)
        return
    finally:
        if not args.profile_trace and os.path.exists(path):
            os.unlink(path)
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
           and isinstance(e.get("args"), dict) and "stream" in e["args"]]
    if not gpu:
        print("timeline: no GPU activity with a stream in the trace", file=sys.stderr)
        return
    busy = {}
    for e in gpu:
        busy[e["args"]["stream"]] = busy.get(e["args"]["stream"], 0.0) + float(e.get("dur", 0.0))
    train = max(busy, key=busy.get)
    step_events = [e for e in gpu if e["args"]["stream"] == train]
    mine = merge((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0))) for e in step_events)
    # the step's kernels by where they end and start: which of them a stop falls between (at the
    # step's boundary, the batch was late; inside the step, the loader's kernel held the SMs)
    ended = {float(e["ts"]) + float(e.get("dur", 0.0)): e.get("name", "?")[:32] for e in step_events}
    began = {float(e["ts"]): e.get("name", "?")[:32] for e in step_events}
    others = [e for e in gpu if e["args"]["stream"] != train]
    theirs = merge((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0))) for e in others)
    start, end = mine[0][0], mine[-1][1]
    gaps = [[a[1], b[0]] for a, b in zip(mine, mine[1:]) if b[0] > a[1]]
    gap_total = sum(b - a for a, b in gaps)
    gap_loader = overlap(gaps, theirs)
    steps = max(1, args.profile)
    print("timeline: training stream %s: %.2f ms/step wall, busy %.2f, stopped %.2f (loader's work running %.2f, "
          "GPU idle %.2f); loader's work %.2f ms/step on %d stream(s), %.2f of it beside the step's kernels"
          % (train, (end - start) / 1000.0 / steps, (end - start - gap_total) / 1000.0 / steps, gap_total / 1000.0 / steps,
             gap_loader / 1000.0 / steps, (gap_total - gap_loader) / 1000.0 / steps,
             sum(b - a for a, b in theirs) / 1000.0 / steps, len(busy) - 1, overlap(mine, theirs) / 1000.0 / steps),
          file=sys.stderr)
    for a, b in sorted(gaps, key=lambda g: g[0] - g[1])[:8]:  # the longest stops, with what ran in them
        ran = {}
        for e in others:
            t0, t1 = float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0))
            if t1 > a and t0 < b:
                name = "s%s %s" % (e["args"]["stream"], e.get("name", "?")[:40])
                ran[name] = ran.get(name, 0.0) + min(t1, b) - max(t0, a)
        top = ", ".join("%s %.0f us" % kv for kv in sorted(ran.items(), key=lambda kv: -kv[1])[:3]) or "nothing"
        print("timeline:   stop %7.0f us at +%.1f ms (after %s, before %s): %s"
              % (b - a, (a - start) / 1000.0, ended.get(a, "?"), began.get(b, "?"), top), file=sys.stderr)


def print_api_calls(args, prof):
    """--profile: the CUDA runtime/driver API calls CUPTI saw on every thread of the process, the
    most host time first: what a loader's threads ask of the driver (a cudaFree or a device-wide
    synchronize holds up the training thread's launches), told apart from the training thread's."""
    import collections

    import torch

    api = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CPU and e.name.startswith("cu")]
    # Threads numbered by kernel launches, most first: t0 is the training thread (CUPTI's thread
    # ids are its own). Session 19 printed all as one thread: the count of ids says whether CUPTI
    # told them apart at all.
    launches = collections.Counter(e.thread for e in api if "LaunchKernel" in e.name)
    order = {tid: i for i, (tid, _) in enumerate(launches.most_common())}
    for e in api:
        order.setdefault(e.thread, len(order))
    print("profile: CUDA API calls on %d thread id(s)" % len(order), file=sys.stderr)
    calls = {}
    for event in api:
        name = event.name
        key = (name[:60], "t%d" % order[event.thread])
        total_us, count, longest = calls.get(key, (0.0, 0, 0.0))
        elapsed = event.time_range.elapsed_us()
        calls[key] = (total_us + elapsed, count + 1, max(longest, elapsed))
    if not calls:
        print("profile: no CUDA API calls recorded (this torch's profiler keeps none without CPU activity)", file=sys.stderr)
    for (name, thread), (total_us, count, longest) in sorted(calls.items(), key=lambda kv: -kv[1][0])[:25]:
        print("profile-api: %8.3f ms/step %7d calls  longest %8.1f us  %-5s  %s"
              % (total_us / 1000.0 / args.profile, count, longest, thread, name), file=sys.stderr)


def cpu_ticks():
    """(busy, total) jiffies of all CPUs from /proc/stat, or None where there is none."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def preemptions():
    """Times this thread was taken off its CPU against its will (Linux), or None."""
    try:
        with open("/proc/thread-self/status") as f:
            for line in f:
                if line.startswith("nonvoluntary_ctxt_switches:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def make_loader(name, args, device, ranks, num_classes):
    if name == "stoker":
        return stoker_loader(args, device, ranks)
    if name == "pytorch":
        return pytorch_loader(args, device, ranks)
    if name == "dali":
        return dali_loader(args, device, ranks)
    return synthetic_loader(args, device, num_classes)


def timed_steps(args, batches, model, optimizer, scaler, criterion, amp_dtype, device, ranks):
    """Runs args.steps steps; returns what was measured over the timed ones (after the warm-up).
    Under torchrun the ranks end the warm-up and the window at the same step (Ranks.all_past)."""
    import torch

    on_gpu = device.type == "cuda"
    warmup = args.warmup if args.warmup is not None else min(20, args.steps // 3)
    min_warmup = args.warmup if args.warmup is not None else 20  # with --warmup-seconds: steps at least
    if args.warmup_seconds > 0:
        warmup = args.steps  # set below, once the warm-up time has passed
    gaps = []  # (event after the previous step, event once this step's batch was usable)
    images_timed = steps_timed = 0
    start = step_done = loss = ticks0 = preempted0 = None
    warmup_s = float("nan")  # host seconds from the first batch to the timed window's start
    next_times = []  # host seconds in next(batches), per timed step
    began = None  # host time the first batch arrived (--warmup-seconds counts from there, as bench/peers.py)
    for step in range(args.steps):
        # --warmup-seconds: the first step ending past that many seconds after the first batch
        # (host time; the synchronize below waits for its queued work), and not before the
        # min_warmup'th, ends the warm-up.
        if args.warmup_seconds > 0 and start is None and step >= min_warmup and ranks.check_at(step):
            if ranks.all_past(began is not None and time.perf_counter() - began >= args.warmup_seconds):
                warmup = step
        if step == warmup:
            if on_gpu:
                torch.cuda.synchronize()
            start = time.perf_counter()
            warmup_s = start - began if began is not None else float("nan")
            ticks0, preempted0 = cpu_ticks(), preemptions()
        elif start is not None and args.seconds and ranks.check_at(step) and \
                ranks.all_past(time.perf_counter() - start >= args.seconds):
            break
        asked = time.perf_counter()
        images, labels = next(batches)
        if began is None:
            began = time.perf_counter()
        if start is not None:
            next_times.append(time.perf_counter() - asked)
        if on_gpu:
            data_ready = torch.cuda.Event(enable_timing=True)
            data_ready.record()
            # The first timed step follows a synchronization, not a loader wait: its gap is not counted.
            if step_done is not None and step > warmup:
                gaps.append((step_done, data_ready))
        loss = train_step(model, optimizer, scaler, criterion, amp_dtype, images, labels)
        if on_gpu:
            step_done = torch.cuda.Event(enable_timing=True)
            step_done.record()
        if start is not None:
            images_timed += images.shape[0]
            steps_timed += 1
    if on_gpu:
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start if start is not None else 0.0
    device_mb = float("nan")
    if on_gpu:  # after the window's clock stopped: the whole GPU, the model's and the loader's memory
        free, total = torch.cuda.mem_get_info(device)
        device_mb = (total - free) / 2**20
    ticks1, preempted1 = cpu_ticks(), preemptions()
    busy = preempted = "-"
    if start is not None and ticks0 and ticks1 and ticks1[1] > ticks0[1]:
        busy = "%.1f" % ((os.cpu_count() or 1) * (ticks1[0] - ticks0[0]) / (ticks1[1] - ticks0[1]))
    if start is not None and preempted0 is not None and preempted1 is not None and elapsed > 0:
        preempted = "%.0f" % ((preempted1 - preempted0) / elapsed)
    return {"images": images_timed, "steps": steps_timed, "warmup_steps": min(warmup, args.steps), "warmup_s": warmup_s,
            "elapsed": elapsed, "next_times": next_times, "began": began, "device_mb": device_mb,
            "wait_s": sum(done.elapsed_time(ready) for done, ready in gaps) / 1000.0 if on_gpu else float("nan"),
            "busy": busy, "preempted": preempted, "loss": loss.item() if loss is not None else float("nan")}


def run_loader(name, args, device, ranks, num_classes):
    """Trains a fresh model fed by loader `name`; prints rank 0's line; returns (img/s of the job, loss)."""
    import torch
    import torchvision

    made = time.perf_counter()
    batches, close = make_loader(name, args, device, ranks, num_classes)
    model = getattr(torchvision.models, args.arch)(num_classes=max(num_classes, 2))
    model = ranks.wrap(model.to(device).to(memory_format=torch.channels_last), device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    amp_dtype = None
    if device.type == "cuda":
        amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    scaler = torch.amp.GradScaler(device.type, enabled=amp_dtype == torch.float16)
    criterion = torch.nn.CrossEntropyLoss()
    m = timed_steps(args, batches, model, optimizer, scaler, criterion, amp_dtype, device, ranks)
    if args.profile > 0 and device.type == "cuda":
        profile_steps(args, batches, model, optimizer, scaler, criterion, amp_dtype)
    images, slowest = ranks.total(m["images"], m["elapsed"])
    rate = images / slowest if slowest > 0 else 0.0
    decode = {"stoker": args.decode, "dali": args.decode, "pytorch": "cpu-workers"}.get(name, "-")
    if name in ("stoker", "dali") and args.decode == "mixed" and args.hw_decoder_load is not None:
        decode += "@%g" % args.hw_decoder_load
    next_times, elapsed = m["next_times"], m["elapsed"]
    # from the loader's creation to its first batch in the loop (the model is built in between, alike
    # for every loader); device MB: the whole GPU in use at the window's end (cudaMemGetInfo)
    first_batch_s = m["began"] - made if m["began"] is not None else float("nan")
    if ranks.rank == 0:
        print("train_resnet50: loader=%s arch=%s image_size=%d device=%s ranks=%d decode=%s stream_priority=%s "
              "fused_split=%s batch=%d workers=%d amp=%s warmup_steps=%d warmup_s=%.1f steps=%d seconds=%.2f img/s=%.1f img/s_rank0=%.1f "
              "gpu_idle_waiting_for_data_s=%.3f gpu_idle_share=%.1f%% host_in_next_ms_per_step=%.2f "
              "host_in_next_ms_p90=%.1f host_in_next_ms_max=%.1f cpus_busy=%s step_thread_preempted_per_s=%s "
              "first_batch_s=%.2f device_mb=%.0f final_loss=%.3f"
              % (name, args.arch, args.size, device.type, ranks.world, decode,
                 args.stream_priority if name == "stoker" else "-",
                 os.environ.get("STOKER_FUSED_SPLIT", "1") if name == "stoker" else "-", args.batch_size, args.workers,
                 str(amp_dtype).replace("torch.", ""), m["warmup_steps"], m["warmup_s"], m["steps"], elapsed, rate,
                 m["images"] / elapsed if elapsed > 0 else 0.0, m["wait_s"],
                 100.0 * m["wait_s"] / elapsed if elapsed > 0 else 0.0,
                 1000.0 * sum(next_times) / len(next_times) if next_times else 0.0,
                 1000.0 * sorted(next_times)[int(0.9 * (len(next_times) - 1))] if next_times else 0.0,
                 1000.0 * max(next_times, default=0.0), m["busy"], m["preempted"], first_batch_s, m["device_mb"],
                 m["loss"]), flush=True)
    close()
    return rate, m["loss"]


def main():
    args = parse_args()
    # Before the first CUDA call: 32 hardware queues so the loader's streams need not wait behind
    # the training stream's kernels (CUDA reads the variable once, when it starts; unless already
    # set; docs/python.md). Every loader runs so.
    import stoker.distributed
    stoker.set_cuda_connections(32)
    import torch

    if args.device == "cuda":
        if not torch.cuda.is_available():
            print("train_resnet50: needs a CUDA GPU (or --device cpu)", file=sys.stderr)
            return 2
        gpu = args.gpu if args.gpu is not None else max(0, stoker.distributed.default_device_id())
        device = torch.device("cuda", gpu)
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True
    else:
        device = torch.device("cpu")
    ranks = Ranks(device)
    num_classes = len([d for d in os.listdir(args.data) if os.path.isdir(os.path.join(args.data, d))])
    results = [(name,) + run_loader(name, args, device, ranks, num_classes) for name in args.loaders]
    ceiling = next((rate for name, rate, _ in results if name == "synthetic"), None)
    if ranks.rank == 0 and ceiling and len(results) > 1:
        for name, rate, _ in results:
            if name != "synthetic":
                print("train_resnet50: shortfall loader=%s img/s=%.1f synthetic_img/s=%.1f shortfall=%.1f%%"
                      % (name, rate, ceiling, 100.0 * (1.0 - rate / ceiling)), flush=True)
    ranks.close()
    return 0 if all(math.isfinite(loss) for _, _, loss in results) else 1


if __name__ == "__main__":
    sys.exit(main())
