//! Time per Keccak-f permutation: keccak256 one input after another (keccak-asm), against
//! `quarry_storage::keccak::keccak256_many` (eight at once with AVX-512 where the CPU has it),
//! on inputs of a state root's sizes: branch nodes of 16 children (532 bytes) and leaves.
//!
//!   bash bench/keccak.sh

use alloy_primitives::B256;
use quarry_storage::keccak::{LANES, keccak256_many, keccak256_now};
use std::time::Instant;

fn main() {
    let inputs: Vec<Vec<u8>> = (0..80_000u64)
        .map(|i| {
            let len = [532, 532, 532, 110, 532, 104, 532, 300][i as usize % 8];
            (0..len)
                .map(|j| (i.wrapping_mul(31).wrapping_add(j as u64 * 7)) as u8)
                .collect()
        })
        .collect();
    let permutations: usize = inputs.iter().map(|input| input.len() / 136 + 1).sum();
    for round in 1..=3 {
        let started = Instant::now();
        let mut check = 0u8;
        for input in &inputs {
            check ^= keccak256_now(input)[0];
        }
        let one_by_one = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let mut out = [B256::ZERO; LANES];
        for chunk in inputs.chunks(LANES) {
            let refs: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
            keccak256_many(&refs, &mut out);
            check ^= out[0][0];
        }
        let together = started.elapsed().as_secs_f64();
        let per = |seconds: f64| seconds * 1e9 / permutations as f64;
        println!(
            "round {round}: one by one {:.0} ns per permutation, {LANES} at once {:.0} ns ({:.1}x) [{check}]",
            per(one_by_one),
            per(together),
            one_by_one / together
        );
    }
}
