//! What goes into each block: the scripted transactions that give the dev chain every feature
//! its tests look for, and the seeded mix that fills the rest (and makes the scale chains).

use crate::{
    CHAIN_ID, PRAGUE_BLOCK, Result,
    accounts::{DevAccounts, Rng},
    contracts::{Reverter, Store, Token, reverter_creation, store_creation, token_creation},
};
use alloy_consensus::{
    TxEip1559, TxEip2930, TxEip4844, TxEip4844Variant, TxEip7702, TxEnvelope, TxLegacy,
    TypedTransaction,
};
use alloy_eips::{
    eip2930::{AccessList, AccessListItem},
    eip4844::DATA_GAS_PER_BLOB,
    eip7702::Authorization,
};
use alloy_primitives::{Address, B256, Bytes, TxKind, U256, keccak256};
use alloy_sol_types::SolCall;
use rayon::prelude::*;

const GWEI: u128 = 1_000_000_000;
/// Tokens each dev account receives in block 2.
const AIRDROP: u64 = 1_000_000_000_000;
/// Holders per airdrop transaction, so each stays well under the block gas limit.
const AIRDROP_CHUNK: usize = 100;

/// The contracts account 0 deploys in block 1, in this order (nonces 0..4).
#[derive(Debug, Clone, Copy)]
pub struct Contracts {
    pub token: Address,
    pub store: Address,
    pub reverter: Address,
    /// A second Token that the mix rarely touches: a rare log address for eth_getLogs.
    pub rare_token: Address,
}

impl Contracts {
    pub fn of(deployer: Address) -> Self {
        Self {
            token: deployer.create(0),
            store: deployer.create(1),
            reverter: deployer.create(2),
            rare_token: deployer.create(3),
        }
    }
}

/// One transaction before signing: who signs it and what it is.
struct Unsigned {
    signer: usize,
    tx: TypedTransaction,
}

/// Chooses every block's transactions, tracking nonces so that each one is valid.
pub struct Planner<'a> {
    accounts: &'a DevAccounts,
    txs_per_block: usize,
    rng: Rng,
    nonces: Vec<u64>,
    contracts: Contracts,
    fresh_addresses: u64,
    next_sender: usize,
}

/// The fee context of the block being planned, and the forks that allow its scripted
/// transaction types: blob transactions from Cancun on, EIP-7702 ones from Prague on (a
/// `Forks::Pow` chain reaches neither).
#[derive(Debug, Clone, Copy)]
pub struct Fees {
    pub base_fee: u64,
    pub cancun: bool,
    pub prague: bool,
}

impl<'a> Planner<'a> {
    pub fn new(accounts: &'a DevAccounts, txs_per_block: usize, seed: u64) -> Self {
        Self {
            accounts,
            txs_per_block,
            rng: Rng::new(seed),
            nonces: vec![0; accounts.len()],
            contracts: Contracts::of(accounts.address(0)),
            fresh_addresses: 0,
            next_sender: 1,
        }
    }

    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// From here on, draws from a second random stream, derived from the chain's `seed` and
    /// `fork_seed`, so the blocks planned next form a competing branch of the chain planned so
    /// far. The nonces, the sender rotation and the fresh addresses go on where they were.
    pub fn fork(&mut self, seed: u64, fork_seed: u64) {
        let hash = keccak256(
            [
                b"quarry devchain fork".as_slice(),
                &seed.to_be_bytes(),
                &fork_seed.to_be_bytes(),
            ]
            .concat(),
        );
        let mut state = [0u8; 8];
        state.copy_from_slice(&hash[..8]);
        self.rng = Rng::new(u64::from_be_bytes(state));
    }

