"""The pack as ComfyUI loads it, and its two nodes."""
import asyncio
import logging

import pytest
import torch

from sage_attention_scope.nodes.scope import SageAttentionScope, scoped_model
from sage_attention_scope.nodes.status import SageAttentionStatus, payload, render
from sas_harness import ROOT
from sas_harness import host as sas_host
from sage_attention_scope.patches import Reason, Session, Settings, backends, router_of
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.models import DEVICE, flux_conditioning, sample, tiny_flux


def test_comfyui_loads_the_pack_as_a_custom_node(session):
    if not sas_host.has_top_level_nodes(sas_host.comfyui_path()):
        pytest.skip("this ComfyUI has no top-level nodes.py (a pip-installable layout); "
                    "custom-node loading needs the standard tree")
    import nodes as comfy_nodes  # ComfyUI's own nodes.py, not ours
    assert hasattr(comfy_nodes, "NODE_CLASS_MAPPINGS") and hasattr(comfy_nodes, "load_custom_node")
    assert asyncio.run(comfy_nodes.load_custom_node(str(ROOT)))
    for node_id, display in (("SageAttentionScope", "Sage Attention Scope"),
                             ("SageAttentionStatus", "Sage Attention Status")):
        assert node_id in comfy_nodes.NODE_CLASS_MAPPINGS
        assert comfy_nodes.NODE_DISPLAY_NAME_MAPPINGS[node_id] == display
    assert any(path.endswith("web/js") for path in comfy_nodes.EXTENSION_WEB_DIRS.values())


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


EXPERT_INPUTS = ("min_seq_len", "first_call_check", "smooth_k", "routing", "first_blocks", "last_blocks",
                 "sparse_tau", "sparse_topk", "sparse_start_percent", "sparse_min_tokens", "sparse_gate")


def test_scope_node_schema(session):
    info = SageAttentionScope.GET_NODE_INFO_V1()
    required = info["input"]["required"]
    assert list(required) == ["model", "enabled", "kernel", "min_seq_len", "first_call_check", "smooth_k",
                              "routing", "start_percent", "end_percent", "first_blocks", "last_blocks"]
    # the sparse inputs came later: optional, so that a workflow saved before them still validates
    optional = info["input"]["optional"]
    assert list(optional) == ["sparse", "sparse_tau", "sparse_topk", "sparse_start_percent", "sparse_min_tokens",
                              "sparse_gate"]
    assert optional["sparse"][1]["default"] == Settings.sparse == "off"
    assert optional["sparse"][1]["options"] == ["off", "sol-attn"]
    assert required["min_seq_len"][1]["default"] == Settings.min_seq_len == 0 and required["min_seq_len"][1]["min"] == 0
    # step 1: the front ends round what is typed to the step (256 made 100 into 0, auto)
    assert required["min_seq_len"][1]["step"] == 1
    options = required["kernel"][1]["options"]
    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    assert options[0] == "auto" and all(any(session.knowledge.kernel(o, d).bound for d in devices) for o in options[1:])
    assert info["output"] == ["MODEL"] and info["category"] == "model_patches/attention"


def test_the_expert_inputs_are_advanced_where_comfyui_has_advanced_inputs(session):
    """ComfyUI 0.33's V3 API marks inputs advanced (its front end folds them); 0.3.75's has no such mark,
    and the schema stays as it was there."""
    version = _version(sas_host.comfyui_version())
    if (0, 3, 75) < version < (0, 33):
        pytest.skip(f"ComfyUI {version}: whether its V3 API has advanced inputs is not known here")
    info = SageAttentionScope.GET_NODE_INFO_V1()["input"]
    required = {**info["required"], **info["optional"]}
    advanced = {name for name, (_, options) in required.items() if options.get("advanced")}
    if version >= (0, 33):
        assert advanced == set(EXPERT_INPUTS)
        assert len([name for name in required if name not in advanced and name != "model"]) <= 5  # widgets shown
    else:
        assert advanced == set() and not any("advanced" in options for _, options in required.values())


def test_scope_node_clones_and_never_mutates_its_input(session):
    model = tiny_flux()
    with registered(session, make_kernel("double", RecordingKernel())):
        out = SageAttentionScope.execute(model, enabled=True, kernel="double", min_seq_len=64, first_call_check=True,
                                         smooth_k=False, routing="measured").result[0]
    assert out is not model and router_of(model) is None
    assert router_of(out).settings == Settings(kernel="double", min_seq_len=64)


