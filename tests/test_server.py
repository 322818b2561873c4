"""The pack in a real ComfyUI server: /object_info, a queued prompt, the example workflows."""
from __future__ import annotations

import json

import pytest

from sage_attention_scope.patches import Reason
from sas_harness.models import TINY_LTXV
from sas_harness.server import (DYNAMIC_COMBO, FRONTEND_ONLY, WORKFLOWS, api_prompt, chained_scopes_prompt,
                                example_model_files, lacking, load_widgets, ordered_inputs, placeholder_failure,
                                tiny_prompt)


def test_object_info_lists_the_nodes_with_their_inputs(session, server):
    info = server.get("/object_info")
    scope, status = info["SageAttentionScope"], info["SageAttentionStatus"]
    assert list(scope["input"]["required"]) == ["model", "enabled", "kernel", "min_seq_len", "first_call_check",
                                                "smooth_k", "routing", "start_percent", "end_percent", "first_blocks",
                                                "last_blocks"]
    assert scope["output"] == ["MODEL"] and scope["category"] == "model_patches/attention"
    assert scope["display_name"] == "Sage Attention Scope"
    assert status["output_node"] is True and status["output"] == ["STRING"]
    assert "reset_counters" in status["input"]["required"] and "after" in status["input"]["optional"]


def test_the_front_end_is_handed_each_of_the_packs_scripts_once(server):
    """ComfyUI serves a custom node's scripts from its WEB_DIRECTORY and from a pyproject.toml's
    [tool.comfy] web folder alike: both would make the front end register each extension twice."""
    scripts = ("compare.js", "scope.js", "status.js")
    ours = [url for url in server.get("/extensions") if url.rsplit("/", 1)[-1] in scripts]
    assert sorted(url.rsplit("/", 1)[-1] for url in ours) == list(scripts), ours


def test_a_queued_prompt_samples_through_the_scope_and_the_status_reports_it(session, server):
    entry = server.run_prompt(tiny_prompt())
    assert entry["status"]["status_str"] == "success", entry["status"]
    text = entry["outputs"]["6"]["text"][0]
    # TINY_LTXV: per block one video self-attention (8 tokens) and one cross-attention to the
    # 5 text tokens, whose all-ones float mask is not a no-op additive mask -> SDPA (mask).
    blocks = TINY_LTXV["num_layers"]
    assert "model LTX-Video (LTXV): scoped" in text
    assert "cpu: reference_double" in text
    assert f"cpu: {blocks} on the kernel, {blocks} on ComfyUI's attention" in text
    assert Reason.MASK.label in text
    first = entry["outputs"]["6"]["sage_attention_status"][0]
    assert first["devices"]["cpu"]["last_generation"]["kernel"] == blocks
    # the run's sampling time, as the Scope measured it around the sampler, in the payload and the text
    (record,) = first["run"]
    assert 0 < record["sampling_ms"] <= first["last_ms"]["sampling"] + 1e-6
    assert f"sampling {record['sampling_ms'] / 1e3:.2f} s" in text
    # The Status node is never served from the cache: it runs again after a cached sampler
    # (same counts) and after a new generation (one more). The server is shared with other
    # tests, so compare with the first run rather than with zero.
    def session(entry):
        payload = entry["outputs"]["6"]["sage_attention_status"][0]
        return payload["devices"]["cpu"]["session"]["kernel"], payload["generations"]
    sage, generations = session(entry)
    assert session(server.run_prompt(tiny_prompt())) == (sage, generations)
    assert session(server.run_prompt(tiny_prompt(seed=1))) == (sage + blocks, generations + 1)


