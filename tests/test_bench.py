"""Workload suites and the bench runner: suites load, every layer lowers, small suites run bit-exact."""
from __future__ import annotations

import csv
import textwrap

import numpy as np
import pytest

import toolkit as tk
from toolkit.library import LibrarySchedule, check_library
from isa import HardwareConfig
from networks.suite import available_suites, format_table, load_suite, plot, run_suite, write_csv
from toolkit.cli import main as cli_main
from toolkit.kinds import ideal_cycles, roofline_cycles

SUITES = ("gemmini_gemms", "gemmini_gemms_int32", "exo_convs", "resnet50", "bert_base", "mobilenetv2")


def _count(suite, kind: str) -> int:
    return sum(l.count for l in suite.layers if l.op.KIND == kind)


def test_suites_load_with_their_sources() -> None:
    assert set(SUITES) <= set(available_suites())
    for name in SUITES:
        suite = load_suite(name)
        assert suite.name == name and suite.source and suite.description and suite.departures
        assert len({l.name for l in suite.layers}) == len(suite.layers)


def test_suite_contents() -> None:
    gemms = load_suite("gemmini_gemms")
    assert [(l.op.M, l.op.K, l.op.N) for l in gemms.layers] == [
        (512, 512, 512), (12544, 64, 256), (12544, 256, 64), (3136, 128, 512), (3136, 512, 128), (784, 256, 1024)]
    assert {l.op.out_dtype for l in gemms.layers} == {"int8"}   # Exo's and Autocomp's C is int8
    assert {l.op.out_dtype for l in load_suite("gemmini_gemms_int32").layers} == {"int32"}
    exo = load_suite("exo_convs")   # Autocomp's tiled_conv_auto baselines: batch 4, 3x3, no padding, int32 bias
    assert [(l.op.out_h, l.op.in_c, l.op.out_c) for l in exo.layers] == [
        (56, 64, 64), (28, 128, 128), (14, 256, 256), (14, 128, 128)]
    assert {(l.op.batch, l.op.kernel, l.op.stride, l.op.padding, l.op.bias) for l in exo.layers} == {
        (4, (3, 3), 1, 0, "channel")}
    r50 = load_suite("resnet50")
    assert _count(r50, "conv2d") == 53 and _count(r50, "resadd") == 16 and _count(r50, "maxpool") == 1
    convs = [l for l in r50.layers if l.op.KIND == "conv2d"]
    assert sum(l.op.macs * l.count for l in convs) == pytest.approx(4.09e9, rel=0.01)  # ResNet-50's ~4.1 GMACs
    last = next(l for l in convs if l.name == "s4_3x3")
    assert (last.op.out_h, last.op.out_w) == (7, 7)
    mb2 = load_suite("mobilenetv2")
    assert _count(mb2, "depthwise") == 17 and _count(mb2, "conv2d") == 35
    bert = load_suite("bert_base")
    assert sum(l.op.macs * l.count for l in bert.layers) == 128 * 768 * 768 * 4 + 2 * 128 * 768 * 3072 \
        + 2 * 12 * 128 * 128 * 64


@pytest.mark.parametrize("name", SUITES)
def test_every_layer_constructs_and_schedules(gemmini, name) -> None:
    """Every layer has a default schedule that fits (the check made before any instruction)."""
    for layer in load_suite(name).layers:
        schedule = tk.default_schedule(layer.op, gemmini)
        if isinstance(schedule, LibrarySchedule):   # gemmini.h's assertions, checked as its words are laid out
            check_library(layer.op, schedule, gemmini)
        else:
            schedule.memory_plan(gemmini, layer.op)


@pytest.mark.parametrize("name, layer", [
    ("resnet50", "s4_3x3"), ("resnet50", "s3_ds_s2"), ("resnet50", "s4_resadd"),
    ("mobilenetv2", "dw_960"), ("mobilenetv2", "project_960_320"), ("bert_base", "attn_scores"),
])
def test_suite_layers_lower(gemmini, name, layer) -> None:
    """Lower only (no run): the program checks against the hardware."""
    from isa.checker import check
    op = next(l.op for l in load_suite(name).layers if l.name == layer)
    prog = tk.compile(op, gemmini)
    check(prog)
    assert len(prog) > 0 and prog.meta["op"] == op.to_dict()


