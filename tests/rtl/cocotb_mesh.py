"""cocotb test of the DIM x DIM mesh: skewed rows out after 2*DIM-1 cycles, = D + A @ W[sel]."""
from __future__ import annotations

import numpy as np

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from unit_bench import lanes, lanes_word, reset


@cocotb.test()
async def mesh_matches_numpy(dut) -> None:
    dim = int(dut.DIM.value)
    lat = 2 * dim - 1
    rng = np.random.default_rng(5)
    await reset(dut, "in_valid_i", "w_we_i")
    weights = rng.integers(-128, 128, (2, dim, dim))
    for b in range(2):
        for k in range(dim):
            dut.w_we_i.value, dut.w_buf_i.value, dut.w_row_i.value = 1, b, k
            dut.w_data_i.value = lanes_word(weights[b, k], 8)
            await RisingEdge(dut.clk_i)
            await Timer(1, "ns")
    dut.w_we_i.value = 0
    sent, got = [], []
    cycle = 0
    n_rows = 40
    while len(got) < n_rows:
        if len(sent) < n_rows and rng.random() < 0.8:
            a = rng.integers(-128, 128, dim)
            d = rng.integers(-2**20, 2**20, dim)
            sel = int(rng.integers(0, 2))
            tag = len(sent)
            dut.in_valid_i.value, dut.in_sel_i.value, dut.in_tag_i.value = 1, sel, tag
            dut.in_a_i.value, dut.in_d_i.value = lanes_word(a, 8), lanes_word(d, 32)
            sent.append((cycle, d + a @ weights[sel]))
        else:
            dut.in_valid_i.value = 0
        await RisingEdge(dut.clk_i)
        await ReadOnly()
        cycle += 1
        if int(dut.out_valid_o.value):
            tag = int(dut.out_tag_o.value)
            t_in, want = sent[tag]
            assert cycle - t_in == lat, f"row {tag} left after {cycle - t_in} cycles, expected {lat}"
            np.testing.assert_array_equal(lanes(int(dut.out_c_o.value), dim, 32), want)
            got.append(tag)
        await Timer(1, "ns")
        assert cycle < 10 * n_rows
    assert got == list(range(n_rows))
