//! The method table: every method a node answers, with its parameters' names, what answering it
//! costs (which decides where the service runs it) and its handler. The service registers the
//! table as it is; it never names a method itself.

use crate::{
    call_params::{Call, Overrides},
    node::{BlockAt, Node, RawPart, Reads, Snapshot},
    params::{self, Args, BlockId, BlockTag, Index, ProofKeys, SlotRequests, StorageKey},
    parity_params::{CallsArg, FilterArg, IndicesArg, TraceTypesArg},
    rpc_error::{Result, RpcError},
    simulate_params::SimulateRequest,
    trace_params::{BlockRlp, TraceCallConfig, trace_options},
};
use alloy_primitives::{Address, Bytes, keccak256};
use quarry_executor::{BlockOverrides, StateOverrides};
use serde::Serialize;
use serde_json::value::RawValue;
use std::{sync::Arc, time::Duration};

/// Where and how a method is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// From what the node holds for good (its chain id, the client version): on the async
    /// thread, never reading the database.
    Inline,
    /// From memory when the caches hold the answer (asked with `Reads::Cache` on the async
    /// thread), else from a snapshot on the read pool.
    Cached,
    /// Always from a snapshot on the read pool.
    Snapshot,
    /// From a snapshot on `pool`, as a heavy job of the caller's key: shared fairly between
    /// keys, and answered with `limit`'s error, unrun, when it waits past `limit`'s time.
    Heavy { pool: Pool, limit: Limit },
}

/// Which of the service's two thread pools a heavy method runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// The read pool (eth_getLogs, eth_getProof).
    Read,
    /// The calls' own pool: a flood of calls queues there and never delays reads.
    Call,
}

/// Which time limit a heavy method has, and which error says it ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// eth_call's: `call_timeout_ms`, "execution aborted (timeout = ...)".
    Call,
    /// eth_getLogs': `logs_timeout_ms`, "query timeout exceeded".
    Logs,
}

impl Limit {
    /// The node's time limit of this kind.
    pub fn timeout(self, node: &Node) -> Duration {
        match self {
            Self::Call => node.call_timeout(),
            Self::Logs => node.logs_timeout(),
        }
    }

    /// The error of a job that ran out of `timeout`.
    pub fn expired(self, timeout: Duration) -> RpcError {
        match self {
            Self::Call => quarry_executor::CallError::Timeout(timeout).into(),
            Self::Logs => RpcError::LogsTimeout,
        }
    }
}

/// A method's answer, serialized where it was found: `None` when asked with `Reads::Cache` and
/// memory does not hold it (a snapshot always answers).
pub type MethodAnswer = Result<Option<Box<RawValue>>>;

/// A method that reads nothing, not even its network's node.
pub type ConstantFn = dyn Fn(&Args) -> Result<Box<RawValue>> + Send + Sync;

/// A method that answers from a node through `Reads`.
pub type NodeFn = dyn Fn(&Node, &Reads<'_>, &Args) -> MethodAnswer + Send + Sync;

/// How a method of this table answers.
#[derive(Clone)]
pub enum Answer {
    /// From nothing, not even its network's node (web3_clientVersion): on the async thread.
    Constant(Arc<ConstantFn>),
    /// From a node through `Reads`, where its cost class says.
    Node(Cost, Arc<NodeFn>),
}

/// Where a method's parameters name addresses, for a key's contract allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressParams {
    /// None: blocks, transactions and receipts by hash or number, chain facts, filters by id
    /// (a filter was checked when it was made).
    NoAddress,
    /// The address at this position (eth_getBalance, eth_getStorageAt, eth_getProof ...).
    Address(usize),
    /// The `to` of the call object at this position (eth_call, debug_traceCall ...).
    CallTo(usize),
    /// The `address` of the log filter at this position (eth_getLogs, eth_newFilter).
    LogFilter(usize),
    /// eth_getStorageValues: the addresses its object of requests is keyed by.
    StorageRequests,
    /// eth_simulateV1: the `to` of every call of every block.
    SimulatedCalls,
    /// eth_subscribe: the filter of a `logs` subscription; other kinds name none.
    Subscription,
    /// The recipient of the signed transaction at this position (eth_sendRawTransaction,
    /// trace_rawTransaction).
    RawTransactionTo(usize),
    /// trace_callMany: the `to` of each call of its list.
    CallsTo,
    /// trace_filter: the filter's `fromAddress` and `toAddress` lists.
    TraceFilter,
}

