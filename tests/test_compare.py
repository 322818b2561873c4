"""The Sage Attention Compare node: side-by-side image, heat map, metrics and this run's sampling times."""
import json
import math
import re
from pathlib import Path

import pytest
import torch

from sage_attention_scope.nodes.compare import UI_KEY, SageAttentionCompare
from sas_harness import ROOT
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.models import flux_conditioning, sample, tiny_flux
from sage_attention_scope.nodes.scope import scoped_model


@pytest.fixture(autouse=True)
def temp_dir(tmp_path):
    """The preview PNGs go to a test folder, not the ComfyUI tree's temp/."""
    try:
        import folder_paths
    except ImportError:  # the pip-installable ComfyUI's layout
        from comfy.cmd import folder_paths
    before = folder_paths.get_temp_directory()
    folder_paths.set_temp_directory(str(tmp_path))  # both layouts have it (the pip-installable keeps no module global)
    yield Path(folder_paths.get_temp_directory())
    folder_paths.set_temp_directory(before)


def image(seed=0, batch=1, h=32, w=48):
    return torch.rand(batch, h, w, 3, generator=torch.Generator().manual_seed(seed))


def run(**inputs):
    out = SageAttentionCompare.execute(**inputs)
    return out.result[0], out.ui[UI_KEY][0], out.ui["text"][0]


def test_schema_all_optional_with_tooltips(session):
    info = SageAttentionCompare.GET_NODE_INFO_V1()
    assert info["input"].get("required", {}) == {}
    optional = info["input"]["optional"]
    assert list(optional) == ["image_a", "image_b", "latent_a", "latent_b", "label_a", "label_b"]
    assert all(spec[1].get("tooltip") for spec in optional.values())
    assert optional["label_a"][1]["default"] == "without SageAttention"
    assert optional["label_b"][1]["default"] == "with SageAttention"
    assert info["output"] == ["IMAGE"] and info["output_node"] and info["category"] == "model_patches/attention"
    assert info["display_name"] == "Sage Attention Compare"


def test_identical_images(session, temp_dir):
    a = image()
    out, shown, text = run(image_a=a, image_b=a.clone())
    m = shown["metrics"]["image"]
    assert float(m["psnr_db"]) == math.inf and m["ssim"] == 1.0 and m["max_abs_diff"] == 0
    assert "PSNR inf dB" in text and "SSIM 1.0000" in text
    json.dumps(shown, allow_nan=False)  # the front end's JSON.parse has no Infinity
    black = torch.zeros(1, 16, 16, 3)  # flat images, where kornia's default eps would score under 1
    assert run(image_a=black, image_b=black)[1]["metrics"]["image"]["ssim"] == 1.0
    # ComfyUI's preview: a PNG in the temp folder, named in "images".
    preview = SageAttentionCompare.execute(image_a=a, image_b=a).ui["images"]
    assert len(preview) == 1 and preview[0]["type"] == "temp" and (temp_dir / preview[0]["filename"]).is_file()


def test_psnr_of_a_noised_copy_matches_an_independent_computation(session):
    a = image(seed=1)
    noise = torch.randn(a.shape, generator=torch.Generator().manual_seed(2)) * 0.05
    b = (a + noise).clamp(0, 1)
    _, shown, text = run(image_a=a, image_b=b)
    expected = 10 * math.log10(1.0 / float(((a.double() - b.double()) ** 2).mean()))
    m = shown["metrics"]["image"]
    assert m["psnr_db"] == pytest.approx(expected, abs=0.1)
    assert f"PSNR {m['psnr_db']:.2f} dB" in text
    assert 0 < m["ssim"] < 1 and m["max_abs_diff"] == pytest.approx(float((a - b).abs().max()))


