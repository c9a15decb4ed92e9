// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// Storage to read with eth_getStorageAt: a plain variable in slot 0 and a mapping in slot 1
/// (the value for `key` is at keccak256(abi.encode(key, uint256(1)))).
contract Store {
    uint256 public count;
    mapping(address => uint256) public balances;

    event Stored(address indexed key, uint256 value);
    /// Anonymous: its topics hold only the indexed argument, not the event's signature.
    event Noted(address indexed from, bytes32 text) anonymous;

    function set(uint256 value) external {
        count = value;
    }

    function put(address key, uint256 value) external {
        balances[key] = value;
        emit Stored(key, value);
    }

    function note(bytes32 text) external {
        emit Noted(msg.sender, text);
    }
}
