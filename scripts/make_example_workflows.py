"""Writes example_workflows/*.json: one standard graph per family, in ComfyUI's UI (LiteGraph)
format, with the Sage Attention Scope before the sampler and a Status node after it.

Model file names and download addresses are the ones ComfyUI's own templates
(comfyui-workflow-templates) use. Run from the repository root:
    python scripts/make_example_workflows.py
tests/test_server.py checks every file against a running ComfyUI's /object_info.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "example_workflows"

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
}



def _scope_defaults() -> list:
    """The Scope node's widgets in schema order, at their defaults: the fields of patches/settings.py."""
    spec = importlib.util.spec_from_file_location("sas_settings", OUT.parent / "patches" / "settings.py")
    settings = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up there
    spec.loader.exec_module(settings)
    return [f.default for f in dataclasses.fields(settings.Settings)]


SCOPE_WIDGETS = _scope_defaults()
STATUS_WIDGETS = [False]  # reset_counters


class Graph:
    def __init__(self):
        self.nodes: list[dict] = []
        self.links: list[list] = []

    def add(self, type_: str, widgets=(), inputs=(), outputs=(), title: str | None = None) -> dict:
        """``inputs``/``outputs``: (name, TYPE) pairs of the node's link sockets, in order."""
        node_id = len(self.nodes) + 1
        column, row = divmod(len(self.nodes), 4)
        node = {
            "id": node_id, "type": type_, "pos": [40 + 340 * column, 40 + 260 * row], "size": [300, 200],
            "flags": {}, "order": node_id - 1, "mode": 0,
            "inputs": [{"name": n, "type": t, "link": None} for n, t in inputs],
            "outputs": [{"name": n, "type": t, "links": [], "slot_index": i} for i, (n, t) in enumerate(outputs)],
            "properties": {"Node name for S&R": type_},
            "widgets_values": list(widgets),
        }
        models = [w for w in widgets if isinstance(w, str) and w in MODELS]
        if models:
            node["properties"]["models"] = [{"name": m, "url": MODELS[m][1], "directory": MODELS[m][0]} for m in models]
        if title:
            node["title"] = title
        self.nodes.append(node)
        return node

    def link(self, src: dict, output: int, dst: dict, input_name: str) -> None:
        link_id = len(self.links) + 1
        slot = next(i for i, s in enumerate(dst["inputs"]) if s["name"] == input_name)
        link_type = src["outputs"][output]["type"]
        self.links.append([link_id, src["id"], output, dst["id"], slot, link_type])
        src["outputs"][output]["links"].append(link_id)
        dst["inputs"][slot]["link"] = link_id

    def scope_and_status(self, model_src: dict, model_output: int, after: dict, after_output: int) -> dict:
        scope = self.add("SageAttentionScope", SCOPE_WIDGETS, [("model", "MODEL")], [("MODEL", "MODEL")])
        self.link(model_src, model_output, scope, "model")
        status = self.add("SageAttentionStatus", STATUS_WIDGETS, [("after", "*")], [("status", "STRING")])
        self.link(after, after_output, status, "after")
        return scope

    def as_json(self) -> dict:
        return {"last_node_id": len(self.nodes), "last_link_id": len(self.links), "nodes": self.nodes,
                "links": self.links, "groups": [], "config": {}, "extra": {"ds": {"scale": 0.8, "offset": [0, 0]}},
                "version": 0.4}


def _decode_and_save(g: Graph, latent_src: dict, vae_src: dict, vae_output: int, prefix: str) -> None:
    decode = g.add("VAEDecode", [], [("samples", "LATENT"), ("vae", "VAE")], [("IMAGE", "IMAGE")])
    g.link(latent_src, 0, decode, "samples")
    g.link(vae_src, vae_output, decode, "vae")
    save = g.add("SaveImage", [prefix], [("images", "IMAGE")])
    g.link(decode, 0, save, "images")


def _ksampler_t2i(g: Graph, model_src, positive, negative, latent, widgets) -> dict:
    sampler = g.add("KSampler", widgets, [("model", "MODEL"), ("positive", "CONDITIONING"),
                                          ("negative", "CONDITIONING"), ("latent_image", "LATENT")],
                    [("LATENT", "LATENT")])
    g.link(positive[0], positive[1], sampler, "positive")
    g.link(negative[0], negative[1], sampler, "negative")
    g.link(latent, 0, sampler, "latent_image")
    scope = g.scope_and_status(model_src[0], model_src[1], sampler, 0)
    g.link(scope, 0, sampler, "model")
    return sampler


