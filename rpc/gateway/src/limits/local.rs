//! Per-key rate limits and daily quotas in weight units (see `weights`), shared by HTTP and
//! WebSocket: every call counts its method's weight, each call of a batch included. `Limiter`
//! is what the call layer asks: this process's own `RateLimiter`, or the limits shared by
//! every replica in Redis (`shared_limits`), with the local one or a refusal as the fallback
//! while Redis is unreachable.

use crate::{
    config::{Config, LimitsFallback, PlanLimits},
    limits::shared::SharedLimits,
    limits::verdict::{Refusal, Verdict},
    metrics::RedisStats,
};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

const DAY: u64 = 86_400;
const DAY_LONG: Duration = Duration::from_secs(DAY);

/// The limiter the call layer and the notification path ask.
#[derive(Debug)]
pub struct Limiter {
    local: RateLimiter,
    shared: Option<Arc<SharedLimits>>,
    fallback: LimitsFallback,
    stats: Arc<RedisStats>,
    /// Runs the notification path's charges to Redis, which must not wait for them.
    runtime: Option<tokio::runtime::Handle>,
    /// When an unreachable Redis was last logged (at most once every 10 s).
    last_warning: Mutex<Option<Instant>>,
}

fn unlimited(limits: &PlanLimits) -> bool {
    limits.requests_per_second.is_none() && limits.requests_per_day.is_none()
}

impl Limiter {
    /// The configured limiter; with a `limits_store`, must run inside the server's runtime.
    pub fn new(config: &Config, stats: Arc<RedisStats>) -> Result<Self, String> {
        let shared = config
            .limits_store
            .as_deref()
            .map(|url| {
                SharedLimits::new(
                    url,
                    Duration::from_millis(config.redis_timeout_ms),
                    stats.clone(),
                )
            })
            .transpose()?
            .map(Arc::new);
        Ok(Self {
            local: RateLimiter::default(),
            runtime: shared
                .as_ref()
                .and_then(|_| tokio::runtime::Handle::try_current().ok()),
            shared,
            fallback: config.limits_fallback,
            stats,
            last_warning: Mutex::default(),
        })
    }

    /// Admits one call of key `id` weighing `weight` units under `limits`, or says why not.
    pub async fn admit(
        &self,
        id: &Arc<str>,
        limits: &PlanLimits,
        weight: u32,
    ) -> Result<(), Refusal> {
        if unlimited(limits) {
            return Ok(());
        }
        let Some(shared) = &self.shared else {
            return self.local.admit(id, limits, weight);
        };
        match shared.admit(id, limits, u64::from(weight)).await {
            Verdict::Admitted => Ok(()),
            Verdict::Refused(refusal) => Err(refusal),
            Verdict::Unavailable(why) => {
                self.unavailable(&why);
                match self.fallback {
                    LimitsFallback::Local => {
                        self.stats.fell_back(false);
                        self.local.admit(id, limits, weight)
                    }
                    LimitsFallback::Refuse => {
                        self.stats.fell_back(true);
                        Err(Refusal::Unavailable)
                    }
                }
            }
        }
    }

    fn unavailable(&self, why: &str) {
        let mut last = self
            .last_warning
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if last.is_none_or(|at| at.elapsed() >= Duration::from_secs(10)) {
            *last = Some(Instant::now());
            let action = match self.fallback {
                LimitsFallback::Local => "admitting calls under this process's own limits",
                LimitsFallback::Refuse => "refusing calls (limits_fallback = \"refuse\")",
            };
            tracing::warn!("the limits store in Redis is unreachable ({why}); {action}");
        }
    }

