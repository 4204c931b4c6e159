"""tests/python/torchrun_worker.py: one rank of test_distributed.py's torchrun run (gloo, CPU).

Each rank builds, for every case in --cases (a JSON list), a pipeline with NO placement
arguments (no device_id, no shard_id/num_shards: they come from torchrun's environment), runs
--epochs epochs through stoker.iterator.NumpyIterator(reader_name="Reader") with the case's
last-batch policy, and trains a one-weight DDP model on every step, as a training loop would: a
rank with fewer steps than the others would leave DDP's all-reduce waiting, which the gloo
timeout turns into an error. Rank 0 writes what every rank saw (per epoch: steps, len(iterator),
the sample ids returned, the reader's shard) to --out as JSON.

Sample ids: readers.file labels (one class per sample), readers.webdataset's label_ext,
readers.numpy's array values (file i holds the value i).
"""
import argparse
import datetime
import json
import os
import sys

import numpy as np

import stoker
from stoker import fn
from stoker.iterator import NumpyIterator, LastBatchPolicy


def reader(case, data):
    kind = case["reader"]
    common = dict(random_shuffle=case.get("shuffle", True), pad_last_batch=case.get("pad", False),
                  stick_to_shard=case.get("stick", False), shard_id=case.get("shard_id"),
                  num_shards=case.get("num_shards"), name="Reader")
    if kind == "file":
        _, labels = fn.readers.file(file_root=data[kind], **common)
        return labels
    if kind == "numpy":
        return fn.readers.numpy(file_root=data[kind], **common)
    if kind == "webdataset":
        paths = sorted(os.path.join(data[kind], p) for p in os.listdir(data[kind]) if p.endswith(".tar"))
        index = [p[: -len(".tar")] + ".idx" for p in paths]
        if not case.get("index", True):
            index = None
        outputs = fn.readers.webdataset(paths=paths, index_paths=index, ext=["jpg", "cls"], label_ext="cls",
                                        initial_fill=8, **common)
        return outputs[1]  # one output per ext group: the labels
    raise SystemExit("unknown reader %r" % kind)


def sample_ids(kind, array):
    if kind == "numpy":
        return [int(row.reshape(-1)[0]) for row in array]
    return [int(v) for v in np.asarray(array).reshape(-1)]


def run_case(case, data, epochs, step=None, **placement):
    """Runs `epochs` epochs of `case`; step(ids) is called once per batch. placement: explicit
    shard_id/num_shards for the reference run (test_distributed.py, one process)."""
    pipe = stoker.Pipeline(batch_size=case["batch"], num_threads=1, seed=case.get("seed", 7))
    if placement:
        case = dict(case, **placement)
    with pipe:
        pipe.set_outputs(reader(case, data))
    policy = LastBatchPolicy[case["policy"].upper()]
    iterator = NumpyIterator(pipe, ["ids"], reader_name="Reader", last_batch_policy=policy)
    result = {"device_id": pipe.device_id, "epochs": []}
    for _ in range(epochs):
        meta = pipe.reader_meta("Reader")
        ids, steps = [], 0
        for batch in iterator:
            batch_ids = sample_ids(case["reader"], batch[0]["ids"])
            ids.append(batch_ids)
            steps += 1
            if step is not None:
                step(batch_ids)
        result["epochs"].append({"steps": steps, "len": len(iterator), "ids": ids, "shard": meta["shard_id"],
                                 "num_shards": meta["number_of_shards"]})
        iterator.reset()
    pipe.close()
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="JSON {reader kind: data dir}")
    parser.add_argument("--cases", required=True, help="JSON list of cases")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)

    def ddp_step(batch_ids):
        # one DDP step: every rank must reach the same number of all-reduces
        x = torch.tensor(batch_ids, dtype=torch.float32).reshape(-1, 1)
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    data = json.loads(args.data)
    results = [run_case(case, data, args.epochs, ddp_step) for case in json.loads(args.cases)]
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, {"rank": dist.get_rank(), "results": results})
    if dist.get_rank() == 0:
        with open(args.out, "w") as out:
            json.dump(gathered, out)
    dist.destroy_process_group()
    # Out without the interpreter's and C++ runtime's exit teardown: under torch's gloo backend a rank
    # now and then aborts there, after everything above is done ("terminate called without an active
    # exception", no Python frame: a C++ std::thread destroyed while joinable at exit; seen on the
    # 2-core CI machine about one run in six, with this session's and older stoker alike), which
    # torchrun reports as a failed rank. Every result is written and the process group is closed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
