//! One calculation: the equation's terms, the step measured on the plan backing (the
//! allocator PyTorch's rules run, no storage), and the searches for what would fit.

use crate::js::{MAX_SAFE_INTEGER, past_exact};
use crate::request::Request;
use crate::timeline::Timeline;
use gpumem::device::Device;
use gpumem::estimate::{band_margin, deepest_that_fits, estimate_on, is_exact};
use gpumem::lesson::Card;
use gpumem::lesson::planning_device;
use gpumem::measure::{largest_where, measure_step_on, measure_step_traced};
use gpumem::mlp::MlpConfig;
use gpumem::search::largest_near;
use gpumem::size::format_bytes;
use gpumem::{DeviceOptions, Error};
use serde::Serialize;

/// The deepest network the page searches for: a choice of ours, so that an answer takes well
/// under a second in the page (planning a step of 100 000 layers, the engine's limit, takes about a
/// second to plan). At this depth the page says "this many or more".
pub const DEPTH_SEARCH_LIMIT: u64 = 1_000;

/// A number of bytes, and how PyTorch would print it.
#[derive(Debug, Clone, Serialize)]
pub struct Amount {
    pub bytes: u64,
    pub text: String,
}

impl From<u64> for Amount {
    fn from(bytes: u64) -> Amount {
        Amount {
            bytes,
            text: format_bytes(bytes),
        }
    }
}

/// One term of the memory equation at the step's busiest moment.
#[derive(Debug, Clone, Serialize)]
pub struct Category {
    pub name: &'static str,
    #[serde(flatten)]
    pub amount: Amount,
}

/// What the page shows for one request.
#[derive(Debug, Clone, Serialize)]
pub struct Response {
    pub rows: u64,
    pub parameters: u64,
    pub card: Amount,
    /// The equation's terms (blocks as allocated) at the busiest moment.
    pub categories: Vec<Category>,
    pub equation_peak: Amount,
    /// Whether the equation is exact for this setup; when not, how far it may be off.
    pub equation_exact: bool,
    pub equation_margin: Option<Amount>,
    /// Measured: `memory_allocated()` once the model exists.
    pub model_allocated: Amount,
    /// Measured: `max_memory_allocated()` / `max_memory_reserved()` over two steps (up to the
    /// failure when it did not fit).
    pub peak_allocated: Amount,
    pub peak_reserved: Amount,
    pub fits: bool,
    /// Where it ran out: building the model or a pass of the step.
    pub failed_in: Option<String>,
    /// The out-of-memory message exactly as the demos print it.
    pub oom_message: Option<String>,
    /// The most rows per step, and the most hidden layers at this batch, that fit this card.
    pub largest_batch: Option<u64>,
    pub deepest_network: Option<u64>,
    /// The depth the search stops at ([`DEPTH_SEARCH_LIMIT`]).
    pub depth_search_limit: u64,
    pub timeline: Timeline,
    /// What the numbers depend on that the planner does not model.
    pub notes: Vec<String>,
}

/// Calculates `request`, or says why it cannot.
pub fn plan(request: &Request) -> Result<Response, String> {
    refuse_inexact(request)?;
    request.check()?;
    let capacity = request.capacity()?;
    if capacity > MAX_SAFE_INTEGER {
        return Err(past_exact(capacity));
    }
    let config = request.config();
    let rows = request.rows();
    let mut options = planning_device(capacity);
    options.oom_message = request.oom_message;
    options.allocator.context_memory = request.preset.outside().min(capacity);
    options.cublas = request.preset.workspaces();
    let equation = estimate_on(&config, rows, options.cublas).map_err(|e| e.to_string())?;
    // What the allocator may have: the card less what it holds outside.
    let room = capacity - options.allocator.context_memory;
    let device = Device::new(&options).map_err(|e| e.to_string())?;
    let (step, trace) =
        measure_step_traced(&device, &config, rows, 0).map_err(|e| e.to_string())?;
    let timeline = Timeline::of(&trace);
    let exact = is_exact(&config, rows);
    let response = Response {
        rows,
        parameters: equation.parameter_count,
        card: capacity.into(),
        categories: equation
            .categories()
            .into_iter()
            .map(|(name, bytes)| Category {
                name,
                amount: bytes.into(),
            })
            .collect(),
        equation_peak: equation.peak_allocated.into(),
        equation_exact: exact,
        equation_margin: (!exact).then(|| band_margin(&config).into()),
        model_allocated: step.model_allocated.into(),
        peak_allocated: step.peak_allocated.into(),
        peak_reserved: step.peak_reserved.into(),
        fits: step.fits(),
        failed_in: step.failed_in.map(|p| p.to_string()),
        oom_message: step.oom.as_ref().map(ToString::to_string),
        largest_batch: largest_batch(&options, &config, room)?,
        deepest_network: deepest_network(&options, &config, rows, room)?,
        depth_search_limit: DEPTH_SEARCH_LIMIT,
        timeline,
        notes: Vec::new(),
    };
    Ok(with_notes(response, request))
}

