"""A bounded load on the real server: a few hundred prompts of the tiny scoped model from four threads, each
with its own seed (no cache), its history deleted once read, as a busy queue would see them. Every prompt
succeeds, the Status counters add up exactly, and the server's memory stays flat; the prompts per second and
the memory are written to the run's output."""
from __future__ import annotations

import concurrent.futures
import sys
import time

import psutil
import pytest

from sas_harness.models import TINY_LTXV
from sas_harness.server import tiny_prompt

pytestmark = pytest.mark.server
PROMPTS, THREADS, WARM_UP = 200, 4, 20
BLOCKS = TINY_LTXV["num_layers"]   # one self-attention call a block reaches the kernel (tiny_prompt)
FLAT_MIB = 64                      # what the server's RSS may grow by over the measured prompts


def _run(server, seed: int) -> dict:
    """One prompt through /prompt, its /history entry polled for, then deleted."""
    prompt_id = server.post("/prompt", {"prompt": tiny_prompt(seed=seed)})["prompt_id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        entry = server.get(f"/history/{prompt_id}").get(prompt_id)
        if entry:
            server.post("/history", {"delete": [prompt_id]})
            return entry
        time.sleep(0.02)
    raise AssertionError(f"prompt {prompt_id} did not finish; log: {server.tail()}")


def _session(entry: dict) -> tuple[int, int]:
    """(calls on the kernel this session, generations) as the prompt's Status node reported them."""
    payload = entry["outputs"]["6"]["sage_attention_status"][0]
    return payload["devices"]["cpu"]["session"]["kernel"], payload["generations"]


def test_hundreds_of_prompts_from_four_threads_all_succeed_count_exactly_and_keep_memory_flat(server, capsys):
    process = psutil.Process(server.process.pid)
    seeds = iter(range(10_000, 20_000))  # seeds no other test uses: every prompt samples anew
    for _ in range(WARM_UP):  # the allocator and the caches settle before memory is read
        last = _run(server, next(seeds))
    kernel_before, generations_before = _session(last)
    rss_before = process.memory_info().rss
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        entries = list(pool.map(lambda seed: _run(server, seed), [next(seeds) for _ in range(PROMPTS)]))
    elapsed = time.perf_counter() - started
    rss_after = process.memory_info().rss
    failed = [e["status"] for e in entries if e["status"]["status_str"] != "success"]
    assert not failed, failed[:3]
    assert all(e["outputs"]["6"]["sage_attention_status"][0]["devices"]["cpu"]["last_generation"]["kernel"] == BLOCKS
               for e in entries)
    final = _session(_run(server, next(seeds)))
    assert final == (kernel_before + (PROMPTS + 1) * BLOCKS, generations_before + PROMPTS + 1)
    assert (rss_after - rss_before) / 2**20 < FLAT_MIB, (rss_before / 2**20, rss_after / 2**20)
    with capsys.disabled():  # the figures in the run's output, captured or not
        sys.stdout.write(f"\nload: {PROMPTS} prompts from {THREADS} threads, {PROMPTS / elapsed:.1f} prompts/s; "
                         f"server RSS {rss_before / 2**20:.1f} -> {rss_after / 2**20:.1f} MiB\n")