    /// Counts `count` notifications sent to key `id` (see `RateLimiter::charge`). With Redis,
    /// the charge is sent without waiting, and the quota is judged on what Redis last said.
    pub fn charge(&self, id: &Arc<str>, limits: &PlanLimits, count: u64) -> Result<(), Refusal> {
        if unlimited(limits) {
            return Ok(());
        }
        let (Some(shared), Some(runtime)) = (&self.shared, &self.runtime) else {
            return self.local.charge(id, limits, count);
        };
        let used = shared.used_today(id).saturating_add(count);
        let (shared, id, limits_sent) = (shared.clone(), id.clone(), limits.clone());
        runtime.spawn(async move { shared.charge(&id, &limits_sent, count).await });
        match limits.requests_per_day {
            Some(allowed) if used > allowed => Err(Refusal::Daily {
                allowed_per_day: allowed,
                used,
                retry_after: Duration::from_secs(DAY - unix_now() % DAY),
            }),
            _ => Ok(()),
        }
    }

    /// How many more units key `id` may use today (`None`: no daily limit).
    pub fn left_today(&self, id: &Arc<str>, limits: &PlanLimits) -> Option<u64> {
        match &self.shared {
            Some(shared) => {
                let allowed = limits.requests_per_day?;
                Some(allowed.saturating_sub(shared.used_today(id)))
            }
            None => self.local.left_today(id, limits),
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[derive(Debug)]
struct Usage {
    /// The generic cell rate algorithm's theoretical arrival time of the next call.
    next_at: Instant,
    day: u64,
    today: u64,
}

impl Usage {
    /// Key `id`'s usage in `keys`, its day's count started anew on a new day (`unix` seconds).
    fn of<'a>(
        keys: &'a mut HashMap<Arc<str>, Usage>,
        id: &Arc<str>,
        now: Instant,
        unix: u64,
    ) -> &'a mut Usage {
        let usage = keys.entry(id.clone()).or_insert(Usage {
            next_at: now,
            day: unix / DAY,
            today: 0,
        });
        if usage.day != unix / DAY {
            usage.day = unix / DAY;
            usage.today = 0;
        }
        usage
    }
}

/// The usage of every key seen since the server started.
#[derive(Debug, Default)]
pub struct RateLimiter {
    keys: Mutex<HashMap<Arc<str>, Usage>>,
}

impl RateLimiter {
    /// Admits one call of key `id` weighing `weight` units under `limits`, or says why not.
    /// A refused call counts against nothing.
    pub fn admit(&self, id: &Arc<str>, limits: &PlanLimits, weight: u32) -> Result<(), Refusal> {
        if limits.requests_per_second.is_none() && limits.requests_per_day.is_none() {
            return Ok(());
        }
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.admit_at(id, limits, weight, Instant::now(), unix)
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

    /// How many more calls or notifications key `id` may make today (`None`: no daily limit).
    pub fn left_today(&self, id: &Arc<str>, limits: &PlanLimits) -> Option<u64> {
        let allowed = limits.requests_per_day?;
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let used = keys
            .get(id)
            .filter(|usage| usage.day == unix / DAY)
            .map_or(0, |usage| usage.today);
        Some(allowed.saturating_sub(used))
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
        let usage = Usage::of(&mut keys, id, now, unix);
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
                used: usage.today,
                retry_after: Duration::from_secs(DAY - unix % DAY),
            }),
            _ => Ok(()),
        }
    }

    /// The generic cell rate algorithm, one cell per weight unit: a call is admitted while
    /// the key is not ahead of its rate by more than the burst tolerance, and then moves the
    /// key's next arrival time on by its weight. A call heavier than the burst is admitted when
    /// the key is idle, and the key then waits until the rate has paid for it.
    fn admit_at(
        &self,
        id: &Arc<str>,
        limits: &PlanLimits,
        weight: u32,
        now: Instant,
        unix: u64,
    ) -> Result<(), Refusal> {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let usage = Usage::of(&mut keys, id, now, unix);
        if let Some(allowed) = limits.requests_per_day
            && usage.today.saturating_add(u64::from(weight)) > allowed
        {
            return Err(Refusal::Daily {
                allowed_per_day: allowed,
                used: usage.today,
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
            // At most a day's debt, whatever the weight.
            usage.next_at = next_at + interval.saturating_mul(weight).min(DAY_LONG);
        }
        usage.today = usage.today.saturating_add(u64::from(weight));
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
                limiter.admit_at(&key, &plan, 1, now, 0).is_ok()
            })
            .count();
        // 100 per second for 10 s, plus at most a burst of 10.
        assert!((1_000..=1_010).contains(&admitted), "{admitted}");
        let at = start + Duration::from_secs(10);
        let _ = limiter.admit_at(&key, &plan, 1, at, 0);
        let refusal = limiter.admit_at(&key, &plan, 1, at, 0).unwrap_err();
        assert!(matches!(
            refusal,
            Refusal::Rate {
                allowed_per_second: 100,
                ..
            }
        ));
        assert!(refusal.retry_after() <= Duration::from_millis(10));
        // Other keys are not affected.
        assert!(
            limiter
                .admit_at(&"other".into(), &plan, 1, start, 0)
                .is_ok()
        );
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
            limiter.admit_at(&key, &plan, 1, now, 0),
            Err(Refusal::Rate { .. })
        ));
        let later = now + Duration::from_secs(2);
        limiter.admit_at(&key, &plan, 1, later, 0).unwrap();
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
            limiter.admit_at(&key, &plan, 1, now, noon).unwrap();
        }
        let refusal = limiter.admit_at(&key, &plan, 1, now, noon).unwrap_err();
        assert_eq!(
            refusal,
            Refusal::Daily {
                allowed_per_day: 3,
                used: 3,
                retry_after: Duration::from_secs(DAY / 2)
            }
        );
        assert!(
            limiter
                .admit_at(&key, &plan, 1, now, noon + DAY / 2)
                .is_ok()
        );
    }

    #[test]
    fn calls_cost_their_weight() {
        let limiter = RateLimiter::default();
        let key: Arc<str> = "k".into();
        let now = Instant::now();
        // A quota of 100 units: twenty calls of weight 5, then nothing heavier than what is left.
        let daily = limits(None, Some(100));
        for _ in 0..19 {
            limiter.admit_at(&key, &daily, 5, now, 0).unwrap();
        }
        limiter.admit_at(&key, &daily, 1, now, 0).unwrap();
        let refusal = limiter.admit_at(&key, &daily, 5, now, 0).unwrap_err();
        assert!(
            matches!(refusal, Refusal::Daily { used: 96, .. }),
            "{refusal:?}"
        );
        limiter.admit_at(&key, &daily, 4, now, 0).unwrap();
        assert!(limiter.admit_at(&key, &daily, 1, now, 0).is_err());
        assert!(limiter.admit_at(&key, &daily, 0, now, 0).is_ok());

        // 100 units a second: a call of weight 50 when idle, then the rate pays for it.
        let rate = limits(Some(100), None);
        let other: Arc<str> = "other".into();
        limiter.admit_at(&other, &rate, 50, now, 0).unwrap();
        let refusal = limiter.admit_at(&other, &rate, 1, now, 0).unwrap_err();
        // Half a second of debt, less the burst tolerance of 9 cells of 10 ms.
        assert_eq!(refusal.retry_after(), Duration::from_millis(410));
        assert!(
            limiter
                .admit_at(&other, &rate, 1, now + Duration::from_millis(410), 0)
                .is_ok()
        );
        // Over ten seconds, weight 10 at ten times the rate: 10 s x 100 units / 10 (+ a burst).
        let heavy: Arc<str> = "heavy".into();
        let admitted = (0..1000)
            .filter(|i| {
                let at = now + Duration::from_millis(10 * i);
                limiter.admit_at(&heavy, &rate, 10, at, 0).is_ok()
            })
            .count();
        assert!((100..=101).contains(&admitted), "{admitted}");
    }
}
