fn exp_t(x: f32) -> f32 { return exp(x); }
fn log_t(x: f32) -> f32 { return log(x); }
fn nonfinite_t(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u; }
