//! keccak256 for the whole process, and state-root hashing eight inputs at a time.
//!
//! alloy-primitives' `keccak256` (which alloy-trie's hash builder, alloy-consensus and revm all
//! call) is routed here through its `native-keccak` hook. Outside a [`deferred`] scope it is
//! keccak-asm's, as before. Inside one (the state-root walks of a block), each call returns a
//! placeholder instead and records its input: the walks only copy hashes into the inputs of
//! later hashes and into the nodes they yield, never look at them. When the scope ends, the
//! inputs are hashed level by level (an input's level is one more than that of the deepest
//! placeholder it holds), each level eight inputs at once with AVX-512 where the CPU has it,
//! and [`Resolved`] gives the scope's results their real hashes. A block's state root hashes
//! a few thousand branch nodes and leaves that do not depend on each other within a level;
//! eight Keccak-f permutations in AVX-512 registers take less than a third of the time of
//! eight one after another (bench/keccak.sh).
//!
//! A placeholder is 24 bytes drawn at random for the process, then the input's index: data
//! that a block controls (a storage value) cannot name one.

use alloy_primitives::B256;
use std::{cell::RefCell, hash::BuildHasher, sync::OnceLock};

/// The inputs of a deferred scope so far.
#[derive(Default)]
struct Pending {
    /// Whether a scope is open on this thread.
    open: bool,
    /// Every input, one after another.
    bytes: Vec<u8>,
    /// Where each input ends in `bytes`.
    ends: Vec<usize>,
}

thread_local! {
    /// Kept between scopes, so that its buffers are not grown again for every block.
    static DEFERRED: RefCell<Pending> = RefCell::new(Pending::default());
}

const MAGIC_LEN: usize = 24;

fn magic() -> &'static [u8; MAGIC_LEN] {
    static MAGIC: OnceLock<[u8; MAGIC_LEN]> = OnceLock::new();
    MAGIC.get_or_init(|| {
        // std's hasher keys come from the operating system's randomness.
        let state = std::collections::hash_map::RandomState::new();
        let mut magic = [0u8; MAGIC_LEN];
        for (i, chunk) in magic.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&state.hash_one(i).to_le_bytes());
        }
        magic
    })
}

fn placeholder(index: usize) -> B256 {
    let mut out = B256::ZERO;
    out[..MAGIC_LEN].copy_from_slice(magic());
    out[MAGIC_LEN..].copy_from_slice(&(index as u64).to_be_bytes());
    out
}

/// The index a placeholder names, if `bytes` (32 of them) are one.
fn placeholder_index(bytes: &[u8]) -> Option<usize> {
    let (head, tail) = bytes.split_at_checked(MAGIC_LEN)?;
    if head != magic() {
        return None;
    }
    let index: [u8; 8] = tail.get(..8)?.try_into().ok()?;
    usize::try_from(u64::from_be_bytes(index)).ok()
}

/// keccak256 of `input`, computed now.
pub fn keccak256_now(input: &[u8]) -> B256 {
    B256::new(keccak_asm::Keccak256::digest(input).into())
}

/// alloy-primitives' `keccak256` (feature `native-keccak`): the hash, or inside a
/// [`deferred`] scope on this thread, a placeholder for it.
///
/// # Safety
/// `bytes` points to `len` readable bytes and `output` to 32 writable ones, as
/// alloy-primitives passes them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn native_keccak256(bytes: *const u8, len: usize, output: *mut u8) {
    // SAFETY: alloy-primitives passes a slice's pointer and length.
    let input = unsafe { std::slice::from_raw_parts(bytes, len) };
    let hash = DEFERRED.with(|deferred| {
        let mut pending = deferred.borrow_mut();
        if !pending.open {
            return keccak256_now(input);
        }
        let index = pending.ends.len();
        pending.bytes.extend_from_slice(input);
        let end = pending.bytes.len();
        pending.ends.push(end);
        placeholder(index)
    });
    // SAFETY: `output` has room for the 32 bytes of a hash.
    unsafe { std::ptr::copy_nonoverlapping(hash.as_ptr(), output, 32) };
}

/// The real hashes of a deferred scope's placeholders.
#[derive(Debug, Default)]
pub struct Resolved {
    hashes: Vec<B256>,
}

