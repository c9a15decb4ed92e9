//! The read pools: a few threads, one per core, that run every database read and its JSON
//! serialization, so async workers only move bytes. Idle threads sleep on a condition variable
//! rather than spin, which matters on a two-core machine where the spinning steals the core the
//! network threads need; tokio's `spawn_blocking` costs about half the throughput of a cheap
//! call here, this pool a fraction of that (see bench/serve.sh).
//!
//! Heavy jobs (eth_call, eth_estimateGas, eth_createAccessList, eth_getLogs: jobs that may run
//! for seconds) are shared fairly between keys. A pool has `max_heavy` heavy slots and
//! `reserve` more: the waiting heavy jobs of different keys take free slots in turn, one per
//! key round-robin, so one key alone may use every core (while jobs take at least
//! `SPREAD_FROM_MICROS` on average; shorter ones keep to the key's share, since a second thread
//! would only wake to find the queue empty), and the reserve lets the jobs of a key
//! running fewer than `max_heavy_per_key` (its share) start at once even while another key's
//! flood holds every slot. A key past its share never takes the reserve. So one key's flood
//! delays another key's first jobs not at all, and the rest by at most one job's length.
//! Cheap jobs go first (they take microseconds), and in a pool that also runs them at most
//! `max_heavy` heavy jobs run at once (all threads but one), so a cheap read never waits behind
//! heavy ones. A heavy job comes with a `Ticket`: a caller that stops waiting at the job's
//! deadline abandons the ticket, and a job whose ticket was abandoned is dropped unrun.
//!
//! Fair turns do not share the cores: a key's call that loops until its deadline holds a core
//! for seconds, and on a small machine everything else, other keys' calls included, waits for
//! the other cores. So a heavy job that has run for `LONG_JOB` is a long one: a watcher lowers
//! its thread's OS priority (nice `LONG_JOB_NICE`, Linux), and the scheduler then runs short
//! work first while the long job takes what is left. A thread cannot raise its priority again
//! without privilege, so once the long job ends the thread exits and the watcher, at the
//! normal priority, starts a fresh one in its place.

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Condvar, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering},
    },
    time::{Duration, Instant},
};

/// A heavy job that has run this long is a long one, and its thread runs at a lower priority.
const LONG_JOB: Duration = Duration::from_millis(2);
/// While a pool's heavy jobs take at least this long on average, one key's may fill every free
/// slot; shorter ones keep to the key's share. A short job ends before a second thread would
/// have woken for the next: on 2 cores, one key's cheap eth_calls ran at about 33,000/s on two
/// threads against 36,000-47,000/s on one, and its 1 ms calls at 1,850/s against 1,000/s.
const SPREAD_FROM_MICROS: u64 = 250;
/// The nice value of a thread running a long job (0 is the default, 19 the lowest priority).
const LONG_JOB_NICE: i32 = 19;

type Job = Box<dyn FnOnce() + Send>;

const WAITING: u8 = 0;
const STARTED: u8 = 1;
const ABANDONED: u8 = 2;

/// Whether a heavy job has started, or its caller gave up on it first; exactly one of the two
/// happens.
#[derive(Debug, Clone, Default)]
pub struct Ticket(Arc<AtomicU8>);

