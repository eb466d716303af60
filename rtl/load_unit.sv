// Load unit: config_ld and mvin.
//
// An mvin issues one DMA read per DRAM row (cols x itemsize bytes at
// dram + row * stride), one request a cycle, and takes the next mvin as soon
// as the last request of this one is out; several mvins may wait for data.
// Read responses arrive in request order with their tag (slot, row, last);
// each response row is written block by block (one dim-wide block a cycle, block
// b at local row base + row + b * block_stride), column-masked, through the load
// scale (rne of the float32 product, saturated to the destination) unless the
// scale is 1.0. Accumulator rows take int32 elements, or int8 sign-extended
// with shrink; .accum adds. The mvin is done when its last block is written.
module load_unit import systolic_pkg::*; #(
  parameter int DIM           = 4,
  parameter int MAX_BLOCK_LEN = 2,
  parameter int SP_ROWS       = 256,
  parameter int ACC_ROWS      = 64,
  parameter int LDQ           = 4,
  parameter int N             = 10,
  localparam int SLOT_W       = $clog2(N),
  localparam int SP_AW        = $clog2(SP_ROWS),
  localparam int ACC_AW       = $clog2(ACC_ROWS),
  localparam int LANES        = DIM * MAX_BLOCK_LEN,
  localparam int RESP_W       = LANES * 32
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  // issue
  input  logic                iss_valid_i,
  output logic                iss_ready_o,
  input  logic [SLOT_W-1:0]   iss_slot_i,
  input  logic [6:0]          iss_funct_i,
  input  logic [63:0]         iss_rs1_i,
  input  logic [63:0]         iss_rs2_i,
  output logic [N-1:0]        done_o,
  // DMA read requests and responses
  output logic                rd_req_valid_o,
  input  logic                rd_req_ready_i,
  output logic [63:0]         rd_req_addr_o,
  output logic [15:0]         rd_req_len_o,
  output logic [31:0]         rd_req_tag_o,
  input  logic                rd_resp_valid_i,
  output logic                rd_resp_ready_o,
  input  logic [31:0]         rd_resp_tag_i,
  input  logic [RESP_W-1:0]   rd_resp_data_i,
  // local memory writes
  output logic                sp_req_o,
  output logic [SP_AW-1:0]    sp_row_o,
  output logic [DIM*8-1:0]    sp_wdata_o,
  output logic [DIM-1:0]      sp_wmask_o,
  input  logic                sp_gnt_i,
  output logic                acc_req_o,
  output logic                acc_acc_o,
  output logic [ACC_AW-1:0]   acc_row_o,
  output logic [DIM*32-1:0]   acc_wdata_o,
  output logic [DIM-1:0]      acc_wmask_o,
  input  logic                acc_gnt_i,
  // status
  output logic                busy_o,
  output logic                dma_wait_o,
  output logic [15:0]         outstanding_o
);
  localparam int LSLOT_W = (LDQ > 1) ? $clog2(LDQ) : 1;

  // config_ld state, per mvin state id
  logic [63:0] cfg_stride_q [3];
  logic        cfg_shrink_q [3];
  logic [15:0] cfg_bstride_q [3];
  logic [31:0] cfg_scale_q [3];

  // per-slot context of mvins in flight
  logic [28:0] ctx_base_q [LDQ];
  logic        ctx_acc_q [LDQ];
  logic        ctx_accum_q [LDQ];
  logic        ctx_wide_q [LDQ];      // int32 elements in DRAM
  logic [15:0] ctx_bstride_q [LDQ];
  logic [31:0] ctx_scale_q [LDQ];
  logic [15:0] ctx_cols_q [LDQ];

  // request engine
  logic              rq_active_q;
  logic [63:0]       rq_addr_q, rq_stride_q;
  logic [15:0]       rq_row_q, rq_rows_q, rq_len_q;
  logic [SLOT_W-1:0] rq_slot_q;

  // write-back engine: one response row, written a block per cycle
  logic              wb_busy_q;
  logic [31:0]       wb_lane_q [LANES];
  logic [SLOT_W-1:0] wb_slot_q;
  logic [15:0]       wb_row_q;
  logic              wb_last_q;
  logic [7:0]        wb_blk_q, wb_nblk_q;
  logic [15:0]       outstanding_q, inflight_mvins_q;

  logic              is_mvin, iss_fire, rq_fire, resp_fire, wb_gnt, wb_fin;
  logic [1:0]        iss_state;
  logic [LSLOT_W-1:0] wb_ls;

  assign iss_ready_o = !rq_active_q;
  assign iss_fire    = iss_valid_i && iss_ready_o;
  assign is_mvin     = iss_funct_i != 7'd0;
  assign iss_state   = (iss_funct_i == 7'd0) ? iss_rs1_i[4:3] :
                       (iss_funct_i == 7'd2) ? 2'd0 : (iss_funct_i == 7'd1) ? 2'd1 : 2'd2;

  assign rd_req_valid_o = rq_active_q;
  assign rd_req_addr_o  = rq_addr_q;
  assign rd_req_len_o   = rq_len_q;
  assign rd_req_tag_o   = {15'(rq_slot_q), (rq_row_q == rq_rows_q - 16'd1), rq_row_q};
  assign rq_fire        = rd_req_valid_o && rd_req_ready_i;

  assign wb_ls  = LSLOT_W'(wb_slot_q);
  assign wb_gnt = wb_busy_q && (ctx_acc_q[wb_ls] ? acc_gnt_i : sp_gnt_i);
  assign wb_fin = wb_gnt && (wb_blk_q == wb_nblk_q - 8'd1);
  assign rd_resp_ready_o = !wb_busy_q || wb_fin;
  assign resp_fire = rd_resp_valid_i && rd_resp_ready_o;

  // the block being written: lanes, scale, mask
  always_comb begin
    logic [31:0] v;
    logic [31:0] row;
    v   = '0;
    row = '0;
    sp_req_o    = 1'b0;
    acc_req_o   = 1'b0;
    acc_acc_o   = 1'b0;
    sp_row_o    = '0;
    acc_row_o   = '0;
    sp_wdata_o  = '0;
    acc_wdata_o = '0;
    sp_wmask_o  = '0;
    acc_wmask_o = '0;
    if (wb_busy_q) begin
      row = 32'(ctx_base_q[wb_ls]) + 32'(wb_row_q) + 32'(wb_blk_q) * 32'(ctx_bstride_q[wb_ls]);
      for (int i = 0; i < DIM; i++) begin
        v = wb_lane_q[i];
        if (ctx_scale_q[wb_ls] != F32_ONE) v = scale_sat(v, ctx_scale_q[wb_ls], !ctx_acc_q[wb_ls], 1'b0);
        sp_wdata_o[i*8 +: 8]   = v[7:0];
        acc_wdata_o[i*32 +: 32] = v;
        sp_wmask_o[i]  = (32'(wb_blk_q) * DIM + i) < 32'(ctx_cols_q[wb_ls]);
        acc_wmask_o[i] = sp_wmask_o[i];
      end
      if (ctx_acc_q[wb_ls]) begin
        acc_req_o = 1'b1;
        acc_acc_o = ctx_accum_q[wb_ls];
        acc_row_o = ACC_AW'(row);
      end else begin
        sp_req_o = 1'b1;
        sp_row_o = SP_AW'(row);
      end
    end
  end

  always_comb begin
    for (int i = 0; i < N; i++) begin
      done_o[i] = (iss_fire && !is_mvin && iss_slot_i == SLOT_W'(i)) || (wb_fin && wb_last_q && wb_slot_q == SLOT_W'(i));
    end
  end

  assign busy_o        = inflight_mvins_q != '0;
  assign dma_wait_o    = (outstanding_q != '0 && !rd_resp_valid_i) || (rd_req_valid_o && !rd_req_ready_i);
  assign outstanding_o = outstanding_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rq_active_q      <= 1'b0;
      wb_busy_q        <= 1'b0;
      outstanding_q    <= '0;
      inflight_mvins_q <= '0;
    end else begin
      outstanding_q <= outstanding_q + (rq_fire ? 16'd1 : 16'd0) - (resp_fire ? 16'd1 : 16'd0);
      inflight_mvins_q <= inflight_mvins_q + ((iss_fire && is_mvin) ? 16'd1 : 16'd0)
                          - ((wb_fin && wb_last_q) ? 16'd1 : 16'd0);
      if (rq_fire && rq_row_q == rq_rows_q - 16'd1) rq_active_q <= 1'b0;
      if (iss_fire && is_mvin) rq_active_q <= 1'b1;
      if (wb_fin) wb_busy_q <= 1'b0;
      if (resp_fire) wb_busy_q <= 1'b1;
    end
  end

  always_ff @(posedge clk_i) begin
    if (rq_fire) begin
      rq_addr_q <= rq_addr_q + rq_stride_q;
      rq_row_q  <= rq_row_q + 16'd1;
    end
    if (wb_gnt) wb_blk_q <= wb_blk_q + 8'd1;
    if (iss_fire) begin
      if (!is_mvin) begin
        cfg_stride_q[iss_state]  <= iss_rs2_i;
        cfg_shrink_q[iss_state]  <= iss_rs1_i[2];
        cfg_bstride_q[iss_state] <= iss_rs1_i[31:16];
        cfg_scale_q[iss_state]   <= iss_rs1_i[63:32];
      end else begin
        logic [LSLOT_W-1:0] ls;
        logic               to_acc, wide;
        ls     = LSLOT_W'(iss_slot_i);
        to_acc = iss_rs2_i[31];
        wide   = to_acc && !cfg_shrink_q[iss_state];
        rq_addr_q   <= iss_rs1_i;
        rq_stride_q <= cfg_stride_q[iss_state];
        rq_row_q    <= '0;
        rq_rows_q   <= op_rows(iss_rs2_i);
        rq_len_q    <= wide ? op_cols(iss_rs2_i) << 2 : op_cols(iss_rs2_i);
        rq_slot_q   <= iss_slot_i;
        ctx_base_q[ls]    <= iss_rs2_i[28:0];
        ctx_acc_q[ls]     <= to_acc;
        ctx_accum_q[ls]   <= iss_rs2_i[30];
        ctx_wide_q[ls]    <= wide;
        ctx_bstride_q[ls] <= cfg_bstride_q[iss_state];
        ctx_scale_q[ls]   <= cfg_scale_q[iss_state];
        ctx_cols_q[ls]    <= op_cols(iss_rs2_i);
      end
    end
    if (wb_gnt && !wb_fin) begin
      // next block: shift the lanes down by one block
      for (int i = 0; i < LANES - DIM; i++) wb_lane_q[i] <= wb_lane_q[i + DIM];
    end
    if (resp_fire) begin
      logic [LSLOT_W-1:0] rs;
      logic [15:0]        cols;
      rs   = LSLOT_W'(rd_resp_tag_i[31:17]);
      cols = ctx_cols_q[rs];
      wb_slot_q <= SLOT_W'(rd_resp_tag_i[31:17]);
      wb_last_q <= rd_resp_tag_i[16];
      wb_row_q  <= rd_resp_tag_i[15:0];
      wb_blk_q  <= '0;
      wb_nblk_q <= 8'((cols + 16'(DIM - 1)) / 16'(DIM));
      for (int i = 0; i < LANES; i++) begin
        if (ctx_wide_q[rs]) wb_lane_q[i] <= rd_resp_data_i[i*32 +: 32];
        else wb_lane_q[i] <= {{24{rd_resp_data_i[i*8+7]}}, rd_resp_data_i[i*8 +: 8]};
      end
    end
  end
endmodule
