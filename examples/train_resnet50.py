#!/usr/bin/env python3
"""examples/train_resnet50.py: a few hundred ResNet-50 training steps (torchvision, AMP,
channels-last) fed by stoker or by a PyTorch DataLoader, to compare the two loaders.

    python examples/train_resnet50.py --data DIR --loader stoker  [--steps 300] [--seconds 20]
    python examples/train_resnet50.py --data DIR --loader pytorch [--workers 14]
    python examples/train_resnet50.py --data DIR --loader synthetic
    python examples/train_resnet50.py --data DIR --loader dali    [--decode cpu]   (NVIDIA DALI)

DIR holds one subfolder of JPEGs per class (``stoker datagen DIR`` makes one). Both loaders do
the same work: random-resized-crop to 224, coin-flip mirror, ImageNet mean/std normalization,
float16 NCHW on the GPU. The DataLoader is set up as a careful user would: torchvision's
decode_jpeg (PIL for the few files it refuses) and transforms.v2 on uint8 in the workers, pinned
memory, normalization on the GPU, one sampler over many epochs so the workers never drain at an
epoch boundary of a small sample set.

Prints one line: img/s of the whole training step (data + forward + backward + optimizer) over
the timed steps (after --warmup, until --steps or --seconds, whichever comes first) and the time
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
else float16 with a GradScaler. Needs a CUDA GPU, torch and torchvision.

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


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder with one subfolder of JPEGs per class")
    parser.add_argument("--loader", choices=["stoker", "pytorch", "dali", "synthetic"], default="stoker",
                        help="synthetic: one batch made on the GPU once and fed again every step (the step's ceiling)")
    parser.add_argument("--steps", type=int, default=300, help="steps in all, warm-up included")
    parser.add_argument("--seconds", type=float, default=0, help="stop the timed steps after this long (0 = no limit)")
    parser.add_argument("--warmup", type=int, default=None, help="steps not timed (default: min(20, steps/3))")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2),
                        help="stoker threads / DataLoader worker processes")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--gpu", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    parser.add_argument("--decode", choices=["mixed", "cpu"], default="mixed", help="stoker's (or DALI's) decoder device")
    parser.add_argument("--hw-decoder-load", type=float, default=None,
                        help="mixed decoder: share of images for the GPU's JPEG engines, the rest decoded on the "
                             "CPU threads (default: the operator's)")
    parser.add_argument("--profile", type=int, default=0, metavar="STEPS",
                        help="after the timed steps, profile this many more with torch.profiler and print the GPU "
                             "kernels of the whole process (the loader's too) by total time, to stderr")
    parser.add_argument("--stream-priority", choices=["high", "normal"], default="high",
                        help="priority of stoker's CUDA streams against the training step's")
    return parser.parse_args()


def stoker_loader(args):
    from stoker import fn, pipeline_def
    from stoker.torch import ClassificationIterator, LastBatchPolicy

    @pipeline_def
    def train_pipe(root):
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        # DALI's ResNet-50 example: only the random crop window is decoded, then resized on the GPU.
        images = fn.decoders.image_random_crop(jpegs, device=args.decode, **decoder_options(args))
        images = fn.resize(images, resize_x=args.size, resize_y=args.size, device="gpu")
        images = fn.crop_mirror_normalize(images, dtype="float16", output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(probability=0.5), device="gpu")
        return images, labels.gpu()

    pipe = train_pipe(args.data, batch_size=args.batch_size, num_threads=args.workers, device_id=args.gpu,
                      prefetch_queue_depth=3, stream_priority=args.stream_priority)
    iterator = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                      last_batch_policy=LastBatchPolicy.DROP)

    def close():
        # What the pipeline did while the model trained (stderr): busy seconds per operator and
        # buffer allocations after warm-up (should stay 0).
        stats = pipe.stats()
        busy = " ".join("%s=%.2fs" % (name, seconds) for name, seconds in stats.get("op_seconds", {}).items())
        waits = " ".join("%s=%.2fs" % (key, stats.get(key, 0.0))
                         for key in ("next_wait_s", "batch_latency_s", "gpu_stage_s", "upload_s", "slot_wait_s"))
        print("stoker stats: batches=%s allocations_after_warmup=%s %s %s"
              % (stats.get("batches"), stats.get("allocations_after_warmup"), waits, busy), file=sys.stderr)
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


def dali_loader(args):
    """The stoker pipeline above, in DALI (same operators and arguments; DALI wants an explicit
    .gpu() after a CPU decoder)."""
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIClassificationIterator, LastBatchPolicy

    @pipeline_def
    def train_pipe(root):
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device=args.decode, output_type=types.RGB,
                                               **decoder_options(args))
        if args.decode == "cpu":
            images = images.gpu()
        images = fn.resize(images, resize_x=args.size, resize_y=args.size)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16, output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(probability=0.5))
        return images, labels.gpu()

    pipe = train_pipe(args.data, batch_size=args.batch_size, num_threads=args.workers, device_id=args.gpu,
                      prefetch_queue_depth=3)
    pipe.build()
    iterator = DALIClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                          last_batch_policy=LastBatchPolicy.DROP)
    return classification_batches(iterator), lambda: None


def pytorch_loader(args):
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

    try:
        init = worker_init_fn(gpu_id=args.gpu)
    except Exception as error:  # no plan (e.g. topology without this GPU): run unpinned
        print("note: workers not pinned (%s)" % error, file=sys.stderr)
        init = None
    dataset = Folder(args.data)
    # One sampler over many reshuffled epochs: on a small sample set the workers would otherwise
    # drain and refill at every epoch boundary, which a full-size data set rarely sees.
    sampler = torch.utils.data.RandomSampler(dataset, num_samples=len(dataset) * 1000)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                                         num_workers=args.workers, pin_memory=True, drop_last=True,
                                         persistent_workers=True, prefetch_factor=4, worker_init_fn=init)
    device = torch.device("cuda", args.gpu)
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)

    def batches():
        while True:
            for images, labels in loader:
                images = images.to(device, non_blocking=True)
                yield ((images.float() - mean) / std).half(), labels.to(device, non_blocking=True)

    return batches(), lambda: None


def synthetic_loader(args, num_classes):
    import torch

    device = torch.device("cuda", args.gpu)
    images = torch.randn(args.batch_size, 3, args.size, args.size, device=device).half()
    labels = torch.randint(0, max(num_classes, 2), (args.batch_size,), device=device)

    def batches():
        while True:
            yield images, labels

    return batches(), lambda: None


def train_step(model, optimizer, scaler, criterion, amp_dtype, images, labels):
    """One step: forward in AMP on channels-last images, backward, optimizer. Returns the loss."""
    import torch

    images = images.contiguous(memory_format=torch.channels_last)
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


def main():
    args = parse_args()
    # stoker before the first CUDA call: importing it sets CUDA_DEVICE_MAX_CONNECTIONS=32 unless
    # already set, and CUDA reads that once, when it starts (docs/python.md). Both loaders run so.
    import stoker  # noqa: F401
    import torch
    import torchvision

    if not torch.cuda.is_available():
        print("train_resnet50: needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.cuda.set_device(args.gpu)
    torch.backends.cudnn.benchmark = True
    num_classes = len([d for d in os.listdir(args.data) if os.path.isdir(os.path.join(args.data, d))])
    if args.loader == "stoker":
        batches, close = stoker_loader(args)
    elif args.loader == "pytorch":
        batches, close = pytorch_loader(args)
    elif args.loader == "dali":
        batches, close = dali_loader(args)
    else:
        batches, close = synthetic_loader(args, num_classes)

    model = torchvision.models.resnet50(num_classes=max(num_classes, 2)).cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    scaler = torch.amp.GradScaler("cuda", enabled=amp_dtype == torch.float16)
    criterion = torch.nn.CrossEntropyLoss()
    warmup = args.warmup if args.warmup is not None else min(20, args.steps // 3)

    gaps = []  # (event after the previous step, event once this step's batch was usable)
    images_timed = steps_timed = 0
    start = step_done = loss = None
    next_times = []  # host seconds in next(batches), per timed step
    for step in range(args.steps):
        if step == warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
            ticks0, preempted0 = cpu_ticks(), preemptions()
        elif start is not None and args.seconds and time.perf_counter() - start >= args.seconds:
            break
        asked = time.perf_counter()
        images, labels = next(batches)
        if start is not None:
            next_times.append(time.perf_counter() - asked)
        data_ready = torch.cuda.Event(enable_timing=True)
        data_ready.record()
        # The first timed step follows a synchronization, not a loader wait: its gap is not counted.
        if step_done is not None and step > warmup:
            gaps.append((step_done, data_ready))
        loss = train_step(model, optimizer, scaler, criterion, amp_dtype, images, labels)
        step_done = torch.cuda.Event(enable_timing=True)
        step_done.record()
        if start is not None:
            images_timed += images.shape[0]
            steps_timed += 1
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start if start is not None else 0.0
    ticks1, preempted1 = cpu_ticks(), preemptions()
    if args.profile > 0:
        profile_steps(args, batches, model, optimizer, scaler, criterion, amp_dtype)
    final_loss = loss.item() if loss is not None else float("nan")
    wait_s = sum(done.elapsed_time(ready) for done, ready in gaps) / 1000.0
    # Where the host went: CPUs busy (all processes) and how often the training thread was
    # preempted, over the timed steps; a loader that crowds the step's own thread shows here.
    busy = "-"
    if start is not None and ticks0 and ticks1 and ticks1[1] > ticks0[1]:
        busy = "%.1f" % ((os.cpu_count() or 1) * (ticks1[0] - ticks0[0]) / (ticks1[1] - ticks0[1]))
    preempted = "-"
    if start is not None and preempted0 is not None and preempted1 is not None and elapsed > 0:
        preempted = "%.0f" % ((preempted1 - preempted0) / elapsed)
    decode = {"stoker": args.decode, "dali": args.decode, "pytorch": "cpu-workers"}.get(args.loader, "-")
    if args.loader in ("stoker", "dali") and args.decode == "mixed" and args.hw_decoder_load is not None:
        decode += "@%g" % args.hw_decoder_load
    print("train_resnet50: loader=%s decode=%s stream_priority=%s batch=%d workers=%d amp=%s steps=%d seconds=%.2f img/s=%.1f "
          "gpu_idle_waiting_for_data_s=%.3f gpu_idle_share=%.1f%% host_in_next_ms_per_step=%.2f "
          "host_in_next_ms_p90=%.1f host_in_next_ms_max=%.1f cpus_busy=%s step_thread_preempted_per_s=%s final_loss=%.3f"
          % (args.loader, decode, args.stream_priority if args.loader == "stoker" else "-", args.batch_size,
             args.workers, str(amp_dtype).replace("torch.", ""), steps_timed, elapsed,
             images_timed / elapsed if elapsed > 0 else 0.0, wait_s,
             100.0 * wait_s / elapsed if elapsed > 0 else 0.0,
             1000.0 * sum(next_times) / len(next_times) if next_times else 0.0,
             1000.0 * sorted(next_times)[int(0.9 * (len(next_times) - 1))] if next_times else 0.0,
             1000.0 * max(next_times, default=0.0), busy, preempted, final_loss), flush=True)
    close()
    return 0 if math.isfinite(final_loss) else 1


if __name__ == "__main__":
    sys.exit(main())
