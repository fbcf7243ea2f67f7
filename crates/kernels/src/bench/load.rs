//! How busy the machine was while something was measured (Linux `/proc`).

use std::time::Instant;

/// `/proc/loadavg`'s three figures (Linux), or `None`.
pub fn loadavg() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// Busy time of the whole machine minus this process's, over an interval (Linux only):
/// how many cores other processes kept busy while something was measured.
#[derive(Debug)]
pub struct Load {
    t: Instant,
    busy: Option<f64>,
    own: Option<f64>,
}

impl Load {
    pub fn start() -> Load {
        Load {
            t: Instant::now(),
            busy: machine_busy_s(),
            own: own_cpu_s(),
        }
    }

    /// Average number of cores other processes kept busy since `start` (NaN where
    /// `/proc` cannot be read).
    pub fn other_cores(&self) -> f64 {
        let dt = self.t.elapsed().as_secs_f64();
        match (self.busy, machine_busy_s(), self.own, own_cpu_s()) {
            (Some(b0), Some(b1), Some(o0), Some(o1)) if dt > 0.0 => {
                ((b1 - b0) - (o1 - o0)).max(0.0) / dt
            }
            _ => f64::NAN,
        }
    }
}

const TICKS: f64 = 100.0;

fn machine_busy_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<f64> = s
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: f64 = f.iter().take(8).sum();
    let idle = f.get(3)? + f.get(4)?;
    Some((total - idle) / TICKS)
}

fn own_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / TICKS)
}
