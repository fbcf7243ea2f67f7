//! The collectives, simulated in one process: the group moves the values between cards
//! itself; this module counts the bytes each card would send and receive with NCCL's ring
//! algorithms, where every card of `n` sends and receives `(n − 1)/n` of an all-gather's
//! output or a reduce-scatter's input, and twice that for an all-reduce.

/// Bytes one card sent and received over the step(s) measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CommBytes {
    pub sent: u64,
    pub received: u64,
    /// Collective calls this card took part in.
    pub collectives: u64,
}

/// The collectives' ledger for a group of `cards`.
#[derive(Debug)]
pub(crate) struct Comm {
    cards: u64,
    bytes: Vec<CommBytes>,
}

impl Comm {
    pub(crate) fn new(cards: usize) -> Comm {
        Comm {
            cards: cards as u64,
            bytes: vec![CommBytes::default(); cards],
        }
    }

    pub(crate) fn bytes(&self) -> &[CommBytes] {
        &self.bytes
    }

    fn ring(&mut self, card: usize, bytes: u64, rounds: u64) {
        let share = bytes / self.cards * (self.cards - 1) * rounds;
        let b = &mut self.bytes[card];
        b.sent += share;
        b.received += share;
        b.collectives += 1;
    }

    /// `all_reduce` of `bytes` (reduce-scatter then all-gather: two rounds).
    pub(crate) fn all_reduce(&mut self, card: usize, bytes: u64) {
        self.ring(card, bytes, 2);
    }

    /// `all_gather_into_tensor` into an output of `bytes`.
    pub(crate) fn all_gather(&mut self, card: usize, bytes: u64) {
        self.ring(card, bytes, 1);
    }

    /// `reduce_scatter_tensor` from an input of `bytes`.
    pub(crate) fn reduce_scatter(&mut self, card: usize, bytes: u64) {
        self.ring(card, bytes, 1);
    }

    /// A `send` of `bytes` from card `from` to card `to` (a pipeline's activations and
    /// gradients).
    pub(crate) fn point_to_point(&mut self, from: usize, to: usize, bytes: u64) {
        self.bytes[from].sent += bytes;
        self.bytes[to].received += bytes;
        self.bytes[from].collectives += 1;
        self.bytes[to].collectives += 1;
    }

    /// `broadcast` of `bytes` from card `root` to every other card.
    pub(crate) fn broadcast(&mut self, root: usize, bytes: u64) {
        for (card, b) in self.bytes.iter_mut().enumerate() {
            if card == root {
                b.sent += bytes * (self.cards - 1).min(1);
            } else {
                b.received += bytes;
            }
            b.collectives += 1;
        }
    }
}
