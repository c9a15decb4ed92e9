//! Values stored in the tables and their byte encodings.

use crate::{Error, Result};
use alloy_primitives::{Address, B256, Log, U256};
use alloy_trie::{BranchNodeCompact, EMPTY_ROOT_HASH, KECCAK_EMPTY, TrieAccount, TrieMask};

/// An account as stored in `PlainAccounts`, `AccountChangeSets` and `AccountHistory` (see
/// [`encode_account`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoredAccount {
    pub nonce: u64,
    pub balance: U256,
    pub code_hash: B256,
}

impl From<&TrieAccount> for StoredAccount {
    /// A trie leaf's account fields, without its storage root.
    fn from(account: &TrieAccount) -> Self {
        Self {
            nonce: account.nonce,
            balance: account.balance,
            code_hash: account.code_hash,
        }
    }
}

impl StoredAccount {
    /// The fixed layout older datadirs hold: nonce (8) ‖ balance (32) ‖ code hash (32).
    pub const FIXED_LEN: usize = 72;

    pub fn encode(&self) -> Vec<u8> {
        encode_account(self, None, Self::FIXED_LEN)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let (account, storage_root) = decode_account(bytes, Self::FIXED_LEN)?;
        if storage_root.is_some() {
            return Err(Error::Corrupt(format!(
                "account value of {} bytes holds a storage root",
                bytes.len()
            )));
        }
        Ok(account)
    }
}

/// A storage value as stored: big-endian without leading zeros (zero: empty). Older datadirs
/// hold all 32 bytes, which read the same.
pub(crate) struct SlotValue {
    bytes: [u8; 32],
    start: usize,
}

