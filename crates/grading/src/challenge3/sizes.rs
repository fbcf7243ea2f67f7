//! Step 1: one request on an empty cache — its rounded size, its pool and the segment it
//! makes the allocator reserve, each read off the engine's allocator serving it.

use super::engine::{MIB, Replay, exact};
use super::{Answers, Step, steps};
use crate::{Report, attempt_timed};
use gpumem::alloc::{MIN_LARGE_ALLOC, SMALL_SIZE, round_size};
use rand::RngExt;

/// Requests at every boundary the rules have, then seeded random ones.
fn requests(rng: &mut impl rand::Rng) -> Vec<u64> {
    let mut r = vec![
        0,
        1,
        512,
        513,
        1000,
        4096,
        SMALL_SIZE - 1,
        SMALL_SIZE,
        SMALL_SIZE + 1,
        3 * MIB,
        MIN_LARGE_ALLOC - 512,
        MIN_LARGE_ALLOC - 1,
        MIN_LARGE_ALLOC,
        12 * MIB + 1,
        19 * MIB + MIB / 2,
        100 * MIB + 3,
    ];
    r.extend((0..8).map(|_| match rng.random_range(0..3) {
        0 => rng.random_range(1..=SMALL_SIZE),
        1 => rng.random_range(SMALL_SIZE + 1..MIN_LARGE_ALLOC),
        _ => rng.random_range(MIN_LARGE_ALLOC..=200 * MIB),
    }));
    r
}

/// What the engine's allocator does with one request on an empty cache: the block it hands
/// out, the segment's pool and the bytes it reserves.
struct Served {
    block: u64,
    pool: super::Pool,
    reserved: u64,
}

fn serve(requested: u64) -> Served {
    let mut r = Replay::new();
    let (block, reserved) = r.step(Step::Alloc(requested));
    let pool = r.alloc.segments()[0].pool.expect("caching is on");
    Served {
        block,
        pool,
        reserved,
    }
}

/// Grades step 1.
pub(super) fn grade_sizes(answers: &Answers, report: &mut Report, rng: &mut impl rand::Rng) {
    let requests = requests(rng);
    for &r in &requests {
        let rounded = round_size(r).expect("small requests round");
        let Served {
            block, reserved, ..
        } = serve(r);
        let note = if block == rounded {
            "the request rounded up to a multiple of 512 B: here also the block handed out"
                .to_string()
        } else {
            format!(
                "the request rounded up to a multiple of 512 B, the size the allocator looks \
                 for; the block it hands out is {}: cutting its {} segment would leave 1 MiB or \
                 less (step 3)",
                exact(block),
                exact(reserved)
            )
        };
        report.compare(
            steps::ROUNDED_SIZE,
            format!("rounded_size({r} = {})", exact(r)),
            &rounded,
            note,
            {
                let f = answers.rounded_size;
                attempt_timed(f as usize, move || f(r))
            },
            "round the request up to a multiple of 512 bytes (512 B at least, even for 0 or 1 \
             byte) — only 512 B, not 1 KiB or 1 MiB; what is handed out in the end is step 3's \
             business",
        );
    }
    for &r in &requests {
        let pool = serve(r).pool;
        report.compare(
            steps::POOL_FOR,
            format!("pool_for({r} = {})", exact(r)),
            &pool,
            "the pool of the segment the engine's allocator reserved",
            {
                let f = answers.pool_for;
                attempt_timed(f as usize, move || f(r))
            },
            "the small pool serves rounded sizes up to 1 MiB, 1 MiB included; the large pool \
             everything above",
        );
    }
    for &r in &requests {
        let reserved = serve(r).reserved;
        report.compare(
            steps::SEGMENT_FOR,
            format!("segment_for({r} = {})", exact(r)),
            &reserved,
            format!(
                "{}: reserved by the engine's allocator on an empty cache",
                exact(reserved)
            ),
            {
                let f = answers.segment_for;
                attempt_timed(f as usize, move || f(r))
            },
            "the allocator never asks the device for just the request: up to 1 MiB it takes a \
             2 MiB segment (the small pool), below 10 MiB a 20 MiB segment, and from 10 MiB on \
             the size rounded up to a multiple of 2 MiB — round to 512 bytes first",
        );
    }
}
