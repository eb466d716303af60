"""cocotb tests of the DIM x DIM mesh: weight-stationary, skewed rows out after 2*DIM-1 cycles,
= D + A @ W[sel]; output-stationary, sums made in place and shifted out."""
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
    dut.os_i.value, dut.in_shift_i.value, dut.w_col_i.value = 0, 0, 0
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
    """OS: DIM shift rows put D in (its last row first), K steps (a column of A, a row of B in the
    low bytes of the D lanes) add A @ B, and the next chain's shift rows bring the sums out, bottom
    row first, DIM - 1 cycles after each shift row entered: C = D + A @ B."""
    dim = int(dut.DIM.value)
    rng = np.random.default_rng(6)
    await reset(dut, "in_valid_i", "w_we_i")
    dut.os_i.value, dut.w_col_i.value = 1, 0
    chains = [(rng.integers(-2**20, 2**20, (dim, dim)), rng.integers(-128, 128, (dim, k)),
               rng.integers(-128, 128, (k, dim))) for k in (dim, 3, 1)]
    chains.append((np.zeros((dim, dim), int), np.zeros((dim, 1), int), np.zeros((1, dim), int)))   # the flush
    outputs: dict[int, tuple[int, np.ndarray]] = {}   # tag (chain * dim + shift row) -> (cycle, row)
    cycle = 0

    async def step(valid: int, shift: int = 0, a=None, d=None, tag: int = 0) -> None:
        nonlocal cycle
        dut.in_valid_i.value, dut.in_shift_i.value, dut.in_tag_i.value = valid, shift, tag
        dut.in_a_i.value = lanes_word(np.zeros(dim, int) if a is None else a, 8)
        dut.in_d_i.value = lanes_word(np.zeros(dim, int) if d is None else d, 32)
        await RisingEdge(dut.clk_i)
        await ReadOnly()
        cycle += 1
        if int(dut.os_out_valid_o.value):
            outputs[int(dut.os_out_tag_o.value)] = (cycle, lanes(int(dut.out_c_o.value), dim, 32))
        await Timer(1, "ns")

    entered = {}
    for c, (d, a, b) in enumerate(chains):
        for s in range(dim):                       # shift D in, the previous chain's sums out
            entered[c * dim + s] = cycle
            await step(1, 1, d=d[dim - 1 - s], tag=c * dim + s)
        for t in range(a.shape[1]):                # the steps
            await step(1, 0, a=a[:, t], d=b[t])
        for _ in range(dim):                       # the last step's sums complete
            await step(0)
    for c, (d, a, b) in enumerate(chains[:-1]):
        want = d + a @ b
        for s in range(dim):
            out_cycle, row = outputs[(c + 1) * dim + s]
            assert out_cycle - entered[(c + 1) * dim + s] == dim - 1, f"chain {c} row {s} left late"
            np.testing.assert_array_equal(row, want[dim - 1 - s], err_msg=f"chain {c}, C row {dim - 1 - s}")
