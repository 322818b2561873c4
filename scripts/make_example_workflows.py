"""Writes example_workflows/*.json: one standard graph per family, in ComfyUI's UI (LiteGraph)
format, with the Sage Attention Scope before the sampler and a Status node after it, and a
comparison of one model with the Scope off and on.

ComfyUI's template browser (front end 1.32.9) reads nothing of a custom node's template but its
file name: the card's title is the file stem, its description the stem with "-" and "_" as spaces,
its thumbnail the same-name .jpg (scripts/make_thumbnails.py). So each file is named by its title.
The description, the minimum ComfyUI version and the models are written into the graph (a
Markdown note the canvas shows) and into ``extra["sage_attention_scope"]``; core nodes carry
``properties.cnr_id = "comfy-core"`` and ``properties.ver``, the release they load in (NEWER_NODES,
NEWER_VALUES), which the front end's missing-nodes dialog reads ("nodes from version ..."). A template
that needs a newer ComfyUI than the pack's floor says which in its title.

Video templates save CreateVideo and SaveVideo as ComfyUI 0.3.75 defines them ([fps]; [prefix,
format, codec]): newer front ends load those values into the nodes' newer widgets (0.33's front end
1.49.6 gives CreateVideo's optional bit_depth its default and puts the codec under SaveVideo's format;
tests/sas_harness/server.py models it, tests/test_browser.py checks the model against the front end).

Model file names and download addresses are the ones ComfyUI's own templates
(comfyui-workflow-templates) use. Run from the repository root:
    python scripts/make_example_workflows.py
tests/test_server.py checks every file against a running ComfyUI's /object_info;
tests/test_example_workflows.py checks the files themselves.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "example_workflows"
EXTRA_KEY = "sage_attention_scope"  # the templates' own metadata in a workflow's "extra"
PACK_ID = "sage-attention-scope"    # the pack's registry id (pyproject.toml), for the front end's missing-pack lookup
PACK_NODES = ("SageAttentionScope", "SageAttentionStatus", "SageAttentionCompare")
FLOOR = "0.3.75"                    # the pack's own minimum ComfyUI (pyproject.toml requires-comfyui)
# Core nodes newer than FLOOR, with the ComfyUI release that added them, from ComfyUI's changelog
# (docs.comfy.org/changelog): v0.8.0 "LTXV 2 model support" (its nodes); v0.4.0 (December 10, 2025)
# "Kandinsky 5.0 (T2V/I2V/T2I variants)".
NEWER_NODES = {
    **{name: "0.8.0" for name in ("LTXAVTextEncoderLoader", "LTXVAudioVAELoader", "LTXVEmptyLatentAudio",
                                  "LTXVConcatAVLatent", "LTXVSeparateAVLatent", "LTXVAudioVAEDecode")},
    "Kandinsky5ImageToVideo": "0.4.0",
}
# Widget values an older ComfyUI refuses or cannot load though it has the node: a text encoder type
# its loader does not list ("type: 'krea2' not in list") or a checkpoint its model detection does not
# know. A node carrying one is saved as from that release (its ``properties.ver``). From the changelog:
# v0.26.0 (June 23, 2026) "Krea2"; v0.4.0 Kandinsky 5.0; v0.16.0 (March 5, 2026) "LTXAV 2.3 model".
NEWER_VALUES = {
    "krea2": "0.26.0",                               # CLIPLoader type
    "kandinsky5": "0.4.0",                           # DualCLIPLoader type
    "ltx-2.3-22b-dev-fp8.safetensors": "0.16.0",     # the LTX-2.3 checkpoint, as its three loaders name it
}
FRONTEND_ONLY = ("MarkdownNote", "Note")  # drawn by the front end, never sent to the server
PACK_COLORS = {"color": "#233", "bgcolor": "#355"}  # LiteGraph's "cyan": the pack's nodes stand out
NOTE_COLORS = {"color": "#432", "bgcolor": "#653"}  # the brown of ComfyUI's own templates' notes

MODELS = {  # name -> (folder, address)
    "flux1-dev.safetensors": ("diffusion_models", "https://huggingface.co/Comfy-Org/flux1-dev/resolve/main/flux1-dev.safetensors"),
    "clip_l.safetensors": ("text_encoders", "https://huggingface.co/comfyanonymous/flux_text_encoders/resolve/main/clip_l.safetensors"),
    "t5xxl_fp16.safetensors": ("text_encoders", "https://huggingface.co/comfyanonymous/flux_text_encoders/resolve/main/t5xxl_fp16.safetensors"),
    "ae.safetensors": ("vae", "https://huggingface.co/Comfy-Org/z_image_turbo/resolve/main/split_files/vae/ae.safetensors"),
    "flux2_dev_fp8mixed.safetensors": ("diffusion_models", "https://huggingface.co/Comfy-Org/flux2-dev/resolve/main/split_files/diffusion_models/flux2_dev_fp8mixed.safetensors"),
    "mistral_3_small_flux2_bf16.safetensors": ("text_encoders", "https://huggingface.co/Comfy-Org/flux2-dev/resolve/main/split_files/text_encoders/mistral_3_small_flux2_bf16.safetensors"),
    "full_encoder_small_decoder.safetensors": ("vae", "https://huggingface.co/black-forest-labs/FLUX.2-small-decoder/resolve/main/full_encoder_small_decoder.safetensors"),
    "qwen_image_fp8_e4m3fn.safetensors": ("diffusion_models", "https://huggingface.co/Comfy-Org/Qwen-Image_ComfyUI/resolve/main/split_files/diffusion_models/qwen_image_fp8_e4m3fn.safetensors"),
    "qwen_2.5_vl_7b_fp8_scaled.safetensors": ("text_encoders", "https://huggingface.co/Comfy-Org/Qwen-Image_ComfyUI/resolve/main/split_files/text_encoders/qwen_2.5_vl_7b_fp8_scaled.safetensors"),
    "qwen_image_vae.safetensors": ("vae", "https://huggingface.co/Comfy-Org/Qwen-Image_ComfyUI/resolve/main/split_files/vae/qwen_image_vae.safetensors"),
    "z_image_turbo_bf16.safetensors": ("diffusion_models", "https://huggingface.co/Comfy-Org/z_image_turbo/resolve/main/split_files/diffusion_models/z_image_turbo_bf16.safetensors"),
    "qwen_3_4b.safetensors": ("text_encoders", "https://huggingface.co/Comfy-Org/z_image_turbo/resolve/main/split_files/text_encoders/qwen_3_4b.safetensors"),
    "ltx-2-19b-dev-fp8.safetensors": ("checkpoints", "https://huggingface.co/Lightricks/LTX-2/resolve/main/ltx-2-19b-dev-fp8.safetensors"),
    "gemma_3_12B_it_fp4_mixed.safetensors": ("text_encoders", "https://huggingface.co/Comfy-Org/ltx-2/resolve/main/split_files/text_encoders/gemma_3_12B_it_fp4_mixed.safetensors"),
    "sd_xl_base_1.0.safetensors": ("checkpoints", "https://huggingface.co/stabilityai/stable-diffusion-xl-base-1.0/resolve/main/sd_xl_base_1.0.safetensors"),
    # Wan 2.1 / 2.2 (templates image_to_video_wan, video_wan2_2_14B_t2v)
    "wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors": ("diffusion_models", "https://huggingface.co/Comfy-Org/Wan_2.2_ComfyUI_Repackaged/resolve/main/split_files/diffusion_models/wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors"),
    "wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors": ("diffusion_models", "https://huggingface.co/Comfy-Org/Wan_2.2_ComfyUI_Repackaged/resolve/main/split_files/diffusion_models/wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors"),
    "wan2.1_i2v_480p_14B_fp16.safetensors": ("diffusion_models", "https://huggingface.co/Comfy-Org/Wan_2.1_ComfyUI_repackaged/resolve/main/split_files/diffusion_models/wan2.1_i2v_480p_14B_fp16.safetensors"),
    "umt5_xxl_fp8_e4m3fn_scaled.safetensors": ("text_encoders", "https://huggingface.co/Comfy-Org/Wan_2.1_ComfyUI_repackaged/resolve/main/split_files/text_encoders/umt5_xxl_fp8_e4m3fn_scaled.safetensors"),
    "wan_2.1_vae.safetensors": ("vae", "https://huggingface.co/Comfy-Org/Wan_2.1_ComfyUI_repackaged/resolve/main/split_files/vae/wan_2.1_vae.safetensors"),
    "clip_vision_h.safetensors": ("clip_vision", "https://huggingface.co/Comfy-Org/Wan_2.1_ComfyUI_repackaged/resolve/main/split_files/clip_vision/clip_vision_h.safetensors"),
    # HunyuanVideo 1.5 (template video_hunyuan_video_1.5_720p_t2v; its Qwen 2.5 VL file is the one above)
    "hunyuanvideo1.5_720p_t2v_fp16.safetensors": ("diffusion_models", "https://huggingface.co/Comfy-Org/HunyuanVideo_1.5_repackaged/resolve/main/split_files/diffusion_models/hunyuanvideo1.5_720p_t2v_fp16.safetensors"),
    "byt5_small_glyphxl_fp16.safetensors": ("text_encoders", "https://huggingface.co/Comfy-Org/HunyuanVideo_1.5_repackaged/resolve/main/split_files/text_encoders/byt5_small_glyphxl_fp16.safetensors"),
    "hunyuanvideo15_vae_fp16.safetensors": ("vae", "https://huggingface.co/Comfy-Org/HunyuanVideo_1.5_repackaged/resolve/main/split_files/vae/hunyuanvideo15_vae_fp16.safetensors"),
    # SD3.5 Large (template sd3.5_simple_example: the checkpoint holds its text encoders and VAE)
    "sd3.5_large_fp8_scaled.safetensors": ("checkpoints", "https://huggingface.co/Comfy-Org/stable-diffusion-3.5-fp8/resolve/main/sd3.5_large_fp8_scaled.safetensors"),
    # Chroma (template image_chroma_text_to_image; its VAE is FLUX.1's ae.safetensors above)
    "Chroma1-HD-fp8_scaled_rev2.safetensors": ("diffusion_models", "https://huggingface.co/silveroxides/Chroma1-HD-fp8-scaled/resolve/main/Chroma1-HD-fp8_scaled_rev2.safetensors"),
    "t5xxl_fp8_e4m3fn_scaled.safetensors": ("text_encoders", "https://huggingface.co/comfyanonymous/flux_text_encoders/resolve/main/t5xxl_fp8_e4m3fn_scaled.safetensors"),
    # Krea-2 Turbo (template image_krea2_turbo_t2i; its VAE is Qwen-Image's qwen_image_vae above, which
    # Comfy-Org/Krea-2 also carries under vae/)
    "krea2_turbo_fp8_scaled.safetensors": ("diffusion_models", "https://huggingface.co/Comfy-Org/Krea-2/resolve/main/diffusion_models/krea2_turbo_fp8_scaled.safetensors"),
    "qwen3vl_4b_fp8_scaled.safetensors": ("text_encoders", "https://huggingface.co/Comfy-Org/Krea-2/resolve/main/text_encoders/qwen3vl_4b_fp8_scaled.safetensors"),
    # Kandinsky 5.0 Video Lite (template video_kandinsky5_t2v; its Qwen 2.5 VL and CLIP-L files are above)
    "kandinsky5lite_t2v_sft_5s.safetensors": ("diffusion_models", "https://huggingface.co/kandinskylab/Kandinsky-5.0-T2V-Lite-sft-5s/resolve/main/model/kandinsky5lite_t2v_sft_5s.safetensors"),
    "hunyuan_video_vae_bf16.safetensors": ("vae", "https://huggingface.co/Kijai/HunyuanVideo_comfy/resolve/main/hunyuan_video_vae_bf16.safetensors"),
    # LTX-2.3 (template video_ltx2_3_t2v; its Gemma 3 file is LTX-2's above)
    "ltx-2.3-22b-dev-fp8.safetensors": ("checkpoints", "https://huggingface.co/Lightricks/LTX-2.3-fp8/resolve/main/ltx-2.3-22b-dev-fp8.safetensors"),
    "ltx_2.3_22b_distilled_1.1_lora_dynamic_fro09_avg_rank_111_bf16.safetensors": ("loras", "https://huggingface.co/Comfy-Org/ltx-2.3/resolve/main/split_files/loras/ltx_2.3_22b_distilled_1.1_lora_dynamic_fro09_avg_rank_111_bf16.safetensors"),
}


def _settings_module():
    spec = importlib.util.spec_from_file_location("sas_settings", OUT.parent / "patches" / "settings.py")
    settings = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up there
    spec.loader.exec_module(settings)
    return settings


def scope_widgets(**changes) -> list:
    """The Scope node's widgets in schema order: the fields of patches/settings.py, at their defaults
    but for ``changes``."""
    settings = _settings_module().Settings
    names = [f.name for f in dataclasses.fields(settings)]
    unknown = set(changes) - set(names)
    if unknown:
        raise ValueError(f"not Scope inputs: {sorted(unknown)}")
    return [changes.get(f.name, f.default) for f in dataclasses.fields(settings)]


SCOPE_WIDGETS = scope_widgets()
STATUS_WIDGETS = [False]  # reset_counters
COMPARE_LABELS = ["without SageAttention", "with SageAttention"]  # label_a, label_b
MULTILINE = {"CLIPTextEncode"}  # nodes with a multiline text box
IMAGE_PREVIEW = {"LoadImage"}  # nodes that show the picture they load under their widgets


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def node_version(type_: str, widgets=()) -> str:
    """The oldest ComfyUI release a core node of ``type_`` with these widget values loads in."""
    needs = [FLOOR, NEWER_NODES.get(type_, FLOOR)]
    needs += [NEWER_VALUES[w] for w in widgets if isinstance(w, str) and w in NEWER_VALUES]
    return max(needs, key=_version_key)


class Graph:
    def __init__(self):
        self.nodes: list[dict] = []
        self.links: list[list] = []

    def add(self, type_: str, widgets=(), inputs=(), outputs=(), title: str | None = None) -> dict:
        """``inputs``/``outputs``: (name, TYPE) pairs of the node's link sockets, in order."""
        node_id = len(self.nodes) + 1
        node = {
            "id": node_id, "type": type_, "pos": [0, 0], "size": [0, 0],  # as_json lays the graph out
            "flags": {}, "order": node_id - 1, "mode": 0,
            "inputs": [{"name": n, "type": t, "link": None} for n, t in inputs],
            "outputs": [{"name": n, "type": t, "links": [], "slot_index": i} for i, (n, t) in enumerate(outputs)],
            "properties": {"Node name for S&R": type_},
            "widgets_values": list(widgets),
        }
        if type_ in PACK_NODES:
            node["properties"]["cnr_id"] = PACK_ID
            node.update(PACK_COLORS)
        elif type_ not in FRONTEND_ONLY:
            node["properties"].update({"cnr_id": "comfy-core", "ver": node_version(type_, widgets)})
        models = [w for w in widgets if isinstance(w, str) and w in MODELS]
        if models:
            node["properties"]["models"] = [{"name": m, "url": MODELS[m][1], "directory": MODELS[m][0]} for m in models]
        if title:
            node["title"] = title
        if type_ in FRONTEND_ONLY:
            node.update(NOTE_COLORS)
        self.nodes.append(node)
        return node

    def link(self, src: dict, output: int, dst: dict, input_name: str) -> None:
        link_id = len(self.links) + 1
        slot = next(i for i, s in enumerate(dst["inputs"]) if s["name"] == input_name)
        link_type = src["outputs"][output]["type"]
        self.links.append([link_id, src["id"], output, dst["id"], slot, link_type])
        src["outputs"][output]["links"].append(link_id)
        dst["inputs"][slot]["link"] = link_id

    def scope(self, model_src: dict, model_output: int, widgets=None, title: str | None = None) -> dict:
        scope = self.add("SageAttentionScope", SCOPE_WIDGETS if widgets is None else widgets,
                         [("model", "MODEL")], [("MODEL", "MODEL")], title=title)
        self.link(model_src, model_output, scope, "model")
        return scope

    def status(self, after: dict, after_output: int) -> dict:
        status = self.add("SageAttentionStatus", STATUS_WIDGETS, [("after", "*")], [("status", "STRING")])
        self.link(after, after_output, status, "after")
        return status

    def scope_and_status(self, model_src: dict, model_output: int, after: dict, after_output: int) -> dict:
        scope = self.scope(model_src, model_output)
        self.status(after, after_output)
        return scope

    # -- layout -------------------------------------------------------------------------------

    def _size(self, node: dict) -> list[int]:
        """At least what the front end's computeSize gives (it grows a smaller node on load): a
        20 px row per link socket or output, 24 px per widget, a text box's own height."""
        if node["type"] in FRONTEND_ONLY:
            return [460, 420]
        if node["type"] == "SageAttentionCompare":  # web/js/compare.js widens it to 480 for its text, then the picture
            return [520, 520]
        rows = max(len(node["inputs"]), len(node["outputs"]), 1)
        height = 20 * rows + 24 * len(node["widgets_values"]) + 20
        if node["type"] in MULTILINE:
            height += 110
        if node["type"] in IMAGE_PREVIEW:  # the front end grows it to show the loaded picture
            height += 300
        width = 400 if node["type"] in MULTILINE else 330
        return [width, height]

    def layout(self) -> None:
        """Columns left to right along the links, each node as late as its consumers allow (a
        loader stands just before what reads it) and level with them; the note on the left."""
        by_id = {n["id"]: n for n in self.nodes}
        sources = {n["id"]: set() for n in self.nodes}
        consumers = {n["id"]: set() for n in self.nodes}
        for _, src, _, dst, _, _ in self.links:
            sources[dst].add(src)
            consumers[src].add(dst)
        depth: dict[int, int] = {}

        def longest(node_id: int) -> int:
            if node_id not in depth:
                depth[node_id] = 1 + max((longest(s) for s in sources[node_id]), default=-1)
            return depth[node_id]

        order = sorted(by_id, key=longest)
        for node_id in reversed(order):  # as late as possible
            if consumers[node_id]:
                depth[node_id] = min(depth[c] for c in consumers[node_id]) - 1
        notes = [i for i in by_id if by_id[i]["type"] in FRONTEND_ONLY]
        first = min((d for i, d in depth.items() if i not in notes), default=0)
        for i in notes:  # left of the graph
            depth[i] = first - 1
        columns: dict[int, list[int]] = {}
        for node_id in sorted(by_id):
            columns.setdefault(depth[node_id], []).append(node_id)
        sizes = {i: self._size(by_id[i]) for i in by_id}
        x, lefts = 0, {}
        for column in sorted(columns):
            lefts[column] = x
            x += max(sizes[i][0] for i in columns[column]) + 70
        y: dict[int, int] = {}
        for column in sorted(columns, reverse=True):  # each node level with what reads it
            targets = {i: sum(y[c] for c in consumers[i]) / len(consumers[i]) if consumers[i] else None
                       for i in columns[column]}
            below = 0
            # the pack's nodes first: a Scope stands level with the sampler it feeds
            for i in sorted(columns[column], key=lambda i: (targets[i] is None, by_id[i]["type"] not in PACK_NODES,
                                                            targets[i] or 0, i)):
                y[i] = max(int(targets[i] if targets[i] is not None else below), below)
                below = y[i] + sizes[i][1] + 70  # the title bar (30 px) sits above pos
                by_id[i]["pos"], by_id[i]["size"] = [lefts[column], y[i]], sizes[i]
        for order_, node_id in enumerate(sorted(by_id, key=lambda i: (depth[i], i))):
            by_id[node_id]["order"] = order_

    def as_json(self, extra: dict | None = None) -> dict:
        self.layout()
        # No "ds" (view): the front end then fits the whole graph into the window on load.
        return {"last_node_id": len(self.nodes), "last_link_id": len(self.links), "nodes": self.nodes,
                "links": self.links, "groups": [], "config": {}, "extra": dict(extra or {}), "version": 0.4}


