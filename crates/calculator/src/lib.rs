//! The book's memory calculator: the engine's own planner (the allocator, the plan backing,
//! the training step, the equation, the searches) behind two JSON functions, so the page runs
//! exactly the code the demos run — compiled to WebAssembly — and not a JavaScript copy of a
//! formula.
//!
//! [`calculate`] takes a [`Request`] as JSON and answers a [`Response`] as JSON, or
//! `{"error": "…"}`; [`presets`] lists the choices the widget offers. The `extern "C"`
//! functions in [`ffi`] carry the strings across the WebAssembly boundary.

pub mod ffi;
mod js;
mod plan;
mod request;
mod setups;
mod timeline;

pub use plan::{Response, plan};
pub use request::{BatchRows, OptimizerChoice, Request};
pub use setups::{AT_LEAST, check_setups};

use serde::Serialize;

/// Answers a JSON [`Request`] with a JSON [`Response`], or with `{"error": "…"}` when the
/// request is malformed, refused, or beyond what JavaScript's numbers hold exactly.
pub fn calculate(request: &str) -> String {
    let answer = request::parse(request).and_then(|r| plan(&r));
    let value = answer.and_then(|response| js::exact_json(&response));
    match value {
        Ok(v) => v.to_string(),
        Err(message) => error_json(&message),
    }
}

/// The widget's choices as JSON: the lesson's card, the cards by nominal size, the whole
/// training set, the depth limit, the optimizers, precisions and message forms.
pub fn presets() -> String {
    match js::exact_json(&request::Presets::new()) {
        Ok(v) => v.to_string(),
        Err(message) => error_json(&message),
    }
}

pub(crate) fn error_json(message: &str) -> String {
    #[derive(Serialize)]
    struct Refused<'a> {
        error: &'a str,
    }
    serde_json::to_string(&Refused { error: message })
        .unwrap_or_else(|_| String::from("{\"error\":\"unprintable error\"}"))
}

#[cfg(test)]
mod tests;
