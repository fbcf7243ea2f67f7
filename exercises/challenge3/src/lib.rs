pub mod answer {}
