//! A rate limit's verdict on a call, the one type the local limiter (`limits`) and the limits in
//! Redis (`shared_limits`) both give.

use std::time::Duration;

/// Why a call was refused, and when to try again. Amounts are weight units.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    Rate {
        allowed_per_second: u32,
        retry_after: Duration,
    },
    Daily {
        allowed_per_day: u64,
        /// Units used today before the refused call.
        used: u64,
        retry_after: Duration,
    },
    /// The shared limits store cannot be reached and `limits_fallback` is `refuse`.
    Unavailable,
}

impl Refusal {
    pub fn retry_after(&self) -> Duration {
        match self {
            Self::Rate { retry_after, .. } | Self::Daily { retry_after, .. } => *retry_after,
            Self::Unavailable => Duration::from_secs(1),
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            Self::Rate { .. } => "rate",
            Self::Daily { .. } => "daily",
            Self::Unavailable => "unavailable",
        }
    }
}

/// What a limiter says of one call (Redis may also be unavailable).
#[derive(Debug, Clone)]
pub enum Verdict {
    Admitted,
    Refused(Refusal),
    /// Redis did not answer in time or failed, or was not asked because it failed a moment
    /// ago: why.
    Unavailable(String),
}
