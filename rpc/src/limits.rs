//! Per-key rate limits and daily quotas, shared by HTTP and WebSocket: every call counts, each
//! call of a batch included.

use crate::config::PlanLimits;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

const DAY: u64 = 86_400;

/// Why a call was refused, and when to try again.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    Rate {
        allowed_per_second: u32,
        retry_after: Duration,
    },
    Daily {
        allowed_per_day: u64,
        retry_after: Duration,
    },
}

impl Refusal {
    pub fn retry_after(&self) -> Duration {
        match self {
            Self::Rate { retry_after, .. } | Self::Daily { retry_after, .. } => *retry_after,
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            Self::Rate { .. } => "rate",
            Self::Daily { .. } => "daily",
        }
    }
}

#[derive(Debug)]
struct Usage {
    /// The generic cell rate algorithm's theoretical arrival time of the next call.
    next_at: Instant,
    day: u64,
    today: u64,
}

/// The usage of every key seen since the server started.
#[derive(Debug, Default)]
pub struct RateLimiter {
    keys: Mutex<HashMap<Arc<str>, Usage>>,
}

impl RateLimiter {
    /// Admits one call of key `id` under `limits`, or says why not. A refused call does not
    /// count against the daily quota.
    pub fn admit(&self, id: &Arc<str>, limits: &PlanLimits) -> Result<(), Refusal> {
        if limits.requests_per_second.is_none() && limits.requests_per_day.is_none() {
            return Ok(());
        }
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.admit_at(id, limits, Instant::now(), unix)
    }

    /// Counts `count` notifications sent to key `id` as calls: they use up its daily quota and
    /// its rate (so its own calls wait their turn), but a burst of notifications is never
    /// refused for its rate, which one block can exceed; only an exhausted daily quota refuses,
    /// and then the key's subscriptions end.
    pub fn charge(&self, id: &Arc<str>, limits: &PlanLimits, count: u64) -> Result<(), Refusal> {
        if limits.requests_per_second.is_none() && limits.requests_per_day.is_none() {
            return Ok(());
        }
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.charge_at(id, limits, count, Instant::now(), unix)
    }

    fn charge_at(
        &self,
        id: &Arc<str>,
        limits: &PlanLimits,
        count: u64,
        now: Instant,
        unix: u64,
    ) -> Result<(), Refusal> {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let usage = keys.entry(id.clone()).or_insert(Usage {
            next_at: now,
            day: unix / DAY,
            today: 0,
        });
        if usage.day != unix / DAY {
            usage.day = unix / DAY;
            usage.today = 0;
        }
        usage.today = usage.today.saturating_add(count);
        if let Some(rate) = limits.requests_per_second.filter(|&r| r > 0) {
            // The debt is capped at a second: calls resume at most a second after a flood.
            let interval = Duration::from_secs(1) / rate;
            let owed = interval.saturating_mul(u32::try_from(count).unwrap_or(u32::MAX));
            usage.next_at = (usage.next_at.max(now) + owed).min(now + Duration::from_secs(1));
        }
        match limits.requests_per_day {
            Some(allowed) if usage.today > allowed => Err(Refusal::Daily {
                allowed_per_day: allowed,
                retry_after: Duration::from_secs(DAY - unix % DAY),
            }),
            _ => Ok(()),
        }
    }

    fn admit_at(
        &self,
        id: &Arc<str>,
        limits: &PlanLimits,
        now: Instant,
        unix: u64,
    ) -> Result<(), Refusal> {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let usage = keys.entry(id.clone()).or_insert(Usage {
            next_at: now,
            day: unix / DAY,
            today: 0,
        });
        if usage.day != unix / DAY {
            usage.day = unix / DAY;
            usage.today = 0;
        }
        if let Some(allowed) = limits.requests_per_day
            && usage.today >= allowed
        {
            return Err(Refusal::Daily {
                allowed_per_day: allowed,
                retry_after: Duration::from_secs(DAY - unix % DAY),
            });
        }
        if let Some(rate) = limits.requests_per_second.filter(|&r| r > 0) {
            let interval = Duration::from_secs(1) / rate;
            // Bursts of a tenth of a second's calls pass, so a client at the allowed rate
            // is not refused for jitter; over any longer time the rate holds.
            let tolerance = interval * (rate / 10).saturating_sub(1);
            let next_at = usage.next_at.max(now);
            if next_at > now + tolerance {
                return Err(Refusal::Rate {
                    allowed_per_second: rate,
                    retry_after: next_at - tolerance - now,
                });
            }
            usage.next_at = next_at + interval;
        }
        usage.today += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(rate: Option<u32>, daily: Option<u64>) -> PlanLimits {
        PlanLimits {
            requests_per_second: rate,
            requests_per_day: daily,
        }
    }

    #[test]
    fn the_rate_holds_over_time_with_small_bursts() {
        let limiter = RateLimiter::default();
        let key: Arc<str> = "k".into();
        let start = Instant::now();
        let plan = limits(Some(100), None);
        // Ten times the rate for ten seconds: one call every millisecond.
        let admitted = (0..10_000)
            .filter(|i| {
                let now = start + Duration::from_millis(*i);
                limiter.admit_at(&key, &plan, now, 0).is_ok()
            })
            .count();
        // 100 per second for 10 s, plus at most a burst of 10.
        assert!((1_000..=1_010).contains(&admitted), "{admitted}");
        let at = start + Duration::from_secs(10);
        let _ = limiter.admit_at(&key, &plan, at, 0);
        let refusal = limiter.admit_at(&key, &plan, at, 0).unwrap_err();
        assert!(matches!(
            refusal,
            Refusal::Rate {
                allowed_per_second: 100,
                ..
            }
        ));
        assert!(refusal.retry_after() <= Duration::from_millis(10));
        // Other keys are not affected.
        assert!(limiter.admit_at(&"other".into(), &plan, start, 0).is_ok());
    }

    #[test]
    fn notifications_use_up_the_quota_and_the_rate() {
        let limiter = RateLimiter::default();
        let key: Arc<str> = "k".into();
        let plan = limits(Some(10), Some(100));
        let now = Instant::now();
        limiter.charge_at(&key, &plan, 60, now, 0).unwrap();
        // The rate is spent for the next second: a call waits.
        assert!(matches!(
            limiter.admit_at(&key, &plan, now, 0),
            Err(Refusal::Rate { .. })
        ));
        let later = now + Duration::from_secs(2);
        limiter.admit_at(&key, &plan, later, 0).unwrap();
        // 61 used; 40 more passes the quota of 100.
        assert!(matches!(
            limiter.charge_at(&key, &plan, 40, later, 0),
            Err(Refusal::Daily {
                allowed_per_day: 100,
                ..
            })
        ));
    }

    #[test]
    fn the_daily_quota_resets_at_midnight_utc() {
        let limiter = RateLimiter::default();
        let key: Arc<str> = "k".into();
        let plan = limits(None, Some(3));
        let now = Instant::now();
        let noon = 20_000 * DAY + DAY / 2;
        for _ in 0..3 {
            limiter.admit_at(&key, &plan, now, noon).unwrap();
        }
        let refusal = limiter.admit_at(&key, &plan, now, noon).unwrap_err();
        assert_eq!(
            refusal,
            Refusal::Daily {
                allowed_per_day: 3,
                retry_after: Duration::from_secs(DAY / 2)
            }
        );
        assert!(limiter.admit_at(&key, &plan, now, noon + DAY / 2).is_ok());
    }
}
