#!/usr/bin/env python3
"""bench/peers.py: stoker against every peer loader, the same work for each, in one run.

Work: rn50-train (random-resized-crop 224 with scale [0.08, 1] and ratio [3/4, 4/3], coin-flip
mirror, normalize with ImageNet mean/std to NCHW float on the GPU, labels on the GPU) and
rn50-val (resize shorter side 256, centre crop 224, normalize), batch 256, epochs looped.
`decode` is decode-only (no augmentation): the ceilings the pipelines are measured against. `train+rn50` adds the training view: the consumer runs ResNet-50
forward+backward (AMP bf16, channels-last) per batch, and the row reports the GPU time lost
waiting for input (wall time minus steps x the step time measured on a synthetic batch).

Every run is a subprocess of its own (`peers.py --child ...`), so loaders do not disturb each
other and a failing loader is a row with its error, never the end of the suite. The parent
samples the child's process tree for peak host memory (PSS, so shared pages count once) and the
GPU (memory used above the baseline, SM and JPEG-engine utilization) through NVML.

The clock is the project's protocol (bench/protocol.py), the same for every row: batches of the
first --warmup seconds (default 10) after the first batch are not counted; the window of --seconds
(default 30) then counts the images delivered and ends with torch.cuda.synchronize() (the whole
device: every stream of the process, the loader's own included); `stoker bench --warmup W
--seconds S` keeps the same clock itself. Each row runs --repeats times (default 3), all runs in one
order shuffled with --order-seed (recorded in the output with the order).

Run tokens: LOADER[@N]:MODE[,KNOB=VALUE...], N = worker processes or threads (default 16; for the
torchvision GPU rows, the file-reading worker processes), MODE = train, val, decode, train+rn50 or
effnet (EFFNET_LOADERS: DALI's EfficientNet training shape -- random-resized crop, flip, AutoAugment
with the ImageNet policy, normalize -- stoker and DALI through the same code, auto_aug imported from
each; torchvision through transforms.v2.AutoAugment).
Knobs, the same name for every loader that has them: prefetch=P (stoker --prefetch, DALI
prefetch_queue_depth, DataLoader prefetch_factor, torchvision GPU read-ahead; default: the loader's
own, 2 for the peers, stoker's decided at build) and
hw_load=F (hw_decoder_load of the mixed decoders, stoker's and DALI's; default: the loader's own)
and cuda_load=F (the third decoder, nvJPEG's CUDA decoder with Huffman on the GPU, for the images
the engines do not take; the same loaders): stoker's cuda_decoder_load=F (that share of the
non-engine images goes to GPU Huffman instead of libjpeg-turbo on the workers); DALI has no share,
its closest knob is fn.decoders.image's hybrid_huffman_threshold (images above that many pixels go
to GPU Huffman, the rest to its CPU Huffman), so cuda_load > 0 sets hybrid_huffman_threshold=0 (all
of DALI's non-engine images to GPU Huffman) and cuda_load=0 or unset keeps DALI's default. Rows
with different values are different settings, swept alike for both (bench/compare.py).
read_ahead=0|1 (READ_AHEAD_LOADERS: decode-stoker-*, decode-dali-mixed and the rn50 rows of
stoker-cli-mixed and dali-mixed): readers.file's read_ahead=False|True, the argument both readers
share (stoker hints the planned batches' files to the kernel once a read missed the page cache, on
by default; DALI reads its mapped files ahead, off by default); unset = each
reader's default. For cold-cache rows (compare.py --cold-read-ahead).
prealloc=0|1 (PREALLOC_LOADERS: dali-mixed, decode-dali-mixed): 1 or unset = DALI's ResNet-50
example's device_memory_padding, host_memory_padding and preallocate_width/height_hint (sized for
ImageNet's largest images; much of DALI's device memory in these rows), 0 = none of them (DALI's
own defaults, as examples/train_resnet50.py runs it): DALI's device memory either way.
`--list` prints the loaders. Not on stoker's hot path; a benchmark driver.
  usage: peers.py --data /tmp/imagenet [--hires /tmp/hires] [--warmup 10 --seconds 30 --repeats 3] --out run.json
"""
import argparse, json, os, platform, shlex, shutil, signal, subprocess, sys, tempfile, threading, time, traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/protocol.py

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
CROP, VAL_RESIZE = 224, 256

PIPELINE_LOADERS = {  # name -> what it is (rows in the results say the same)
    'torch-pil': 'PyTorch DataLoader + ImageFolder/PIL transforms (ToTensor, Normalize in workers), pin_memory',
    'torch-decode-jpeg': 'PyTorch DataLoader + torchvision.io.decode_jpeg + transforms.v2 on uint8, normalize on the GPU',
    'tv-gpu-batched': 'torchvision batched GPU decode (decode_jpeg(list, device="cuda")) + per-image GPU crop/resize; '
                      'N reader processes hand over packed batches, decode thread on its own stream 2 batches ahead',
    'dali-mixed': 'NVIDIA DALI ResNet-50 example pipeline, decoders.image_random_crop device="mixed"',
    'dali-cpu': 'NVIDIA DALI ResNet-50 example pipeline with --dali_cpu: decode and resize on the CPU, '
                'crop_mirror_normalize on the GPU (all on the CPU without one)',
    'stoker-cli-cpu': 'stoker C library through `stoker bench --json --device cpu`: all on the CPU, float output '
                      'stays in host memory',
    'stoker-cli-cpudec': 'stoker C library through `stoker bench --json --device gpu --decoder cpu`: decode and '
                         'resize on the CPU, normalize on the GPU (DALI example --dali_cpu layout)',
    'stoker-cli-mixed': 'stoker C library through `stoker bench --json --device gpu`',
    'stoker-py-cpu': 'stoker Python iterator, decode and resize on the CPU, normalize on the GPU (DALI example '
                     '--dali_cpu layout; all on the CPU without a GPU)',
    'stoker-py-mixed': 'stoker Python iterator, mixed decoder and GPU operators',
}
DECODE_LOADERS = {  # decode-only: the files read, decoded to uint8 RGB (on the GPU for the GPU rows), nothing else
    'decode-tv-cpu': 'torchvision.io.decode_jpeg on the CPU in N DataLoader worker processes',
    'decode-tv-gpu': 'torchvision batched GPU decode, decode_jpeg(list of 256, mode=RGB, device="cuda") -> CHW uint8 '
                     'RGB on the GPU, fed as tv-gpu-batched (N reader processes, packed pinned batches; also uploads '
                     'the 256 labels); no hw_load knob (torchvision has none)',
    'decode-stoker-cpu': 'stoker decoders.image device="cpu" through `stoker bench --pipeline FILE`',
    'decode-stoker-mixed': 'stoker readers.file(random_shuffle=True) + decoders.image device="mixed" (RGB) -> HWC uint8 '
                           'RGB on the GPU through `stoker bench --pipeline FILE --no-digest` (nothing reads the '
                           'images; labels stay on the host); non-engine images on the CPU workers unless cuda_load',
    'decode-dali-mixed': 'DALI fn.readers.file(random_shuffle=True) + fn.decoders.image device="mixed" output_type=RGB '
                         '-> HWC uint8 RGB on the GPU, pipe.run() per batch, outputs left in DALI\'s buffers (labels '
                         'on the host); the ResNet-50 example\'s preallocation; DALI\'s default sends non-engine images '
                         'over 1 MP (hybrid_huffman_threshold) to GPU Huffman',
}
HW_LOAD_LOADERS = {'dali-mixed', 'stoker-cli-mixed', 'stoker-py-mixed', 'decode-stoker-mixed', 'decode-dali-mixed'}
PREALLOC_LOADERS = {'dali-mixed', 'decode-dali-mixed'}  # DALI's preallocation hints (dali_decoder_options)
READ_AHEAD_LOADERS = {'decode-stoker-cpu', 'decode-stoker-mixed', 'decode-dali-mixed', 'stoker-cli-mixed',
                      'dali-mixed'}  # readers.file's read_ahead
EFFNET_LOADERS = {'dali-mixed', 'dali-cpu', 'stoker-py-mixed', 'stoker-py-cpu', 'torch-decode-jpeg'}
NEEDS_CUDA = {'tv-gpu-batched', 'dali-mixed', 'stoker-cli-mixed', 'stoker-cli-cpudec', 'stoker-py-mixed', 'decode-tv-gpu',
              'decode-stoker-mixed', 'decode-dali-mixed'}
