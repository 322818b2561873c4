"""The order arms take in each round of a benchmark.

Where an arm stands in a round matters on the H200: the call after a slow kernel arm ran up to
7% faster than the same call elsewhere (8k tokens, SDPA both times;
bench/runs/2026-12-04-h200-gpu-runs.md, run 28),
so a fixed order, or one reversed every other round, gives one arm a lasting edge. A balanced
Latin square (Williams design) puts every arm in every place once and, for an even number of
arms, right after every other arm once; an odd number takes each order and its reverse.
"""
from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


def balanced_orders(arms: Sequence[T]) -> list[list[T]]:
    """One order per round: len(arms) rounds for an even count, twice that for an odd one. The
    first order begins with the first arm (the benchmarks' reference, SDPA, runs first)."""
    n = len(arms)
    if n < 2:
        return [list(arms)]
    first, low, high = [0], 1, n - 1
    while len(first) < n:  # 0, 1, n-1, 2, n-2, ...
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    orders = [[arms[(i + shift) % n] for i in first] for shift in range(n)]
    return orders if n % 2 == 0 else orders + [order[::-1] for order in orders]
