"""The Sage Attention Compare node: two images (or latents) of one workflow, run without and with the
Scope, side by side with a heat map of where they differ, the numbers that say how much (PSNR and SSIM;
for latents relative L2 and cosine), and each run's sampling time as the Scope recorded it in this prompt.
web/js/compare.js shows the text in the node; the image preview is ComfyUI's own."""
from __future__ import annotations

import math

import torch
from comfy_api.latest import io, ui

from ..patches import sampling
from ..patches.sampling import SCOPE_OFF_SUFFIX, SPARSE_SUFFIX, model_of_label
from . import session

UI_KEY = "sage_attention_compare"
NODE_ID = "SageAttentionCompare"
SSIM_WINDOW = 11  # the usual SSIM window (Wang et al.); smaller only for images smaller than it

TOOLTIPS = {
    "image_a": "The image made without SageAttention (the VAE Decode of the run with the Scope off or absent).",
    "image_b": "The image made with SageAttention: same workflow, seed, size and batch as image_a.",
    "latent_a": "Or compare latents: the sampler's output without SageAttention.",
    "latent_b": "The sampler's output with SageAttention, of the same size as latent_a.",
    "label_a": "What image_a / latent_a is, shown in the node.",
    "label_b": "What image_b / latent_b is, shown in the node.",
}
CONNECT = {"image": "two images of the same size and batch size, e.g. the VAE Decode outputs of the same workflow "
                    "run without and with the Scope (same seed, width, height and batch size)",
           "latent": "two latents of the same shape, e.g. the KSampler outputs of the same workflow run without "
                     "and with the Scope (same seed, width, height, length and batch size)"}


def _pair(kind: str, a, b):
    """Both inputs of a pair, or neither; half a pair is a wiring mistake worth saying."""
    if (a is None) != (b is None):
        given, missing = (f"{kind}_a", f"{kind}_b") if b is None else (f"{kind}_b", f"{kind}_a")
        raise ValueError(f"Sage Attention Compare: {given} is connected but {missing} is not. Connect "
                         f"{CONNECT[kind]}.")
    return None if a is None else (a, b)


def _parts(samples) -> list[torch.Tensor]:
    """A latent's tensors: a nested latent's parts (LTX-2's video and audio), else the one tensor."""
    return list(samples.unbind()) if getattr(samples, "is_nested", False) else [samples]


def _same_shape(kind: str, a, b, axes: str) -> None:
    """Shapes compared part by part (a nested latent's ``shape`` is only its first part's)."""
    shapes = [[tuple(p.shape) for p in _parts(x)] for x in (a, b)]
    if shapes[0] != shapes[1]:
        a_is, b_is = (" + ".join("x".join(map(str, s)) for s in x) for x in shapes)
        raise ValueError(f"Sage Attention Compare: {kind}_a is {a_is} and {kind}_b is {b_is} ({axes}); "
                         f"they differ in size or batch size. Connect {CONNECT[kind]}.")


def heat_map(diff: torch.Tensor) -> torch.Tensor:
    """[B, H, W] differences -> [B, H, W, 3]: black where equal, through red to yellow at the largest
    difference of the batch (all black when nothing differs)."""
    t = diff / diff.max() if diff.max() > 0 else torch.zeros_like(diff)
    return torch.stack([(2 * t).clamp(0, 1), (2 * t - 1).clamp(0, 1), torch.zeros_like(t)], dim=-1)


def _rgb(images: torch.Tensor) -> torch.Tensor:
    """A shown image's three colour channels: alpha dropped, grey repeated."""
    return images[..., :3] if images.shape[-1] >= 3 else images[..., :1].expand(*images.shape[:-1], 3)


def _number(x: float):
    """JSON has no infinity (the front end's JSON.parse refuses it): a non-finite value goes as text."""
    x = float(x)
    return x if math.isfinite(x) else str(x)


