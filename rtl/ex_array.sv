// The execute unit's array side: the row S injects (inj_i: its operands from the bank ports RA
// and RD, the row arrived or buffered, and the transposer) onto the mesh's inputs; W's writes
// (a weight row, or a row of the transposer's block, from RB); the mesh; and the writes of the
// results as rows leave it: column-masked, to the accumulator (overwrite or accumulate) or
// through the scale unit and ReLU to the scratchpad, an output-stationary result rounding-
// shifted right first (its tag's rsh). A row that brings out no result writes nothing (DestNone).
module ex_array import systolic_pkg::*; #(
  parameter int  DIM      = 4,
  parameter int  SP_ROWS  = 256,
  parameter int  ACC_ROWS = 64,
  parameter int  NBUF     = 3,
  parameter type inj_t    = logic,   // the execute unit's injected row
  parameter type tag_t    = logic,   // and its res_tag_t
  localparam int SP_AW    = $clog2(SP_ROWS),
  localparam int ACC_AW   = $clog2(ACC_ROWS),
  localparam int KW       = $clog2(DIM + 1),
  localparam int TIW      = (DIM > 1) ? $clog2(DIM) : 1,
  localparam int TAG_W    = $bits(tag_t)
) (
  input  logic                                clk_i,
  input  logic                                rst_ni,
  input  logic                                os_i,
  input  logic                                inj_valid_i,
  /* verilator lint_off UNUSEDSIGNAL */   // the fields the execute unit reads itself
  input  inj_t                                inj_i,
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic [DIM*8-1:0]                    ra_i,
  input  logic [DIM*8-1:0]                    rd_i,
  input  logic [DIM*8-1:0]                    rb_i,
  // W's write, a cycle after its read of RB: a row of zeros (wr_zero_i), into the transposer's
  // block (wr_tr_i), a weight column (wr_col_i)
  input  logic                                wr_valid_i,
  input  logic                                wr_zero_i,
  input  logic                                wr_tr_i,
  input  logic                                wr_col_i,
  input  logic [KW-1:0]                       wr_row_i,
  input  logic [1:0]                          wr_buf_i,
  input  logic [15:0]                         wr_cols_i,
  output mem_types#(DIM, SP_ROWS, 8)::req_t   sp_wr_o,
  output mem_types#(DIM, ACC_ROWS, 32)::req_t acc_wr_o,
  output logic                                out_valid_o,
  output tag_t                                out_tag_o,
  output logic                                active_o
);
  logic [DIM*8-1:0]  in_a, in_b, w_data, tr_col;
  logic [DIM*8-1:0]  a_row, d_row, d_src;   // RA's, RD's columns the row takes; D's bytes
  logic [DIM*8-1:0]  d_lanes;               // the lanes D takes from RD
  logic [DIM*32-1:0] in_d, out_c, res_c;
  logic              d_any;

  // the bytes of lanes 0 .. n-1 (the columns of a row of n): whole-word operations where a
  // per-lane comparison would take a branch a lane each cycle
  function automatic logic [DIM*8-1:0] lane_bytes(input logic [15:0] n);
    return (n >= 16'(DIM)) ? '1 : ~({(DIM*8){1'b1}} << (32'(n) * 8));
  endfunction

  // mesh inputs: lane i of RA (A, or OS's D) if i < a_cols, of RD (D, or OS's B) if i < d_cols,
  // RD's D over RA's; A or B from the transposer column instead; D's int8 lanes sign-extended
  always_comb begin
    a_row   = (inj_valid_i && inj_i.a_need) ? ra_i & lane_bytes(inj_i.a_cols) : '0;
    d_row   = (inj_valid_i && inj_i.d_need) ? rd_i & lane_bytes(inj_i.d_cols) : '0;
    d_lanes = (inj_valid_i && inj_i.d_need && !inj_i.d_is_b) ? lane_bytes(inj_i.d_cols) : '0;
    in_a    = !inj_valid_i ? '0 : inj_i.a_tr ? tr_col : inj_i.a_is_d ? '0 : a_row;
    in_b    = !inj_valid_i ? '0 : inj_i.b_tr ? tr_col : inj_i.d_is_b ? d_row : '0;
    d_src   = (d_row & d_lanes) | (inj_i.a_is_d ? a_row & ~d_lanes : '0);
    d_any   = inj_valid_i && ((inj_i.d_need && !inj_i.d_is_b) || (inj_i.a_need && inj_i.a_is_d));
    in_d    = '0;
    if (d_any) begin
      for (int i = 0; i < DIM; i++) in_d[i*32 +: 32] = 32'(signed'(d_src[i*8 +: 8]));
    end
    w_data = (wr_valid_i && !wr_zero_i) ? rb_i & lane_bytes(wr_cols_i) : '0;
  end

  transposer #(.DIM(DIM)) u_transposer (
    .clk_i,
    .rd_en_i   (inj_i.a_tr || inj_i.b_tr),
    .wr_en_i   (wr_valid_i && wr_tr_i),
    .wr_blk_i  (wr_buf_i[0]),
    .wr_row_i  (TIW'(wr_row_i)),
    .wr_data_i (w_data),
    .rd_blk_i  (inj_i.tblk),
    .rd_col_i  (inj_i.tcol),
    .rd_data_o (tr_col)
  );

  mesh #(.DIM(DIM), .NBUF(NBUF), .TAG_W(TAG_W)) u_mesh (
    .clk_i,
    .rst_ni,
    .os_i        (os_i),
    .in_valid_i  (inj_valid_i),
    .in_shift_i  (inj_i.shift),
    .in_prop_i   (inj_i.prop),
    .in_sel_i    (inj_i.buf_sel),
    .in_a_i      (in_a),
    .in_b_i      (in_b),
    .in_d_i      (in_d),
    .in_tag_i    (inj_i.tag),
    .w_we_i      (wr_valid_i && !wr_tr_i),
    .w_row_i     (wr_row_i),
    .w_col_i     (wr_col_i),
    .w_buf_i     (wr_buf_i),
    .w_data_i    (w_data),
    .out_valid_o (out_valid_o),
    .out_tag_o   (out_tag_o),
    .out_c_o     (out_c),
    .active_o    (active_o)
  );

  // results as rows leave the mesh (an OS row that brings out no result, or a compute without a
  // C, writes nothing: DestNone)
  always_comb begin
    res_c = out_c;
    if (out_tag_o.shift) begin
      for (int i = 0; i < DIM; i++) res_c[i*32 +: 32] = rshift_rne(out_c[i*32 +: 32], out_tag_o.rsh);
    end
  end

  always_comb begin
    sp_wr_o        = '0;
    acc_wr_o       = '0;
    sp_wr_o.we     = 1'b1;
    acc_wr_o.we    = 1'b1;
    sp_wr_o.req    = out_valid_o && out_tag_o.dest == DestSp;
    acc_wr_o.req   = out_valid_o && (out_tag_o.dest == DestAcc || out_tag_o.dest == DestAccum);
    acc_wr_o.accum = out_tag_o.dest == DestAccum;
    sp_wr_o.row    = SP_AW'(out_tag_o.row);
    acc_wr_o.row   = ACC_AW'(out_tag_o.row);
    acc_wr_o.wdata = res_c;
    sp_wr_o.wmask  = (out_tag_o.cols >= 16'(DIM)) ? '1 : ~({DIM{1'b1}} << out_tag_o.cols);
    acc_wr_o.wmask = sp_wr_o.wmask;
    if (sp_wr_o.req) begin
      for (int i = 0; i < DIM; i++) begin
        // saturated to int8: the low byte is the value
        sp_wr_o.wdata[i*8 +: 8] = 8'(scale_sat(res_c[i*32 +: 32], out_tag_o.scale, 1'b1,
                                               out_tag_o.relu));
      end
    end
  end
endmodule
