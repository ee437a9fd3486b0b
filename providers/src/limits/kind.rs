//! What a bucket counts: the vocabulary both the governor's plan and the headers it learns
//! from speak, kept apart from both.

/// What a bucket counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Requests.
    Requests,
    /// Input tokens.
    InputTokens,
    /// Output tokens.
    OutputTokens,
    /// Input and output tokens together.
    Tokens,
}

impl Kind {
    /// Every kind, in bucket order.
    pub const ALL: [Kind; 4] = [
        Kind::Requests,
        Kind::InputTokens,
        Kind::OutputTokens,
        Kind::Tokens,
    ];

    /// Its bucket's place in [`Kind::ALL`].
    pub(super) fn index(self) -> usize {
        match self {
            Kind::Requests => 0,
            Kind::InputTokens => 1,
            Kind::OutputTokens => 2,
            Kind::Tokens => 3,
        }
    }
}
