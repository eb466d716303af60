// Store unit: config_st and mvout.
//
// An mvout reads its local rows one a cycle (scratchpad: the int8 row as it is;
// accumulator: config_st's float32 scale, rne, int8 saturation and ReLU, or with
// .full the raw int32 row after ReLU), queues each row as one DMA write of
// cols x itemsize bytes at dram + row * stride, and takes the next mvout once
// all its rows are read. It is done when the DMA has acknowledged its last row.
module store_unit import systolic_pkg::*; #(
  parameter int DIM      = 4,
  parameter int SP_ROWS  = 256,
  parameter int ACC_ROWS = 64,
  parameter int N        = 10,
  localparam int SLOT_W  = $clog2(N),
  localparam int SP_AW   = $clog2(SP_ROWS),
  localparam int ACC_AW  = $clog2(ACC_ROWS),
  localparam int FIFO    = 3
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  input  logic                iss_valid_i,
  output logic                iss_ready_o,
  input  logic [SLOT_W-1:0]   iss_slot_i,
  input  logic [6:0]          iss_funct_i,
  input  logic [63:0]         iss_rs1_i,
  input  logic [63:0]         iss_rs2_i,
  output logic [N-1:0]        done_o,
  // local reads
  output logic                sp_req_o,
  output logic [SP_AW-1:0]    sp_row_o,
  input  logic                sp_gnt_i,
  input  logic [DIM*8-1:0]    sp_rdata_i,
  output logic                acc_req_o,
  output logic [ACC_AW-1:0]   acc_row_o,
  input  logic                acc_gnt_i,
  input  logic [DIM*32-1:0]   acc_rdata_i,
  // DMA writes
  output logic                wr_req_valid_o,
  input  logic                wr_req_ready_i,
  output logic [63:0]         wr_req_addr_o,
  output logic [15:0]         wr_req_len_o,
  output logic [31:0]         wr_req_tag_o,
  output logic [DIM*32-1:0]   wr_req_data_o,
  input  logic                wr_ack_valid_i,
  input  logic [31:0]         wr_ack_tag_i,
  // status
  output logic                busy_o,
  output logic                dma_wait_o,
  output logic [15:0]         outstanding_o
);
  localparam int FW = $clog2(FIFO + 1);

  logic [63:0] cfg_stride_q;
  logic        cfg_relu_q;
  logic [31:0] cfg_scale_q;

  // the mvout being read
  logic              rd_active_q, rd_acc_q, rd_full_q, rd_relu_q;
  logic [28:0]       rd_row_q;
  logic [15:0]       rd_idx_q, rd_rows_q, rd_cols_q;
  logic [63:0]       rd_addr_q, rd_stride_q;
  logic [31:0]       rd_scale_q;
  logic [SLOT_W-1:0] rd_slot_q;
  // the row whose data arrives this cycle
  logic              ar_valid_q, ar_acc_q, ar_full_q, ar_relu_q, ar_last_q;
  logic [15:0]       ar_cols_q;
  logic [63:0]       ar_addr_q;
  logic [31:0]       ar_scale_q;
  logic [SLOT_W-1:0] ar_slot_q;
  // rows waiting for the DMA
  logic [63:0]       f_addr_q [FIFO];
  logic [15:0]       f_len_q [FIFO];
  logic [31:0]       f_tag_q [FIFO];
  logic [DIM*32-1:0] f_data_q [FIFO];
  logic [FW-1:0]     f_cnt_q, f_rd_q, f_wr_q;
  logic [15:0]       outstanding_q, inflight_q;

  logic iss_fire, is_cfg, rd_fire, rd_gnt, pop, push;
  logic [DIM*32-1:0] row_data;

  assign is_cfg      = iss_funct_i == 7'd0;
  assign iss_ready_o = !rd_active_q;
  assign iss_fire    = iss_valid_i && iss_ready_o;

  assign rd_fire   = rd_active_q && (32'(f_cnt_q) + (ar_valid_q ? 32'd1 : 32'd0) < FIFO);
  assign sp_req_o  = rd_fire && !rd_acc_q;
  assign acc_req_o = rd_fire && rd_acc_q;
  assign sp_row_o  = SP_AW'(rd_row_q);
  assign acc_row_o = ACC_AW'(rd_row_q);
  assign rd_gnt    = rd_acc_q ? acc_gnt_i : sp_gnt_i;

  // epilogue of the arriving row
  always_comb begin
    logic [31:0] v;
    v = '0;
    row_data = '0;
    if (ar_valid_q) begin
      for (int i = 0; i < DIM; i++) begin
        if (!ar_acc_q) begin
          row_data[i*8 +: 8] = sp_rdata_i[i*8 +: 8];
        end else if (ar_full_q) begin
          v = acc_rdata_i[i*32 +: 32];
          if (ar_relu_q && v[31]) v = '0;
          row_data[i*32 +: 32] = v;
        end else begin
          v = scale_sat(acc_rdata_i[i*32 +: 32], ar_scale_q, 1'b1, ar_relu_q);
          row_data[i*8 +: 8] = v[7:0];
        end
      end
    end
  end

  assign push = ar_valid_q;
  assign wr_req_valid_o = f_cnt_q != '0;
  assign wr_req_addr_o  = f_addr_q[f_rd_q];
  assign wr_req_len_o   = f_len_q[f_rd_q];
  assign wr_req_tag_o   = f_tag_q[f_rd_q];
  assign wr_req_data_o  = f_data_q[f_rd_q];
  assign pop = wr_req_valid_o && wr_req_ready_i;

  always_comb begin
    for (int i = 0; i < N; i++) begin
      done_o[i] = (iss_fire && is_cfg && iss_slot_i == SLOT_W'(i))
                  || (wr_ack_valid_i && wr_ack_tag_i[16] && wr_ack_tag_i[31:17] == 15'(i));
    end
  end

  assign busy_o        = inflight_q != '0;
  assign dma_wait_o    = wr_req_valid_o && !wr_req_ready_i;
  assign outstanding_o = outstanding_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_active_q   <= 1'b0;
      ar_valid_q    <= 1'b0;
      f_cnt_q       <= '0;
      f_rd_q        <= '0;
      f_wr_q        <= '0;
      outstanding_q <= '0;
      inflight_q    <= '0;
      cfg_stride_q  <= '0;
      cfg_relu_q    <= 1'b0;
      cfg_scale_q   <= F32_ONE;
    end else begin
      ar_valid_q <= rd_fire && rd_gnt;
      if (rd_fire && rd_gnt) begin
        ar_acc_q   <= rd_acc_q;
        ar_full_q  <= rd_full_q;
        ar_relu_q  <= rd_relu_q;
        ar_scale_q <= rd_scale_q;
        ar_cols_q  <= rd_cols_q;
        ar_addr_q  <= rd_addr_q;
        ar_slot_q  <= rd_slot_q;
        ar_last_q  <= rd_idx_q == rd_rows_q - 16'd1;
        rd_row_q   <= rd_row_q + 29'd1;
        rd_idx_q   <= rd_idx_q + 16'd1;
        rd_addr_q  <= rd_addr_q + rd_stride_q;
        if (rd_idx_q == rd_rows_q - 16'd1) rd_active_q <= 1'b0;
      end
      if (iss_fire) begin
        if (is_cfg) begin
          cfg_relu_q   <= iss_rs1_i[2];
          cfg_stride_q <= {32'h0, iss_rs2_i[31:0]};
          cfg_scale_q  <= iss_rs2_i[63:32];
        end else begin
          rd_active_q <= 1'b1;
          rd_acc_q    <= iss_rs2_i[31];
          rd_full_q   <= iss_rs2_i[31] && iss_rs2_i[29];
          rd_relu_q   <= cfg_relu_q;
          rd_scale_q  <= cfg_scale_q;
          rd_row_q    <= iss_rs2_i[28:0];
          rd_idx_q    <= '0;
          rd_rows_q   <= op_rows(iss_rs2_i);
          rd_cols_q   <= op_cols(iss_rs2_i);
          rd_addr_q   <= iss_rs1_i;
          rd_stride_q <= cfg_stride_q;
          rd_slot_q   <= iss_slot_i;
        end
      end
      if (push) begin
        f_addr_q[f_wr_q] <= ar_addr_q;
        f_len_q[f_wr_q]  <= ar_full_q ? ar_cols_q << 2 : ar_cols_q;
        f_tag_q[f_wr_q]  <= {15'(ar_slot_q), ar_last_q, 16'h0};
        f_data_q[f_wr_q] <= row_data;
        f_wr_q <= (f_wr_q == FW'(FIFO - 1)) ? '0 : f_wr_q + 1'b1;
      end
      if (pop) f_rd_q <= (f_rd_q == FW'(FIFO - 1)) ? '0 : f_rd_q + 1'b1;
      f_cnt_q <= f_cnt_q + (push ? FW'(1) : FW'(0)) - (pop ? FW'(1) : FW'(0));
      outstanding_q <= outstanding_q + (pop ? 16'd1 : 16'd0) - (wr_ack_valid_i ? 16'd1 : 16'd0);
      inflight_q <= inflight_q + ((iss_fire && !is_cfg) ? 16'd1 : 16'd0)
                    - ((wr_ack_valid_i && wr_ack_tag_i[16]) ? 16'd1 : 16'd0);
    end
  end
endmodule
