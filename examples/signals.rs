//! Placeholder: replaced by the signals routing example.
fn main() {}