DEFAULT_RUNS = (
    # the comparisons the issues ask for first, so a time budget cuts the least important rows
    'torch-decode-jpeg@16:train stoker-cli-cpu@16:train stoker-cli-cpudec@16:train stoker-cli-mixed@16:train '
    'decode-tv-gpu@16:decode '
    'stoker-py-mixed@16:train stoker-py-cpu@16:train dali-mixed@16:train tv-gpu-batched@16:train '
    'torch-pil@16:train torch-pil@8:train decode-tv-cpu@16:decode decode-stoker-cpu@16:decode '
    'decode-stoker-mixed@16:decode decode-dali-mixed@16:decode torch-decode-jpeg@16:val stoker-cli-cpu@16:val stoker-cli-cpudec@16:val '
    'stoker-cli-mixed@16:val dali-cpu@16:train '
    'stoker-py-mixed@16:val dali-mixed@16:val tv-gpu-batched@16:val torch-pil@16:val '
    'torch-decode-jpeg@16:train+rn50 stoker-py-mixed@16:train+rn50 dali-mixed@16:train+rn50 '
    'tv-gpu-batched@16:train+rn50 stoker-py-cpu@16:train+rn50').split()


class Skip(Exception):
    """The loader cannot run here (missing package, no GPU): a row saying why, not a failure."""


