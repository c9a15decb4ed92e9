// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// A minimal ERC-20 with indexed Transfer and Approval events. `airdrop` moves tokens to many
/// holders in one transaction, which gives the dev chain its log volume.
contract Token {
    string public constant name = "Quarry Token";
    string public constant symbol = "QRY";
    uint8 public constant decimals = 18;

    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    error InsufficientBalance(uint256 available, uint256 required);

    constructor(uint256 supply) {
        totalSupply = supply;
        balanceOf[msg.sender] = supply;
        emit Transfer(address(0), msg.sender, supply);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "Token: allowance exceeded");
        allowance[from][msg.sender] = allowed - value;
        _move(from, to, value);
        return true;
    }

    function airdrop(address[] calldata holders, uint256 value) external {
        for (uint256 i = 0; i < holders.length; i++) {
            _move(msg.sender, holders[i], value);
        }
    }

    function _move(address from, address to, uint256 value) internal {
        uint256 available = balanceOf[from];
        if (available < value) {
            revert InsufficientBalance(available, value);
        }
        unchecked {
            balanceOf[from] = available - value;
        }
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
