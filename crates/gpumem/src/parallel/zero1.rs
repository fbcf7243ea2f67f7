//! `ZeroRedundancyOptimizer`'s partition: which card updates (and keeps the optimizer state
//! of) each parameter — PyTorch's greedy rule in
//! `torch/distributed/optim/zero_redundancy_optimizer.py`.

/// The card of each parameter (sizes in values, `model.parameters()` order): largest first
/// (a stable sort), each to the card holding the fewest values so far (the first such card).
pub(crate) fn partition(sizes: &[u64], cards: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]));
    let mut held = vec![0u64; cards];
    let mut owner = vec![0; sizes.len()];
    for i in order {
        let card = (0..cards).min_by_key(|&c| (held[c], c)).unwrap_or(0);
        owner[i] = card;
        held[card] += sizes[i];
    }
    owner
}

/// How many of `config`'s parameters card `card` of `cards` updates under ZeRO-1.
pub fn owned_count(config: &crate::mlp::MlpConfig, cards: usize, card: usize) -> usize {
    let sizes: Vec<u64> = config
        .layer_shapes()
        .iter()
        .flat_map(|&(i, o)| [i * o, o])
        .collect();
    partition(&sizes, cards)
        .iter()
        .filter(|&&c| c == card)
        .count()
}

#[cfg(test)]
mod tests {
    use super::partition;

    /// The lesson's 2 → 64 × 2 → 2 network on two cards: card 0 takes the 64 × 64 weight
    /// alone, as PyTorch's trace shows (`reference/pytorch/trace_parallel.txt`).
    #[test]
    fn the_largest_parameter_goes_first_to_the_emptiest_card() {
        let sizes = [128, 64, 4096, 64, 128, 2];
        assert_eq!(partition(&sizes, 2), [1, 1, 0, 1, 1, 1]);
        assert_eq!(partition(&sizes, 1), [0; 6]);
        // Ties keep the parameters' order: the first 128 goes to the emptier card 1.
        assert_eq!(partition(&[128, 128], 2), [0, 1]);
    }
}