# ------------------------------------------------------------------------------------------------
# Process-tree measurements (Linux /proc), used by the child (CPU) and the parent (memory)
def _children_map():
    children = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat') as f:
                    fields = f.read().rsplit(')', 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except OSError:
                pass
    return children


def process_tree(root):
    children, tree, stack = _children_map(), [], [root]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(children.get(pid, []))
    return tree


def tree_cpu_seconds(root):
    """CPU time of root and all its descendants, the reaped ones included (cutime/cstime)."""
    ticks, total = os.sysconf('SC_CLK_TCK'), 0
    for pid in process_tree(root):
        try:
            with open(f'/proc/{pid}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        except OSError:
            pass
    return total / ticks


def tree_memory_mb(root):
    """Proportional set size of the tree (RSS where smaps_rollup is unreadable), in MB."""
    total_kb = 0
    for pid in process_tree(root):
        for path, key in ((f'/proc/{pid}/smaps_rollup', 'Pss:'), (f'/proc/{pid}/status', 'VmRSS:')):
            try:
                with open(path) as f:
                    total_kb += next(int(line.split()[1]) for line in f if line.startswith(key))
                break
            except (OSError, StopIteration):
                continue
    return total_kb / 1024


def visible_gpu_index():
    """The NVML / nvidia-smi index of the GPU this process's CUDA sees first: CUDA_VISIBLE_DEVICES'
    first entry when it is a number (bench/lease/one-call.sh runs each part on a GPU of its own, with
    CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA's numbering is nvidia-smi's), else 0. NVML ignores
    CUDA_VISIBLE_DEVICES: without this, every part would sample GPU 0."""
    first = os.environ.get('CUDA_VISIBLE_DEVICES', '').split(',')[0].strip()
    return int(first) if first.isdigit() else 0


class GpuSampler:
    """Samples one GPU through NVML (pynvml), else nvidia-smi, else nothing: by default the one
    this process's CUDA sees first (visible_gpu_index)."""
    def __init__(self, index=None):
        index = visible_gpu_index() if index is None else index
        self.query = None
        try:
            import pynvml
            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            def query():
                util = pynvml.nvmlDeviceGetUtilizationRates(handle)
                try:
                    jpeg = pynvml.nvmlDeviceGetJpgUtilization(handle)[0]
                except Exception:
                    jpeg = None
                return pynvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20, util.gpu, jpeg
            self.query = query
        except Exception:
            if shutil.which('nvidia-smi'):
                def query():
                    out = subprocess.run(['nvidia-smi', f'--id={index}', '--format=csv,noheader,nounits',
                                          '--query-gpu=memory.used,utilization.gpu,utilization.jpeg'],
                                         capture_output=True, text=True, timeout=5).stdout.split(',')
                    numbers = [float(x) if x.strip().replace('.', '').isdigit() else None for x in out]
                    return tuple(numbers) if len(numbers) == 3 else (None, None, None)
                self.query = query
        self.idle_mb = self.sample()[0]  # before any child: the call's idle level

    def sample(self):
        try:
            return self.query() if self.query else (None, None, None)
        except Exception:
            return None, None, None

    def settled_baseline(self, slack_mb=256.0, timeout_s=20.0, step_s=0.25):
        """The memory in use just before a child starts, once the previous child's is given back. A
        killed process's device memory goes back some time after it exits (a row right after
        torchvision's once read ~7.5 GB low, its baseline taken while torchvision's memory was
        still held), so this waits until the memory in use is within slack_mb of the idle level
        this sampler saw first, for at most timeout_s. Returns (used MB or None, seconds waited,
        settled: False when the timeout ran out and the row's memory may read low)."""
        started = time.time()
        used = self.sample()[0]
        while (used is not None and self.idle_mb is not None and used > self.idle_mb + slack_mb
               and time.time() - started < timeout_s):
            time.sleep(step_s)
            used = self.sample()[0]
        settled = used is None or self.idle_mb is None or used <= self.idle_mb + slack_mb
        return used, round(time.time() - started, 2), settled


# ------------------------------------------------------------------------------------------------
# The loaders. Each is a generator yielding (images NCHW float on the device, labels on the device,
# number of samples); set-up happens at the first next(), so time to first batch includes it.
def need_torch():
    try:
        import torch, torchvision  # noqa: F401
    except ImportError as error:
        raise Skip(f'torch not installed ({error.name})')
    return torch


def image_folder_samples(root):
    from torchvision.datasets.folder import ImageFolder
    return ImageFolder(root).samples


_NORMALIZE = {}


def normalize_constants(device):
    """ImageNet mean and std in 0-255 units as (1, 3, 1, 1) tensors on `device`, made once: building
    them per batch (torch.tensor(list, device="cuda") is a copy from pageable memory that waits for
    the stream) would stall the host at every batch."""
    import torch
    key = str(device)
    if key not in _NORMALIZE:
        _NORMALIZE[key] = (torch.tensor(MEAN, device=device).view(1, 3, 1, 1) * 255,
                           torch.tensor(STD, device=device).view(1, 3, 1, 1) * 255)
    return _NORMALIZE[key]


def finish_on_device(images, labels, device):
    """Host batch (uint8 or normalized float) -> normalized NCHW float and labels on the device."""
    import torch
    images = images.to(device, non_blocking=True)
    labels = labels.to(device, non_blocking=True)
    if images.dtype == torch.uint8:
        mean, std = normalize_constants(device)
        images = (images.float() - mean) / std
    return images, labels


def loop_dataloader(dataset, args, collate_fn=None):
    """Batches of a DataLoader with args.workers processes, epochs looped."""
    torch = need_torch()
    # One sampler over 1000 reshuffled epochs: epochs loop without draining the workers at each
    # boundary, as on a full-size data set (the small benchmark set would otherwise pay it often).
    sampler = torch.utils.data.RandomSampler(dataset, num_samples=len(dataset) * 1000)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch, sampler=sampler, num_workers=args.workers, drop_last=True,
        pin_memory=args.device == 'cuda', persistent_workers=True, collate_fn=collate_fn,
        prefetch_factor=args.prefetch or 2)
    while True:
        yield from loader


def torch_pil(args, mode):
    need_torch()
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder
    augment = [T.RandomResizedCrop(CROP), T.RandomHorizontalFlip()] if mode == 'train' \
        else [T.Resize(VAL_RESIZE), T.CenterCrop(CROP)]
    dataset = ImageFolder(args.data, T.Compose(augment + [T.ToTensor(), T.Normalize(MEAN, STD)]))
    for images, labels in loop_dataloader(dataset, args):
        yield (*finish_on_device(images, labels, args.device), len(labels))


def decode_rgb_uint8(encoded):
    """Encoded JPEG (1-D uint8 tensor) -> CHW uint8 RGB on the CPU with decode_jpeg; PIL where
    libjpeg-turbo in torchvision refuses (some CMYK)."""
    import io, torch
    from torchvision.io import ImageReadMode, decode_jpeg
    try:
        return decode_jpeg(encoded, mode=ImageReadMode.RGB)
    except RuntimeError:
        import numpy as np
        from PIL import Image
        image = Image.open(io.BytesIO(encoded.numpy().tobytes())).convert('RGB')
        return torch.from_numpy(np.asarray(image)).permute(2, 0, 1).contiguous()


def read_rgb_uint8(path):
    from torchvision.io import read_file
    return decode_rgb_uint8(read_file(path))


class DecodeJpegDataset:
    def __init__(self, root, mode):
        from torchvision.transforms import v2
        self.samples = image_folder_samples(root)
        self.mode = mode
        augment = [v2.RandomResizedCrop(CROP, antialias=True), v2.RandomHorizontalFlip()]
        if mode == 'effnet':  # torchvision's AutoAugment on uint8 tensors, ImageNet policy
            augment.append(v2.AutoAugment(v2.AutoAugmentPolicy.IMAGENET))
        self.transform = v2.Compose(augment if mode in ('train', 'effnet')
                                    else [v2.Resize(VAL_RESIZE, antialias=True), v2.CenterCrop(CROP)])

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        image = read_rgb_uint8(path)
        if self.mode == 'decode':  # decode-only: hand back a number, not the pixels
            return image.shape[1]
        return self.transform(image), label


def torch_decode_jpeg(args, mode):
    need_torch()
    for images, labels in loop_dataloader(DecodeJpegDataset(args.data, mode), args):
        yield (*finish_on_device(images, labels, args.device), len(labels))


def decode_tv_cpu(args, mode):
    need_torch()
    for heights in loop_dataloader(DecodeJpegDataset(args.data, 'decode'), args):
        yield None, None, len(heights)


# torchvision's batched GPU decode, fed as a competent user would feed it: DataLoader worker
# processes (args.workers of them, args.prefetch batches each in flight, default 2) read whole batches and
# hand each over as one packed uint8 tensor (one shared-memory block a batch, not 256), pinned by the
# DataLoader's pin thread; one decode thread, on a CUDA stream of its own, cuts it into views and runs
# decode_jpeg(list, device="cuda") up to DECODE_AHEAD_BATCHES batches ahead of the consumer, which
# only waits on each batch's event. Not reader threads: torchvision's call holds the host until the
# engines finish (one global decoder behind a mutex, stream syncs inside), so the engines idle
# whenever the decode thread waits for the GIL, and CPython forces no hand-off to a waiting thread
# while other threads keep passing the GIL among themselves (take_gil asks for a drop only if no
# switch happened in its 5 ms wait). With 16 reader threads this harness measured 6,200 img/s,
# engines 28% busy, against the 10.7-13.9k the issue quotes; bench/tv_gpu_probe.py measures the
# thread readers, these processes and preloaded bytes side by side.
DECODE_AHEAD_BATCHES = 2


def jpeg_frame(data):
    """(SOF marker byte, number of components) of the JPEG in `data` (bytes-like), or None. Walks
    the marker segments from the start of the file, so a thumbnail's frame header inside an APP
    segment is never taken for the image's own."""
    at, size = 2, len(data)
    while at + 4 <= size:
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte before a marker
            at += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # markers without a length
            at += 2
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # SOFn (not DHT, JPG, DAC)
            return (marker, data[at + 9]) if at + 9 < size else None
        if marker in (0xD9, 0xDA):  # end of image or a scan before any frame header
            return None
        at += 2 + ((data[at + 2] << 8) | data[at + 3])
    return None


def gpu_decodable(data):
    """True for a baseline or extended sequential JPEG (SOF0/SOF1) with 1 or 3 components, what the
    batched GPU decode takes; progressive (SOF2) and CMYK (4 components) files are not."""
    frame = jpeg_frame(data)
    return frame is not None and frame[0] in (0xC0, 0xC1) and frame[1] in (1, 3)


def read_batch_for_gpu(paths):
    """Worker-process work for one batch: (packed, sizes, cpu_positions, cpu_images). The files the
    batched GPU decode takes are read straight into one uint8 tensor, back to back (`sizes`: their
    lengths in batch order); the others (progressive, CMYK: found by walking the JPEG markers) are
    decoded here on the CPU to CHW uint8 RGB (`cpu_images`, at batch positions `cpu_positions`), so
    one such file never sends the whole batch down a one-by-one path."""
    import torch
    sizes = [os.stat(path).st_size for path in paths]
    packed = torch.empty(sum(sizes), dtype=torch.uint8)
    buffer = memoryview(packed.numpy())
    kept, cpu_positions, cpu_images, at = [], [], [], 0
    for position, (path, size) in enumerate(zip(paths, sizes)):
        with open(path, 'rb') as f:  # at most `size` bytes: a file that grew since is cut short
            got = f.readinto(buffer[at:at + size])
        data = buffer[at:at + got]
        if got and gpu_decodable(data):
            kept.append(got)
            at += got
        else:  # overwritten by the next file
            cpu_positions.append(position)
            encoded = torch.frombuffer(bytearray(data), dtype=torch.uint8) if got else torch.empty(0, dtype=torch.uint8)
            cpu_images.append(decode_rgb_uint8(encoded))
    return packed[:at], torch.tensor(kept, dtype=torch.int64), cpu_positions, cpu_images


class GpuReadBatches:
    """DataLoader dataset whose item k is batch k of shuffled epochs (drop-last), as
    read_batch_for_gpu's tuple plus the labels. Workers compute the same order per epoch."""

    def __init__(self, samples, batch):
        self.samples, self.batch = samples, batch
        self.per_epoch = max(1, len(samples) // batch)
        self.epoch, self.order = None, None

    def __len__(self):
        return self.per_epoch * 1000  # many reshuffled epochs, looped without draining the workers

    def __getitem__(self, index):
        import random, torch
        epoch, at = divmod(index, self.per_epoch)
        if epoch != self.epoch:
            self.order = list(range(len(self.samples)))
            random.Random(42 + epoch).shuffle(self.order)
            self.epoch = epoch
        chosen = [self.samples[i] for i in self.order[at * self.batch:(at + 1) * self.batch]]
        return (*read_batch_for_gpu([path for path, _ in chosen]), torch.tensor([label for _, label in chosen]))


def encoded_batches(args):
    """(list of items, labels tensor) per batch: an item is (encoded 1-D uint8 tensor, None) for the
    batched GPU decode or (None, CHW uint8 RGB image decoded on the CPU). Read by args.workers
    DataLoader worker processes, args.prefetch batches each ahead of the caller."""
    import torch
    samples = image_folder_samples(args.data)
    if len(samples) < args.batch:
        raise RuntimeError(f'{len(samples)} images in {args.data}: fewer than one batch of {args.batch}')
    loader = torch.utils.data.DataLoader(
        GpuReadBatches(samples, args.batch), batch_size=None, num_workers=max(1, args.workers),
        prefetch_factor=args.prefetch or 2, persistent_workers=True, pin_memory=True)
    for packed, sizes, cpu_positions, cpu_images, labels in loader:
        sizes = sizes.tolist()
        views = iter(packed.split(sizes) if sizes else ())  # contiguous views, no copies
        on_cpu = dict(zip(cpu_positions, cpu_images))
        yield [(None, on_cpu[i]) if i in on_cpu else (next(views), None) for i in range(len(labels))], labels


def decode_on_gpu(items):
    """One decode_jpeg(list, device="cuda") call for the files it takes; the CPU-decoded rest are
    uploaded. Returns CHW uint8 RGB images on the GPU in the batch's order."""
    from torchvision.io import ImageReadMode, decode_jpeg
    encoded = [data for data, _ in items if data is not None]
    decoded = iter(decode_jpeg(encoded, mode=ImageReadMode.RGB, device='cuda') if encoded else [])
    return [next(decoded) if data is not None else image.cuda(non_blocking=True) for data, image in items]


def gpu_decoded_batches(args):
    """(list of CHW uint8 RGB images on the GPU, labels on the GPU) per batch, ready to use on the
    caller's current stream. A decode thread works on its own stream, DECODE_AHEAD_BATCHES ahead;
    the caller's stream waits on each batch's event and the images are recorded on it, so the
    caching allocator does not reuse their memory for a later decode while the caller reads them.
    The reader's worker processes are started here, before the decode thread exists."""
    import itertools, queue, torch
    consumer, decode_stream = torch.cuda.current_stream(), torch.cuda.Stream()
    reader = encoded_batches(args)
    reader = itertools.chain([next(reader)], reader)
    ready = queue.Queue(maxsize=DECODE_AHEAD_BATCHES)
    def decode_loop():
        try:
            with torch.cuda.stream(decode_stream):
                for items, labels in reader:
                    images, labels = decode_on_gpu(items), labels.cuda(non_blocking=True)
                    ready.put((images, labels, decode_stream.record_event()))
        except BaseException as error:  # handed to the consumer: the row says what failed
            ready.put(error)
    threading.Thread(target=decode_loop, daemon=True, name='tv-decoder').start()
    while True:
        item = ready.get()
        if isinstance(item, BaseException):
            raise item
        images, labels, decoded = item
        consumer.wait_event(decoded)
        for tensor in (*images, labels):
            tensor.record_stream(consumer)
        yield images, labels


def random_resized_crop_window(height, width, rng, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """(top, left, height, width) of a random crop, drawn as torchvision's RandomResizedCrop draws
    it (area share uniform in scale, log aspect ratio uniform in ratio, ten tries, then the whole
    image clamped to the ratio range), with Python's random instead of one-element torch tensors, so
    the per-image cost on the host is microseconds."""
    import math
    area, log_low, log_high = height * width, math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(log_low, log_high))
        crop_w, crop_h = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
        if 0 < crop_w <= width and 0 < crop_h <= height:
            return rng.randint(0, height - crop_h), rng.randint(0, width - crop_w), crop_h, crop_w
    if width / height < ratio[0]:
        crop_w, crop_h = width, min(height, round(width / ratio[0]))
    elif width / height > ratio[1]:
        crop_h, crop_w = height, min(width, round(height * ratio[1]))
    else:
        crop_w, crop_h = width, height
    return (height - crop_h) // 2, (width - crop_w) // 2, crop_h, crop_w


def gpu_crop_resize(images, mode, rng):
    """Per-image crop window then bilinear antialiased resize to 224, flip, normalize: NCHW float."""
    import torch
    import torch.nn.functional as F
    device = images[0].device
    resized = []
    for image in images:
        height, width = image.shape[1:]
        if mode == 'train':
            top, left, crop_h, crop_w = random_resized_crop_window(height, width, rng)
        else:  # the centre window that resize-shorter-256 + centre-crop-224 would keep
            crop_h = crop_w = round(min(height, width) * CROP / VAL_RESIZE)
            top, left = (height - crop_h) // 2, (width - crop_w) // 2
        window = image[None, :, top:top + crop_h, left:left + crop_w].float()
        resized.append(F.interpolate(window, size=(CROP, CROP), mode='bilinear', antialias=True))
    out = torch.cat(resized)
    if mode == 'train':
        flip = torch.rand(len(images), device=device) < 0.5
        out = torch.where(flip.view(-1, 1, 1, 1), out.flip(3), out)
    mean, std = normalize_constants(device)
    return (out - mean) / std


def tv_gpu_batched(args, mode):
    import random
    need_torch()
    rng = random.Random(7)
    for images, labels in gpu_decoded_batches(args):
        yield gpu_crop_resize(images, mode, rng), labels, len(labels)


def decode_tv_gpu(args, mode):
    need_torch()
    for images, _ in gpu_decoded_batches(args):
        yield images[-1], None, len(images)


def rn50_graph(fn, data_dir, mode, decoder_device, device, float_type, decoder_options, normalize_device=None,
               reader_options=None):
    """DALI's ResNet-50 example pipeline, also spelled this way in stoker (same work as the
    PyTorch loaders: torchvision's crop area [0.08, 1] and aspect [3/4, 4/3] rather than the
    example's [0.1, 1] and [0.8, 1.25]). normalize_device "gpu" with device "cpu" is the example's
    --dali_cpu layout: crop_mirror_normalize reads images.gpu(). reader_options: readers.file's
    extra arguments (read_ahead)."""
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, name='Reader', **(reader_options or {}))
    if mode == 'train':
        images = fn.decoders.image_random_crop(jpegs, device=decoder_device, random_area=[0.08, 1.0],
                                               random_aspect_ratio=[3 / 4, 4 / 3], num_attempts=10,
                                               **decoder_options)
        images = fn.resize(images, device=device, resize_x=CROP, resize_y=CROP)
        mirror = fn.random.coin_flip(probability=0.5)
    else:
        images = fn.decoders.image(jpegs, device=decoder_device, **decoder_options)
        images = fn.resize(images, device=device, resize_shorter=VAL_RESIZE)
        mirror = False
    normalize_device = normalize_device or device
    if normalize_device == 'gpu' and device == 'cpu':
        images = images.gpu()
    images = fn.crop_mirror_normalize(images, device=normalize_device, dtype=float_type, output_layout='CHW',
                                      crop=(CROP, CROP), mean=[m * 255 for m in MEAN],
                                      std=[s * 255 for s in STD], mirror=mirror)
    return images, labels


def effnet_graph(fn, auto_augment, data_dir, decoder_device, device, float_type, decoder_options,
                 normalize_device=None):
    """DALI's EfficientNet example training shape (image_classification/dali.py: random-resized
    crop decoded, resize, flip before AutoAugment, AutoAugment's ImageNet policy, normalize), with
    the crop area and aspect of rn50_graph; auto_augment is nvidia.dali.auto_aug.auto_augment or
    stoker.auto_aug.auto_augment. Needs enable_conditionals=True (DALI's auto_aug does)."""
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, name='Reader')
    images = fn.decoders.image_random_crop(jpegs, device=decoder_device, random_area=[0.08, 1.0],
                                           random_aspect_ratio=[3 / 4, 4 / 3], num_attempts=10, **decoder_options)
    images = fn.resize(images, device=device, resize_x=CROP, resize_y=CROP)
    images = fn.flip(images, horizontal=fn.random.coin_flip(probability=0.5))
    images = auto_augment.auto_augment_image_net(images, shape=[CROP, CROP])
    normalize_device = normalize_device or device
    if normalize_device == 'gpu' and device == 'cpu':
        images = images.gpu()
    images = fn.crop_mirror_normalize(images, device=normalize_device, dtype=float_type, output_layout='CHW',
                                      crop=(CROP, CROP), mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD])
    return images, labels


