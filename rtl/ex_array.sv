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
  logic [DIM*32-1:0] in_d, out_c, res_c;

  // mesh inputs
  always_comb begin
    in_a = '0;
    in_b = '0;
    in_d = '0;
    if (inj_valid_i) begin
      for (int i = 0; i < DIM; i++) begin
        if (inj_i.a_need && 16'(i) < inj_i.a_cols) begin
          if (inj_i.a_is_d) in_d[i*32 +: 32] = {{24{ra_i[i*8+7]}}, ra_i[i*8 +: 8]};
          else              in_a[i*8 +: 8]   = ra_i[i*8 +: 8];
        end
        if (inj_i.d_need && 16'(i) < inj_i.d_cols) begin
          if (inj_i.d_is_b) in_b[i*8 +: 8]   = rd_i[i*8 +: 8];
          else              in_d[i*32 +: 32] = {{24{rd_i[i*8+7]}}, rd_i[i*8 +: 8]};
        end
        if (inj_i.a_tr) in_a[i*8 +: 8] = tr_col[i*8 +: 8];
        if (inj_i.b_tr) in_b[i*8 +: 8] = tr_col[i*8 +: 8];
      end
    end
    w_data = '0;
    if (wr_valid_i && !wr_zero_i) begin
      for (int i = 0; i < DIM; i++) begin
        if (16'(i) < wr_cols_i) w_data[i*8 +: 8] = rb_i[i*8 +: 8];
      end
    end
  end

  transposer #(.DIM(DIM)) u_transposer (
    .clk_i,
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
    for (int i = 0; i < DIM; i++) begin
      res_c[i*32 +: 32] = out_tag_o.shift ? rshift_rne(out_c[i*32 +: 32], out_tag_o.rsh) : out_c[i*32 +: 32];
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
    for (int i = 0; i < DIM; i++) begin
      sp_wr_o.wmask[i]  = 16'(i) < out_tag_o.cols;
      acc_wr_o.wmask[i] = 16'(i) < out_tag_o.cols;
    end
    if (sp_wr_o.req) begin
      for (int i = 0; i < DIM; i++) begin
        // saturated to int8: the low byte is the value
        sp_wr_o.wdata[i*8 +: 8] = 8'(scale_sat(res_c[i*32 +: 32], out_tag_o.scale, 1'b1,
                                               out_tag_o.relu));
      end
    end
  end
endmodule
