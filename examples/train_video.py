#!/usr/bin/env python3
"""examples/train_video.py: a small video classification training loop fed by stoker's
readers.video: a tiny 3D CNN (three Conv3d blocks, pooling, a Linear) trained for a few epochs
on clips of frames, in PyTorch, on the GPU or the CPU.

    python examples/train_video.py --data DIR                      # DIR: one subfolder of videos per class
    python examples/train_video.py --data /tmp/clips --make-data   # makes a tiny set first if DIR is empty
    python examples/train_video.py --data DIR --device cpu --no-augment --epochs 1

The pipeline (stoker's Python API, the names and arguments of NVIDIA DALI's):

    frames, labels = fn.readers.video(file_root=DIR, sequence_length=F, stride=S, step=P,
                                      random_shuffle=True, name="Reader", device="gpu" or "cpu")
    frames = fn.resize(frames, resize_x=..., resize_y=...)            # each frame of the sequence
    frames = fn.crop_mirror_normalize(frames, dtype=FLOAT, output_layout="CFHW", crop=(h, w),
                                      mean=MEAN, std=STD, mirror=fn.random.coin_flip())

gives float32 [N, 3, F, h, w] batches, the layout Conv3d takes. readers.video decodes on NVDEC
(``device="gpu"``) where CUDA is there, else with libavcodec on the worker threads.

``--no-augment`` leaves out resize and crop_mirror_normalize: the reader's uint8 [N, F, H, W, 3]
frames are normalised and permuted to [N, 3, F, H, W] in torch (the clips must then share one
size, as ``stoker datagen --video`` makes them). resize and crop_mirror_normalize apply one
size, crop window and mirror flag to every frame of a sequence.

Prints one line per epoch (steps, clips, frames/s of the whole step -- data, forward, backward,
optimizer -- and the epoch's mean loss) and a final line. ``--make-data`` runs ``stoker datagen
--video`` (the CLI the Python package installs, stoker/bin/stoker; it needs the ffmpeg CLI) when
DIR is missing or empty. Needs torch. Not part of the library; a user-facing example.
"""
import argparse
import math
import os
import subprocess
import sys
import time

# Per-channel mean and std of Kinetics-400 (torchvision's video models), on the 0..255 scale.
MEAN = [0.43216 * 255, 0.394666 * 255, 0.37645 * 255]
STD = [0.22803 * 255, 0.22145 * 255, 0.216989 * 255]