def iterate_classification(iterator, device):
    while True:
        for batch in iterator:
            batch = batch[0] if isinstance(batch, (list, tuple)) else batch
            images, labels = batch['data'], batch['label'].view(-1).long()
            yield (*finish_on_device(images, labels, device), len(labels))


def dali_fn():
    """(fn, pipeline_def, types) of nvidia.dali, or Skip naming the install script."""
    need_torch()
    try:
        from nvidia.dali import fn, pipeline_def, types
    except ImportError as error:
        raise Skip(f'nvidia.dali not importable ({error}); see bench/dali_wheels.sh')
    return fn, pipeline_def, types


def dali_decoder_options(args, on_gpu):
    """The mixed decoder's arguments of a DALI row: the ResNet-50 example's preallocation (sized for
    ImageNet's largest images; not with the row's prealloc=0), hw_decoder_load from the row's hw_load knob, and for cuda_load > 0
    hybrid_huffman_threshold=0 (DALI's closest knob to a CUDA-decoder share: module docstring).
    {} for the CPU decoder."""
    if not on_gpu:
        return {}
    options = {} if getattr(args, 'prealloc', None) == 0 else dict(
        device_memory_padding=211025920, host_memory_padding=140544512, preallocate_width_hint=5980,
        preallocate_height_hint=6430)
    if args.hw_load is not None:
        options['hw_decoder_load'] = args.hw_load
    if args.cuda_load:
        options['hybrid_huffman_threshold'] = 0
    return options


def reader_options(args):
    """readers.file's arguments a row sets: {'read_ahead': bool} when it sets read_ahead, else {}."""
    ahead = getattr(args, 'read_ahead', None)
    return {} if ahead is None else {'read_ahead': bool(ahead)}