def test_the_status_shows_the_routing_table_that_was_used(server):
    """Measured routing on the server's own clock: each shape bucket, the side it chose, its calls."""
    entry = server.run_prompt(tiny_prompt(routing="measured", seed=11))
    assert entry["status"]["status_str"] == "success", entry["status"]
    [table] = [info["buckets"] for info in entry["outputs"]["6"]["sage_attention_status"][0]["devices"].values()]
    [bucket] = [row for row in table if row["calls_last"]]  # the video self-attention's: 8 tokens
    [(route, calls)] = bucket["calls_last"].items()
    assert bucket["bucket"].startswith("cpu 8x8 tokens") and calls == TINY_LTXV["num_layers"]
    assert route == bucket["winner"]
    text = entry["outputs"]["6"]["text"][0]
    assert f"routing {bucket['bucket']}: " in text and f"calls in the last generation: {route} {calls}" in text


def test_a_step_window_through_the_server(server):
    """10 steps with the window 0.2-0.8: the steps outside it keep SDPA, counted as such."""
    entry = server.run_prompt(tiny_prompt(seed=12, steps=10, start_percent=0.2, end_percent=0.8))
    assert entry["status"]["status_str"] == "success", entry["status"]
    counts = entry["outputs"]["6"]["sage_attention_status"][0]["devices"]["cpu"]["last_generation"]
    outside, inside = counts["declined"].get(Reason.OUTSIDE_STEPS.value, 0), counts["kernel"]
    assert outside and inside and (outside + inside) % TINY_LTXV["num_layers"] == 0
    assert Reason.OUTSIDE_STEPS.label in entry["outputs"]["6"]["text"][0]


NAN, INF = float("nan"), float("inf")
# The inputs the Scope's validate_inputs names: ComfyUI reports its refusal under each of them.
VALIDATED = ["kernel", "start_percent", "end_percent"]


def _refusal(server, name, value) -> list[dict]:
    """The Scope's errors in /prompt's answer to the tiny prompt (end_percent 0.5) with ``name`` set to
    ``value``: a 400 for that node alone, a few KB at most, and a few KB more in the server's log
    (ComfyUI logs each error)."""
    prompt = tiny_prompt(seed=21, end_percent=0.5)
    prompt["2"]["inputs"][name] = value
    start = server.log_size()
    status, body = server.post_raw("/prompt", {"prompt": prompt})
    assert status == 400, str(body)[:2000]
    assert len(json.dumps(body)) < 10_000, str(body)[:2000]
    assert list(body["node_errors"]) == ["2"] and body["node_errors"]["2"]["class_type"] == "SageAttentionScope"
    assert server.get("/system_stats")  # the server keeps serving; the log has the whole answer once it answers
    assert server.log_size() - start < 10_000, server.log_since(start)[:3000]
    return body["node_errors"]["2"]["errors"]


@pytest.mark.parametrize("name, value, says", [
    ("kernel", "nope", "kernel 'nope' is unknown; on this machine: auto"),
    ("kernel", 7, "kernel 7 is unknown; on this machine: auto"),
    ("kernel", "x" * (5 << 20), f"kernel '{'x' * 58}… is unknown; on this machine: auto"),
    ("start_percent", 0.9, "start_percent (0.9) must not be above end_percent (0.5)"),
    ("start_percent", "0.9", "start_percent (0.9) must not be above end_percent (0.5)"),  # ComfyUI converts it
    ("start_percent", NAN, "start_percent must be a number from 0.0 to 1.0, got nan"),
    ("end_percent", NAN, "end_percent must be a number from 0.0 to 1.0, got nan"),
    ("start_percent", -INF, "start_percent must be a number from 0.0 to 1.0, got -inf"),
    ("end_percent", 1.5, "end_percent must be a number from 0.0 to 1.0, got 1.5"),
], ids=lambda v: repr(v)[:20] if isinstance(v, (float, str)) else None)
def test_what_spans_inputs_is_refused_by_prompt_with_the_packs_sentence(server, name, value, says):
    """The kernel and the step window (the node's validate_inputs): a 400 with the pack's sentence, which
    ComfyUI reports under each input validate_inputs names, never with Python's conversion message."""
    errors = _refusal(server, name, value)
    assert [error["extra_info"]["input_name"] for error in errors] == VALIDATED, errors
    assert all(error["type"] == "custom_validation_failed" for error in errors), errors
    assert [error["details"] for error in errors] == [f"{input_name} - {says}" for input_name in VALIDATED]


