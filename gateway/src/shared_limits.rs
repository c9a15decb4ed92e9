//! Rate limits and daily quotas kept in Redis (`limits_store`), so that a key's plan holds
//! across every replica and across restarts: the same generic cell rate algorithm and daily
//! count as `limits::RateLimiter`, done atomically by one Lua script per call on Redis' own
//! clock. The calls of one key that come while a batch of its calls is with Redis go in the
//! next batch, judged in their order, so a busy key costs Redis one round trip per batch. Each
//! answer also gives the key's headroom, a share of which the replica admits on its own until
//! the next answer (charging those calls in the key's next batch): a key well within its plan
//! never waits for Redis, and one at its limit is judged by Redis call by call. Redis is asked
//! with a short timeout; after a failure it is not asked again for a moment, and nothing is
//! admitted without it, so an unreachable Redis costs no call more than the timeout.

use crate::{
    config::PlanLimits,
    metrics::{RedisStats, Store},
    verdict::{Refusal, Verdict},
};
use redis::aio::ConnectionManager;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};
use tokio::sync::oneshot;

/// A batch of calls of one key, judged in order: each admitted or refused, or (charge)
/// notifications counted. KEYS[1]: the key's theoretical arrival time (µs since the epoch, on
/// Redis' clock); KEYS[2]: the prefix of its per-day count. ARGV: rate per second (0: none),
/// daily allowance (-1: none), 1 to charge (never refused for the rate, its debt capped at a
/// second) or 0 to admit, then each call's weight; a negative weight is a charge whatever the
/// flag (calls a replica already admitted from its allowance). Returns three numbers per call:
/// {0, used today, 0}, {1, µs to wait, 0} (rate) or {2, used today, s to midnight} (daily);
/// then the headroom after the batch: the units the rate would admit at once (-1: no rate) and
/// those left today (-1: no quota).
const SCRIPT: &str = r"
-- Redis before 5 replicates scripts verbatim, which refuses writes after TIME; 5 and later do
-- this by default and keep the call as a no-op.
redis.replicate_commands()
local t = redis.call('TIME')
local secs = tonumber(t[1])
local now = secs * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local daily = tonumber(ARGV[2])
local charge = ARGV[3] == '1'
local day_key = KEYS[2] .. ':' .. math.floor(secs / 86400)
local to_midnight = 86400 - secs % 86400
local used = tonumber(redis.call('GET', day_key) or '0')
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local interval, tolerance = 0, 0
if rate > 0 then
  interval = 1000000 / rate
  tolerance = interval * math.max(math.floor(rate / 10) - 1, 0)