def dali(args, mode, decoder):
    fn, pipeline_def, types = dali_fn()
    try:
        from nvidia.dali.plugin.pytorch import DALIClassificationIterator
    except ImportError as error:
        raise Skip(f'nvidia.dali.plugin.pytorch not importable ({error}); see bench/dali_wheels.sh')
    on_gpu = decoder == 'mixed'
    normalize = 'gpu' if args.device == 'cuda' else 'cpu'  # the example's --dali_cpu: normalize on the GPU
    if mode == 'effnet':
        try:
            from nvidia.dali.auto_aug import auto_augment
        except ImportError as error:
            raise Skip(f'nvidia.dali.auto_aug not importable ({error})')
        pipe = pipeline_def(effnet_graph, enable_conditionals=True)(
            fn, auto_augment, args.data, decoder, 'gpu' if on_gpu else 'cpu', types.FLOAT,
            dali_decoder_options(args, on_gpu), normalize, batch_size=args.batch, num_threads=args.workers,
            device_id=0 if args.device == 'cuda' else None, seed=42, prefetch_queue_depth=args.prefetch or 2)
        pipe.build()
        yield from iterate_classification(DALIClassificationIterator(pipe, reader_name='Reader', auto_reset=True),
                                          args.device)
        return
    pipe = pipeline_def(rn50_graph)(
        fn, args.data, mode, decoder, 'gpu' if on_gpu else 'cpu', types.FLOAT, dali_decoder_options(args, on_gpu),
        normalize, reader_options(args), batch_size=args.batch, num_threads=args.workers,
        device_id=0 if args.device == 'cuda' else None, seed=42, prefetch_queue_depth=args.prefetch or 2)
    pipe.build()
    yield from iterate_classification(DALIClassificationIterator(pipe, reader_name='Reader', auto_reset=True),
                                      args.device)


def dali_decode_graph(fn, types, data_dir, decoder_options, reader_options):
    """Decode-only, as decode-stoker-mixed's pipeline file: the files shuffled, decoded to HWC uint8
    RGB on the GPU; labels stay on the host."""
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, name='Reader', **reader_options)
    images = fn.decoders.image(jpegs, device='mixed', output_type=types.RGB, **decoder_options)
    return images, labels


def decode_dali_mixed(args, mode):
    """DALI's mixed decoder alone: pipe.run() per batch (prefetch_queue_depth batches in flight),
    the outputs left in DALI's buffers (no copy into torch, which would be work the other decode
    rows do not do), bound to torch's current stream where DALI allows it (else host-synchronous);
    the protocol's device synchronize covers DALI's streams."""
    fn, pipeline_def, types = dali_fn()
    pipe = pipeline_def(dali_decode_graph)(
        fn, types, args.data, dali_decoder_options(args, True), reader_options(args),
        batch_size=args.batch, num_threads=args.workers,
        device_id=0, seed=42, prefetch_queue_depth=args.prefetch or 2)
    pipe.build()
    import torch
    stream = torch.cuda.current_stream().cuda_stream
    try:  # outputs ordered on torch's stream, as stoker's and torchvision's are used (DALI's dynamic executor)
        images, _ = pipe.run(stream)
    except (TypeError, ValueError):  # no stream argument, or "Asynchronous outputs require dynamic execution":
        # host-synchronous outputs, DALI's default
        stream = None
        images, _ = pipe.run()
    while True:
        yield None, None, len(images)
        images, _ = pipe.run(stream) if stream is not None else pipe.run()


def stoker_py(args, mode, decoder):
    need_torch()
    try:
        import stoker
        import stoker.torch as stoker_torch
    except ImportError as error:
        raise Skip(f'stoker Python package not importable ({error})')
    float_type = getattr(getattr(stoker, 'types', None), 'FLOAT', 'float')
    on_gpu, has_gpu = decoder == 'mixed', args.device == 'cuda'
    options = {'hw_decoder_load': args.hw_load} if on_gpu and args.hw_load is not None else {}
    if on_gpu and args.cuda_load is not None:
        options['cuda_decoder_load'] = args.cuda_load
    if on_gpu and os.environ.get('STOKER_BENCH_VALIDATE') in ('0', '1'):  # the mixed decoder's entropy check
        options['validate_entropy'] = os.environ['STOKER_BENCH_VALIDATE'] == '1'
    common = dict(batch_size=args.batch, num_threads=args.workers, device_id=0 if has_gpu else -1, seed=42,
                  prefetch_queue_depth=args.prefetch)  # None: stoker's default (decided at build)
    if mode == 'effnet':
        try:
            from stoker.auto_aug import auto_augment
        except ImportError as error:
            raise Skip(f'stoker.auto_aug not importable ({error})')
        pipe = stoker.pipeline_def(effnet_graph, enable_conditionals=True)(
            stoker.fn, auto_augment, args.data, decoder, 'gpu' if on_gpu else 'cpu', float_type, options,
            'gpu' if has_gpu else 'cpu', **common)
    else:
        pipe = stoker.pipeline_def(rn50_graph)(
            stoker.fn, args.data, mode, decoder, 'gpu' if on_gpu else 'cpu', float_type, options,
            'gpu' if has_gpu else 'cpu', **common)
    pipe.build()
    STOKER_PIPES[:] = [pipe]  # measure() reads its counters once the window is over
    iterator = stoker_torch.ClassificationIterator(pipe, reader_name='Reader', auto_reset=True)
    yield from iterate_classification(iterator, args.device)


STOKER_PIPES = []  # the stoker pipeline of this (child) process's run, if any


def stoker_route(row):
    """The mixed decoder's routing record and how many images each decoder took over the whole run
    (warm-up included), from the run's stoker pipeline (its stats), into row: what the router
    chose in that run."""
    if not STOKER_PIPES:
        return
    stats = STOKER_PIPES[0].stats()
    if stats.get('decoder_route'):
        row['decoder_route'] = stats['decoder_route']
    row['decoded'] = {k[len('decoded_'):]: stats[k] for k in ('decoded_hw', 'decoded_cpu', 'decoded_cuda', 'decoded_hybrid')
                      if k in stats}


# rn50-train / rn50-val as src/core/pipeline_builtin.c spells them for the mixed decoder, with
# the decoder's knobs ({knobs}: mixed_knobs) and the reader's ({reader}: reader_options) written
# out: `stoker bench` has no flag for hw_decoder_load, cuda_decoder_load or read_ahead, so a row
# that sets hw_load, cuda_load or read_ahead runs this file (the same graph as the built-in:
# bench/selftest.sh compares the two's output digests with the devices set to cpu).
STOKER_MIXED_TEXT = {
    'train': 'jpegs, labels = readers.file(random_shuffle=True, name="Reader"{reader})\n'
             'decoded = decoders.image_random_crop(jpegs, device="mixed", output_type="RGB"{knobs})\n'
             'resized = resize(decoded, device="gpu", resize_x=224, resize_y=224)\n'
             'coin = random.coin_flip(probability=0.5)\n'
             'images = crop_mirror_normalize(resized, device="gpu", dtype="float", output_layout="CHW", crop=[224, 224],'
             ' mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375], mirror=coin)\n'
             'outputs(images, labels)\n',
    'val': 'jpegs, labels = readers.file(random_shuffle=False, name="Reader"{reader})\n'
           'decoded = decoders.image(jpegs, device="mixed", output_type="RGB"{knobs})\n'
           'resized = resize(decoded, device="gpu", resize_shorter=256)\n'
           'images = crop_mirror_normalize(resized, device="gpu", dtype="float", output_layout="CHW", crop=[224, 224],'
           ' mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375])\n'
           'outputs(images, labels)\n',
}


def mixed_knobs(args):
    """The mixed decoder's arguments a row sets, as ', hw_decoder_load=H, cuda_decoder_load=C' ('' for none)."""
    knobs = f', hw_decoder_load={args.hw_load:g}' if args.hw_load is not None else ''
    return knobs + (f', cuda_decoder_load={args.cuda_load:g}' if args.cuda_load is not None else '')


def stoker_pipeline_file(args, mode, device):
    """The --pipeline argument for a stoker CLI row: the built-in name, or a file written to a
    temporary folder for decode-only rows and for mixed rows with hw_load, cuda_load or read_ahead set."""
    mixed = device == 'gpu'
    ahead = ''.join(f', {k}={v}' for k, v in reader_options(args).items())
    if mode == 'decode':  # reader + decoder only
        load = mixed_knobs(args) if mixed else ''
        text = (f'files, labels = readers.file(file_root="{args.data}", random_shuffle=True{ahead})\n'
                f'images = decoders.image(files, device="{"mixed" if mixed else "cpu"}"{load})\n'
                'outputs(images, labels)\n')
    elif mixed and (mixed_knobs(args) or ahead):
        text = STOKER_MIXED_TEXT[mode].format(knobs=mixed_knobs(args), reader=ahead)
    else:
        return f'rn50-{mode}'
    path = os.path.join(tempfile.mkdtemp(), f'{mode}.pipe')
    with open(path, 'w') as f:
        f.write(text)
    return path


