//! The step's allocator history, thinned to a size a small chart can draw without losing the
//! peaks.

use gpumem::alloc::{EventKind, Trace};
use serde::Serialize;

/// Points the widget draws at most: one per few pixels of a narrow page.
pub const MAX_POINTS: usize = 240;

/// `memory_allocated()` and `memory_reserved()` through the measured steps.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    /// Allocator events recorded (before thinning).
    pub events: u64,
    /// Each point covers a run of consecutive events and keeps their highest values.
    pub points: Vec<Point>,
    /// Where the highest allocation happened: the event's label (`z1`, `layer2.weight`).
    pub peak_label: Option<String>,
    /// The request that failed, if one did.
    pub failed_label: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Point {
    /// Index of the first event the point covers.
    pub event: u64,
    pub allocated: u64,
    pub reserved: u64,
}

impl Timeline {
    /// The step's timeline; when a request failed, it stops at the failure (what the step's
    /// frames free as the error propagates is not part of the step).
    pub fn of(trace: &Trace) -> Timeline {
        let end = trace
            .events
            .iter()
            .position(|e| e.kind == EventKind::Oom)
            .map_or(trace.events.len(), |i| i + 1);
        let events = &trace.events[..end];
        let per_point = events.len().div_ceil(MAX_POINTS).max(1);
        let points = events
            .chunks(per_point)
            .enumerate()
            .map(|(i, run)| Point {
                event: (i * per_point) as u64,
                allocated: run.iter().map(|e| e.allocated).max().unwrap_or(0),
                reserved: run.iter().map(|e| e.reserved).max().unwrap_or(0),
            })
            .collect();
        let peak_label = events
            .iter()
            .filter(|e| e.kind == EventKind::Alloc)
            .max_by_key(|e| e.allocated)
            .map(|e| e.label.clone());
        let failed_label = events
            .iter()
            .find(|e| e.kind == EventKind::Oom)
            .map(|e| e.label.clone());
        Timeline {
            events: events.len() as u64,
            points,
            peak_label,
            failed_label,
        }
    }
}