def compare_images(a: torch.Tensor, b: torch.Tensor):
    """(side-by-side image, metrics) of two [B, H, W, C] images in 0..1."""
    import kornia.metrics  # ComfyUI requires kornia; imported here so that the pack loads without it
    _same_shape("image", a, b, "batch x height x width x channels")
    a, b = a.float().cpu(), b.float().cpu()
    diff = (a - b).abs()
    x, y = a.movedim(-1, 1), b.movedim(-1, 1)  # kornia wants [B, C, H, W]
    # 'same' padding reflects, which needs the window's half under the image's side.
    window = min(SSIM_WINDOW, 2 * min(a.shape[1], a.shape[2]) - 1)
    metrics = {
        "psnr_db": float(kornia.metrics.psnr(x, y, 1.0)),  # one MSE over the whole batch; inf when identical
        # eps=0: identical images score exactly 1 (kornia's default eps biases flat ones below it)
        "ssim": float(kornia.metrics.ssim(x, y, window, max_val=1.0, eps=0.0).mean()),
        "max_abs_diff": float(diff.max()),
    }
    return torch.cat([_rgb(a), _rgb(b), heat_map(diff.mean(-1))], dim=2), metrics


def _latent_tensor(kind: str, latent) -> torch.Tensor:
    samples = latent.get("samples") if isinstance(latent, dict) else None
    if samples is None:
        raise ValueError(f"Sage Attention Compare: {kind} is not a LATENT (a dict with 'samples'). Connect a "
                         f"sampler's LATENT output.")
    return samples


def _flat(samples) -> torch.Tensor:
    """Every value of a latent as one vector (a nested latent, LTX-2's video + audio, all its parts), in
    float64 so that identical latents give a cosine of exactly 1 and a relative L2 of 0."""
    return torch.cat([p.cpu().double().flatten() for p in _parts(samples)])


