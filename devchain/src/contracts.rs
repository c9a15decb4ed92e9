//! The dev chain's contracts: their ABIs as alloy `sol!` declarations and their creation
//! bytecode, compiled from `testdata/contracts/*.sol` by `testdata/contracts/compile.sh`.

use alloy_primitives::{Bytes, hex};

alloy_sol_types::sol! {
    /// testdata/contracts/Token.sol
    interface Token {
        event Transfer(address indexed from, address indexed to, uint256 value);
        event Approval(address indexed owner, address indexed spender, uint256 value);
        error InsufficientBalance(uint256 available, uint256 required);
        function balanceOf(address holder) external view returns (uint256);
        function transfer(address to, uint256 value) external returns (bool);
        function approve(address spender, uint256 value) external returns (bool);
        function transferFrom(address from, address to, uint256 value) external returns (bool);
        function airdrop(address[] holders, uint256 value) external;
    }

    /// testdata/contracts/Store.sol: `count` is slot 0, `balances` is the mapping in slot 1.
    interface Store {
        event Stored(address indexed key, uint256 value);
        event Noted(address indexed from, bytes32 text) anonymous;
        function count() external view returns (uint256);
        function balances(address key) external view returns (uint256);
        function set(uint256 value) external;
        function put(address key, uint256 value) external;
        function note(bytes32 text) external;
    }

    /// testdata/contracts/Reverter.sol
    interface Reverter {
        error Unauthorized(address caller, uint256 code);
        function attempts() external view returns (uint256);
        function failWithReason() external pure;
        function failRequire(uint256 x) external pure returns (uint256);
        function failAssert(uint256 x) external pure returns (uint256);
        function failDivide(uint256 divisor) external pure returns (uint256);
        function failIndex(uint256 index) external view returns (uint256);
        function failOverflow(uint256 x) external pure returns (uint256);
        function failCustom() external view;
        function failEmpty() external pure;
        function attempt() external;
    }
}

const TOKEN_BIN: &str = include_str!("../../testdata/contracts/build/Token.bin");
const STORE_BIN: &str = include_str!("../../testdata/contracts/build/Store.bin");
const REVERTER_BIN: &str = include_str!("../../testdata/contracts/build/Reverter.bin");

/// Creation bytecode of one compiled contract.
fn creation_code(hex_text: &str) -> Bytes {
    // The files are produced by compile.sh and committed; a malformed one is a build mistake
    // that every devchain test would catch at once.
    hex::decode(hex_text.trim())
        .map(Bytes::from)
        .unwrap_or_else(|err| panic!("testdata/contracts/build holds invalid hex: {err}"))
}

/// Token's creation code with its constructor argument (the supply minted to the deployer).
pub fn token_creation(supply: alloy_primitives::U256) -> Bytes {
    let mut code = creation_code(TOKEN_BIN).to_vec();
    code.extend_from_slice(&supply.to_be_bytes::<32>());
    code.into()
}

pub fn store_creation() -> Bytes {
    creation_code(STORE_BIN)
}

pub fn reverter_creation() -> Bytes {
    creation_code(REVERTER_BIN)
}