impl Resolved {
    /// Replaces `hash` by the real one if it is one of the scope's placeholders.
    pub fn resolve(&self, hash: &mut B256) {
        if let Some(real) = placeholder_index(hash.as_slice()).and_then(|i| self.hashes.get(i)) {
            *hash = *real;
        }
    }

    /// Whether `hash` is one of the scope's placeholders.
    pub fn is_placeholder(&self, hash: &B256) -> bool {
        placeholder_index(hash.as_slice()).is_some_and(|i| i < self.hashes.len())
    }
}

/// A [`deferred`] scope was opened inside another on the same thread.
#[derive(Debug, thiserror::Error)]
#[error("a deferred keccak scope inside another")]
pub struct Nested;

/// Runs `work` with this thread's keccak256 calls deferred (see the module), then computes them
/// all. Whatever `work` returns may hold placeholders: [`Resolved::resolve`] gives each its
/// hash. `work` must not act on a hash's value, only pass it on.
pub fn deferred<R>(work: impl FnOnce() -> R) -> Result<(R, Resolved), Nested> {
    /// Ends the scope however `work` returns, so that a panic does not leave it open.
    struct Scope;
    impl Drop for Scope {
        fn drop(&mut self) {
            DEFERRED.with(|deferred| {
                let mut pending = deferred.borrow_mut();
                pending.open = false;
                pending.bytes.clear();
                pending.ends.clear();
            });
        }
    }
    let opened = DEFERRED.with(|deferred| {
        let mut pending = deferred.borrow_mut();
        !std::mem::replace(&mut pending.open, true)
    });
    if !opened {
        return Err(Nested);
    }
    let scope = Scope;
    let result = work();
    let hashes = DEFERRED.with(|deferred| {
        let mut pending = deferred.borrow_mut();
        pending.open = false;
        resolve(&mut pending)
    });
    drop(scope);
    Ok((result, Resolved { hashes }))
}

/// Entry `i`'s range in a list where `ends` gives where each entry ends.
fn entry(ends: &[usize], i: usize) -> std::ops::Range<usize> {
    let start = if i == 0 { 0 } else { ends[i - 1] };
    start..ends[i]
}

/// Hashes every pending input, placeholders in them replaced by the hashes they stand for.
fn resolve(pending: &mut Pending) -> Vec<B256> {
    let count = pending.ends.len();
    let magic = magic();
    let finder = memchr::memmem::Finder::new(magic);
    // Each input's placeholders (where, and which) and its level.
    let mut refs: Vec<(usize, usize)> = Vec::new();
    let mut refs_end = Vec::with_capacity(count);
    let mut levels = Vec::with_capacity(count);
    for index in 0..count {
        let range = entry(&pending.ends, index);
        let (start, input) = (range.start, &pending.bytes[range]);
        let mut level = 0u32;
        for at in finder.find_iter(input) {
            // Only earlier inputs' placeholders can be in an input.
            if let Some(named) = input
                .get(at..at + 32)
                .and_then(placeholder_index)
                .filter(|named| *named < index)
            {
                refs.push((start + at, named));
                level = level.max(levels[named] + 1);
            }
        }
        refs_end.push(refs.len());
        levels.push(level);
    }

    // Inputs by level, and within a level by length, so that the inputs hashed together
    // take about as many permutations.
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_unstable_by_key(|&i| (levels[i], entry(&pending.ends, i).len()));
    let mut hashes = vec![B256::ZERO; count];
    let mut at = 0;
    while at < order.len() {
        let level = levels[order[at]];
        let level_end = order[at..]
            .iter()
            .position(|&i| levels[i] != level)
            .map_or(order.len(), |n| at + n);
        for &i in &order[at..level_end] {
            for &(offset, named) in &refs[entry(&refs_end, i)] {
                pending.bytes[offset..offset + 32].copy_from_slice(hashes[named].as_slice());
            }
        }
        for chunk in order[at..level_end].chunks(LANES) {
            let mut inputs: [&[u8]; LANES] = [&[]; LANES];
            for (slot, &i) in inputs.iter_mut().zip(chunk) {
                *slot = &pending.bytes[entry(&pending.ends, i)];
            }
            let mut out = [B256::ZERO; LANES];
            keccak256_many(&inputs[..chunk.len()], &mut out);
            for (&i, hash) in chunk.iter().zip(out) {
                hashes[i] = hash;
            }
        }
        at = level_end;
    }
    hashes
}