impl SlotValue {
    pub(crate) fn new(value: U256) -> Self {
        let bytes = value.to_be_bytes::<32>();
        let start = 32 - without_leading_zeros(&bytes).len();
        Self { bytes, start }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

/// A big-endian number's bytes from its first non-zero one (none for zero).
fn without_leading_zeros(bytes: &[u8]) -> &[u8] {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    &bytes[zeros..]
}

/// Header bits of a compact account value: its first byte holds the nonce's length in bytes
/// (0-8) in the low four bits and these flags.
const HAS_CODE_HASH: u8 = 0x10;
const HAS_STORAGE_ROOT: u8 = 0x20;
/// In an account changeset entry only: the entry does not record the storage root before its
/// block (see [`StorageRootBefore::NotRecorded`]).
const ROOT_NOT_RECORDED: u8 = 0x40;

/// What an account changeset entry records of the account's storage root before its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageRootBefore {
    /// The root; `None`: the empty trie's.
    Known(Option<B256>),
    /// Nothing: an import that took a coarse window's state root once, at its end, knows an
    /// account's storage root only at the window's start, which its first change there
    /// records. No proof reads the others (proofs read the trie at window ends); a reader of
    /// the account's leaf at a block inside the window computes the root from the trie.
    NotRecorded,
}

/// An account changeset entry's value: the account before the block, in the compact layout of
/// [`encode_account`], with what it records of the storage root then.
pub(crate) fn encode_account_before(account: &StoredAccount, root: StorageRootBefore) -> Vec<u8> {
    match root {
        StorageRootBefore::Known(root) => encode_account(account, root, StoredAccount::FIXED_LEN),
        StorageRootBefore::NotRecorded => {
            let mut out = encode_account(account, None, StoredAccount::FIXED_LEN);
            out[0] |= ROOT_NOT_RECORDED;
            out
        }
    }
}

/// Reads an account changeset entry's value of either layout (see [`encode_account_before`]).
pub(crate) fn decode_account_before(bytes: &[u8]) -> Result<(StoredAccount, StorageRootBefore)> {
    let fixed_len = StoredAccount::FIXED_LEN;
    // Only compact values have a header byte; a fixed one is exactly `fixed_len` long.
    match bytes.first() {
        Some(header) if bytes.len() != fixed_len && header & ROOT_NOT_RECORDED != 0 => {
            let mut unflagged = bytes.to_vec();
            unflagged[0] &= !ROOT_NOT_RECORDED;
            let (account, root) = decode_account(&unflagged, fixed_len)?;
            if root.is_some() {
                return Err(Error::Corrupt(format!(
                    "account changeset value of {} bytes holds a storage root it says it does not record",
                    bytes.len()
                )));
            }
            Ok((account, StorageRootBefore::NotRecorded))
        }
        _ => {
            let (account, root) = decode_account(bytes, fixed_len)?;
            Ok((account, StorageRootBefore::Known(root)))
        }
    }
}

/// An account value, compact: a header byte (the nonce's length and the flags above), the
/// balance's length (0-32), then nonce and balance big-endian without leading zeros, the code
/// hash unless it is the empty code's, and the storage root (trie leaves only) unless it is
/// the empty trie's. An account without code takes about 12 bytes instead of 72 or 104.
/// Older datadirs hold a fixed layout of `fixed_len` bytes (the fields in full, in that
/// order); a compact value of exactly that length gets a zero byte more, so the length tells
/// the two apart.
pub(crate) fn encode_account(
    account: &StoredAccount,
    storage_root: Option<B256>,
    fixed_len: usize,
) -> Vec<u8> {
    let nonce = account.nonce.to_be_bytes();
    let nonce = without_leading_zeros(&nonce);
    let balance = SlotValue::new(account.balance);
    let balance = balance.as_slice();
    let code_hash = (account.code_hash != KECCAK_EMPTY).then_some(account.code_hash);
    let storage_root = storage_root.filter(|root| *root != EMPTY_ROOT_HASH);
    let mut header = nonce.len() as u8;
    if code_hash.is_some() {
        header |= HAS_CODE_HASH;
    }
    if storage_root.is_some() {
        header |= HAS_STORAGE_ROOT;
    }
    let mut out = Vec::with_capacity(2 + nonce.len() + balance.len() + 65);
    out.extend_from_slice(&[header, balance.len() as u8]);
    out.extend_from_slice(nonce);
    out.extend_from_slice(balance);
    for hash in [code_hash, storage_root].into_iter().flatten() {
        out.extend_from_slice(hash.as_slice());
    }
    if out.len() == fixed_len {
        out.push(0);
    }
    out
}

/// Reads an account value of either layout (see [`encode_account`]): the account and the
/// storage root it holds, if any (`None` in a compact value: the empty trie's).
pub(crate) fn decode_account(
    bytes: &[u8],
    fixed_len: usize,
) -> Result<(StoredAccount, Option<B256>)> {
    let corrupt = || Error::Corrupt(format!("malformed account value of {} bytes", bytes.len()));
    if bytes.len() == fixed_len {
        let mut nonce = [0u8; 8];
        nonce.copy_from_slice(bytes.get(..8).ok_or_else(corrupt)?);
        let account = StoredAccount {
            nonce: u64::from_be_bytes(nonce),
            balance: U256::from_be_slice(bytes.get(8..40).ok_or_else(corrupt)?),
            code_hash: B256::from_slice(bytes.get(40..72).ok_or_else(corrupt)?),
        };
        let storage_root = bytes.get(72..).filter(|root| root.len() == 32);
        return Ok((account, storage_root.map(B256::from_slice)));
    }
    let (&header, rest) = bytes.split_first().ok_or_else(corrupt)?;
    let (&balance_len, rest) = rest.split_first().ok_or_else(corrupt)?;
    let nonce_len = usize::from(header & 0x0f);
    if nonce_len > 8 || balance_len > 32 || header & 0xc0 != 0 {
        return Err(corrupt());
    }
    let (nonce, rest) = rest.split_at_checked(nonce_len).ok_or_else(corrupt)?;
    let (balance, mut rest) = rest
        .split_at_checked(usize::from(balance_len))
        .ok_or_else(corrupt)?;
    let mut take_hash = |present: bool| -> Result<Option<B256>> {
        if !present {
            return Ok(None);
        }
        let (hash, after) = rest.split_at_checked(32).ok_or_else(corrupt)?;
        rest = after;
        Ok(Some(B256::from_slice(hash)))
    };
    let code_hash = take_hash(header & HAS_CODE_HASH != 0)?;
    let storage_root = take_hash(header & HAS_STORAGE_ROOT != 0)?;
    // Only a value the length of the fixed layout carries a pad byte.
    match rest {
        [] if bytes.len() != fixed_len => {}
        [0] if bytes.len() == fixed_len + 1 => {}
        _ => return Err(corrupt()),
    }
    let mut nonce_bytes = [0u8; 8];
    nonce_bytes[8 - nonce_len..].copy_from_slice(nonce);
    let account = StoredAccount {
        nonce: u64::from_be_bytes(nonce_bytes),
        balance: U256::from_be_slice(balance),
        code_hash: code_hash.unwrap_or(KECCAK_EMPTY),
    };
    Ok((account, storage_root))
}

/// What a receipt says about its transaction's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptOutcome {
    /// Byzantium and later: success (true) or failure.
    Status(bool),
    /// Before Byzantium: the state root after the transaction.
    PostState(B256),
}

/// A receipt with everything the RPC shapes need that the block does not already hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredReceipt {
    pub tx_type: u8,
    pub outcome: ReceiptOutcome,
    pub cumulative_gas_used: u64,
    pub gas_used: u64,
    pub effective_gas_price: u128,
    pub contract_address: Option<Address>,
    /// Blob gas used and blob gas price, for blob transactions only.
    pub blob_gas: Option<(u64, u128)>,
    pub logs: Vec<Log>,
}