def test_without_a_kernel_the_node_passes_the_model_through_and_says_why(session, caplog):
    caplog.set_level(logging.WARNING)
    model = tiny_flux()
    # auto on a CPU; on a GPU, a named kernel the installed sageattention does not provide.
    choice = next(n for n in session.knowledge.names() if session.knowledge.kernel(n, model.load_device).bound is None)
    assert scoped_model(model, kernel=choice) is model
    assert any("through unchanged" in r.getMessage() for r in caplog.records)
    line = payload(session)["devices"][str(model.load_device)]["kernels"][choice]
    assert line["kernel"] is None and line["why"]


@pytest.mark.parametrize("name, bad", [("min_seq_len", -1), ("min_seq_len", 1.5), ("min_seq_len", "12288"),
                                       ("first_blocks", -2), ("start_percent", 1.5), ("end_percent", -0.1)])
def test_bad_inputs_are_refused_clearly(session, name, bad):
    with pytest.raises(ValueError, match=f"{name} must be a (whole )?number from"):
        scoped_model(tiny_flux(), **{name: bad})


def test_the_node_validates_the_kernel_and_the_step_window(session):
    """A kernel of another machine is valid (auto replaces it when the node runs); an unknown one is
    named, cut; a linked one (None while ComfyUI validates) and a malformed link (a list, which ComfyUI
    refuses itself) pass. The window: each end in its range (ComfyUI checks no range of an input its
    validate_inputs names), the start not above the end; a linked end, or one ComfyUI could not convert
    to a float, is not this check's."""
    other_machine = next(n for n in session.knowledge.names() if n not in SageAttentionScope.define_schema().inputs[2]
                         .options)
    validate = SageAttentionScope.validate_inputs
    assert validate(kernel=other_machine) is True and validate(kernel="auto", start_percent=0.5, end_percent=0.5)
    assert validate(kernel="nope") == "kernel 'nope' is unknown; on this machine: auto"
    assert validate(kernel="y" * 10_000) == f"kernel '{'y' * 58}… is unknown; on this machine: auto"
    assert all(validate(kernel=k) is True for k in (None, ["auto"]))
    assert validate(kernel="auto", start_percent=0.8, end_percent=0.5) == (
        "start_percent (0.8) must not be above end_percent (0.5)")
    assert validate(kernel="auto", start_percent=1.5) == "start_percent must be a number from 0.0 to 1.0, got 1.5"
    assert validate(kernel="auto", end_percent=float("nan")) == "end_percent must be a number from 0.0 to 1.0, got nan"
    assert validate(kernel=None, start_percent=0.8, end_percent=None) is True
    assert validate(kernel="auto", start_percent="abc") is True  # what ComfyUI could not convert, it refuses


def test_a_model_that_is_not_a_diffusion_model_is_refused_clearly(session):
    with pytest.raises(ValueError, match="needs a diffusion MODEL"):
        scoped_model(torch.nn.Linear(2, 2))


def test_status_node_reports_counts_and_resets(session):
    assert "no scoped model in this run" in render(payload(session))
    model = tiny_flux()
    with registered(session, make_kernel("double", RecordingKernel())):
        sample(scoped_model(model, kernel="double", min_seq_len=1), flux_conditioning())
        sample(scoped_model(model, kernel="double", min_seq_len=10_000), flux_conditioning())
    out = SageAttentionStatus.execute(after=None, reset_counters=True)
    text = out.result[0]
    assert f"{DEVICE}: double" in text and f"check {DEVICE} float32 d32 short keys double: passed" in text
    assert f"{DEVICE}: 2 on the kernel, 2 on ComfyUI's attention" in text and Reason.TOO_SHORT.label in text
    shown = out.ui["sage_attention_status"][0]
    assert shown["devices"][DEVICE]["session"]["kernel"] == 2
    assert payload(session)["devices"][DEVICE]["session"]["kernel"] == 0  # reset after showing
    assert SageAttentionStatus.fingerprint_inputs() != SageAttentionStatus.fingerprint_inputs()  # NaN: never cached