def test_measures(gemmini) -> None:
    mm = tk.matmul(100, 40, 17)
    assert ideal_cycles(mm, gemmini) == 100 * 3 * 2   # each row of A through 3 x 2 weight blocks
    conv = tk.conv2d(1, 8, 8, 3, 20, kernel=3, stride=1, padding=1)   # im2col GEMM: 64 x 20 x 27
    assert ideal_cycles(conv, gemmini) == 4 * 2 * 2 * 16
    assert ideal_cycles(tk.resadd(1, 4, 4, 16), gemmini) == 0
    assert tk.resadd(1, 4, 4, 16).compulsory_bytes == 3 * 256
    assert mm.compulsory_bytes == 100 * 17 + 17 * 40 + 100 * 40
    assert roofline_cycles(mm, gemmini) == max(100 * 3 * 2, -(-mm.compulsory_bytes // 16))


TINY_SUITE = textwrap.dedent("""\
    name: tiny_mix
    description: one layer of each kind, small enough for the tiny preset
    source: tests
    defaults: {batch: 1, bias: channel, scale: 0.01, activation: relu}
    layers:
      - {name: mm, kind: matmul, M: 9, N: 7, K: 13, bias: row}
      - {name: conv, kind: conv2d, in_h: 6, in_w: 5, in_c: 5, out_c: 6, kernel: 3, stride: 2, padding: 1, count: 2}
      - {name: pw, kind: conv2d, in_h: 4, in_w: 4, in_c: 6, out_c: 5, kernel: 1, stride: 1, padding: 0}
      - {name: dw, kind: depthwise, in_h: 5, in_w: 5, channels: 6, kernel: 3, stride: 1, padding: 1}
      - {name: add, kind: resadd, h: 3, w: 3, channels: 5, a_scale: 0.5}
      - {name: pool, kind: maxpool, in_h: 6, in_w: 6, channels: 5, kernel: 3, stride: 2, padding: 1}
""")


@pytest.fixture
def tiny_suite(tmp_path):
    path = tmp_path / "tiny_mix.yaml"
    path.write_text(TINY_SUITE)
    return path


def test_run_suite_is_bit_exact_and_reports(tiny_suite, tmp_path) -> None:
    suite = load_suite(tiny_suite)
    hw = HardwareConfig.preset("tiny")
    results = run_suite(suite, hw, progress=False)
    assert [r.name for r in results] == ["mm", "conv", "pw", "dw", "add", "pool"]
    assert all(r.exact for r in results)
    assert all(r.cycles is None and r.utilization is None for r in results)   # functional: no timing
    conv = results[1]
    assert conv.count == 2 and conv.macs == suite.layers[1].op.macs and 0 < conv.occupancy <= 1
    assert results[4].ideal_cycles == 0 and results[4].roofline_cycles == -(-3 * 45 // hw.dma_beat_bytes)
    table = format_table(results)
    assert "pool" in table and "all exact: yes" in table
    write_csv(results, tmp_path / "r.csv")
    rows = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert [r["name"] for r in rows] == [r.name for r in results] and rows[0]["exact"] == "True"
    plot(results, tmp_path / "r.png", "tiny")
    assert (tmp_path / "r.png").stat().st_size > 1000
    assert [r.name for r in run_suite(suite, hw, layers=["p*"], limit=1, progress=False, cpu=False)] == ["pw"]
    with pytest.raises(ValueError, match="matches no layer"):
        suite.select(["nope"])


def test_bench_command(tiny_suite, tmp_path, capsys) -> None:
    out_csv, out_png = tmp_path / "b.csv", tmp_path / "b.png"
    rc = cli_main(["bench", str(tiny_suite), "--config", "tiny", "--layers", "conv,add", "--csv", str(out_csv),
                     "--plot", str(out_png), "--quiet", "--no-cpu"])
    text = capsys.readouterr().out
    assert rc == 0 and "conv" in text and "add" in text and "mm " not in text
    assert out_csv.exists() and out_png.exists()
    assert cli_main(["bench", "no_such_suite", "--quiet"]) == 2


def test_bad_suites(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nlayers:\n  - {name: x, kind: conv2d, batch: 1, in_h: 4, in_w: 4, in_c: 3, out_c: 3, stride: 0}\n")
    with pytest.raises(ValueError, match="layer x: stride"):
        load_suite(bad)
    bad.write_text("name: bad\nlayers:\n  - {name: x, kind: softmax}\n")
    with pytest.raises(ValueError, match="softmax"):
        load_suite(bad)


def test_array_work_counts_what_the_computes_stream(tiny) -> None:
    from networks.suite import array_work
    prog = tk.compile(tk.matmul(8, 8, 8), tiny)          # 2x2x2 full 4x4x4 blocks
    assert array_work(prog) == (8, 8 * 64, 8 * 4 * 16)
    computes, useful, slots = array_work(tk.compile(tk.conv2d(1, 5, 5, 3, 4, kernel=3, padding=1), tiny))
    assert useful < tk.conv2d(1, 5, 5, 3, 4, kernel=3, padding=1).macs and useful <= slots * 3 / 4


def test_floor_counts_only_taps_on_real_input(gemmini) -> None:
    """toolkit.floor's compute bound (bench_utilization's floor): a padded tap is not work, so a padded
    conv's is below its ideal; an unpadded one with whole channel blocks is its ideal."""
    from toolkit.floor import floor
    conv = tk.conv2d(2, 9, 7, 32, 48, kernel=3, stride=2, padding=1)
    inside = np.pad(np.ones((9, 7)), 1)   # brute force: which padded-input positions are real
    taps = sum(inside[2 * i + di, 2 * j + dj] for i in range(conv.out_h) for j in range(conv.out_w)
               for di in range(3) for dj in range(3))
    assert floor(conv, gemmini).compute == -(-int(taps) * 2 * 32 * 48 // 256) < ideal_cycles(conv, gemmini)
    exo = tk.conv2d(4, 16, 16, 128, 128, kernel=3, padding=0)
    assert floor(exo, gemmini).compute == ideal_cycles(exo, gemmini)
    add = tk.resadd(1, 4, 4, 16)
    alone = tk.HardwareConfig.preset("gemmini-alone")   # one DMA port: every byte at a beat a cycle
    assert floor(add, alone).cycles == -(-add.compulsory_bytes // alone.dma_beat_bytes)
