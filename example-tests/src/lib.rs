//! Nothing but a home for tests: `tests/strategy.rs` drives `examples/strategy.rs` with a
//! scripted model. It lives in a package of its own so that the scripted model's feature
//! (`motet-runtime/test-utils`) does not change the features the examples compile with.
