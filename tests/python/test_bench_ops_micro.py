"""bench/ops_micro.py without a GPU or DALI: the operator list and presets, the input (the same
images for every run, ImageNet-sized), the section's verdicts (none from one run each, the range
verdict from repeats, a flag where the libraries' outputs differ) and one stoker row end to end on
the CPU (--libs stoker: a subprocess per run, the clock's fields in run.json)."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import ops_micro  # noqa: E402


def test_presets_expand_and_unknown_operators_are_refused():
    assert ops_micro.resolve_ops("effnet,flip")[:2] == ["source", "resize"]
    assert ops_micro.resolve_ops("flip,effnet").count("flip") == 1
    assert ops_micro.resolve_ops("all") == list(ops_micro.OPS)
    with pytest.raises(SystemExit, match="unknown operator 'blur'"):
        ops_micro.resolve_ops("resize,blur")


def test_input_is_deterministic_and_imagenet_sized(tmp_path):
    images, note = ops_micro.make_images(16, seed=3, photos_dir=str(tmp_path / "none"))
    again, _ = ops_micro.make_images(16, seed=3, photos_dir=None)
    assert all((a == b).all() for a, b in zip(images, again))
    assert all(max(a.shape[:2]) == 500 and 281 <= min(a.shape[:2]) < 500 and a.shape[2] == 3 for a in images)
    assert "synthetic" in note and "16 RGB uint8" in note
    ops_micro.save_images(images, str(tmp_path))
    loaded = ops_micro.load_images(str(tmp_path))
    assert [a.shape for a in loaded] == [a.shape for a in images] and all((a == b).all() for a, b in zip(loaded, images))


def test_input_from_photographs_has_the_same_sizes(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    import numpy as np
    for i in range(2):
        Image.fromarray(np.full((900, 1200, 3), 60 * i, dtype=np.uint8)).save(tmp_path / f"p{i}.jpg")
    photos, note = ops_micro.make_images(6, seed=3, photos_dir=str(tmp_path))
    synthetic, _ = ops_micro.make_images(6, seed=3, photos_dir=None)
    assert [a.shape for a in photos] == [a.shape for a in synthetic]
    assert "2 photographs of" in note and photos[0].dtype == np.uint8


def fake_run(rows, repeats):
    return {"date": "d", "machine": {"cpus": 2}, "command": "c", "warmup_s": 10, "seconds": 30, "repeats": repeats,
            "order_seed": 1, "batch": 256, "meets_protocol": repeats >= 3, "ops": ["flip", "cast"], "device": "cuda",
            "threads": 4, "prefetch": 2, "source_kind": "torch CUDA tensors", "rows": rows}


def row(op, lib, rate, shape=(500, 375, 3), dtype="UINT8"):
    return {"op": op, "lib": lib, "status": "ok", "images_per_s": rate, "out_shape0": list(shape), "out_dtype": dtype}


def test_section_verdicts_need_ranges_and_flag_different_outputs():
    one = ops_micro.section(fake_run([row("flip", "stoker", 200), row("flip", "dali", 100),
                                      row("cast", "stoker", 50, dtype="FLOAT"), row("cast", "dali", 60, dtype="UINT8")], 1))
    assert "NOT protocol rows" in one
    assert "| flip | 200 | 100 | 2.00x | one run each: no range, no verdict | median at or above 1.0x (no ranges) |" in one
    assert "outputs differ" in one.split("| cast |")[-1]
    three = ops_micro.section(fake_run([row("flip", "stoker", v) for v in (200, 210, 220)] +
                                       [row("flip", "dali", v) for v in (100, 150, 205)], 3))
    assert "NOT protocol rows" not in three
    assert "| flip | 210 | 150 | 1.40x | overlap | not shown (ranges overlap) |" in three


def test_one_stoker_row_on_the_cpu(tmp_path):
    pytest.importorskip("stoker")
    out = tmp_path / "out"
    code = ops_micro.main(["--device", "cpu", "--libs", "stoker", "--ops", "flip", "--batch", "4", "--warmup", "0.1",
                           "--seconds", "0.3", "--repeats", "1", "--order-seed", "2", "--out", str(out),
                           "--photos", str(tmp_path / "none")])
    assert code == 0
    run = json.loads((out / "run.json").read_text())
    (only,) = run["rows"]
    assert only["status"] == "ok", only
    assert only["images"] == 4 * only["batches"] and only["images_per_s"] > 0 and only["out_dtype"] == "UINT8"
    assert run["order"] == [{"op": "flip", "lib": "stoker", "repeat": 0}] and not run["meets_protocol"]
    assert "| flip | stoker |" in (out / "results-section.md").read_text()


def test_stoker_rows_say_where_a_batch_went():
    """The breakdown of a stoker run: counters' growth over the window per batch, 'feeding' = the
    wall per batch minus the time run() waited for the pipeline."""
    before = {'next_wait_s': 1.0, 'gpu_stage_s': 2.0, 'upload_s': 0.0, 'op_seconds': {'flip_1': 0.5}}
    after = {'next_wait_s': 1.2, 'gpu_stage_s': 2.4, 'upload_s': 0.1, 'op_seconds': {'flip_1': 0.9, 'external_source_0': 0.2}}
    got = ops_micro.stoker_breakdown(before, after, batches=100, wall=1.5)
    assert got == {'waiting': 2.0, 'gpu_stage': 4.0, 'upload': 1.0, 'feeding': 13.0, 'op flip_1': 4.0,
                   'op external_source_0': 2.0}
    assert ops_micro.stoker_stats('dali', object()) is None  # a DALI pipeline has no stoker counters