def test_output_is_both_inputs_and_the_heat_map(session):
    a = image(seed=3, batch=2)
    b = a.clone()
    b[1, 4:8, 10:20] = 1 - b[1, 4:8, 10:20]  # one patch differs in the second image of the batch
    out, _, _ = run(image_a=a, image_b=b)
    w = a.shape[2]
    assert out.shape == (2, a.shape[1], 3 * w, 3)
    assert torch.equal(out[..., :w, :], a) and torch.equal(out[..., w:2 * w, :], b)
    heat = out[..., 2 * w:, :]
    differs = torch.zeros(a.shape[:3], dtype=torch.bool)
    differs[1, 4:8, 10:20] = True
    assert (heat[~differs] == 0).all() and (heat[differs].sum(-1) > 0).all()  # black where they agree
    assert heat.amax(dim=(0, 1, 2)).tolist() == [1.0, 1.0, 0.0]  # yellow at the largest difference


def test_latents(session):
    g = torch.Generator().manual_seed(4)
    latent = {"samples": torch.randn(1, 16, 8, 12, generator=g)}
    out, shown, text = run(latent_a=latent, latent_b={"samples": latent["samples"].clone()})
    m = shown["metrics"]["latent"]
    assert m["rel_l2"] == 0 and m["cosine"] == pytest.approx(1.0) and m["max_abs_diff"] == 0
    assert out.shape == (1, 8, 36, 3) and 0 <= out.min() and out.max() <= 1  # an IMAGE
    assert torch.equal(out[:, :, :12], out[:, :, 12:24]) and (out[:, :, 24:] == 0).all()
    assert "relative L2 0.00000" in text
    # A video latent [B, C, T, H, W]: the metrics over all of it, the picture of its middle frame.
    video = torch.randn(1, 16, 5, 8, 12, generator=g)
    other = video.clone()
    other[:, :, 2] += 1.0
    out, shown, _ = run(latent_a={"samples": video}, latent_b={"samples": other})
    expected = float((video - other).norm() / video.norm())
    assert shown["metrics"]["latent"]["rel_l2"] == pytest.approx(expected, rel=1e-5)
    assert out.shape == (1, 8, 36, 3) and (out[:, :, 24:].amax(-1) > 0).all()  # the middle frame differs


@pytest.mark.parametrize("b, what", [(image(h=32, w=40), "1x32x48x3 and image_b is 1x32x40x3"),
                                     (image(batch=2), "1x32x48x3 and image_b is 2x32x48x3")])
def test_mismatched_images_are_refused_clearly(session, b, what):
    with pytest.raises(ValueError, match=f"image_a is {what}.*Connect two images of the same size and batch size"):
        run(image_a=image(), image_b=b)


def test_missing_inputs_are_refused_clearly(session):
    with pytest.raises(ValueError, match="needs a pair to compare: image_a and image_b"):
        run()
    with pytest.raises(ValueError, match="latent_a is connected but latent_b is not"):
        run(latent_a={"samples": torch.zeros(1, 4, 8, 8)})
    with pytest.raises(ValueError, match="latent_a is 1x4x8x8 and latent_b is 1x4x8x9.*Connect two latents"):
        run(latent_a={"samples": torch.zeros(1, 4, 8, 8)}, latent_b={"samples": torch.zeros(1, 4, 8, 9)})


def test_sampling_times_of_this_run_with_the_scope_off_and_on(session):
    from comfy_execution.utils import CurrentNodeContext
    model, a = tiny_flux(), image()
    with registered(session, make_kernel("double", RecordingKernel())):
        with CurrentNodeContext("compare", "2"):
            sample(scoped_model(model, kernel="double", enabled=False), flux_conditioning())
        with CurrentNodeContext("compare", "3"):
            sample(scoped_model(model, kernel="double", min_seq_len=1), flux_conditioning())
        with CurrentNodeContext("compare", "9"):
            _, shown, text = run(image_a=a, image_b=a)
    line = next(line for line in shown["lines"] if line.startswith("Sampling time: "))
    found = re.fullmatch(r"Sampling time: FLUX\.1 \(Flux\) \(Scope off\): (\d+\.\d\d) s; "
                         r"FLUX\.1 \(Flux\): (\d+\.\d\d) s \((\d+\.\d\d)x\)", line)
    assert found, line
    run_record = {m["model"]: m["sampling_ms"] for m in _payload_run(session, "compare")}
    assert float(found[1]) == pytest.approx(run_record["FLUX.1 (Flux) (Scope off)"] / 1e3, abs=0.006)
    assert float(found[3]) == pytest.approx(run_record["FLUX.1 (Flux) (Scope off)"] / run_record["FLUX.1 (Flux)"],
                                            abs=0.006)
    assert line in text
    with CurrentNodeContext("another prompt", "9"):  # a later prompt without sampling shows none
        assert "none recorded in this run" in run(image_a=a, image_b=a)[2]