/// How many inputs [`keccak256_many`] hashes at once.
pub const LANES: usize = 8;

/// keccak256 of each of up to [`LANES`] inputs into `out`: together with AVX-512 where the CPU
/// has it, else one after another.
pub fn keccak256_many(inputs: &[&[u8]], out: &mut [B256; LANES]) {
    // Eight lanes cost about as much as two or three inputs hashed one after another.
    #[cfg(target_arch = "x86_64")]
    if inputs.len() > 2 && std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        unsafe { x8::keccak256_x8(inputs, out) };
        return;
    }
    for (input, hash) in inputs.iter().zip(out.iter_mut()) {
        *hash = keccak256_now(input);
    }
}

/// keccak256 of each input, [`LANES`] at a time (see [`keccak256_many`]).
pub fn keccak256_each(inputs: &[&[u8]]) -> Vec<B256> {
    let mut hashes = Vec::with_capacity(inputs.len());
    let mut out = [B256::ZERO; LANES];
    for chunk in inputs.chunks(LANES) {
        keccak256_many(chunk, &mut out);
        hashes.extend_from_slice(&out[..chunk.len()]);
    }
    hashes
}

#[cfg(target_arch = "x86_64")]
mod x8 {
    //! Keccak-f[1600] on eight states at once: lane `i` of the state is one AVX-512 register
    //! holding that lane of all eight.

    use super::LANES;
    use alloy_primitives::B256;
    use std::arch::x86_64::*;

    const RATE: usize = 136;
    const WORDS: usize = RATE / 8;

    const ROUND_CONSTANTS: [u64; 24] = [
        0x0000000000000001,
        0x0000000000008082,
        0x800000000000808a,
        0x8000000080008000,
        0x000000000000808b,
        0x0000000080000001,
        0x8000000080008081,
        0x8000000000008009,
        0x000000000000008a,
        0x0000000000000088,
        0x0000000080008009,
        0x000000008000000a,
        0x000000008000808b,
        0x800000000000008b,
        0x8000000000008089,
        0x8000000000008003,
        0x8000000000008002,
        0x8000000000000080,
        0x000000000000800a,
        0x800000008000000a,
        0x8000000080008081,
        0x8000000000008080,
        0x0000000080000001,
        0x8000000080008008,
    ];

    /// a ^ b ^ c
    const XOR3: i32 = 0x96;
    /// a ^ (!b & c): Keccak's chi.
    const CHI: i32 = 0xD2;