def _status_in(prompt_id):
    from comfy_execution.utils import CurrentNodeContext
    with CurrentNodeContext(prompt_id, "9"):
        return SageAttentionStatus.execute(after=None, reset_counters=False)


def test_status_tells_this_run_from_the_session(session):
    """Two prompts with different models, then one without a Scope, then a reset."""
    from comfy_execution.utils import CurrentNodeContext
    import comfy.supported_models
    from sas_harness.models import TINY_QWEN_IMAGE, build, text_conditioning
    flux, qwen = tiny_flux(), build(comfy.supported_models.QwenImage, TINY_QWEN_IMAGE)
    with registered(session, make_kernel("double", RecordingKernel())):
        with CurrentNodeContext("first", "2"):
            sample(scoped_model(flux, kernel="double", min_seq_len=1), flux_conditioning())
        first = _status_in("first").ui["sage_attention_status"][0]
        with CurrentNodeContext("second", "2"):
            sample(scoped_model(qwen, kernel="double", min_seq_len=1), text_conditioning(), latent_hw=(1, 8, 8))
        second = _status_in("second")
    assert [m["model"] for m in first["run"]] == ["FLUX.1 (Flux)"]
    shown = second.ui["sage_attention_status"][0]
    assert [m["model"] for m in shown["run"]] == ["Qwen-Image (QwenImage)"]
    assert shown["run"][0]["devices"][DEVICE]["kernel"] == TINY_QWEN_IMAGE["num_layers"]
    assert shown["run"][0]["sampling_ms"] > 0 and "sampling" in second.result[0]
    assert {m["model"] for m in shown["models"]} == {"FLUX.1 (Flux)", "Qwen-Image (QwenImage)"}  # the session
    assert "no scoped model in this run" in _status_in("third, without a Scope").result[0]
    SageAttentionStatus.execute(after=None, reset_counters=True)
    after = payload(session, "second")
    assert after["run"] == [] and after["models"] == [] and after["devices"][DEVICE]["session"]["kernel"] == 0


def test_a_chain_of_scopes_the_first_off_shows_one_line_for_the_model(session):
    """Two Scopes in a row, the first off: the second's router serves the model (it replaces the first's),
    and Status says that once, for the run and for the session."""
    from comfy_execution.utils import CurrentNodeContext
    with registered(session, make_kernel("double", RecordingKernel())):
        with CurrentNodeContext("chain", "3"):
            off = scoped_model(tiny_flux(), enabled=False)
            sample(scoped_model(off, kernel="double", min_seq_len=1), flux_conditioning())
        shown = _status_in("chain")
    text, snap = shown.result[0], shown.ui["sage_attention_status"][0]
    this_run = text.split("\n\n")[1].splitlines()
    assert this_run[:2] == ["This run:", "  model FLUX.1 (Flux): scoped"], text
    assert this_run[3] == f"    {DEVICE}: 2 on the kernel, 0 on ComfyUI's attention" and len(this_run) == 4, text
    assert "Scope off" not in text
    assert [m["model"] for m in snap["run"]] == [m["model"] for m in snap["models"]] == ["FLUX.1 (Flux)"]


def test_the_status_text_after_a_passed_through_run_and_after_two_kernel_choices(session):
    """A passed-through model: its note, no counts, no "0 generations". Two kernel choices on a device
    (one that binds nothing here, then a kernel): one line says what the device uses."""
    from sage_attention_scope.nodes.status import INSTALL_DOCS
    model = tiny_flux()
    # auto on a CPU; on a GPU, a named kernel the installed sageattention does not provide.
    choice = next(n for n in session.knowledge.names() if session.knowledge.kernel(n, model.load_device).bound is None)
    scoped_model(model, kernel=choice)
    text = render(payload(session))
    assert f"model FLUX.1 (Flux): passed through unchanged: on {DEVICE}: " in text
    assert "generations" not in text and "Session:\n  nothing sampled through the Scope yet" in text
    assert f"{DEVICE}: 0 on the kernel" not in text
    assert "Install: " not in text
    if DEVICE == "cpu":  # the advice for a machine without a CUDA GPU, and its link once
        assert text.count(INSTALL_DOCS) == 1
    with registered(session, make_kernel("double", RecordingKernel())):
        sample(scoped_model(model, kernel="double", min_seq_len=1), flux_conditioning())
    text = render(payload(session))
    assert "Session (1 generation):" in text
    kernels = [line for line in text.splitlines() if line.startswith(f"  {DEVICE}: ") and "on the kernel" not in line]
    assert len(kernels) == 1 and kernels[0].startswith(f"  {DEVICE}: double, "), kernels


