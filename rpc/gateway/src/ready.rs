//! `/ready`: whether a replica should take traffic. A network is ready when it holds a chain,
//! its head is at most `max_head_lag` blocks behind the best head the replica knows of (its
//! peers' `eth_blockNumber`, and the upstream head that `quarry follow` recorded in the
//! datadir), its head has not stood still for `max_head_age_s` while that best head is
//! ahead of it, and its datadir's file system has at least `min_free_mb` free. A load balancer
//! takes a replica out on 503 and back on 200.
//!
//! The free space is the server's own look (statvfs of the datadir, at each status refresh):
//! a writer that the full disk stopped cannot record that in the datadir, which is full, and a
//! `quarry follow` waiting for room leaves a head that merely stands still.

use serde::Serialize;
use std::{
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

#[derive(Debug, Default)]
pub struct Readiness {
    state: Mutex<ReadyState>,
}

#[derive(Debug, Default)]
struct ReadyState {
    head: Option<u64>,
    /// When the head last changed (or was first read).
    head_since: Option<Instant>,
    /// The upstream head `quarry follow` recorded.
    upstream: Option<u64>,
    /// Each peer's last answer.
    peers: Vec<Option<u64>>,
    /// Bytes free on the datadir's file system at the last look (`None`: not known).
    free: Option<u64>,
}

/// One network's readiness inputs at one moment.
#[derive(Debug, Clone, Copy)]
pub struct View {
    pub head: Option<u64>,
    pub best_known: Option<u64>,
    /// How long the head has stood still.
    pub head_age: Duration,
    /// Bytes free on the datadir's file system.
    pub free: Option<u64>,
}

impl View {
    /// Blocks the head is behind the best known head.
    pub fn lag(&self) -> u64 {
        match (self.head, self.best_known) {
            (Some(head), Some(best)) => best.saturating_sub(head),
            (None, Some(best)) => best,
            _ => 0,
        }
    }
}

impl Readiness {
    /// The head read from the datadir, and the upstream head `quarry follow` recorded there.
    pub fn observe_head(&self, head: Option<u64>, upstream: Option<u64>, now: Instant) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.head != head || state.head_since.is_none() {
            state.head = head;
            state.head_since = Some(now);
        }
        state.upstream = upstream;
    }

    /// Bytes free on the datadir's file system (`None`: statvfs failed).
    pub fn observe_free(&self, free: Option<u64>) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .free = free;
    }

    /// Peer `index` (of `count`) answered `head`; `None`: it did not answer.
    pub fn observe_peer(&self, index: usize, count: usize, head: Option<u64>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.peers.resize(count, None);
        // A peer that stops answering keeps its last head: the chain was at least there.
        if let (Some(slot), Some(head)) = (state.peers.get_mut(index), head) {
            *slot = Some(head);
        }
    }

    pub fn view(&self) -> View {
        self.view_at(Instant::now())
    }

    fn view_at(&self, now: Instant) -> View {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let best_known = state
            .peers
            .iter()
            .flatten()
            .chain(&state.upstream)
            .copied()
            .max();
        View {
            head: state.head,
            best_known,
            head_age: state
                .head_since
                .map_or(Duration::ZERO, |since| now.saturating_duration_since(since)),
            free: state.free,
        }
    }
}

/// A network's entry in `/ready`'s body.
#[derive(Debug, Serialize)]
pub struct NetworkReadiness {
    pub name: String,
    pub ready: bool,
    pub head: Option<u64>,
    pub best_known_head: Option<u64>,
    pub lag: u64,
    pub head_age_s: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The limits a network's readiness is judged by (the config's `max_head_lag`,
/// `max_head_age_s` and `min_free_mb`).
#[derive(Debug, Clone, Copy)]
pub struct ReadyLimits {
    pub max_head_lag: u64,
    pub max_head_age: Duration,
    pub min_free_mb: u64,
}

/// Whether a network with `view` is ready under the limits, and if not, why.
pub fn judge(name: &str, view: View, limits: ReadyLimits) -> NetworkReadiness {
    let ReadyLimits {
        max_head_lag,
        max_head_age,
        min_free_mb,
    } = limits;
    let lag = view.lag();
    let low_free = view.free.filter(|&free| free < min_free_mb << 20);
    let reason = match (view.head, view.best_known) {
        _ if low_free.is_some() => Some(format!(
            "the datadir's file system has {} bytes free, under min_free_mb {min_free_mb}: \
             quarry ingest and quarry follow stop committing there when it is full",
            low_free.unwrap_or_default()
        )),
        (None, _) => Some("no chain stored yet".to_string()),
        (Some(head), Some(best)) if lag > max_head_lag => Some(format!(
            "head {head} is {lag} blocks behind the best known head {best} (max_head_lag {max_head_lag})"
        )),
        (Some(head), Some(best)) if best > head && view.head_age > max_head_age => Some(format!(
            "head {head} has not advanced for {} s while the best known head is {best} (max_head_age_s {})",
            view.head_age.as_secs(),
            max_head_age.as_secs()
        )),
        _ => None,
    };
    NetworkReadiness {
        name: name.to_string(),
        ready: reason.is_none(),
        head: view.head,
        best_known_head: view.best_known,
        lag,
        head_age_s: view.head_age.as_secs(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_and_a_stalled_head_make_a_network_unready() {
        let readiness = Readiness::default();
        let start = Instant::now();
        let age = Duration::from_secs(60);
        let limits = ReadyLimits {
            max_head_lag: 5,
            max_head_age: age,
            min_free_mb: 64,
        };
        let judge_at = |at: Instant| judge("main", readiness.view_at(at), limits);
        assert_eq!(
            judge_at(start).reason.as_deref(),
            Some("no chain stored yet")
        );
        readiness.observe_head(Some(100), None, start);
        // No peers and no upstream: nothing to lag behind.
        assert!(judge_at(start + Duration::from_secs(600)).ready);

        readiness.observe_peer(0, 2, Some(104));
        readiness.observe_peer(1, 2, None);
        let verdict = judge_at(start);
        assert!(verdict.ready, "{verdict:?}");
        assert_eq!((verdict.lag, verdict.best_known_head), (4, Some(104)));
        // The upstream that `quarry follow` saw is further ahead.
        readiness.observe_head(Some(100), Some(106), start);
        let verdict = judge_at(start);
        assert_eq!(
            verdict.reason.as_deref(),
            Some("head 100 is 6 blocks behind the best known head 106 (max_head_lag 5)")
        );
        // Within the lag, but stalled for longer than the age while the upstream is ahead.
        readiness.observe_head(Some(102), Some(106), start + Duration::from_secs(1));
        assert!(judge_at(start + Duration::from_secs(30)).ready);
        let verdict = judge_at(start + Duration::from_secs(62));
        assert!(
            verdict
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with("head 102 has not advanced for 61 s")),
            "{verdict:?}"
        );
        // A peer that stops answering keeps its last head; caught up, the network is ready.
        readiness.observe_peer(0, 2, None);
        readiness.observe_head(Some(106), Some(106), start + Duration::from_secs(63));
        let verdict = judge_at(start + Duration::from_secs(64));
        assert!(verdict.ready && verdict.lag == 0, "{verdict:?}");
        // A nearly full datadir's file system: the writer is about to stop.
        readiness.observe_free(Some(1 << 20));
        let verdict = judge_at(start + Duration::from_secs(64));
        assert!(
            verdict
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with("the datadir's file system has 1048576 bytes free")),
            "{verdict:?}"
        );
        readiness.observe_free(Some(1 << 30));
        assert!(judge_at(start + Duration::from_secs(64)).ready);
    }
}