def test_dense_and_sparse_runs_of_one_model_keep_their_own_sampling_times(session):
    """The Dense vs sparse template samples one model through a dense Scope and a sparse one: each run
    has its own time (not their sum), and the sparse one's speed-up is over the dense one."""
    from comfy_execution.utils import CurrentNodeContext
    model, a = tiny_flux(), image()
    with registered(session, make_kernel("double", RecordingKernel())):
        with CurrentNodeContext("dense vs sparse", "2"):
            sample(scoped_model(model, kernel="double", min_seq_len=1), flux_conditioning())
        with CurrentNodeContext("dense vs sparse", "3"):
            sample(scoped_model(model, kernel="double", min_seq_len=1, sparse="sol-attn"), flux_conditioning())
        with CurrentNodeContext("dense vs sparse", "9"):
            _, shown, text = run(image_a=a, image_b=a)
    run_record = {m["model"]: m["sampling_ms"] for m in _payload_run(session, "dense vs sparse")}
    assert set(run_record) == {"FLUX.1 (Flux)", "FLUX.1 (Flux) (sparse)"}
    line = next(line for line in shown["lines"] if line.startswith("Sampling time: "))
    found = re.fullmatch(r"Sampling time: FLUX\.1 \(Flux\): (\d+\.\d\d) s; "
                         r"FLUX\.1 \(Flux\) \(sparse\): (\d+\.\d\d) s \((\d+\.\d\d)x over dense\)", line)
    assert found, line
    assert float(found[1]) == pytest.approx(run_record["FLUX.1 (Flux)"] / 1e3, abs=0.006)
    assert float(found[2]) == pytest.approx(run_record["FLUX.1 (Flux) (sparse)"] / 1e3, abs=0.006)
    assert float(found[3]) == pytest.approx(run_record["FLUX.1 (Flux)"] / run_record["FLUX.1 (Flux) (sparse)"],
                                            abs=0.006)


def _payload_run(session, run_id):
    from sage_attention_scope.nodes.status import payload
    return payload(session, run_id)["run"]


def test_the_front_end_reads_the_key_the_node_sends():
    js = (ROOT / "web" / "js" / "compare.js").read_text()
    assert f'"{UI_KEY}"' in js and "dataset.sageCompare" in js and '"SageAttentionCompare"' in js


def test_nested_latents_are_compared_in_all_their_parts(session):
    """LTX-2's latent nests video and audio: the numbers cover both, the picture is the video."""
    from comfy.nested_tensor import NestedTensor
    g = torch.Generator().manual_seed(5)
    video, audio = torch.randn(1, 128, 3, 4, 4, generator=g), torch.randn(1, 8, 5, 16, generator=g)
    out, shown, _ = run(latent_a={"samples": NestedTensor([video, audio])},
                        latent_b={"samples": NestedTensor([video.clone(), audio + 0.1])})
    assert shown["metrics"]["latent"]["max_abs_diff"] == pytest.approx(0.1, abs=1e-6)
    assert out.shape == (1, 4, 12, 3) and (out[:, :, 8:] == 0).all()  # the video part agrees
    with pytest.raises(ValueError,
                       match=r"latent_a is 1x128x3x4x4 \+ 1x8x5x16 and latent_b is 1x128x3x4x4 \+ 1x8x4x16"):
        run(latent_a={"samples": NestedTensor([video, audio])},
            latent_b={"samples": NestedTensor([video, audio[:, :, :4]])})