/// What a method asks of a transaction pool, which quarry does not keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxpoolRead {
    /// Asked at the `pending` block (its second parameter): eth_getTransactionCount's nonce.
    PendingNonce,
    /// A transaction this node has not stored (its answer is `null`).
    Unstored,
}

/// One served method: everything known of it, in one declaration. `A` is how it answers:
/// quarry-eth's methods answer from a node (`Answer`); the service declares its own methods
/// (filters, subscriptions, transactions) with the same facts and its own answers.
#[derive(Clone)]
pub struct MethodSpec<A = Answer> {
    pub name: &'static str,
    /// Its positional parameters' names, for errors that name them.
    pub params: &'static [&'static str],
    /// How many of them are mandatory.
    pub required: usize,
    /// Where its parameters name addresses, for contract allowlists.
    pub addresses: AddressParams,
    /// What one call weighs against its key's limits; `None`: the config's default weight.
    pub weight: Option<u32>,
    /// Whether the network's partner may answer it when this node cannot (the spec's three).
    pub forwardable: bool,
    /// What only a transaction pool knows of it, which the network's transactions upstream is
    /// asked for.
    pub txpool_reads: Option<TxpoolRead>,
    pub answer: A,
}

/// A method declared but not yet classed for contract allowlists: only `names` makes it a
/// `MethodSpec`, so a method that does not say whether it takes addresses does not compile.
#[must_use]
pub struct Unclassed<A>(MethodSpec<A>);

impl<A> Unclassed<A> {
    /// Method `name` with its parameters' names, of which `required` are mandatory.
    pub fn new(
        name: &'static str,
        params: &'static [&'static str],
        required: usize,
        answer: A,
    ) -> Self {
        Self(MethodSpec {
            name,
            params,
            required,
            addresses: AddressParams::NoAddress,
            weight: None,
            forwardable: false,
            txpool_reads: None,
            answer,
        })
    }

    /// Where its parameters name addresses (`AddressParams::NoAddress` for none).
    pub fn names(self, addresses: AddressParams) -> MethodSpec<A> {
        MethodSpec {
            addresses,
            ..self.0
        }
    }
}

impl<A> MethodSpec<A> {
    /// Weighs `units` against its key's limits, not the config's default.
    #[must_use]
    pub fn weighs(self, units: u32) -> Self {
        Self {
            weight: Some(units),
            ..self
        }
    }

    /// The network's partner may answer it when this node cannot.
    #[must_use]
    pub fn forwardable(self) -> Self {
        Self {
            forwardable: true,
            ..self
        }
    }

    /// What only a transaction pool knows of it is asked of the transactions upstream.
    #[must_use]
    pub fn reads_txpool(self, read: TxpoolRead) -> Self {
        Self {
            txpool_reads: Some(read),
            ..self
        }
    }
}

impl<A> MethodSpec<A> {
    /// The same method, answering with what `answer` makes of its answer.
    pub fn with_answer<B>(self, answer: impl FnOnce(A) -> B) -> MethodSpec<B> {
        MethodSpec {
            name: self.name,
            params: self.params,
            required: self.required,
            addresses: self.addresses,
            weight: self.weight,
            forwardable: self.forwardable,
            txpool_reads: self.txpool_reads,
            answer: answer(self.answer),
        }
    }
}

impl MethodSpec<Answer> {
    /// Where and how it is answered.
    pub fn cost(&self) -> Cost {
        match &self.answer {
            Answer::Constant(_) => Cost::Inline,
            Answer::Node(cost, _) => *cost,
        }
    }
}

impl<A> std::fmt::Debug for MethodSpec<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MethodSpec")
            .field("name", &self.name)
            .field("params", &self.params)
            .field("addresses", &self.addresses)
            .field("weight", &self.weight)
            .finish_non_exhaustive()
    }
}