def _decode_and_save(g: Graph, latent_src: dict, vae_src: dict, vae_output: int, prefix: str) -> dict:
    decode = _decode(g, latent_src, vae_src, vae_output)
    save = g.add("SaveImage", [prefix], [("images", "IMAGE")])
    g.link(decode, 0, save, "images")
    return decode


def _decode(g: Graph, latent_src: dict, vae_src: dict, vae_output: int) -> dict:
    decode = g.add("VAEDecode", [], [("samples", "LATENT"), ("vae", "VAE")], [("IMAGE", "IMAGE")])
    g.link(latent_src, 0, decode, "samples")
    g.link(vae_src, vae_output, decode, "vae")
    return decode


def _save_video(g: Graph, frames: dict, fps: float, prefix: str, audio: dict | None = None,
                container: str = "auto") -> None:
    video = g.add("CreateVideo", [fps], [("images", "IMAGE"), ("audio", "AUDIO")], [("VIDEO", "VIDEO")])
    g.link(frames, 0, video, "images")
    if audio is not None:
        g.link(audio, 0, video, "audio")
    save = g.add("SaveVideo", [prefix, container, "auto"], [("video", "VIDEO")])
    g.link(video, 0, save, "video")


def _ksampler(g: Graph, positive, negative, latent, widgets) -> dict:
    sampler = g.add("KSampler", widgets, [("model", "MODEL"), ("positive", "CONDITIONING"),
                                          ("negative", "CONDITIONING"), ("latent_image", "LATENT")],
                    [("LATENT", "LATENT")])
    g.link(positive[0], positive[1], sampler, "positive")
    g.link(negative[0], negative[1], sampler, "negative")
    g.link(latent[0], latent[1], sampler, "latent_image")
    return sampler


