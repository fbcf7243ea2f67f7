//! The equation's bookkeeping: which tensors are alive, in which term, and the largest total
//! seen — arithmetic over block sizes, with PyTorch's reference counting (a tensor is freed
//! when its last holder lets go).

use super::Term;
use crate::role::Role;

/// A tensor in the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Id(usize);

#[derive(Debug)]
struct Entry {
    bytes: u64,
    term: Term,
    holders: u32,
}

/// Live tensors by term, and the moment with the most bytes.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    entries: Vec<Entry>,
    live: [u64; 7],
    /// Each term at the busiest moment so far (the first moment with the highest total).
    pub(super) peak: [u64; 7],
}

impl Ledger {
    /// A new tensor of `role` and `bytes` (a block size), held once, in its role's term.
    pub(super) fn alloc(&mut self, role: Role, bytes: u64) -> Id {
        let term = Term::from(role);
        self.entries.push(Entry {
            bytes,
            term,
            holders: 1,
        });
        self.live[term as usize] += bytes;
        if self.live.iter().sum::<u64>() > self.peak.iter().sum::<u64>() {
            self.peak = self.live;
        }
        Id(self.entries.len() - 1)
    }

    /// One more holder of `id` (a tensor saved for backward, or a second name for it).
    pub(super) fn hold(&mut self, id: Id) -> Id {
        self.entries[id.0].holders += 1;
        id
    }

    /// One holder lets go; the last frees the block.
    pub(super) fn drop(&mut self, id: Id) {
        let e = &mut self.entries[id.0];
        e.holders -= 1;
        if e.holders == 0 {
            self.live[e.term as usize] -= e.bytes;
        }
    }

    /// Every holder of each id lets go of it once.
    pub(super) fn drop_all(&mut self, ids: impl IntoIterator<Item = Id>) {
        ids.into_iter().for_each(|id| self.drop(id));
    }
}
