// Infinite or NaN (no 64-bit bitcast without SHADER_INT64).
fn nonfinite_t(v: f64) -> bool {
    return !(abs(v) <= 1.7976931348623157e308);
}

// exp(x) = 2^k exp(r), |r| <= ln2/2, Taylor series to r^14 (error < 1e-16 relative).
fn exp_t(x: f64) -> f64 {
    if (!(x > -745.0 && x < 709.7)) {
        return f64(exp(f32(x))); // NaN, or beyond f64's range: 0 or inf
    }
    let k = round(x * 1.4426950408889634);
    let r = fma(-k, 6.93147180369123816490e-01, x) - k * 1.90821492927058770002e-10;
    var p: f64 = 1.0 / 87178291200.0;
    p = fma(p, r, 1.0 / 6227020800.0);
    p = fma(p, r, 1.0 / 479001600.0);
    p = fma(p, r, 1.0 / 39916800.0);
    p = fma(p, r, 1.0 / 3628800.0);
    p = fma(p, r, 1.0 / 362880.0);
    p = fma(p, r, 1.0 / 40320.0);
    p = fma(p, r, 1.0 / 5040.0);
    p = fma(p, r, 1.0 / 720.0);
    p = fma(p, r, 1.0 / 120.0);
    p = fma(p, r, 1.0 / 24.0);
    p = fma(p, r, 1.0 / 6.0);
    p = fma(p, r, 0.5);
    p = fma(p, r, 1.0);
    p = fma(p, r, 1.0);
    return ldexp(p, i32(k));
}

// log(x) = e ln2 + 2 atanh(s), s = (m - 1) / (m + 1), m in [sqrt(1/2), sqrt(2)).
// (No frexp: naga's f64 frexp has an i64 exponent, which needs SHADER_INT64.)
fn log_t(x: f64) -> f64 {
    if (!(x > 0.0 && x <= 1.7976931348623157e308)) {
        return f64(log(f32(x))); // 0, negative, inf or NaN
    }
    // Scale into f32's normal range by 2^±100, take the exponent from f32's log2 (maybe
    // off by one, corrected below).
    var y = x;
    var e = 0;
    for (var i = 0; i < 12 && y >= 1.2676506002282294e30; i++) {
        y = ldexp(y, -100);
        e += 100;
    }
    for (var i = 0; i < 12 && y < 7.888609052210118e-31; i++) {
        y = ldexp(y, 100);
        e -= 100;
    }
    let j = i32(floor(log2(f32(y))));
    var m = ldexp(y, -j);
    e += j;
    if (m >= 1.4142135623730951) {
        m = m * 0.5;
        e += 1;
    }
    if (m < 0.70710678118654752440) {
        m = m * 2.0;
        e -= 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    var q: f64 = 1.0 / 23.0;
    q = fma(q, z, 1.0 / 21.0);
    q = fma(q, z, 1.0 / 19.0);
    q = fma(q, z, 1.0 / 17.0);
    q = fma(q, z, 1.0 / 15.0);
    q = fma(q, z, 1.0 / 13.0);
    q = fma(q, z, 1.0 / 11.0);
    q = fma(q, z, 1.0 / 9.0);
    q = fma(q, z, 1.0 / 7.0);
    q = fma(q, z, 1.0 / 5.0);
    q = fma(q, z, 1.0 / 3.0);
    q = fma(q, z, 1.0);
    let ef = f64(e);
    return fma(ef, 6.93147180369123816490e-01, fma(ef, 1.90821492927058770002e-10, 2.0 * s * q));
}
