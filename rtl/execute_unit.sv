// Execute unit: config_ex and the (preload-merged) computes, weight- or
// output-stationary as config_ex chooses (DATAFLOWS says which the hardware has).
//
// Two stages in front of the mesh:
//  * W takes the next entry from the execute queue. For a weight-stationary
//    compute_preloaded it reads the DIM weight rows (B; rows past b_rows and
//    columns past b_cols are zero) one per cycle from the scratchpad into the
//    next of NBUF weight buffers (with b_transpose, stored row n is weight column
//    n). The writes chase the last rows that used that buffer through the mesh:
//    such a row reads PE row (or column) r until DIM - 1 + r cycles after it
//    entered, and W writes row r at least r + 1 cycles after it starts, so W
//    starts DIM - 1 cycles after that row entered, not when it has left the mesh
//    (2*DIM - 1 cycles): with three buffers the weights of the next block load
//    while the block before streams, and a new-weights compute costs no more
//    than one that keeps its weights.
//    compute_accumulated keeps the current buffer. Output-stationary, it reads
//    the operand that goes through the transposer (A, or B when both are
//    transposed) into the transposer's free block. config_ex takes effect here;
//    each compute keeps a copy of the config it saw.
//  * S streams the c_rows rows of A (a_stride apart) and D, one row a cycle
//    when the banks allow (A and D in one bank take two cycles), into the mesh.
//    Output-stationary (the PEs double-buffer their sums, os_sums.sv), every
//    compute streams its K steps (a column of A and a row of B each) into one
//    of the two sums while the other shifts: the results held there out, zeros
//    in, and D of the next chain once it waits in W (DIM shift rows, D's last
//    row first), as on Gemmini, from the bank port the steps leave free. A
//    compute_preloaded (or a compute_accumulated after a compute with a C)
//    starts a chain: it flips the sums once its D (or zeros) is all in, shifting
//    in first what is not.
//    W loads the next block while S streams, so back-to-back computes keep the
//    mesh full.
// Rows leave the mesh 2*DIM-1 cycles later; results are written (ex_array.sv) to the
// accumulator or the scratchpad. A compute is done when its last row is written (OS:
// its last result row; without a C, when its last step enters). Output-stationary
// results wait in the PEs until a later chain's shift rows bring them out, or a flush
// when no OS compute follows.
module execute_unit import systolic_pkg::*; #(
  parameter int DIM      = 4,
  parameter int SP_ROWS  = 256,
  parameter int ACC_ROWS = 64,
  parameter int N        = 10,
  parameter int NBUF     = 3,    // weight buffers in every PE
  parameter int DATAFLOWS = 3,   // bit 0 output-stationary, bit 1 weight-stationary
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
  // a buffer's age: cycles since the last row that used it entered the mesh, minus one
  // (0 the cycle after), saturated at AGE_MAX; W starts writing one at AGE_GO, which
  // puts row (column) r's write at age r + DIM - 1 or later, the cycle after the last
  // old row's last read of it (the assumption at the end checks every write)
  localparam int AGE_MAX = 2 * DIM - 1;
  localparam int AGE_W   = $clog2(AGE_MAX + 1);
  localparam int AGE_GO  = (DIM > 2) ? DIM - 2 : 0;
  localparam int TIW    = (DIM > 1) ? $clog2(DIM) : 1;   // a transposer row or column
  localparam logic HAS_OS = DATAFLOWS[0];
  localparam logic HAS_WS = DATAFLOWS[1];

  // ---- parameter assumptions ------------------------------------------------------
  // the mesh's buffer select is BUF_W = 2 bits
  if (NBUF < 1 || NBUF > 2 ** BUF_W) begin : g_nbuf_check
    $error("execute_unit: NBUF = %0d weight buffers, but the buffer index is %0d bits",
           NBUF, BUF_W);
  end
  // result rows are 26-bit addresses (the operand word's [25:0]; bits 31:29 are flags, 28:26 an
  // mvout's norm command)
  if (SP_AW > 26 || ACC_AW > 26) begin : g_row_check
    $error("execute_unit: %0d scratchpad / %0d accumulator rows do not fit 26-bit row numbers",
           SP_ROWS, ACC_ROWS);
  end

  // config_ex, as each compute sees it
  typedef struct packed {
    logic [15:0] a_stride;
    logic [15:0] c_stride;
    logic [31:0] scale;
    logic        relu;
    logic        os;       // output-stationary
    logic        a_t, b_t; // A, B (WS: the weights) stored transposed
    logic [4:0]  rsh;      // OS: the rounding right shift of results
  } ex_cfg_t;

  // a compute and its merged preload
  typedef struct packed {
    logic [SLOT_W-1:0] slot;
    logic [WORD_W-1:0] a, d, b, c;
    ex_cfg_t           cfg;
  } job_t;

  // travels through the mesh with each row
  typedef struct packed {
    logic [SLOT_W-1:0] slot;
    logic              last;
    dest_e             dest;
    logic [28:0]       row;
    logic [15:0]       cols;
    logic [31:0]       scale;
    logic              relu;
    logic              shift;   // an output-stationary result row (rounding-shifted by rsh)
    logic [4:0]        rsh;
  } res_tag_t;

  ex_cfg_t cfg_q, cfg_d;

  // ---- W stage ------------------------------------------------------------------
  logic              w_valid_q, w_valid_d, w_pre_q, w_pre_d, w_started_q, w_started_d;
  job_t              w_q, w_d;
  logic [KW-1:0]     w_k_q, w_k_d;
  logic [31:0]       w_off_q, w_off_d;    // row offset of the next row W reads
  logic              w_ph_q, w_ph_d;      // W's phase: 0 the weights, 1 the transposer's block
  logic              w_os, w_tr_a, w_tr, w_load, w_ph_done;
  logic [WORD_W-1:0] w_src;               // the operand W reads
  logic [BUF_W-1:0]  cur_buf_q, cur_buf_d, nbuf;
  logic [AGE_W-1:0]  age_q [NBUF];
  logic [AGE_W-1:0]  age_d [NBUF];
  logic              w_buf_free;          // W may start writing the weights into nbuf
  // weight-row write, one cycle after the read
  logic              wwr_valid_q, wwr_valid_d, wwr_zero_q, wwr_zero_d;
  logic              wwr_tr_q, wwr_tr_d, wwr_col_q, wwr_col_d;   // into the transposer; a weight column
  logic [KW-1:0]     wwr_row_q, wwr_row_d;
  logic [BUF_W-1:0]  wwr_buf_q, wwr_buf_d;
  logic [15:0]       wwr_cols_q, wwr_cols_d;

  // ---- S stage ------------------------------------------------------------------
  logic              s_valid_q, s_valid_d, s_a_got_q, s_a_got_d, s_d_got_q, s_d_got_d;
  job_t              s_q, s_d;
  logic [15:0]       s_row_q, s_row_d;
  logic [31:0]       s_a_row_q, s_a_row_d, s_c_row_q, s_c_row_d;
  logic [BUF_W-1:0]  s_buf_q, s_buf_d;
  logic              s_shift_q, s_shift_d, s_flush_q, s_flush_d, s_tblk_q, s_tblk_d;
  logic              s_flip_q, s_flip_d, s_dsh_q, s_dsh_d;   // OS: the job starts a chain; on a D
  logic              s_os, s_tr_a, s_tr_b, s_row_last, s_step, s_has_c;
  logic [15:0]       s_rows;
  // ---- output-stationary ------------------------------------------------------------
  logic              mode_q, mode_d;      // the mesh's dataflow (1: OS)
  logic              tr_cur_q, tr_cur_d;  // the transposer block S reads
  logic              mode_ok, flush_go, flush_done, w_start, w_dneed;
  // the row's shift: a row of W's job's D (overlapped with S's steps) or of S's job's own, read
  // through RA when the row takes no A from the bank, else through RD; or zeros
  dest_e             s_dest;
  logic              sh, dsh, zfill, sh_ov, sh_need, sh_via_ra, os_prop, os_end, pend_any, cres_any;
  logic              zr_next;
  logic [WORD_W-1:0] sh_src;
  logic [15:0]       sh_row;
  logic [KW-1:0]     shc, dc, dc_next;
  res_tag_t          os_tag, end_tag;

  // ---- injection ------------------------------------------------------------------
  typedef struct packed {
    logic             a_need, a_arr, d_need, d_arr;   // rows from RA / RD; arr: from the bank now
    logic             a_is_d, d_is_b;                 // OS: RA's row is D (else A), RD's B (else D)
    logic             a_tr, b_tr, shift, prop;        // A / B from the transposer column; OS bits
    logic             tblk;                           // the transposer column: read as the row enters,
    logic [TIW-1:0]   tcol;                           // after W's last write to the block
    logic [15:0]      a_cols, d_cols;                 // RA's, RD's
    logic [BUF_W-1:0] buf_sel;
    logic             fin;                            // an OS compute without a C is done
    logic [SLOT_W-1:0] fin_slot;
    res_tag_t         tag;
  } inj_t;
  logic              inj_valid_q, inj_valid_d;
  inj_t              inj_q, inj_d;
  logic              cap_a_q, cap_a_d, cap_d_q, cap_d_d;
  logic [DIM*8-1:0]  a_buf_q, a_buf_d, d_buf_q, d_buf_d;

  insn_t             insn;     // the instruction offered for issue
  /* verilator lint_off UNUSEDSIGNAL */   // the fields a config_ex sets here
  config_ex_rs1_t    ex_rs1;   // its words, as a config_ex
  config_ex_rs2_t    ex_rs2;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [2:0]        rd_req;   // scratchpad reads: A, D, B
  logic              iss_fire, is_cfg, w_step, w_bneed, w_go, w_loaded, hand, s_free, busy;
  logic              s_need_a, s_need_d, s_a_ok, s_d_ok, s_row_done, s_last, a_gnt, d_gnt;
  logic              out_valid, mesh_active;
  /* verilator lint_off UNUSEDSIGNAL */
  res_tag_t          out_tag;   // of the row leaving the mesh (its slot and last go to done_o)
  /* verilator lint_on UNUSEDSIGNAL */

  assign insn   = iss_i.insn;
  assign ex_rs1 = insn.rs1;
  assign ex_rs2 = insn.rs2;
  assign nbuf   = (cur_buf_q == BUF_W'(NBUF - 1)) ? '0 : cur_buf_q + 1'b1;
  assign is_cfg = insn.funct == FunctConfig;

  // W: weight rows (WS compute_preloaded), then the rows of the operand that goes through
  // the transposer: A when transposed (WS) or not (OS), else B when both are (OS)
  // (requests depend on state only, grants come back)
  assign w_os    = w_q.cfg.os;
  assign w_tr_a  = w_os ^ w_q.cfg.a_t;
  assign w_tr    = w_tr_a || (w_os && w_q.cfg.b_t);
  assign w_load  = !w_ph_q || w_tr;
  assign w_src   = !w_ph_q ? w_q.b : w_tr_a ? w_q.a : w_q.d;
  // nbuf is free once the last row that used it is AGE_GO old; with fewer than three
  // buffers a row of S or the one entering may use it too (with three they use cur_buf_q
  // or the one before, never nbuf)
  assign w_buf_free = 32'(age_q[nbuf]) >= AGE_GO
                      && !(NBUF < 3 && ((s_valid_q && s_buf_q == nbuf)
                                        || (inj_valid_q && inj_q.buf_sel == nbuf)));
  assign w_go    = w_valid_q && w_load && (w_k_q != KW'(DIM))
                   && (w_ph_q || w_started_q || w_buf_free);
  assign w_bneed = (32'(w_k_q) < 32'(op_rows(w_src))) && (op_addr(w_src) != GARBAGE_ADDR);
  // S: rows of A and D (OS: of A and B, and D when the row shifts; none from the transposer)
  assign s_os     = s_q.cfg.os;
  assign s_tr_a   = s_os ^ s_q.cfg.a_t;
  assign s_tr_b   = s_os && s_q.cfg.a_t && s_q.cfg.b_t;
  assign s_step   = s_valid_q && !s_shift_q;
  assign s_has_c  = op_addr(s_q.c) != GARBAGE_ADDR;
  assign s_rows   = !s_os ? op_rows(s_q.c) : s_q.cfg.a_t ? op_rows(s_q.a) : op_cols(s_q.a);
  assign s_row_last = s_row_q == s_rows - 16'd1;
  // W's OS job starts a chain (a compute_preloaded, or a compute_accumulated after results: it
  // starts from zero) on its D shifted in (w_dneed), or on zeros. Rows of the D ride on S's
  // steps while a bank port is free of them (A or B comes from the transposer), else they come
  // first in the job's own turn; a row that shifts no D shifts zeros, until the sums are zero
  assign w_start   = w_os && (w_pre_q || ((s_valid_q && s_os && !s_flush_q) ? s_has_c : cres_any));
  assign w_dneed   = w_start && w_pre_q && (op_addr(w_q.b) != GARBAGE_ADDR);
  assign sh_ov     = s_step && s_os && w_valid_q && w_dneed && dc != KW'(DIM) && (s_tr_a || s_tr_b);
  assign dsh       = sh_ov || (s_valid_q && s_shift_q && s_dsh_q);
  assign zfill     = s_valid_q && s_os && !dsh && shc != KW'(DIM) && dc == '0;
  assign sh        = dsh || zfill;
  assign sh_src    = sh_ov ? w_q.b : s_q.b;
  assign sh_row    = 16'(DIM - 1) - 16'(dc);
  assign sh_via_ra = s_shift_q || s_tr_a;
  assign sh_need   = dsh && (sh_row < op_rows(sh_src));
  assign s_need_a = (s_step && !s_tr_a && (s_row_q < op_rows(s_q.a)) && (op_addr(s_q.a) != GARBAGE_ADDR))
                    || (sh_need && sh_via_ra);
  assign s_need_d = (s_step && !s_tr_b && (s_row_q < op_rows(s_q.d)) && (op_addr(s_q.d) != GARBAGE_ADDR))
                    || (sh_need && !sh_via_ra);

  assign rd_req[RA]  = s_need_a && !s_a_got_q;
  assign rd_req[RD]  = s_need_d && !s_d_got_q;
  assign rd_req[RB]  = w_go && w_bneed;
  assign sp_rd_o[RA] = '{req: rd_req[RA], row: sh_via_ra ? SP_AW'(32'(op_addr(sh_src)) + 32'(sh_row))
                                                          : SP_AW'(s_a_row_q), default: '0};
  assign sp_rd_o[RD] = '{req: rd_req[RD], row: (sh_need && !sh_via_ra)
                           ? SP_AW'(32'(op_addr(sh_src)) + 32'(sh_row))
                           : SP_AW'(32'(op_addr(s_q.d)) + 32'(s_row_q)),
                         default: '0};
  assign sp_rd_o[RB] = '{req: rd_req[RB], row: SP_AW'(32'(op_addr(w_src)) + w_off_q),
                         default: '0};
  assign a_gnt = rd_req[RA] && sp_rd_gnt_i[RA];
  assign d_gnt = rd_req[RD] && sp_rd_gnt_i[RD];

  assign w_step   = w_go && (!w_bneed || sp_rd_gnt_i[RB]);
  assign w_ph_done = !w_load || (w_k_q == KW'(DIM)) || (w_step && w_k_q == KW'(DIM - 1));
  assign w_loaded  = w_ph_done && (w_ph_q || !w_tr);
  assign s_a_ok   = !s_need_a || s_a_got_q || sp_rd_gnt_i[RA];
  assign s_d_ok   = !s_need_d || s_d_got_q || sp_rd_gnt_i[RD];
  assign s_row_done  = s_valid_q && s_a_ok && s_d_ok;
  assign s_last      = s_row_done && (s_flush_q ? flush_done : s_step && s_row_last);
  assign s_free      = !s_valid_q || s_last;
  // OS: a compute that names C leaves its results in the PEs (os_end)
  assign os_end      = s_os && s_step && s_row_done && s_row_last && s_has_c;
  assign s_dest      = !s_has_c ? DestNone : !s_q.c[31] ? DestSp : s_q.c[30] ? DestAccum : DestAcc;
  assign end_tag     = '{slot: s_q.slot, last: 1'b1, dest: s_dest,
                         row: 29'(32'(op_addr(s_q.c) & ROW_MASK) + 32'(DIM - 1) * 32'(s_q.cfg.c_stride)),
                         cols: op_cols(s_q.c), scale: s_q.cfg.scale, relu: s_q.cfg.relu,
                         shift: 1'b1, rsh: s_q.cfg.rsh};
  // the mesh changes dataflow only while empty
  assign mode_ok     = w_os == mode_q || (!s_valid_q && !inj_valid_q && !mesh_active && !pend_any
                                          && !cres_any);
  assign hand        = w_valid_q && w_loaded && s_free && mode_ok;
  // results held and no OS compute to bring them out: a flush
  assign flush_go    = (pend_any || cres_any) && !s_valid_q && !(w_valid_q && w_os);

  os_sums #(.DIM(DIM), .tag_t(res_tag_t)) u_os_sums (
    .clk_i,
    .rst_ni,
    .row_i        (s_row_done && s_os),
    .flip_i       (s_flip_q && s_step && s_row_q == '0),
    .flush_i      (s_flush_q),
    .shift_i      (sh),
    .dshift_i     (dsh),
    .end_i        (os_end),
    .end_tag_i    (end_tag),
    .end_rows_i   (op_rows(s_q.c)),
    .end_stride_i (s_q.cfg.c_stride),
    .prop_o       (os_prop),
    .shc_o        (shc),
    .dc_o         (dc),
    .dc_next_o    (dc_next),
    .zr_next_o    (zr_next),
    .tag_o        (os_tag),
    .pend_o       (pend_any),
    .cres_o       (cres_any),
    .flush_done_o (flush_done)
  );
  assign iss_ready_o = !w_valid_q || hand;
  assign iss_fire    = iss_valid_i && iss_ready_o;

  // the row onto the mesh, the weight and transposer writes, and the results' writes
  ex_array #(.DIM(DIM), .SP_ROWS(SP_ROWS), .ACC_ROWS(ACC_ROWS), .NBUF(NBUF), .inj_t(inj_t),
             .tag_t(res_tag_t)) u_array (
    .clk_i,
    .rst_ni,
    .os_i          (mode_q),
    .inj_valid_i   (inj_valid_q),
    .inj_i         (inj_q),
    .ra_i          (inj_q.a_arr ? sp_rd_data_i[RA] : a_buf_q),
    .rd_i          (inj_q.d_arr ? sp_rd_data_i[RD] : d_buf_q),
    .rb_i          (sp_rd_data_i[RB]),
    .wr_valid_i    (wwr_valid_q),
    .wr_zero_i     (wwr_zero_q),
    .wr_tr_i       (wwr_tr_q),
    .wr_col_i      (wwr_col_q),
    .wr_row_i      (wwr_row_q),
    .wr_buf_i      (wwr_buf_q),
    .wr_cols_i     (wwr_cols_q),
    .sp_wr_o,
    .acc_wr_o,
    .out_valid_o   (out_valid),
    .out_tag_o     (out_tag),
    .active_o      (mesh_active)
  );

  // a config_ex is done when it issues, a compute when its last row leaves the mesh: its last
  // result row (OS with a C), or, OS without one, when its last step enters
  assign done_o = (N'(out_valid && out_tag.last) << out_tag.slot)
                  | (N'(inj_valid_q && inj_q.fin) << inj_q.fin_slot)
                  | (N'(iss_fire && is_cfg) << iss_i.slot);

  assign busy        = w_valid_q || s_valid_q || inj_valid_q || mesh_active || pend_any || cres_any;
  assign mesh_busy_o = inj_valid_q;
  // a read of A, D or B waiting for its bank; the execute unit never waits on the DMA
  assign stack_o     = '{bank: (rd_req & ~sp_rd_gnt_i) != '0, dma: 1'b0, busy: busy};
  assign dbg_state_o = {s_valid_q, w_valid_q && w_pre_q && !w_started_q && !w_buf_free,
                        w_valid_q && !w_loaded, w_valid_q && w_loaded && !s_free};

  // ---- next state: W --------------------------------------------------------------
  always_comb begin
    cfg_d       = cfg_q;
    w_valid_d   = w_valid_q;
    w_pre_d     = w_pre_q;
    w_started_d = w_started_q;
    w_ph_d      = w_ph_q;
    w_d         = w_q;
    w_k_d       = w_k_q;
    w_off_d     = w_off_q;
    cur_buf_d   = cur_buf_q;
    tr_cur_d    = tr_cur_q;
    wwr_valid_d = w_step;
    wwr_row_d   = wwr_row_q;
    wwr_zero_d  = wwr_zero_q;
    wwr_tr_d    = wwr_tr_q;
    wwr_col_d   = wwr_col_q;
    wwr_buf_d   = wwr_buf_q;
    wwr_cols_d  = wwr_cols_q;
    // the weight buffers' ages
    for (int b = 0; b < NBUF; b++) begin
      if (inj_valid_q && inj_q.buf_sel == BUF_W'(b)) age_d[b] = '0;
      else if (age_q[b] != AGE_W'(AGE_MAX)) age_d[b] = age_q[b] + 1'b1;
      else age_d[b] = age_q[b];
    end
    if (w_step) begin
      w_k_d       = w_k_q + 1'b1;
      w_off_d     = w_off_q + ((w_ph_q && w_tr_a) ? 32'(w_q.cfg.a_stride) : 32'd1);
      w_started_d = 1'b1;
      wwr_row_d   = w_k_q;
      wwr_zero_d  = !w_bneed;
      wwr_buf_d   = w_ph_q ? BUF_W'(!tr_cur_q) : nbuf;
      wwr_cols_d  = op_cols(w_src);
      wwr_tr_d    = w_ph_q;
      wwr_col_d   = !w_ph_q && w_q.cfg.b_t;
      if (!w_ph_q && w_ph_done && w_tr) begin   // the weights are in: on to the transposer's block
        w_ph_d  = 1'b1;
        w_k_d   = '0;
        w_off_d = '0;
      end
    end
    if (hand) begin
      w_valid_d = 1'b0;
      if (!w_os && w_pre_q) cur_buf_d = nbuf;
      if (w_tr) tr_cur_d = !tr_cur_q;
    end
    if (iss_fire && is_cfg && !ex_rs1.set_only_strides) begin
      // dataflow 0 is OS; activation 1 ReLU (isa/loop_words.py's CONFIG_EX)
      cfg_d = '{a_stride: ex_rs1.a_stride, c_stride: ex_rs2.c_stride, scale: ex_rs1.acc_scale,
                relu: ex_rs1.activation == 2'd1, os: HAS_OS && (!HAS_WS || !ex_rs1.dataflow),
                a_t: ex_rs1.a_transpose, b_t: ex_rs1.b_transpose, rsh: ex_rs2.in_shift[4:0]};
    end else if (iss_fire && is_cfg) begin   // LoopConv's: the strides only
      cfg_d.a_stride = ex_rs1.a_stride;
      cfg_d.c_stride = ex_rs2.c_stride;
    end
    if (iss_fire && !is_cfg) begin
      w_valid_d   = 1'b1;
      w_pre_d     = insn.funct == FunctComputePreloaded;
      w_started_d = 1'b0;
      w_ph_d      = cfg_q.os || insn.funct != FunctComputePreloaded;
      w_k_d       = '0;
      w_off_d     = '0;
      w_d         = '{slot: iss_i.slot, a: insn.rs1, d: insn.rs2, b: iss_pre_i.b, c: iss_pre_i.c,
                      cfg: cfg_q};
    end
  end

  // ---- next state: S and injection ------------------------------------------------
  always_comb begin
    s_valid_d   = s_valid_q;
    s_d         = s_q;
    s_row_d     = s_row_q;
    s_a_row_d   = s_a_row_q;
    s_c_row_d   = s_c_row_q;
    s_buf_d     = s_buf_q;
    s_shift_d   = s_shift_q;
    s_flush_d   = s_flush_q;
    s_flip_d    = s_flip_q;
    s_dsh_d     = s_dsh_q;
    s_tblk_d    = s_tblk_q;
    mode_d      = mode_q;
    s_a_got_d   = s_a_got_q;
    s_d_got_d   = s_d_got_q;
    cap_a_d     = a_gnt;
    cap_d_d     = d_gnt;
    a_buf_d     = cap_a_q ? sp_rd_data_i[RA] : a_buf_q;
    d_buf_d     = cap_d_q ? sp_rd_data_i[RD] : d_buf_q;
    inj_valid_d = s_row_done;
    inj_d       = inj_q;
    if (s_row_done) begin
      // OS: RA carries the shift's D when A comes from the transposer (or the row has no steps),
      // RD B unless it carries the D
      inj_d = '{a_need: s_need_a, a_arr: s_need_a && !s_a_got_q,
                d_need: s_need_d, d_arr: s_need_d && !s_d_got_q,
                a_is_d: s_os && sh_via_ra, d_is_b: s_os && !(sh_need && !sh_via_ra),
                a_tr: s_tr_a && s_step, b_tr: s_tr_b && s_step, shift: sh, prop: os_prop,
                tblk: s_tblk_q, tcol: TIW'(s_row_q),
                a_cols: (s_os && sh_via_ra) ? op_cols(sh_src) : op_cols(s_q.a),
                d_cols: (sh_need && !sh_via_ra) ? op_cols(sh_src) : op_cols(s_q.d),
                buf_sel: s_buf_q, fin: s_os && s_step && s_row_last && !s_has_c, fin_slot: s_q.slot,
                tag: '{slot: s_q.slot, last: s_last && !s_os, dest: s_os ? DestNone : s_dest,
                       row: s_c_row_q[28:0], cols: op_cols(s_q.c), scale: s_q.cfg.scale,
                       relu: s_q.cfg.relu, shift: 1'b0, rsh: '0}};
      if (sh) inj_d.tag = os_tag;   // the result row the shift brings out
      if (s_step) begin
        s_row_d   = s_row_q + 16'd1;
        s_a_row_d = s_a_row_q + 32'(s_q.cfg.a_stride);
        s_c_row_d = s_c_row_q + 32'(s_q.cfg.c_stride);
      end
      s_a_got_d = 1'b0;
      s_d_got_d = 1'b0;
      // the chain's start is in the shifting sums: on to the steps
      if (s_shift_q && !s_flush_q && (s_dsh_q ? dc_next == KW'(DIM) : zr_next)) s_shift_d = 1'b0;
      if (s_last) s_valid_d = 1'b0;
    end else begin
      if (a_gnt) s_a_got_d = 1'b1;
      if (d_gnt) s_d_got_d = 1'b1;
    end
    if (flush_go) begin
      s_valid_d     = 1'b1;
      s_d.cfg.os    = 1'b1;
      s_shift_d     = 1'b1;
      s_flush_d     = 1'b1;
      s_flip_d      = 1'b0;
      s_dsh_d       = 1'b0;
      s_row_d       = '0;
    end
    if (hand) begin
      s_valid_d = 1'b1;
      s_d       = w_q;
      s_flip_d  = w_start;
      s_dsh_d   = w_dneed;
      s_shift_d = w_start && !(w_dneed ? dc_next == KW'(DIM) : zr_next);
      s_flush_d = 1'b0;
      s_tblk_d  = w_tr ? !tr_cur_q : tr_cur_q;
      mode_d    = w_os;
      s_buf_d   = w_pre_q ? nbuf : cur_buf_q;
      s_row_d   = '0;
      s_a_row_d = 32'(op_addr(w_q.a));
      s_c_row_d = op_addr(w_q.c) & ROW_MASK;
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
      cfg_q       <= '{a_stride: 16'd1, c_stride: 16'd1, scale: F32_ONE, relu: 1'b0,
                       os: !HAS_WS, a_t: 1'b0, b_t: 1'b0, rsh: '0};
      age_q       <= '{default: AGE_W'(AGE_MAX)};
      mode_q      <= 1'b0;
      tr_cur_q    <= 1'b0;
    end else begin
      w_valid_q   <= w_valid_d;
      s_valid_q   <= s_valid_d;
      inj_valid_q <= inj_valid_d;
      wwr_valid_q <= wwr_valid_d;
      cap_a_q     <= cap_a_d;
      cap_d_q     <= cap_d_d;
      cur_buf_q   <= cur_buf_d;
      cfg_q       <= cfg_d;
      age_q       <= age_d;
      mode_q      <= mode_d;
      tr_cur_q    <= tr_cur_d;
    end
  end

  always_ff @(posedge clk_i) begin
    w_pre_q     <= w_pre_d;
    w_started_q <= w_started_d;
    w_ph_q      <= w_ph_d;
    w_q         <= w_d;
    w_k_q       <= w_k_d;
    w_off_q     <= w_off_d;
    wwr_tr_q    <= wwr_tr_d;
    wwr_col_q   <= wwr_col_d;
    s_shift_q   <= s_shift_d;
    s_flush_q   <= s_flush_d;
    s_flip_q    <= s_flip_d;
    s_dsh_q     <= s_dsh_d;
    s_tblk_q    <= s_tblk_d;
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
      // the weights being written (PE row, or column, wwr_row_q of buffer wwr_buf_q) are
      // read by no row in the mesh or entering it any more: the last row that used the
      // buffer entered age + 1 cycles ago and reads PE row (column) r until DIM - 1 + r
      // cycles after it entered
      if (wwr_valid_q && !wwr_tr_q) begin
        assert (32'(age_q[wwr_buf_q]) >= 32'(wwr_row_q) + DIM - 1
                && !(inj_valid_q && inj_q.buf_sel == wwr_buf_q))
          else $error("execute_unit: weights written into row %0d of buffer %0d while it is in use",
                      wwr_row_q, wwr_buf_q);
      end
    end
  end
`endif
endmodule