    /// The signed transactions of block `number`, with their senders.
    pub fn block(&mut self, number: u64, fees: Fees) -> Result<(Vec<TxEnvelope>, Vec<Address>)> {
        let mut unsigned = Vec::new();
        match number {
            1 => self.deployments(&mut unsigned, fees),
            2 => self.first_uses(&mut unsigned, fees),
            _ => {}
        }
        if number == PRAGUE_BLOCK && fees.prague {
            self.delegation(&mut unsigned, fees)?;
        }
        if fees.cancun {
            self.blob(&mut unsigned, fees);
        }
        if number > 2 {
            for _ in 0..self.txs_per_block {
                self.mix(&mut unsigned, fees);
            }
        }
        let accounts = self.accounts;
        let signed = unsigned
            .into_par_iter()
            .map(|u| {
                let sender = accounts.address(u.signer);
                accounts.sign(u.signer, u.tx).map(|tx| (tx, sender))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(signed.into_iter().unzip())
    }

    /// Block 1: the contracts, each deployed with a different transaction type, and a legacy
    /// transfer without replay protection. The contracts are compiled for London (no PUSH0),
    /// so a chain that never leaves proof of work deploys them too.
    fn deployments(&mut self, out: &mut Vec<Unsigned>, fees: Fees) {
        let supply = U256::from(AIRDROP) * U256::from(1_000_000u64);
        let token = token_creation(supply);
        let legacy = self.legacy(
            0,
            TxKind::Create,
            U256::ZERO,
            token.clone(),
            1_500_000,
            fees,
        );
        out.push(legacy);
        let store = TxEip2930 {
            chain_id: CHAIN_ID,
            nonce: self.take_nonce(0),
            gas_price: gas_price(fees),
            gas_limit: 400_000,
            to: TxKind::Create,
            value: U256::ZERO,
            access_list: AccessList::default(),
            input: store_creation(),
        };
        out.push(Unsigned {
            signer: 0,
            tx: store.into(),
        });
        let reverter = self.eip1559(
            0,
            TxKind::Create,
            U256::ZERO,
            reverter_creation(),
            800_000,
            fees,
        );
        out.push(reverter);
        let rare = self.eip1559(0, TxKind::Create, U256::ZERO, token, 1_500_000, fees);
        out.push(rare);
        let to = TxKind::Call(self.accounts.address(2));
        let mut unprotected = self.legacy(1, to, U256::from(GWEI), Bytes::new(), 21_000, fees);
        if let TypedTransaction::Legacy(tx) = &mut unprotected.tx {
            tx.chain_id = None;
        }
        out.push(unprotected);
    }

    /// Block 2: tokens for every dev account, the first events, storage writes and a failing
    /// transaction.
    fn first_uses(&mut self, out: &mut Vec<Unsigned>, fees: Fees) {
        let c = self.contracts;
        let holders: Vec<Address> = self.accounts.addresses().skip(1).collect();
        for chunk in holders.chunks(AIRDROP_CHUNK) {
            let call = Token::airdropCall {
                holders: chunk.to_vec(),
                value: U256::from(AIRDROP),
            };
            let gas = 60_000 + 40_000 * chunk.len() as u64;
            out.push(self.eip1559(
                0,
                TxKind::Call(c.token),
                U256::ZERO,
                call.abi_encode().into(),
                gas,
                fees,
            ));
        }
        let a1 = self.accounts.address(1);
        let a2 = self.accounts.address(2);
        let calls: Vec<(usize, Address, Bytes, u64)> = vec![
            (
                0,
                c.store,
                Store::setCall {
                    value: U256::from(42),
                }
                .abi_encode()
                .into(),
                60_000,
            ),
            (
                0,
                c.store,
                Store::putCall {
                    key: a1,
                    value: U256::from(1000),
                }
                .abi_encode()
                .into(),
                80_000,
            ),
            (
                0,
                c.store,
                Store::putCall {
                    key: a2,
                    value: U256::from(2000),
                }
                .abi_encode()
                .into(),
                80_000,
            ),
            (
                0,
                c.store,
                Store::noteCall {
                    text: B256::left_padding_from(b"hello quarry"),
                }
                .abi_encode()
                .into(),
                60_000,
            ),
            (
                0,
                c.token,
                Token::approveCall {
                    spender: a2,
                    value: U256::from(500),
                }
                .abi_encode()
                .into(),
                80_000,
            ),
            (
                0,
                c.reverter,
                Reverter::attemptCall {}.abi_encode().into(),
                80_000,
            ),
            (
                0,
                c.rare_token,
                Token::transferCall {
                    to: a1,
                    value: U256::from(7),
                }
                .abi_encode()
                .into(),
                80_000,
            ),
        ];
        for (signer, to, input, gas) in calls {
            out.push(self.eip1559(signer, TxKind::Call(to), U256::ZERO, input, gas, fees));
        }
    }

    /// The first Prague block: account 3 delegates its code to Store (EIP-7702) in a
    /// transaction that account 4 sends and that calls `set` on account 3 itself.
    fn delegation(&mut self, out: &mut Vec<Unsigned>, fees: Fees) -> Result<()> {
        const AUTHORITY: usize = 3;
        const SPONSOR: usize = 4;
        let authorization = Authorization {
            chain_id: U256::from(CHAIN_ID),
            address: self.contracts.store,
            nonce: self.nonces[AUTHORITY],
        };
        let signed = self.accounts.authorize(AUTHORITY, authorization)?;
        self.nonces[AUTHORITY] += 1;
        let tx = TxEip7702 {
            chain_id: CHAIN_ID,
            nonce: self.take_nonce(SPONSOR),
            gas_limit: 120_000,
            max_fee_per_gas: max_fee(fees),
            max_priority_fee_per_gas: GWEI,
            to: self.accounts.address(AUTHORITY),
            value: U256::ZERO,
            access_list: AccessList::default(),
            authorization_list: vec![signed],
            input: Store::setCall {
                value: U256::from(7702),
            }
            .abi_encode()
            .into(),
        };
        out.push(Unsigned {
            signer: SPONSOR,
            tx: tx.into(),
        });
        Ok(())
    }

    /// One blob transaction (one or two blobs, versioned hashes only) per Cancun block.
    fn blob(&mut self, out: &mut Vec<Unsigned>, fees: Fees) {
        let signer = self.sender();
        let blobs = 1 + self.rng.below(2) as usize;
        let hashes = (0..blobs)
            .map(|_| {
                let mut hash = self.rng.b256();
                hash.0[0] = alloy_eips::eip4844::VERSIONED_HASH_VERSION_KZG;
                hash
            })
            .collect();
        let tx = TxEip4844 {
            chain_id: CHAIN_ID,
            nonce: self.take_nonce(signer),
            gas_limit: 21_000,
            max_fee_per_gas: max_fee(fees),
            max_priority_fee_per_gas: GWEI,
            to: self.fresh_address(),
            value: U256::from(1),
            access_list: AccessList::default(),
            blob_versioned_hashes: hashes,
            max_fee_per_blob_gas: 10 * GWEI,
            input: Bytes::new(),
        };
        debug_assert!(tx.blob_versioned_hashes.len() as u64 * DATA_GAS_PER_BLOB > 0);
        out.push(Unsigned {
            signer,
            tx: TypedTransaction::Eip4844(TxEip4844Variant::TxEip4844(tx)),
        });
    }

    /// One transaction of the realistic mix: transfers, token traffic with logs, storage
    /// writes that grow the state, contract creations and a few reverts. Per thousand: 0.1 rare
    /// token transfers, 49 ETH transfers, 50 token transfers, 10 three-way airdrops, 200
    /// approvals, 340 mapping writes (each with a `Stored` event), 20 `set`, 290 anonymous
    /// notes, 15 failing `attempt()`, 10 failing `failRequire`, 15 Store deployments: about 0.91
    /// logs a transaction, 8 Transfer logs in a block of 100 (a common topic whose 1,000-block
    /// range stays under eth_getLogs' 10,000 results).
    fn mix(&mut self, out: &mut Vec<Unsigned>, fees: Fees) {
        let c = self.contracts;
        let mut signer = self.sender();
        // One transaction in ten thousand goes to the rare token.
        let roll = match self.rng.below(10) {
            0 => self.rng.below(1000),
            _ => 1 + self.rng.below(999),
        };
        let amount = U256::from(1 + self.rng.below(1_000_000));
        let (to, input, gas): (TxKind, Bytes, u64) = match roll {
            // A rare token transfer, from the deployer, who holds the rare supply.
            0 => {
                signer = 0;
                self.token_transfer(c.rare_token, amount)
            }
            1..50 => {
                let to = self.holder();
                let value = U256::from(self.rng.below(GWEI as u64));
                let tx = match roll % 3 {
                    0 => self.legacy(signer, TxKind::Call(to), value, Bytes::new(), 21_000, fees),
                    1 => self.access_list_transfer(signer, to, value, fees),
                    _ => self.eip1559(signer, TxKind::Call(to), value, Bytes::new(), 21_000, fees),
                };
                out.push(tx);
                return;
            }
            50..100 => self.token_transfer(c.token, amount),
            100..110 => (
                TxKind::Call(c.token),
                Token::airdropCall {
                    holders: vec![self.holder(), self.holder(), self.holder()],
                    value: U256::from(1 + self.rng.below(1000)),
                }
                .abi_encode()
                .into(),
                160_000,
            ),
            110..310 => (
                TxKind::Call(c.token),
                Token::approveCall {
                    spender: self.holder(),
                    value: amount,
                }
                .abi_encode()
                .into(),
                80_000,
            ),
            310..650 => (
                TxKind::Call(c.store),
                Store::putCall {
                    key: self.holder(),
                    value: amount,
                }
                .abi_encode()
                .into(),
                80_000,
            ),
            650..670 => (
                TxKind::Call(c.store),
                Store::setCall { value: amount }.abi_encode().into(),
                60_000,
            ),
            670..960 => (
                TxKind::Call(c.store),
                Store::noteCall {
                    text: self.rng.b256(),
                }
                .abi_encode()
                .into(),
                60_000,
            ),
            960..975 => (
                TxKind::Call(c.reverter),
                Reverter::attemptCall {}.abi_encode().into(),
                80_000,
            ),
            975..985 => (
                TxKind::Call(c.reverter),
                Reverter::failRequireCall {
                    x: U256::from(self.rng.below(10)),
                }
                .abi_encode()
                .into(),
                60_000,
            ),
            _ => (TxKind::Create, store_creation(), 400_000),
        };
        out.push(self.eip1559(signer, to, U256::ZERO, input, gas, fees));
    }

    /// A call of `token.transfer(holder, amount)`: its target, input and gas limit.
    fn token_transfer(&mut self, token: Address, amount: U256) -> (TxKind, Bytes, u64) {
        let call = Token::transferCall {
            to: self.holder(),
            value: amount,
        };
        (TxKind::Call(token), call.abi_encode().into(), 80_000)
    }

    /// Senders rotate over the dev accounts other than the deployer.
    fn sender(&mut self) -> usize {
        let sender = self.next_sender;
        self.next_sender = if sender + 1 >= self.accounts.len() {
            1
        } else {
            sender + 1
        };
        sender
    }

    /// A recipient: a dev account, or (about a third of the time) an address never seen
    /// before, so that the state keeps growing.
    fn holder(&mut self) -> Address {
        if self.rng.below(3) == 0 {
            self.fresh_address()
        } else {
            let index = self.rng.below(self.accounts.len() as u64) as usize;
            self.accounts.address(index)
        }
    }

    fn fresh_address(&mut self) -> Address {
        self.fresh_addresses += 1;
        let seed = self.rng.next_u64();
        let hash = keccak256([seed.to_be_bytes(), self.fresh_addresses.to_be_bytes()].concat());
        Address::from_slice(&hash[12..])
    }

    fn take_nonce(&mut self, signer: usize) -> u64 {
        let nonce = self.nonces[signer];
        self.nonces[signer] += 1;
        nonce
    }

    fn legacy(
        &mut self,
        signer: usize,
        to: TxKind,
        value: U256,
        input: Bytes,
        gas: u64,
        fees: Fees,
    ) -> Unsigned {
        let tx = TxLegacy {
            chain_id: Some(CHAIN_ID),
            nonce: self.take_nonce(signer),
            gas_price: gas_price(fees),
            gas_limit: gas,
            to,
            value,
            input,
        };
        Unsigned {
            signer,
            tx: tx.into(),
        }
    }

    fn access_list_transfer(
        &mut self,
        signer: usize,
        to: Address,
        value: U256,
        fees: Fees,
    ) -> Unsigned {
        let tx = TxEip2930 {
            chain_id: CHAIN_ID,
            nonce: self.take_nonce(signer),
            gas_price: gas_price(fees),
            gas_limit: 30_000,
            to: TxKind::Call(to),
            value,
            access_list: AccessList(vec![AccessListItem {
                address: to,
                storage_keys: vec![B256::ZERO],
            }]),
            input: Bytes::new(),
        };
        Unsigned {
            signer,
            tx: tx.into(),
        }
    }

    fn eip1559(
        &mut self,
        signer: usize,
        to: TxKind,
        value: U256,
        input: Bytes,
        gas: u64,
        fees: Fees,
    ) -> Unsigned {
        let tx = TxEip1559 {
            chain_id: CHAIN_ID,
            nonce: self.take_nonce(signer),
            gas_limit: gas,
            max_fee_per_gas: max_fee(fees),
            max_priority_fee_per_gas: GWEI,
            to,
            value,
            access_list: AccessList::default(),
            input,
        };
        Unsigned {
            signer,
            tx: tx.into(),
        }
    }
}

/// Twice the base fee plus a tip: stays valid even if the base fee rises for a few blocks.
fn max_fee(fees: Fees) -> u128 {
    2 * fees.base_fee as u128 + GWEI
}

fn gas_price(fees: Fees) -> u128 {
    max_fee(fees)
}
