// The execute unit's account of the mesh's double-buffered output-stationary sums (Gemmini's
// PE c1/c2 and propagate bit): which of each PE's two sums computes (prop), and what the other,
// shifting, one holds. shc counts the shift rows since prop last flipped (saturating at DIM): the
// next one brings out row DIM-1-shc of pend, the results that wait there. dc counts the rows of
// the next chain's D shifted in (its last row first: the next D row is DIM-1-dc); a shift row
// that carries no D shifts zeros in, so that results leave as early as the rows allow and the
// shifting sums are zero (zr) after DIM such rows. cres is the final results of the chain in the
// computing sums; they become pend when a row flips prop, which needs the next chain's start in
// the shifting sums: all of its D (dc == DIM), or zeros (zr) where it has none.
//
// A row (row_i) flips when it is the first step of a job that starts a chain (flip_i), or a flush
// row (flush_i) once the shifting sums are zero and results are held in the computing ones. A
// flush row shifts zeros in until both sums are out; its last row ends the flush (flush_done_o).
// A row that ends a job with a C (end_i) leaves that job's results in cres.
module os_sums import systolic_pkg::*; #(
  parameter int  DIM   = 4,
  parameter type tag_t = logic,   // the execute unit's res_tag_t: row, last, dest
  localparam int KW    = $clog2(DIM + 1)
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  input  logic          row_i,
  input  logic          flip_i,
  input  logic          flush_i,
  input  logic          shift_i,
  input  logic          dshift_i,       // the shift carries a row of D
  input  logic          end_i,
  input  tag_t          end_tag_i,      // the job's first result row's (C row DIM-1's)
  input  logic [15:0]   end_rows_i,
  input  logic [15:0]   end_stride_i,
  output logic          prop_o,         // the row's prop
  output logic [KW-1:0] shc_o,          // before the row (after its flip)
  output logic [KW-1:0] dc_o,
  output logic [KW-1:0] dc_next_o,      // after it
  output logic          zr_next_o,
  output tag_t          tag_o,          // the result row the row's shift brings out
  output logic          pend_o,         // results wait in the shifting sums
  output logic          cres_o,         // results wait in the computing sums
  output logic          flush_done_o
);
  typedef struct packed {
    logic        valid;
    tag_t        tag;      // the next row to leave (C row DIM-1-shc)
    logic [15:0] rows;     // C's rows: the rest leave to DestNone
    logic [15:0] stride;
  } held_t;

  logic          prop_q, prop_d, flip;
  logic [KW-1:0] shc_q, shc_d, dc_q, dc_d;
  held_t         pend_q, pend_d, cres_q, cres_d, pend_eff;

  assign flip     = flip_i || (flush_i && shc_q == KW'(DIM) && dc_q == '0 && cres_q.valid);
  assign prop_o   = prop_q ^ flip;
  assign shc_o    = flip ? '0 : shc_q;
  assign dc_o     = flip ? '0 : dc_q;
  assign pend_eff = flip ? cres_q : pend_q;
  assign pend_o   = pend_q.valid;
  assign cres_o   = cres_q.valid;

  always_comb begin
    tag_o      = pend_eff.tag;
    tag_o.last = pend_eff.valid && shc_o == KW'(DIM - 1);
    if (!pend_eff.valid || 16'(DIM - 1) - 16'(shc_o) >= pend_eff.rows) tag_o.dest = DestNone;
  end

  always_comb begin
    prop_d       = prop_q;
    shc_d        = shc_q;
    dc_d         = dc_q;
    pend_d       = pend_q;
    cres_d       = cres_q;
    flush_done_o = 1'b0;
    if (row_i) begin
      prop_d = prop_o;
      shc_d  = shc_o;
      dc_d   = dc_o;
      pend_d = pend_eff;
      if (flip) cres_d.valid = 1'b0;
      if (shift_i) begin
        if (shc_o != KW'(DIM)) shc_d = shc_o + 1'b1;
        if (dshift_i) dc_d = dc_o + 1'b1;
        pend_d.tag.row = pend_eff.tag.row - 29'(pend_eff.stride);
        if (shc_d == KW'(DIM)) pend_d.valid = 1'b0;
      end
      if (end_i) cres_d = '{valid: 1'b1, tag: end_tag_i, rows: end_rows_i, stride: end_stride_i};
      flush_done_o = flush_i && shc_d == KW'(DIM) && !cres_d.valid;
    end
  end

  assign dc_next_o = dc_d;
  assign zr_next_o = shc_d == KW'(DIM) && dc_d == '0;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      prop_q <= 1'b0;
      shc_q  <= '0;
      dc_q   <= '0;
      pend_q <= '0;
      cres_q <= '0;
    end else begin
      prop_q <= prop_d;
      shc_q  <= shc_d;
      dc_q   <= dc_d;
      pend_q <= pend_d;
      cres_q <= cres_d;
    end
  end
endmodule