/// Serializes an answer on the thread that produced it.
pub fn to_raw(method: &str, value: &impl Serialize) -> Result<Box<RawValue>> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| RpcError::Internal(format!("{method}: cannot serialize the answer: {e}")))
}

/// Every method a node answers.
pub fn methods() -> Vec<MethodSpec> {
    let mut all = blocks();
    all.extend(transactions());
    all.extend(state());
    all.extend(calls());
    all.extend(traces());
    all.extend(parity_traces());
    all.extend(chain());
    all
}

/// A method answered from memory or else a snapshot (`Cost::Cached`).
fn cached<R, F>(
    name: &'static str,
    params: &'static [&'static str],
    required: usize,
    handler: F,
) -> Unclassed<Answer>
where
    R: Serialize,
    F: Fn(&Node, &Reads<'_>, &Args) -> Result<Option<R>> + Send + Sync + 'static,
{
    let answer = Arc::new(move |node: &Node, reads: &Reads<'_>, args: &Args| {
        handler(node, reads, args)?
            .map(|answer| to_raw(name, &answer))
            .transpose()
    });
    Unclassed::new(name, params, required, Answer::Node(Cost::Cached, answer))
}

/// A method answered from a snapshot only, at `cost` (`Snapshot` or `Heavy`).
fn from_snapshot<R, F>(
    name: &'static str,
    params: &'static [&'static str],
    required: usize,
    cost: Cost,
    handler: F,
) -> Unclassed<Answer>
where
    R: Serialize,
    F: Fn(&Node, &Snapshot, &Args) -> Result<R> + Send + Sync + 'static,
{
    let answer = Arc::new(
        move |node: &Node, reads: &Reads<'_>, args: &Args| match reads {
            Reads::Cache => Ok(None),
            Reads::Snapshot(tx) => to_raw(name, &handler(node, tx, args)?).map(Some),
        },
    );
    Unclassed::new(name, params, required, Answer::Node(cost, answer))
}

/// A method that always reads a snapshot (state, the head).
fn snapshot<R, F>(
    name: &'static str,
    params: &'static [&'static str],
    required: usize,
    handler: F,
) -> Unclassed<Answer>
where
    R: Serialize,
    F: Fn(&Node, &Snapshot, &Args) -> Result<R> + Send + Sync + 'static,
{
    from_snapshot(name, params, required, Cost::Snapshot, handler)
}

/// A heavy method on `pool` within `limit`'s time.
fn heavy<R, F>(
    name: &'static str,
    params: &'static [&'static str],
    required: usize,
    (pool, limit): (Pool, Limit),
    handler: F,
) -> Unclassed<Answer>
where
    R: Serialize,
    F: Fn(&Node, &Snapshot, &Args) -> Result<R> + Send + Sync + 'static,
{
    from_snapshot(name, params, required, Cost::Heavy { pool, limit }, handler)
}

/// A method without parameters answered from what the node holds for good.
fn inline<R, F>(name: &'static str, handler: F) -> Unclassed<Answer>
where
    R: Serialize,
    F: Fn(&Node) -> Result<R> + Send + Sync + 'static,
{
    let answer = Arc::new(move |node: &Node, _: &Reads<'_>, _: &Args| {
        to_raw(name, &handler(node)?).map(Some)
    });
    Unclassed::new(name, &[], 0, Answer::Node(Cost::Inline, answer))
}

/// A method that reads nothing, not even its network's node.
fn constant<R, F>(
    name: &'static str,
    params: &'static [&'static str],
    required: usize,
    answer: F,
) -> Unclassed<Answer>
where
    R: Serialize,
    F: Fn(&Args) -> Result<R> + Send + Sync + 'static,
{
    let answer = Arc::new(move |args: &Args| to_raw(name, &answer(args)?));
    Unclassed::new(name, params, required, Answer::Constant(answer))
}

