//! Rate limits and daily quotas kept in Redis (`limits_store`), so that a key's plan holds
//! across every replica and across restarts: the same generic cell rate algorithm and daily
//! count as `limits::RateLimiter`, done atomically by one Lua script per batch on Redis' own
//! clock. The calls of one key that come while a batch of its calls is with Redis go in the
//! next batch, judged in their order, so a busy key costs Redis one round trip per batch. Each
//! answer also leases the replica a share of the key's headroom, charged in Redis as it is
//! granted: the replica admits those units on its own and gives back what it has not used when
//! the lease ends. A key well within its plan therefore never waits for Redis, one at its limit
//! is judged by Redis call by call, and replicas together never pass a limit, since every unit
//! one admits on its own was charged first. Redis is asked with a short timeout; after a
//! failure it is not asked again for a moment, and nothing is admitted without it, so an
//! unreachable Redis costs no call more than the timeout.

use crate::{
    config::PlanLimits,
    limits::verdict::{Refusal, Verdict},
    metrics::{RedisStats, Store},
};
use redis::aio::ConnectionManager;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};
use tokio::sync::{Notify, oneshot};

/// A batch of calls of one key, judged in order: each admitted or refused, or (charge)
/// notifications counted; then a lease for the replica. KEYS[1]: the key's theoretical arrival
/// time (µs since the epoch, on Redis' clock); KEYS[2]: the prefix of its per-day count. ARGV:
/// rate per second (0: none), daily allowance (-1: none), 1 to charge (never refused for the
/// rate, its debt capped at a second) or 0 to admit, the share of the headroom to lease (0:
/// none), the units of an ended lease given back and the day they were granted on, then each
/// call's weight. Returns three numbers per call: {0, used today, 0}, {1, µs to wait, 0} (rate)
/// or {2, used today, s to midnight} (daily); then the units leased (already charged) and the
/// day number.
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
local share = tonumber(ARGV[4])
local back = tonumber(ARGV[5])
local day = math.floor(secs / 86400)
local day_key = KEYS[2] .. ':' .. day
local to_midnight = 86400 - secs % 86400
local used = tonumber(redis.call('GET', day_key) or '0')
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local interval, tolerance = 0, 0
if rate > 0 then
  interval = 1000000 / rate
  tolerance = interval * math.max(math.floor(rate / 10) - 1, 0)
end
local added, moved = 0, false
-- An ended lease's unused units: off the count of the day they were charged to, and off the
-- rate's arrival time (never before now, which already means a full burst).
if back > 0 then
  if tonumber(ARGV[6]) == day then
    local returned = math.min(back, used)
    used = used - returned
    added = added - returned
  end
  if rate > 0 and tat > now then
    tat = math.max(tat - interval * back, now)
    moved = true
  end
end
local out = {}
for i = 7, #ARGV do
  local amount = tonumber(ARGV[i])
  local next_at = math.max(tat, now)
  if charge then
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
-- The lease: a share of the units the rate would admit at once and of those left today,
-- charged now as if admitted.
local lease = 0
if share > 0 then
  local room = -1
  if rate > 0 then
    room = math.max(0, math.floor((now + tolerance - math.max(tat, now)) / interval) + 1)
  end
  if daily >= 0 and (room < 0 or daily - used < room) then
    room = math.max(0, daily - used)
  end
  if room > 0 then
    lease = math.floor(room / share)
  end
  if lease > 0 then
    used = used + lease
    added = added + lease
    if rate > 0 then
      tat = math.max(tat, now) + interval * lease
      moved = true
    end
  end
end
if moved then
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
end
if added ~= 0 then
  if redis.call('INCRBY', day_key, added) == added then
    redis.call('EXPIRE', day_key, 172800)
  end