/// Numbers past JavaScript's exact integers are refused on the way in as on the way out.
fn refuse_inexact(request: &Request) -> Result<(), String> {
    let numbers = [
        request.inputs,
        request.width,
        request.layers,
        request.rows(),
        request.accumulation,
    ];
    match numbers.into_iter().find(|&n| n > MAX_SAFE_INTEGER) {
        Some(n) => Err(past_exact(n)),
        None => Ok(()),
    }
}

/// Whether `config` at `rows` fits, measured on a fresh planning device. A setup whose sizes
/// overflow 64 bits fits no card.
fn fits(options: &DeviceOptions, config: &MlpConfig, rows: u64) -> Result<bool, String> {
    let device = Device::new(options).map_err(|e| e.to_string())?;
    match measure_step_on(&device, config, rows, 0) {
        Ok(step) => Ok(step.fits()),
        Err(Error::Setup(_)) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

fn largest_batch(
    options: &DeviceOptions,
    config: &MlpConfig,
    capacity: u64,
) -> Result<Option<u64>, String> {
    // Each row holds at least its features in float32: more rows than this cannot fit.
    let max = capacity / (config.inputs.max(1) * 4);
    let by_equation = largest_where(max, |rows| {
        Ok::<_, String>(
            estimate_on(config, rows, options.cublas).is_ok_and(|e| e.peak_allocated <= capacity),
        )
    })?;
    largest_near(max, by_equation, |rows| fits(options, config, rows))
}

fn deepest_network(
    options: &DeviceOptions,
    config: &MlpConfig,
    rows: u64,
    capacity: u64,
) -> Result<Option<u64>, String> {
    let by_equation = deepest_that_fits(config, rows, capacity, DEPTH_SEARCH_LIMIT, options.cublas);
    largest_near(DEPTH_SEARCH_LIMIT, by_equation, |layers| {
        fits(options, &config.clone().with_layers(layers), rows)
    })
}

/// Says what the numbers leave out, and what the setup's own numbers mean.
fn with_notes(mut r: Response, request: &Request) -> Response {
    let outside = match request.preset {
        Card::Ideal => "Memory outside the allocator is not counted: on a real card the CUDA \
                        context (and any other process) holds some before the first tensor, so \
                        less is free than the card's size. Choose the lesson's card to see it."
            .to_string(),
        Card::Lesson => format!(
            "As the lesson's card: {} of the card is held outside the allocator (what the \
             lesson's message leaves unexplained, cuBLAS's own workspaces among it), and the \
             step runs as the lesson's PyTorch would: {}.",
            format_bytes(request.preset.outside()),
            request
                .preset
                .torch()
                .map_or(String::new(), |r| r.describe())
        ),
    };
    let mut notes = vec![
        outside,
        "Time is not modelled: checkpointing and gradient accumulation save memory by doing more \
         work (Challenge 4 measures how much)."
            .to_string(),
    ];
    if let Some(margin) = &r.equation_margin {
        notes.push(format!(
            "This setup has tensors of 1–10 MiB, which share 20 MiB segments: the equation's \
             peak may differ from the measured one by up to {}.",
            margin.text
        ));
    }
    if request.accumulation > 1 {
        notes.push(format!(
            "Each optimizer step's {} rows are split into {} micro-batches; the activations are \
             those of one micro-batch.",
            r.rows, request.accumulation
        ));
    }
    if r.deepest_network == Some(r.depth_search_limit) {
        notes.push(format!(
            "{} hidden layers or more fit at this batch: the calculator searches no deeper (the \
             engine itself goes to {}).",
            r.depth_search_limit,
            gpumem::mlp::MAX_LAYERS
        ));
    }
    if r.largest_batch
        .is_some_and(|b| b >= gpumem::data::LESSON_TRAINING_EVENTS)
    {
        notes.push("The lesson's whole training set fits in one batch on this card.".into());
    }
    r.notes.append(&mut notes);
    r
}