@pytest.mark.parametrize("name, value, says", [
    ("min_seq_len", -1, "Value -1 smaller than min of 0"),
    ("min_seq_len", 10 ** 400, f"Value {10 ** 400} bigger than max of 4194304"),
    ("first_blocks", -2, "Value -2 smaller than min of -1"),
    ("last_blocks", 1001, "Value 1001 bigger than max of 1000"),
    ("sparse_tau", 5.0, "Value 5.0 bigger than max of 4.0"),
])
def test_a_number_outside_its_declared_range_is_refused_by_comfyui_under_its_input(server, name, value, says):
    """The inputs validate_inputs does not name keep ComfyUI's own checks of the declared range."""
    [error] = _refusal(server, name, value)
    assert error["extra_info"]["input_name"] == name and error["message"] == says, error


@pytest.mark.parametrize("name, value", [("min_seq_len", "abc"), ("min_seq_len", NAN), ("start_percent", "abc")])
def test_a_value_comfyui_cannot_convert_is_refused_by_comfyui_under_its_input(server, name, value):
    """What ComfyUI cannot convert to the declared type it refuses itself, as for any of its own nodes."""
    [error] = _refusal(server, name, value)
    assert error["extra_info"]["input_name"] == name and error["type"] == "invalid_input_type", error


def test_values_comfyui_converts_run_as_comfyui_converts_them(server):
    """Text for a number, a whole number for a fraction, a wrapped boolean: taken as ComfyUI's own nodes
    take them ("false" is a non-empty string, so true: the Scope runs)."""
    prompt = tiny_prompt(seed=24)
    prompt["2"]["inputs"].update(enabled="false", min_seq_len="1", first_call_check={"__value__": 1},
                                 start_percent="0", end_percent=1)
    entry = server.run_prompt(prompt)
    assert entry["status"]["status_str"] == "success", entry["status"]
    counts = entry["outputs"]["6"]["sage_attention_status"][0]["run"][0]["devices"]["cpu"]
    assert counts["kernel"] == TINY_LTXV["num_layers"], counts


@pytest.mark.parametrize("name, value, says", [
    ("routing", "nope", "routing must be one of measured, always, got 'nope'"),
    ("kernel", None, "kernel must be 'auto' or a kernel name, got None"),
])
def test_a_value_no_check_before_the_run_refuses_fails_the_node_with_the_packs_sentence(server, name, value, says):
    """ComfyUI 0.3.75 checks no option of a V3 combo, and no node can tell a kernel sent as null from a
    linked one while ComfyUI validates: the node refuses the value when it runs. ComfyUI 0.33 refuses
    a routing it does not offer itself."""
    prompt = tiny_prompt(seed=25)
    prompt["2"]["inputs"][name] = value
    status, body = server.post_raw("/prompt", {"prompt": prompt})
    if status == 400:
        [error] = body["node_errors"]["2"]["errors"]
        assert error["type"] == "value_not_in_list" and error["extra_info"]["input_name"] == name, error
        return
    entry = server.wait_for(body["prompt_id"])
    [failure] = [data for kind, data in entry["status"]["messages"] if kind == "execution_error"]
    assert failure["node_id"] == "2" and failure["exception_message"].strip() == says, failure


# What ComfyUI 0.3.75 and 0.33 answer to each without the pack: a body that is no dict fails
# ComfyUI's own `"number" in json_data` (null, 42: 500), a "prompt" that is no dict its validation.
MALFORMED = [[], None, "x", 42, {"prompt": ["x"]}, {"prompt": "x"}, {"prompt": None}, {"prompt": {"2": None}},
             {"prompt": {"2": {"class_type": "SageAttentionScope", "inputs": ["x"]}}},
             {"prompt": {"2": {"class_type": "SageAttentionScope"}}}, {"prompt": {"2": {"inputs": {}}}}]