end
out[#out + 1] = lease
out[#out + 1] = day
return out
";

/// The share of a key's headroom (as Redis reports it after a batch) leased to the replica
/// that asked. Other replicas may be serving the same key, so each takes a share, not all.
const LEASE_SHARE: u64 = 4;
/// How long a lease lasts: what is left of it then is given back to Redis. A lease renewed
/// before it ends lasts this long from the renewal.
const LEASE_LENGTH: Duration = Duration::from_millis(100);

/// How long Redis is left alone after it failed.
const PAUSE_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// One key's calls waiting for the next batch (the key's queue exists while its task runs).
#[derive(Debug, Default)]
struct KeyBatch {
    waiting: Vec<(u64, oneshot::Sender<Verdict>)>,
    /// A new lease is wanted before this one runs out, with or without a call waiting.
    renew: bool,
    /// Wakes the key's task while it waits for its lease to end.
    wake: Arc<Notify>,
}

/// Units a replica took from Redis for a key in advance (charged there when granted): it
/// admits them on its own until `until`, then gives back what is left.
#[derive(Debug, Clone, Copy)]
struct Lease {
    units: u64,
    /// The last grant: a renewal is asked for once fewer than half of it are left.
    granted: u64,
    /// Redis' day number when it was granted: units go back to that day's count only.
    day: i64,
    until: Instant,
    /// A renewal has been asked for and not answered yet.
    renewing: bool,
}

/// What a key's task does next.
enum Step {
    /// Send these calls (and any renewal) to Redis, giving back an ended lease's units.
    Batch(Vec<(u64, oneshot::Sender<Verdict>)>, Option<(u64, i64)>),
    /// Give back an ended lease's units (units, day).
    GiveBack(u64, i64),
    /// Wait for a call or for the lease to end.
    Wait(Instant, Arc<Notify>),
}

/// What one round trip asks besides its calls.
#[derive(Debug, Clone, Copy, Default)]
struct Ask {
    /// Notifications, counted whatever the rate.
    charge: bool,
    /// Whether to lease a share of the headroom to this replica.
    lease: bool,
    /// An ended lease's unused units and their day.
    give_back: Option<(u64, i64)>,
}

#[derive(Debug)]
pub struct SharedLimits {
    connection: ConnectionManager,
    script: redis::Script,
    timeout: Duration,
    stats: Arc<RedisStats>,
    /// Set after a failure: Redis is not asked again before then.
    paused_until: Mutex<Option<Instant>>,
    /// Per key with a task: the calls that came while a batch was with Redis. They go together
    /// in the next batch, so a busy key costs one round trip per batch, not per call.
    queues: Mutex<HashMap<Arc<str>, KeyBatch>>,
    /// Per key: the units leased to this replica, so that a key well within its limits pays
    /// no round trip per call. Locked after `queues` when both are.
    leases: Mutex<HashMap<Arc<str>, Lease>>,
    /// Per key: (UTC day, units used that day) as Redis last reported, for the notification
    /// path, which cannot wait for Redis.
    used_today: Mutex<HashMap<Arc<str>, (u64, u64)>>,
}

/// Units as the script takes them.
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
            leases: Mutex::default(),
            used_today: Mutex::default(),
        })
    }

    /// Admits one call of key `id` weighing `weight` units under `limits`, as Redis decides.
    /// A key with enough units leased to this replica is admitted at once from them (asking
    /// for a new lease once half of it is used). Otherwise the call joins its key's queue; a
    /// task of the key's own sends the queue to Redis, one batch per round trip, until it is
    /// empty, then gives back what the lease has left when it ends. The task, not the call,
    /// talks to Redis, so a call dropped while it waits (its client went away) leaves nothing
    /// stuck.
    pub async fn admit(
        self: &Arc<Self>,
        id: &Arc<str>,
        limits: &PlanLimits,
        weight: u64,
    ) -> Verdict {
        if let Some(paused) = self.paused() {
            return paused;
        }
        if let Some(renew) = self.take_leased(id, weight) {
            self.stats.admitted_from_lease();
            if renew {
                self.enqueue(id, limits, |queue| queue.renew = true);
            }
            return Verdict::Admitted;
        }
        let (sender, receiver) = oneshot::channel();
        self.enqueue(id, limits, |queue| queue.waiting.push((weight, sender)));
        receiver
            .await
            .unwrap_or_else(|_| Verdict::Unavailable("the batch it waited for was dropped".into()))
    }

    /// Takes `weight` units from `id`'s lease, if it has that many and has not ended; then
    /// says whether a renewal should be asked for (fewer than half the last grant left).
    fn take_leased(&self, id: &Arc<str>, weight: u64) -> Option<bool> {
        let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
        let lease = leases.get_mut(id)?;
        if lease.units < weight || Instant::now() >= lease.until {
            return None;
        }
        lease.units -= weight;
        let renew = !lease.renewing && lease.units.saturating_mul(2) < lease.granted;
        lease.renewing |= renew;
        Some(renew)
    }

    /// Adds to `id`'s queue and wakes its task, starting the task if the key has none.
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
                    queue.wake.notify_one();
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

    /// The next step of `id`'s task, or `None` when the key has nothing waiting and no lease
    /// (its queue is then removed, under the same lock that `enqueue` takes).
    fn next_step(&self, id: &Arc<str>) -> Option<Step> {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let queue = queues.get_mut(id)?;
        let ended = {
            let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
            match leases.get_mut(id) {
                Some(lease) if lease.units > 0 && Instant::now() >= lease.until => {
                    Some((std::mem::take(&mut lease.units), lease.day))
                }
                Some(lease) if lease.units > 0 => {
                    if queue.waiting.is_empty() && !queue.renew {
                        return Some(Step::Wait(lease.until, queue.wake.clone()));
                    }
                    None
                }
                _ => None,
            }
        };
        if !queue.waiting.is_empty() || queue.renew {
            queue.renew = false;
            return Some(Step::Batch(std::mem::take(&mut queue.waiting), ended));
        }
        if let Some((units, day)) = ended {
            return Some(Step::GiveBack(units, day));
        }
        queues.remove(id);
        None
    }

    /// Runs `id`'s task, from a task of its own, until it has nothing waiting and no lease:
    /// batches of waiting calls (each asking for a lease), and ended leases given back.
    fn send_queue(self: &Arc<Self>, id: Arc<str>, limits: PlanLimits) {
        let this = self.clone();
        tokio::spawn(async move {
            while let Some(step) = this.next_step(&id) {
                match step {
                    Step::Wait(until, wake) => {
                        let until = tokio::time::Instant::from_std(until);
                        let _ = tokio::time::timeout_at(until, wake.notified()).await;
                    }
                    Step::GiveBack(units, day) => {
                        if this.paused().is_none() {
                            let ask = Ask {
                                give_back: Some((units, day)),
                                ..Ask::default()
                            };
                            this.run(&id, &limits, &[], ask).await;
                        }
                    }
                    Step::Batch(batch, give_back) => {
                        let weights: Vec<u64> = batch.iter().map(|(weight, _)| *weight).collect();
                        let ask = Ask {
                            lease: true,
                            give_back,
                            ..Ask::default()
                        };
                        let answers = match this.paused() {
                            Some(_) => Vec::new(),
                            None => this.run(&id, &limits, &weights, ask).await,
                        };
                        let mut answers = answers.into_iter();
                        for (_, sender) in batch {
                            let answer = answers.next().unwrap_or_else(|| {
                                Verdict::Unavailable("Redis failed less than a second ago".into())
                            });
                            let _ = sender.send(answer);
                        }
                    }
                }
            }
        });
    }

    /// Charges `count` notifications to key `id` (never refused for the rate; see
    /// `RateLimiter::charge`).
    pub async fn charge(&self, id: &Arc<str>, limits: &PlanLimits, count: u64) {
        if self.paused().is_none() {
            let ask = Ask {
                charge: true,
                ..Ask::default()
            };
            self.run(id, limits, &[count], ask).await;
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

    /// One round trip: the script over `weights`, one answer per weight (all `Unavailable` if
    /// Redis failed); what Redis leased is added to the key's lease here.
    async fn run(
        &self,
        id: &Arc<str>,
        limits: &PlanLimits,
        weights: &[u64],
        ask: Ask,
    ) -> Vec<Verdict> {
        let (back, back_day) = ask.give_back.unwrap_or((0, 0));
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
            .arg(u8::from(ask.charge))
            .arg(if ask.lease { LEASE_SHARE } else { 0 })
            .arg(script_units(back))
            .arg(back_day);
        for weight in weights {
            invocation.arg(script_units(*weight));
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
        let (calls, lease) = reply.split_at(3 * weights.len());
        if ask.lease {
            self.add_lease(id, u64::try_from(lease[0]).unwrap_or(0), lease[1]);
        }
        self.verdicts(id, limits, calls)
    }

    /// The verdicts of a batch's calls from the script's three numbers per call, noting the
    /// units the key used today as the last of them says.
    fn verdicts(&self, id: &Arc<str>, limits: &PlanLimits, calls: &[i64]) -> Vec<Verdict> {
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

    /// Adds `units` leased on Redis' day `day` to `id`'s lease, which then lasts
    /// `LEASE_LENGTH` from now. Units left from another day are dropped: they were charged to
    /// that day, and giving them back today would take them off the wrong count.
    fn add_lease(&self, id: &Arc<str>, units: u64, day: i64) {
        let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let lease = leases.entry(id.clone()).or_insert(Lease {
            units: 0,
            granted: 0,
            day,
            until: now,
            renewing: false,
        });
        if lease.day != day {
            lease.units = 0;
        }
        lease.units += units;
        lease.granted = units;
        lease.day = day;
        lease.renewing = false;
        if units > 0 {
            lease.until = now + LEASE_LENGTH;
        }
    }

    fn failed(&self, why: String) -> Verdict {
        self.stats.failed(Store::Limits);
        // Nothing is admitted without Redis until it answers again. The units leased stay
        // charged: Redis cannot be told now, and they are at most a share of the headroom.
        self.leases
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};

    struct RedisProcess(Child, String, #[allow(dead_code)] tempfile::TempDir);

    impl Drop for RedisProcess {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// A `redis-server` listening only on a Unix socket in a temporary directory (no port to
    /// pick), answering PING; `None` if none is installed.
    fn redis_server() -> Option<RedisProcess> {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("redis.sock");
        let mut command = Command::new("redis-server");
        command.args(["--port", "0", "--save", "", "--unixsocket"]);
        command.arg(&socket).arg("--dir").arg(dir.path());
        let child = command.stdout(Stdio::null()).spawn().ok()?;
        let url = format!("redis+unix://{}", socket.display());
        let redis = RedisProcess(child, url, dir);
        let client = redis::Client::open(redis.1.as_str()).unwrap();
        for _ in 0..100 {
            if let Ok(mut connection) = client.get_connection()
                && redis::cmd("PING").query::<String>(&mut connection).is_ok()
            {
                return Some(redis);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not answer within 5 s");
    }

    /// Redis' count of `id`'s units today.
    fn used_in_redis(url: &str, id: &str) -> u64 {
        let mut connection = redis::Client::open(url).unwrap().get_connection().unwrap();
        let (secs, _): (u64, u64) = redis::cmd("TIME").query(&mut connection).unwrap();
        let key = format!("quarry:{{{id}}}:day:{}", secs / 86_400);
        redis::cmd("GET")
            .arg(key)
            .query::<Option<u64>>(&mut connection)
            .unwrap()
            .unwrap_or(0)
    }

    /// Three replicas serving one key in turn, each admitting from its own lease without
    /// hearing of the others' calls, admit no more than the daily quota; Redis counts each
    /// lease when it is granted, and once the leases end it counts exactly the calls admitted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn leased_units_are_charged_when_granted_and_given_back_when_the_lease_ends() {
        let Some(redis) = redis_server() else {
            eprintln!("skipped: redis-server is not installed (bash .ci/run installs it)");
            return;
        };
        let stats = Arc::new(RedisStats::default());
        let replicas: Vec<Arc<SharedLimits>> = (0..3)
            .map(|_| {
                Arc::new(
                    SharedLimits::new(&redis.1, Duration::from_secs(2), stats.clone()).unwrap(),
                )
            })
            .collect();
        let limits = PlanLimits {
            requests_per_second: None,
            requests_per_day: Some(100),
        };
        let id: Arc<str> = "leased".into();
        let (mut admitted, mut ahead) = (0, 0);
        for i in 0..200 {
            if matches!(
                replicas[i % 3].admit(&id, &limits, 1).await,
                Verdict::Admitted
            ) {
                admitted += 1;
            }
            // While calls are admitted, Redis has counted at least each one, and the units
            // leased ahead of their calls.
            let used = used_in_redis(&redis.1, &id);
            assert!(used >= admitted, "call {i}");
            ahead = ahead.max(used - admitted);
        }
        assert!(
            ahead >= 10,
            "leases charge ahead of their calls: at most {ahead} did"
        );
        assert!(
            (1..=100).contains(&admitted),
            "{admitted} admitted under a quota of 100"
        );
        // The leases end and what they had left goes back: Redis counts the calls admitted.
        tokio::time::sleep(LEASE_LENGTH * 3).await;
        assert_eq!(used_in_redis(&redis.1, &id), admitted);
        // What went back is admitted again, up to the quota and no further.
        for i in 0..300 {
            if matches!(
                replicas[i % 3].admit(&id, &limits, 1).await,
                Verdict::Admitted
            ) {
                admitted += 1;
            }
            if i % 50 == 49 {
                tokio::time::sleep(LEASE_LENGTH * 2).await;
            }
        }
        tokio::time::sleep(LEASE_LENGTH * 3).await;
        assert_eq!((admitted, used_in_redis(&redis.1, &id)), (100, 100));
    }
}