def _ksampler_t2i(g: Graph, model_src, positive, negative, latent, widgets) -> dict:
    sampler = _ksampler(g, positive, negative, (latent, 0), widgets)
    scope = g.scope_and_status(model_src[0], model_src[1], sampler, 0)
    g.link(scope, 0, sampler, "model")
    return sampler


def _custom_sampler(g: Graph, guider: dict, sigmas: dict, latent: dict, seed_widgets=(0, "randomize"),
                    sampler_name: str = "euler") -> dict:
    noise = g.add("RandomNoise", list(seed_widgets), [], [("NOISE", "NOISE")])
    sampler_select = g.add("KSamplerSelect", [sampler_name], [], [("SAMPLER", "SAMPLER")])
    sample = g.add("SamplerCustomAdvanced", [], [("noise", "NOISE"), ("guider", "GUIDER"), ("sampler", "SAMPLER"),
                                                 ("sigmas", "SIGMAS"), ("latent_image", "LATENT")],
                   [("output", "LATENT"), ("denoised_output", "LATENT")])
    for src, name in ((noise, "noise"), (guider, "guider"), (sampler_select, "sampler"), (sigmas, "sigmas"),
                      (latent, "latent_image")):
        g.link(src, 0, sample, name)
    return sample


def _cfg_guider(g: Graph, cfg: float, positive, negative) -> dict:
    guider = g.add("CFGGuider", [cfg], [("model", "MODEL"), ("positive", "CONDITIONING"),
                                        ("negative", "CONDITIONING")], [("GUIDER", "GUIDER")])
    g.link(positive[0], positive[1], guider, "positive")
    g.link(negative[0], negative[1], guider, "negative")
    return guider


