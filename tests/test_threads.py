"""Two generations at once, on two threads, share one session: each counts its own calls, the ledger adds
both exactly, and what the pack learns (checks, routing) is written once per key. ComfyUI runs one prompt
at a time, but a custom node or an API caller may sample two models at once (two GPUs, two threads)."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import comfy.sample
import torch

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.patches import Settings, apply_scope
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.models import flux_conditioning, sample, tiny_flux

CALLS, STEPS = 2, 4  # tiny FLUX.1: one double- and one single-stream block a step


def test_two_generations_on_two_threads_are_counted_exactly_and_learn_once(session):
    """Two models: ComfyUI itself cannot sample one ModelPatcher on two threads at once (its patcher
    state is per patcher), so neither can the Scope."""
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        models = [apply_scope(tiny_flux(), Settings(kernel="double", min_seq_len=1), session, label=f"model {i}")
                  for i in range(2)]
        alone = [sample(m, flux_conditioning(), steps=STEPS) for m in models]
        session.ledger.reset()
        start = threading.Barrier(2)
        # Drawn here: ComfyUI seeds torch's global generator, which two threads drawing at once would share.
        noise = comfy.sample.prepare_noise(torch.zeros(1, 16, 8, 8), 0)

        def generate(model):
            start.wait()  # both generations open before either samples
            return sample(model, flux_conditioning(), steps=STEPS, noise=noise)
        with ThreadPoolExecutor(2) as pool:
            together = list(pool.map(generate, models))
    for one, other in zip(alone, together):
        torch.testing.assert_close(other, one, rtol=0, atol=0)
    snap = payload(session)
    assert snap["generations"] == 2
    assert snap["devices"]["cpu"]["session"]["kernel"] == 2 * STEPS * CALLS
    assert snap["devices"]["cpu"]["session"]["declined_total"] == 0
    runs = {r["model"]: r["devices"]["cpu"]["kernel"] for r in snap["run"]}
    assert runs == {"model 0": STEPS * CALLS, "model 1": STEPS * CALLS}
    knowledge = session.knowledge
    assert len(knowledge.checks) == 1 and all(c.passed for c in knowledge.checks.values())
    assert len(knowledge.decisions) == len({(d.key.q_bucket, d.key.kv_bucket) for d in knowledge.decisions.values()})
