#!/usr/bin/env python3
"""examples/train_resnet50.py: a few hundred ResNet-50 training steps (torchvision, AMP,
channels-last) fed by stoker or by a PyTorch DataLoader, to compare the two loaders.

    python examples/train_resnet50.py --data DIR --loader stoker  [--steps 300] [--batch-size 128]
    python examples/train_resnet50.py --data DIR --loader pytorch [--workers 16]

DIR holds one subfolder of JPEGs per class (``stoker datagen DIR`` makes one). Prints img/s of
the whole training step (data + forward + backward + optimizer, after a warm-up) and the time
the GPU sat idle waiting for data: the time ``next(loader)`` took on the host before the batch
was ready, plus, for stoker, nothing else (its batches are already on the GPU, ready on an event
that the training stream waits on). Needs a CUDA GPU, torch and torchvision.

Not part of the library; a user-facing example and the GPU machine's end-to-end check.
"""
import argparse
import os
import sys
import time

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder with one subfolder of JPEGs per class")
    parser.add_argument("--loader", choices=["stoker", "pytorch"], default="stoker")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=None, help="steps not timed (default: min(20, steps/3))")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2),
                        help="stoker threads / DataLoader worker processes")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--gpu", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    parser.add_argument("--decode", choices=["mixed", "cpu"], default="mixed", help="stoker decoder device")
    return parser.parse_args()


def stoker_loader(args, num_classes):
    from stoker import fn, pipeline_def
    from stoker.torch import ClassificationIterator, LastBatchPolicy

    @pipeline_def
    def train_pipe(root):
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, device=args.decode)
        images = fn.random_resized_crop(images, size=[args.size, args.size], device="gpu")
        images = fn.crop_mirror_normalize(images, dtype="float16", output_layout="CHW", mean=MEAN, std=STD,
                                          mirror=fn.random.coin_flip(probability=0.5), device="gpu")
        return images, labels.gpu()

    pipe = train_pipe(args.data, batch_size=args.batch_size, num_threads=args.workers, device_id=args.gpu,
                      prefetch_queue_depth=3)
    iterator = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                      last_batch_policy=LastBatchPolicy.DROP)

    def batches():
        while True:
            for step in iterator:
                yield step[0]["data"], step[0]["label"].reshape(-1).long()

    return batches(), pipe.close


def pytorch_loader(args):
    import torch
    import torchvision
    from torchvision.transforms import v2

    from stoker.torch import worker_init_fn

    transform = v2.Compose([
        v2.RandomResizedCrop(args.size, antialias=True),
        v2.RandomHorizontalFlip(),
        v2.ToDtype(torch.float32),
        v2.Normalize(MEAN, STD),
    ])

    class Folder(torch.utils.data.Dataset):
        def __init__(self, root):
            classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
            self.items = [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
                          for f in sorted(os.listdir(os.path.join(root, c))) if f.lower().endswith((".jpg", ".jpeg"))]

        def __len__(self):
            return len(self.items)

        def __getitem__(self, index):
            path, label = self.items[index]
            image = torchvision.io.decode_jpeg(torchvision.io.read_file(path), mode=torchvision.io.ImageReadMode.RGB)
            return transform(image), label

    try:
        init = worker_init_fn(gpu_id=args.gpu)
    except Exception as error:  # no plan (e.g. topology without this GPU): run unpinned
        print("note: workers not pinned (%s)" % error, file=sys.stderr)
        init = None
    loader = torch.utils.data.DataLoader(Folder(args.data), batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers, pin_memory=True, drop_last=True,
                                         persistent_workers=True, prefetch_factor=4, worker_init_fn=init)

    def batches():
        while True:
            for images, labels in loader:
                yield (images.cuda(args.gpu, non_blocking=True).half(), labels.cuda(args.gpu, non_blocking=True))

    return batches(), lambda: None


def main():
    args = parse_args()
    import torch
    import torchvision

    if not torch.cuda.is_available():
        print("train_resnet50: needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.cuda.set_device(args.gpu)
    torch.backends.cudnn.benchmark = True
    num_classes = len([d for d in os.listdir(args.data) if os.path.isdir(os.path.join(args.data, d))])
    if args.loader == "stoker":
        batches, close = stoker_loader(args, num_classes)
    else:
        batches, close = pytorch_loader(args)

    model = torchvision.models.resnet50(num_classes=max(num_classes, 2)).cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    scaler = torch.amp.GradScaler("cuda")
    criterion = torch.nn.CrossEntropyLoss()
    warmup = args.warmup if args.warmup is not None else min(20, args.steps // 3)

    # GPU idle waiting for data, measured on the GPU: an event after each step's last kernel and
    # one once the next batch is usable on the stream (after next() returned, and, for stoker, after
    # the stream's wait on the batch's CUDA event). The gap between them is time the GPU had no
    # work because the data was not there yet (~0 when the loader keeps up).
    gaps = []
    images_timed = 0
    start = None
    step_done = None
    for step in range(args.steps):
        if step == warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
            gaps = []
            images_timed = 0
        images, labels = next(batches)
        data_ready = torch.cuda.Event(enable_timing=True)
        data_ready.record()
        if step_done is not None and step >= warmup:
            gaps.append((step_done, data_ready))
        images = images.contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        step_done = torch.cuda.Event(enable_timing=True)
        step_done.record()
        if step >= warmup:
            images_timed += images.shape[0]
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - (start or time.perf_counter())
    close()
    timed_steps = args.steps - warmup
    print("loader=%s steps=%d batch=%d workers=%d" % (args.loader, timed_steps, args.batch_size, args.workers))
    print("train step: %.1f img/s (%.3f s)" % (images_timed / elapsed if elapsed > 0 else 0.0, elapsed))
    wait_s = sum(done.elapsed_time(ready) for done, ready in gaps) / 1000.0
    print("GPU idle waiting for data: %.3f s (%.1f%% of the timed steps)"
          % (wait_s, 100.0 * wait_s / elapsed if elapsed > 0 else 0.0))
    print("final loss: %.3f" % loss.item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