def size_arg(text):
    """'WxH' -> (W, H)."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("expected WxH, e.g. 112x112, got %r" % text)
    if width < 8 or height < 8:
        raise argparse.ArgumentTypeError("%r: both sides must be at least 8" % text)
    return width, height


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder with one subfolder of video files per class")
    parser.add_argument("--make-data", action="store_true",
                        help="when --data is missing or empty, first make a tiny set there with `stoker datagen "
                             "--video` (--make-count clips of --make-frames frames of --make-size)")
    parser.add_argument("--make-count", type=int, default=8, help="clips --make-data writes")
    parser.add_argument("--make-classes", type=int, default=2, help="classes --make-data writes")
    parser.add_argument("--make-frames", type=int, default=32, help="frames per clip --make-data writes")
    parser.add_argument("--make-size", type=size_arg, default=(128, 96), help="WxH of the clips --make-data writes")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                        help="where the reader decodes and the model trains (auto: cuda when torch sees a GPU)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per batch")
    parser.add_argument("--frames", type=int, default=8, help="frames per sequence (sequence_length)")
    parser.add_argument("--stride", type=int, default=1, help="distance between the frames of one sequence")
    parser.add_argument("--step", type=int, default=-1,
                        help="frames between the starts of consecutive sequences (-1: --frames, no overlap)")
    parser.add_argument("--size", type=size_arg, default=(112, 112),
                        help="WxH of the training crop; frames are resized to 8/7 of it first")
    parser.add_argument("--no-augment", dest="augment", action="store_false",
                        help="no resize / crop_mirror_normalize in the pipeline: the reader's frames, "
                             "normalised and permuted in torch")
    parser.add_argument("--workers", type=int, default=max(1, min(4, (os.cpu_count() or 2) - 1)),
                        help="stoker's worker threads")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def make_data(args):
    """--make-data: `stoker datagen --video` into args.data when it is missing or empty."""
    if os.path.isdir(args.data) and os.listdir(args.data):
        return
    from stoker._cli import binary_path  # the CLI the package installs, as the `stoker` command runs it

    os.makedirs(args.data, exist_ok=True)
    command = [binary_path(), "datagen", "--video", args.data, "--count", str(args.make_count),
               "--classes", str(args.make_classes), "--frames", str(args.make_frames),
               "--size", "%dx%d" % args.make_size, "--seed", str(args.seed)]
    print("train_video: making data: %s" % " ".join(command[1:]), file=sys.stderr)
    subprocess.run(command, check=True, stdout=sys.stderr)


def build_loader(args, device):
    """A stoker pipeline over args.data and its PyTorch iterator (one epoch per pass)."""
    from stoker import LastBatchPolicy, fn, pipeline_def
    from stoker.torch import ClassificationIterator

    on_gpu = device.type == "cuda"
    ops_device = "gpu" if on_gpu else "cpu"
    crop_w, crop_h = args.size

    @pipeline_def
    def video_pipe(root):
        # readers.video's outputs are frames, label, first frame number, timestamps: the first two are used.
        outputs = fn.readers.video(file_root=root, sequence_length=args.frames, stride=args.stride, step=args.step,
                                   random_shuffle=True, name="Reader", device=ops_device)
        frames, labels = outputs[0], outputs[1]
        if args.augment:
            frames = fn.resize(frames, resize_x=round(crop_w * 8 / 7), resize_y=round(crop_h * 8 / 7),
                               device=ops_device)
            frames = fn.crop_mirror_normalize(frames, dtype="float", output_layout="CFHW", crop=(crop_h, crop_w),
                                              mean=MEAN, std=STD, mirror=fn.random.coin_flip(probability=0.5),
                                              device=ops_device)
        return frames, labels.gpu() if on_gpu else labels

    pipe = video_pipe(args.data, batch_size=args.batch_size, num_threads=args.workers, seed=args.seed,
                      device_id=device.index if on_gpu else None)
    try:
        # PARTIAL: every sequence once an epoch, the last batch possibly smaller. Building the
        # iterator builds the pipeline and runs its first batch: a refused argument or sample shows here.
        iterator = ClassificationIterator(pipe, reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL)
    except Exception:
        pipe.close()
        raise
    return pipe, iterator


def to_clips(frames, augment):
    """A batch of the pipeline -> float32 [N, 3, F, H, W] for Conv3d."""
    import torch

    if augment:  # crop_mirror_normalize already gave CFHW float, normalised
        return frames
    mean = torch.tensor(MEAN, device=frames.device).view(1, 3, 1, 1, 1)
    std = torch.tensor(STD, device=frames.device).view(1, 3, 1, 1, 1)
    return (frames.permute(0, 4, 1, 2, 3).float() - mean) / std  # [N, F, H, W, 3] uint8 -> [N, 3, F, H, W]


def tiny_c3d(num_classes):
    """Three Conv3d blocks (3 -> 16 -> 32 -> 64 channels), global average pooling, a Linear: any
    frame count and size goes in."""
    from torch import nn

    def block(c_in, c_out, pool):
        return [nn.Conv3d(c_in, c_out, kernel_size=3, padding=1, bias=False), nn.BatchNorm3d(c_out),
                nn.ReLU(inplace=True)] + ([nn.MaxPool3d(pool)] if pool else [])

    return nn.Sequential(*block(3, 16, (1, 2, 2)), *block(16, 32, (2, 2, 2)), *block(32, 64, None),
                         nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(64, num_classes))


def train_epoch(args, iterator, model, optimizer, criterion, device):
    """One pass over the reader's sequences; returns (steps, clips, frames, seconds, mean loss,
    shape of one clip as the model took it: 'CxFxHxW')."""
    import torch

    steps = clips = frames = 0
    shape = "-"
    loss_sum = 0.0
    start = time.perf_counter()
    for batch in iterator:
        data = to_clips(batch[0]["data"], args.augment)
        labels = batch[0]["label"].reshape(-1).long().to(device)
        loss = criterion(model(data), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_sum += loss.item()  # also waits for the step, so the time below is the step's
        steps += 1
        clips += data.shape[0]
        frames += data.shape[0] * data.shape[2]
        shape = "x".join(str(n) for n in data.shape[1:])
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    iterator.reset()
    return steps, clips, frames, time.perf_counter() - start, loss_sum / max(steps, 1), shape


def main(argv=None):
    args = parse_args(argv)
    # Before the first CUDA call: more hardware queues for the loader's streams (docs/python.md).
    import stoker
    stoker.set_cuda_connections(32)
    import torch

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device == "cuda" and not torch.cuda.is_available():
        print("train_video: needs a CUDA GPU (or --device cpu)", file=sys.stderr)
        return 2
    device = torch.device("cuda", torch.cuda.current_device()) if args.device == "cuda" else torch.device("cpu")
    torch.manual_seed(args.seed)
    if args.make_data:
        make_data(args)
    classes = sorted(d for d in os.listdir(args.data) if os.path.isdir(os.path.join(args.data, d)))
    if not classes:
        print("train_video: %s has no class subfolders (--make-data makes a tiny set)" % args.data, file=sys.stderr)
        return 2

    pipe, iterator = build_loader(args, device)
    model = tiny_c3d(max(len(classes), 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    criterion = torch.nn.CrossEntropyLoss()
    print("train_video: device=%s classes=%d sequences=%d batch=%d frames=%d stride=%d augment=%s workers=%d"
          % (device.type, len(classes), iterator.size, args.batch_size, args.frames, args.stride,
             "on" if args.augment else "off", args.workers), flush=True)
    frames_all = seconds_all = 0
    loss = float("nan")
    try:
        for epoch in range(1, args.epochs + 1):
            steps, clips, frames, seconds, loss, shape = train_epoch(args, iterator, model, optimizer, criterion,
                                                                     device)
            frames_all += frames
            seconds_all += seconds
            print("train_video: epoch=%d steps=%d clips=%d clip_shape=%s frames=%d seconds=%.2f frames/s=%.1f "
                  "loss=%.4f" % (epoch, steps, clips, shape, frames, seconds,
                                 frames / seconds if seconds > 0 else 0.0, loss), flush=True)
    finally:
        pipe.close()
    print("train_video: done epochs=%d frames=%d frames/s=%.1f final_loss=%.4f"
          % (args.epochs, frames_all, frames_all / seconds_all if seconds_all > 0 else 0.0, loss), flush=True)
    return 0 if math.isfinite(loss) else 1


if __name__ == "__main__":
    sys.exit(main())