def _encode(g: Graph, clip: dict, clip_output: int, text: str) -> dict:
    node = g.add("CLIPTextEncode", [text], [("clip", "CLIP")], [("CONDITIONING", "CONDITIONING")])
    g.link(clip, clip_output, node, "clip")
    return node


def _zero_out(g: Graph, cond: dict) -> dict:
    node = g.add("ConditioningZeroOut", [], [("conditioning", "CONDITIONING")], [("CONDITIONING", "CONDITIONING")])
    g.link(cond, 0, node, "conditioning")
    return node


def _unet(g, name):
    return g.add("UNETLoader", [name, "default"], [], [("MODEL", "MODEL")])


def _aura_flow_shift(g, model, shift):
    node = g.add("ModelSamplingAuraFlow", [shift], [("model", "MODEL")], [("MODEL", "MODEL")])
    g.link(model, 0, node, "model")
    return node


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
    noise = g.add("RandomNoise", [0, "randomize"], [], [("NOISE", "NOISE")])
    sampler_select = g.add("KSamplerSelect", ["euler"], [], [("SAMPLER", "SAMPLER")])
    sigmas = g.add("Flux2Scheduler", [20, 1024, 1024], [], [("SIGMAS", "SIGMAS")])
    latent = g.add("EmptyFlux2LatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    sample = g.add("SamplerCustomAdvanced", [], [("noise", "NOISE"), ("guider", "GUIDER"), ("sampler", "SAMPLER"),
                                                 ("sigmas", "SIGMAS"), ("latent_image", "LATENT")],
                   [("output", "LATENT"), ("denoised_output", "LATENT")])
    for src, name in ((noise, "noise"), (guider, "guider"), (sampler_select, "sampler"), (sigmas, "sigmas"),
                      (latent, "latent_image")):
        g.link(src, 0, sample, name)
    scope = g.scope_and_status(unet, 0, sample, 0)
    g.link(scope, 0, guider, "model")
    _decode_and_save(g, sample, vae, 0, "flux2_dev_sage")
    return g


def qwen_image() -> Graph:
    g = Graph()
    unet = _aura_flow_shift(g, _unet(g, "qwen_image_fp8_e4m3fn.safetensors"), 3.1)
    clip = g.add("CLIPLoader", ["qwen_2.5_vl_7b_fp8_scaled.safetensors", "qwen_image", "default"], [], [("CLIP", "CLIP")])
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
    ckpt = g.add("CheckpointLoaderSimple", ["sd_xl_base_1.0.safetensors"], [],
                 [("MODEL", "MODEL"), ("CLIP", "CLIP"), ("VAE", "VAE")])
    positive = _encode(g, ckpt, 1, "a marble statue in a white void, soft light, fine art photograph")
    negative = _encode(g, ckpt, 1, "lowres, blurry, watermark")
    latent = g.add("EmptyLatentImage", [1024, 1024, 1], [], [("LATENT", "LATENT")])
    sampler = _ksampler_t2i(g, (ckpt, 0), (positive, 0), (negative, 0), latent,
                            [0, "randomize", 25, 7.0, "dpmpp_2m", "karras", 1.0])
    _decode_and_save(g, sampler, ckpt, 2, "sdxl_sage")
    return g


