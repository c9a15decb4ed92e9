//! Opening an [`Importer`] on a datadir: the chain's genesis stored, or checked against the
//! stored one (and the public network it was written for), the stored head read back, and the
//! settings later imports follow.

use alloy_consensus::Header;
use alloy_genesis::Genesis;
use alloy_primitives::{Address, B256};
use quarry_executor::{
    ChainSpec, ExecutionCache, Network, StateTrie,
    genesis::{GenesisState, genesis_body, genesis_header, genesis_state},
};
use quarry_storage::{BlockRecord, Database, MetaKey};

use crate::{Error, Importer, Reorgs, Result, commit_interval};

/// The public network a datadir recorded when its genesis was written, if any.
pub fn stored_network<K: quarry_storage::Access>(
    tx: &quarry_storage::StorageTx<K>,
) -> std::result::Result<Option<String>, quarry_storage::Error> {
    let name = tx.meta(MetaKey::Network)?;
    Ok(name.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
}

impl Importer {
    /// Opens `db` for the chain of `genesis`, storing block 0 if the database is empty.
    pub fn open(db: Database, genesis: &Genesis) -> Result<Self> {
        let spec = ChainSpec::from_config(genesis.config.clone());
        let mut state = genesis_state(&genesis.alloc);
        let header = genesis_header(genesis, &spec, state.trie.root_of_changes()?);
        Self::open_with_genesis(db, spec, header, state, None)
    }

    /// Opens `db` for a public network, storing its block 0 if the database is empty. The
    /// genesis built from the bundled allocation must hash to the published value, and a
    /// datadir that recorded another network is refused.
    pub fn open_network(db: Database, network: Network) -> Result<Self> {
        let genesis = network.genesis()?;
        let spec = ChainSpec::from_config(genesis.config.clone());
        let mut state = genesis_state(&genesis.alloc);
        let header = genesis_header(&genesis, &spec, state.trie.root_of_changes()?);
        let computed = header.hash_slow();
        if computed != network.genesis_hash() {
            return Err(Error::GenesisHash {
                network,
                computed,
                published: network.genesis_hash(),
            });
        }
        if let Some(stored) = stored_network(&db.reader()?)?
            && stored != network.name()
        {
            return Err(Error::WrongNetwork {
                stored,
                given: network.name().to_string(),
            });
        }
        Self::open_with_genesis(db, spec, header, state, Some(network))
    }

    /// Opens a datadir that already holds a chain, with the fork schedule and genesis it
    /// recorded: what a command that names no `--chain` or `--genesis` works on.
    pub fn open_stored(db: Database) -> Result<Self> {
        let reader = db.reader()?;
        let spec = ChainSpec::stored(&reader)?.ok_or_else(|| Error::NoChain {
            datadir: db.datadir().display().to_string(),
        })?;
        let header = reader
            .header(0)?
            .ok_or_else(|| quarry_storage::Error::Corrupt("no genesis header".into()))?;
        drop(reader);
        // Block 0 is stored, so the allocation is never written again.
        let state = GenesisState {
            accounts: Vec::new(),
            bytecodes: Vec::new(),
            trie: StateTrie::new(),
        };
        Self::open_with_genesis(db, spec, header, state, None)
    }

    /// Opens `db` with an explicit genesis header (BlockchainTests give one) and allocation.
    pub fn open_with_header(
        db: Database,
        spec: ChainSpec,
        header: Header,
        alloc: &std::collections::BTreeMap<Address, alloy_genesis::GenesisAccount>,
    ) -> Result<Self> {
        let mut state = genesis_state(alloc);
        let computed = state.trie.root_of_changes()?;
        if computed != header.state_root {
            return Err(Error::StateMismatch {
                number: 0,
                computed,
                expected: header.state_root,
            });
        }
        Self::open_with_genesis(db, spec, header, state, None)
    }

    fn open_with_genesis(
        db: Database,
        spec: ChainSpec,
        genesis: Header,
        state: GenesisState,
        network: Option<Network>,
    ) -> Result<Self> {
        // Checked before anything is written, so a bad setting leaves the datadir as it was.
        let commit_interval = commit_interval()?;
        let genesis_hash = genesis.hash_slow();
        let stored_genesis = db.reader()?.canonical_hash(genesis.number)?;
        match stored_genesis {
            Some(stored) if stored != genesis_hash => {
                return Err(Error::WrongGenesis {
                    stored,
                    given: genesis_hash,
                });
            }
            Some(_) => {
                // Datadirs written before genesis bodies followed the Shanghai rule lack the
                // empty withdrawals list; the header (and so the hash) was already right.
                let body = genesis_body(&spec, &genesis);
                if db.reader()?.body(genesis.number)?.as_ref() != Some(&body) {
                    let tx = db.writer()?;
                    tx.replace_empty_body(genesis.number, &body)?;
                    tx.commit()?;
                }
            }
            None => {
                let tx = db.writer()?;
                let body = genesis_body(&spec, &genesis);
                tx.insert_block(&BlockRecord {
                    hash: genesis_hash,
                    header: &genesis,
                    body: &body,
                    senders: &[],
                    receipts: &[],
                    total_difficulty: genesis.difficulty,
                })?;
                tx.apply_state_changes(genesis.number, &state.accounts, &state.bytecodes)?;
                state.trie.write(&tx, None, false)?;
                tx.start_trie_history(genesis.number + 1, quarry_storage::NODE_HISTORY_WINDOW)?;
                tx.set_proof_history(Some(quarry_storage::DEFAULT_PROOF_HISTORY))?;
                let config = serde_json::to_vec(&spec.config)
                    .map_err(|e| quarry_storage::Error::Corrupt(e.to_string()))?;
                tx.put_meta(MetaKey::ChainConfig, &config)?;
                if let Some(network) = network {
                    tx.put_meta(MetaKey::Network, network.name().as_bytes())?;
                }
                tx.put_schema_version()?;
                tx.commit()?;
                return Ok(Self {
                    db,
                    spec,
                    head: genesis,
                    head_hash: genesis_hash,
                    reorgs: Reorgs::Refuse,
                    trie_history: true,
                    execution_cache: ExecutionCache::default(),
                    input_last: None,
                    range: None,
                    ranges: true,
                    commit_interval,
                });
            }
        }
        let reader = db.reader()?;
        let (number, head_hash) = reader
            .head()?
            .ok_or_else(|| quarry_storage::Error::Corrupt("no head".into()))?;
        let found = reader.schema_version()?;
        if found < quarry_storage::SCHEMA_VERSION {
            if number > 0 {
                return Err(Error::NeedsMigration {
                    found,
                    current: quarry_storage::SCHEMA_VERSION,
                });
            }
            // Only the genesis block: migrating it is one small step.
            let tx = db.writer()?;
            while !tx.migrate_step(u64::MAX)? {}
            tx.commit()?;
        }
        let head = reader.header(number)?.ok_or_else(|| {
            quarry_storage::Error::Corrupt(format!("no header for head {number}"))
        })?;
        // The stored trie's root, from its root node: nothing else of the state is read.
        let computed = StateTrie::stored_root(&reader)?;
        drop(reader);
        if computed != head.state_root {
            return Err(Error::StateMismatch {
                number,
                computed,
                expected: head.state_root,
            });
        }
        // Read after any migration above, which starts the history.
        let trie_history = db.reader()?.trie_history_from()?.is_some();
        Ok(Self {
            db,
            spec,
            head,
            head_hash,
            reorgs: Reorgs::Refuse,
            trie_history,
            execution_cache: ExecutionCache::default(),
            input_last: None,
            range: None,
            ranges: true,
            commit_interval,
        })
    }

    /// Stops recording the state trie's history, for this and every later import: blocks
    /// write about a third less, and eth_getProof at blocks before the head undoes the
    /// changesets since the block instead, at a cost that follows them. Committed at once.
    pub fn stop_trie_history(&mut self) -> Result<()> {
        let tx = self.db.writer()?;
        tx.stop_trie_history()?;
        tx.commit()?;
        self.trie_history = false;
        Ok(())
    }

    /// Keeps the trie node history's fine windows for `blocks` behind the head (the
    /// datadir's `proof_history`, for this and later imports): older ones are thinned to one
    /// record per node and coarse window in the commits of imports, a backlog a bounded part
    /// per commit. Committed at once when it changes.
    pub fn set_proof_history(&mut self, blocks: u64) -> Result<()> {
        let tx = self.db.writer()?;
        if tx.proof_history()? != Some(blocks) {
            tx.set_proof_history(Some(blocks))?;
            tx.commit()?;
        }
        Ok(())
    }

    /// Keeps the state history of the last `blocks` blocks (the datadir's state history
    /// window, for this and later imports): changesets, block lists and node history of older
    /// blocks are pruned in the commits of imports, a backlog a bounded part per commit.
    /// Committed at once. A window never widens.
    pub fn set_state_history(&mut self, blocks: u64) -> Result<()> {
        let tx = self.db.writer()?;
        if tx.state_history_window()? != Some(blocks) {
            tx.set_state_history_window(blocks)?;
            tx.commit()?;
        }
        Ok(())
    }

    pub fn head(&self) -> (u64, B256) {
        (self.head.number, self.head_hash)
    }

    /// Whether later imports of a file of consecutive blocks may take the state root once per
    /// coarse window (see [`OpenRange`]; the default) or must take every block's.
    pub fn set_root_per_window(&mut self, allowed: bool) {
        self.ranges = allowed;
    }

    /// Chooses what later imports do with blocks that differ from stored ones.
    pub fn set_reorgs(&mut self, reorgs: Reorgs) {
        self.reorgs = reorgs;
    }

    pub fn spec(&self) -> &ChainSpec {
        &self.spec
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// The head block's header.
    pub fn head_header(&self) -> &Header {
        &self.head
    }
}