impl Ticket {
    /// Marks the job started, unless it was abandoned.
    fn start(&self) -> bool {
        self.0
            .compare_exchange(WAITING, STARTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Gives up on the job if it has not started: it will never run. `false`: it has started
    /// (its answer will come).
    pub fn abandon(&self) -> bool {
        self.0
            .compare_exchange(WAITING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn abandoned(&self) -> bool {
        self.0.load(Ordering::Acquire) == ABANDONED
    }
}

/// One key's heavy jobs.
#[derive(Default)]
struct KeyLane {
    waiting: VecDeque<(Ticket, Job)>,
    running: usize,
}

struct PoolState {
    /// Cheap jobs, first come first served.
    light: VecDeque<Job>,
    /// Heavy jobs by key; a key is here while it has heavy jobs waiting or running.
    lanes: HashMap<Arc<str>, KeyLane>,
    /// The keys with heavy jobs waiting, in the order of their next turn.
    turns: VecDeque<Arc<str>>,
    heavy_waiting: usize,
    heavy_running: usize,
    /// How long heavy jobs take, a moving average (weight 1/4 on the latest) in microseconds;
    /// it starts at `SPREAD_FROM_MICROS`.
    heavy_micros: u64,
}

impl Default for PoolState {
    fn default() -> Self {
        Self {
            light: VecDeque::new(),
            lanes: HashMap::new(),
            turns: VecDeque::new(),
            heavy_waiting: 0,
            heavy_running: 0,
            heavy_micros: SPREAD_FROM_MICROS,
        }
    }
}

impl PoolState {
    fn queued(&self) -> usize {
        self.light.len() + self.heavy_waiting
    }

    /// Drops every abandoned job still waiting.
    fn purge(&mut self) {
        let mut dropped = 0;
        for lane in self.lanes.values_mut() {
            let before = lane.waiting.len();
            lane.waiting.retain(|(ticket, _)| !ticket.abandoned());
            dropped += before - lane.waiting.len();
        }
        self.heavy_waiting -= dropped;
        let lanes = &self.lanes;
        self.turns
            .retain(|key| lanes.get(key).is_some_and(|lane| !lane.waiting.is_empty()));
        self.lanes
            .retain(|_, lane| lane.running > 0 || !lane.waiting.is_empty());
    }

    /// Whether heavy jobs are long enough on average for one key's to spread past its share.
    fn spread(&self) -> bool {
        self.heavy_micros >= SPREAD_FROM_MICROS
    }

    /// The next heavy job to run: the first key in turn that may start one (see
    /// `Limits::may_start_heavy`) gives its oldest job that was not abandoned, and goes to the
    /// back of the turns if it has more waiting. A key that may not keeps its place.
    fn next_heavy(&mut self, limits: &Limits) -> Option<(Arc<str>, Job)> {
        let (heavy_running, spread) = (self.heavy_running, self.spread());
        let mut i = 0;
        while let Some(key) = self.turns.get(i).cloned() {
            let Some(lane) = self.lanes.get_mut(&key) else {
                self.turns.remove(i);
                continue;
            };
            if !limits.may_start_heavy(heavy_running, spread, lane.running) {
                i += 1;
                continue;
            }
            self.turns.remove(i);
            let mut found = None;
            while let Some((ticket, job)) = lane.waiting.pop_front() {
                self.heavy_waiting -= 1;
                if ticket.start() {
                    found = Some(job);
                    break;
                }
            }
            let Some(job) = found else {
                if lane.running == 0 {
                    self.lanes.remove(&key);
                }
                continue;
            };
            lane.running += 1;
            self.heavy_running += 1;
            if !lane.waiting.is_empty() {
                self.turns.push_back(key.clone());
            }
            return Some((key, job));
        }
        None
    }

    fn finished_heavy(&mut self, key: &Arc<str>, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.heavy_micros = (self.heavy_micros / 4 * 3).saturating_add(micros / 4);
        self.heavy_running -= 1;
        if let Some(lane) = self.lanes.get_mut(key) {
            lane.running -= 1;
            if lane.running == 0 && lane.waiting.is_empty() {
                self.lanes.remove(key);
            }
        }
    }
}

#[derive(Default)]
struct JobQueue {
    state: Mutex<PoolState>,
    ready: Condvar,
    /// The threads, as the watcher of long jobs sees them.
    workers: Mutex<Vec<Arc<Worker>>>,
    /// Wakes the watcher of long jobs when a heavy job starts while it sleeps its slow tick.
    heavy_started: Condvar,
    /// The watcher sleeps its slow tick (no heavy job was running that could still turn long):
    /// a starting heavy job must wake it. Read and written under the `workers` lock. While
    /// heavy jobs run it wakes when the earliest of them turns long, before any job that
    /// starts later could, so starts do not wake it (a wake-up per call costs a context switch
    /// per request at tens of thousands of calls a second).
    watcher_idle: AtomicBool,
    /// The names of threads that ended after a long job, for the watcher to start again:
    /// a thread inherits its creator's priority, so a lowered thread cannot start its successor.
    replace: Mutex<Vec<String>>,
}

impl JobQueue {
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn workers(&self) -> MutexGuard<'_, Vec<Arc<Worker>>> {
        self.workers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn replace(&self) -> MutexGuard<'_, Vec<String>> {
        self.replace.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One pool thread: its OS thread id, and since when it runs a heavy job.
#[derive(Default)]
struct Worker {
    tid: AtomicI32,
    job: Mutex<WorkerJob>,
}

#[derive(Default)]
struct WorkerJob {
    heavy_since: Option<Instant>,
    /// Its priority was lowered: it exits after its job.
    demoted: bool,
}

impl Worker {
    fn job(&self) -> MutexGuard<'_, WorkerJob> {
        self.job.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Every `LONG_JOB / 2`: threads whose heavy job has run for `LONG_JOB` get a lower priority,
/// and threads that ended after such a job are started again.
fn watch_long_jobs(queue: &Arc<JobQueue>, limits: Limits) {
    // A heavy job was running at the last wake-up.
    let mut busy = false;
    loop {
        {
            // While heavy jobs run, a tick when the earliest to start turns long (a job of a few
            // microseconds each, one after another, so wakes the watcher once per `LONG_JOB`);
            // otherwise a slow one, or the next job's start.
            let workers = queue.workers();
            let earliest = workers
                .iter()
                .filter_map(|w| {
                    let job = w.job();
                    job.heavy_since.filter(|_| !job.demoted)
                })
                .min();
            let (tick, idle) = match earliest {
                Some(since) => {
                    busy = true;
                    match (since + LONG_JOB).checked_duration_since(Instant::now()) {
                        Some(left) if !left.is_zero() => (left, false),
                        // Long already, and its priority could not be lowered: try again later.
                        _ => (LONG_JOB / 2, false),
                    }
                }
                // Between two jobs of a steady stream: one more tick, which no job starting
                // meanwhile can turn long before, rather than a wake-up at the next start.
                None if busy => {
                    busy = false;
                    (LONG_JOB, false)
                }
                None => (Duration::from_millis(100), true),
            };
            queue.watcher_idle.store(idle, Ordering::Relaxed);
            let _ = queue.heavy_started.wait_timeout(workers, tick);
        }
        let ended = std::mem::take(&mut *queue.replace());
        for name in ended {
            if let Err(e) = spawn_worker(queue, limits, name.clone()) {
                tracing::warn!(thread = %name, "cannot start a pool thread again, will retry: {e}");
                queue.replace().push(name);
            }
        }
        for worker in queue.workers().iter() {
            let mut job = worker.job();
            let long = job
                .heavy_since
                .is_some_and(|since| since.elapsed() >= LONG_JOB);
            if long && !job.demoted && lower_priority(worker.tid.load(Ordering::Acquire)) {
                job.demoted = true;
            }
        }
    }
}

/// The calling thread's OS id (0 where there is none to use).
fn current_tid() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        unsafe { libc::gettid() }
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// Lowers thread `tid`'s priority to nice `LONG_JOB_NICE`; `false` where that is not possible.
fn lower_priority(tid: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Ok(who) = libc::id_t::try_from(tid) else {
            return false;
        };
        if who == 0 {
            return false;
        }
        // SAFETY: setpriority reads only its arguments; on Linux, PRIO_PROCESS with a thread id
        // sets that thread's nice value. Raising one's own threads' nice value needs no privilege.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, who, LONG_JOB_NICE) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = tid;
        false
    }
}

/// What a pool's threads may run at once.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Most jobs waiting; past it the pool is overloaded and refuses more.
    max_queued: usize,
    /// A key's share: its heavy jobs the reserve lets start.
    max_heavy_per_key: usize,
    /// Heavy slots any key's jobs take in turn.
    max_heavy: usize,
    /// Heavy slots, and threads, beyond `max_heavy` for keys running less than their share.
    reserve: usize,
}

impl Limits {
    /// Whether, with `heavy_running` heavy jobs running, one of a key running `key_running`
    /// may start: in a free slot (past the key's share only if jobs `spread`), or in the
    /// reserve while the key runs fewer than its share.
    fn may_start_heavy(&self, heavy_running: usize, spread: bool, key_running: usize) -> bool {
        let below_share = key_running < self.max_heavy_per_key;
        (heavy_running < self.max_heavy && (spread || below_share))
            || (heavy_running < self.max_heavy + self.reserve && below_share)
    }
}

#[derive(Clone)]
pub struct ReadPool {
    queue: Arc<JobQueue>,
    limits: Limits,
}

impl std::fmt::Debug for ReadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadPool")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl ReadPool {
    /// `threads` threads named `quarry-<name>-<i>` and `reserve` more; at most `max_queued`
    /// jobs wait, and `max_heavy` heavy jobs of any keys run at once, plus `reserve` of keys
    /// running fewer than `max_heavy_per_key`.
    pub fn new(
        name: &str,
        threads: usize,
        max_queued: usize,
        (max_heavy, reserve): (usize, usize),
        max_heavy_per_key: usize,
    ) -> std::io::Result<Self> {
        let queue = Arc::new(JobQueue::default());
        let limits = Limits {
            max_queued,
            max_heavy_per_key: max_heavy_per_key.max(1),
            max_heavy: max_heavy.max(1),
            reserve,
        };
        for i in 0..threads.max(1) + reserve {
            spawn_worker(&queue, limits, format!("quarry-{name}-{i}"))?;
        }
        let watched = queue.clone();
        std::thread::Builder::new()
            .name(format!("quarry-{name}-long"))
            .spawn(move || watch_long_jobs(&watched, limits))?;
        Ok(Self { queue, limits })
    }

    /// Queues a cheap `job`, or refuses it when `max_queued` jobs are already waiting.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) -> quarry_eth::Result<()> {
        {
            let mut state = self.queue.lock();
            if state.queued() >= self.limits.max_queued {
                state.purge();
                if state.queued() >= self.limits.max_queued {
                    return Err(quarry_eth::RpcError::Overloaded);
                }
            }
            state.light.push_back(Box::new(job));
        }
        self.queue.ready.notify_one();
        Ok(())
    }

    /// Queues a heavy `job` of `key`, run when `ticket` has not been abandoned by then; or
    /// refuses it when `max_queued` jobs are already waiting.
    pub fn spawn_heavy(
        &self,
        key: Arc<str>,
        ticket: Ticket,
        job: impl FnOnce() + Send + 'static,
    ) -> quarry_eth::Result<()> {
        let runnable = {
            let mut state = self.queue.lock();
            if state.queued() >= self.limits.max_queued {
                state.purge();
                if state.queued() >= self.limits.max_queued {
                    return Err(quarry_eth::RpcError::Overloaded);
                }
            }
            let (heavy_running, spread) = (state.heavy_running, state.spread());
            let lane = state.lanes.entry(key.clone()).or_default();
            let runnable = self
                .limits
                .may_start_heavy(heavy_running, spread, lane.running);
            let first = lane.waiting.is_empty();
            lane.waiting.push_back((ticket, Box::new(job)));
            state.heavy_waiting += 1;
            if first {
                state.turns.push_back(key);
            }
            runnable
        };
        // A job that cannot start yet (its key, or every heavy slot, is busy) is taken by the
        // thread whose heavy job ends first: waking a thread for it would only put it back to
        // sleep, a context switch per call when one key sends many.
        if runnable {
            self.queue.ready.notify_one();
        }
        Ok(())
    }
}

/// A server's two pools: one for calls (eth_call, eth_estimateGas, eth_createAccessList), so
/// that a flood of them never delays reads, and one for every other read.
#[derive(Debug, Clone)]
pub struct Pools {
    pub read: ReadPool,
    pub call: ReadPool,
}

impl Pools {
    /// The pools `config` asks for: one thread per core each unless set, every call heavy,
    /// eth_getLogs heavy on all read threads but one; each with a reserve of one key's share
    /// (`max_concurrent_heavy_per_key`, by default half the call threads), unless that share
    /// is the pool's every heavy slot: one key may then fill the pool, and there is no reserve.
    pub fn new(config: &crate::Config) -> std::io::Result<Self> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let read_threads = config.read_threads.unwrap_or(cores).max(1);
        let call_threads = config.call_threads.unwrap_or(cores).max(1);
        let per_key = config
            .max_concurrent_heavy_per_key
            .unwrap_or(call_threads / 2)
            .max(1);
        let queued = config.max_queued_reads;
        let reserve = |heavy_slots: usize| if per_key >= heavy_slots { 0 } else { per_key };
        let read_heavy = (read_threads - 1).max(1);
        Ok(Self {
            read: ReadPool::new(
                "read",
                read_threads,
                queued,
                (read_heavy, reserve(read_heavy)),
                per_key,
            )?,
            call: ReadPool::new(
                "call",
                call_threads,
                queued,
                (call_threads, reserve(call_threads)),
                per_key,
            )?,
        })
    }
}

enum Work {
    Light(Job),
    Heavy(Arc<str>, Job),
}

fn next(queue: &JobQueue, limits: Limits) -> Work {
    let mut state = queue.lock();
    loop {
        if let Some(job) = state.light.pop_front() {
            return Work::Light(job);
        }
        if let Some((key, job)) = state.next_heavy(&limits) {
            return Work::Heavy(key, job);
        }
        state = queue
            .ready
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// Starts a pool thread named `name`.
fn spawn_worker(queue: &Arc<JobQueue>, limits: Limits, name: String) -> std::io::Result<()> {
    let worker = Arc::new(Worker::default());
    queue.workers().push(worker.clone());
    let (queue_of_thread, worker_of_thread) = (queue.clone(), worker.clone());
    let thread_name = name.clone();
    let spawned = std::thread::Builder::new()
        .name(name)
        .spawn(move || work(&queue_of_thread, limits, &worker_of_thread, thread_name));
    if spawned.is_err() {
        queue.workers().retain(|w| !Arc::ptr_eq(w, &worker));
    }
    spawned.map(|_| ())
}

fn work(queue: &Arc<JobQueue>, limits: Limits, worker: &Arc<Worker>, name: String) {
    worker.tid.store(current_tid(), Ordering::Release);
    loop {
        // A panicking handler drops its reply sender, which the caller reports as an
        // internal error; the thread lives on.
        match next(queue, limits) {
            Work::Light(job) => {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
            Work::Heavy(key, job) => {
                let started = Instant::now();
                {
                    // Under the watcher's lock, so that it cannot miss the start.
                    let _workers = queue.workers();
                    worker.job().heavy_since = Some(started);
                    if queue.watcher_idle.swap(false, Ordering::Relaxed) {
                        queue.heavy_started.notify_one();
                    }
                }
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                let demoted = {
                    let mut job = worker.job();
                    job.heavy_since = None;
                    job.demoted
                };
                queue.lock().finished_heavy(&key, started.elapsed());
                // The one heavy job this end lets start (of this key, or any key in a pool whose
                // heavy slots were all taken) is taken by this thread as it looks for more work,
                // unless it exits: then a sleeping thread must.
                if demoted {
                    queue.ready.notify_one();
                    // This thread keeps its lowered priority: the watcher starts a fresh one in
                    // its place.
                    queue.workers().retain(|w| !Arc::ptr_eq(w, worker));
                    queue.replace().push(name);
                    queue.heavy_started.notify_one();
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{
        sync::mpsc,
        time::{Duration, Instant},
    };

    /// Runs heavy jobs of `key` that each hold their thread until `release` says so, and
    /// report on `started` when they start.
    fn blocking_job(
        pool: &ReadPool,
        key: &str,
        name: &'static str,
        started: &mpsc::Sender<&'static str>,
        release: &Arc<(Mutex<bool>, Condvar)>,
    ) -> Ticket {
        let ticket = Ticket::default();
        let (started, release) = (started.clone(), release.clone());
        pool.spawn_heavy(key.into(), ticket.clone(), move || {
            started.send(name).unwrap();
            let (lock, cvar) = &*release;
            let mut open = lock.lock().unwrap();
            while !*open {
                open = cvar.wait(open).unwrap();
            }
        })
        .unwrap();
        ticket
    }

    fn open(release: &Arc<(Mutex<bool>, Condvar)>) {
        *release.0.lock().unwrap() = true;
        release.1.notify_all();
    }

    /// A heavy job of `key` that reports its start on `started` and then holds its thread
    /// until the returned sender sends (or is dropped).
    fn held_job(
        pool: &ReadPool,
        key: &str,
        name: &'static str,
        started: &mpsc::Sender<&'static str>,
    ) -> mpsc::Sender<()> {
        let (release, held) = mpsc::channel::<()>();
        let started = started.clone();
        pool.spawn_heavy(key.into(), Ticket::default(), move || {
            started.send(name).unwrap();
            let _ = held.recv();
        })
        .unwrap();
        release
    }

    #[test]
    fn one_key_fills_free_slots_and_the_reserve_keeps_room_for_other_keys() {
        let pool = ReadPool::new("test-fair", 2, 100, (2, 1), 1).unwrap();
        let (started, order) = mpsc::channel();
        let next = || order.recv_timeout(Duration::from_secs(5)).unwrap();
        // Key a floods: alone, it takes both slots, but not the reserve.
        let a: Vec<_> = ["a1", "a2", "a3"]
            .map(|name| held_job(&pool, "a", name, &started))
            .into();
        let mut first = [next(), next()];
        first.sort_unstable();
        assert_eq!(first, ["a1", "a2"]);
        assert!(order.recv_timeout(Duration::from_millis(200)).is_err());
        // Key b starts at once in the reserve; its second job, past its share, waits.
        let b1 = held_job(&pool, "b", "b1", &started);
        assert_eq!(next(), "b1");
        let b2 = held_job(&pool, "b", "b2", &started);
        assert!(order.recv_timeout(Duration::from_millis(200)).is_err());
        // a1 ends: a2 and b1 still fill two slots, and the one left is the reserve, kept for
        // a key below its share; a third key's job starts in it at once.
        let mut a = a.into_iter();
        drop(a.next());
        assert!(order.recv_timeout(Duration::from_millis(200)).is_err());
        let c1 = held_job(&pool, "c", "c1", &started);
        assert_eq!(next(), "c1");
        // b1 ends: b is below its share again, and b2 takes the reserve, though a waited first.
        drop(b1);
        assert_eq!(next(), "b2");
        // c1 ends: a2 and b2 fill the two slots; a2 ends: a3 takes its slot.
        drop(c1);
        assert!(order.recv_timeout(Duration::from_millis(200)).is_err());
        drop(a);
        assert_eq!(next(), "a3");
        drop(b2);

        // One thread: waiting jobs are taken one per key in turn.
        let pool = ReadPool::new("test-turns", 1, 100, (1, 0), 1).unwrap();
        let mut held = HashMap::from([("a1", held_job(&pool, "a", "a1", &started))]);
        assert_eq!(next(), "a1");
        for (key, name) in [
            ("a", "a2"),
            ("a", "a3"),
            ("b", "b1"),
            ("c", "c1"),
            ("b", "b2"),
        ] {
            held.insert(name, held_job(&pool, key, name, &started));
        }
        let mut ran = vec!["a1"];
        for _ in 0..5 {
            let running = ran.last().copied().unwrap();
            drop(held.remove(running));
            ran.push(next());
        }
        assert_eq!(ran, ["a1", "a2", "b1", "c1", "a3", "b2"]);
    }

    #[test]
    fn one_key_spreads_over_free_slots_only_while_jobs_are_long() {
        let pool = ReadPool::new("test-spread", 2, 100, (2, 1), 1).unwrap();
        let (started, order) = mpsc::channel();
        let next = || order.recv_timeout(Duration::from_secs(5)).unwrap();
        // Short jobs: the average falls below SPREAD_FROM_MICROS.
        for _ in 0..8 {
            drop(held_job(&pool, "a", "short", &started));
            assert_eq!(next(), "short");
        }
        std::thread::sleep(Duration::from_millis(50));
        let a1 = held_job(&pool, "a", "a1", &started);
        let a2 = held_job(&pool, "a", "a2", &started);
        assert_eq!(next(), "a1");
        assert!(order.recv_timeout(Duration::from_millis(200)).is_err());
        // a1 ran 200 ms: long enough to spread again, and a2 starts beside a3.
        drop(a1);
        assert_eq!(next(), "a2");
        let a3 = held_job(&pool, "a", "a3", &started);
        assert_eq!(next(), "a3");
        drop((a2, a3));
    }

    #[test]
    fn a_share_as_large_as_the_pool_leaves_no_reserve() {
        let config = |per_key: Option<usize>| {
            let share = per_key.map_or(String::new(), |n| {
                format!("max_concurrent_heavy_per_key = {n}\n")
            });
            crate::Config::parse(&format!("call_threads = 4\nread_threads = 3\n{share}")).unwrap()
        };
        let pools = Pools::new(&config(None)).unwrap();
        assert_eq!(
            (pools.call.limits.max_heavy, pools.call.limits.reserve),
            (4, 2)
        );
        assert_eq!(
            (pools.read.limits.max_heavy, pools.read.limits.reserve),
            (2, 0)
        );
        let pools = Pools::new(&config(Some(4))).unwrap();
        assert_eq!(
            (pools.call.limits.max_heavy, pools.call.limits.reserve),
            (4, 0)
        );
        let pools = Pools::new(&config(Some(1))).unwrap();
        assert_eq!(
            (pools.call.limits.reserve, pools.read.limits.reserve),
            (1, 1)
        );
    }

    #[test]
    fn abandoned_jobs_never_run_and_cheap_jobs_go_first() {
        let pool = ReadPool::new("test-abandon", 2, 3, (1, 0), 1).unwrap();
        let (started, order) = mpsc::channel();
        let hold = Arc::new((Mutex::new(false), Condvar::new()));
        blocking_job(&pool, "a", "a1", &started, &hold);
        assert_eq!(order.recv_timeout(Duration::from_secs(5)), Ok("a1"));
        // Only one heavy job runs at once here: b waits, and a cheap job does not.
        let b = blocking_job(&pool, "b", "b1", &started, &hold);
        let cheap = started.clone();
        pool.spawn(move || cheap.send("cheap").unwrap()).unwrap();
        assert_eq!(order.recv_timeout(Duration::from_secs(5)), Ok("cheap"));
        assert!(b.abandon());
        blocking_job(&pool, "b", "b2", &started, &hold);
        blocking_job(&pool, "c", "c1", &started, &hold);
        // The queue is full (b1 abandoned, b2, c1)... until the abandoned job is purged.
        blocking_job(&pool, "d", "d1", &started, &hold);
        assert!(pool.spawn(|| ()).is_err());
        open(&hold);
        let mut rest: Vec<&str> = (0..3)
            .map(|_| order.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        rest.sort_unstable();
        assert_eq!(rest, ["b2", "c1", "d1"]);
        assert!(order.recv_timeout(Duration::from_millis(200)).is_err());
        // A started job cannot be abandoned.
        let late = blocking_job(&pool, "e", "e1", &started, &hold);
        assert_eq!(order.recv_timeout(Duration::from_secs(5)), Ok("e1"));
        assert!(!late.abandon());
        let begun = Instant::now();
        pool.spawn(|| ()).unwrap();
        assert!(begun.elapsed() < Duration::from_secs(1));
    }

    /// The calling thread's nice value, from /proc.
    #[cfg(target_os = "linux")]
    fn nice_now() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 1..];
        // Field 19 of stat; the fields after the name start at field 3.
        after_name
            .split_whitespace()
            .nth(16)
            .unwrap()
            .parse()
            .unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_long_heavy_job_runs_at_a_lower_priority_on_a_thread_then_replaced() {
        let pool = ReadPool::new("test-long", 1, 100, (1, 0), 1).unwrap();
        let (sent, got) = mpsc::channel();
        let report = sent.clone();
        pool.spawn_heavy("a".into(), Ticket::default(), move || {
            let before = nice_now();
            std::thread::sleep(Duration::from_millis(300));
            report.send((before, nice_now())).unwrap();
        })
        .unwrap();
        let (before, during) = got.recv_timeout(Duration::from_secs(5)).unwrap();
        if before >= LONG_JOB_NICE {
            return; // The tests themselves run at a lower priority: nothing to lower.
        }
        assert_eq!(during, LONG_JOB_NICE);
        // The next job runs on a fresh thread, at the priority the pool started with.
        let report = sent.clone();
        pool.spawn_heavy("a".into(), Ticket::default(), move || {
            report.send((nice_now(), nice_now())).unwrap();
        })
        .unwrap();
        let (next, _) = got.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(next, before);
        let deadline = Instant::now() + Duration::from_secs(5);
        while pool.queue.workers().len() != 1 {
            assert!(Instant::now() < deadline, "the old thread stays listed");
            std::thread::sleep(Duration::from_millis(5));
        }
        // A short heavy job keeps its thread's priority.
        let report = sent.clone();
        pool.spawn_heavy("a".into(), Ticket::default(), move || {
            report.send((nice_now(), nice_now())).unwrap();
        })
        .unwrap();
        assert_eq!(got.recv_timeout(Duration::from_secs(5)).unwrap().0, before);
    }
}
