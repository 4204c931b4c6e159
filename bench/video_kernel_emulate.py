#!/usr/bin/env python3
"""bench/video_kernel_emulate.py: the NV12 -> YCbCr arithmetic of src/ops/video/video_nvdec_kernels.cu
redone in numpy on the frames libavcodec decodes (H.264 decoding is bit-exact, so these are the
planes NVDEC hands the kernel), compared with libswscale's bicubic (stoker's CPU path and the
ffmpeg CLI) and bilinear upsampling, and with neighbouring frames. A diagnostic for issue 17's
GPU/CPU mismatch, runnable without a GPU: `python3 bench/video_kernel_emulate.py CLIP.mp4` with
PyAV and numpy (bench/video-compare.sh makes such a venv). Not on stoker's hot path."""
import sys

import av
import numpy as np

path = sys.argv[1]  # an H.264 clip (stoker datagen --video)
c = av.open(path)
frames = []
for i, f in enumerate(c.decode(video=0)):
    frames.append(f)
    if i >= 7: break
def gpu_kernel(y, u, v, hpos, vpos):
    H, W = y.shape; ch, cw = u.shape
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float32)
    cx = np.clip(xs * 0.5 + hpos, 0, cw - 1); cy = np.clip((ys - 0.5) * 0.5 + vpos, 0, ch - 1)
    x0 = cx.astype(int); y0 = cy.astype(int); x1 = np.minimum(x0 + 1, cw - 1); y1 = np.minimum(y0 + 1, ch - 1)
    fx = cx - x0; fy = cy - y0
    def samp(p):
        p = p.astype(np.float32)
        top = p[y0, x0] * (1 - fx) + p[y0, x1] * fx
        bot = p[y1, x0] * (1 - fx) + p[y1, x1] * fx
        return top * (1 - fy) + bot * fy
    return np.stack([y.astype(np.float32), samp(u), samp(v)], -1)
for interp in ('BICUBIC', 'BILINEAR'):
  for name, hpos, vpos in (('left-h center-v (kernel)', 0.0, 0.0), ('center both', -0.25, 0.0)):
    mx = 0; mean = []
    for f in frames:
        a = f.to_ndarray(format='yuv420p')
        H = f.height; W = f.width
        y = a[:H]; u = a[H:H + H // 4 * 1].reshape(-1)[: (H // 2) * (W // 2)].reshape(H // 2, W // 2)
        v = a[H + H // 4:].reshape(-1)[: (H // 2) * (W // 2)].reshape(H // 2, W // 2)
        g = np.clip(np.rint(gpu_kernel(y, u, v, hpos, vpos)), 0, 255)
        r = f.reformat(format='yuv444p', interpolation=interp).to_ndarray()  # (3, H, W)
        r = np.moveaxis(r.reshape(3, H, W), 0, -1).astype(np.float32)
        d = np.abs(g - r); mx = max(mx, d.max()); mean.append(d.mean())
    print(f"{interp:8s} {name:26s} max {mx:.0f} mean {np.mean(mean):.3f}  ({W}x{H}, {frames[0].format.name}, loc {frames[0].format})")
print("--- offsets: GPU-emulated frame k vs bicubic reference frame k+off")
gk = []; rf = []
for f in frames:
    a = f.to_ndarray(format='yuv420p'); H = f.height; W = f.width
    y = a[:H]; u = a[H:H + H // 4].reshape(H // 2, W // 2); v = a[H + H // 4:].reshape(H // 2, W // 2)
    gk.append(np.clip(np.rint(gpu_kernel(y, u, v, 0.0, 0.0)), 0, 255))
    rf.append(np.moveaxis(f.reformat(format='yuv444p', interpolation='BICUBIC').to_ndarray().reshape(3, H, W), 0, -1).astype(np.float32))
for off in (-1, 0, 1, 2):
    ds = [np.abs(gk[k] - rf[k + off]) for k in range(len(frames)) if 0 <= k + off < len(frames)]
    print(off, "max %.0f mean %.3f" % (max(d.max() for d in ds), np.mean([d.mean() for d in ds])))
