// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// Every way a call can revert: Error(string) from revert and require, Panic codes from
/// assert, division by zero, an index out of bounds and overflow, a custom error, and an empty
/// revert.
contract Reverter {
    uint256[] private items;
    uint256 public attempts;

    error Unauthorized(address caller, uint256 code);

    function failWithReason() external pure {
        revert("Reverter: failed on purpose");
    }

    function failRequire(uint256 x) external pure returns (uint256) {
        require(x > 10, "Reverter: x must exceed 10");
        return x;
    }

    function failAssert(uint256 x) external pure returns (uint256) {
        assert(x == 0);
        return x;
    }

    function failDivide(uint256 divisor) external pure returns (uint256) {
        return 100 / divisor;
    }

    function failIndex(uint256 index) external view returns (uint256) {
        return items[index];
    }

    function failOverflow(uint256 x) external pure returns (uint256) {
        return x + type(uint256).max;
    }

    function failCustom() external view {
        revert Unauthorized(msg.sender, 42);
    }

    function failEmpty() external pure {
        revert();
    }

    /// Writes storage, then reverts: a transaction calling it is included with status 0 and
    /// leaves `attempts` unchanged.
    function attempt() external {
        attempts += 1;
        revert("Reverter: attempt rejected");
    }
}