@pytest.mark.parametrize("body", MALFORMED, ids=repr)
def test_a_malformed_body_leaves_no_traceback_of_the_pack(server, body):
    start = server.log_size()
    status, answer = server.post_raw("/prompt", body)
    assert status in (400, 500), (status, answer)
    assert server.get("/system_stats")
    log = server.log_since(start)
    assert "on_prompt_handler" not in log and "sage_attention_scope" not in log, log


def test_a_chain_of_scopes_the_first_off_shows_one_line_for_the_model(server):
    """The tiny model through a Scope that is off and then one that is on: the second serves the run,
    and the Status says so once."""
    entry = server.run_prompt(chained_scopes_prompt(seed=26))
    assert entry["status"]["status_str"] == "success", entry["status"]
    text = entry["outputs"]["6"]["text"][0]
    this_run = text.split("\n\nSession")[0].split("This run:\n")[1].splitlines()
    blocks = TINY_LTXV["num_layers"]
    assert this_run[0] == "  model LTX-Video (LTXV): scoped" and this_run[2] == f"    cpu: {blocks} on the kernel, " \
        f"{blocks} on ComfyUI's attention" and "Scope off" not in text, text


def test_auto_on_a_cpu_server_passes_through_and_says_why(session, server):
    entry = server.run_prompt(tiny_prompt(kernel="auto"))
    assert entry["status"]["status_str"] == "success"
    text = entry["outputs"]["6"]["text"][0]
    assert ("model LTX-Video (LTXV): passed through unchanged: on cpu: the attention kernels need a CUDA device, "
            "got cpu" in text)


# -- example workflows -------------------------------------------------------------------------


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


def _accepts(input_type: str, link_type: str) -> bool:
    return input_type == "*" or link_type == "*" or link_type in input_type.split(",")


def _runs_here(server, workflow: dict, info: dict) -> None:
    """Skips a template that needs a newer ComfyUI than the server's, naming what this one lacks."""
    needs = workflow["extra"]["sage_attention_scope"]["min_comfyui_version"]
    version = server.get("/system_stats")["system"]["comfyui_version"]
    if _version(needs) > _version(version):
        pytest.skip(f"needs ComfyUI >= {needs}; this one is {version} and lacks "
                    f"{lacking(workflow, info) or 'nothing it lists: the model files need the newer release'}")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_example_workflow_loads_in_this_comfyui(session, path, server):
    """Every node, link and widget value of the template as this server's /object_info defines them,
    the values matched to widgets as this server's front end loads them (sas_harness.server)."""
    workflow = json.loads(path.read_text())
    info = server.get("/object_info")
    _runs_here(server, workflow, info)
    nodes = {n["id"]: n for n in workflow["nodes"] if n["type"] not in FRONTEND_ONLY}
    missing = sorted({n["type"] for n in nodes.values() if n["type"] not in info})
    assert not missing, f"{path.name}: unknown node types {missing} (its minimum ComfyUI is too low)"
    assert {"SageAttentionScope", "SageAttentionStatus"} <= {n["type"] for n in nodes.values()}
    for link_id, src, src_slot, dst, dst_slot, link_type in workflow["links"]:
        out_type = info[nodes[src]["type"]]["output"][src_slot]
        in_socket = nodes[dst]["inputs"][dst_slot]
        spec = {name: type_ for name, type_, _, _ in ordered_inputs(info[nodes[dst]["type"]])}
        assert in_socket["name"] in spec, f"link {link_id}: {nodes[dst]['type']} has no input {in_socket['name']}"
        in_type = "COMBO" if isinstance(spec[in_socket["name"]], list) else spec[in_socket["name"]]
        assert out_type == link_type and _accepts(in_type, link_type), (
            f"link {link_id}: {nodes[src]['type']}[{src_slot}] {out_type} -> {nodes[dst]['type']}."
            f"{in_socket['name']} {in_type} (declared {link_type})")
        assert in_socket["link"] == link_id and link_id in nodes[src]["outputs"][src_slot]["links"]
    _, problems = api_prompt(workflow, info)
    assert not problems, f"{path.name}: {problems}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_example_workflow_queues_in_this_comfyui(session, path, server):
    """The prompt the front end makes of the template passes this server's validation of every input
    and runs until a loader reads a model file, which is an empty placeholder here."""
    workflow = json.loads(path.read_text())
    info = server.get("/object_info")
    _runs_here(server, workflow, info)
    prompt, problems = api_prompt(workflow, info)
    assert not problems, f"{path.name}: {problems}"
    status, body = server.post_raw("/prompt", {"prompt": prompt})
    assert status == 200 and not body.get("node_errors"), f"{path.name}: {status} {body}"
    entry = server.wait_for(body["prompt_id"])
    names = {name for names in example_model_files().values() for name in names}
    failure = placeholder_failure(entry, workflow, names)
    assert failure is None, f"{path.name}: {failure}"


