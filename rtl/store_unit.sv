// Store unit: config_st and mvout.
//
// An mvout reads its local rows one a cycle (scratchpad: the int8 row as it is;
// accumulator: config_st's float32 scale, rne, int8 saturation and ReLU, or with
// .full the raw int32 row after ReLU), queues each row as one DMA write of
// cols x itemsize bytes at dram + row * stride, and takes the next mvout once
// all its rows are read. It is done when the DMA has acknowledged its last row.
// An mvout wider than DIM columns (not .full) reads block b of its columns from the
// local rows DIM * b after its address (Gemmini's block mvout), a block a cycle. Its row r is
// contiguous in DRAM, from dram + r * stride: the unit joins the row's blocks into one DMA write,
// up to JOIN blocks a write (min(MAX_BLOCK_LEN, 4): DIM * MAX_BLOCK_LEN bytes, Gemmini's
// dma_maxbytes, within the DIM * 4-byte data port), as Gemmini's StoreController and DMA writer
// do (block_counter and store_en on the row's last block; the writer's len = block * DIM + len).
// A block waits in a join register until its write's last block arrives. Full int32 rows and
// pooled pixels are one write each.
//
// Max pooling (config_st's pool_stride > 0, as Gemmini's StoreController): an mvout's local
// rows are an orows x ocols image, one pixel a row. For each pooled pixel (porow, pocol), row by
// row, the unit walks its pool_size x pool_size window, reading one pixel a cycle; a position
// in the padding (upad rows above, lpad columns left of the image, or past its end) takes a
// cycle but no read, and pools as the byte 0, as in Gemmini (ucb-bar/gemmini 641fefb: the
// StoreController makes such a pixel's address garbage, the Scratchpad sends a garbage row as
// zeros, the DMA writer's maxOf takes it; gemmini.h's conv_cpu pools it as 0 too). The max, after
// scale and activation, of the window is one DMA write at dram + (porow * pool_out_dim + pocol) * stride.
//
// Requantization (STORE_REQUANT, an extension Gemmini lacks): config_st's out_offset is added after
// the scale's rounding and ReLU, and the sum clips to [-128, 127], or [0, 255] with out_uint8 (then the
// byte is the uint8, and pooling compares bytes unsigned). It is onnxruntime's requantization of an
// output with a zero point, in the same pass, a row a cycle: a 33-bit adder and a clip per lane.
//
// Column scales (STORE_COL_SCALES, an extension Gemmini lacks): a register of DIM float32 scales,
// written two at a time by config_st_scales words (a config_st with rs1's load_scales bit: entries col
// and col + 1 from rs2's halves; the store config stays). An mvout under a config_st with col_scales
// scales lane i of each row block by entry i instead of the config's scale: per-output-channel
// requantization, in the same pass, a row a cycle. A word issues only between mvouts' reads, and the
// register is written at the end of its cycle, so the last row of the mvout before it (in the epilogue
// that cycle) still reads the old scales.
//
// Normalization (NORM_STATS > 0, Gemmini's Normalizer; rtl/norm_unit.sv, isa/norm.py): the store
// activation is 3 bits, config_st's two and config_norm's act_msb (a config_st clears it; 1 is ReLU,
// 2 LAYERNORM, 3 IGELU, 4 SOFTMAX, the rest none). An accumulator mvout whose address carries a
// NormCmd (bits 28:26; the row is bits 25:0) feeds its blocks to the norm unit's current stat and
// writes nothing; its blocks need no FIFO room and it is done when the norm unit says so. A plain
// (RESET) accumulator mvout under LAYERNORM, IGELU or SOFTMAX stores the norm unit's int8 row. Every
// other accumulator mvout (any activation, .full, pooled) passes its blocks as RESETs: they clear
// the current stat's running sum, count and max, as in Gemmini (isa.norm.NormUnit.plain_store). The
// unit holds the reads and the issue while a final (a mean, an inverse stddev or sum) is computed.
// With NORM_STATS == 0 there is no unit: config_norm is a no-op and only activation 1 is ReLU.
module store_unit import systolic_pkg::*; #(
  parameter int DIM      = 4,
  parameter int MAX_BLOCK_LEN = 2,   // blocks a DMA write may join (Gemmini's dma_maxbytes / DIM)
  parameter int SP_ROWS  = 256,
  parameter int ACC_ROWS = 64,
  parameter int N        = 10,
  parameter int FIFO     = 3,    // rows waiting for the DMA
  parameter int CNT_W    = 16,   // width of the in-flight counters
  parameter bit STORE_REQUANT = 1'b0,   // config_st's out_offset and out_uint8 (else read as 0)
  parameter bit STORE_COL_SCALES = 1'b0,   // config_st_scales words and config_st's col_scales (else ignored)
  parameter int NORM_STATS = 0,   // the normalization unit's stat ids (0: no unit)
  localparam int SLOT_W  = $clog2(N),
  localparam int SP_AW   = $clog2(SP_ROWS),
  localparam int ACC_AW  = $clog2(ACC_ROWS),
  localparam int ROW_W   = DIM * 32,
  // the blocks of an 8-bit row one write joins: the port's DIM * 4 bytes hold 4
  localparam int JOIN    = (MAX_BLOCK_LEN < 4) ? MAX_BLOCK_LEN : 4,
  localparam int JOIN_W  = (JOIN > 1) ? $clog2(JOIN) : 1
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  // issue: an instruction and its slot; done: one bit per slot
  input  logic                iss_valid_i,
  output logic                iss_ready_o,
  input  issue_types#(N)::issue_t iss_i,
  output logic [N-1:0]        done_o,
  // local reads (the row comes the cycle after the grant)
  output mem_types#(DIM, SP_ROWS, 8)::req_t   sp_o,
  input  logic                                 sp_gnt_i,
  input  logic [DIM*8-1:0]                     sp_rdata_i,
  output mem_types#(DIM, ACC_ROWS, 32)::req_t  acc_o,
  input  logic                                 acc_gnt_i,
  input  logic [ROW_W-1:0]                     acc_rdata_i,
  // DMA writes
  output logic                wr_req_valid_o,
  input  logic                wr_req_ready_i,
  output dma_req_t            wr_req_o,
  output logic [ROW_W-1:0]    wr_req_data_o,
  input  logic                wr_ack_valid_i,
  input  dma_tag_t            wr_ack_tag_i,
  // status (stack_o.busy: mvouts in flight)
  output logic                dma_wait_o,
  output unit_stack_t         stack_o,
  output logic [CNT_W-1:0]    outstanding_o
);
  localparam int FW = $clog2(FIFO + 1);

  // ---- parameter assumptions ------------------------------------------------------
  // a row's DMA tag carries the slot in DMA_SLOT_W bits
  if (SLOT_W > DMA_SLOT_W) begin : g_slot_check
    $error("store_unit: %0d slots do not fit the DMA tag's %0d-bit slot", N, DMA_SLOT_W);
  end
  // local rows are 26-bit addresses (the operand word's [25:0]; bits 31:29 are flags, 28:26 the
  // norm command)
  if (SP_AW > 26 || ACC_AW > 26) begin : g_row_check
    $error("store_unit: %0d scratchpad / %0d accumulator rows do not fit 26-bit row numbers",
           SP_ROWS, ACC_ROWS);
  end
  if (MAX_BLOCK_LEN < 1) begin : g_block_check
    $error("store_unit: MAX_BLOCK_LEN = %0d, a write joins at least one block", MAX_BLOCK_LEN);
  end
  if (FIFO < 1) begin : g_fifo_check
    $error("store_unit: FIFO = %0d, the DMA FIFO needs at least one entry", FIFO);
  end

  // config_st
  typedef struct packed {
    logic [WORD_W-1:0] stride;
    logic [2:0]     act;      // the activation: config_st's two bits, config_norm's act_msb
    logic [31:0]    scale;
    logic [8:0]     offset;   // requantization: added after rounding (two's complement)
    logic           uint8;    // requantization: clip to [0, 255]
    logic           col;      // column scales: lane i by the vector's entry i
    config_st_rs1_t pool;   // the pooling fields (pool.pool_stride == 0: no pooling)
  } st_cfg_t;

  // what the epilogue and the DMA write need of one row
  typedef struct packed {
    logic              acc;
    logic              full;   // raw int32 accumulator row
    logic              relu;
    logic [2:0]        act;    // the activation (normalization: 2, 3 and 4)
    logic [2:0]        norm;   // the norm command (0: none; an accumulator mvout's bits 28:26)
    logic              blast;  // the row's last block
    logic [31:0]       scale;
    logic [8:0]        offset;
    logic              uint8;
    logic              col;    // scaled by the column-scale vector
    logic              pool;   // a row of a pooling mvout
    logic              tap;    // pooling: the window position is in the image (read; else the byte 0)
    logic              wlast;  // pooling: the window's last position (its max goes out)
    logic [JOIN_W-1:0] jidx;   // the block's place in its DMA write (0: the write's first)
    logic              jend;   // the write's last block (it goes out)
    logic [15:0]       cols;
    logic [WORD_W-1:0] addr;   // DRAM address of the row
    logic [SLOT_W-1:0] slot;
  } row_t;

  // a row waiting for the DMA
  typedef struct packed {
    dma_req_t         req;
    logic [ROW_W-1:0] data;
  } pending_t;

  /* verilator lint_off UNUSEDSIGNAL */   // config_st's kind
  st_cfg_t cfg_q, cfg_d;
  /* verilator lint_on UNUSEDSIGNAL */

  // the mvout being read
  logic              rd_active_q, rd_active_d;
  row_t              rd_q, rd_d;
  logic [28:0]       rd_row_q, rd_row_d;
  logic [15:0]       rd_idx_q, rd_idx_d, rd_rows_q, rd_rows_d;
  logic [WORD_W-1:0] rd_stride_q, rd_stride_d;
  // a block mvout: the block being read, the blocks, the columns, where its row starts
  logic [15:0]       rd_blk_q, rd_blk_d, rd_nblk_q, rd_nblk_d, rd_cols_q, rd_cols_d;
  logic [28:0]       rd_row0_q, rd_row0_d;
  logic [WORD_W-1:0] rd_addr0_q, rd_addr0_d;
  // the place of the block being read in its DMA write
  logic [JOIN_W-1:0] rd_jidx_q, rd_jidx_d;
  // pooling: the pooled pixel and window position being read; the running max of the window
  // whose rows arrive, and whether it has any yet
  logic [7:0]        porow_q, porow_d, pocol_q, pocol_d;
  logic [1:0]        wrow_q, wrow_d, wcol_q, wcol_d;
  logic [DIM*8-1:0]  max_q, max_d;
  logic              have_q, have_d;
  // the row whose data arrives this cycle
  logic              ar_valid_q, ar_valid_d, ar_last_q, ar_last_d;
  row_t              ar_q, ar_d;
  // the blocks of the DMA write being joined, from its first, and with the arriving one
  logic [ROW_W-1:0]  join_q, joined;
  // rows waiting for the DMA; a push writes one entry (a per-entry enable)
  pending_t          fifo_q [FIFO];
  pending_t          fifo_new;
  logic [FW-1:0]     f_cnt_q, f_cnt_d, f_rd_q, f_rd_d, f_wr_q, f_wr_d;
  logic [CNT_W-1:0]  outstanding_q, outstanding_d, inflight_q, inflight_d;

  logic iss_fire, is_cfg, rd_fire, rd_gnt, rd_step, rd_last, blk_last, pop, push, mvout_done, busy;
  logic rd_req, tap, win_last, pool_last;
  logic [ROW_W-1:0] row_data;
  logic [DIM*8-1:0] merged;   // the running max with the arriving row
  logic [28:0]       pool_row;
  logic [WORD_W-1:0] pool_addr;
  insn_t insn;   // the instruction offered for issue
  config_st_rs1_t st_rs1;
  config_st_rs2_t st_rs2;
  /* verilator lint_off UNUSEDSIGNAL */   // a scales word's kind (and all of it without the extension)
  config_st_scales_rs1_t sc_rs1;
  config_st_scales_rs2_t sc_rs2;
  /* verilator lint_on UNUSEDSIGNAL */
  logic load_scales;   // a config_st_scales word: it writes the vector, not the store config
  logic is_norm_cfg;   // a config_norm word
  /* verilator lint_off UNUSEDSIGNAL */   // config_norm's other fields are the norm unit's
  config_norm_rs1_t nm_rs1;
  /* verilator lint_on UNUSEDSIGNAL */
  // the norm unit: hold reads and issue, a statistics mvout done, a RESET row's int8 lanes
  logic norm_hold, norm_done;
  logic [SLOT_W-1:0] norm_slot;
  logic [DIM*8-1:0]  norm_row;
  logic              norm_act;   // the arriving row's activation is a normalizing one
  logic [DIM-1:0][31:0] lane_scale;   // the column-scale vector (0 without the extension)

  assign insn        = iss_i.insn;
  assign st_rs1      = insn.rs1;
  assign st_rs2      = insn.rs2;
  assign sc_rs1      = insn.rs1;
  assign sc_rs2      = insn.rs2;
  assign nm_rs1      = insn.rs1;
  assign is_cfg      = insn.funct == FunctConfig;
  assign is_norm_cfg = is_cfg && config_kind_e'(insn.rs1[1:0]) == ConfigNorm;
  assign load_scales = sc_rs1.load_scales;   // without the extension a no-op config
  assign iss_ready_o = !rd_active_q && !norm_hold;
  assign iss_fire    = iss_valid_i && iss_ready_o;

  // pooling: where the window position lies in the image, and the pooled pixel's DRAM address
  always_comb begin
    logic [9:0] prow, pcol;   // the position in the padded image
    prow      = 10'(porow_q) * 10'(cfg_q.pool.pool_stride) + 10'(wrow_q);
    pcol      = 10'(pocol_q) * 10'(cfg_q.pool.pool_stride) + 10'(wcol_q);
    tap       = prow >= 10'(cfg_q.pool.upad) && prow - 10'(cfg_q.pool.upad) < 10'(cfg_q.pool.orows)
             && pcol >= 10'(cfg_q.pool.lpad) && pcol - 10'(cfg_q.pool.lpad) < 10'(cfg_q.pool.ocols);
    pool_row  = rd_row0_q + 29'(prow - 10'(cfg_q.pool.upad)) * 29'(cfg_q.pool.ocols)
              + 29'(pcol - 10'(cfg_q.pool.lpad));
    pool_addr = rd_addr0_q + WORD_W'(16'(porow_q) * 16'(cfg_q.pool.pool_out_dim) + 16'(pocol_q))
                           * cfg_q.stride;
    win_last  = wrow_q == cfg_q.pool.pool_size - 2'd1 && wcol_q == cfg_q.pool.pool_size - 2'd1;
    pool_last = win_last && porow_q == cfg_q.pool.porows - 8'd1 && pocol_q == cfg_q.pool.pocols - 8'd1;
  end

  // the column-scale vector: two entries a config_st_scales word; ones after reset
  if (STORE_COL_SCALES) begin : g_col_scales
    logic [DIM-1:0][31:0] scales_q, scales_d;
    always_comb begin
      scales_d = scales_q;
      if (iss_fire && is_cfg && !is_norm_cfg && load_scales) begin
        for (int i = 0; i < DIM; i++) begin
          if (16'(i) == sc_rs1.col) scales_d[i] = sc_rs2.scale0;
          if (16'(i) == sc_rs1.col + 16'd1) scales_d[i] = sc_rs2.scale1;
        end
      end
    end
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) scales_q <= {DIM{F32_ONE}};
      else         scales_q <= scales_d;
    end
    assign lane_scale = scales_q;
  end else begin : g_no_col_scales
    assign lane_scale = '0;
  end

  // read a row when the FIFO has room for it and the row before it (reads: we and the
  // write fields are 0); a pooling position in the padding steps without a read
  // (a statistics block writes nothing: it needs no room)
  assign rd_fire   = rd_active_q && !norm_hold
                  && (32'(f_cnt_q) + 32'(ar_valid_q) < FIFO || rd_q.norm != '0);
  assign rd_req    = rd_fire && (!rd_q.pool || tap);
  assign sp_o      = '{req: rd_req && !rd_q.acc, row: SP_AW'(rd_q.pool ? pool_row : rd_row_q),
                       default: '0};
  assign acc_o     = '{req: rd_req && rd_q.acc, row: ACC_AW'(rd_q.pool ? pool_row : rd_row_q),
                       default: '0};
  assign rd_gnt    = rd_q.acc ? acc_gnt_i : sp_gnt_i;
  assign rd_step   = rd_fire && (rd_gnt || !rd_req);
  assign blk_last  = rd_blk_q == rd_nblk_q - 16'd1;
  assign rd_last   = rd_q.pool ? pool_last : rd_idx_q == rd_rows_q - 16'd1 && blk_last;

  // the columns of block b of an mvout of cols columns
  function automatic logic [15:0] blk_cols(input logic [15:0] cols, input logic [15:0] b);
    logic [15:0] left;
    left = cols - b * 16'(DIM);
    return (left > 16'(DIM)) ? 16'(DIM) : left;
  endfunction

  // epilogue of the arriving row
  always_comb begin
    logic [31:0] scale;   // the lane's
    row_data = '0;
    scale    = ar_q.scale;
    if (ar_valid_q) begin
      for (int i = 0; i < DIM; i++) begin
        scale = (STORE_COL_SCALES && ar_q.col) ? lane_scale[i] : ar_q.scale;
        if (!ar_q.acc) begin
          row_data[i*8 +: 8] = sp_rdata_i[i*8 +: 8];
        end else if (ar_q.full) begin
          // the raw int32, after ReLU
          row_data[i*32 +: 32] = (ar_q.relu && acc_rdata_i[i*32 + 31]) ? 32'h0
                                                                       : acc_rdata_i[i*32 +: 32];
        end else if (norm_act) begin
          // LAYERNORM, IGELU or SOFTMAX: the norm unit's int8
          row_data[i*8 +: 8] = norm_row[i*8 +: 8];
        end else if (STORE_REQUANT && (ar_q.offset != '0 || ar_q.uint8)) begin
          row_data[i*8 +: 8] = requant(acc_rdata_i[i*32 +: 32], scale, ar_q.relu, ar_q.offset,
                                       ar_q.uint8);
        end else begin
          // saturated to int8: the low byte is the value
          row_data[i*8 +: 8] = 8'(scale_sat(acc_rdata_i[i*32 +: 32], scale, 1'b1, ar_q.relu));
        end
      end
    end
  end

  // pooling: the max of int8 lanes (uint8: the top bit flipped orders them as int8), a padded
  // position's lanes the byte 0 (Gemmini's garbage row); a window's first position starts it
  always_comb begin
    for (int i = 0; i < DIM; i++) begin
      logic signed [7:0] x, m;
      x = (ar_q.tap ? row_data[i*8 +: 8] : 8'h00) ^ {ar_q.uint8, 7'd0};
      m = max_q[i*8 +: 8] ^ {ar_q.uint8, 7'd0};
      merged[i*8 +: 8] = ((!have_q || x > m) ? x : m) ^ {ar_q.uint8, 7'd0};
    end
    max_d  = max_q;
    have_d = have_q;
    if (ar_valid_q && ar_q.pool) begin
      max_d  = merged;
      have_d = !ar_q.wlast;
    end
  end

  // a block joins the write's blocks before it: its 8-bit lanes at bytes jidx * DIM (the lanes above
  // the row's are 0); a write's first block, a full row's too, is the row as it is
  always_comb begin
    joined = row_data;
    if (ar_q.jidx != '0) joined = join_q | (row_data << (32'(ar_q.jidx) * DIM * 8));
  end

  assign push = ar_valid_q && ar_q.norm == '0 && (ar_q.pool ? ar_q.wlast : ar_q.jend);
  assign wr_req_valid_o = f_cnt_q != '0;
  assign wr_req_o       = fifo_q[f_rd_q].req;
  assign wr_req_data_o  = fifo_q[f_rd_q].data;
  assign pop = wr_req_valid_o && wr_req_ready_i;
  assign mvout_done = wr_ack_valid_i && wr_ack_tag_i.last;
  // the unit's writes carry row 0: an acknowledgement's row is not needed
  logic unused_ack_row;
  assign unused_ack_row = ^wr_ack_tag_i.row;

  // a config_st is done when it issues, an mvout when its last row is acknowledged (one-hot)
  // (and a statistics mvout when the norm unit says so)
  assign done_o = (N'(iss_fire && is_cfg) << iss_i.slot) | (N'(mvout_done) << wr_ack_tag_i.slot)
                | (N'(norm_done) << norm_slot);

  assign busy          = inflight_q != '0;
  assign dma_wait_o    = wr_req_valid_o && !wr_req_ready_i;
  assign outstanding_o = outstanding_q;
  // a row read waiting for its bank; mvouts in flight that neither read, pass nor send a row (nor
  // wait for the norm unit's final)
  assign stack_o = '{bank: rd_fire && !rd_gnt,
                     dma:  busy && !rd_step && !ar_valid_q && !pop && !norm_hold,
                     busy: busy};

  // ---- the normalization unit ------------------------------------------------------
  if (NORM_STATS > 0) begin : g_norm
    logic blk_valid, blk_plain;
    // every accumulator block read for DRAM: a RESET (no command, .full and pooled blocks
    // included) clears the current stat's running sum, count and max, whatever the activation
    // (Gemmini's every accumulator read passes the Normalizer); a plain one may carry a command,
    // or take the norm unit's int8 row under activations 2, 3 and 4
    assign blk_valid = ar_valid_q && ar_q.acc;
    assign blk_plain = !ar_q.full && !ar_q.pool;
    assign norm_act  = ar_q.acc && blk_plain && ar_q.norm == '0
                    && (ar_q.act == 3'd2 || ar_q.act == 3'd3 || ar_q.act == 3'd4);
    norm_unit #(.DIM(DIM), .NORM_STATS(NORM_STATS), .N(N)) u_norm (
      .clk_i, .rst_ni,
      .cfg_valid_i    (iss_fire && is_norm_cfg),
      .cfg_rs1_i      (insn.rs1),
      .cfg_rs2_i      (insn.rs2),
      .blk_valid_i    (blk_valid),
      .blk_plain_i    (blk_plain),
      .blk_cmd_i      (ar_q.norm),
      .blk_row_last_i (ar_q.blast),
      .blk_last_i     (ar_last_q),
      .blk_act_i      (ar_q.act),
      .blk_cols_i     (ar_q.cols),
      .blk_scale_i    (ar_q.scale),
      .blk_slot_i     (ar_q.slot),
      .blk_data_i     (acc_rdata_i),
      .row_o          (norm_row),
      .hold_o         (norm_hold),
      .done_o         (norm_done),
      .done_slot_o    (norm_slot)
    );
  end else begin : g_no_norm
    assign norm_act  = 1'b0;
    assign norm_hold = 1'b0;
    assign norm_done = 1'b0;
    assign norm_slot = '0;
    assign norm_row  = '0;
    // the fields only the norm unit reads (constant without it)
    logic unused_norm;
    assign unused_norm = ^{ar_q.act, ar_q.norm, ar_q.blast, nm_rs1.act_msb, nm_rs1.set_stats_id_only,
                           norm_row};
  end

  // ---- next state ---------------------------------------------------------------
  always_comb begin
    cfg_d       = cfg_q;
    rd_active_d = rd_active_q;
    rd_d        = rd_q;
    rd_row_d    = rd_row_q;
    rd_idx_d    = rd_idx_q;
    rd_rows_d   = rd_rows_q;
    rd_stride_d = rd_stride_q;
    ar_valid_d  = rd_step;
    ar_d        = ar_q;
    ar_last_d   = ar_last_q;
    rd_blk_d    = rd_blk_q;
    rd_nblk_d   = rd_nblk_q;
    rd_cols_d   = rd_cols_q;
    rd_row0_d   = rd_row0_q;
    rd_addr0_d  = rd_addr0_q;
    rd_jidx_d   = rd_jidx_q;
    porow_d     = porow_q;
    pocol_d     = pocol_q;
    wrow_d      = wrow_q;
    wcol_d      = wcol_q;
    if (rd_step && rd_q.pool) begin   // the next window position: columns, rows, pooled pixels
      ar_d       = rd_q;
      ar_d.tap   = tap;
      ar_d.wlast = win_last;
      ar_d.jidx  = '0;
      ar_d.jend  = 1'b1;
      ar_d.addr  = pool_addr;
      ar_last_d  = rd_last;
      wcol_d     = (wcol_q == cfg_q.pool.pool_size - 2'd1) ? '0 : wcol_q + 2'd1;
      if (wcol_d == '0) wrow_d = (wrow_q == cfg_q.pool.pool_size - 2'd1) ? '0 : wrow_q + 2'd1;
      if (win_last) pocol_d = (pocol_q == cfg_q.pool.pocols - 8'd1) ? '0 : pocol_q + 8'd1;
      if (win_last && pocol_d == '0) porow_d = porow_q + 8'd1;
      if (rd_last) rd_active_d = 1'b0;
    end else if (rd_step) begin
      ar_d      = rd_q;
      ar_last_d = rd_last;
      // a write ends with its row, its JOIN-th block, or a full row's one block
      ar_d.jidx = rd_jidx_q;
      ar_d.jend = rd_q.full || blk_last || rd_jidx_q == JOIN_W'(JOIN - 1);
      ar_d.blast = blk_last;
      rd_jidx_d = ar_d.jend ? '0 : rd_jidx_q + 1'b1;
      if (blk_last) begin   // the next row, from its first block
        rd_blk_d   = '0;
        rd_idx_d   = rd_idx_q + 16'd1;
        rd_row0_d  = rd_row0_q + 29'd1;
        rd_addr0_d = rd_addr0_q + rd_stride_q;
        rd_row_d   = rd_row0_d;
        rd_d.addr  = rd_addr0_d;
      end else begin        // the row's next block
        rd_blk_d   = rd_blk_q + 16'd1;
        rd_row_d   = rd_row_q + 29'(DIM);
        rd_d.addr  = rd_q.addr + WORD_W'(DIM);
      end
      rd_d.cols = blk_cols(rd_cols_q, rd_blk_d);
      if (rd_last) rd_active_d = 1'b0;
    end
    if (iss_fire && is_norm_cfg && NORM_STATS > 0 && !nm_rs1.set_stats_id_only) begin
      cfg_d.act[2] = nm_rs1.act_msb;   // SOFTMAX is config_st's 0 with it
    end
    if (iss_fire && is_cfg && !is_norm_cfg && !load_scales) begin
      // a scale of all ones keeps the scale (as Gemmini's; LoopConvSt's pooling configs send it), and
      // with it the requantization and the column scales
      cfg_d = '{stride: WORD_W'(st_rs2.dram_stride), act: {1'b0, st_rs1.activation},
                scale: (st_rs2.scale == '1) ? cfg_q.scale : st_rs2.scale,
                offset: !STORE_REQUANT ? '0 : (st_rs2.scale == '1) ? cfg_q.offset : st_rs1.out_offset,
                uint8: STORE_REQUANT && ((st_rs2.scale == '1) ? cfg_q.uint8 : st_rs1.out_uint8),
                col: STORE_COL_SCALES && ((st_rs2.scale == '1) ? cfg_q.col : st_rs1.col_scales),
                pool: st_rs1};
    end
    if (iss_fire && !is_cfg) begin
      rd_active_d = 1'b1;
      rd_d = '{acc: insn.rs2[31], full: insn.rs2[31] && insn.rs2[29], relu: cfg_q.act == 3'd1,
               act: cfg_q.act, blast: 1'b0,
               // a norm command on a plain accumulator mvout (the checker allows no other)
               norm: (NORM_STATS > 0 && insn.rs2[31] && !insn.rs2[29] && cfg_q.pool.pool_stride == '0)
                     ? insn.rs2[28:26] : 3'd0,
               scale: cfg_q.scale, offset: cfg_q.offset, uint8: cfg_q.uint8, col: cfg_q.col,
               pool: cfg_q.pool.pool_stride != '0, tap: 1'b0, wlast: 1'b0, jidx: '0, jend: 1'b1,
               cols: op_cols(insn.rs2), addr: insn.rs1, slot: iss_i.slot};
      porow_d     = '0;
      pocol_d     = '0;
      wrow_d      = '0;
      wcol_d      = '0;
      rd_row_d    = 29'(insn.rs2[25:0]);
      rd_idx_d    = '0;
      rd_rows_d   = op_rows(insn.rs2);
      rd_stride_d = cfg_q.stride;
      rd_blk_d    = '0;
      rd_nblk_d   = (op_cols(insn.rs2) + 16'(DIM - 1)) / 16'(DIM);
      rd_cols_d   = op_cols(insn.rs2);
      rd_row0_d   = 29'(insn.rs2[25:0]);
      rd_addr0_d  = insn.rs1;
      rd_jidx_d   = '0;
      rd_d.cols   = blk_cols(op_cols(insn.rs2), '0);
    end
  end

  always_comb begin
    f_wr_d = f_wr_q;
    f_rd_d = f_rd_q;
    // a joined write starts at its first block: the blocks before this one are DIM bytes each
    fifo_new = '{req: '{addr: ar_q.addr - WORD_W'(ar_q.jidx) * WORD_W'(DIM),
                        len: ar_q.full ? ar_q.cols << 2 : 16'(ar_q.jidx) * 16'(DIM) + ar_q.cols,
                        tag: '{slot: DMA_SLOT_W'(ar_q.slot), last: ar_last_q, row: '0}},
                 data: ar_q.pool ? ROW_W'(merged) : joined};
    if (push) f_wr_d = (f_wr_q == FW'(FIFO - 1)) ? '0 : f_wr_q + 1'b1;
    if (pop) f_rd_d = (f_rd_q == FW'(FIFO - 1)) ? '0 : f_rd_q + 1'b1;
    f_cnt_d       = f_cnt_q + FW'(push) - FW'(pop);
    outstanding_d = outstanding_q + CNT_W'(pop) - CNT_W'(wr_ack_valid_i);
    inflight_d    = inflight_q + CNT_W'(iss_fire && !is_cfg) - CNT_W'(mvout_done) - CNT_W'(norm_done);
  end

  // ---- registers ----------------------------------------------------------------
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_active_q   <= 1'b0;
      ar_valid_q    <= 1'b0;
      f_cnt_q       <= '0;
      f_rd_q        <= '0;
      f_wr_q        <= '0;
      outstanding_q <= '0;
      inflight_q    <= '0;
      cfg_q         <= '{stride: '0, act: '0, scale: F32_ONE, offset: '0, uint8: 1'b0, col: 1'b0,
                         pool: '0};
      have_q        <= 1'b0;
    end else begin
      rd_active_q   <= rd_active_d;
      ar_valid_q    <= ar_valid_d;
      f_cnt_q       <= f_cnt_d;
      f_rd_q        <= f_rd_d;
      f_wr_q        <= f_wr_d;
      outstanding_q <= outstanding_d;
      inflight_q    <= inflight_d;
      cfg_q         <= cfg_d;
      have_q        <= have_d;
    end
  end

  always_ff @(posedge clk_i) begin
    rd_q        <= rd_d;
    rd_row_q    <= rd_row_d;
    rd_idx_q    <= rd_idx_d;
    rd_rows_q   <= rd_rows_d;
    rd_stride_q <= rd_stride_d;
    rd_blk_q    <= rd_blk_d;
    rd_nblk_q   <= rd_nblk_d;
    rd_cols_q   <= rd_cols_d;
    rd_row0_q   <= rd_row0_d;
    rd_addr0_q  <= rd_addr0_d;
    rd_jidx_q   <= rd_jidx_d;
    ar_q        <= ar_d;
    ar_last_q   <= ar_last_d;
    porow_q     <= porow_d;
    pocol_q     <= pocol_d;
    wrow_q      <= wrow_d;
    wcol_q      <= wcol_d;
    max_q       <= max_d;
    if (push) fifo_q[f_wr_q] <= fifo_new;
    if (ar_valid_q && !ar_q.jend) join_q <= joined;
  end

  // ---- assumptions ----------------------------------------------------------------
  // Checked at every clock edge out of reset. rst_ni enables them from an always_ff with the
  // registers' asynchronous reset, so it stays an asynchronous reset only (a `disable iff`
  // would read it synchronously).
`ifndef SYNTHESIS  // checks for simulation; synthesis (Yosys) elaborates none
  always_ff @(posedge clk_i or negedge rst_ni) begin : p_assumptions
    if (rst_ni) begin
      // a row is read only when the FIFO has room, so a push never meets a full FIFO
      if (push) begin
        assert (32'(f_cnt_q) < FIFO) else $error("store unit: row pushed into a full DMA FIFO");
      end
      // every acknowledgement is for a write the unit sent
      if (wr_ack_valid_i) begin
        assert (outstanding_q != '0)
          else $error("store unit: a DMA write acknowledgement without an outstanding write");
      end
    end
  end
`endif
endmodule
