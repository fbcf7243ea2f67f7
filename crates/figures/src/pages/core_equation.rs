//! The core's memory equation, written once: the formula the first page shows
//! ([`FORMULA`]), its terms ([`Terms`], each defined in words on the page by [`DEFINITIONS`])
//! and an evaluator of the formula's text. A test grades Challenges 1 and 2 with the text as
//! the page states it, evaluated on these terms: what the core teaches is what it grades.

use anyhow::{Result, anyhow, bail};
use charts::style::grouped;
use gpumem::size::format_bytes;
use grading::{Opt, Setup};
use std::fmt::Write as _;

/// The busiest of the step's three moments, on top of what lives the whole step.
pub const FORMULA: &str = "P + S + D + max(L·a + 2·a + G, P + 3·a, P + R)";

/// Each symbol of [`FORMULA`], in the page's words.
pub const DEFINITIONS: &[(&str, &str)] = &[
    (
        "P",
        "the parameters, 4 bytes a weight or bias (`n·m + m` for a dense layer from `n` to `m` \
         features); all the gradients take as much",
    ),
    ("S", "Adam's state, `2·P` (0 for SGD)"),
    (
        "D",
        "the batch: per row 4 bytes a feature, 8 for the int64 label, 4 a class for `y_pred`",
    ),
    (
        "a",
        "one hidden layer's output, `4·B·H`; `L` hidden layers keep `L·a`",
    ),
    ("G", "the output layer's gradients, `4·(H + 1)·classes`"),
    ("R", "`foreach` Adam's square roots, `P` (0 for SGD)"),
];

/// The symbols' values, in bytes, for one setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    pub p: u64,
    pub s: u64,
    pub d: u64,
    pub a: u64,
    pub l: u64,
    pub g: u64,
    pub r: u64,
}

impl Terms {
    pub fn of(setup: Setup) -> Terms {
        let Setup {
            inputs,
            width: h,
            layers,
            classes,
            batch: b,
            optimizer,
        } = setup;
        let dense = |n: u64, m: u64| n * m + m;
        let p = 4 * (dense(inputs, h) + layers.saturating_sub(1) * dense(h, h) + dense(h, classes));
        let adam = optimizer == Opt::Adam;
        Terms {
            p,
            s: if adam { 2 * p } else { 0 },
            d: b * (4 * inputs + 8 + 4 * classes),
            a: 4 * b * h,
            l: layers,
            g: 4 * dense(h, classes),
            r: if adam { p } else { 0 },
        }
    }

    fn value(&self, symbol: char) -> Option<u64> {
        Some(match symbol {
            'P' => self.p,
            'S' => self.s,
            'D' => self.d,
            'a' => self.a,
            'L' => self.l,
            'G' => self.g,
            'R' => self.r,
            _ => return None,
        })
    }

    /// The three moments: top of the backward pass, its bottom, the update.
    pub fn moments(&self) -> [u64; 3] {
        [
            self.l * self.a + 2 * self.a + self.g,
            self.p + 3 * self.a,
            self.p + self.r,
        ]
    }
}

/// The step's peak by the formula as the page states it.
pub fn peak(setup: Setup) -> Result<u64> {
    evaluate(FORMULA, &Terms::of(setup))
}

/// Evaluates `formula`: numbers, the symbols of [`Terms`], `+`, `·`, parentheses and
/// `max(…, …)`.
pub fn evaluate(formula: &str, terms: &Terms) -> Result<u64> {
    let chars: Vec<char> = formula.chars().filter(|c| !c.is_whitespace()).collect();
    let mut at = 0;
    let v = sum(&chars, &mut at, terms)?;
    if at != chars.len() {
        bail!(
            "`{formula}`: unexpected `{}`",
            chars[at..].iter().collect::<String>()
        );
    }
    Ok(v)
}

fn sum(c: &[char], at: &mut usize, t: &Terms) -> Result<u64> {
    let mut v = product(c, at, t)?;
    while c.get(*at) == Some(&'+') {
        *at += 1;
        v += product(c, at, t)?;
    }
    Ok(v)
}

