//! The lesson pages' quizzes.

use super::{LARGE_ROWS, Question, distinct};
use crate::data::{DEEP_BATCH, DEEP_WIDTH, LESSON_WIDTH, SEED, adam, equation, network};
use crate::epochs::{card, leak_runs, leak_setup};
use anyhow::{Result, anyhow, bail};
use charts::style::grouped;
use gpumem::Device;
use gpumem::alloc::{
    MIN_BLOCK, MIN_LARGE_ALLOC, OomMessage, ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE, round_size,
    segment_size,
};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::CARD_BYTES;
use gpumem::mlp::{Batch, Mlp, MlpConfig, Optimizer, Precision, Strategy};
use gpumem::size::format_bytes as bytes;
use gpumem::tensor::DType;

/// What Adam adds (which term is largest at a small batch, the calculator's first state shows).
pub fn memory_equation() -> Result<Vec<Question>> {
    let sgd_config = MlpConfig::lesson(LESSON_WIDTH);
    let sgd = equation(&sgd_config, DEEP_BATCH)?;
    let adam = equation(&sgd_config.clone().with_optimizer(adam()), DEEP_BATCH)?;
    let added = adam.optimizer_state - sgd.optimizer_state;
    let copies = added as f64 / adam.parameters as f64;
    // The context says the peak's gradients are the output layer's only.
    let classes = sgd_config.classes;
    let output_grads = gpumem::estimate::block_bytes(4 * sgd_config.hidden * classes)
        + gpumem::estimate::block_bytes(4 * classes);
    if adam.gradients != output_grads {
        return Err(anyhow!(
            "Adam's peak holds {} of gradients, not the output layer's {}",
            bytes(adam.gradients),
            bytes(output_grads)
        ));
    }
    let adam_q = Question {
        prompt: format!(
            "The lesson's network ({} of parameters) trains with plain SGD. Predict: switching \
             to Adam: how much more does the optimizer's state take?",
            bytes(sgd.parameters)
        ),
        answer: bytes(added),
        distractors: distinct(
            &bytes(added),
            vec![bytes(adam.parameters), bytes(0), bytes(adam.persistent())],
        ),
        context: format!(
            "Adam keeps two running averages per parameter (`exp_avg` and `exp_avg_sq`), each \
             as large as the parameters: {} ({copies:.2} × {}). One copy would be momentum \
             SGD; plain SGD keeps {}; {} adds to Adam's state the parameters and the gradients \
             alive at the step's peak ({}: the backward pass has made only the output \
             layer's).",
            bytes(added),
            bytes(adam.parameters),
            bytes(sgd.optimizer_state),
            bytes(adam.persistent()),
            bytes(adam.gradients)
        ),
    };
    Ok(vec![adam_q])
}

/// How many steps an epoch takes. (What the whole set as one batch does is Challenge 1's
/// guess; which tensor fails is asked there, after its demo has named it.)
pub fn mini_batching() -> Result<Vec<Question>> {
    // Numbers written as the pages write them (`1 173 000`).
    let (steps, full) = (grouped(FULL.div_ceil(DEEP_BATCH)), grouped(FULL));
    let steps_q = Question {
        prompt: format!(
            "At a batch of {DEEP_BATCH} rows, how many steps make one epoch of {full} rows?"
        ),
        answer: steps.clone(),
        distractors: distinct(
            &steps,
            vec![
                grouped(FULL / DEEP_BATCH),
                full.clone(),
                grouped(DEEP_BATCH),
            ],
        ),
        context: format!(
            "An epoch sees every row once, {DEEP_BATCH} per step: {full} ÷ {DEEP_BATCH} \
             rounded up is {steps}; the last batch may be shorter. {full} steps would be one \
             row at a time."
        ),
    };
    Ok(vec![steps_q])
}