    #[target_feature(enable = "avx512f")]
    fn permute(a: &mut [__m512i; 25]) {
        for rc in ROUND_CONSTANTS {
            // Intrinsics in a closure would not have the function's target feature.
            macro_rules! column {
                ($x:literal) => {
                    _mm512_ternarylogic_epi64::<XOR3>(
                        _mm512_ternarylogic_epi64::<XOR3>(a[$x], a[$x + 5], a[$x + 10]),
                        a[$x + 15],
                        a[$x + 20],
                    )
                };
            }
            let c = [column!(0), column!(1), column!(2), column!(3), column!(4)];
            let d = [
                _mm512_xor_si512(c[4], _mm512_rol_epi64::<1>(c[1])),
                _mm512_xor_si512(c[0], _mm512_rol_epi64::<1>(c[2])),
                _mm512_xor_si512(c[1], _mm512_rol_epi64::<1>(c[3])),
                _mm512_xor_si512(c[2], _mm512_rol_epi64::<1>(c[4])),
                _mm512_xor_si512(c[3], _mm512_rol_epi64::<1>(c[0])),
            ];
            // Theta, then rho (each lane rotated by its offset) and pi (lane (x, y) moves to
            // (y, 2x + 3y)).
            let mut b = [_mm512_setzero_si512(); 25];
            macro_rules! rho_pi {
                ($x:literal, $y:literal, 0) => {
                    b[$y + 5 * ((2 * $x + 3 * $y) % 5)] = _mm512_xor_si512(a[$x + 5 * $y], d[$x]);
                };
                ($x:literal, $y:literal, $r:literal) => {
                    b[$y + 5 * ((2 * $x + 3 * $y) % 5)] =
                        _mm512_rol_epi64::<$r>(_mm512_xor_si512(a[$x + 5 * $y], d[$x]));
                };
            }
            rho_pi!(0, 0, 0);
            rho_pi!(1, 0, 1);
            rho_pi!(2, 0, 62);
            rho_pi!(3, 0, 28);
            rho_pi!(4, 0, 27);
            rho_pi!(0, 1, 36);
            rho_pi!(1, 1, 44);
            rho_pi!(2, 1, 6);
            rho_pi!(3, 1, 55);
            rho_pi!(4, 1, 20);
            rho_pi!(0, 2, 3);
            rho_pi!(1, 2, 10);
            rho_pi!(2, 2, 43);
            rho_pi!(3, 2, 25);
            rho_pi!(4, 2, 39);
            rho_pi!(0, 3, 41);
            rho_pi!(1, 3, 45);
            rho_pi!(2, 3, 15);
            rho_pi!(3, 3, 21);
            rho_pi!(4, 3, 8);
            rho_pi!(0, 4, 18);
            rho_pi!(1, 4, 2);
            rho_pi!(2, 4, 61);
            rho_pi!(3, 4, 56);
            rho_pi!(4, 4, 14);
            for row in (0..25).step_by(5) {
                let r = [b[row], b[row + 1], b[row + 2], b[row + 3], b[row + 4]];
                for x in 0..5 {
                    a[row + x] =
                        _mm512_ternarylogic_epi64::<CHI>(r[x], r[(x + 1) % 5], r[(x + 2) % 5]);
                }
            }
            a[0] = _mm512_xor_si512(a[0], _mm512_set1_epi64(rc as i64));
        }
    }