def stoker_cli_run(args, mode, device):
    """Runs `stoker bench --json` once with the protocol's clock (--warmup, --seconds; the CLI
    ends its window with a device synchronize); returns the row fields (its own timing and
    counters, which cover the window only)."""
    binary = args.stoker
    if not (binary and os.path.exists(binary)):
        raise Skip(f'stoker CLI not found at {binary} (build it or pass --stoker)')
    device, _, decoder = device.partition(':')
    if decoder == 'cpu' and (args.hw_load is not None or args.cuda_load is not None):
        raise Skip('hw_load or cuda_load set on a row without the mixed decoder')
    pipeline = stoker_pipeline_file(args, mode, device)
    epoch = getattr(args, 'epoch_images', 0) > 0  # a cold row: one whole epoch from the build (measure())
    warmup = max(args.warmup, 0.001)  # the window starts after the first batch, as measure()'s
    clock = ['--warmup', '0', '--epochs', '1'] if epoch else ['--warmup', f'{warmup:g}', '--seconds', f'{args.seconds:g}']
    command = [binary, 'bench', '--data', args.data, '--pipeline', pipeline, '--device', device,
               *(['--decoder', decoder] if decoder else []), '--batch', str(args.batch), '--threads', str(args.workers),
               *(['--prefetch', str(args.prefetch)] if args.prefetch else []), *clock, '--json', '--no-digest']
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.warmup + args.seconds * 2 + 90)
    ended = time.time()
    if done.returncode != 0:
        raise RuntimeError(f'{" ".join(command)} exited {done.returncode}: {done.stderr.strip()[-400:]}')
    text = done.stdout.strip()
    try:  # one JSON object, on one line or pretty-printed, maybe after other lines
        report = json.loads(text[text.index('{'):])
    except ValueError:
        report = json.loads(text.splitlines()[-1] if text else '')
    if report.get('interrupted') or not epoch and not report.get('warmup_seconds', 0) and args.warmup > 0:
        raise RuntimeError(f'stoker bench ended inside its warm-up or was interrupted: {text[-300:]}')
    row = {'command': ' '.join(command), 'stoker': report, 'images': report.get('images'),
           'seconds': report.get('seconds'), 'images_per_s': report.get('images_per_second'),
           'warmup_s': report.get('warmup_seconds'), 'time_to_first_batch_s': report.get('time_to_first_batch_s'),
           'cpu_cores_busy': report.get('cpu_cores_busy'), 'device_bytes_held_mb': report.get('device_bytes_held', 0) / 2**20,
           'window_start': ended - (report.get('seconds') or 0), 'window_end': ended}  # for the GPU samples
    if epoch:  # timed from the build: start-up and the whole first epoch
        seconds = report.get('seconds_since_build')
        if not seconds:
            raise RuntimeError(f'stoker bench reported no seconds_since_build (an older CLI?): {text[-300:]}')
        row.update(seconds=seconds, images_per_s=row['images'] / seconds, window_start=ended - seconds,
                   cold_clock='first epoch from the build')
    if mode != 'decode' and pipeline.endswith('.pipe'):
        row['pipeline_text'] = open(pipeline).read()
    return row


LOADER_FUNCTIONS = {
    'torch-pil': torch_pil, 'torch-decode-jpeg': torch_decode_jpeg, 'tv-gpu-batched': tv_gpu_batched,
    'dali-mixed': lambda a, m: dali(a, m, 'mixed'), 'dali-cpu': lambda a, m: dali(a, m, 'cpu'),
    'stoker-py-cpu': lambda a, m: stoker_py(a, m, 'cpu'), 'stoker-py-mixed': lambda a, m: stoker_py(a, m, 'mixed'),
    'decode-tv-cpu': decode_tv_cpu, 'decode-tv-gpu': decode_tv_gpu, 'decode-dali-mixed': decode_dali_mixed,
}
CLI_LOADERS = {'stoker-cli-cpu': 'cpu', 'stoker-cli-cpudec': 'gpu:cpu', 'stoker-cli-mixed': 'gpu',
               'decode-stoker-cpu': 'cpu', 'decode-stoker-mixed': 'gpu'}  # device[:decoder]


# ------------------------------------------------------------------------------------------------
# Child: one loader, one mode, measured
def resnet50_step_factory(device='cuda'):
    import torch, torchvision
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50().to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    def step(images, labels):
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = loss_fn(model(images.contiguous(memory_format=torch.channels_last)), labels % 1000)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return step


def synthetic_step_seconds(step, batch, device='cuda', warmup=5, steps=10):
    import torch
    sync = torch.cuda.synchronize if device == 'cuda' else (lambda: None)
    images = torch.randn(batch, 3, CROP, CROP, device=device)
    labels = torch.randint(0, 1000, (batch,), device=device)
    for _ in range(warmup):
        step(images, labels)
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step(images, labels)
    sync()
    return (time.perf_counter() - start) / steps


def measure(args, mode):
    """Runs the loader; returns its row fields. Raises Skip or any error of the loader."""
    base_mode, train_view = mode.split('+')[0], mode.endswith('+rn50')
    if args.device != 'cuda' and (args.loader in NEEDS_CUDA or train_view):
        raise Skip('needs a CUDA device')
    if args.loader in CLI_LOADERS:
        if train_view:
            raise Skip('the C CLI has no training consumer; see the stoker-py rows')
        return stoker_cli_run(args, base_mode, CLI_LOADERS[args.loader])
    torch = need_torch()
    if args.device == 'cuda' and not torch.cuda.is_available():
        raise Skip('torch sees no CUDA device')
    sync = torch.cuda.synchronize if args.device == 'cuda' else (lambda: None)
    row = {}
    step = None
    if train_view:
        step = resnet50_step_factory()
        row['step_s_synthetic'] = synthetic_step_seconds(step, args.batch)
    # The protocol's clock (bench/protocol.py), as `stoker bench` keeps it: the warm-up runs from the
    # first batch (so set-up never eats into it) for at least args.warmup seconds; the window then
    # counts the images of every batch delivered until args.seconds have passed, and ends with a
    # device-wide synchronize (every stream of this process, the loader's own included).
    cold = getattr(args, 'epoch_images', 0) > 0  # a cold row: from the loader's creation to its first epoch's end
    cpu_at_creation, created_at = (tree_cpu_seconds(os.getpid()), time.time()) if cold else (None, None)
    start = time.perf_counter()
    batches = LOADER_FUNCTIONS[args.loader](args, base_mode)
    data, labels, count = next(batches)
    sync()
    first = time.perf_counter()
    row['time_to_first_batch_s'] = first - start
    if cold:
        images = count
        while images < args.epoch_images:
            data, labels, count = next(batches)
            images += count
        sync()
        wall = time.perf_counter() - start
        row.update(window_start=created_at, window_end=time.time(), images=images, seconds=wall,
                   images_per_s=images / wall, cpu_cores_busy=(tree_cpu_seconds(os.getpid()) - cpu_at_creation) / wall,
                   cold_clock='first epoch from the loader\'s creation')
        return row
    warmup_images = count
    while time.perf_counter() - first < args.warmup:
        data, labels, count = next(batches)
        if step:
            step(data, labels)
        warmup_images += count
    sync()
    cpu_before, start, images, steps = tree_cpu_seconds(os.getpid()), time.perf_counter(), 0, 0
    row.update(window_start=time.time(), warmup_s=start - first, warmup_images=warmup_images)
    while time.perf_counter() - start < args.seconds:
        data, labels, count = next(batches)
        if step:
            step(data, labels)
            steps += 1
        images += count
    sync()
    wall = time.perf_counter() - start
    row.update(window_end=time.time(), images=images, seconds=wall, images_per_s=images / wall,
               cpu_cores_busy=(tree_cpu_seconds(os.getpid()) - cpu_before) / wall)
    if step:
        lost = max(0.0, wall - steps * row['step_s_synthetic'])
        row.update(gpu_wait_s=lost, gpu_wait_share=lost / wall)
    if args.device == 'cuda':
        row['device_mem_torch_mb'] = torch.cuda.max_memory_reserved() / 2**20
    stoker_route(row)
    return row