def ltx2() -> Graph:
    """LTX-2's single-stage text-to-video (the template's first pass, without the upscaler)."""
    g = Graph()
    ckpt_name = "ltx-2-19b-dev-fp8.safetensors"
    ckpt = g.add("CheckpointLoaderSimple", [ckpt_name], [], [("MODEL", "MODEL"), ("CLIP", "CLIP"), ("VAE", "VAE")])
    clip = g.add("LTXAVTextEncoderLoader", ["gemma_3_12B_it_fp4_mixed.safetensors", ckpt_name, "default"], [],
                 [("CLIP", "CLIP")])
    audio_vae = g.add("LTXVAudioVAELoader", [ckpt_name], [], [("Audio VAE", "VAE")])
    positive = _encode(g, clip, 0, "a puppet under a red umbrella in the rain, close-up, gentle camera push-in")
    negative = _encode(g, clip, 0, "blurry, low quality, still frame, watermark")
    conditioned = g.add("LTXVConditioning", [25.0], [("positive", "CONDITIONING"), ("negative", "CONDITIONING")],
                        [("positive", "CONDITIONING"), ("negative", "CONDITIONING")])
    g.link(positive, 0, conditioned, "positive")
    g.link(negative, 0, conditioned, "negative")
    guider = g.add("CFGGuider", [4.0], [("model", "MODEL"), ("positive", "CONDITIONING"),
                                        ("negative", "CONDITIONING")], [("GUIDER", "GUIDER")])
    g.link(conditioned, 0, guider, "positive")
    g.link(conditioned, 1, guider, "negative")
    video = g.add("EmptyLTXVLatentVideo", [768, 512, 97, 1], [], [("LATENT", "LATENT")])
    audio = g.add("LTXVEmptyLatentAudio", [97, 25, 1], [("audio_vae", "VAE")], [("Latent", "LATENT")])
    g.link(audio_vae, 0, audio, "audio_vae")
    joined = g.add("LTXVConcatAVLatent", [], [("video_latent", "LATENT"), ("audio_latent", "LATENT")],
                   [("latent", "LATENT")])
    g.link(video, 0, joined, "video_latent")
    g.link(audio, 0, joined, "audio_latent")
    sigmas = g.add("LTXVScheduler", [20, 2.05, 0.95, True, 0.1], [("latent", "LATENT")], [("SIGMAS", "SIGMAS")])
    g.link(joined, 0, sigmas, "latent")
    noise = g.add("RandomNoise", [0, "randomize"], [], [("NOISE", "NOISE")])
    sampler_select = g.add("KSamplerSelect", ["euler"], [], [("SAMPLER", "SAMPLER")])
    sample = g.add("SamplerCustomAdvanced", [], [("noise", "NOISE"), ("guider", "GUIDER"), ("sampler", "SAMPLER"),
                                                 ("sigmas", "SIGMAS"), ("latent_image", "LATENT")],
                   [("output", "LATENT"), ("denoised_output", "LATENT")])
    for src, name in ((noise, "noise"), (guider, "guider"), (sampler_select, "sampler"), (sigmas, "sigmas"),
                      (joined, "latent_image")):
        g.link(src, 0, sample, name)
    scope = g.scope_and_status(ckpt, 0, sample, 0)
    g.link(scope, 0, guider, "model")
    split = g.add("LTXVSeparateAVLatent", [], [("av_latent", "LATENT")],
                  [("video_latent", "LATENT"), ("audio_latent", "LATENT")])
    g.link(sample, 0, split, "av_latent")
    frames = g.add("VAEDecode", [], [("samples", "LATENT"), ("vae", "VAE")], [("IMAGE", "IMAGE")])
    g.link(split, 0, frames, "samples")
    g.link(ckpt, 2, frames, "vae")
    sound = g.add("LTXVAudioVAEDecode", [], [("samples", "LATENT"), ("audio_vae", "VAE")], [("Audio", "AUDIO")])
    g.link(split, 1, sound, "samples")
    g.link(audio_vae, 0, sound, "audio_vae")
    clip_out = g.add("CreateVideo", [25.0], [("images", "IMAGE"), ("audio", "AUDIO")], [("VIDEO", "VIDEO")])
    g.link(frames, 0, clip_out, "images")
    g.link(sound, 0, clip_out, "audio")
    save = g.add("SaveVideo", ["video/ltx2_sage", "mp4", "auto"], [("video", "VIDEO")])
    g.link(clip_out, 0, save, "video")
    return g


WORKFLOWS = {
    "flux1_dev_text_to_image.json": flux1_dev,
    "flux2_dev_text_to_image.json": flux2_dev,
    "qwen_image_text_to_image.json": qwen_image,
    "z_image_turbo_text_to_image.json": z_image_turbo,
    "ltx2_text_to_video.json": ltx2,
    "sdxl_text_to_image.json": sdxl,
}


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for name, make in WORKFLOWS.items():
        (OUT / name).write_text(json.dumps(make().as_json(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