def _frame(samples) -> torch.Tensor:
    """The [B, C, H, W] picture of a latent: a nested one's first part (the video), a video's middle frame."""
    x = _parts(samples)[0].float().cpu()
    return x[:, :, x.shape[2] // 2] if x.ndim == 5 else x


def compare_latents(a_latent: dict, b_latent: dict):
    """(side-by-side image, metrics) of two LATENT dicts: the metrics over every value, the picture
    from the first three channels (of the middle frame of a video), each channel normalised over
    both latents together so that equal values look equal."""
    a, b = _latent_tensor("latent_a", a_latent), _latent_tensor("latent_b", b_latent)
    _same_shape("latent", a, b, "batch x channels x [frames x] height x width")
    fa, fb = _flat(a), _flat(b)
    norm_a, norm_b, l2 = fa.norm(), fb.norm(), (fa - fb).norm()
    metrics = {
        "rel_l2": float(l2 / norm_a) if norm_a > 0 else (0.0 if l2 == 0 else math.inf),
        "cosine": float(fa @ fb / (norm_a * norm_b)) if norm_a > 0 and norm_b > 0 else float(norm_a == norm_b),
        "max_abs_diff": float((fa - fb).abs().max()) if fa.numel() else 0.0,
    }
    va, vb = _frame(a), _frame(b)
    views = torch.cat([va, vb])[:, [min(c, va.shape[1] - 1) for c in range(3)]]
    lo = views.amin(dim=(0, 2, 3), keepdim=True)
    span = views.amax(dim=(0, 2, 3), keepdim=True) - lo
    views = ((views - lo) / span.where(span > 0, torch.ones_like(span))).movedim(1, -1)
    shown_a, shown_b = views.split(va.shape[0])
    return torch.cat([shown_a, shown_b, heat_map((va - vb).abs().mean(1))], dim=2), metrics


def timing_lines(run: list[dict]) -> list[str]:
    """This prompt's sampling time per model as the Scope recorded it: each model's Scope-off run, then
    its dense Scope run with the speed-up over the Scope-off one, then its sparse run with the speed-up
    over the dense one (over the Scope-off one where no dense run was made)."""
    timed = {m["model"]: m["sampling_ms"] for m in run if m["sampling_ms"]}
    bases = list(dict.fromkeys(model_of_label(label) for label in timed))
    parts = []
    for base in bases:
        off, dense, sparse = (timed.get(base + suffix) for suffix in (SCOPE_OFF_SUFFIX, "", SPARSE_SUFFIX))
        if off is not None:
            parts.append(f"{base}{SCOPE_OFF_SUFFIX}: {off / 1e3:.2f} s")
        if dense is not None:
            parts.append(f"{base}: {dense / 1e3:.2f} s{_speedup(off, dense, '')}")
        if sparse is not None:
            if dense is not None:
                faster = _speedup(dense, sparse, " over dense")
            else:
                faster = _speedup(off, sparse, "")
            parts.append(f"{base}{SPARSE_SUFFIX}: {sparse / 1e3:.2f} s{faster}")
    if not parts:
        return ["Sampling time: none recorded in this run (the Scope records runs whose model goes through a "
                "Sage Attention Scope node, enabled or not)"]
    return ["Sampling time: " + "; ".join(parts)]


def _speedup(reference_ms, ms: float, against: str) -> str:
    """" (1.25x)": how many times faster than ``reference_ms``; nothing without a reference."""
    if reference_ms is None:
        return ""
    return f" ({reference_ms / ms:.2f}x{against})"


def compare(image_a=None, image_b=None, latent_a=None, latent_b=None, label_a="", label_b=""):
    """What the node does, without the node machinery: (output image, text lines, metrics)."""
    images, latents = _pair("image", image_a, image_b), _pair("latent", latent_a, latent_b)
    if images is None and latents is None:
        raise ValueError(f"Sage Attention Compare needs a pair to compare: image_a and image_b ({CONNECT['image']}), "
                         f"or latent_a and latent_b ({CONNECT['latent']}).")
    lines, metrics, out = [f"left: {label_a} | middle: {label_b} | right: difference (black: equal, yellow: "
                           f"the largest)"], {}, None
    if images is not None:
        out, m = compare_images(*images)
        metrics["image"] = m
        psnr = "inf" if math.isinf(m["psnr_db"]) else f"{m['psnr_db']:.2f}"
        lines.append(f"Images: PSNR {psnr} dB, SSIM {m['ssim']:.4f}, max abs difference {m['max_abs_diff']:.4f}")
    if latents is not None:
        shown, m = compare_latents(*latents)
        out = shown if out is None else out  # both pairs: the images are the picture, both sets of numbers shown
        metrics["latent"] = m
        lines.append(f"Latents: relative L2 {m['rel_l2']:.5f}, cosine {m['cosine']:.6f}, "
                     f"max abs difference {m['max_abs_diff']:.4f}")
    lines += timing_lines(session().ledger.snapshot(sampling.run_id())["run"])
    return out, lines, metrics


class SageAttentionCompare(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id=NODE_ID,
            display_name="Sage Attention Compare",
            category="model_patches/attention",
            description="Compares the images (or latents) of a run without and a run with SageAttention: side by "
                        "side with a heat map of the difference, PSNR, SSIM and the largest difference, and the "
                        "sampling time of each run in this prompt as the Scope recorded it.",
            inputs=[
                io.Image.Input("image_a", optional=True, tooltip=TOOLTIPS["image_a"]),
                io.Image.Input("image_b", optional=True, tooltip=TOOLTIPS["image_b"]),
                io.Latent.Input("latent_a", optional=True, tooltip=TOOLTIPS["latent_a"]),
                io.Latent.Input("latent_b", optional=True, tooltip=TOOLTIPS["latent_b"]),
                io.String.Input("label_a", default="without SageAttention", optional=True, tooltip=TOOLTIPS["label_a"]),
                io.String.Input("label_b", default="with SageAttention", optional=True, tooltip=TOOLTIPS["label_b"]),
            ],
            outputs=[io.Image.Output(display_name="comparison")],
            is_output_node=True,
        )

    @classmethod
    def execute(cls, image_a=None, image_b=None, latent_a=None, latent_b=None, label_a="without SageAttention",
                label_b="with SageAttention") -> io.NodeOutput:
        out, lines, metrics = compare(image_a, image_b, latent_a, latent_b, label_a, label_b)
        text = "\n".join(lines)
        shown = {"labels": [label_a, label_b], "lines": lines,
                 "metrics": {k: {name: _number(v) for name, v in m.items()} for k, m in metrics.items()}}
        # The preview is ComfyUI's own (temp folder, "images"); the text is compare.js's to show.
        preview = ui.PreviewImage(out, cls=cls).as_dict()
        return io.NodeOutput(out, ui=preview | {"text": [text], UI_KEY: [shown]})
