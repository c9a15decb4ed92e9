//! MDBX's write transactions against a model, through the vendored library's dirty-page
//! handling (the longer unsorted tail of its dirty-page list, vendor/signet-mdbx-sys):
//! random puts and deletes across several tables, with reads of the same transaction between
//! them, in transactions small enough to stay in memory and in ones that spill pages past a
//! low dirty-page limit. Every read, inside the transaction and after its commit or abort,
//! must give what a `BTreeMap` holds.

#![allow(clippy::unwrap_used)]

use signet_libmdbx::{
    Database, DatabaseFlags, Environment, EnvironmentFlags, Geometry, Mode, RwSync, SyncMode,
    TxSync, WriteFlags,
};
use std::collections::BTreeMap;

type RwTxSync = TxSync<RwSync>;

type Model = Vec<BTreeMap<Vec<u8>, Vec<u8>>>;

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const TABLES: usize = 3;
const KEYS: u64 = 60_000;

fn open(dir: &std::path::Path, dp_limit: Option<u64>) -> Environment {
    let mut builder = Environment::builder();
    builder
        .set_max_dbs(TABLES)
        .set_flags(EnvironmentFlags {
            mode: Mode::ReadWrite {
                sync_mode: SyncMode::Durable,
            },
            ..Default::default()
        })
        .set_geometry(Geometry {
            size: Some(0..(1 << 30)),
            ..Default::default()
        });
    if let Some(limit) = dp_limit {
        builder.set_txn_dp_limit(limit);
    }
    builder.open(dir).unwrap()
}

fn tables(tx: &RwTxSync) -> Vec<Database> {
    (0..TABLES)
        .map(|t| {
            tx.create_db(Some(&format!("t{t}")), DatabaseFlags::empty())
                .unwrap()
        })
        .collect()
}

fn key(rng: &mut Rng) -> Vec<u8> {
    // Keys spread over the whole key space, so writes dirty pages all over each tree.
    let k = rng.below(KEYS);
    (k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .to_be_bytes()
        .to_vec()
}

fn value(rng: &mut Rng) -> Vec<u8> {
    let len = 8 + rng.below(400) as usize;
    let byte = rng.next() as u8;
    (0..len).map(|i| byte.wrapping_add(i as u8)).collect()
}

fn check_in_tx(tx: &RwTxSync, dbs: &[Database], model: &Model, rng: &mut Rng, samples: usize) {
    for _ in 0..samples {
        let t = rng.below(TABLES as u64) as usize;
        let k = key(rng);
        let got: Option<Vec<u8>> = tx.get(dbs[t].dbi(), &k).unwrap();
        assert_eq!(got.as_ref(), model[t].get(&k), "table {t}, key {k:02x?}");
    }
}

/// One write transaction of `ops` random puts and deletes, reading back between them;
/// returns it uncommitted with the model it should hold.
fn write_batch(env: &Environment, model: &mut Model, rng: &mut Rng, ops: usize) -> RwTxSync {
    let tx = env.begin_rw_sync().unwrap();
    let dbs = tables(&tx);
    for op in 0..ops {
        let t = rng.below(TABLES as u64) as usize;
        let k = key(rng);
        if rng.below(4) == 0 {
            let existed = tx.del(dbs[t], &k, None).unwrap();
            assert_eq!(existed, model[t].remove(&k).is_some());
        } else {
            let v = value(rng);
            tx.put(dbs[t], &k, &v, WriteFlags::empty()).unwrap();
            model[t].insert(k, v);
        }
        if op % 1_000 == 999 {
            check_in_tx(&tx, &dbs, model, rng, 200);
        }
    }
    tx
}

/// Every entry of every table, read by a new read transaction, equals the model.
fn check_committed(env: &Environment, model: &Model) {
    let tx = env.begin_ro_sync().unwrap();
    for (t, expected) in model.iter().enumerate() {
        let db = tx.open_db(Some(&format!("t{t}"))).unwrap();
        let mut cursor = tx.cursor(db).unwrap();
        let stored: BTreeMap<Vec<u8>, Vec<u8>> = cursor
            .iter::<Vec<u8>, Vec<u8>>()
            .map(|entry| entry.unwrap())
            .collect();
        assert_eq!(stored.len(), expected.len(), "table {t}");
        assert!(&stored == expected, "table {t} differs from the model");
    }
}

/// Runs six transactions (one aborted) and returns how many pages MDBX spilled and read back.
fn run(dp_limit: Option<u64>, seed: u64) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let env = open(dir.path(), dp_limit);
    let mut rng = Rng(seed);
    let mut model: Model = vec![BTreeMap::new(); TABLES];
    for batch in 0..6 {
        let before = model.clone();
        let tx = write_batch(&env, &mut model, &mut rng, 25_000);
        if batch == 3 {
            // An aborted transaction leaves the last commit as it was.
            drop(tx);
            model = before;
        } else {
            tx.commit().unwrap();
        }
        check_committed(&env, &model);
    }
    let ops = env.info().unwrap().page_ops();
    (ops.spill, ops.unspill)
}

#[test]
fn write_transactions_in_memory_read_what_was_written() {
    let (spilled, _) = run(None, 0x51ed_270b_a1f3_c9d5);
    assert_eq!(spilled, 0, "the in-memory case spilled");
}

#[test]
fn write_transactions_that_spill_read_what_was_written() {
    // 512 dirty pages (2 MiB) against ~5 MB written per transaction: MDBX spills pages to the
    // file and reads them back, and the dirty list is cut and refilled many times.
    let (spilled, unspilled) = run(Some(512), 0x2c1b_3c6d_5e7f_8091);
    assert!(
        spilled > 0 && unspilled > 0,
        "spilled {spilled}, unspilled {unspilled}"
    );
}