/// Where a transaction sits in the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxLocation {
    pub block_number: u64,
    pub index: u32,
}

impl TxLocation {
    pub fn encode(&self) -> [u8; 12] {
        let mut out = [0u8; 12];
        out[..8].copy_from_slice(&self.block_number.to_be_bytes());
        out[8..].copy_from_slice(&self.index.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != 12 {
            return Err(Error::Corrupt(format!(
                "tx location has {} bytes",
                bytes.len()
            )));
        }
        Ok(Self {
            block_number: be_u64(&bytes[..8])?,
            index: u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]),
        })
    }
}

pub(crate) fn be_u64(bytes: &[u8]) -> Result<u64> {
    let arr: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Error::Corrupt(format!("expected 8-byte number, found {}", bytes.len())))?;
    Ok(u64::from_be_bytes(arr))
}

/// `HashedAccounts` value: the account's fields and storage root (see
/// [`crate::models::encode_account`]; older datadirs: `StoredAccount`'s fixed 72 bytes, then
/// the storage root).
const TRIE_ACCOUNT_FIXED_LEN: usize = StoredAccount::FIXED_LEN + 32;

pub(crate) fn encode_trie_account(account: &TrieAccount) -> Vec<u8> {
    let fields = StoredAccount::from(account);
    encode_account(&fields, Some(account.storage_root), TRIE_ACCOUNT_FIXED_LEN)
}

pub(crate) fn decode_trie_account(bytes: &[u8]) -> Result<TrieAccount> {
    let (fields, storage_root) = decode_account(bytes, TRIE_ACCOUNT_FIXED_LEN)?;
    Ok(TrieAccount {
        nonce: fields.nonce,
        balance: fields.balance,
        storage_root: storage_root.unwrap_or(EMPTY_ROOT_HASH),
        code_hash: fields.code_hash,
    })
}

/// `AccountsTrie` / `StoragesTrie` value: state, tree and hash masks (u16 BE each), then the
/// hashes of the children in the hash mask, then the root hash for the node at the empty path.
pub(crate) fn encode_branch(node: &BranchNodeCompact) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + 32 * (node.hashes.len() + 1));
    for mask in [node.state_mask, node.tree_mask, node.hash_mask] {
        out.extend_from_slice(&mask.get().to_be_bytes());
    }
    for hash in node.hashes.iter() {
        out.extend_from_slice(hash.as_slice());
    }
    if let Some(root) = node.root_hash {
        out.extend_from_slice(root.as_slice());
    }
    out
}

