// One lane of the scale unit (combinational), as the load, execute and store
// units use it: y = clip(rint(float32(float32(x) * scale)), lo, hi), then ReLU.
// to_int8 clips to [-128, 127]; otherwise the result saturates to int32.
module fp_scale import systolic_pkg::*; (
  input  logic [31:0] x_i,
  input  logic [31:0] scale_i,
  input  logic        to_int8_i,
  input  logic        relu_i,
  output logic [31:0] y_o,
  output logic [31:0] x_f32_o,     // float32(x), for tests
  output logic [31:0] prod_f32_o   // float32(float32(x) * scale), for tests
);
  assign x_f32_o    = i32_to_f32(x_i);
  assign prod_f32_o = f32_mul(x_f32_o, scale_i);
  assign y_o        = scale_sat(x_i, scale_i, to_int8_i, relu_i);
endmodule
