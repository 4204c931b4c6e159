#!/usr/bin/env python3
"""bench/video_dump_analyze.py: issue 17's NVDEC/CPU mismatch, analysed offline from the frames
src/ops/video/test_gpu_video.c dumps on the GPU machine (STOKER_TEST_VIDEO_DUMP, bench/session9-check.sh).
Reads DIR/<clip>-YCbCr_uint8-<case>-{cpu,gpu}.bin, decodes the same clip here with the ffmpeg CLI
to yuv420p (libavcodec's planes: what NVDEC should hand the kernel, H.264/HEVC decoding being
bit-exact) and tests hypotheses on the GPU's chroma: the kernel's arithmetic on those planes
(exact expected result), other chroma sitings, Cb/Cr swapped, another frame's chroma, and chroma
planes read from another row of the surface. Needs numpy and the ffmpeg CLI.
usage: python3 bench/video_dump_analyze.py DUMP_DIR CLIP.mp4 [CASE]   (case 1: frames 0..7)"""
import os
import subprocess
import sys

import numpy as np

dump, clip = sys.argv[1], sys.argv[2]
case = int(sys.argv[3]) if len(sys.argv) > 3 else 1
first, stride, count = [(40, 2, 4), (0, 1, 8), (17, 3, 5), (3, 1, 2), (41, 1, 8), (12, 5, 4)][case]
probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                        "-of", "csv=p=0", clip], capture_output=True, text=True, check=True).stdout.split(",")
W, H = int(probe[0]), int(probe[1])
raw = subprocess.run(["ffmpeg", "-v", "error", "-i", clip, "-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt",
                      "yuv420p", "-"], capture_output=True, check=True).stdout
fs = W * H * 3 // 2
n = len(raw) // fs
planes = np.frombuffer(raw, np.uint8)[: n * fs].reshape(n, fs)
Y = planes[:, : W * H].reshape(n, H, W)
U = planes[:, W * H: W * H + W * H // 4].reshape(n, H // 2, W // 2)
V = planes[:, W * H + W * H // 4:].reshape(n, H // 2, W // 2)
base = os.path.basename(clip)
gpu = np.fromfile(os.path.join(dump, "%s-YCbCr_uint8-%d-gpu.bin" % (base, case)), np.uint8).reshape(count, H, W, 3)
cpu = np.fromfile(os.path.join(dump, "%s-YCbCr_uint8-%d-cpu.bin" % (base, case)), np.uint8).reshape(count, H, W, 3)
frames = [first + k * stride for k in range(count)]


def upsample(c, hoff=0.0, voff=-0.5):
    """The kernel's bilinear: chroma at ((x + hoff) / 2, (y + voff) / 2), clamped."""
    ch, cw = c.shape
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float32)
    cx = np.clip((xs + hoff) * 0.5, 0, cw - 1)
    cy = np.clip((ys + voff) * 0.5, 0, ch - 1)
    x0, y0 = cx.astype(int), cy.astype(int)
    x1, y1 = np.minimum(x0 + 1, cw - 1), np.minimum(y0 + 1, ch - 1)
    fx, fy = cx - x0, cy - y0
    p = c.astype(np.float32)
    top = p[y0, x0] * (1 - fx) + p[y0, x1] * fx
    bottom = p[y1, x0] * (1 - fx) + p[y1, x1] * fx
    return np.clip(np.rint(top * (1 - fy) + bottom * fy), 0, 255)


def report(name, want_cb, want_cr, k):
    d = np.abs(np.stack([want_cb, want_cr], -1) - gpu[k, :, :, 1:].astype(np.float32))
    return name, float(d.max()), float(d.mean())


print("clip %s %dx%d, %d frames decoded here; case %d frames %s" % (base, W, H, n, case, frames))
for k, f in enumerate(frames):
    print("frame %d: luma gpu==ffmpeg: %s; luma cpu==ffmpeg: %s; chroma cpu vs gpu max %d mean %.3f" % (
        f, bool((gpu[k, :, :, 0] == Y[f]).all()), bool((cpu[k, :, :, 0] == Y[f]).all()),
        np.abs(cpu[k, :, :, 1:].astype(int) - gpu[k, :, :, 1:]).max(),
        np.abs(cpu[k, :, :, 1:].astype(int) - gpu[k, :, :, 1:]).mean()))
    rows = [report("kernel (left-h, center-v)", upsample(U[f]), upsample(V[f]), k),
            report("center-h center-v", upsample(U[f], -0.5), upsample(V[f], -0.5), k),
            report("top-left (co-sited)", upsample(U[f], 0, 0), upsample(V[f], 0, 0), k),
            report("Cb/Cr swapped", upsample(V[f]), upsample(U[f]), k),
            report("cpu path (swscale)", cpu[k, :, :, 1].astype(np.float32), cpu[k, :, :, 2].astype(np.float32), k)]
    for g in (f - 2, f - 1, f + 1, f + 2):
        if 0 <= g < n: rows.append(report("chroma of frame %d" % g, upsample(U[g]), upsample(V[g]), k))
    # the NV12 surface read at another chroma row offset: rows r.. of an interleaved UV plane
    uv = np.stack([U[f], V[f]], -1).reshape(H // 2, W)  # NV12's interleaved plane
    surf = np.concatenate([Y[f], uv, np.zeros((H, W), np.uint8)], 0)
    for dr in (-16, -8, -4, -2, -1, 1, 2, 4, 8, 16):
        plane = surf[max(H + dr, 0): H + dr + H // 2].reshape(-1, W // 2, 2)
        if plane.shape[0] == H // 2:
            rows.append(report("chroma plane at row %+d" % dr, upsample(plane[..., 0]), upsample(plane[..., 1]), k))
    for name, mx, mean in sorted(rows, key=lambda r: r[2])[:6]:
        print("   %-28s max %5.1f mean %.3f" % (name, mx, mean))
