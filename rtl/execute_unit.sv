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
  parameter int NBUF     = 3,    // weight buffers in every PE
  localparam int SLOT_W  = $clog2(N),
  localparam int SP_AW   = $clog2(SP_ROWS),
  localparam int ACC_AW  = $clog2(ACC_ROWS),
  localparam int KW      = $clog2(DIM + 1)
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  // issue: an instruction and its slot, the merged preload; done: one bit per slot
  input  logic                iss_valid_i,
  output logic                iss_ready_o,
  input  issue_types#(N)::issue_t iss_i,
  input  preload_t            iss_pre_i,
  output logic [N-1:0]        done_o,
  // scratchpad reads: A, D, B (the row comes the cycle after the grant)
  output mem_types#(DIM, SP_ROWS, 8)::req_t [2:0] sp_rd_o,
  input  logic [2:0]                             sp_rd_gnt_i,
  input  logic [2:0][DIM*8-1:0]                  sp_rd_data_i,
  // result writes (always granted: highest priority)
  output mem_types#(DIM, SP_ROWS, 8)::req_t      sp_wr_o,
  output mem_types#(DIM, ACC_ROWS, 32)::req_t    acc_wr_o,
  // status (stack_o.busy: work in W, S, injection or the mesh)
  output logic                mesh_busy_o,
  output unit_stack_t         stack_o,
  output logic [3:0]          dbg_state_o
);
  localparam int RA = 0, RD = 1, RB = 2;        // scratchpad read ports: A, D, B
  localparam int BUF_W  = 2;                       // weight buffer index (the mesh's sel)
  localparam int HOLD   = 2 * DIM + 1;             // cycles a buffer is in use after its last row
  localparam int HOLD_W = $clog2(HOLD + 1);

  // ---- parameter assumptions ------------------------------------------------------
  // the mesh's buffer select is BUF_W = 2 bits
  if (NBUF < 1 || NBUF > 2 ** BUF_W) begin : g_nbuf_check
    $error("execute_unit: NBUF = %0d weight buffers, but the buffer index is %0d bits",
           NBUF, BUF_W);
  end
  // result rows are 29-bit addresses (the operand word's [28:0]; bits 31:29 are flags)
  if (SP_AW > 29 || ACC_AW > 29) begin : g_row_check
    $error("execute_unit: %0d scratchpad / %0d accumulator rows do not fit 29-bit row numbers",
           SP_ROWS, ACC_ROWS);
  end

  // config_ex, as each compute sees it
  typedef struct packed {
    logic [15:0] a_stride;
    logic [15:0] c_stride;
    logic [31:0] scale;
    logic        relu;
  } ex_cfg_t;

  // a compute and its merged preload
  typedef struct packed {
    logic [SLOT_W-1:0] slot;
    logic [WORD_W-1:0] a, d, b, c;
    ex_cfg_t           cfg;
  } job_t;

  // where a result row goes
  typedef enum logic [1:0] {DestNone, DestSp, DestAcc, DestAccum} dest_e;

  // travels through the mesh with each row
  typedef struct packed {
    logic [SLOT_W-1:0] slot;
    logic              last;
    dest_e             dest;
    logic [28:0]       row;
    logic [15:0]       cols;
    logic [31:0]       scale;
    logic              relu;
  } res_tag_t;
  localparam int TAG_W = $bits(res_tag_t);

  ex_cfg_t cfg_q, cfg_d;

  // ---- W stage ------------------------------------------------------------------
  logic              w_valid_q, w_valid_d, w_pre_q, w_pre_d, w_started_q, w_started_d;
  job_t              w_q, w_d;
  logic [KW-1:0]     w_k_q, w_k_d;
  logic [BUF_W-1:0]  cur_buf_q, cur_buf_d, nbuf;
  logic [HOLD_W-1:0] hold_q [NBUF];
  logic [HOLD_W-1:0] hold_d [NBUF];
  // weight-row write, one cycle after the read
  logic              wwr_valid_q, wwr_valid_d, wwr_zero_q, wwr_zero_d;
  logic [KW-1:0]     wwr_row_q, wwr_row_d;
  logic [BUF_W-1:0]  wwr_buf_q, wwr_buf_d;
  logic [15:0]       wwr_cols_q, wwr_cols_d;

  // ---- S stage ------------------------------------------------------------------
  logic              s_valid_q, s_valid_d, s_a_got_q, s_a_got_d, s_d_got_q, s_d_got_d;
  job_t              s_q, s_d;
  logic [15:0]       s_row_q, s_row_d;
  logic [31:0]       s_a_row_q, s_a_row_d, s_c_row_q, s_c_row_d;
  logic [BUF_W-1:0]  s_buf_q, s_buf_d;

  // ---- injection ------------------------------------------------------------------
  typedef struct packed {
    logic             a_need, a_arr, d_need, d_arr;   // arr: the row arrives from the bank now
    logic [15:0]      a_cols, d_cols;
    logic [BUF_W-1:0] buf_sel;
    res_tag_t         tag;
  } inj_t;
  logic              inj_valid_q, inj_valid_d;
  inj_t              inj_q, inj_d;
  logic              cap_a_q, cap_a_d, cap_d_q, cap_d_d;
  logic [DIM*8-1:0]  a_buf_q, a_buf_d, d_buf_q, d_buf_d;

  insn_t             insn;     // the instruction offered for issue
  logic [2:0]        rd_req;   // scratchpad reads: A, D, B
  logic              iss_fire, is_cfg, w_step, w_bneed, w_go, w_loaded, hand, s_free, busy;
  logic              s_need_a, s_need_d, s_a_ok, s_d_ok, s_row_done, s_last, a_gnt, d_gnt;
  logic [DIM*8-1:0]  in_a;
  logic [DIM*32-1:0] in_d;
  logic [DIM*8-1:0]  w_data;
  logic              out_valid, mesh_active;
  res_tag_t          out_tag;
  logic [DIM*32-1:0] out_c;

  assign insn   = iss_i.insn;
  assign nbuf   = (cur_buf_q == BUF_W'(NBUF - 1)) ? '0 : cur_buf_q + 1'b1;
  assign is_cfg = insn.funct == FunctConfig;

  // W: weight rows (requests depend on state only, grants come back)
  assign w_go    = w_valid_q && w_pre_q && (w_k_q != KW'(DIM))
                   && (w_started_q || hold_q[nbuf] == '0);
  assign w_bneed = (32'(w_k_q) < 32'(op_rows(w_q.b))) && (op_addr(w_q.b) != GARBAGE_ADDR);
  // S: rows of A and D
  assign s_need_a = s_valid_q && (s_row_q < op_rows(s_q.a)) && (op_addr(s_q.a) != GARBAGE_ADDR);
  assign s_need_d = s_valid_q && (s_row_q < op_rows(s_q.d)) && (op_addr(s_q.d) != GARBAGE_ADDR);

  assign rd_req[RA]  = s_need_a && !s_a_got_q;
  assign rd_req[RD]  = s_need_d && !s_d_got_q;
  assign rd_req[RB]  = w_go && w_bneed;
  assign sp_rd_o[RA] = '{req: rd_req[RA], row: SP_AW'(s_a_row_q), default: '0};
  assign sp_rd_o[RD] = '{req: rd_req[RD], row: SP_AW'(32'(op_addr(s_q.d)) + 32'(s_row_q)),
                         default: '0};
  assign sp_rd_o[RB] = '{req: rd_req[RB], row: SP_AW'(32'(op_addr(w_q.b)) + 32'(w_k_q)),
                         default: '0};
  assign a_gnt = rd_req[RA] && sp_rd_gnt_i[RA];
  assign d_gnt = rd_req[RD] && sp_rd_gnt_i[RD];

  assign w_step   = w_go && (!w_bneed || sp_rd_gnt_i[RB]);
  assign w_loaded = !w_pre_q || (w_k_q == KW'(DIM)) || (w_step && w_k_q == KW'(DIM - 1));
  assign s_a_ok   = !s_need_a || s_a_got_q || sp_rd_gnt_i[RA];
  assign s_d_ok   = !s_need_d || s_d_got_q || sp_rd_gnt_i[RD];
  assign s_row_done  = s_valid_q && s_a_ok && s_d_ok;
  assign s_last      = s_row_done && (s_row_q == op_rows(s_q.c) - 16'd1);
  assign s_free      = !s_valid_q || s_last;
  assign hand        = w_valid_q && w_loaded && s_free;
  assign iss_ready_o = !w_valid_q || hand;
  assign iss_fire    = iss_valid_i && iss_ready_o;

  // mesh inputs
  always_comb begin
    logic [DIM*8-1:0] ar, dr;
    in_a = '0;
    in_d = '0;
    ar = inj_q.a_arr ? sp_rd_data_i[RA] : a_buf_q;
    dr = inj_q.d_arr ? sp_rd_data_i[RD] : d_buf_q;
    if (inj_valid_q) begin
      for (int i = 0; i < DIM; i++) begin
        if (inj_q.a_need && 16'(i) < inj_q.a_cols) in_a[i*8 +: 8] = ar[i*8 +: 8];
        if (inj_q.d_need && 16'(i) < inj_q.d_cols) begin
          in_d[i*32 +: 32] = {{24{dr[i*8+7]}}, dr[i*8 +: 8]};
        end
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
    .in_sel_i    (inj_q.buf_sel),
    .in_a_i      (in_a),
    .in_d_i      (in_d),
    .in_tag_i    (inj_q.tag),
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
    sp_wr_o        = '0;
    acc_wr_o       = '0;
    sp_wr_o.we     = 1'b1;
    acc_wr_o.we    = 1'b1;
    sp_wr_o.req    = out_valid && out_tag.dest == DestSp;
    acc_wr_o.req   = out_valid && (out_tag.dest == DestAcc || out_tag.dest == DestAccum);
    acc_wr_o.accum = out_tag.dest == DestAccum;
    sp_wr_o.row    = SP_AW'(out_tag.row);
    acc_wr_o.row   = ACC_AW'(out_tag.row);
    acc_wr_o.wdata = out_c;
    for (int i = 0; i < DIM; i++) begin
      sp_wr_o.wmask[i]  = 16'(i) < out_tag.cols;
      acc_wr_o.wmask[i] = 16'(i) < out_tag.cols;
    end
    if (sp_wr_o.req) begin
      for (int i = 0; i < DIM; i++) begin
        // saturated to int8: the low byte is the value
        sp_wr_o.wdata[i*8 +: 8] = 8'(scale_sat(out_c[i*32 +: 32], out_tag.scale, 1'b1,
                                               out_tag.relu));
      end
    end
  end

  // a config_ex is done when it issues, a compute when its last row leaves the mesh (one-hot)
  assign done_o = (N'(out_valid && out_tag.last) << out_tag.slot)
                  | (N'(iss_fire && is_cfg) << iss_i.slot);

  assign busy        = w_valid_q || s_valid_q || inj_valid_q || mesh_active;
  assign mesh_busy_o = inj_valid_q;
  // a read of A, D or B waiting for its bank; the execute unit never waits on the DMA
  assign stack_o     = '{bank: (rd_req & ~sp_rd_gnt_i) != '0, dma: 1'b0, busy: busy};
  assign dbg_state_o = {s_valid_q, w_valid_q && w_pre_q && !w_started_q && hold_q[nbuf] != '0,
                        w_valid_q && !w_loaded, w_valid_q && w_loaded && !s_free};

  // ---- next state: W --------------------------------------------------------------
  always_comb begin
    cfg_d       = cfg_q;
    w_valid_d   = w_valid_q;
    w_pre_d     = w_pre_q;
    w_started_d = w_started_q;
    w_d         = w_q;
    w_k_d       = w_k_q;
    cur_buf_d   = cur_buf_q;
    wwr_valid_d = w_step;
    wwr_row_d   = wwr_row_q;
    wwr_zero_d  = wwr_zero_q;
    wwr_buf_d   = wwr_buf_q;
    wwr_cols_d  = wwr_cols_q;
    // weight buffers in use by rows in the mesh
    for (int b = 0; b < NBUF; b++) begin
      if (inj_valid_q && inj_q.buf_sel == BUF_W'(b)) hold_d[b] = HOLD_W'(HOLD);
      else if (hold_q[b] != '0) hold_d[b] = hold_q[b] - 1'b1;
      else hold_d[b] = '0;
    end
    if (w_step) begin
      w_k_d       = w_k_q + 1'b1;
      w_started_d = 1'b1;
      wwr_row_d   = w_k_q;
      wwr_zero_d  = !w_bneed;
      wwr_buf_d   = nbuf;
      wwr_cols_d  = op_cols(w_q.b);
    end
    if (hand) begin
      w_valid_d = 1'b0;
      if (w_pre_q) cur_buf_d = nbuf;
    end
    if (iss_fire && is_cfg) begin
      cfg_d = '{a_stride: insn.rs1[31:16], c_stride: insn.rs2[63:48], scale: insn.rs1[63:32],
                relu: insn.rs1[3]};
    end
    if (iss_fire && !is_cfg) begin
      w_valid_d   = 1'b1;
      w_pre_d     = insn.funct == FunctComputePreloaded;
      w_started_d = 1'b0;
      w_k_d       = '0;
      w_d         = '{slot: iss_i.slot, a: insn.rs1, d: insn.rs2, b: iss_pre_i.b, c: iss_pre_i.c,
                      cfg: cfg_q};
    end
  end

  // ---- next state: S and injection ------------------------------------------------
  always_comb begin
    dest_e dest;
    s_valid_d   = s_valid_q;
    s_d         = s_q;
    s_row_d     = s_row_q;
    s_a_row_d   = s_a_row_q;
    s_c_row_d   = s_c_row_q;
    s_buf_d     = s_buf_q;
    s_a_got_d   = s_a_got_q;
    s_d_got_d   = s_d_got_q;
    cap_a_d     = a_gnt;
    cap_d_d     = d_gnt;
    a_buf_d     = cap_a_q ? sp_rd_data_i[RA] : a_buf_q;
    d_buf_d     = cap_d_q ? sp_rd_data_i[RD] : d_buf_q;
    inj_valid_d = s_row_done;
    inj_d       = inj_q;
    dest = (op_addr(s_q.c) == GARBAGE_ADDR) ? DestNone :
           !s_q.c[31] ? DestSp : s_q.c[30] ? DestAccum : DestAcc;
    if (s_row_done) begin
      inj_d = '{a_need: s_need_a, a_arr: s_need_a && !s_a_got_q,
                d_need: s_need_d, d_arr: s_need_d && !s_d_got_q,
                a_cols: op_cols(s_q.a), d_cols: op_cols(s_q.d), buf_sel: s_buf_q,
                tag: '{slot: s_q.slot, last: s_last, dest: dest, row: s_c_row_q[28:0],
                       cols: op_cols(s_q.c), scale: s_q.cfg.scale, relu: s_q.cfg.relu}};
      s_row_d   = s_row_q + 16'd1;
      s_a_row_d = s_a_row_q + 32'(s_q.cfg.a_stride);
      s_c_row_d = s_c_row_q + 32'(s_q.cfg.c_stride);
      s_a_got_d = 1'b0;
      s_d_got_d = 1'b0;
      if (s_last) s_valid_d = 1'b0;
    end else begin
      if (a_gnt) s_a_got_d = 1'b1;
      if (d_gnt) s_d_got_d = 1'b1;
    end
    if (hand) begin
      s_valid_d = 1'b1;
      s_d       = w_q;
      s_buf_d   = w_pre_q ? nbuf : cur_buf_q;
      s_row_d   = '0;
      s_a_row_d = 32'(op_addr(w_q.a));
      s_c_row_d = 32'(op_addr(w_q.c));
      s_a_got_d = 1'b0;
      s_d_got_d = 1'b0;
    end
  end

  // ---- registers ----------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      w_valid_q   <= 1'b0;
      s_valid_q   <= 1'b0;
      inj_valid_q <= 1'b0;
      wwr_valid_q <= 1'b0;
      cap_a_q     <= 1'b0;
      cap_d_q     <= 1'b0;
      cur_buf_q   <= '0;
      cfg_q       <= '{a_stride: 16'd1, c_stride: 16'd1, scale: F32_ONE, relu: 1'b0};
      hold_q      <= '{default: '0};
    end else begin
      w_valid_q   <= w_valid_d;
      s_valid_q   <= s_valid_d;
      inj_valid_q <= inj_valid_d;
      wwr_valid_q <= wwr_valid_d;
      cap_a_q     <= cap_a_d;
      cap_d_q     <= cap_d_d;
      cur_buf_q   <= cur_buf_d;
      cfg_q       <= cfg_d;
      hold_q      <= hold_d;
    end
  end

  always_ff @(posedge clk_i) begin
    w_pre_q     <= w_pre_d;
    w_started_q <= w_started_d;
    w_q         <= w_d;
    w_k_q       <= w_k_d;
    wwr_row_q   <= wwr_row_d;
    wwr_zero_q  <= wwr_zero_d;
    wwr_buf_q   <= wwr_buf_d;
    wwr_cols_q  <= wwr_cols_d;
    s_q         <= s_d;
    s_row_q     <= s_row_d;
    s_a_row_q   <= s_a_row_d;
    s_c_row_q   <= s_c_row_d;
    s_buf_q     <= s_buf_d;
    s_a_got_q   <= s_a_got_d;
    s_d_got_q   <= s_d_got_d;
    inj_q       <= inj_d;
    a_buf_q     <= a_buf_d;
    d_buf_q     <= d_buf_d;
  end

  // ---- assumptions ----------------------------------------------------------------
  // Checked at every clock edge out of reset (enabled from an always_ff with the registers'
  // asynchronous reset: rst_ni stays an asynchronous reset only).
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      // the weights being written are used by no row in the mesh or entering it
      if (wwr_valid_q) begin
        assert (hold_q[wwr_buf_q] == '0 && !(inj_valid_q && inj_q.buf_sel == wwr_buf_q))
          else $error("execute_unit: weights written into buffer %0d while it is in use",
                      wwr_buf_q);
      end
    end
  end
`endif
endmodule