/// The by-number and by-hash twins of a method: all parameters required, the first naming the
/// block (`names[0]` by number or tag, `names[1]` by hash), none naming an address.
fn by_block<R, F>(
    names: [(&'static str, &'static [&'static str]); 2],
    handler: F,
) -> [MethodSpec; 2]
where
    R: Serialize,
    F: Fn(&Node, &Reads<'_>, BlockAt, &Args) -> Result<Option<R>> + Clone + Send + Sync + 'static,
{
    let [(by_number, number_params), (by_hash, hash_params)] = names;
    let by_tag = handler.clone();
    [
        cached(
            by_number,
            number_params,
            number_params.len(),
            move |node, reads, args| by_tag(node, reads, BlockAt::Tag(args.required(0)?), args),
        )
        .names(AddressParams::NoAddress),
        cached(
            by_hash,
            hash_params,
            hash_params.len(),
            move |node, reads, args| handler(node, reads, BlockAt::Hash(args.required(0)?), args),
        )
        .names(AddressParams::NoAddress),
    ]
}

/// An optional block parameter of a state method: omitted means latest.
fn block_or_latest(args: &Args, position: usize) -> Result<BlockId> {
    Ok(args
        .optional::<BlockId>(position)?
        .unwrap_or(BlockId::Tag(BlockTag::Latest)))
}

/// A block named by number, tag or hash, for methods that read a block (not state).
fn block_at(id: BlockId) -> BlockAt {
    match id {
        BlockId::Tag(tag) => BlockAt::Tag(tag),
        BlockId::Hash { hash, .. } => BlockAt::Hash(hash),
    }
}

fn index(args: &Args, position: usize) -> Result<u64> {
    args.required::<Index>(position).map(|Index(index)| index)
}

/// eth_call's and eth_estimateGas's parameters: the call, the block (default latest), and the
/// optional state overrides.
fn call_args(args: &Args) -> Result<(Call, BlockId, StateOverrides)> {
    let at = block_or_latest(args, 1)?;
    let overrides = args
        .optional::<Overrides>(2)?
        .map(|o| o.0)
        .unwrap_or_default();
    Ok((args.required(0)?, at, overrides))
}

/// Blocks, uncles and their counts, and raw blocks.
fn blocks() -> Vec<MethodSpec> {
    let [by_number, by_hash] = by_block(
        [
            ("eth_getBlockByNumber", &["blockNumber", "fullTransactions"]),
            ("eth_getBlockByHash", &["blockHash", "fullTransactions"]),
        ],
        |node, reads, at, args| node.block(reads, at, args.required(1)?),
    );
    let mut specs = vec![by_number.forwardable(), by_hash];
    specs.extend(by_block(
        [
            ("eth_getHeaderByNumber", &["blockNumber"]),
            ("eth_getHeaderByHash", &["blockHash"]),
        ],
        |node, reads, at, _| node.header(reads, at),
    ));
    specs.extend(by_block(
        [
            (
                "eth_getRawTransactionByBlockNumberAndIndex",
                &["blockNumber", "index"],
            ),
            (
                "eth_getRawTransactionByBlockHashAndIndex",
                &["blockHash", "index"],
            ),
        ],
        |node, reads, at, args| node.raw_transaction_in(reads, at, index(args, 1)?),
    ));
    let [by_number, by_hash] = by_block(
        [
            (
                "eth_getUncleByBlockNumberAndIndex",
                &["blockNumber", "uncleIndex"],
            ),
            (
                "eth_getUncleByBlockHashAndIndex",
                &["blockHash", "uncleIndex"],
            ),
        ],
        |node, reads, at, args| node.uncle(reads, at, index(args, 1)?),
    );
    specs.extend([by_number, by_hash.forwardable()]);
    specs.extend(by_block(
        [
            ("eth_getBlockTransactionCountByNumber", &["blockNumber"]),
            ("eth_getBlockTransactionCountByHash", &["blockHash"]),
        ],
        |node, reads, at, _| node.block_transaction_count(reads, at),
    ));
    specs.extend(by_block(
        [
            ("eth_getUncleCountByBlockNumber", &["blockNumber"]),
            ("eth_getUncleCountByBlockHash", &["blockHash"]),
        ],
        |node, reads, at, _| node.uncle_count(reads, at),
    ));
    for (name, part) in [
        ("debug_getRawHeader", RawPart::Header),
        ("debug_getRawBlock", RawPart::Block),
        ("debug_getRawReceipts", RawPart::Receipts),
    ] {
        let raw = cached(name, &["block"], 1, move |node, reads, args| {
            node.raw_block(reads, block_at(args.required(0)?), part)
        });
        specs.push(raw.names(AddressParams::NoAddress));
    }
    specs
}

/// Transactions, receipts and logs.
fn transactions() -> Vec<MethodSpec> {
    let mut specs = Vec::new();
    specs.extend(by_block(
        [
            (
                "eth_getTransactionByBlockNumberAndIndex",
                &["blockNumber", "transactionIndex"],
            ),
            (
                "eth_getTransactionByBlockHashAndIndex",
                &["blockHash", "transactionIndex"],
            ),
        ],
        |node, reads, at, args| node.transaction(reads, at, index(args, 1)?),
    ));
    specs.extend([
        cached(
            "eth_getTransactionByHash",
            &["transactionHash"],
            1,
            |node, reads, args| node.transaction_by_hash(reads, args.required(0)?),
        )
        .names(AddressParams::NoAddress)
        .reads_txpool(TxpoolRead::Unstored),
        cached(
            "eth_getTransactionReceipt",
            &["transactionHash"],
            1,
            |node, reads, args| node.transaction_receipt(reads, args.required(0)?),
        )
        .names(AddressParams::NoAddress)
        .forwardable(),
        cached(
            "eth_getBlockReceipts",
            &["block"],
            1,
            |node, reads, args| node.block_receipts(reads, block_at(args.required(0)?)),
        )
        .names(AddressParams::NoAddress),
        snapshot(
            "eth_getTransactionBySenderAndNonce",
            &["sender", "nonce"],
            2,
            |node, tx, args| {
                node.transaction_by_sender_and_nonce(tx, args.required(0)?, index(args, 1)?)
            },
        )
        .names(AddressParams::Address(0)),
        heavy(
            "eth_getLogs",
            &["filter"],
            1,
            (Pool::Read, Limit::Logs),
            |node, tx, args| node.logs(tx, &args.required(0)?),
        )
        .names(AddressParams::LogFilter(0))
        .weighs(5),
    ]);
    // geth's debug_ name and the eth_ name of the same answer.
    for name in ["debug_getRawTransaction", "eth_getRawTransactionByHash"] {
        let raw = snapshot(name, &["transactionHash"], 1, |node, tx, args| {
            node.raw_transaction(tx, args.required(0)?)
        });
        specs.push(raw.names(AddressParams::NoAddress));
    }
    specs
}

/// A method that reads one account (its first parameter) at a block (default latest).
fn account<R, F>(name: &'static str, read: F) -> MethodSpec
where
    R: Serialize,
    F: Fn(&Node, &Snapshot, Address, BlockId) -> Result<R> + Send + Sync + 'static,
{
    let answer = snapshot(name, &["address", "block"], 1, move |node, tx, args| {
        read(node, tx, args.required(0)?, block_or_latest(args, 1)?)
    });
    answer.names(AddressParams::Address(0))
}

/// Accounts, storage and proofs.
fn state() -> Vec<MethodSpec> {
    vec![
        cached(
            "eth_getStorageAt",
            &["address", "storageSlot", "block"],
            2,
            |node, reads, args| {
                // Parsed in geth's order: the slot and the block before the address.
                let StorageKey(slot) = args.required(1)?;
                let at = block_or_latest(args, 2)?;
                node.storage_at(reads, args.required(0)?, slot, at)
            },
        )
        .names(AddressParams::Address(0)),
        snapshot(
            "eth_getStorageValues",
            &["requests", "block"],
            1,
            |node, tx, args| {
                let SlotRequests(requests) = args.required(0)?;
                node.storage_values(tx, &requests, block_or_latest(args, 1)?)
            },
        )
        .names(AddressParams::StorageRequests),
        account("eth_getBalance", Node::balance),
        account("eth_getCode", Node::code),
        account("eth_getTransactionCount", Node::transaction_count)
            .reads_txpool(TxpoolRead::PendingNonce),
        account("eth_getAccount", Node::account),
        account("eth_getAccountInfo", Node::account_info),
        // Proofs at older blocks cost what changed since; they take fair turns like calls.
        heavy(
            "eth_getProof",
            &["address", "storageKeys", "block"],
            2,
            (Pool::Read, Limit::Call),
            |node, tx, args| {
                let ProofKeys(keys) = args.required(1)?;
                let at = block_or_latest(args, 2)?;
                node.proof(tx, args.required(0)?, &keys, at)
            },
        )
        .names(AddressParams::Address(0)),
    ]
}

/// eth_call, eth_estimateGas, eth_createAccessList and eth_simulateV1, on the calls' pool.
fn calls() -> Vec<MethodSpec> {
    const CALL: &[&str] = &["transaction", "block", "stateOverrides"];
    let cost = (Pool::Call, Limit::Call);
    vec![
        heavy("eth_call", CALL, 1, cost, |node, tx, args| {
            let (call, at, overrides) = call_args(args)?;
            node.call(tx, &call, at, &overrides)
        })
        .names(AddressParams::CallTo(0))
        .weighs(5),
        heavy("eth_estimateGas", CALL, 1, cost, |node, tx, args| {
            let (call, at, overrides) = call_args(args)?;
            node.estimate_gas(tx, &call, at, &overrides)
        })
        .names(AddressParams::CallTo(0))
        .weighs(10),
        heavy("eth_createAccessList", CALL, 1, cost, |node, tx, args| {
            let (call, at, overrides) = call_args(args)?;
            node.create_access_list(tx, &call, at, &overrides)
        })
        .names(AddressParams::CallTo(0))
        .weighs(10),
        heavy(
            "eth_simulateV1",
            &["payload", "block"],
            1,
            cost,
            |node, tx, args| {
                let request: SimulateRequest = args.required(0)?;
                request.check()?;
                node.simulate(tx, request, block_or_latest(args, 1)?)
            },
        )
        .names(AddressParams::SimulatedCalls)
        .weighs(10),
    ]
}

/// The debug_trace* methods: they execute like calls, on the calls' pool.
fn traces() -> Vec<MethodSpec> {
    let cost = (Pool::Call, Limit::Call);
    vec![
        heavy(
            "debug_traceTransaction",
            &["transactionHash", "config"],
            1,
            cost,
            |node, tx, args| {
                node.trace_transaction(tx, args.required(0)?, &trace_options(args, 1)?)
            },
        )
        .names(AddressParams::NoAddress)
        .weighs(20),
        heavy(
            "debug_traceBlockByNumber",
            &["blockNumber", "config"],
            1,
            cost,
            |node, tx, args| {
                let at = match args.required(0)? {
                    // quarry has no pending block: its head stands in, as elsewhere.
                    BlockTag::Pending => BlockTag::Latest,
                    tag => tag,
                };
                node.trace_block(tx, BlockAt::Tag(at), &trace_options(args, 1)?)
            },
        )
        .names(AddressParams::NoAddress)
        .weighs(50),
        heavy(
            "debug_traceBlockByHash",
            &["blockHash", "config"],
            1,
            cost,
            |node, tx, args| {
                node.trace_block(
                    tx,
                    BlockAt::Hash(args.required(0)?),
                    &trace_options(args, 1)?,
                )
            },
        )
        .names(AddressParams::NoAddress)
        .weighs(50),
        heavy(
            "debug_traceBlock",
            &["blockRlp", "config"],
            1,
            cost,
            |node, tx, args| {
                let BlockRlp(rlp) = args.required(0)?;
                node.trace_raw_block(tx, &rlp, &trace_options(args, 1)?)
            },
        )
        .names(AddressParams::NoAddress)
        .weighs(50),
        heavy(
            "debug_traceCall",
            &["transaction", "block", "config"],
            1,
            cost,
            |node, tx, args| {
                let call: Call = args.required(0)?;
                let at = block_or_latest(args, 1)?;
                let (options, state, block) = match args.optional::<TraceCallConfig>(2)? {
                    Some(config) => (config.options.with_timeout()?, config.state, config.block),
                    None => Default::default(),
                };
                node.trace_call(tx, &call, at, &state, &block, &options)
            },
        )
        .names(AddressParams::CallTo(0))
        .weighs(20),
    ]
}

/// The trace_* methods (OpenEthereum's trace API, in reth's shapes): heavy, on the calls' pool
/// like debug_trace*; trace_filter within the eth_getLogs time limit.
fn parity_traces() -> Vec<MethodSpec> {
    let cost = (Pool::Call, Limit::Call);
    let types = |args: &Args, position| args.required::<TraceTypesArg>(position).map(|t| t.0);
    vec![
        heavy(
            "trace_transaction",
            &["transactionHash"],
            1,
            cost,
            |node, tx, args| node.parity_transaction(tx, args.required(0)?),
        ).names(AddressParams::NoAddress).weighs(20),
        heavy(
            "trace_get",
            &["transactionHash", "indices"],
            2,
            cost,
            |node, tx, args| {
                let IndicesArg(indices) = args.required(1)?;
                node.parity_get(tx, args.required(0)?, &indices)
            },
        ).names(AddressParams::NoAddress).weighs(20),
        heavy("trace_block", &["block"], 1, cost, |node, tx, args| {
            node.parity_block(tx, block_at(args.required(0)?))
        }).names(AddressParams::NoAddress).weighs(50),
        heavy(
            "trace_replayTransaction",
            &["transactionHash", "traceTypes"],
            2,
            cost,
            move |node, tx, args| node.replay_transaction(tx, args.required(0)?, &types(args, 1)?),
        ).names(AddressParams::NoAddress).weighs(20),
        heavy(
            "trace_replayBlockTransactions",
            &["block", "traceTypes"],
            2,
            cost,
            move |node, tx, args| {
                node.replay_block(tx, block_at(args.required(0)?), &types(args, 1)?)
            },
        ).names(AddressParams::NoAddress).weighs(50),
        heavy(
            "trace_call",
            &[
                "transaction",
                "traceTypes",
                "block",
                "stateOverrides",
                "blockOverrides",
            ],
            2,
            cost,
            move |node, tx, args| {
                let call: Call = args.required(0)?;
                let overrides = args
                    .optional::<Overrides>(3)?
                    .map(|o| o.0)
                    .unwrap_or_default();
                let block = match args.optional::<crate::call_params::BlockOverridesArg>(4)? {
                    Some(arg) => match arg.extra {
                        Some(field) => {
                            return Err(RpcError::InvalidParams(format!(
                                "invalid argument 4: block override \"{field}\" is not supported for this RPC method"
                            )));
                        }
                        None => arg.overrides,
                    },
                    None => BlockOverrides::default(),
                };
                let at = block_or_latest(args, 2)?;
                node.parity_call(tx, (&call, types(args, 1)?), at, &overrides, &block)
            },
        ).names(AddressParams::CallTo(0)).weighs(20),
        heavy(
            "trace_callMany",
            &["calls", "block"],
            1,
            cost,
            |node, tx, args| {
                let CallsArg(calls) = args.required(0)?;
                let calls = calls
                    .iter()
                    .map(|(call, types)| (call, types.clone()))
                    .collect();
                let none = (StateOverrides::default(), Default::default());
                node.parity_call_many(tx, calls, block_or_latest(args, 1)?, &none.0, &none.1)
            },
        ).names(AddressParams::CallsTo).weighs(50),
        heavy(
            "trace_rawTransaction",
            &["data", "traceTypes", "block"],
            2,
            cost,
            move |node, tx, args| {
                let raw: Bytes = args.required(0)?;
                node.parity_raw_transaction(tx, &raw, &types(args, 1)?, block_or_latest(args, 2)?)
            },
        ).names(AddressParams::RawTransactionTo(0)).weighs(20),
        heavy(
            "trace_filter",
            &["filter"],
            1,
            (Pool::Call, Limit::Logs),
            |node, tx, args| {
                let FilterArg(filter) = args.required(0)?;
                node.parity_filter(tx, &filter)
            },
        ).names(AddressParams::TraceFilter).weighs(50),
    ]
}

/// A method without parameters that reads a snapshot (the head, fees, sync status).
fn chain_fact<R, F>(name: &'static str, read: F) -> MethodSpec
where
    R: Serialize,
    F: Fn(&Node, &Snapshot) -> Result<R> + Send + Sync + 'static,
{
    snapshot(name, &[], 0, move |node, tx, _| read(node, tx)).names(AddressParams::NoAddress)
}

/// Chain facts, fees and sync status.
fn chain() -> Vec<MethodSpec> {
    const FEES: &[&str] = &["blockCount", "newestBlock", "rewardPercentiles"];
    vec![
        cached("eth_blockNumber", &[], 0, |node, reads, _| {
            node.block_number(reads)
        })
        .names(AddressParams::NoAddress),
        snapshot("eth_feeHistory", FEES, 2, |node, tx, args| {
            let params::BlockCount(count) = args.required(0)?;
            let percentiles = args
                .optional::<params::Percentiles>(2)?
                .map(|p| p.0)
                .unwrap_or_default();
            node.fee_history(tx, count, args.required(1)?, &percentiles)
        })
        .names(AddressParams::NoAddress),
        chain_fact("eth_maxPriorityFeePerGas", Node::suggest_tip),
        chain_fact("eth_gasPrice", Node::gas_price),
        chain_fact("eth_blobBaseFee", Node::blob_base_fee),
        chain_fact("eth_baseFee", Node::next_base_fee),
        chain_fact("eth_syncing", Node::syncing),
        chain_fact("eth_config", Node::eth_config),
        chain_fact("eth_capabilities", Node::capabilities),
        chain_fact("rollup_getInfo", Node::rollup_info),
        // The chain id is fixed for the database.
        inline("eth_chainId", |node| node.chain_id()).names(AddressParams::NoAddress),
        inline("net_version", |node| {
            Ok(node.chain_id()?.to::<u64>().to_string())
        })
        .names(AddressParams::NoAddress),
        chain_fact("net_peerCount", Node::peer_count),
        constant("net_listening", &[], 0, |_| Ok(true)).names(AddressParams::NoAddress),
        // A query node holds no keys.
        constant("eth_accounts", &[], 0, |_| Ok(Vec::<Address>::new()))
            .names(AddressParams::NoAddress),
        constant("web3_sha3", &["data"], 1, |args| {
            Ok(keccak256(args.required::<Bytes>(0)?))
        })
        .names(AddressParams::NoAddress),
        // Reads nothing: the cheapest call, the benchmarks' ceiling.
        constant("web3_clientVersion", &[], 0, |_| {
            Ok(concat!("quarry/v", env!("CARGO_PKG_VERSION")))
        })
        .names(AddressParams::NoAddress),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_method_is_declared_once_with_its_mandatory_parameters_named() {
        let specs = methods();
        let mut names = HashSet::new();
        for spec in &specs {
            assert!(names.insert(spec.name), "{} declared twice", spec.name);
            assert!(spec.required <= spec.params.len(), "{}", spec.name);
        }
        assert_eq!(specs.len(), 67);
    }

    #[test]
    fn heavy_methods_run_on_the_pool_their_cost_names() {
        let cost = |name: &str| {
            methods()
                .into_iter()
                .find(|spec| spec.name == name)
                .map(|spec| spec.cost())
        };
        let calls = Cost::Heavy {
            pool: Pool::Call,
            limit: Limit::Call,
        };
        assert_eq!(cost("eth_call"), Some(calls));
        assert_eq!(cost("debug_traceCall"), Some(calls));
        for name in [
            "trace_block",
            "trace_call",
            "trace_replayTransaction",
            "trace_get",
        ] {
            assert_eq!(cost(name), Some(calls), "{name}");
        }
        assert_eq!(
            cost("trace_filter"),
            Some(Cost::Heavy {
                pool: Pool::Call,
                limit: Limit::Logs
            })
        );
        assert_eq!(
            cost("eth_getLogs"),
            Some(Cost::Heavy {
                pool: Pool::Read,
                limit: Limit::Logs
            })
        );
        assert_eq!(
            cost("eth_getProof"),
            Some(Cost::Heavy {
                pool: Pool::Read,
                limit: Limit::Call
            })
        );
        assert_eq!(cost("eth_getBlockByNumber"), Some(Cost::Cached));
        assert_eq!(cost("eth_getBalance"), Some(Cost::Snapshot));
        assert_eq!(cost("eth_chainId"), Some(Cost::Inline));
    }
}
