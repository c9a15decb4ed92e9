use alloy_consensus::{Block, TxEnvelope};
use alloy_rlp::Decodable;
use quarry_storage::Database;
use std::path::Path;

#[test]
fn explore() {
    let data = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/rpc-compat/chain.rlp")).unwrap();
    let mut buf = &data[..];
    while !buf.is_empty() {
        let start = data.len() - buf.len();
        let b = Block::<TxEnvelope>::decode(&mut buf).unwrap();
        println!("off {start} n {} txs {} gas {} ts {} len {}", b.header.number, b.body.transactions.len(), b.header.gas_used, b.header.timestamp, data.len()-buf.len()-start);
    }
    let db = Database::open(Path::new("/tmp/qdd")).unwrap();
    let r = db.reader().unwrap();
    r.for_each_account(|a, acc| {
        let st = r.account_storage(&a)?;
        if st.is_empty() { return Ok(()); }
        println!("acct {a} nonce {} slots {}", acc.nonce, st.len());
        for (slot, _) in st.iter().take(40) {
            let mut vals = vec![];
            let mut prev = None;
            for n in 0..=54u64 {
                let v = r.storage_at(&a, slot, n)?;
                if prev != Some(v) { vals.push((n, v)); prev = Some(v); }
            }
            println!("   {slot} {:?}", vals);
        }
        Ok(())
    }).unwrap();
}