fn product(c: &[char], at: &mut usize, t: &Terms) -> Result<u64> {
    let mut v = factor(c, at, t)?;
    while c.get(*at) == Some(&'·') {
        *at += 1;
        v *= factor(c, at, t)?;
    }
    Ok(v)
}

fn factor(c: &[char], at: &mut usize, t: &Terms) -> Result<u64> {
    let expect = |at: &mut usize, ch: char| -> Result<()> {
        if c.get(*at) != Some(&ch) {
            bail!("expected `{ch}` at {at}");
        }
        *at += 1;
        Ok(())
    };
    match c.get(*at) {
        Some('(') => {
            *at += 1;
            let v = sum(c, at, t)?;
            expect(at, ')')?;
            Ok(v)
        }
        Some('m') if c[*at..].starts_with(&['m', 'a', 'x', '(']) => {
            *at += 4;
            let mut v = sum(c, at, t)?;
            while c.get(*at) == Some(&',') {
                *at += 1;
                v = v.max(sum(c, at, t)?);
            }
            expect(at, ')')?;
            Ok(v)
        }
        Some(d) if d.is_ascii_digit() => {
            let mut v = 0u64;
            while let Some(d) = c.get(*at).and_then(|d| d.to_digit(10)) {
                v = v * 10 + u64::from(d);
                *at += 1;
            }
            Ok(v)
        }
        Some(&s) => {
            let v = t.value(s).ok_or_else(|| anyhow!("unknown symbol `{s}`"))?;
            *at += 1;
            Ok(v)
        }
        None => bail!("the formula ends too soon"),
    }
}

/// The batch of the page's worked example (an input we chose).
pub const EXAMPLE_ROWS: u64 = 100_000;

/// `generated/core_equation.md`: the formula, its symbols, and its terms for the lesson's
/// network at [`EXAMPLE_ROWS`] (SGD), raw and in the allocator's blocks.
pub fn core_equation() -> Result<String> {
    let mut out = String::new();
    writeln!(out, "```text\npeak = {FORMULA}\n```\n")?;
    for (n, (symbol, words)) in DEFINITIONS.iter().enumerate() {
        let end = if n + 1 == DEFINITIONS.len() { '.' } else { ';' };
        writeln!(out, "- `{symbol}`: {words}{end}")?;
    }
    // A batch we chose: large enough that the batch's terms dominate, and not the full
    // training set, whose fate is Challenge 1's question.
    let setup = Setup::lesson(crate::data::LESSON_WIDTH, 1, EXAMPLE_ROWS, Opt::Sgd);
    let t = Terms::of(setup);
    let [top, bottom, update] = t.moments();
    let total = peak(setup)?;
    // Each moment with its terms filled in, so that a reader can follow it without redoing it.
    let b = format_bytes;
    writeln!(
        out,
        "\nFor example, the lesson's network at {rows} rows (a batch we chose; one hidden layer, \
         SGD): `a` = 4 × {rows} × {h} bytes = {a}, `P` = {p}, `G` = {g}, `D` = {d}.\n\n\
         - the top of the backward pass, `L·a + 2·a + G` = {kept} × {a} + {g} = {top};\n\
         - the bottom, `P + 3·a` = {p} + 3 × {a} = {bottom};\n\
         - the update, `P + R` = {p} + {r} = {update};\n\
         - the peak, `P + S + D` + the busiest = {p} + {s} + {d} + {busiest} = {total}.",
        rows = grouped(EXAMPLE_ROWS),
        h = grouped(setup.width),
        a = b(t.a),
        p = b(t.p),
        g = b(t.g),
        d = b(t.d),
        s = b(t.s),
        r = b(t.r),
        kept = t.l + 2,
        top = b(top),
        bottom = b(bottom),
        update = b(update),
        busiest = b(top.max(bottom).max(update)),
        total = b(total),
    )?;
    if t.l == 1 && bottom > top {
        writeln!(out, "\n{}", one_layer_bottom(setup.width, setup.batch)?)?;
    }
    let blocks = crate::data::equation(&gpumem::mlp::MlpConfig::lesson(setup.width), EXAMPLE_ROWS)?;
    writeln!(
        out,
        "\nThese are a tensor's raw bytes. PyTorch's allocator, and the engine's, round each \
         tensor up (to a multiple of 512 bytes; a large one often to 2 MiB steps), so what they \
         report — the calculator, the quizzes, the demos — is a little more: the lesson's \
         parameters, {} raw, take {}; {}.",
        format_bytes(t.p),
        format_bytes(blocks.parameters),
        batch_words(t.d, blocks.batch),
    )?;
    Ok(out)
}