def child_main(args):
    row = {'status': 'ok'}
    try:
        row.update(measure(args, args.mode))
    except Skip as reason:
        row = {'status': 'skipped', 'error': str(reason)}
    except Exception as error:
        row = {'status': 'error', 'error': f'{type(error).__name__}: {error}'[:600]}
        traceback.print_exc()
    with open(args.result_file, 'w') as f:
        json.dump(row, f)
    sys.stdout.flush()
    # End this run's whole process group (this child leads it) now, DataLoader workers and loader
    # threads included, so that nothing of it goes on using CPU during the next run.
    if os.getpgid(0) == os.getpid():  # started by the parent in a session of its own
        os.killpg(0, signal.SIGKILL)
    os._exit(0)


# ------------------------------------------------------------------------------------------------
# Parent: plan, run each child, sample it, collect rows
def parse_run(token):
    """A run token LOADER[@N]:MODE[,prefetch=P][,hw_load=F][,cuda_load=F] -> the run's dict (loader,
    workers, mode, prefetch, hw_load, cuda_load, setting, setting_text); exits naming the token and
    what is wrong."""
    from protocol import setting_text
    loader_part, rest = token.split(':', 1) if ':' in token else (token, 'train')
    mode, *knobs = rest.split(',')
    loader, _, workers = loader_part.partition('@')
    if loader not in PIPELINE_LOADERS and loader not in DECODE_LOADERS:
        raise SystemExit(f'peers: unknown loader {loader!r} in {token!r} (see --list)')
    if mode not in ('train', 'val', 'decode', 'train+rn50', 'effnet') or (mode == 'decode') != (loader in DECODE_LOADERS) \
            or (mode == 'effnet' and loader not in EFFNET_LOADERS):
        raise SystemExit(f'peers: bad mode {mode!r} for {loader} (decode-* loaders take "decode", others '
                         f'train/val/train+rn50; effnet: {", ".join(sorted(EFFNET_LOADERS))})')
    run = {'loader': loader, 'workers': 16, 'mode': mode, 'prefetch': None, 'hw_load': None, 'cuda_load': None,
           'read_ahead': None, 'prealloc': None}
    try:
        run['workers'] = int(workers or 16)
        for knob in knobs:
            name, _, value = knob.partition('=')
            if name == 'prefetch':
                run['prefetch'] = int(value)
            elif name in ('hw_load', 'cuda_load') and loader in HW_LOAD_LOADERS:
                run[name] = float(value)
            elif ((name == 'read_ahead' and loader in READ_AHEAD_LOADERS) or
                  (name == 'prealloc' and loader in PREALLOC_LOADERS)) and value in ('0', '1'):
                run[name] = int(value)
            else:
                raise ValueError(f'unknown knob {knob!r} for {loader} (prefetch=P; hw_load=F, cuda_load=F on '
                                 f'{", ".join(sorted(HW_LOAD_LOADERS))}; read_ahead=0|1 on '
                                 f'{", ".join(sorted(READ_AHEAD_LOADERS))}; prealloc=0|1 on '
                                 f'{", ".join(sorted(PREALLOC_LOADERS))})')
        if run['workers'] < 1 or (run['prefetch'] or 1) < 1 or not all(0 <= (run[k] or 0) <= 1 for k in ('hw_load', 'cuda_load')):
            raise ValueError('workers and prefetch must be >= 1, hw_load and cuda_load within [0, 1]')
    except ValueError as error:
        raise SystemExit(f'peers: bad run token {token!r}: {error}')
    run['setting'] = {k: run[k] for k in ('workers', 'prefetch', 'hw_load', 'cuda_load', 'read_ahead', 'prealloc')
                      if run[k] is not None}
    run['setting_text'] = setting_text(run['setting'])
    return run


def run_child(run, dataset, data_dir, args, gpu):
    result_file = tempfile.NamedTemporaryFile(suffix='.json', delete=False).name
    command = [sys.executable, os.path.abspath(__file__), '--child', run['loader'], '--mode', run['mode'],
               '--data', data_dir, '--workers', str(run['workers']), '--batch', str(args.batch),
               '--seconds', str(args.seconds), '--warmup', str(args.warmup), '--device', args.device,
               *(['--prefetch', str(run['prefetch'])] if run['prefetch'] else []), *(['--hw-load', str(run['hw_load'])] if run['hw_load'] is not None else []),
               *(['--cuda-load', str(run['cuda_load'])] if run['cuda_load'] is not None else []),
               *(['--read-ahead', str(run['read_ahead'])] if run.get('read_ahead') is not None else []),
               *(['--prealloc', str(run['prealloc'])] if run.get('prealloc') is not None else []),
               *(['--epoch-images', str(args.epoch_images)] if getattr(args, 'epoch_images', 0) > 0 else []),
               '--stoker', args.stoker or '', '--result-file', result_file]
    row = {'dataset': dataset, **run, 'description': {**PIPELINE_LOADERS, **DECODE_LOADERS}[run['loader']]}
    return run_sampled_child(command, result_file, row, args.warmup + args.seconds * 2 + args.child_timeout, gpu)


def run_sampled_child(command, result_file, row, limit_s, gpu):
    """Runs command (a benchmark child that writes its row as JSON to result_file) in a session of its
    own and samples it until it exits or limit_s have passed: its process tree's peak host memory
    each second, NVML's device memory and utilisation twice a second. Returns row updated with the
    child's own row (or why there is none: timeout, crash), the peak host MB, the device memory used
    above the settled baseline over the child's whole life, and the mean SM / JPEG utilisation over
    its timed window. bench/peers.py's loaders and bench/ops_micro.py's operators run through it."""
    baseline, baseline_wait_s, baseline_settled = gpu.settled_baseline()
    samples, peak_mb, started = [], 0.0, time.time()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    log = []
    reader = threading.Thread(target=lambda: log.extend(child.stdout), daemon=True)
    reader.start()
    deadline = started + limit_s
    tick = 0
    while child.poll() is None and time.time() < deadline:
        if tick % 2 == 0:  # host memory each second (reading smaps costs CPU), GPU twice a second
            peak_mb = max(peak_mb, tree_memory_mb(child.pid))
        samples.append((time.time(), *gpu.sample()))
        tick += 1
        time.sleep(0.5)
    timed_out = child.poll() is None
    try:
        os.killpg(child.pid, signal.SIGKILL)  # the child's own session: whatever of it is left
    except ProcessLookupError:
        pass
    child.wait()
    if timed_out:
        row.update(status='timeout', error=f'no result after {deadline - started:.0f} s')
    else:
        try:
            with open(result_file) as f:
                row.update(json.load(f))
        except (OSError, ValueError):
            row.update(status='crashed', error=f'exit code {child.returncode}: ' + ''.join(log)[-600:])
    os.unlink(result_file)
    reader.join(timeout=1)
    if row.get('status') == 'error':
        row['log_tail'] = ''.join(log)[-1500:]
    row['peak_host_mb'] = round(peak_mb, 1)
    window = [s for s in samples if row.get('window_start', 0) <= s[0] <= row.get('window_end', 0)]
    used = [s[1] for s in samples if s[1] is not None]
    if used and baseline is not None:  # NVML, the same for every loader: the child's whole life
        row['device_mem_used_mb'] = max(used) - baseline
        row['device_baseline_mb'], row['device_baseline_wait_s'] = round(baseline, 1), baseline_wait_s
        if not baseline_settled:
            row['device_baseline_note'] = (f'the previous child\'s memory had not gone back after {baseline_wait_s} s: '
                                           'this row\'s device MB may read low')
    for key, index in (('gpu_util_mean', 2), ('jpeg_util_mean', 3)):
        values = [s[index] for s in window if s[index] is not None]
        if values:
            row[key] = sum(values) / len(values)
    row['child_wall_s'] = round(time.time() - started, 1)
    return row


