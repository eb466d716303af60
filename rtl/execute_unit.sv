// Execute unit: config_ex and the (preload-merged) computes, weight-stationary.
//
// Two stages in front of the mesh:
//  * W takes the next entry from the execute queue. For compute_preloaded it
//    reads the DIM weight rows (B; rows past b_rows and columns past b_cols are
//    zero) one per cycle from the scratchpad into the next of NBUF weight
//    buffers, after the rows that last used that buffer have left the mesh.
//    compute_accumulated keeps the current buffer. config_ex takes effect here;
//    each compute keeps a copy of the config it saw.
//  * S streams the c_rows rows of A (a_stride apart) and D, one row a cycle
//    when the banks allow (A and D in one bank take two cycles), into the mesh.
//    W loads the next weights while S streams, so back-to-back computes keep
//    the mesh full.
// Rows leave the mesh 2*DIM-1 cycles later and are written, column-masked, to
// the accumulator (overwrite or accumulate) or through the scale unit and ReLU to
// the scratchpad. A compute is done when its last row is written.
module execute_unit import systolic_pkg::*; #(
  parameter int DIM      = 4,
  parameter int SP_ROWS  = 256,
  parameter int ACC_ROWS = 64,
  parameter int N        = 10,
  parameter int NBUF     = 3,
  localparam int SLOT_W  = $clog2(N),
  localparam int SP_AW   = $clog2(SP_ROWS),
  localparam int ACC_AW  = $clog2(ACC_ROWS),
  localparam int KW      = $clog2(DIM + 1)
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  // issue
  input  logic                iss_valid_i,
  output logic                iss_ready_o,
  input  logic [SLOT_W-1:0]   iss_slot_i,
  input  insn_t               iss_i,
  input  preload_t            iss_pre_i,
  output logic [N-1:0]        done_o,
  // scratchpad reads: A, D, B
  output logic [2:0]          sp_rd_req_o,
  output logic [2:0][SP_AW-1:0] sp_rd_row_o,
  input  logic [2:0]          sp_rd_gnt_i,
  input  logic [2:0][DIM*8-1:0] sp_rd_data_i,
  // result writes (always granted: highest priority)
  output logic                sp_wr_req_o,
  output logic [SP_AW-1:0]    sp_wr_row_o,
  output logic [DIM*8-1:0]    sp_wr_data_o,
  output logic [DIM-1:0]      sp_wr_mask_o,
  output logic                acc_wr_req_o,
  output logic                acc_wr_acc_o,
  output logic [ACC_AW-1:0]   acc_wr_row_o,
  output logic [DIM*32-1:0]   acc_wr_data_o,
  output logic [DIM-1:0]      acc_wr_mask_o,
  // status
  output logic                busy_o,
  output logic                mesh_busy_o,
  output logic [3:0]          dbg_state_o
);
  localparam int RA = 0, RD = 1, RB = 2;
  localparam int TAG_W = SLOT_W + 1 + 2 + 29 + 16 + 32 + 1;
  localparam logic [1:0] CK_NONE = 2'd0, CK_SP = 2'd1, CK_ACC = 2'd2, CK_ACCUM = 2'd3;

  // config_ex
  logic [15:0] cfg_a_stride_q, cfg_c_stride_q;
  logic [31:0] cfg_scale_q;
  logic        cfg_relu_q;

  // ---- W stage ------------------------------------------------------------------
  logic              w_valid_q, w_pre_q, w_started_q;
  logic [SLOT_W-1:0] w_slot_q;
  logic [63:0]       w_a_q, w_d_q, w_b_q, w_c_q;
  logic [15:0]       w_a_stride_q, w_c_stride_q;
  logic [31:0]       w_scale_q;
  logic              w_relu_q;
  logic [KW-1:0]     w_k_q;
  logic [1:0]        cur_buf_q, nbuf;
  logic [7:0]        busy_cnt_q [NBUF];
  // weight-row write, one cycle after the read
  logic              wwr_valid_q, wwr_zero_q;
  logic [KW-1:0]     wwr_row_q;
  logic [1:0]        wwr_buf_q;
  logic [15:0]       wwr_cols_q;

  // ---- S stage ------------------------------------------------------------------
  logic              s_valid_q, s_a_got_q, s_d_got_q;
  logic [SLOT_W-1:0] s_slot_q;
  logic [63:0]       s_a_q, s_d_q, s_c_q;
  logic [15:0]       s_a_stride_q, s_c_stride_q, s_row_q;
  logic [31:0]       s_a_row_q, s_c_row_q;
  logic [31:0]       s_scale_q;
  logic              s_relu_q;
  logic [1:0]        s_buf_q;

  // ---- injection ------------------------------------------------------------------
  logic              inj_valid_q, inj_a_need_q, inj_a_arr_q, inj_d_need_q, inj_d_arr_q;
  logic [15:0]       inj_a_cols_q, inj_d_cols_q;
  logic [1:0]        inj_buf_q;
  logic [TAG_W-1:0]  inj_tag_q;
  logic              cap_a_q, cap_d_q;
  logic [DIM*8-1:0]  a_buf_q, d_buf_q;

  logic              iss_fire, is_cfg, w_step, w_bneed, w_go, w_loaded, hand, s_free;
  logic              s_need_a, s_need_d, s_a_ok, s_d_ok, s_row_done, s_last;
  logic [DIM*8-1:0]  in_a;
  logic [DIM*32-1:0] in_d;
  logic [DIM*8-1:0]  w_data;
  logic              out_valid, mesh_active;
  logic [TAG_W-1:0]  out_tag;
  logic [DIM*32-1:0] out_c;

  assign nbuf   = (cur_buf_q == 2'(NBUF - 1)) ? 2'd0 : cur_buf_q + 2'd1;
  assign is_cfg = iss_i.funct == 7'd0;

  // W: weight rows (requests depend on state only, grants come back)
  assign w_go    = w_valid_q && w_pre_q && (w_k_q != KW'(DIM)) && (w_started_q || busy_cnt_q[nbuf] == 8'd0);
  assign w_bneed = (32'(w_k_q) < 32'(op_rows(w_b_q))) && (op_addr(w_b_q) != GARBAGE_ADDR);
  // S: rows of A and D
  assign s_need_a = s_valid_q && (s_row_q < op_rows(s_a_q)) && (op_addr(s_a_q) != GARBAGE_ADDR);
  assign s_need_d = s_valid_q && (s_row_q < op_rows(s_d_q)) && (op_addr(s_d_q) != GARBAGE_ADDR);

  assign sp_rd_req_o[RA] = s_need_a && !s_a_got_q;
  assign sp_rd_req_o[RD] = s_need_d && !s_d_got_q;
  assign sp_rd_req_o[RB] = w_go && w_bneed;
  assign sp_rd_row_o[RA] = SP_AW'(s_a_row_q);
  assign sp_rd_row_o[RD] = SP_AW'(32'(op_addr(s_d_q)) + 32'(s_row_q));
  assign sp_rd_row_o[RB] = SP_AW'(32'(op_addr(w_b_q)) + 32'(w_k_q));

  assign w_step   = w_go && (!w_bneed || sp_rd_gnt_i[RB]);
  assign w_loaded = !w_pre_q || (w_k_q == KW'(DIM)) || (w_step && w_k_q == KW'(DIM - 1));
  assign s_a_ok   = !s_need_a || s_a_got_q || sp_rd_gnt_i[RA];
  assign s_d_ok   = !s_need_d || s_d_got_q || sp_rd_gnt_i[RD];
  assign s_row_done  = s_valid_q && s_a_ok && s_d_ok;
  assign s_last      = s_row_done && (s_row_q == op_rows(s_c_q) - 16'd1);
  assign s_free      = !s_valid_q || s_last;
  assign hand        = w_valid_q && w_loaded && s_free;
  assign iss_ready_o = !w_valid_q || hand;
  assign iss_fire    = iss_valid_i && iss_ready_o;

  // mesh inputs
  always_comb begin
    logic [DIM*8-1:0] ar, dr;
    in_a = '0;
    in_d = '0;
    ar = inj_a_arr_q ? sp_rd_data_i[RA] : a_buf_q;
    dr = inj_d_arr_q ? sp_rd_data_i[RD] : d_buf_q;
    if (inj_valid_q) begin
      for (int i = 0; i < DIM; i++) begin
        if (inj_a_need_q && 16'(i) < inj_a_cols_q) in_a[i*8 +: 8] = ar[i*8 +: 8];
        if (inj_d_need_q && 16'(i) < inj_d_cols_q) in_d[i*32 +: 32] = {{24{dr[i*8+7]}}, dr[i*8 +: 8]};
      end
    end
    w_data = '0;
    if (wwr_valid_q && !wwr_zero_q) begin
      for (int i = 0; i < DIM; i++) begin
        if (16'(i) < wwr_cols_q) w_data[i*8 +: 8] = sp_rd_data_i[RB][i*8 +: 8];
      end
    end
  end

  mesh #(.DIM(DIM), .NBUF(NBUF), .TAG_W(TAG_W)) u_mesh (
    .clk_i,
    .rst_ni,
    .in_valid_i  (inj_valid_q),
    .in_sel_i    (inj_buf_q),
    .in_a_i      (in_a),
    .in_d_i      (in_d),
    .in_tag_i    (inj_tag_q),
    .w_we_i      (wwr_valid_q),
    .w_row_i     (wwr_row_q),
    .w_buf_i     (wwr_buf_q),
    .w_data_i    (w_data),
    .out_valid_o (out_valid),
    .out_tag_o   (out_tag),
    .out_c_o     (out_c),
    .active_o    (mesh_active)
  );

  // results
  always_comb begin
    logic [SLOT_W-1:0] slot;
    logic              last, relu;
    logic [1:0]        kind;
    logic [28:0]       row;
    logic [15:0]       cols;
    logic [31:0]       scale, v;
    v = '0;
    {slot, last, kind, row, cols, scale, relu} = out_tag;
    sp_wr_req_o   = out_valid && kind == CK_SP;
    acc_wr_req_o  = out_valid && kind[1];
    acc_wr_acc_o  = kind == CK_ACCUM;
    sp_wr_row_o   = SP_AW'(row);
    acc_wr_row_o  = ACC_AW'(row);
    acc_wr_data_o = out_c;
    sp_wr_data_o  = '0;
    for (int i = 0; i < DIM; i++) begin
      sp_wr_mask_o[i]  = 16'(i) < cols;
      acc_wr_mask_o[i] = 16'(i) < cols;
    end
    if (sp_wr_req_o) begin
      for (int i = 0; i < DIM; i++) begin
        v = scale_sat(out_c[i*32 +: 32], scale, 1'b1, relu);
        sp_wr_data_o[i*8 +: 8] = v[7:0];
      end
    end
  end

  always_comb begin
    for (int i = 0; i < N; i++) begin
      done_o[i] = (out_valid && out_tag[TAG_W-1 -: SLOT_W] == SLOT_W'(i) && out_tag[TAG_W-1-SLOT_W])
                  || (iss_fire && is_cfg && iss_slot_i == SLOT_W'(i));
    end
  end

  assign busy_o      = w_valid_q || s_valid_q || inj_valid_q || mesh_active;
  assign mesh_busy_o = inj_valid_q;
  assign dbg_state_o = {s_valid_q, w_valid_q && w_pre_q && !w_started_q && busy_cnt_q[nbuf] != 8'd0,
                        w_valid_q && !w_loaded, w_valid_q && w_loaded && !s_free};

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      w_valid_q   <= 1'b0;
      s_valid_q   <= 1'b0;
      inj_valid_q <= 1'b0;
      wwr_valid_q <= 1'b0;
      cap_a_q     <= 1'b0;
      cap_d_q     <= 1'b0;
      cur_buf_q   <= '0;
      cfg_a_stride_q <= 16'd1;
      cfg_c_stride_q <= 16'd1;
      cfg_scale_q    <= F32_ONE;
      cfg_relu_q     <= 1'b0;
      for (int b = 0; b < NBUF; b++) busy_cnt_q[b] <= '0;
    end else begin
      // weight buffers in use by rows in the mesh
      for (int b = 0; b < NBUF; b++) begin
        if (inj_valid_q && inj_buf_q == 2'(b)) busy_cnt_q[b] <= 8'(2 * DIM + 1);
        else if (busy_cnt_q[b] != 8'd0) busy_cnt_q[b] <= busy_cnt_q[b] - 8'd1;
      end
      // W
      wwr_valid_q <= w_step;
      if (w_step) begin
        w_k_q       <= w_k_q + 1'b1;
        w_started_q <= 1'b1;
        wwr_row_q   <= w_k_q;
        wwr_zero_q  <= !w_bneed;
        wwr_buf_q   <= nbuf;
        wwr_cols_q  <= op_cols(w_b_q);
      end
      if (hand) begin
        w_valid_q <= 1'b0;
        if (w_pre_q) cur_buf_q <= nbuf;
      end
      if (iss_fire) begin
        if (is_cfg) begin
          cfg_relu_q     <= iss_i.rs1[3];
          cfg_a_stride_q <= iss_i.rs1[31:16];
          cfg_scale_q    <= iss_i.rs1[63:32];
          cfg_c_stride_q <= iss_i.rs2[63:48];
        end else begin
          w_valid_q    <= 1'b1;
          w_pre_q      <= iss_i.funct == 7'd4;
          w_started_q  <= 1'b0;
          w_k_q        <= '0;
          w_slot_q     <= iss_slot_i;
          w_a_q        <= iss_i.rs1;
          w_d_q        <= iss_i.rs2;
          w_b_q        <= iss_pre_i.b;
          w_c_q        <= iss_pre_i.c;
          w_a_stride_q <= cfg_a_stride_q;
          w_c_stride_q <= cfg_c_stride_q;
          w_scale_q    <= cfg_scale_q;
          w_relu_q     <= cfg_relu_q;
        end
      end
      // S
      cap_a_q <= sp_rd_req_o[RA] && sp_rd_gnt_i[RA];
      cap_d_q <= sp_rd_req_o[RD] && sp_rd_gnt_i[RD];
      inj_valid_q <= s_row_done;
      if (s_row_done) begin
        logic [1:0] ck;
        ck = (op_addr(s_c_q) == GARBAGE_ADDR) ? CK_NONE :
             !s_c_q[31] ? CK_SP : s_c_q[30] ? CK_ACCUM : CK_ACC;
        inj_a_need_q <= s_need_a;
        inj_a_arr_q  <= s_need_a && !s_a_got_q;
        inj_d_need_q <= s_need_d;
        inj_d_arr_q  <= s_need_d && !s_d_got_q;
        inj_a_cols_q <= op_cols(s_a_q);
        inj_d_cols_q <= op_cols(s_d_q);
        inj_buf_q    <= s_buf_q;
        inj_tag_q    <= {s_slot_q, s_last, ck, s_c_row_q[28:0], op_cols(s_c_q), s_scale_q, s_relu_q};
        s_row_q   <= s_row_q + 16'd1;
        s_a_row_q <= s_a_row_q + 32'(s_a_stride_q);
        s_c_row_q <= s_c_row_q + 32'(s_c_stride_q);
        s_a_got_q <= 1'b0;
        s_d_got_q <= 1'b0;
        if (s_last) s_valid_q <= 1'b0;
      end else begin
        if (sp_rd_req_o[RA] && sp_rd_gnt_i[RA]) s_a_got_q <= 1'b1;
        if (sp_rd_req_o[RD] && sp_rd_gnt_i[RD]) s_d_got_q <= 1'b1;
      end
      if (hand) begin
        s_valid_q    <= 1'b1;
        s_slot_q     <= w_slot_q;
        s_a_q        <= w_a_q;
        s_d_q        <= w_d_q;
        s_c_q        <= w_c_q;
        s_a_stride_q <= w_a_stride_q;
        s_c_stride_q <= w_c_stride_q;
        s_scale_q    <= w_scale_q;
        s_relu_q     <= w_relu_q;
        s_buf_q      <= w_pre_q ? nbuf : cur_buf_q;
        s_row_q      <= '0;
        s_a_row_q    <= 32'(op_addr(w_a_q));
        s_c_row_q    <= 32'(op_addr(w_c_q));
        s_a_got_q    <= 1'b0;
        s_d_got_q    <= 1'b0;
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (cap_a_q) a_buf_q <= sp_rd_data_i[RA];
    if (cap_d_q) d_buf_q <= sp_rd_data_i[RD];
  end
endmodule
