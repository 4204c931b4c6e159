#!/usr/bin/env python3
"""tests/wds_fault_shards.py: writes the damaged WebDataset shards and lying index files of the
webdataset fault tests (src/ops/io/test_webdataset_faults.c, scripts/fault-campaign.sh) into --out.
Sample i has key "dir/s%05d" with "jpg" = b"JPG:<i>:" padded to 16 bytes and "cls" = "<i % 7>\\n".

  full.tar       8 samples, with the tar end blocks (the good twin of the others)
  cut.tar        full.tar cut right after sample 2's last member: a 512-byte boundary, no end blocks
  nolabel.tar    4 samples; sample 1 has no "cls"
  damaged.tar    4 samples; the header of sample 2's first member has a flipped byte
  huge256.tar    sample 0, then a "jpg" whose size field says 2^40 bytes (GNU base-256), 2 KiB of data
  hugepax.tar    the same with the size in a pax "size=" record
  big.tar        3 samples; sample 1's "jpg" is 2 MiB ("JPG:1:" then zeros)
  empty.tar      4 samples, each with an empty "txt" member beside "jpg" and "cls"
  full.idx       the index of full.tar (DALI wds2idx v1.2: "ext offset size name" per component)
  promise12.idx  full.idx announcing 12 samples, with 4 more lines past the shard's end
  short3.idx     the first 3 samples of full.idx only
  huge.idx       announces 2^61 samples (3 sample lines follow: (2^61 + 1) * 8 wraps to 8 bytes)
"""
import argparse
import io
import os
import tarfile


def sample_members(i, with_label=True, jpg=None):
    data = jpg if jpg is not None else ("JPG:%d:" % i).encode().ljust(16, b"x")
    out = [("dir/s%05d.jpg" % i, data)]
    if with_label:
        out.append(("dir/s%05d.cls" % i, ("%d\n" % (i % 7)).encode()))
    return out


def write_tar(path, samples, fmt=tarfile.GNU_FORMAT):
    """samples: a list of member lists. Returns (the tar's bytes, the offset after each sample,
    [(name, data offset, size)] per sample)."""
    buf = io.BytesIO()
    ends, counts = [], []
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for members in samples:
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            ends.append(tar.offset)
            counts.append(len(members))
    data = buf.getvalue()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:  # offsets as a reader sees them
        read = [(m.name, m.offset_data, m.size) for m in tar.getmembers()]
    comps, at = [], 0
    for n in counts:
        comps.append(read[at:at + n])
        at += n
    if path:
        with open(path, "wb") as f:
            f.write(data)
    return data, ends, comps


def index_lines(comps):
    lines = []
    for mine in comps:
        parts = []
        for name, off, size in mine:
            base = name.rsplit("/", 1)[-1]
            parts.append("%s %d %d %s" % (base.split(".", 1)[1], off, size, base))
        lines.append(" ".join(parts))
    return lines


def huge_member(fmt):
    info = tarfile.TarInfo("dir/s00001.jpg")
    info.size = 1 << 40
    return info.tobuf(fmt, "utf-8", "surrogateescape") + b"J" * 2048


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    p = lambda name: os.path.join(out, name)
    full, ends, comps = write_tar(p("full.tar"), [sample_members(i) for i in range(8)])
    with open(p("cut.tar"), "wb") as f:
        f.write(full[: ends[2]])
    write_tar(p("nolabel.tar"), [sample_members(i, with_label=i != 1) for i in range(4)])
    data, ends4, comps4 = write_tar(None, [sample_members(i) for i in range(4)])
    header = comps4[2][0][1] - 512  # sample 2's first header
    damaged = bytearray(data)
    damaged[header + 3] ^= 0x55
    with open(p("damaged.tar"), "wb") as f:
        f.write(bytes(damaged))
    for name, fmt in (("huge256.tar", tarfile.GNU_FORMAT), ("hugepax.tar", tarfile.PAX_FORMAT)):
        first, e, _ = write_tar(None, [sample_members(0)], fmt)
        with open(p(name), "wb") as f:
            f.write(first[: e[0]] + huge_member(fmt))
    big = b"JPG:1:" + bytes((2 << 20) - 6)
    write_tar(p("big.tar"), [sample_members(0), sample_members(1, jpg=big), sample_members(2)])
    write_tar(p("empty.tar"), [sample_members(i) + [("dir/s%05d.txt" % i, b"")] for i in range(4)])
    lines = index_lines(comps)
    with open(p("full.idx"), "w") as f:
        f.write("v1.2 8\n" + "\n".join(lines) + "\n")
    extra = ["jpg %d 16 s%05d.jpg cls %d 2 s%05d.cls" % (len(full) + 1024 * k, 8 + k, len(full) + 1024 * k + 512, 8 + k)
             for k in range(4)]
    with open(p("promise12.idx"), "w") as f:
        f.write("v1.2 12\n" + "\n".join(lines + extra) + "\n")
    with open(p("short3.idx"), "w") as f:
        f.write("v1.2 3\n" + "\n".join(lines[:3]) + "\n")
    with open(p("huge.idx"), "w") as f:
        f.write("v1.2 %d\n%s\n" % (1 << 61, "\n".join(lines[:3])))


if __name__ == "__main__":
    main()
