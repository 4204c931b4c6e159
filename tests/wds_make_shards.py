#!/usr/bin/env python3
"""tests/wds_make_shards.py: writes WebDataset tar shards for the webdataset tests with Python's
tarfile. Shard k holds --base + k samples (sizes differ on purpose); sample id i (0.. across all
shards) is key "dir/s%05d" with components "jpg" = b"JPG:<i>:" padded to 16 + i % 37 bytes,
"cls" = "<i % 7>\n", and "json" = "{}". With --missing-every M, every M-th sample has no "cls".
--long-names puts each sample under a directory name longer than 100 characters (GNU or pax
long-name records, by --format). --big makes "jpg" 20000 + (i % 37) * 1000 bytes: "JPG:<i>:" then
byte j = (i * 7 + j) & 255."""
import argparse
import io
import tarfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--base", type=int, default=20)
    ap.add_argument("--missing-every", type=int, default=0)
    ap.add_argument("--long-names", action="store_true")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--format", choices=["gnu", "pax", "ustar"], default="gnu")
    a = ap.parse_args()
    fmt = {"gnu": tarfile.GNU_FORMAT, "pax": tarfile.PAX_FORMAT, "ustar": tarfile.USTAR_FORMAT}[a.format]
    prefix = ("d" * 120 + "/") if a.long_names else "dir/"
    i = 0
    for k in range(a.shards):
        with tarfile.open("%s/shard-%03d.tar" % (a.out, k), "w", format=fmt) as tar:
            for _ in range(a.base + k):
                key = "%ss%05d" % (prefix, i)
                payload = ("JPG:%d:" % i).encode().ljust(16 + i % 37, b"x")
                if a.big:
                    head = ("JPG:%d:" % i).encode()
                    payload = head + bytes((i * 7 + j) & 255 for j in range(len(head), 20000 + (i % 37) * 1000))
                comps = [("jpg", payload), ("json", b"{}")]
                if not (a.missing_every and i % a.missing_every == 0):
                    comps.append(("cls", ("%d\n" % (i % 7)).encode()))
                for ext, data in comps:
                    info = tarfile.TarInfo(key + "." + ext)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                i += 1


if __name__ == "__main__":
    main()