/// The cost of one more layer at another width (the square law; doubling is in the prose).
pub fn networks() -> Result<Vec<Question>> {
    // The page gives a hidden layer of 5 000's cost; the question asks for a width it does not
    // give, to be predicted from the square law (not read off the paragraph above).
    let layer = |width: u64| -> Result<(u64, u64, u64)> {
        let at = |layers| equation(&network(width, layers, Optimizer::LESSON), DEEP_BATCH);
        let (one, two) = (at(1)?, at(2)?);
        let peak = two.peak_allocated - one.peak_allocated;
        let weights = two.parameters - one.parameters;
        Ok((peak, weights, peak - (two.gradients - one.gradients)))
    };
    let (deep_peak, _, _) = layer(DEEP_WIDTH)?;
    let (peak, weights, no_grads) = layer(LESSON_WIDTH)?;
    // Scaled by the width alone, not its square.
    let linear = deep_peak * LESSON_WIDTH / DEEP_WIDTH;
    let square = (LESSON_WIDTH as f64 / DEEP_WIDTH as f64).powi(2);
    let (lesson_w, deep_w) = (grouped(LESSON_WIDTH), grouped(DEEP_WIDTH));
    let layer_q = Question {
        prompt: format!(
            "Hidden layers of {lesson_w} instead of {deep_w}, batch {DEEP_BATCH}, SGD. One \
             more hidden layer raises the peak by about"
        ),
        answer: bytes(peak),
        distractors: distinct(
            &bytes(peak),
            vec![bytes(linear), bytes(weights), bytes(no_grads)],
        ),
        context: format!(
            "A hidden layer's weights grow with the square of the width: ({lesson_w} / \
             {deep_w})² = {square:.2} of the {} a layer of {deep_w} adds is about {}. \
             The engine's {} (tensors rounded up as the allocator does): {} of weights and as much again of gradients; the activation \
             at batch {DEEP_BATCH} adds little. In proportion to the width alone gives {}; \
             forgetting the gradients, {}.",
            bytes(deep_peak),
            bytes((deep_peak as f64 * square) as u64),
            bytes(peak),
            bytes(weights),
            bytes(linear),
            bytes(no_grads)
        ),
    };
    Ok(vec![layer_q])
}

/// Reading an out-of-memory message: what is held outside PyTorch's allocator.
pub fn monitoring() -> Result<Vec<Question>> {
    let (oom, _) = crate::pages::oom_message::context_run(OomMessage::Lesson)?;
    let (capacity, free) = (
        oom.capacity
            .ok_or_else(|| anyhow!("the message names no capacity"))?,
        oom.free
            .ok_or_else(|| anyhow!("the message names no free memory"))?,
    );
    let outside = capacity
        .checked_sub(free + oom.reserved)
        .ok_or_else(|| anyhow!("free and reserved add up to more than the capacity"))?;
    let answer = bytes(outside);
    let outside_q = Question {
        prompt: format!(
            "An out-of-memory message reads: {} total capacity; {} already allocated; {} free; \
             {} reserved in total. How much of the card is held outside PyTorch's allocator \
             (the CUDA context, other processes)?",
            bytes(capacity),
            bytes(oom.allocated),
            bytes(free),
            bytes(oom.reserved)
        ),
        answer: answer.clone(),
        distractors: distinct(
            &answer,
            vec![
                bytes(capacity - oom.reserved),
                bytes(oom.cached_unused()),
                bytes(capacity - free),
            ],
        ),
        context: format!(
            "Capacity − free − reserved: {} − {} − {} = {}. \"free\" is the driver's figure \
             (`torch.cuda.mem_get_info()`), already net of everything any process holds; \
             reserved − allocated ({}, hidden by the message's two decimals of GiB) is \
             PyTorch's own cache, and capacity − free ({}) counts PyTorch's reserved memory as \
             well.",
            bytes(capacity),
            bytes(free),
            bytes(oom.reserved),
            answer,
            bytes(oom.cached_unused()),
            bytes(capacity - free)
        ),
    };
    Ok(vec![outside_q])
}

/// One SGD step of the quiz's network on a card of the lesson's size, with `cublas`'s
/// workspaces in the allocator (none: the ideal card), then `empty_cache()`: allocated,
/// reserved before, reserved after.
fn empty_cache_run(
    cublas: gpumem::cublas::WorkspaceRules,
    rules: Option<gpumem::versions::Rules>,
) -> Result<(u64, u64, u64)> {
    let mut options = gpumem::lesson::planning_device(CARD_BYTES);
    options.cublas = cublas;
    let device = Device::new(&options)?;
    let mut config = network(DEEP_WIDTH, 1, Optimizer::LESSON);
    if let Some(r) = rules {
        config.strategy.zero_grad = r.release.zero_grad;
        config.strategy.optimizer_impl = r.release.optimizer_impl;
    }
    let mut mlp = Mlp::new(&device, &config, SEED)?;
    mlp.train_step(Batch::Planned(LARGE_ROWS))?;
    let (allocated, before) = (device.memory_allocated(), device.memory_reserved());
    device.empty_cache();
    let after = device.memory_reserved();
    drop(mlp);
    Ok((allocated, before, after))
}

