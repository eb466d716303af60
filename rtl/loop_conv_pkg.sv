// Types and helpers of the conv loop unroller (loop_conv.sv and its five sequencers).
//
// A loop's fields come from its seven words (LOOP_CONV_WS_CONFIG_1..6, then LOOP_CONV_WS),
// whose layouts are the generated structs of systolic_isa.svh (isa/loop_words.py). conv_cfg_t
// holds the fields the sequencers read; conv_der_t what LoopConv derives from them once.
package loop_conv_pkg;
  import systolic_pkg::*;

  // Like systolic_pkg, a library: a unit alone uses only some of it.
  /* verilator lint_off UNUSEDPARAM */
  localparam int NLOOPS   = 2;    // loops in flight (Gemmini's concurrent_loops)
  localparam int NSEQ     = 5;    // sequencers, in the order below
  localparam int SeqBias  = 0;
  localparam int SeqInput = 1;
  localparam int SeqWgt   = 2;
  localparam int SeqEx    = 3;
  localparam int SeqSt    = 4;
  localparam int IT_W     = 16;   // loop iterators and bounds (Gemmini's iterator widths)
  /* verilator lint_on UNUSEDPARAM */

  typedef logic [IT_W-1:0] it_t;
  typedef logic signed [IT_W+1:0] sit_t;   // LdInput's row and column, negative in the padding

  // The fields of one loop that the sequencers read.
  typedef struct packed {
    // the whole layer (outer bounds)
    it_t         batch_size;
    it_t         in_row_dim;
    it_t         in_col_dim;
    it_t         in_channels;
    it_t         out_channels;
    it_t         out_row_dim;
    it_t         out_col_dim;
    it_t         in_stride;       // DRAM elements between pixels
    it_t         weight_stride;
    it_t         out_stride;
    it_t         stride;
    it_t         kernel_dim;
    it_t         kernel_dilation; // 0 reads as 1
    // this tile (inner bounds)
    it_t         batches;
    it_t         ochs;            // pochs: no pooling
    it_t         krows;
    it_t         kcols;
    it_t         kchs;
    it_t         lpad;
    it_t         rpad;
    it_t         upad;
    it_t         dpad;
    it_t         orows;
    it_t         ocols;
    // DRAM addresses (0: the sequencer has nothing to do)
    logic [63:0] weights_addr;
    logic [63:0] output_addr;
    logic [63:0] bias_addr;
    logic [63:0] input_addr;
    // flags
    logic        no_bias;
    logic        dw;
    logic        downsample;
    // training convs: the kernel rotated, zeros between input pixels, permuted DRAM layouts
    logic        wrot180;
    logic        input_dilated;
    logic        trans_output_1203;
    logic        trans_weight_1203;
    logic        trans_weight_0132;
    logic        trans_input_3120;
    logic [7:0]  max_pixels;      // max_pixels_per_row, 0 read as 1
    logic [1:0]  a_spad_id;
    logic [1:0]  b_spad_id;
    // max pooling in the store (LoopConvSt): its config_st fields
    logic        no_pool;
    logic [1:0]  activation;
    logic [1:0]  pool_size;
    logic [1:0]  pool_stride;
    logic [1:0]  pupad;
    logic [1:0]  plpad;
    logic [7:0]  porows;
    logic [7:0]  pocols;
    it_t         pool_out_row_dim;
    it_t         pool_out_col_dim;
  } conv_cfg_t;

  // What LoopConv derives from a loop's fields (its LoopConvDerivedParams and B_rows).
  typedef struct packed {
    it_t irows;              // input rows and columns of the tile, padding included
    it_t icols;
    it_t irows_unpadded;
    it_t icols_unpadded;
    it_t upad;               // the padding as the scratchpad holds it (input_dilated: undilated)
    it_t dpad;
    it_t lpad;
    it_t rpad;
    it_t ds_irows;           // >> downsample
    it_t ds_icols;
    it_t ipix;               // ds_irows * ds_icols: scratchpad rows of one image
    it_t opix;               // orows * ocols: accumulator rows of one image
    it_t bias_spad_stride;   // batches * opix: accumulator rows of one block of channels
    it_t input_spad_stride;  // batches * ipix: scratchpad rows of one block of channels
                             // (trans_input_3120: kchs * ipix, of one block of images)
    it_t weight_spad_stride; // krows * kcols * kchs: weight rows of one block of out channels
                             // (trans_weight_0132: krows * kcols * ochs, of a block of in channels)
    it_t b_rows;             // weight rows of the tile
  } conv_der_t;

  // The seven words of a loop, indexed by funct - FunctLoopConvWs (0: LOOP_CONV_WS, 1..6 the
  // configs), each {rs1, rs2}.
  typedef logic [6:0][1:0][WORD_W-1:0] conv_words_t;

  // (the words also hold pooling fields wider than config_st's, which the checker keeps in
  // their range)
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic conv_cfg_t conv_decode(input conv_words_t w);
    loop_conv_ws_config1_rs1_t c1a = w[1][0];
    loop_conv_ws_config1_rs2_t c1b = w[1][1];
    loop_conv_ws_config2_rs1_t c2a = w[2][0];
    loop_conv_ws_config2_rs2_t c2b = w[2][1];
    loop_conv_ws_config3_rs1_t c3a = w[3][0];
    loop_conv_ws_config3_rs2_t c3b = w[3][1];
    loop_conv_ws_config4_rs1_t c4a = w[4][0];
    loop_conv_ws_config4_rs2_t c4b = w[4][1];
    loop_conv_ws_rs1_t         lw  = w[0][0];
    loop_conv_ws_rs2_t         lw2 = w[0][1];
    conv_cfg_t c;
    c.batch_size      = c1a.batch_size;
    c.in_row_dim      = c1a.in_row_dim;
    c.in_col_dim      = c3b.in_col_dim;
    c.in_channels     = c1a.in_channels;
    c.out_channels    = c1a.out_channels;
    c.out_row_dim     = c1b.out_row_dim;
    c.out_col_dim     = c1b.out_col_dim;
    c.in_stride       = c4b.in_stride;
    c.weight_stride   = c4b.weight_stride;
    c.out_stride      = c4b.out_stride;
    c.stride          = it_t'(c1b.stride);
    c.kernel_dim      = c2a.kernel_dim;
    c.kernel_dilation = (c4a.kernel_dilation == '0) ? it_t'(1) : it_t'(c4a.kernel_dilation);
    c.batches         = c2b.batches;
    c.ochs            = c2b.pochs;
    c.krows           = c3a.krows;
    c.kcols           = c3a.kcols;
    c.kchs            = c3a.kchs;
    c.lpad            = c3a.lpad;
    c.rpad            = c3b.rpad;
    c.upad            = c3b.upad;
    c.dpad            = it_t'(c3b.dpad);
    c.orows           = c4a.orows;
    c.ocols           = c4b.ocols;
    c.weights_addr    = w[5][0];
    c.output_addr     = w[5][1];
    c.bias_addr       = w[6][0];
    c.input_addr      = w[6][1];
    c.no_bias         = lw.no_bias;
    c.dw              = lw.dw;
    c.downsample      = lw2.downsample;
    c.wrot180           = lw.wrot180;
    c.input_dilated     = lw2.input_dilated;
    c.trans_output_1203 = lw.trans_output_1203;
    c.trans_weight_1203 = lw.trans_weight_1203;
    c.trans_weight_0132 = lw.trans_weight_0132;
    c.trans_input_3120  = lw.trans_input_3120;
    c.max_pixels      = (lw.max_pixels_per_row == '0) ? 8'd1 : lw.max_pixels_per_row;
    c.a_spad_id       = lw.a_spad_id;
    c.b_spad_id       = lw.b_spad_id;
    c.no_pool          = lw2.no_pool;
    c.activation       = lw2.activation;
    c.pool_size        = 2'(c2a.pool_size);
    c.pool_stride      = 2'(c2a.pool_stride);
    c.pupad            = 2'(c4a.pupad);
    c.plpad            = 2'(c3b.plpad);
    c.porows           = 8'(c2b.porows);
    c.pocols           = 8'(c2b.pocols);
    c.pool_out_row_dim = c1b.pool_out_row_dim;
    c.pool_out_col_dim = c2a.pool_out_col_dim;
    return c;
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // LoopConv's undilated: of x dilated pixels, those the scratchpad holds
  function automatic it_t undilated(input it_t x, input logic dilated);
    return (x + it_t'(dilated)) >> dilated;
  endfunction

  // LoopConvState.derived_params and B_rows; LOG_DIM: log2 of the array's size.
  /* verilator lint_off UNUSEDSIGNAL */   // it reads the sizes only
  function automatic conv_der_t conv_derive(input conv_cfg_t c, input int LOG_DIM);
    conv_der_t d;
    it_t       dkrows, dkcols, banks;
    dkrows  = c.krows + (c.kernel_dilation - it_t'(1)) * (c.krows - it_t'(1));
    dkcols  = c.kcols + (c.kernel_dilation - it_t'(1)) * (c.kcols - it_t'(1));
    d.upad  = undilated(c.upad, c.input_dilated);
    d.dpad  = undilated(c.dpad, c.input_dilated);
    d.lpad  = undilated(c.lpad, c.input_dilated);
    d.rpad  = undilated(c.rpad, c.input_dilated);
    d.irows_unpadded = undilated(c.orows * c.stride + dkrows - it_t'(1) - c.upad - c.dpad,
                                 c.input_dilated);
    d.icols_unpadded = undilated(c.ocols * c.stride + dkcols - it_t'(1) - c.lpad - c.rpad,
                                 c.input_dilated);
    d.irows = d.irows_unpadded + d.upad + d.dpad;
    d.icols = d.icols_unpadded + d.lpad + d.rpad;
    d.ds_irows = d.irows >> c.downsample;
    d.ds_icols = d.icols >> c.downsample;
    d.ipix     = d.ds_irows * d.ds_icols;
    d.opix     = c.orows * c.ocols;
    d.bias_spad_stride   = c.batches * d.opix;
    d.input_spad_stride  = (c.trans_input_3120 ? c.kchs : c.batches) * d.ipix;
    d.weight_spad_stride = c.krows * c.kcols * (c.trans_weight_0132 ? c.ochs : c.kchs);
    banks      = ((c.trans_weight_0132 ? c.kchs : c.ochs) + it_t'((1 << LOG_DIM) - 1)) >> LOG_DIM;
    d.b_rows   = banks * d.weight_spad_stride;
    return d;
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */
  /* verilator lint_on UNUSEDSIGNAL */

  // Gemmini's floorAdd: u + n, or 0 past max_plus_one - 1; u when not en.
  function automatic it_t floor_add(input it_t u, input it_t n, input it_t max_plus_one,
                                    input logic en);
    logic [IT_W:0] sum;
    sum = {1'b0, u} + {1'b0, n};
    if (!en) return u;
    return (sum > {1'b0, max_plus_one} - 1'b1) ? '0 : sum[IT_W-1:0];
  endfunction

  // sFloorAdd: s + n, or lo past max_plus_one - 1; s when not en.
  function automatic sit_t sfloor_add(input sit_t s, input sit_t n, input sit_t max_plus_one,
                                      input sit_t lo, input logic en);
    if (!en) return s;
    return (s + n > max_plus_one - sit_t'(1)) ? lo : s + n;
  endfunction

  function automatic it_t min_it(input it_t a, input it_t b);
    return (a < b) ? a : b;
  endfunction

  // An operand word (mvin/mvout/preload/compute) and the local addresses in it.
  function automatic logic [WORD_W-1:0] operand(input it_t rows, input it_t cols,
                                                input logic [31:0] addr);
    operand_t o;
    o.rows = rows;
    o.cols = cols;
    o.addr = addr;
    return o;
  endfunction
  // (a row's bits past 25 are cut: a loop's rows are in range, the checker makes sure; bits
  // 28:26, an mvout's norm command, are 0)
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [31:0] sp_local(input logic [31:0] row);
    return {6'b000000, row[25:0]};
  endfunction
  function automatic logic [31:0] acc_local(input logic [31:0] row, input logic accumulate);
    return {1'b1, accumulate, 4'b0000, row[25:0]};
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // LoopConvSt's config_st around its pooling mvouts: the loop's activation, out_stride and,
  // before them (pool), its pooling fields; the scale word all ones keeps the store unit's scale.
  /* verilator lint_off UNUSEDSIGNAL */   // it reads the pooling fields only
  function automatic insn_t config_st_pool(input conv_cfg_t c, input logic pool);
    config_st_rs1_t r;
    config_st_rs2_t r2;
    r = '0;
    r.kind       = 2'(ConfigSt);
    r.activation = c.activation;
    if (pool) begin
      r.pool_stride  = c.pool_stride;
      r.pool_size    = c.pool_size;
      r.upad         = c.pupad;
      r.lpad         = c.plpad;
      r.pool_out_dim = 8'(c.pool_out_col_dim);
      r.porows       = c.porows;
      r.pocols       = c.pocols;
      r.orows        = 8'(c.orows);
      r.ocols        = 8'(c.ocols);
    end
    r2.scale       = '1;
    r2.dram_stride = 32'(c.out_stride);
    return '{funct: FunctConfig, rs1: r, rs2: r2};
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // LoopConvExecute's config_ex before a transposed input's computes: only the strides change,
  // A's rows (input channels) one image of pixels apart, C's (images) one image of outputs apart
  function automatic insn_t config_ex_strides(input it_t a_stride, input it_t c_stride);
    config_ex_rs1_t r;
    config_ex_rs2_t r2;
    r                  = '0;
    r2                 = '0;
    r.kind             = 2'(ConfigEx);
    r.dataflow         = 1'b1;
    r.set_only_strides = 1'b1;
    r.a_stride         = a_stride;
    r.acc_scale        = F32_ONE;
    r2.c_stride        = c_stride;
    return '{funct: FunctConfig, rs1: r, rs2: r2};
  endfunction

  // config_ld of one mvin state: scale 1.0, not shrunk (what every LoopConv sequencer sends).
  function automatic insn_t config_ld(input logic [1:0] state, input it_t block_stride,
                                      input logic [7:0] pixel_repeats,
                                      input logic [WORD_W-1:0] dram_stride);
    config_ld_rs1_t r;
    r = '0;
    r.kind          = 2'(ConfigLd);
    r.state         = state;
    r.pixel_repeats = pixel_repeats;
    r.block_stride  = block_stride;
    r.scale         = F32_ONE;
    return '{funct: FunctConfig, rs1: r, rs2: dram_stride};
  endfunction

endpackage