def test_video_nodes_saved_for_0_3_75_load_into_this_comfyuis_widgets(server):
    """The templates save CreateVideo and SaveVideo as 0.3.75 defines them. ComfyUI 0.33 gave CreateVideo
    an optional bit_depth and made SaveVideo's format a DynamicCombo whose options carry the codec (and
    kept a hidden top-level codec for old API prompts): the saved values land as front end 1.49.6 puts
    them (tests/test_browser.py checks the model against it), the new widgets at their defaults."""
    info = server.get("/object_info")
    create, _ = load_widgets({"widgets_values": [24.0]}, info["CreateVideo"])
    save, problems = load_widgets({"widgets_values": ["video/x", "mp4", "h264"]}, info["SaveVideo"])
    assert problems == []
    if info["SaveVideo"]["input"]["required"]["format"][0] == DYNAMIC_COMBO:  # 0.33
        assert [(w.name, w.value) for w in create] == [("fps", 24.0), ("bit_depth", 8)]
        assert [(w.name, w.value, w.saved) for w in save] == [
            ("filename_prefix", "video/x", True), ("format", "mp4", True), ("format.codec", "h264", True),
            ("format.codec.encoding", "auto", False), ("codec", "auto", False)]
        required = ["format"]  # the codec is the format's, or the hidden optional one
    else:  # 0.3.75: two plain combos
        assert [(w.name, w.value) for w in create] == [("fps", 24.0)]
        assert [(w.name, w.value) for w in save] == [("filename_prefix", "video/x"), ("format", "mp4"),
                                                     ("codec", "h264")]
        required = ["format", "codec"]
    # what the front end would drop, and a required input left without a value, are problems
    _, surplus = load_widgets({"widgets_values": ["video/x", "mp4", "h264", "auto", "auto", "extra"]},
                              info["SaveVideo"])
    _, short = load_widgets({"widgets_values": ["video/x"]}, info["SaveVideo"])
    assert surplus and "left over" in surplus[-1] and "'extra'" in surplus[-1]
    assert short == [f"no value for widget {name}" for name in required]


def test_the_first_start_prints_no_import_failure_and_no_missing_package_banner(server):
    """What set-up installs is what ComfyUI looks for at start: its audio nodes load (torchaudio),
    the templates and embedded docs are there, and every custom node imports."""
    log = server.log.read_text(errors="replace")
    assert "sage_attention_scope" in log and "/system_stats" not in log  # the start, as ComfyUI printed it
    for banner in ("IMPORT FAILED", "not installed", "package not found", "Cannot import", "torchaudio missing"):
        assert banner not in log, f"{banner!r} in ComfyUI's start: {log[:6000]}"