/// `empty_cache()` with a model alive, on the ideal card (tensors only): the small segments of
/// its parameters stay (the allocator's 2 MiB small-segment rule, which this page teaches).
/// The feedback says what a real card keeps besides: the H200 record's PyTorch and card, whose
/// cuBLAS workspaces come from the allocator and stay allocated.
fn empty_cache_question() -> Result<Question> {
    let (allocated, before, after) = empty_cache_run(gpumem::cublas::WorkspaceRules::NONE, None)?;
    if !(0 < after && after < before) {
        bail!("empty_cache() took reserved from {before} B to {after} B: pick another network");
    }
    let (card, rules, cc) = crate::pages::monitoring::memtracker::record_card()?;
    let workspaces = rules.workspaces(cc);
    let (real_allocated, _, real_after) = empty_cache_run(workspaces, Some(rules))?;
    if real_allocated <= allocated || real_after <= after {
        bail!("the {card}'s workspaces change nothing after empty_cache(): the feedback is moot");
    }
    let state = |r: u64, a: u64| format!("reserved {}, allocated {}", bytes(r), bytes(a));
    let answer = state(after, allocated);
    let cache_q = Question {
        prompt: format!(
            "On the ideal card (tensors only): one hidden layer of {DEEP_WIDTH}, one SGD step \
             at batch {LARGE_ROWS}: {}. The model is still alive. Then \
             `torch.cuda.empty_cache()`. Predict the two numbers.",
            state(before, allocated)
        ),
        answer: answer.clone(),
        distractors: distinct(
            &answer,
            vec![state(0, allocated), state(before, allocated), state(0, 0)],
        ),
        context: format!(
            "`empty_cache()` gives back only segments in which no tensor lives; it frees no \
             tensor, so allocated stays {}. The segments holding the model's parameters \
             and gradients (plain SGD keeps no state) stay: reserved falls from {} to {}, not \
             to 0. On a real card, cuBLAS's workspaces stay allocated too: on the {card} with \
             PyTorch {}, the same step leaves {} allocated, and reserved falls only to {}.",
            bytes(allocated),
            bytes(before),
            bytes(after),
            rules.asked,
            bytes(real_allocated),
            bytes(real_after),
        ),
    };
    Ok(cache_q)
}

/// What the allocator hands out: a rounded bias, and the shared segment of a mid-sized tensor.
pub fn allocator() -> Result<Vec<Question>> {
    let requested = LESSON_WIDTH * DType::F32.size();
    let rounded =
        round_size(requested).ok_or_else(|| anyhow!("{requested} B cannot be rounded"))?;
    let round_q = Question {
        prompt: format!(
            "A float32 bias of {} values ({} B) on an empty device. How much does \
             `memory_allocated()` grow?",
            grouped(LESSON_WIDTH),
            grouped(requested)
        ),
        answer: bytes(rounded),
        distractors: distinct(&bytes(rounded), vec![bytes(requested), bytes(SMALL_BUFFER)]),
        context: format!(
            "The caching allocator rounds every request up to a multiple of {MIN_BLOCK} B: \
             allocated grows by {}. Reserved grows by a whole {} segment, which later small \
             tensors share.",
            bytes(rounded),
            bytes(SMALL_BUFFER)
        ),
    };
    let (rows, width) = (1024, 1000);
    let requested = rows * width * DType::F32.size();
    let rounded =
        round_size(requested).ok_or_else(|| anyhow!("{requested} B cannot be rounded"))?;
    let segment = segment_size(rounded).ok_or_else(|| anyhow!("no segment for {rounded} B"))?;
    if !(SMALL_SIZE < rounded && rounded < MIN_LARGE_ALLOC && segment > 2 * rounded) {
        bail!("{requested} B is not a mid-sized request: pick another shape");
    }
    let own = rounded.div_ceil(ROUND_LARGE) * ROUND_LARGE;
    let segment_q = Question {
        prompt: format!(
            "On an empty device, one float32 activation of {} rows × {} ({}). How much does \
             `memory_reserved()` grow?",
            grouped(rows),
            grouped(width),
            bytes(requested)
        ),
        answer: bytes(segment),
        distractors: distinct(
            &bytes(segment),
            vec![bytes(rounded), bytes(own), bytes(SMALL_BUFFER)],
        ),
        context: format!(
            "It is a large request (over {} MiB) but under {}, so the allocator asks the device for a \
             {} segment that later tensors of that pool share; allocated grows by the rounded \
             request only ({}). A segment of its own, rounded to {}, would be {}; {} segments are \
             for small requests.",
            SMALL_SIZE >> 20,
            bytes(MIN_LARGE_ALLOC),
            bytes(segment),
            bytes(rounded),
            bytes(ROUND_LARGE),
            bytes(own),
            bytes(SMALL_BUFFER)
        ),
    };
    Ok(vec![round_q, segment_q, empty_cache_question()?])
}