def _basic_scheduler(g: Graph, model: dict, scheduler: str, steps: int) -> dict:
    sigmas = g.add("BasicScheduler", [scheduler, steps, 1.0], [("model", "MODEL")], [("SIGMAS", "SIGMAS")])
    g.link(model, 0, sigmas, "model")
    return sigmas


def _encode(g: Graph, clip: dict, clip_output: int, text: str, title: str | None = None) -> dict:
    node = g.add("CLIPTextEncode", [text], [("clip", "CLIP")], [("CONDITIONING", "CONDITIONING")], title=title)
    g.link(clip, clip_output, node, "clip")
    return node


def _zero_out(g: Graph, cond: dict) -> dict:
    node = g.add("ConditioningZeroOut", [], [("conditioning", "CONDITIONING")], [("CONDITIONING", "CONDITIONING")])
    g.link(cond, 0, node, "conditioning")
    return node


def _unet(g, name, title: str | None = None):
    return g.add("UNETLoader", [name, "default"], [], [("MODEL", "MODEL")], title=title)


def _shift(g, model, node_type, shift):
    node = g.add(node_type, [shift], [("model", "MODEL")], [("MODEL", "MODEL")])
    g.link(model, 0, node, "model")
    return node


def _aura_flow_shift(g, model, shift):
    return _shift(g, model, "ModelSamplingAuraFlow", shift)


def _sd3_shift(g, model, shift):
    return _shift(g, model, "ModelSamplingSD3", shift)


def _checkpoint(g: Graph, name: str) -> dict:
    return g.add("CheckpointLoaderSimple", [name], [], [("MODEL", "MODEL"), ("CLIP", "CLIP"), ("VAE", "VAE")])


WAN_NEGATIVE = ("bright colors, overexposed, static, blurred details, subtitles, worst quality, low quality, JPEG "
                "artifacts, ugly, deformed, extra fingers, poorly drawn hands, poorly drawn face, still picture, "
                "cluttered background, walking backwards")


# -- the workflows ---------------------------------------------------------------------------


