//! Rate limits and daily quotas kept in Redis (`limits_store`), so that a key's plan holds
//! across every replica and across restarts: the same generic cell rate algorithm and daily
//! count as `limits::RateLimiter`, done atomically by one Lua script per call on Redis' own
//! clock. Redis is asked with a short timeout; after a failure it is not asked again for a
//! moment, so an unreachable Redis costs no call more than the timeout.

use crate::{config::PlanLimits, limits::Refusal};
use redis::aio::ConnectionManager;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

/// One call's admission, or the charge of notifications. KEYS[1]: the key's theoretical
/// arrival time (µs since the epoch, Redis' clock); KEYS[2]: the prefix of its per-day count.
/// ARGV: amount, rate per second (0: none), daily allowance (-1: none), 1 to charge (never
/// refused for the rate, its debt capped at a second) or 0 to admit.
/// Returns {0, used today} or {1, µs to wait} (rate) or {2, used today, s to midnight} (daily).
const SCRIPT: &str = r"
local t = redis.call('TIME')
local secs = tonumber(t[1])
local now = secs * 1000000 + tonumber(t[2])
local amount = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local daily = tonumber(ARGV[3])
local charge = ARGV[4] == '1'
local day_key = KEYS[2] .. ':' .. math.floor(secs / 86400)
local to_midnight = 86400 - secs % 86400
local used = tonumber(redis.call('GET', day_key) or '0')
if not charge and daily >= 0 and used + amount > daily then
  return {2, used, to_midnight}
end
if rate > 0 then
  local interval = 1000000 / rate
  local next_at = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), now)
  local tat
  if charge then
    tat = math.min(next_at + interval * amount, now + 1000000)
  else
    local tolerance = interval * math.max(math.floor(rate / 10) - 1, 0)
    if next_at > now + tolerance then
      return {1, math.ceil(next_at - tolerance - now)}
    end
    tat = next_at + math.min(interval * amount, 86400000000)
  end
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
end
used = redis.call('INCRBY', day_key, amount)
if used == amount then
  redis.call('EXPIRE', day_key, 172800)
end
if charge and daily >= 0 and used > daily then
  return {2, used, to_midnight}
end
return {0, used}
";

/// How long Redis is left alone after it failed.
const PAUSE_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// What Redis said of one call.
#[derive(Debug)]
pub enum Answer {
    Admitted,
    Refused(Refusal),
    /// Redis did not answer in time or failed (`asked`), or was not asked because it failed
    /// a moment ago.
    Unavailable {
        asked: bool,
        why: String,
    },
}

#[derive(Debug)]
pub struct SharedLimits {
    connection: ConnectionManager,
    script: redis::Script,
    timeout: Duration,
    /// Set after a failure: Redis is not asked again before then.
    paused_until: Mutex<Option<Instant>>,
    /// Per key: (UTC day, units used that day) as Redis last reported, for the notification
    /// path, which cannot wait for Redis.
    used_today: Mutex<HashMap<Arc<str>, (u64, u64)>>,
}

fn day_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400)
}

impl SharedLimits {
    /// Connects lazily to the Redis at `url` (the first call connects); must run inside the
    /// server's runtime.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| format!("limits_store {url}: {e}"))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| format!("limits_store {url}: {e}"))?;
        Ok(Self {
            connection,
            script: redis::Script::new(SCRIPT),
            timeout,
            paused_until: Mutex::default(),
            used_today: Mutex::default(),
        })
    }

    /// Admits one call of key `id` weighing `weight` units, or charges `weight` notifications
    /// (`charge`), under `limits`, as Redis decides.
    pub async fn ask(
        &self,
        id: &Arc<str>,
        limits: &PlanLimits,
        weight: u64,
        charge: bool,
    ) -> Answer {
        if let Some(until) = *self
            .paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            && Instant::now() < until
        {
            return Answer::Unavailable {
                asked: false,
                why: "it failed less than a second ago".into(),
            };
        }
        let mut invocation = self.script.prepare_invoke();
        invocation
            .key(format!("quarry:{{{id}}}:tat"))
            .key(format!("quarry:{{{id}}}:day"))
            .arg(weight)
            .arg(limits.requests_per_second.unwrap_or(0))
            .arg(
                limits
                    .requests_per_day
                    .map_or(-1, |d| i64::try_from(d).unwrap_or(i64::MAX)),
            )
            .arg(u8::from(charge));
        let mut connection = self.connection.clone();
        let asked = tokio::time::timeout(
            self.timeout,
            invocation.invoke_async::<Vec<u64>>(&mut connection),
        )
        .await;
        let reply = match asked {
            Ok(Ok(reply)) => reply,
            Ok(Err(e)) => return self.failed(e.to_string()),
            Err(_) => return self.failed(format!("no answer within {:?}", self.timeout)),
        };
        match reply.as_slice() {
            [0, used] => {
                self.note_used(id, *used);
                Answer::Admitted
            }
            [1, micros] => Answer::Refused(Refusal::Rate {
                allowed_per_second: limits.requests_per_second.unwrap_or(0),
                retry_after: Duration::from_micros(*micros),
            }),
            [2, used, seconds] => {
                self.note_used(id, *used);
                Answer::Refused(Refusal::Daily {
                    allowed_per_day: limits.requests_per_day.unwrap_or(0),
                    used: *used,
                    retry_after: Duration::from_secs(*seconds),
                })
            }
            other => self.failed(format!(
                "unexpected reply from the limits script: {other:?}"
            )),
        }
    }

    fn failed(&self, why: String) -> Answer {
        *self
            .paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + PAUSE_AFTER_FAILURE);
        Answer::Unavailable { asked: true, why }
    }

    fn note_used(&self, id: &Arc<str>, used: u64) {
        self.used_today
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), (day_now(), used));
    }

    /// Units key `id` used today as Redis last reported (0 if it has not said today).
    pub fn used_today(&self, id: &Arc<str>) -> u64 {
        self.used_today
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .filter(|(day, _)| *day == day_now())
            .map_or(0, |(_, used)| *used)
    }
}