/// With one hidden layer the equation's `P + 3·a` counts the bottom of the backward pass high
/// and so picks it by `P − G`; the engine's step peaks at the top. Said, with the allocation
/// the engine's step peaks on, so that a reader who compares with the calculator is not left
/// to wonder which moment is the busiest.
fn one_layer_bottom(width: u64, rows: u64) -> Result<String> {
    use gpumem::alloc::EventKind;
    let device = gpumem::Device::new(&gpumem::lesson::planning_unlimited())?;
    let config = gpumem::mlp::MlpConfig::lesson(width);
    let (_, trace) = gpumem::measure::measure_step_traced(&device, &config, rows, 0)?;
    let label = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Alloc)
        .max_by_key(|e| e.allocated)
        .map(|e| e.label.clone())
        .ok_or_else(|| anyhow!("the engine's step allocated nothing"))?;
    // The top of the backward pass: the ReLU's gradient, made beside the kept activation and
    // the gradient coming down.
    if label != "relu.grad" {
        bail!("the one-layer step peaks on `{label}`, not at the top of the backward pass");
    }
    // At the bottom, as the first layer's weight gradient is made: one `a`, not three.
    let a = 4 * rows * width;
    let bottom = trace
        .events
        .iter()
        .find(|e| e.kind == EventKind::Alloc && e.label == "layer0.weight.grad")
        .map(|e| e.allocated)
        .ok_or_else(|| anyhow!("the one-layer step made no layer0.weight.grad"))?;
    if !(a..2 * a).contains(&bottom) {
        bail!("at layer0.weight.grad {bottom} B are allocated: not one `a` ({a} B) and change");
    }
    Ok(format!(
        "With one hidden layer the equation counts the bottom high: the first layer needs no \
         gradient for its input `x`, so when the backward pass reaches it one `a` is alive, \
         not three. The step itself peaks at the top, allocating `{label}`, as the calculator \
         says."
    ))
}

/// The batch's `D` raw and as blocks, said once when rounding leaves it the same.
fn batch_words(raw: u64, blocks: u64) -> String {
    if format_bytes(raw) == format_bytes(blocks) {
        format!("the batch, `D`, is {} in both", format_bytes(raw))
    } else {
        format!(
            "the batch, `D`, {} raw, takes {}",
            format_bytes(raw),
            format_bytes(blocks)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_evaluator_reads_the_formula() {
        let t = Terms {
            p: 10,
            s: 20,
            d: 1,
            a: 3,
            l: 2,
            g: 5,
            r: 10,
        };
        assert_eq!(evaluate("P + S + D", &t).unwrap(), 31);
        assert_eq!(evaluate("2·a + L·a", &t).unwrap(), 12);
        assert_eq!(evaluate("max(1, P + R, 3·a)", &t).unwrap(), 20);
        // Top 2·3 + 2·3 + 5 = 17, bottom 10 + 9 = 19, update 10 + 10 = 20.
        assert_eq!(evaluate(FORMULA, &t).unwrap(), 31 + 20);
        assert!(evaluate("P + Q", &t).is_err());
        assert!(evaluate("max(P", &t).is_err());
    }
}