def compare_flux1() -> Graph:
    """The FLUX.1 dev template's model, prompt and size, two KSamplers with the same fixed seed: one through
    a Scope that is off, one through a Scope that is on; both decoded into Sage Attention Compare (a = off,
    b = on). FLUX.1 is where the Scope was measured to pay on an H100 (docs/measured.md)."""
    g = Graph()
    unet = _unet(g, "flux1-dev.safetensors")
    clip = g.add("DualCLIPLoader", ["clip_l.safetensors", "t5xxl_fp16.safetensors", "flux", "default"], [],
                 [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["ae.safetensors"], [], [("VAE", "VAE")])
    text = _encode(g, clip, 0, "a lighthouse on a rocky coast at dusk, waves, dramatic clouds, photograph")
    guided = g.add("FluxGuidance", [3.5], [("conditioning", "CONDITIONING")], [("CONDITIONING", "CONDITIONING")])
    g.link(text, 0, guided, "conditioning")
    negative = _zero_out(g, text)
    latent = g.add("EmptySD3LatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    sampler_widgets = [42, "fixed", 20, 1.0, "euler", "simple", 1.0]  # the same seed in both: keep them equal
    latents = []
    for enabled, title in ((False, "Sage Attention Scope (off: ComfyUI's attention)"),
                           (True, "Sage Attention Scope (on)")):
        scope = g.scope(unet, 0, scope_widgets(enabled=enabled), title=title)
        sampler = _ksampler(g, (guided, 0), (negative, 0), (latent, 0), sampler_widgets)
        sampler["title"] = f"KSampler ({'with' if enabled else 'without'} SageAttention)"
        g.link(scope, 0, sampler, "model")
        latents.append(sampler)
    images = [_decode(g, sampler, vae, 0) for sampler in latents]
    _compare_images(g, images, COMPARE_LABELS)
    return g


def _compare_images(g: Graph, images: list, labels: list) -> None:
    """Sage Attention Compare of two decoded runs (a, b: ``images``' first output each), under ``labels``,
    with a Status after it."""
    compare = g.add("SageAttentionCompare", labels,
                    [("image_a", "IMAGE"), ("image_b", "IMAGE"), ("latent_a", "LATENT"), ("latent_b", "LATENT")],
                    [("comparison", "IMAGE")])
    g.link(images[0], 0, compare, "image_a")
    g.link(images[1], 0, compare, "image_b")
    g.status(compare, 0)


def flux1_dev() -> Graph:
    g = Graph()
    unet = _unet(g, "flux1-dev.safetensors")
    clip = g.add("DualCLIPLoader", ["clip_l.safetensors", "t5xxl_fp16.safetensors", "flux", "default"], [],
                 [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["ae.safetensors"], [], [("VAE", "VAE")])
    text = _encode(g, clip, 0, "a red fox reading a newspaper in a sunlit cafe, 35mm photograph")
    guided = g.add("FluxGuidance", [3.5], [("conditioning", "CONDITIONING")], [("CONDITIONING", "CONDITIONING")])
    g.link(text, 0, guided, "conditioning")
    latent = g.add("EmptySD3LatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    sampler = _ksampler_t2i(g, (unet, 0), (guided, 0), (_zero_out(g, text), 0), latent,
                            [0, "randomize", 20, 1.0, "euler", "simple", 1.0])
    _decode_and_save(g, sampler, vae, 0, "flux1_dev_sage")
    return g


def flux2_dev() -> Graph:
    g = Graph()
    unet = _unet(g, "flux2_dev_fp8mixed.safetensors")
    clip = g.add("CLIPLoader", ["mistral_3_small_flux2_bf16.safetensors", "flux2", "default"], [], [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["full_encoder_small_decoder.safetensors"], [], [("VAE", "VAE")])
    text = _encode(g, clip, 0, "a glass greenhouse on a cliff above the sea at dawn, detailed, photographic")
    guided = g.add("FluxGuidance", [4.0], [("conditioning", "CONDITIONING")], [("CONDITIONING", "CONDITIONING")])
    g.link(text, 0, guided, "conditioning")
    guider = g.add("BasicGuider", [], [("model", "MODEL"), ("conditioning", "CONDITIONING")], [("GUIDER", "GUIDER")])
    g.link(guided, 0, guider, "conditioning")
    sigmas = g.add("Flux2Scheduler", [20, 1024, 1024], [], [("SIGMAS", "SIGMAS")])
    latent = g.add("EmptyFlux2LatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    sample = _custom_sampler(g, guider, sigmas, latent)
    scope = g.scope_and_status(unet, 0, sample, 0)
    g.link(scope, 0, guider, "model")
    _decode_and_save(g, sample, vae, 0, "flux2_dev_sage")
    return g


def qwen_image() -> Graph:
    g = Graph()
    unet = _aura_flow_shift(g, _unet(g, "qwen_image_fp8_e4m3fn.safetensors"), 3.1)
    clip = g.add("CLIPLoader", ["qwen_2.5_vl_7b_fp8_scaled.safetensors", "qwen_image", "default"], [],
                 [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["qwen_image_vae.safetensors"], [], [("VAE", "VAE")])
    positive = _encode(g, clip, 0, 'a hand-painted shop sign that reads "Sage & Scope", warm evening light')
    negative = _encode(g, clip, 0, "")
    latent = g.add("EmptySD3LatentImage", [1328, 1328, 1], [], [("LATENT", "LATENT")])
    sampler = _ksampler_t2i(g, (unet, 0), (positive, 0), (negative, 0), latent,
                            [0, "randomize", 20, 2.5, "euler", "simple", 1.0])
    _decode_and_save(g, sampler, vae, 0, "qwen_image_sage")
    return g


def z_image_turbo() -> Graph:
    g = Graph()
    unet = _aura_flow_shift(g, _unet(g, "z_image_turbo_bf16.safetensors"), 3.0)
    clip = g.add("CLIPLoader", ["qwen_3_4b.safetensors", "lumina2", "default"], [], [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["ae.safetensors"], [], [("VAE", "VAE")])
    text = _encode(g, clip, 0, "a lighthouse keeper's kitchen, morning light, film photograph")
    latent = g.add("EmptySD3LatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    sampler = _ksampler_t2i(g, (unet, 0), (text, 0), (_zero_out(g, text), 0), latent,
                            [0, "randomize", 8, 1.0, "res_multistep", "simple", 1.0])
    _decode_and_save(g, sampler, vae, 0, "z_image_sage")
    return g


def sdxl() -> Graph:
    g = Graph()
    ckpt = _checkpoint(g, "sd_xl_base_1.0.safetensors")
    positive = _encode(g, ckpt, 1, "a marble statue in a white void, soft light, fine art photograph")
    negative = _encode(g, ckpt, 1, "lowres, blurry, watermark")
    latent = g.add("EmptyLatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    sampler = _ksampler_t2i(g, (ckpt, 0), (positive, 0), (negative, 0), latent,
                            [0, "randomize", 25, 7.0, "dpmpp_2m", "karras", 1.0])
    _decode_and_save(g, sampler, ckpt, 2, "sdxl_sage")
    return g


def sd35_large() -> Graph:
    """ComfyUI's SD3.5 template: the fp8 checkpoint with its three text encoders and VAE."""
    g = Graph()
    ckpt = _checkpoint(g, "sd3.5_large_fp8_scaled.safetensors")
    positive = _encode(g, ckpt, 1, "a bottle with a pink and red galaxy inside it on a wooden table in a modern "
                                   "kitchen, a window to a mountain range, bright sun")
    negative = _encode(g, ckpt, 1, "")
    latent = g.add("EmptySD3LatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    sampler = _ksampler_t2i(g, (ckpt, 0), (positive, 0), (negative, 0), latent,
                            [0, "randomize", 20, 4.0, "euler", "sgm_uniform", 1.0])
    _decode_and_save(g, sampler, ckpt, 2, "sd35_large_sage")
    return g


def chroma() -> Graph:
    """ComfyUI's Chroma1-HD template: T5 only (no padding), flow shift 1, CFG guider, beta schedule."""
    g = Graph()
    unet = _aura_flow_shift(g, _unet(g, "Chroma1-HD-fp8_scaled_rev2.safetensors"), 1.0)
    clip = g.add("CLIPLoader", ["t5xxl_fp8_e4m3fn_scaled.safetensors", "chroma", "default"], [], [("CLIP", "CLIP")])
    tokens = g.add("T5TokenizerOptions", [0, 0], [("clip", "CLIP")], [("CLIP", "CLIP")])
    g.link(clip, 0, tokens, "clip")
    vae = g.add("VAELoader", ["ae.safetensors"], [], [("VAE", "VAE")])
    positive = _encode(g, tokens, 0, "a nature documentary close-up of a tiger's eye, detailed speckled iris and "
                                     "fur, natural light, subtle shadows")
    negative = _encode(g, tokens, 0, "low quality, ugly, unfinished, out of focus, deformed, blurry")
    latent = g.add("EmptySD3LatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    guider = _cfg_guider(g, 3.5, (positive, 0), (negative, 0))
    scope = g.scope(unet, 0)
    g.link(scope, 0, guider, "model")
    sample = _custom_sampler(g, guider, _basic_scheduler(g, scope, "beta", 26), latent)
    g.status(sample, 0)
    _decode_and_save(g, sample, vae, 0, "chroma_sage")
    return g


def _wan22_inputs(g: Graph):
    """Wan 2.2 A14B's loaders, prompts and empty latent as its template has them: (high-noise expert,
    low-noise expert, VAE, positive, negative, latent, the KSamplerAdvanced sockets)."""
    high = _sd3_shift(g, _unet(g, "wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors", "Load high-noise expert"), 8.0)
    low = _sd3_shift(g, _unet(g, "wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors", "Load low-noise expert"), 8.0)
    clip = g.add("CLIPLoader", ["umt5_xxl_fp8_e4m3fn_scaled.safetensors", "wan", "default"], [], [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["wan_2.1_vae.safetensors"], [], [("VAE", "VAE")])
    positive = _encode(g, clip, 0, "a close-up of a young woman smiling gently in the rain, raindrops on her face "
                                   "and eyelashes, soft light reflecting off her skin")
    negative = _encode(g, clip, 0, WAN_NEGATIVE)
    latent = g.add("EmptyHunyuanLatentVideo", [1280, 704, 81, 1], [], [("LATENT", "LATENT")])
    sockets = [("model", "MODEL"), ("positive", "CONDITIONING"), ("negative", "CONDITIONING"),
               ("latent_image", "LATENT")]
    return high, low, vae, positive, negative, latent, sockets


def wan22_t2v() -> Graph:
    """ComfyUI's Wan 2.2 A14B template: the high-noise expert samples steps 0-10 and hands its
    leftover noise to the low-noise expert for steps 10-20; each expert through its own Scope."""
    g = Graph()
    high, low, vae, positive, negative, latent, sockets = _wan22_inputs(g)
    first = g.add("KSamplerAdvanced", ["enable", 0, "randomize", 20, 3.5, "euler", "simple", 0, 10, "enable"],
                  sockets, [("LATENT", "LATENT")], title="KSampler (Advanced): high-noise steps 0-10")
    second = g.add("KSamplerAdvanced", ["disable", 0, "fixed", 20, 3.5, "euler", "simple", 10, 10000, "disable"],
                   sockets, [("LATENT", "LATENT")], title="KSampler (Advanced): low-noise steps 10-20")
    for sampler, expert, latent_src, which in ((first, high, latent, "high-noise"), (second, low, first, "low-noise")):
        scope = g.scope(expert, 0, title=f"Sage Attention Scope ({which} expert)")
        g.link(scope, 0, sampler, "model")
        g.link(positive, 0, sampler, "positive")
        g.link(negative, 0, sampler, "negative")
        g.link(latent_src, 0, sampler, "latent_image")
    g.status(second, 0)
    _save_video(g, _decode(g, second, vae, 0), 16.0, "video/wan22_t2v_sage")
    return g


SPARSE_COMPARE_LABELS = ["dense attention", "sparse attention (sol-attn)"]  # label_a, label_b


def compare_wan22_sparse() -> Graph:
    """Wan 2.2 A14B text to video as its template samples it, twice with the same fixed seed: both
    experts through Scopes at their defaults (dense), then both through Scopes with sparse set to
    sol-attn; both videos decoded into Sage Attention Compare (a = dense, b = sparse) and saved."""
    g = Graph()
    high, low, vae, positive, negative, latent, sockets = _wan22_inputs(g)
    # the same seed in both runs: keep them equal (the low-noise pass adds no noise)
    high_widgets = ["enable", 42, "fixed", 20, 3.5, "euler", "simple", 0, 10, "enable"]
    low_widgets = ["disable", 42, "fixed", 20, 3.5, "euler", "simple", 10, 10000, "disable"]
    frames = []
    for arm, changes in (("dense", {}), ("sparse", {"sparse": "sol-attn"})):
        first = g.add("KSamplerAdvanced", list(high_widgets), sockets, [("LATENT", "LATENT")],
                      title=f"KSampler (Advanced): high-noise steps 0-10, {arm}")
        second = g.add("KSamplerAdvanced", list(low_widgets), sockets, [("LATENT", "LATENT")],
                       title=f"KSampler (Advanced): low-noise steps 10-20, {arm}")
        for sampler, expert, latent_src, which in ((first, high, latent, "high-noise"),
                                                   (second, low, first, "low-noise")):
            scope = g.scope(expert, 0, scope_widgets(**changes), title=f"Sage Attention Scope ({which} expert, {arm})")
            g.link(scope, 0, sampler, "model")
            g.link(positive, 0, sampler, "positive")
            g.link(negative, 0, sampler, "negative")
            g.link(latent_src, 0, sampler, "latent_image")
        decoded = _decode(g, second, vae, 0)
        _save_video(g, decoded, 16.0, f"video/wan22_t2v_{arm}")
        frames.append(decoded)
    _compare_images(g, frames, SPARSE_COMPARE_LABELS)
    return g


def wan21_i2v() -> Graph:
    """ComfyUI's Wan 2.1 image-to-video template: CLIP vision of the start image and the image itself
    condition the 480p model."""
    g = Graph()
    unet = _sd3_shift(g, _unet(g, "wan2.1_i2v_480p_14B_fp16.safetensors"), 8.0)
    clip = g.add("CLIPLoader", ["umt5_xxl_fp8_e4m3fn_scaled.safetensors", "wan", "default"], [], [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["wan_2.1_vae.safetensors"], [], [("VAE", "VAE")])
    vision = g.add("CLIPVisionLoader", ["clip_vision_h.safetensors"], [], [("CLIP_VISION", "CLIP_VISION")])
    image = g.add("LoadImage", ["start_image.png", "image"], [], [("IMAGE", "IMAGE"), ("MASK", "MASK")],
                  title="Load the start image")
    seen = g.add("CLIPVisionEncode", ["none"], [("clip_vision", "CLIP_VISION"), ("image", "IMAGE")],
                 [("CLIP_VISION_OUTPUT", "CLIP_VISION_OUTPUT")])
    g.link(vision, 0, seen, "clip_vision")
    g.link(image, 0, seen, "image")
    positive = _encode(g, clip, 0, "the subject turns towards the camera and smiles, gentle breeze, smooth motion")
    negative = _encode(g, clip, 0, WAN_NEGATIVE)
    to_video = g.add("WanImageToVideo", [832, 480, 81, 1],
                     [("positive", "CONDITIONING"), ("negative", "CONDITIONING"), ("vae", "VAE"),
                      ("clip_vision_output", "CLIP_VISION_OUTPUT"), ("start_image", "IMAGE")],
                     [("positive", "CONDITIONING"), ("negative", "CONDITIONING"), ("latent", "LATENT")])
    g.link(positive, 0, to_video, "positive")
    g.link(negative, 0, to_video, "negative")
    g.link(vae, 0, to_video, "vae")
    g.link(seen, 0, to_video, "clip_vision_output")
    g.link(image, 0, to_video, "start_image")
    sampler = _ksampler(g, (to_video, 0), (to_video, 1), (to_video, 2),
                        [0, "randomize", 20, 6.0, "uni_pc", "simple", 1.0])
    scope = g.scope_and_status(unet, 0, sampler, 0)
    g.link(scope, 0, sampler, "model")
    _save_video(g, _decode(g, sampler, vae, 0), 16.0, "video/wan21_i2v_sage")
    return g


def hunyuan_video15_t2v() -> Graph:
    """ComfyUI's HunyuanVideo 1.5 720p text-to-video template (its sampler subgraph unpacked): Qwen 2.5
    VL and ByT5 text encoders, shift 7, CFG 6, 20 Euler steps."""
    g = Graph()
    unet = _sd3_shift(g, _unet(g, "hunyuanvideo1.5_720p_t2v_fp16.safetensors"), 7.0)
    clip = g.add("DualCLIPLoader", ["qwen_2.5_vl_7b_fp8_scaled.safetensors", "byt5_small_glyphxl_fp16.safetensors",
                                    "hunyuan_video_15", "default"], [], [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["hunyuanvideo15_vae_fp16.safetensors"], [], [("VAE", "VAE")])
    positive = _encode(g, clip, 0, "a paper airplane released from the top of a skyscraper glides through the city "
                                   "and flies toward the sunset, first-person camera following it")
    negative = _encode(g, clip, 0, "")
    latent = g.add("EmptyHunyuanVideo15Latent", [848, 480, 121, 1], [], [("LATENT", "LATENT")])
    guider = _cfg_guider(g, 6.0, (positive, 0), (negative, 0))
    scope = g.scope(unet, 0)
    g.link(scope, 0, guider, "model")
    sample = _custom_sampler(g, guider, _basic_scheduler(g, scope, "simple", 20), latent)
    g.status(sample, 0)
    _save_video(g, _decode(g, sample, vae, 0), 24.0, "video/hunyuan_video15_sage")
    return g


def _ltx_av_t2v(ckpt_name: str, prompt: str, negative_prompt: str, cfg: float, sigmas, sampler_name: str,
                prefix: str, lora: tuple[str, float] | None = None) -> Graph:
    """LTX-2/2.3 single-stage text to video with sound: one checkpoint holds the model, the video VAE and
    the audio VAE; Gemma 3 (LTXAVTextEncoderLoader) encodes the prompt; the guider samples the video and
    audio latents together, 768x512, 97 frames at 25 fps. ``sigmas(g, av_latent)`` adds the schedule;
    ``lora``: (file, strength) on the model before the Scope."""
    g = Graph()
    ckpt = _checkpoint(g, ckpt_name)
    model = ckpt
    if lora is not None:
        model = g.add("LoraLoaderModelOnly", list(lora), [("model", "MODEL")], [("MODEL", "MODEL")])
        g.link(ckpt, 0, model, "model")
    clip = g.add("LTXAVTextEncoderLoader", ["gemma_3_12B_it_fp4_mixed.safetensors", ckpt_name, "default"], [],
                 [("CLIP", "CLIP")])
    audio_vae = g.add("LTXVAudioVAELoader", [ckpt_name], [], [("Audio VAE", "VAE")])
    positive = _encode(g, clip, 0, prompt)
    negative = _encode(g, clip, 0, negative_prompt)
    conditioned = g.add("LTXVConditioning", [25.0], [("positive", "CONDITIONING"), ("negative", "CONDITIONING")],
                        [("positive", "CONDITIONING"), ("negative", "CONDITIONING")])
    g.link(positive, 0, conditioned, "positive")
    g.link(negative, 0, conditioned, "negative")
    guider = _cfg_guider(g, cfg, (conditioned, 0), (conditioned, 1))
    video = g.add("EmptyLTXVLatentVideo", [768, 512, 97, 1], [], [("LATENT", "LATENT")])
    audio = g.add("LTXVEmptyLatentAudio", [97, 25, 1], [("audio_vae", "VAE")], [("Latent", "LATENT")])
    g.link(audio_vae, 0, audio, "audio_vae")
    joined = g.add("LTXVConcatAVLatent", [], [("video_latent", "LATENT"), ("audio_latent", "LATENT")],
                   [("latent", "LATENT")])
    g.link(video, 0, joined, "video_latent")
    g.link(audio, 0, joined, "audio_latent")
    sample = _custom_sampler(g, guider, sigmas(g, joined), joined, sampler_name=sampler_name)
    scope = g.scope_and_status(model, 0, sample, 0)
    g.link(scope, 0, guider, "model")
    split = g.add("LTXVSeparateAVLatent", [], [("av_latent", "LATENT")],
                  [("video_latent", "LATENT"), ("audio_latent", "LATENT")])
    g.link(sample, 0, split, "av_latent")
    frames = _decode(g, split, ckpt, 2)
    sound = g.add("LTXVAudioVAEDecode", [], [("samples", "LATENT"), ("audio_vae", "VAE")], [("Audio", "AUDIO")])
    g.link(split, 1, sound, "samples")
    g.link(audio_vae, 0, sound, "audio_vae")
    _save_video(g, frames, 25.0, prefix, audio=sound, container="mp4")
    return g


def _ltxv_scheduler(g: Graph, av_latent: dict) -> dict:
    sigmas = g.add("LTXVScheduler", [20, 2.05, 0.95, True, 0.1], [("latent", "LATENT")], [("SIGMAS", "SIGMAS")])
    g.link(av_latent, 0, sigmas, "latent")
    return sigmas


def ltx2() -> Graph:
    """ComfyUI's LTX-2 text-to-video template's first pass (without the upscaler): 20 steps of the LTXV
    schedule, CFG 4, Euler ancestral (ComfyUI 0.33's video_ltx2_t2v samples both passes with it)."""
    return _ltx_av_t2v("ltx-2-19b-dev-fp8.safetensors",
                       "a puppet under a red umbrella in the rain, close-up, gentle camera push-in",
                       "blurry, low quality, still frame, watermark", 4.0, _ltxv_scheduler, "euler_ancestral",
                       "video/ltx2_sage")


# ComfyUI 0.33's video_ltx2_3_t2v: the first pass's eight distilled steps
LTX23_SIGMAS = "1.0, 0.99375, 0.9875, 0.98125, 0.975, 0.909375, 0.725, 0.421875, 0.0"


def ltx23_t2v() -> Graph:
    """ComfyUI 0.33's LTX-2.3 text-to-video template's first pass (without its upscaler, its prompt
    enhancer and its image input): the 22B dev checkpoint with the distilled LoRA at 0.5, eight manual
    sigmas, CFG 1, Euler."""
    def manual_sigmas(g: Graph, av_latent: dict) -> dict:
        return g.add("ManualSigmas", [LTX23_SIGMAS], [], [("SIGMAS", "SIGMAS")])

    return _ltx_av_t2v("ltx-2.3-22b-dev-fp8.safetensors",
                       "a glass marble rolls across a wooden table and clinks against a cup, close-up, soft "
                       "window light, the sound of the marble rolling",
                       "pc game, console game, video game, cartoon, childish, ugly", 1.0, manual_sigmas, "euler",
                       "video/ltx23_sage",
                       lora=("ltx_2.3_22b_distilled_1.1_lora_dynamic_fro09_avg_rank_111_bf16.safetensors", 0.5))


def krea2_turbo() -> Graph:
    """ComfyUI's Krea-2 Turbo text-to-image template (without its optional prompt refiner and style
    LoRAs): the fp8 model, Qwen3-VL 4B as the text encoder, 8 Euler steps at CFG 1 with a zeroed
    negative, 1024x1024."""
    g = Graph()
    unet = _unet(g, "krea2_turbo_fp8_scaled.safetensors")
    clip = g.add("CLIPLoader", ["qwen3vl_4b_fp8_scaled.safetensors", "krea2", "default"], [], [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["qwen_image_vae.safetensors"], [], [("VAE", "VAE")])
    text = _encode(g, clip, 0, "a surreal ink illustration of a hand holding a martini glass, whimsical doodles "
                               "around it, a cartoon figure inside the glass, warm paper texture")
    latent = g.add("EmptyLatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    sampler = _ksampler_t2i(g, (unet, 0), (text, 0), (_zero_out(g, text), 0), latent,
                            [0, "randomize", 8, 1.0, "euler", "simple", 1.0])
    _decode_and_save(g, sampler, vae, 0, "krea2_turbo_sage")
    return g


def kandinsky5_t2v() -> Graph:
    """ComfyUI's Kandinsky 5.0 Video Lite text-to-video template (its subgraph unpacked): Qwen 2.5 VL and
    CLIP-L, shift 5, Kandinsky5ImageToVideo for the 768x512, 121-frame latent, 50 steps of Euler
    ancestral at CFG 5 on the beta schedule."""
    g = Graph()
    unet = _sd3_shift(g, _unet(g, "kandinsky5lite_t2v_sft_5s.safetensors"), 5.0)
    clip = g.add("DualCLIPLoader", ["qwen_2.5_vl_7b_fp8_scaled.safetensors", "clip_l.safetensors", "kandinsky5",
                                    "default"], [], [("CLIP", "CLIP")])
    vae = g.add("VAELoader", ["hunyuan_video_vae_bf16.safetensors"], [], [("VAE", "VAE")])
    positive = _encode(g, clip, 0, "rim light, dusk, medium close-up: a woman with curly brown hair in a white "
                                   "dress stands before a stained glass window, colored light on her face")
    negative = _encode(g, clip, 0, "")
    to_video = g.add("Kandinsky5ImageToVideo", [768, 512, 121, 1],
                     [("positive", "CONDITIONING"), ("negative", "CONDITIONING"), ("vae", "VAE"),
                      ("start_image", "IMAGE")],
                     [("positive", "CONDITIONING"), ("negative", "CONDITIONING"), ("latent", "LATENT"),
                      ("cond_latent", "LATENT")])
    g.link(positive, 0, to_video, "positive")
    g.link(negative, 0, to_video, "negative")
    g.link(vae, 0, to_video, "vae")
    sampler = _ksampler(g, (to_video, 0), (to_video, 1), (to_video, 2),
                        [0, "randomize", 50, 5.0, "euler_ancestral", "beta", 1.0])
    scope = g.scope_and_status(unet, 0, sampler, 0)
    g.link(scope, 0, sampler, "model")
    _save_video(g, _decode(g, sampler, vae, 0), 24.0, "video/kandinsky5_sage")
    return g


@dataclasses.dataclass(frozen=True)
class Template:
    """One example workflow. ``title`` is its file stem: all the template browser shows of it."""
    title: str
    make: object
    family: str        # the model family, as the thumbnail names it
    task: str          # what it makes, as the thumbnail says it
    scope: str         # where the Scope sits, as the thumbnail says it
    description: str   # what the graph does and where the Scope sits

    @property
    def file(self) -> str:
        return self.title + ".json"


TEMPLATES = [
    Template("Compare with and without SageAttention (FLUX.1)", compare_flux1, "FLUX.1 dev",
             "compare: Scope off vs on", "the same seed twice, then Sage Attention Compare",
             "FLUX.1 dev at 1024x1024, 20 steps, sampled twice with the same fixed seed: through a Sage Attention "
             "Scope that is off (ComfyUI's own attention) and through one that is on. Sage Attention Compare shows "
             "both images, a heat map of where they differ, PSNR and SSIM, and each run's sampling time. FLUX.1 is "
             "where the Scope was measured faster on an H100, more at 2048x2048 than at 1024x1024 (the pack's "
             "docs/measured.md); your GPU may differ, which is what this shows. Keep both seeds equal."),
    Template("FLUX.1 dev text to image", flux1_dev, "FLUX.1 dev",
             "text to image", "between the loader and the KSampler",
             "FLUX.1 dev at 1024x1024, 20 steps: the Scope sits between Load Diffusion Model and the KSampler; "
             "the model's attention runs on the kernel where it is measured faster on your GPU, the text encoders "
             "and VAE keep SDPA."),
    Template("FLUX.2 dev text to image", flux2_dev, "FLUX.2 dev",
             "text to image", "on the model the guider samples",
             "FLUX.2 dev (fp8) at 1024x1024 with the custom sampler: the Scope scopes the model the guider samples."),
    Template("Qwen-Image text to image", qwen_image, "Qwen-Image",
             "text to image", "after the flow shift, before the KSampler",
             "Qwen-Image (fp8) at 1328x1328: the Scope goes after the flow shift, before the KSampler."),
    Template("Z-Image Turbo text to image", z_image_turbo, "Z-Image Turbo",
             "text to image", "after the flow shift, before the KSampler",
             "Z-Image Turbo at 1024x1024, 8 steps: the Scope goes after the flow shift, before the KSampler."),
    Template("SDXL text to image", sdxl, "SDXL",
             "text to image", "between the checkpoint and the KSampler",
             "SDXL base at 1024x1024: the Scope after the checkpoint loader. SDXL's sequences are short, and on "
             "an H100 the Scope measured slower than ComfyUI alone on SDXL at 1024x1024 (the pack's "
             "docs/measured.md). It now times a whole step against one without it and steps aside where it is "
             "slower (Status: step_slower), which no GPU run has measured yet. Check on your GPU: run once with "
             "the Scope's enabled off and once on, and compare the sampling times Status shows; keep the faster."),
    Template("SD3.5 Large text to image", sd35_large, "SD3.5 Large",
             "text to image", "between the checkpoint and the KSampler",
             "Stable Diffusion 3.5 Large (fp8 checkpoint with its text encoders and VAE) at 1024x1024: the Scope "
             "after the checkpoint loader, before the KSampler."),
    Template("Chroma text to image", chroma, "Chroma1-HD",
             "text to image", "on the model the guider samples",
             "Chroma1-HD (fp8) at 1024x1024 with T5 only, flow shift 1 and a CFG guider: the Scope scopes the model "
             "the guider samples."),
    Template("Wan 2.2 A14B text to video", wan22_t2v, "Wan 2.2 A14B",
             "text to video", "one on each expert, high and low noise",
             "Wan 2.2 A14B text to video, 1280x704, 81 frames: the high-noise expert samples steps 0-10 and the "
             "low-noise expert steps 10-20, each model through its own Scope (one Status shows both)."),
    Template("Dense vs sparse attention (Wan 2.2 A14B)", compare_wan22_sparse, "Wan 2.2 A14B",
             "compare: dense vs sparse attention", "dense on both experts, then sparse",
             "Wan 2.2 A14B text to video, 1280x704, 81 frames (73,920 tokens in each self-attention call), sampled "
             "twice with the same fixed seed: both experts through a Sage Attention Scope at its defaults (dense), "
             "then both through a Scope with sparse set to sol-attn (comfy-kitchen 0.2.40 or newer: pip install -U "
             "comfy-kitchen). Sage Attention Compare shows the two videos' frames, a heat map of where they differ, "
             "PSNR and SSIM; both videos are saved. Status says how many calls ran sparse, why the others ran dense "
             "and each kind's gate against dense. The speed of sparse attention is not measured yet."),
    Template("Wan 2.1 image to video", wan21_i2v, "Wan 2.1 14B 480p",
             "image to video", "after the flow shift, before the KSampler",
             "Wan 2.1 image to video, 832x480, 81 frames from a start image (CLIP vision and the image condition "
             "the model): the Scope after the flow shift, before the KSampler. Load your own start image."),
    Template("HunyuanVideo 1.5 text to video", hunyuan_video15_t2v, "HunyuanVideo 1.5",
             "text to video", "on the model the guider samples",
             "HunyuanVideo 1.5 (720p text-to-video model) at 848x480, 121 frames, with the custom sampler: the Scope "
             "scopes the model the guider samples."),
    Template("LTX-2 text to video (ComfyUI 0.8 or newer)", ltx2, "LTX-2 19B",
             "text to video with sound", "on the model the guider samples",
             "LTX-2 single-stage text to video with sound, 768x512, 97 frames: the Scope after the checkpoint "
             "loader; the guider samples the video and audio latents together."),
    Template("LTX-2.3 text to video (ComfyUI 0.16 or newer)", ltx23_t2v, "LTX-2.3 22B",
             "text to video with sound", "after the distilled LoRA",
             "LTX-2.3 single-stage text to video with sound, 768x512, 97 frames, eight distilled steps (the dev "
             "checkpoint with the distilled LoRA at 0.5, CFG 1): the Scope after the LoRA; the guider samples "
             "the video and audio latents together."),
    Template("Krea-2 Turbo text to image (ComfyUI 0.26 or newer)", krea2_turbo, "Krea-2 Turbo",
             "text to image", "between the loader and the KSampler",
             "Krea-2 Turbo (fp8) at 1024x1024, 8 steps at CFG 1, Qwen3-VL 4B as its text encoder and Qwen-Image's VAE: "
             "the Scope between Load Diffusion Model and the KSampler."),
    Template("Kandinsky 5 Lite text to video (ComfyUI 0.4 or newer)", kandinsky5_t2v, "Kandinsky 5.0 Lite",
             "text to video", "after the flow shift, before the KSampler",
             "Kandinsky 5.0 Video Lite (2B, 5 s) text to video, 768x512, 121 frames, 50 steps: the Scope after "
             "the flow shift, before the KSampler."),
]


def _min_version(workflow: dict) -> str:
    versions = [n["properties"].get("ver", FLOOR) for n in workflow["nodes"]
                if n["properties"].get("cnr_id") == "comfy-core"]
    return max([FLOOR, *versions], key=_version_key)


def _note(template: Template, min_version: str, models: list[dict]) -> str:
    lines = [f"## {template.title}", "", template.description, "",
             f"**Needs ComfyUI {min_version} or newer** and the Sage Attention Scope pack.", "",
             "**Models** (into ComfyUI/models/...):"]
    lines += [f"- [{m['name']}]({m['url']}) in `{m['directory']}/`" for m in models]
    lines += ["", "The Sage Attention Status node shows, after a run, which attention calls ran on the kernel "
                  "and which kept SDPA, and why."]
    return "\n".join(lines)


def build(template: Template) -> dict:
    """The template's workflow: its graph, a note saying what it is, and its metadata in ``extra``."""
    g = template.make()
    models = list({m["name"]: m for n in g.nodes for m in n["properties"].get("models", [])}.values())
    min_version = max([FLOOR, *(node_version(n["type"], n["widgets_values"]) for n in g.nodes
                                if n["type"] not in FRONTEND_ONLY + PACK_NODES)], key=_version_key)
    g.add("MarkdownNote", [_note(template, min_version, models)], title="About this workflow")
    workflow = g.as_json({EXTRA_KEY: {"title": template.title, "description": template.description,
                                      "family": template.family, "task": template.task,
                                      "scope": template.scope, "min_comfyui_version": min_version,
                                      "models": [m["name"] for m in models]}})
    assert _min_version(workflow) == min_version
    return workflow


def main() -> int:
    OUT.mkdir(exist_ok=True)
    wanted = {t.file for t in TEMPLATES}
    for stale in OUT.glob("*.json"):  # a renamed or dropped template leaves no file behind
        if stale.name not in wanted:
            stale.unlink()
            stale.with_suffix(".jpg").unlink(missing_ok=True)
    for template in TEMPLATES:
        (OUT / template.file).write_text(json.dumps(build(template), indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