/// The leaking loop of Challenge 3: when it fails, and what `empty_cache()` would change.
pub fn after_a_few_epochs() -> Result<Vec<Question>> {
    let runs = leak_runs()?;
    let setup = leak_setup()?;
    let epochs = setup.epochs;
    let failure = runs
        .leaky
        .failure
        .as_ref()
        .ok_or_else(|| anyhow!("the leaking loop did not fail"))?;
    let when = |epoch: u64| format!("It runs out of memory in epoch {epoch}");
    let finishes = format!("It finishes all {epochs} epochs");
    let answer = when(failure.epoch);
    let leak_q = Question {
        prompt: format!(
            "A loop appends each step's outputs to a list, {epochs} epochs on a {} card. \
             The same loop without the list finishes. Predict the leaking one.",
            bytes(card(&setup)?)
        ),
        answer: answer.clone(),
        distractors: distinct(&answer, vec![when(1), finishes]),
        context: format!(
            "Every kept output holds its GPU memory, so allocated climbs step after step \
             until a request does not fit: epoch {}, step {}. The first epoch still fits, \
             which is why such a loop runs for a while before it dies.",
            failure.epoch, failure.step
        ),
    };
    let (grew, steps) = demos::challenge3::leak::growth(&runs.leaky);
    let per_step = bytes(grew / steps);
    let (fixed_grew, _) = demos::challenge3::leak::growth(&runs.fixed);
    let growth_q = Question {
        prompt: "Which number climbs epoch after epoch in the leaking loop?".to_string(),
        answer: format!("`memory_allocated()`, about {per_step} a step"),
        distractors: vec![
            format!(
                "Only `memory_reserved()`; allocated grows by {}",
                bytes(fixed_grew)
            ),
            "Neither: the list holds Python objects, not GPU memory".to_string(),
        ],
        context: format!(
            "Allocated counts live tensors, and the list keeps them alive: about {per_step} \
             more each step. Without the list allocated grows by {}. `empty_cache()` \
             cannot help: it never frees a live tensor.",
            bytes(fixed_grew)
        ),
    };
    Ok(vec![leak_q, growth_q])
}

/// Mixed precision and gradient accumulation, predicted with the equation.
pub fn fitting_more() -> Result<Vec<Question>> {
    let base = MlpConfig::lesson(LESSON_WIDTH);
    let plain = equation(&base, DEEP_BATCH)?;
    let mixed_config = base.clone().with_strategy(Strategy {
        precision: Precision::Mixed,
        ..Strategy::default()
    });
    let mixed = equation(&mixed_config, DEEP_BATCH)?;
    let mixed_q = Question {
        prompt: format!(
            "The lesson's network at batch {DEEP_BATCH} peaks at {} in float32. With mixed \
             precision (autocast to float16, a GradScaler), the peak is",
            bytes(plain.peak_allocated)
        ),
        answer: bytes(mixed.peak_allocated),
        distractors: distinct(
            &bytes(mixed.peak_allocated),
            vec![bytes(plain.peak_allocated / 2), bytes(plain.peak_allocated)],
        ),
        context: format!(
            "Only the activations and their gradients shrink to float16: {} → {}. The \
             float32 weights, their gradients and the optimizer's state stay as they are \
             ({}), and autocast adds float16 copies, so the peak does not halve.",
            bytes(plain.activations),
            bytes(mixed.activations),
            bytes(mixed.persistent())
        ),
    };
    let accumulate = 4;
    let whole = equation(&base, FULL)?;
    let split = equation(
        &base.with_strategy(Strategy {
            accumulation: accumulate,
            ..Strategy::default()
        }),
        FULL,
    )?;
    let accum_q = Question {
        prompt: format!(
            "All {} rows as one batch need {}. Split into {accumulate} micro-batches \
             with gradient accumulation (one optimizer step for all of them), the peak is",
            grouped(FULL),
            bytes(whole.peak_allocated)
        ),
        answer: bytes(split.peak_allocated),
        distractors: distinct(
            &bytes(split.peak_allocated),
            vec![
                bytes(whole.peak_allocated),
                bytes(whole.peak_allocated * accumulate),
            ],
        ),
        context: format!(
            "The activations and temporaries are held for one micro-batch at a time (`x` and \
             `y` stay whole, each micro-batch a slice of them), so the peak falls to \
             about a quarter: {}. The whole batch's activations are never on the card at \
             once, so not {}; the micro-batches run one after another, not side by side, so \
             not {}. The model's own memory does not shrink, and from the second \
             micro-batch on its gradients are alive through every backward pass ({} with \
             the parameters: little, for this small model).",
            bytes(split.peak_allocated),
            bytes(whole.peak_allocated),
            bytes(whole.peak_allocated * accumulate),
            bytes(split.persistent())
        ),
    };
    Ok(vec![mixed_q, accum_q])
}
