// Load unit: config_ld and mvin.
//
// An mvin issues one DMA read per DRAM row (cols x itemsize bytes at
// dram + row * stride), one request a cycle, and takes the next mvin as soon
// as the last request of this one is out; several mvins may wait for data.
// With stride 0 every row is the same bytes (a bias broadcast): the unit reads
// them once and writes that response to all the rows, so a broadcast costs the
// DRAM port one row, not rows x (the results are the same).
// Read responses arrive in request order with their tag (slot, row, last);
// each response row is written block by block (one dim-wide block a cycle, block
// b at local row base + row + b * block_stride), column-masked, through the load
// scale (rne of the float32 product, saturated to the destination) unless the
// scale is 1.0. Accumulator rows take int32 elements, or int8 sign-extended
// with shrink; .accum adds. The mvin is done when its last block is written.
// An mvin from DRAM address 0 reads nothing: it writes zeros (Gemmini's zero writer), in
// order with the other mvins' rows (the write-back takes the mvins in issue order).
// Pixel repeats (config_ld rs1[15:8] = P, 0 read as 1; Gemmini's PixelRepeater, scratchpad
// only): each block of n columns of local row R is also written, for t = P-1 .. 1, shifted
// right by t * n columns into row R - t (columns past DIM dropped, rows below the start of
// R's scratchpad half skipped), one write a cycle: row R - t then holds pixels R - t ..
// R - t + P - 1 side by side (LoopConv's first-layer im2col).
module load_unit import systolic_pkg::*; #(
  parameter int DIM           = 4,
  parameter int MAX_BLOCK_LEN = 2,
  parameter int SP_ROWS       = 256,
  parameter int ACC_ROWS      = 64,
  parameter int LDQ           = 4,
  parameter int N             = 10,
  parameter int CNT_W         = 16,   // width of the in-flight counters
  localparam int SLOT_W       = $clog2(N),
  localparam int SP_AW        = $clog2(SP_ROWS),
  localparam int ACC_AW       = $clog2(ACC_ROWS),
  localparam int RESP_W       = DIM * MAX_BLOCK_LEN * 32
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  // issue: an instruction and its slot; done: one bit per slot
  input  logic                iss_valid_i,
  output logic                iss_ready_o,
  input  issue_types#(N)::issue_t iss_i,
  output logic [N-1:0]        done_o,
  // DMA read requests and responses
  output logic                rd_req_valid_o,
  input  logic                rd_req_ready_i,
  output dma_req_t            rd_req_o,
  input  logic                rd_resp_valid_i,
  output logic                rd_resp_ready_o,
  input  dma_tag_t            rd_resp_tag_i,
  input  logic [RESP_W-1:0]   rd_resp_data_i,
  // local memory writes
  output mem_types#(DIM, SP_ROWS, 8)::req_t   sp_o,
  input  logic                                 sp_gnt_i,
  output mem_types#(DIM, ACC_ROWS, 32)::req_t  acc_o,
  input  logic                                 acc_gnt_i,
  // status (stack_o.busy: mvins in flight)
  output logic                dma_wait_o,
  output unit_stack_t         stack_o,
  output logic [CNT_W-1:0]    outstanding_o
);
  localparam int LSLOT_W = (LDQ > 1) ? $clog2(LDQ) : 1;
  localparam int BLK_W   = $clog2(MAX_BLOCK_LEN + 1);
  localparam int BIX_W   = (MAX_BLOCK_LEN > 1) ? $clog2(MAX_BLOCK_LEN) : 1;   // a block's index
  localparam int NSTATES = 3;   // mvin, mvin2, mvin3
  localparam int LROW_W  = (SP_AW > ACC_AW) ? SP_AW : ACC_AW;   // a local row of either memory

  // ---- parameter assumptions ------------------------------------------------------
  // a request's DMA tag carries the slot in DMA_SLOT_W bits
  if (SLOT_W > DMA_SLOT_W) begin : g_slot_check
    $error("load_unit: %0d slots do not fit the DMA tag's %0d-bit slot", N, DMA_SLOT_W);
  end
  // load slots are the first LDQ of the N slots
  if (LDQ < 1 || LDQ > N || MAX_BLOCK_LEN < 1) begin : g_queue_check
    $error("load_unit: LDQ = %0d of N = %0d slots, MAX_BLOCK_LEN = %0d (both at least 1)",
           LDQ, N, MAX_BLOCK_LEN);
  end
  // local rows are 26-bit addresses (the operand word's [25:0]; bits 31:29 are flags, 28:26 an
  // mvout's norm command)
  if (SP_AW > 26 || ACC_AW > 26) begin : g_row_check
    $error("load_unit: %0d scratchpad / %0d accumulator rows do not fit 26-bit row numbers",
           SP_ROWS, ACC_ROWS);
  end

  // config_ld of one mvin state
  typedef struct packed {
    logic [WORD_W-1:0] stride;    // DRAM bytes between rows
    logic              shrink;    // int8 elements into the accumulator
    logic [15:0]       bstride;   // local rows between blocks
    logic [31:0]       scale;
    logic [7:0]        reps;      // pixel repeats (1: none)
  } ld_cfg_t;

  // what the write-back needs of an mvin in flight, per load slot
  typedef struct packed {
    logic [28:0] base;
    logic        acc;
    logic        accum;
    logic        wide;      // int32 elements in DRAM
    logic [15:0] bstride;
    logic [31:0] scale;
    logic [15:0] cols;
    logic [15:0] copies;    // local rows each response row is written to (stride 0: rows)
    logic [7:0]  reps;      // pixel repeats (accumulator: 1)
    logic        zero;      // DRAM address 0: one zero row, written to all rows
  } ctx_t;

  // the mvins in flight in issue order, as the write-back takes them
  typedef struct packed {
    logic [LSLOT_W-1:0] ls;
    logic               zero;
  } order_t;

  // written an entry at a time (per-entry enables): a config_ld its state, an mvin its slot
  ld_cfg_t cfg_q [NSTATES];
  ld_cfg_t cfg_new;
  ctx_t    ctx_q [LDQ];
  ctx_t    ctx_new;

  // request engine: the rows of the mvin being requested
  logic              rq_active_q;
  logic [WORD_W-1:0] rq_addr_q, rq_stride_q;
  logic [15:0]       rq_row_q, rq_rows_q, rq_len_q;
  logic [SLOT_W-1:0] rq_slot_q;

  // write-back engine: one response row (as int32 lanes, block by block), written a block per cycle
  logic              wb_busy_q;
  logic [DIM*32-1:0] wb_row_q [MAX_BLOCK_LEN];
  dma_tag_t          wb_tag_q;
  logic [BLK_W-1:0]  wb_blk_q, wb_nblk_q;
  logic [15:0]       wb_lrow_q, wb_copy_q;      // local row, copies left
  logic [7:0]        wb_rep_q;                  // the repeat being written
  order_t            order_q [LDQ];
  logic [LSLOT_W-1:0] ord_rd_q, ord_wr_q;
  logic [LSLOT_W:0]  ord_n_q;
  logic [CNT_W-1:0]  outstanding_q, inflight_q;

  logic               is_mvin, iss_fire, mvin_fire, rq_fire, rq_last, resp_fire;
  logic               wb_gnt, wb_row_fin, wb_fin, mvin_done, busy;
  logic               wb_skip, wb_step, wb_blk_fin, take, nxt_valid, zero_fire, row_fire;
  order_t             nxt;      // the mvin of the next row the write-back takes
  logic [LSLOT_W-1:0] row_ls;   // the load slot of the row taken
  logic [1:0]         iss_state;
  logic [LSLOT_W-1:0] wb_ls, iss_ls, resp_ls;
  ctx_t               wb_ctx;
  insn_t              insn;   // the instruction offered for issue
  // the write-back reads the context of its slot but for wide and copies, which are read
  // when the response is taken (ctx_q[resp_ls])
  logic               unused_wb_ctx;
  assign unused_wb_ctx = ^{wb_ctx.wide, wb_ctx.copies, wb_ctx.zero};
  logic               unused_wb_row;   // the tag's row is wb_lrow_q's start
  assign unused_wb_row = ^wb_tag_q.row;

  assign insn        = iss_i.insn;
  assign iss_ready_o = !rq_active_q;
  assign iss_fire    = iss_valid_i && iss_ready_o;
  assign is_mvin     = insn.funct != FunctConfig;
  assign mvin_fire   = iss_fire && is_mvin;
  always_comb begin
    unique case (insn.funct)
      FunctMvin:  iss_state = 2'd0;
      FunctMvin2: iss_state = 2'd1;
      FunctMvin3: iss_state = 2'd2;
      default:    iss_state = insn.rs1[4:3];   // config_ld names its state
    endcase
  end

  assign rq_last        = rq_row_q == rq_rows_q - 16'd1 || rq_stride_q == '0;
  assign rd_req_valid_o = rq_active_q;
  assign rd_req_o       = '{addr: rq_addr_q, len: rq_len_q,
                            tag: '{slot: DMA_SLOT_W'(rq_slot_q), last: rq_last, row: rq_row_q}};
  assign rq_fire        = rd_req_valid_o && rd_req_ready_i;

  assign iss_ls    = LSLOT_W'(iss_i.slot);
  assign resp_ls   = LSLOT_W'(rd_resp_tag_i.slot);
  assign wb_ls     = LSLOT_W'(wb_tag_q.slot);
  assign wb_ctx    = ctx_q[wb_ls];
  assign wb_gnt    = wb_busy_q && (wb_ctx.acc ? acc_gnt_i : sp_gnt_i);
  // a step writes one repeat of one block (a repeat below its half is skipped, not written)
  assign wb_step    = wb_busy_q && (wb_skip || wb_gnt);
  assign wb_blk_fin = wb_step && wb_rep_q == '0;
  assign wb_row_fin = wb_blk_fin && (wb_blk_q == wb_nblk_q - BLK_W'(1));
  assign wb_fin     = wb_row_fin && wb_copy_q == 16'd1;
  assign mvin_done = wb_fin && wb_tag_q.last;
  // the next row: the oldest mvin's (the next one's as the oldest finishes); a zero mvin's
  // one row comes from here, the others' from the DMA in request order
  assign nxt       = order_q[mvin_done ? ((int'(ord_rd_q) == LDQ - 1) ? '0 : ord_rd_q + 1'b1)
                                       : ord_rd_q];
  assign nxt_valid = ord_n_q > (LSLOT_W + 1)'(mvin_done);
  assign take      = !wb_busy_q || wb_fin;
  assign rd_resp_ready_o = take && !(nxt_valid && nxt.zero);
  assign resp_fire = rd_resp_valid_i && rd_resp_ready_o;
  assign zero_fire = take && nxt_valid && nxt.zero;
  assign row_fire  = resp_fire || zero_fire;
  assign row_ls    = zero_fire ? nxt.ls : resp_ls;

  // the block being written: lanes, scale, mask; a pixel repeat t shifts them t * n lanes
  // (n: the block's columns) into the row t below
  // (the lanes as whole rows and masks, the scale and the scratchpad's bytes only where they apply:
  // a branch a lane would be taken every cycle of a write-back)
  always_comb begin
    logic [31:0]       shift, first, left;
    logic [LROW_W-1:0] row, floor;
    logic [DIM*32-1:0] lanes;
    logic [DIM*8-1:0]  lanes8;
    logic [DIM-1:0]    mask;
    sp_o     = '0;
    acc_o    = '0;
    sp_o.we  = 1'b1;
    acc_o.we = 1'b1;
    lanes    = '0;
    lanes8   = '0;
    mask     = '0;
    first    = 32'(wb_blk_q) * DIM;
    left     = (32'(wb_ctx.cols) > first) ? 32'(wb_ctx.cols) - first : '0;   // the block's columns
    shift    = 32'(wb_rep_q) * ((32'(wb_ctx.cols) - first < DIM) ? 32'(wb_ctx.cols) - first
                                                                   : DIM);
    row   = LROW_W'(32'(wb_ctx.base) + 32'(wb_lrow_q) + 32'(wb_blk_q) * 32'(wb_ctx.bstride));
    floor = (row >= LROW_W'(SP_ROWS / 2)) ? LROW_W'(SP_ROWS / 2) : '0;
    wb_skip = wb_busy_q && !wb_ctx.acc && 32'(row) < 32'(floor) + 32'(wb_rep_q);
    if (wb_busy_q) begin
      lanes = wb_row_q[BIX_W'(wb_blk_q)];
      if (wb_ctx.scale != F32_ONE) begin
        for (int i = 0; i < DIM; i++) begin
          lanes[i*32 +: 32] = scale_sat(lanes[i*32 +: 32], wb_ctx.scale, !wb_ctx.acc, 1'b0);
        end
      end
      if (!wb_ctx.acc) begin
        for (int i = 0; i < DIM; i++) lanes8[i*8 +: 8] = lanes[i*32 +: 8];
      end
      acc_o.wdata = lanes;
      mask        = (left >= DIM) ? '1 : ~({DIM{1'b1}} << left);
      sp_o.wdata  = lanes8;
      sp_o.wmask  = mask;
      acc_o.wmask = mask;
      if (wb_rep_q != '0) begin   // a pixel repeat (the wide shift only then)
        sp_o.wdata = lanes8 << (shift * 8);
        sp_o.wmask = mask << shift;
      end
      if (wb_ctx.acc) begin
        acc_o.req   = 1'b1;
        acc_o.accum = wb_ctx.accum;
        acc_o.row   = ACC_AW'(row);
      end else begin
        sp_o.req = !wb_skip;
        sp_o.row = SP_AW'(row - LROW_W'(wb_rep_q));
      end
    end
  end

  // a config_ld is done when it issues, an mvin when its last block is written (one-hot)
  assign done_o = (N'(iss_fire && !is_mvin) << iss_i.slot) | (N'(mvin_done) << wb_tag_q.slot);

  assign busy          = inflight_q != '0;
  assign dma_wait_o    = (outstanding_q != '0 && !rd_resp_valid_i)
                         || (rd_req_valid_o && !rd_req_ready_i);
  assign outstanding_o = outstanding_q;
  // a block waiting for its bank; mvins in flight that neither send, take nor write a row
  assign stack_o = '{bank: wb_busy_q && !wb_step,
                     dma:  busy && !rq_fire && !row_fire && !wb_busy_q,
                     busy: busy};

  // ---- next state ---------------------------------------------------------------
  // Computed in the register processes: the DMA handshakes and the response port change during
  // a cycle, and a simulation evaluates combinational logic on them each time they do, where the
  // next state is needed once, at the clock edge. Later assignments take precedence.
  logic wide;   // the mvin offered moves int32 elements
  always_comb begin
    cfg_new = '{stride: insn.rs2, shrink: insn.rs1[2], bstride: insn.rs1[31:16],
                scale: insn.rs1[63:32], reps: (insn.rs1[15:8] == '0) ? 8'd1 : insn.rs1[15:8]};
    wide    = insn.rs2[31] && !cfg_q[iss_state].shrink;
    ctx_new = '{base: 29'(insn.rs2[25:0]), acc: insn.rs2[31], accum: insn.rs2[30], wide: wide,
                bstride: cfg_q[iss_state].bstride, scale: cfg_q[iss_state].scale,
                cols: op_cols(insn.rs2),
                copies: (cfg_q[iss_state].stride == '0 || insn.rs1 == '0) ? op_rows(insn.rs2)
                                                                           : 16'd1,
                reps: (insn.rs2[31] || cfg_q[iss_state].reps == '0) ? 8'd1 : cfg_q[iss_state].reps,
                zero: insn.rs1 == '0};
  end

  // block b of the response row as int32 lanes (a zero row: zeros); a function of the response
  // port, called at the clock edge: a simulation evaluates combinational logic on the port each
  // time it changes, where the row is needed once
  function automatic logic [DIM*32-1:0] resp_block(input int b);
    logic [DIM*32-1:0] r;
    r = '0;
    if (resp_fire) begin
      for (int i = 0; i < DIM; i++) begin
        r[i*32 +: 32] = ctx_q[resp_ls].wide ? rd_resp_data_i[(b*DIM+i)*32 +: 32]
            : {{24{rd_resp_data_i[(b*DIM+i)*8+7]}}, rd_resp_data_i[(b*DIM+i)*8 +: 8]};
      end
    end
    return r;
  endfunction

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rq_active_q   <= 1'b0;
      wb_busy_q     <= 1'b0;
      outstanding_q <= '0;
      inflight_q    <= '0;
      ord_rd_q      <= '0;
      ord_wr_q      <= '0;
      ord_n_q       <= '0;
    end else begin
      if (rq_fire && rq_last) rq_active_q <= 1'b0;
      if (mvin_fire) rq_active_q <= insn.rs1 != '0;   // a zero mvin reads nothing
      if (wb_fin) wb_busy_q <= 1'b0;
      if (row_fire) wb_busy_q <= 1'b1;
      outstanding_q <= outstanding_q + CNT_W'(rq_fire) - CNT_W'(resp_fire);
      inflight_q    <= inflight_q + CNT_W'(mvin_fire) - CNT_W'(mvin_done);
      ord_n_q       <= ord_n_q + (LSLOT_W + 1)'(mvin_fire) - (LSLOT_W + 1)'(mvin_done);
      if (mvin_fire) ord_wr_q <= (int'(ord_wr_q) == LDQ - 1) ? '0 : ord_wr_q + 1'b1;
      if (mvin_done) ord_rd_q <= (int'(ord_rd_q) == LDQ - 1) ? '0 : ord_rd_q + 1'b1;
    end
  end

  // request engine
  always_ff @(posedge clk_i) begin
    if (rq_fire) begin
      rq_addr_q <= rq_addr_q + rq_stride_q;
      rq_row_q  <= rq_row_q + 16'd1;
    end
    if (mvin_fire) begin
      rq_addr_q   <= insn.rs1;
      rq_stride_q <= cfg_q[iss_state].stride;
      rq_row_q    <= '0;
      rq_rows_q   <= op_rows(insn.rs2);
      rq_len_q    <= wide ? op_cols(insn.rs2) << 2 : op_cols(insn.rs2);
      rq_slot_q   <= iss_i.slot;
    end
  end

  // write-back engine
  always_ff @(posedge clk_i) begin
    if (wb_step) wb_rep_q <= wb_rep_q - 8'd1;
    if (wb_blk_fin) begin   // the next block, from its first repeat
      wb_blk_q <= wb_blk_q + BLK_W'(1);
      wb_rep_q <= wb_ctx.reps - 8'd1;
    end
    if (wb_row_fin && !wb_fin) begin   // the next copy of a broadcast row
      wb_blk_q  <= '0;
      wb_lrow_q <= wb_lrow_q + 16'd1;
      wb_copy_q <= wb_copy_q - 16'd1;
    end
    if (row_fire) begin
      wb_tag_q  <= zero_fire ? '{slot: DMA_SLOT_W'(nxt.ls), last: 1'b1, row: '0} : rd_resp_tag_i;
      wb_blk_q  <= '0;
      wb_lrow_q <= zero_fire ? '0 : rd_resp_tag_i.row;
      wb_copy_q <= ctx_q[row_ls].copies;
      wb_rep_q  <= ctx_q[row_ls].reps - 8'd1;
      wb_nblk_q <= BLK_W'((ctx_q[row_ls].cols + 16'(DIM - 1)) / 16'(DIM));
    end
  end

  // arrays: one entry written at a time, the lanes only when a response row is taken
  always_ff @(posedge clk_i) begin
    if (iss_fire && !is_mvin) cfg_q[iss_state] <= cfg_new;
    if (mvin_fire) ctx_q[iss_ls] <= ctx_new;
    if (mvin_fire) order_q[ord_wr_q] <= '{ls: iss_ls, zero: insn.rs1 == '0};
    if (row_fire) begin
      for (int b = 0; b < MAX_BLOCK_LEN; b++) wb_row_q[b] <= resp_block(b);
    end
  end

  // ---- assumptions ----------------------------------------------------------------
  // Checked at every clock edge out of reset (enabled from an always_ff with the registers'
  // asynchronous reset: rst_ni stays an asynchronous reset only).
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      // responses come back in request order, only for requests that are out
      if (rd_resp_valid_i) begin
        assert (outstanding_q != '0)
          else $error("load unit: a DMA read response without an outstanding request");
      end
      // a response is the oldest DMA mvin's
      if (resp_fire) begin
        assert (nxt_valid && !nxt.zero && nxt.ls == resp_ls)
          else $error("load unit: a DMA read response for slot %0d out of mvin order",
                      rd_resp_tag_i.slot);
      end
      // an mvin fits the response port: at most MAX_BLOCK_LEN blocks a row
      if (mvin_fire) begin
        assert (op_cols(insn.rs2) <= 16'(DIM * MAX_BLOCK_LEN))
          else $error("load unit: mvin of %0d columns, more than %0d", op_cols(insn.rs2),
                      DIM * MAX_BLOCK_LEN);
      end
    end
  end
`endif
endmodule
