"""The fault matrix (tests/sas_fault_matrix.py): every family x every injected fault."""
from __future__ import annotations

import pytest

from sas_harness.families import CASES, model_of, sample_case
from sas_harness.fault_matrix import FAULTS, STEPS, run


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.family)
def family(request):
    case = request.param
    model = model_of(case)
    return case, model, sample_case(model, case, steps=STEPS)


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name.replace(" ", "-"))
def test_every_generation_completes_within_sdpa_tolerance_and_is_counted(session, family, fault):
    case, model, reference = family
    outcome = run(case, fault, model, reference)
    assert outcome.completed and outcome.within_tolerance
    assert outcome.counters == outcome.expected
    # said once: one warning per kind of failure (a retirement is a second, separate event)
    assert len(outcome.warnings) == len(set(outcome.warnings)) <= 2, outcome.warnings
