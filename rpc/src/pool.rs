//! The read pool: a few threads, one per core, that run every database read and its JSON
//! serialization, so async workers only move bytes. Idle threads sleep on a condition variable
//! rather than spin, which matters on a two-core machine where the spinning steals the core the
//! network threads need; tokio's `spawn_blocking` costs about half the throughput of a cheap
//! call here, this pool a fraction of that (see bench/serve.sh).

use std::{
    collections::VecDeque,
    sync::{Arc, Condvar, Mutex, PoisonError},
};

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

#[derive(Clone)]
pub struct ReadPool {
    queue: Arc<Queue>,
    /// Most jobs waiting; past it the pool is overloaded and refuses more.
    max_queued: usize,
}

impl std::fmt::Debug for ReadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadPool").finish_non_exhaustive()
    }
}

impl ReadPool {
    /// `threads` threads named `quarry-<name>-<i>`.
    pub fn new(name: &str, threads: usize, max_queued: usize) -> std::io::Result<Self> {
        let queue = Arc::new(Queue::default());
        for i in 0..threads.max(1) {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("quarry-{name}-{i}"))
                .spawn(move || work(&queue))?;
        }
        Ok(Self { queue, max_queued })
    }

    /// Queues `job`, or refuses it when `max_queued` jobs are already waiting.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) -> crate::Result<()> {
        {
            let mut jobs = self
                .queue
                .jobs
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if jobs.len() >= self.max_queued {
                return Err(crate::RpcError::Overloaded);
            }
            jobs.push_back(Box::new(job));
        }
        self.queue.ready.notify_one();
        Ok(())
    }
}

fn work(queue: &Queue) {
    loop {
        let job = {
            let mut jobs = queue.jobs.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                match jobs.pop_front() {
                    Some(job) => break job,
                    None => {
                        jobs = queue
                            .ready
                            .wait(jobs)
                            .unwrap_or_else(PoisonError::into_inner)
                    }
                }
            }
        };
        // A panicking handler drops its reply sender, which the caller reports as an
        // internal error; the thread lives on.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}
