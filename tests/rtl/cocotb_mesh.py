"""cocotb tests of the DIM x DIM mesh: weight-stationary, skewed rows out after 2*DIM-1 cycles,
= D + A @ W[sel]; output-stationary, sums made in place in one of two sums a PE while the other
shifts the previous results out and the next D in."""
from __future__ import annotations

import numpy as np

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, Timer

from unit_bench import lanes, lanes_word, reset


@cocotb.test()
async def mesh_matches_numpy(dut) -> None:
    await weight_stationary(dut, by_columns=False)


@cocotb.test()
async def mesh_weights_by_columns(dut) -> None:
    """Weights written a PE column at a time (w_col_i: the weights transposed), over a buffer
    first written by rows, so that every lane a column write leaves alone must keep its value."""
    await weight_stationary(dut, by_columns=True)


async def weight_stationary(dut, by_columns: bool) -> None:
    dim = int(dut.DIM.value)
    lat = 2 * dim - 1
    rng = np.random.default_rng(6 if by_columns else 5)
    await reset(dut, "in_valid_i", "w_we_i")
    dut.os_i.value, dut.in_shift_i.value, dut.in_prop_i.value, dut.w_col_i.value = 0, 0, 0, 0
    weights = rng.integers(-128, 128, (3, dim, dim))
    for b in range(3):
        for k in range(dim):
            dut.w_we_i.value, dut.w_buf_i.value, dut.w_row_i.value = 1, b, k
            dut.w_data_i.value = lanes_word(weights[b, k], 8)
            await RisingEdge(dut.clk_i)
            await Timer(1, "ns")
    if by_columns:   # then rewrite buffer 1 column by column, except the last column
        for n in range(dim - 1):
            col = rng.integers(-128, 128, dim)
            weights[1, :, n] = col
            dut.w_we_i.value, dut.w_buf_i.value, dut.w_row_i.value, dut.w_col_i.value = 1, 1, n, 1
            dut.w_data_i.value = lanes_word(col, 8)
            await RisingEdge(dut.clk_i)
            await Timer(1, "ns")
        dut.w_col_i.value = 0
    dut.w_we_i.value = 0
    sent, got = [], []
    cycle = 0
    n_rows = 40
    while len(got) < n_rows:
        if len(sent) < n_rows and rng.random() < 0.8:
            a = rng.integers(-128, 128, dim)
            d = rng.integers(-2**20, 2**20, dim)
            sel = int(rng.integers(0, 3))
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


@cocotb.test()
async def mesh_output_stationary(dut) -> None:
    """OS, double-buffered: chain c computes in the sums prop = c % 2 (its K steps: a column of A,
    a row of B), and its first DIM rows (more only shift, with zeros for A and B) also shift D of
    chain c + 1 into the other sums (its last row first), which brings chain c - 1's results out,
    bottom row first, 2*DIM - 1 cycles after each row entered: C = D + A @ B. Rows come with idle
    cycles between them; the last chain (no steps) is the flush."""
    dim = int(dut.DIM.value)
    lat = 2 * dim - 1
    rng = np.random.default_rng(6)
    await reset(dut, "in_valid_i", "w_we_i")
    dut.os_i.value, dut.w_col_i.value, dut.in_sel_i.value = 1, 0, 0
    chains = [(rng.integers(-2**20, 2**20, (dim, dim)), rng.integers(-128, 128, (dim, k)),
               rng.integers(-128, 128, (k, dim))) for k in (dim, 3, 1, dim + 2, 2)]
    chains.append((np.zeros((dim, dim), int), np.zeros((dim, 0), int), np.zeros((0, dim), int)))  # the flush
    zero = np.zeros(dim, int)
    outputs: dict[int, tuple[int, np.ndarray]] = {}   # tag (chain * dim + shift row) -> (cycle, row)
    entered: dict[int, int] = {}
    cycle = 0

    async def row(valid: int, prop: int = 0, shift: int = 0, a=zero, b=zero, d=zero, tag: int = 0) -> None:
        nonlocal cycle
        dut.in_valid_i.value, dut.in_shift_i.value, dut.in_prop_i.value = valid, shift, prop
        dut.in_tag_i.value = tag
        dut.in_a_i.value, dut.in_b_i.value, dut.in_d_i.value = lanes_word(a, 8), lanes_word(b, 8), lanes_word(d, 32)
        if valid:
            entered[tag] = cycle
        await RisingEdge(dut.clk_i)
        await ReadOnly()
        cycle += 1
        if int(dut.out_valid_o.value):
            outputs[int(dut.out_tag_o.value)] = (cycle, lanes(int(dut.out_c_o.value), dim, 32))
        await Timer(1, "ns")

    for s in range(dim):                                   # chain 0's D, before any chain
        await row(1, prop=1, shift=1, d=chains[0][0][dim - 1 - s], tag=255)
    for c, (_, a, b) in enumerate(chains):
        d_next = chains[c + 1][0] if c + 1 < len(chains) else np.zeros((dim, dim), int)
        for j in range(max(a.shape[1], dim)):
            step = j < a.shape[1]
            while rng.random() < 0.3:
                await row(0)
            await row(1, prop=c % 2, shift=int(j < dim), a=a[:, j] if step else zero, b=b[j] if step else zero,
                      d=d_next[dim - 1 - j] if j < dim else zero, tag=c * dim + j if j < dim else 254)
    for _ in range(lat):
        await row(0)
    for c, (d, a, b) in enumerate(chains[:-1]):
        want = d + a @ b
        for s in range(dim):
            tag = (c + 1) * dim + s
            out_cycle, got = outputs[tag]
            assert out_cycle - entered[tag] == lat, f"chain {c} row {s} left after {out_cycle - entered[tag]}"
            np.testing.assert_array_equal(got, want[dim - 1 - s], err_msg=f"chain {c}, C row {dim - 1 - s}")