end
local added, moved = 0, false
local out = {}
for i = 4, #ARGV do
  local amount = tonumber(ARGV[i])
  local next_at = math.max(tat, now)
  if charge or amount < 0 then
    amount = math.abs(amount)
    used = used + amount
    added = added + amount
    if rate > 0 then
      tat = math.min(next_at + interval * amount, now + 1000000)
      moved = true
    end
    if daily >= 0 and used > daily then
      out[#out + 1] = 2; out[#out + 1] = used; out[#out + 1] = to_midnight
    else
      out[#out + 1] = 0; out[#out + 1] = used; out[#out + 1] = 0
    end
  elseif daily >= 0 and used + amount > daily then
    out[#out + 1] = 2; out[#out + 1] = used; out[#out + 1] = to_midnight
  elseif rate > 0 and next_at > now + tolerance then
    out[#out + 1] = 1; out[#out + 1] = math.ceil(next_at - tolerance - now); out[#out + 1] = 0
  else
    if rate > 0 then
      tat = next_at + math.min(interval * amount, 86400000000)
      moved = true
    end
    used = used + amount
    added = added + amount
    out[#out + 1] = 0; out[#out + 1] = used; out[#out + 1] = 0
  end
end
if moved then
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
end
if added > 0 then
  if redis.call('INCRBY', day_key, added) == added then
    redis.call('EXPIRE', day_key, 172800)
  end
end
if rate > 0 then
  out[#out + 1] = math.max(0, math.floor((now + tolerance - math.max(tat, now)) / interval) + 1)
else
  out[#out + 1] = -1
end
if daily >= 0 then
  out[#out + 1] = math.max(0, daily - used)
else
  out[#out + 1] = -1
end
return out
";

/// The share of a key's headroom (as Redis last reported it) that one replica admits on its
/// own, without waiting for Redis: other replicas may be admitting from the same headroom, so
/// each takes a share of it. Replicas admitting from reports taken before each other's charges
/// reached Redis can together pass the limit by about a round trip's worth of calls.
const ALLOWANCE_SHARE: u64 = 4;
/// How long a reported headroom may be used: the calls admitted from it are charged to Redis
/// in the key's next batches, whose answers renew it.
const ALLOWANCE_FRESH: Duration = Duration::from_millis(100);

/// How long Redis is left alone after it failed.
const PAUSE_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// One key's calls waiting for the next batch, and the units it admitted from its allowance
/// since the last batch was sent (the key's queue exists while its task runs).
#[derive(Debug, Default)]
struct KeyBatch {
    waiting: Vec<(u64, oneshot::Sender<Verdict>)>,
    charges: u64,
}

/// Units a replica may admit for a key without asking Redis, until `until`.
#[derive(Debug, Clone, Copy)]
struct Allowance {
    units: u64,
    until: Instant,
}

#[derive(Debug)]
pub struct SharedLimits {
    connection: ConnectionManager,
    script: redis::Script,
    timeout: Duration,
    stats: Arc<RedisStats>,
    /// Set after a failure: Redis is not asked again before then.
    paused_until: Mutex<Option<Instant>>,
    /// Per key with a batch at Redis: the calls that came meanwhile. They go together in the
    /// next batch, so a busy key costs one round trip per batch, not per call.
    queues: Mutex<HashMap<Arc<str>, KeyBatch>>,
    /// Per key: what it may admit here without waiting for Redis (a share of the headroom Redis
    /// last reported), so that a key well within its limits pays no round trip per call.
    allowances: Mutex<HashMap<Arc<str>, Allowance>>,
    /// Per key: (UTC day, units used that day) as Redis last reported, for the notification
    /// path, which cannot wait for Redis.
    used_today: Mutex<HashMap<Arc<str>, (u64, u64)>>,
}

/// Units as the script takes them: a signed number (negative: a charge).
fn script_units(units: u64) -> i64 {
    i64::try_from(units).unwrap_or(i64::MAX)
}

fn day_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400)
}

impl SharedLimits {
    /// Connects lazily to the Redis at `url` (the first call connects); must run inside the
    /// server's runtime.
    pub fn new(url: &str, timeout: Duration, stats: Arc<RedisStats>) -> Result<Self, String> {
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
            stats,
            paused_until: Mutex::default(),
            queues: Mutex::default(),
            allowances: Mutex::default(),
            used_today: Mutex::default(),
        })
    }

    /// Admits one call of key `id` weighing `weight` units under `limits`, as Redis decides.
    /// A key whose last reported headroom leaves this replica an allowance is admitted at once
    /// from it, and the call is charged to Redis in the key's next batch. Otherwise the call
    /// joins its key's queue; a task of the key's own sends the queue to Redis, one batch per
    /// round trip, until it is empty. The task, not the call, talks to Redis, so a call dropped
    /// while it waits (its client went away) leaves nothing stuck.
    pub async fn admit(
        self: &Arc<Self>,
        id: &Arc<str>,
        limits: &PlanLimits,
        weight: u64,
    ) -> Verdict {
        if let Some(paused) = self.paused() {
            return paused;
        }
        if self.take_allowance(id, weight) {
            self.stats.admitted_from_allowance();
            self.enqueue(id, limits, |queue| queue.charges += weight);
            return Verdict::Admitted;
        }
        let (sender, receiver) = oneshot::channel();
        self.enqueue(id, limits, |queue| queue.waiting.push((weight, sender)));
        receiver
            .await
            .unwrap_or_else(|_| Verdict::Unavailable("the batch it waited for was dropped".into()))
    }

    /// Takes `weight` units from `id`'s allowance, if it has that many and they are fresh.
    fn take_allowance(&self, id: &Arc<str>, weight: u64) -> bool {
        let mut allowances = self
            .allowances
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match allowances.get_mut(id) {
            Some(allowance) if allowance.units >= weight && Instant::now() < allowance.until => {
                allowance.units -= weight;
                true
            }
            _ => false,
        }
    }

    /// Adds to `id`'s queue, starting the key's task if it has none.
    fn enqueue(
        self: &Arc<Self>,
        id: &Arc<str>,
        limits: &PlanLimits,
        add: impl FnOnce(&mut KeyBatch),
    ) {
        let first = {
            let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            match queues.get_mut(id) {
                Some(queue) => {
                    add(queue);
                    false
                }
                None => {
                    let mut queue = KeyBatch::default();
                    add(&mut queue);
                    queues.insert(id.clone(), queue);
                    true
                }
            }
        };
        if first {
            self.send_queue(id.clone(), limits.clone());
        }
    }

    /// Sends the queue of `id` to Redis in batches, from a task of its own, until it is empty:
    /// the units admitted from the allowance as one charge, then the waiting calls.
    fn send_queue(self: &Arc<Self>, id: Arc<str>, limits: PlanLimits) {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                let (charges, batch) = {
                    let mut queues = this.queues.lock().unwrap_or_else(PoisonError::into_inner);
                    match queues.get_mut(&id) {
                        Some(queue) if !queue.waiting.is_empty() || queue.charges > 0 => (
                            std::mem::take(&mut queue.charges),
                            std::mem::take(&mut queue.waiting),
                        ),
                        _ => {
                            queues.remove(&id);
                            return;
                        }
                    }
                };
                let mut weights: Vec<i64> = Vec::with_capacity(batch.len() + 1);
                if charges > 0 {
                    weights.push(-script_units(charges));
                }
                weights.extend(batch.iter().map(|(weight, _)| script_units(*weight)));
                let answers = match this.paused() {
                    Some(_) => Vec::new(),
                    None => this.run(&id, &limits, &weights, false).await,
                };
                let mut answers = answers.into_iter().skip(usize::from(charges > 0));
                for (_, sender) in batch {
                    let answer = answers.next().unwrap_or_else(|| {
                        Verdict::Unavailable("Redis failed less than a second ago".into())
                    });
                    let _ = sender.send(answer);
                }
            }
        });
    }

    /// Charges `count` notifications to key `id` (never refused for the rate; see
    /// `RateLimiter::charge`).
    pub async fn charge(&self, id: &Arc<str>, limits: &PlanLimits, count: u64) {
        if self.paused().is_none() {
            self.run(id, limits, &[script_units(count)], true).await;
        }
    }

    fn paused(&self) -> Option<Verdict> {
        let until = *self
            .paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        until
            .filter(|until| Instant::now() < *until)
            .map(|_| Verdict::Unavailable("it failed less than a second ago".into()))
    }

    /// One round trip: the script over `weights` (negative: a charge), one answer per weight
    /// (all `Unavailable` if Redis failed); the key's allowance is renewed from the headroom
    /// Redis reports.
    async fn run(
        &self,
        id: &Arc<str>,
        limits: &PlanLimits,
        weights: &[i64],
        charge: bool,
    ) -> Vec<Verdict> {
        let mut invocation = self.script.prepare_invoke();
        invocation
            .key(format!("quarry:{{{id}}}:tat"))
            .key(format!("quarry:{{{id}}}:day"))
            .arg(limits.requests_per_second.unwrap_or(0))
            .arg(
                limits
                    .requests_per_day
                    .map_or(-1, |d| i64::try_from(d).unwrap_or(i64::MAX)),
            )
            .arg(u8::from(charge));
        for weight in weights {
            invocation.arg(*weight);
        }
        let mut connection = self.connection.clone();
        let started = Instant::now();
        let asked = tokio::time::timeout(
            self.timeout,
            invocation.invoke_async::<Vec<i64>>(&mut connection),
        )
        .await;
        let reply = match asked {
            Ok(Ok(reply)) if reply.len() == 3 * weights.len() + 2 => reply,
            Ok(Ok(reply)) => {
                let why = format!(
                    "the limits script answered {} numbers for {} calls",
                    reply.len(),
                    weights.len()
                );
                return vec![self.failed(why); weights.len()];
            }
            Ok(Err(e)) => return vec![self.failed(e.to_string()); weights.len()],
            Err(_) => {
                let why = format!("no answer within {:?}", self.timeout);
                return vec![self.failed(why); weights.len()];
            }
        };
        self.stats.answered(Store::Limits, Some(started.elapsed()));
        let (calls, headroom) = reply.split_at(3 * weights.len());
        self.renew_allowance(id, headroom);
        let mut last_used = None;
        let answers = calls
            .chunks_exact(3)
            .map(|call| {
                let number = |n: i64| u64::try_from(n).unwrap_or(0);
                (call[0], number(call[1]), number(call[2]))
            })
            .map(|call| match call {
                (0, used, _) => {
                    last_used = Some(used);
                    Verdict::Admitted
                }
                (1, micros, _) => Verdict::Refused(Refusal::Rate {
                    allowed_per_second: limits.requests_per_second.unwrap_or(0),
                    retry_after: Duration::from_micros(micros),
                }),
                (2, used, seconds) => {
                    last_used = Some(used);
                    Verdict::Refused(Refusal::Daily {
                        allowed_per_day: limits.requests_per_day.unwrap_or(0),
                        used,
                        retry_after: Duration::from_secs(seconds),
                    })
                }
                _ => Verdict::Unavailable("a malformed answer from the limits script".into()),
            })
            .collect();
        if let Some(used) = last_used {
            self.used_today
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id.clone(), (day_now(), used));
        }
        answers
    }

    /// Sets `id`'s allowance from the headroom Redis reported after a batch (the units its
    /// rate would admit at once, those left today; -1: no such limit), less what this replica
    /// admitted from the old allowance since that batch was sent.
    fn renew_allowance(&self, id: &Arc<str>, headroom: &[i64]) {
        let limit = |units: i64| u64::try_from(units).ok();
        let headroom = match (limit(headroom[0]), limit(headroom[1])) {
            (Some(rate), Some(day)) => rate.min(day),
            (Some(units), None) | (None, Some(units)) => units,
            (None, None) => u64::MAX,
        };
        let pending = self
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .map_or(0, |queue| queue.charges);
        let allowance = Allowance {
            units: (headroom / ALLOWANCE_SHARE).saturating_sub(pending),
            until: Instant::now() + ALLOWANCE_FRESH,
        };
        self.allowances
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), allowance);
    }

    fn failed(&self, why: String) -> Verdict {
        self.stats.failed(Store::Limits);
        // Nothing is admitted without Redis until it answers again.
        self.allowances
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        *self
            .paused_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + PAUSE_AFTER_FAILURE);
        Verdict::Unavailable(why)
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