VERSIONS_SCRIPT = """
import json, sys
found = {}
try:
    import torch
    found.update(torch=torch.__version__, torch_cuda=torch.version.cuda,
                 gpu_torch=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
except Exception as error:
    found['torch'] = f'not importable ({type(error).__name__})'
try:
    import torchvision
    found['torchvision'] = torchvision.__version__
except Exception as error:
    found['torchvision'] = f'not importable ({type(error).__name__})'
try:
    import nvidia.dali
    found['dali'] = nvidia.dali.__version__
except Exception as error:
    found['dali'] = f'not importable ({type(error).__name__})'
try:
    import stoker
    found['stoker_python'] = getattr(stoker, '__version__', 'importable')
except Exception as error:
    found['stoker_python'] = f'not importable ({type(error).__name__})'
print(json.dumps(found))
"""


def _command_output(command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_description(stoker_cli=None):
    """Provenance of a run: commit (env COMMIT, else git), machine, GPU and driver (nvidia-smi),
    CUDA runtime (nvidia-smi's banner and torch's), the versions of stoker's CLI and of each peer
    (found in a subprocess, so the parent imports none of them)."""
    # the CPUs this process may use (taskset: bench/lease/one-call.sh's parts), not the machine's count
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    info = {'host': platform.node(), 'cpus': cpus, 'python': platform.python_version(),
            'commit': os.environ.get('COMMIT') or _command_output(['git', 'rev-parse', 'HEAD']) or 'unknown'}
    try:
        info['cpu_model'] = next(l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name'))
    except (OSError, StopIteration):
        pass
    if shutil.which('nvidia-smi'):
        info['gpu'] = _command_output(['nvidia-smi', f'--id={visible_gpu_index()}',
                                       '--query-gpu=name,driver_version,memory.total', '--format=csv,noheader'])
        banner = _command_output(['nvidia-smi']) or ''
        info['cuda_driver_api'] = next((l.split('CUDA Version:')[1].strip(' |') for l in banner.splitlines()
                                        if 'CUDA Version:' in l), None)
    if stoker_cli:
        info['stoker_cli'] = _command_output([stoker_cli, '--version']) if os.path.exists(stoker_cli) else f'not found at {stoker_cli}'
    try:
        info.update(json.loads(_command_output([sys.executable, '-c', VERSIONS_SCRIPT]) or '{}'))
    except ValueError:
        pass
    return info


def run_plan(plan, args, gpu, phase, deadline=None, estimate=None):
    """Runs plan (a list of (run, dataset, data_dir)) args.repeats times each, all runs in one order
    shuffled with args.order_seed; returns (rows, order). Each row carries its phase, repeat and
    position in the order. A run that would end after `deadline` (epoch seconds) is a 'not run' row;
    estimate(run) says how long a run takes (default: warm-up + window + 15 s)."""
    from protocol import shuffled_order
    order = shuffled_order(list(range(len(plan))), args.repeats, args.order_seed)
    rows = []
    estimate = estimate or (lambda run: args.warmup + args.seconds + 15)
    for position, (index, repeat) in enumerate(order):
        run, dataset, data_dir = plan[index]
        label = f"[{phase} {position + 1}/{len(order)}] {run['loader']}:{run['mode']} {run['setting_text']} on {dataset}"
        base = {'phase': phase, 'repeat': repeat, 'order_index': position}
        if deadline and time.time() + estimate(run) > deadline:
            rows.append({'dataset': dataset, **run, **base, 'status': 'not run', 'error': 'time budget spent'})
            print(f'{label:80s} not run (budget)', flush=True)
            continue
        row = {**run_child(run, dataset, data_dir, args, gpu), **base}
        rows.append(row)
        summary = f"{row['images_per_s']:9.0f} img/s" if row.get('images_per_s') else f"{row['status']}: {row.get('error', '')}"
        extra = f", {row['cpu_cores_busy']:.1f} cores" if row.get('cpu_cores_busy') else ''
        extra += f", {row['device_mem_used_mb']:.0f} MB device" if row.get('device_mem_used_mb') is not None else ''
        extra += f", GPU waits {100 * row['gpu_wait_share']:.0f}%" if 'gpu_wait_share' in row else ''
        print(f'{label:80s} {summary[:160]}{extra}', flush=True)
    return rows, [{'plan_index': i, 'repeat': r, 'loader': plan[i][0]['loader'], 'setting': plan[i][0]['setting_text']}
                  for i, r in order]


def add_timing_arguments(parser):
    """The protocol's settings, shared with bench/compare.py."""
    parser.add_argument('--seconds', type=float, default=30.0, help='measured window per run, s (protocol: >= 30)')
    parser.add_argument('--warmup', type=float, default=10.0, help='warm-up after the first batch, s, not counted (protocol: >= 10)')
    parser.add_argument('--repeats', type=int, default=3, help='runs of each row, interleaved (protocol: >= 3)')
    parser.add_argument('--order-seed', type=int, default=None, help='seed of the shuffled order (default: from the clock; recorded)')
    parser.add_argument('--batch', type=int, default=256)
    parser.add_argument('--child-timeout', type=float, default=90, help='extra seconds a run may take beyond warm-up + 2 windows')
    parser.add_argument('--device', choices=['cuda', 'cpu'], default=None, help='default: cuda when nvidia-smi is found')
    parser.add_argument('--stoker', default=os.environ.get('STOKER_CLI', 'build/stoker'), help='stoker binary')


def resolve_device(args):
    if args.order_seed is None:
        args.order_seed = int(time.time()) % 100000
    if args.device is None:
        args.device = 'cuda' if shutil.which('nvidia-smi') else 'cpu'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], epilog=__doc__.split('\n\n', 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--data', help='ImageNet-like folder (bench/make_dataset.py --kind imagenet)')
    parser.add_argument('--hires', help='high-resolution folder: decode-only rows are repeated on it')
    parser.add_argument('--runs', nargs='+', default=DEFAULT_RUNS, help='run tokens LOADER[@N]:MODE[,KNOB=V] (default: all)')
    parser.add_argument('--skip', default='', help='comma-separated loaders to leave out of --runs')
    add_timing_arguments(parser)
    parser.add_argument('--budget', type=float, default=0, help='runs that would end after this many seconds are not started (0 = none)')
    parser.add_argument('--out', help='JSON file for the whole run (default: stdout only)')
    parser.add_argument('--list', action='store_true', help='list the loaders and exit')
    parser.add_argument('--child', help=argparse.SUPPRESS)
    parser.add_argument('--mode', help=argparse.SUPPRESS)
    parser.add_argument('--workers', type=int, default=16, help=argparse.SUPPRESS)
    parser.add_argument('--prefetch', type=int, default=None, help=argparse.SUPPRESS)  # None: the loader's default
    parser.add_argument('--hw-load', type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument('--cuda-load', type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument('--read-ahead', type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument('--prealloc', type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument('--result-file', help=argparse.SUPPRESS)
    parser.add_argument('--epoch-images', type=int, default=0, help=argparse.SUPPRESS)  # cold rows (compare.py)
    args = parser.parse_args()

    if args.child:
        args.loader = args.child
        args.stoker = os.path.abspath(args.stoker) if args.stoker else None
        return child_main(args)
    if args.list:
        for name, text in {**PIPELINE_LOADERS, **DECODE_LOADERS}.items():
            print(f'{name:20s} {text}')
        return
    if not args.data or not os.path.isdir(args.data):
        parser.error('--data must name a folder of class subfolders')
    resolve_device(args)
    skip = set(filter(None, args.skip.split(',')))
    runs = [r for r in map(parse_run, args.runs) if r['loader'] not in skip]
    plan = []
    for r in runs:  # decode-only rows on the high-resolution set as rows of their own
        plan.append((r, 'imagenet', args.data))
        if args.hires and r['mode'] == 'decode':
            plan.append((r, 'hires', args.hires))
    started = time.time()
    rows, order = run_plan(plan, args, GpuSampler(), 'protocol', started + args.budget if args.budget else None)
    from protocol import is_protocol
    result = {'date': time.strftime('%Y-%m-%d %H:%M:%S %Z'), 'machine': machine_description(args.stoker),
              'command': shlex.join(sys.argv), 'batch': args.batch, 'seconds': args.seconds, 'warmup_s': args.warmup,
              'repeats': args.repeats, 'order_seed': args.order_seed, 'order': order, 'device': args.device,
              'meets_protocol': is_protocol(args.warmup, args.seconds, args.repeats), 'rows': rows,
              'wall_s': round(time.time() - started, 1)}
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, 'w') as f:
            json.dump(result, f, indent=1)
        print(f'peers: {len(rows)} rows written to {args.out}')


if __name__ == '__main__':
    main()