# -- what to install, and the kernel choice in words ------------------------------------------

def _session_on(capability, **modules):
    def find(name):
        if name not in modules:
            raise ImportError(f"No module named {name!r}")
        return modules[name]
    return Session(store=None, finder=backends.Finder(find, lambda m: "1.0.6" if m == "sageattention" else "0.2.40",
                                                      capability=lambda device: capability))


CUDA0 = torch.device("cuda", 0)


def test_status_says_what_to_install_where_auto_has_no_sageattention_2(session):
    from sas_harness.doubles import int8_attention, int8_attention_is_available, library, sageattention2_module
    from sage_attention_scope.nodes.status import INSTALL_DOCS, install_advice
    sage1 = library(sageattn=lambda q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=True: q)
    kitchen = library(int8_attention=int8_attention, int8_attention_is_available=int8_attention_is_available)
    # an H200 with PyPI's SageAttention 1 only: it names what it found and what the GPU needs
    advice, = install_advice(_session_on((9, 0), sageattention=sage1), [CUDA0])
    assert advice.startswith("cuda:0 (sm90): auto found only SageAttention 1")
    assert "faster than ComfyUI's attention" in advice
    assert not any(gpu in advice for gpu in ("H100", "H200")), "UI text names no GPU's figures (docs/measured.md)"
    assert advice.endswith(f"This GPU would need SageAttention 2 (sage2_fp8_sm90), built from source: {INSTALL_DOCS}")
    # an RTX 4090 with comfy-kitchen only; a Turing card with nothing at all
    advice, = install_advice(_session_on((8, 9), comfy_kitchen=kitchen), [CUDA0])
    assert "only comfy-kitchen INT8" in advice and "SageAttention 2 (sage2_fp8_cuda)" in advice
    advice, = install_advice(_session_on((7, 5)), [CUDA0])
    assert "auto found no kernel it can use (auto: comfy_kitchen is not installed" in advice
    assert "would need a kernel library built for it" in advice
    # SageAttention 2 there: nothing to say
    assert install_advice(_session_on((9, 0), sageattention=sageattention2_module()), [CUDA0]) == []
    # this CPU machine: the status says so, with the link
    snap = payload(session)
    assert snap["advice"] == install_advice(session, []) and INSTALL_DOCS in render(snap)
    assert "No CUDA GPU here" in render(snap).splitlines()[1]


def test_the_kernel_input_names_each_kernel_offered_in_words(session):
    from sage_attention_scope.nodes.scope import kernel_tooltip
    tooltip = kernel_tooltip(["auto", "sage2_fp8_sm90", "kitchen_int8"])
    assert "sage2_fp8_sm90: SageAttention 2 (INT8 Q·K, FP8 P·V, Hopper)" in tooltip.splitlines()
    assert "kitchen_int8: comfy-kitchen INT8 (Q·K and P·V in INT8)" in tooltip.splitlines()
    assert "exact: the exact kernels only" in kernel_tooltip(["auto", "exact", "sdpa_cudnn"])  # a set
    schema = SageAttentionScope.define_schema()  # on this CPU machine: auto alone, and why
    kernel = next(i for i in schema.inputs if i.id == "kernel")
    assert kernel.options == ["auto"] and "No kernel is usable on this machine" in kernel.tooltip


def test_same_named_models_are_numbered_within_a_run(session):
    """Wan 2.2's two experts are 'Wan' and 'Wan #2' in the order their Scopes ran; a later prompt,
    for which ComfyUI may have reloaded both, numbers them afresh instead of going on to #3."""
    high, low, high_reloaded = object(), object(), object()
    assert [session.ledger.model_label("Wan", m, "prompt 1") for m in (high, low, high)] == ["Wan", "Wan #2", "Wan"]
    assert session.ledger.model_label("Wan", high_reloaded, "prompt 2") == "Wan"