    /// One input's blocks: the whole ones read in place, the last padded in `tail`.
    struct Lane<'a> {
        input: &'a [u8],
        blocks: usize,
        tail: [u8; RATE],
    }

    impl<'a> Lane<'a> {
        fn new(input: &'a [u8]) -> Self {
            let blocks = input.len() / RATE + 1;
            let rest = &input[(blocks - 1) * RATE..];
            let mut tail = [0u8; RATE];
            tail[..rest.len()].copy_from_slice(rest);
            tail[rest.len()] ^= 0x01;
            tail[RATE - 1] ^= 0x80;
            Self {
                input,
                blocks,
                tail,
            }
        }

        /// Word `word` of block `block`; zero past the last block.
        fn word(&self, block: usize, word: usize) -> i64 {
            let bytes = if block + 1 < self.blocks {
                &self.input[block * RATE + word * 8..block * RATE + word * 8 + 8]
            } else if block + 1 == self.blocks {
                &self.tail[word * 8..word * 8 + 8]
            } else {
                return 0;
            };
            let mut le = [0u8; 8];
            le.copy_from_slice(bytes);
            i64::from_le_bytes(le)
        }
    }

    /// keccak256 of up to eight inputs at once.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn keccak256_x8(inputs: &[&[u8]], out: &mut [B256; LANES]) {
        let count = inputs.len().min(LANES);
        let lanes: [Lane<'_>; LANES] =
            std::array::from_fn(|j| Lane::new(inputs.get(j).copied().unwrap_or_default()));
        let lane = |j: usize| &lanes[j];
        let blocks = lanes.iter().map(|l| l.blocks).max().unwrap_or(0);
        let mut state = [_mm512_setzero_si512(); 25];
        for block in 0..blocks {
            for (word, lane_word) in state.iter_mut().take(WORDS).enumerate() {
                let w = |j: usize| lane(j).word(block, word);
                let words = _mm512_set_epi64(w(7), w(6), w(5), w(4), w(3), w(2), w(1), w(0));
                *lane_word = _mm512_xor_si512(*lane_word, words);
            }
            permute(&mut state);
            if !lanes[..count].iter().any(|l| l.blocks == block + 1) {
                continue;
            }
            let mut words = [[0u64; LANES]; 4];
            for (row, vector) in words.iter_mut().zip(&state) {
                // SAFETY: `row` holds eight u64, the 64 bytes stored.
                unsafe { _mm512_storeu_si512(row.as_mut_ptr().cast(), *vector) };
            }
            for (j, l) in lanes[..count].iter().enumerate() {
                if l.blocks == block + 1 {
                    for (w, row) in words.iter().enumerate() {
                        out[j][w * 8..w * 8 + 8].copy_from_slice(&row[j].to_le_bytes());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::keccak256;

    fn input(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn the_hook_hashes_outside_a_scope() {
        assert_eq!(keccak256([]), alloy_primitives::KECCAK256_EMPTY);
        let data = input(1, 300);
        assert_eq!(keccak256(&data), keccak256_now(&data));
    }

    #[test]
    fn many_inputs_hash_as_each_alone() {
        // Lengths around the rate's multiples, where padding takes a block of its own or not.
        let lengths = [0, 1, 31, 32, 135, 136, 137, 271, 272, 273, 532, 700];
        for round in 0..lengths.len() {
            for count in 1..=LANES {
                let inputs: Vec<Vec<u8>> = (0..count)
                    .map(|j| input((round * 8 + j) as u64, lengths[(round + j) % lengths.len()]))
                    .collect();
                let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
                let mut out = [B256::ZERO; LANES];
                keccak256_many(&refs, &mut out);
                for (data, hash) in inputs.iter().zip(out) {
                    assert_eq!(hash, keccak256_now(data), "{} bytes", data.len());
                }
            }
        }
    }

    /// Any number of inputs, in as many groups as it takes, hash in order as each alone.
    #[test]
    fn each_input_of_a_list_hashes_as_alone() {
        for count in [0, 1, 7, 8, 9, 20] {
            let inputs: Vec<Vec<u8>> = (0..count).map(|j| input(j as u64, 20 + j)).collect();
            let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
            let expected: Vec<B256> = inputs.iter().map(|data| keccak256_now(data)).collect();
            assert_eq!(keccak256_each(&refs), expected);
        }
    }

    /// Hashes of hashes, made in a scope and resolved after it, equal those made directly.
    #[test]
    fn deferred_hashes_resolve_to_the_real_ones() {
        let make = || {
            let mut made: Vec<B256> = Vec::new();
            for i in 0..40u64 {
                let mut data = input(i, (i as usize * 37) % 600);
                // Each input embeds up to two earlier hashes, as a branch node its children's.
                for back in [1, 7] {
                    if let Some(earlier) = made.len().checked_sub(back).map(|at| made[at]) {
                        // Whole, as a hash is in a node: one at the start, one at the end.
                        let at = if back == 1 { data.len() } else { 0 };
                        data.splice(at..at, earlier.iter().copied());
                    }
                }
                made.push(keccak256(&data));
            }
            made
        };
        let direct = make();
        let (mut placeholders, resolved) = deferred(make).unwrap();
        assert!(
            placeholders
                .iter()
                .all(|hash| resolved.is_placeholder(hash))
        );
        for hash in &mut placeholders {
            resolved.resolve(hash);
        }
        assert_eq!(placeholders, direct);
        // The scope is closed: hashing is direct again, and a scope cannot nest.
        assert_eq!(keccak256([1u8]), keccak256_now(&[1]));
        let nested = deferred(|| deferred(|| ()).is_err()).unwrap().0;
        assert!(nested);
    }

    /// A value that looks like a placeholder of another process (another random prefix) is
    /// hashed as it is.
    #[test]
    fn only_this_process_placeholders_are_replaced() {
        let mut fake = placeholder(0);
        fake[0] ^= 1;
        let data = [B256::repeat_byte(3).as_slice(), fake.as_slice()].concat();
        let (hashes, resolved) = deferred(|| (keccak256([9u8]), keccak256(&data))).unwrap();
        let (mut first, mut second) = hashes;
        resolved.resolve(&mut first);
        resolved.resolve(&mut second);
        assert_eq!(first, keccak256_now(&[9]));
        assert_eq!(second, keccak256_now(&data));
    }
}