pub(crate) fn decode_branch(bytes: &[u8]) -> Result<BranchNodeCompact> {
    let corrupt = || Error::Corrupt(format!("malformed trie node of {} bytes", bytes.len()));
    if bytes.len() < 6 || !(bytes.len() - 6).is_multiple_of(32) {
        return Err(corrupt());
    }
    let mask = |at: usize| TrieMask::new(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
    let (state_mask, tree_mask, hash_mask) = (mask(0), mask(2), mask(4));
    let count = hash_mask.count_ones() as usize;
    let stored = (bytes.len() - 6) / 32;
    let root_hash = match stored.checked_sub(count) {
        Some(0) => None,
        Some(1) => Some(B256::from_slice(&bytes[bytes.len() - 32..])),
        _ => return Err(corrupt()),
    };
    if !tree_mask.is_subset_of(state_mask) || !hash_mask.is_subset_of(state_mask) {
        return Err(corrupt());
    }
    let hashes = bytes[6..6 + 32 * count]
        .chunks_exact(32)
        .map(B256::from_slice)
        .collect();
    Ok(BranchNodeCompact::new(
        state_mask, tree_mask, hash_mask, hashes, root_hash,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::b256;

    #[test]
    fn account_round_trip() {
        let account = StoredAccount {
            nonce: 7,
            balance: U256::from(123456789u64),
            code_hash: b256!("0x1111111111111111111111111111111111111111111111111111111111111111"),
        };
        assert_eq!(StoredAccount::decode(&account.encode()).unwrap(), account);
        assert!(StoredAccount::decode(&[0u8; 10]).is_err());
    }

    /// The fixed layout older datadirs hold.
    fn fixed(account: &StoredAccount, storage_root: Option<B256>) -> Vec<u8> {
        let mut out = account.nonce.to_be_bytes().to_vec();
        out.extend_from_slice(&account.balance.to_be_bytes::<32>());
        out.extend_from_slice(account.code_hash.as_slice());
        out.extend(storage_root.iter().flat_map(|root| root.0));
        out
    }

    #[test]
    fn accounts_are_compact_and_older_fixed_values_still_read() {
        let eoa = StoredAccount {
            nonce: 0x0102,
            balance: U256::from(0x0a0b0c_u64),
            code_hash: KECCAK_EMPTY,
        };
        assert_eq!(eoa.encode(), [2, 3, 1, 2, 0x0a, 0x0b, 0x0c]);
        assert_eq!(StoredAccount::decode(&eoa.encode()).unwrap(), eoa);
        assert_eq!(StoredAccount::decode(&fixed(&eoa, None)).unwrap(), eoa);
        assert_eq!(
            StoredAccount::decode(&StoredAccount::default().encode()).unwrap(),
            StoredAccount::default()
        );

        let root = B256::repeat_byte(0x33);
        for (account, root) in [
            (eoa, EMPTY_ROOT_HASH),
            (eoa, root),
            (StoredAccount::default(), root),
        ] {
            let compact = encode_account(&account, Some(root), 104);
            let read = decode_account(&compact, 104).unwrap();
            assert_eq!(read, (account, (root != EMPTY_ROOT_HASH).then_some(root)));
            let read = decode_account(&fixed(&account, Some(root)), 104).unwrap();
            assert_eq!(read, (account, Some(root)));
        }
    }

    #[test]
    fn slot_values_drop_leading_zeros_and_full_ones_read_the_same() {
        assert_eq!(SlotValue::new(U256::ZERO).as_slice(), &[] as &[u8]);
        let value = U256::from(0x0102_u64);
        assert_eq!(SlotValue::new(value).as_slice(), &[1, 2]);
        assert_eq!(U256::from_be_slice(SlotValue::new(value).as_slice()), value);
        assert_eq!(U256::from_be_slice(&value.to_be_bytes::<32>()), value);
        assert_eq!(SlotValue::new(U256::MAX).as_slice(), &[0xff; 32]);
    }

    #[test]
    fn a_compact_account_as_long_as_the_fixed_layout_is_padded() {
        // 2 header bytes, a 6-byte nonce, a 32-byte balance and a code hash: 72 bytes.
        let account = StoredAccount {
            nonce: 1 << 40,
            balance: U256::MAX,
            code_hash: B256::repeat_byte(0x44),
        };
        let encoded = account.encode();
        assert_eq!(encoded.len(), StoredAccount::FIXED_LEN + 1);
        assert_eq!(encoded.last(), Some(&0));
        assert_eq!(StoredAccount::decode(&encoded).unwrap(), account);
        // Read as the fixed layout, the same bytes without the pad are another account.
        assert_ne!(StoredAccount::decode(&encoded[..72]).unwrap(), account);
        // A pad anywhere else, a nonce longer than 8 bytes, unknown flags: all refused.
        let eoa = StoredAccount::default().encode();
        assert!(StoredAccount::decode(&[&eoa[..], &[0]].concat()).is_err());
        assert!(StoredAccount::decode(&[9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]).is_err());
        assert!(StoredAccount::decode(&[0x40, 0]).is_err());
        assert!(StoredAccount::decode(&[0x10, 0, 1]).is_err());
        // A storage root where an account value has none.
        let leaf = encode_account(&account, Some(B256::repeat_byte(1)), 104);
        assert!(StoredAccount::decode(&leaf).is_err());
    }

    /// A changeset entry reads back with what it records of the storage root, the padded
    /// length included; the flag is refused where a plain account is read, and beside a root.
    #[test]
    fn changeset_entries_say_whether_they_record_the_storage_root() {
        let padded = StoredAccount {
            nonce: 1 << 40,
            balance: U256::MAX,
            code_hash: B256::repeat_byte(0x44),
        };
        let root = B256::repeat_byte(0x33);
        for account in [StoredAccount::default(), padded] {
            for before in [
                StorageRootBefore::Known(None),
                StorageRootBefore::Known(Some(root)),
                StorageRootBefore::NotRecorded,
            ] {
                let encoded = encode_account_before(&account, before);
                assert_eq!(decode_account_before(&encoded).unwrap(), (account, before));
            }
            let unrecorded = encode_account_before(&account, StorageRootBefore::NotRecorded);
            assert!(StoredAccount::decode(&unrecorded).is_err());
            let mut both = encode_account_before(&account, StorageRootBefore::Known(Some(root)));
            both[0] |= ROOT_NOT_RECORDED;
            assert!(decode_account_before(&both).is_err());
        }
        // Older datadirs' fixed layout (which held no root) reads as the empty trie's, even
        // when its first byte, the nonce's highest, has the flag's bit.
        let flagged_nonce = StoredAccount {
            nonce: 0x40 << 56,
            ..padded
        };
        assert_eq!(
            decode_account_before(&fixed(&flagged_nonce, None)).unwrap(),
            (flagged_nonce, StorageRootBefore::Known(None))
        );
        assert_eq!(
            decode_account_before(&fixed(&padded, None)).unwrap(),
            (padded, StorageRootBefore::Known(None))
        );
    }
}
