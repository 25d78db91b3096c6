"""Hugging Face transformers models by name: `hf:NAME[:TASK]`, random weights from a config
(a model type, a local config.json or a hub id). The settings ampbench makes on every config,
and why, are in docs/own-model.md."""

from __future__ import annotations

import dataclasses
import json
import os
from types import ModuleType

from torch import nn

from bench.faults import UsageError
from bench.store import paths
from bench.workloads import heads
from bench.workloads.base import Workload
from bench.workloads.zoo import common

MAX_SEQ = 1024
"""Tokens per sequence at a real size: the model's positions, capped here (GPT-2's context)."""
TINY_SEQ = 32

# transformers' auto-mapping per task, in the order a model's default task is looked for.
_MAPPINGS = {
    "seq2seq-lm": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "image-cls": "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
    "masked-lm": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "causal-lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "seq-cls": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
}

TINY: dict[str, object] = {
    # decoders and encoders (transformers maps GPT-2's n_layer, n_embd, ... onto these names)
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "head_dim": 16,
    "vocab_size": 256,
    # T5
    "d_model": 64,
    "d_ff": 128,
    "d_kv": 16,
    "num_layers": 2,
    "num_decoder_layers": 2,
    "num_heads": 4,
    # BART
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    # vision transformers (Swin: two stages of two blocks, windows of 4 patches of 4 pixels)
    "image_size": 32,
    "patch_size": 8,
    "embed_dim": 32,
    "depths": (2, 2),
    "window_size": 4,
}
"""The `tiny` preset's config fields, each set where the config has it."""
_TINY_BY_TYPE: dict[str, dict[str, object]] = {
    "swin": {"patch_size": 4, "num_heads": (2, 4)},
}

NAMED: dict[str, dict[str, dict[str, object]]] = {
    "llama": {
        # Llama 3.2 1B's shape (its published config): 1.24B parameters with the tied head.
        "1b": {
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "tie_word_embeddings": True,
        },
        # GPT-2 small's depth and width in Llama's blocks (grouped-query attention, SwiGLU):
        # 75.5M parameters besides the embedding, a size whose three-seed time-to-quality study
        # fits minutes of a GPU (docs/quality.md).
        "small": {
            "hidden_size": 768,
            "intermediate_size": 2048,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "num_key_value_heads": 4,
            "head_dim": 64,
            "max_position_embeddings": 1024,
            "tie_word_embeddings": True,
        },
    },
    "bart": {
        # BartConfig's defaults are bart-large's; bart-base is 6 + 6 layers of width 768.
        "base": {
            "d_model": 768,
            "encoder_layers": 6,
            "decoder_layers": 6,
            "encoder_attention_heads": 12,
            "decoder_attention_heads": 12,
            "encoder_ffn_dim": 3072,
            "decoder_ffn_dim": 3072,
        },
    },
    "t5": {
        # T5Config's defaults are t5-small's; t5-base is 12 + 12 layers of width 768.
        "base": {
            "d_model": 768,
            "d_ff": 3072,
            "num_layers": 12,
            "num_decoder_layers": 12,
            "num_heads": 12,
        },
    },
}
"""Named real sizes beyond a config class's defaults, per model type."""
DEFAULT_ON_GPU = {"llama": "1b"}
"""Model types whose `default` (LlamaConfig's is 7B) is not the size a GPU run starts with."""


def _transformers() -> ModuleType:
    # Optional (the [zoo] extra) and seconds to import: only once a hf: model is asked for.
    import transformers

    return transformers


def _config(name: str) -> object:
    """The config NAME stands for: a model type's config class's defaults, a local config.json
    (or a folder with one), or a hub id's config (network)."""
    transformers = _transformers()
    mapping = transformers.CONFIG_MAPPING
    local = paths.from_user(name)
    if local.is_dir():
        local = local / "config.json"
    if local.is_file():
        try:
            data = json.loads(local.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--model hf:{name}: not a transformers config ({exc})") from exc
        kind = data.get("model_type") if isinstance(data, dict) else None
        if kind not in mapping:
            raise UsageError(
                f"--model hf:{name}: model_type {kind!r} is not a transformers model type: a "
                'config.json names its model type, as in "model_type": "gpt2"'
            )
        return mapping[kind].from_dict(data)
    if name in mapping:
        return mapping[name]()
    if "/" in name and not os.path.isabs(name):
        try:
            return transformers.AutoConfig.from_pretrained(name)
        except Exception as exc:  # no network, no such repository, not a model repository
            raise UsageError(
                f"--model hf:{name}: cannot get the hub's config for it "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
            ) from exc
    raise UsageError(
        f"--model hf:{name}: not a transformers model type (transformers "
        f"{transformers.__version__}: CONFIG_MAPPING), a config.json or a hub id"
    )


def _head_class(config: object, task: str) -> str | None:
    found = getattr(_transformers().models.auto.modeling_auto, _MAPPINGS[task]).get(
        config.model_type
    )
    if isinstance(found, tuple):  # DeiT: (the classifier, the one with a distillation head)
        found = found[0]
    return found


def _tasks(config: object) -> list[str]:
    """The tasks this config's model type has a head for, in default order (an encoder-decoder's
    seq2seq first; a decoder-only model's seq2seq mapping never holds it)."""
    return [t for t in _MAPPINGS if _head_class(config, t) is not None]


def _set(config: object, fields: dict[str, object], only_present: bool) -> None:
    for key, value in fields.items():
        if only_present and not hasattr(config, key):
            continue
        setattr(config, key, list(value) if isinstance(value, tuple) else value)


def _prepare(config: object, task: str) -> None:
    """What every config gets (docs/own-model.md says why)."""
    for key in list(config.to_dict()):
        value = getattr(config, key, None)
        if ("dropout" in key or "pdrop" in key) and isinstance(value, float):
            setattr(config, key, 0.0)
    if hasattr(config, "use_cache"):
        config.use_cache = False
    if task == "causal-lm" and getattr(config, "is_decoder", True) is False:
        # An encoder's LM head (BertLMHeadModel) masks the future only as a decoder: without
        # this each position would see the token it predicts.
        config.is_decoder = True
    if task == "seq-cls" and getattr(config, "pad_token_id", None) is None:
        eos = getattr(config, "eos_token_id", None)
        config.pad_token_id = (eos[0] if isinstance(eos, list) else eos) or 0


def _shape(config: object, task: str, preset: str) -> heads.Shape:
    if task == "image-cls":
        side = config.image_size
        side = side[0] if isinstance(side, (list, tuple)) else side
        return heads.Shape(
            task=task,
            image=int(side),
            channels=int(getattr(config, "num_channels", 3)),
            classes=int(config.num_labels),
        )
    positions = next(
        (
            getattr(config, k)
            for k in ("max_position_embeddings", "n_positions")
            if isinstance(getattr(config, k, None), int)
        ),
        MAX_SEQ,
    )
    seq = TINY_SEQ if preset == "tiny" else min(positions, MAX_SEQ)
    return heads.Shape(
        task=task,
        seq=seq,
        vocab=int(config.vocab_size),
        pad=getattr(config, "pad_token_id", None),
        classes=int(config.num_labels) if task == "seq-cls" else 0,
    )


def workload(spec: str) -> Workload:
    """The workload of `hf:spec` (`spec` is NAME or NAME:TASK)."""
    name = f"hf:{spec}"
    if not common.importable("transformers"):
        return common.missing(name, "transformers")
    base, _, task = spec.rpartition(":")
    if task not in heads.TASKS:
        base, task = spec, ""
    config = _config(base)
    offered = _tasks(config)
    chosen = task or (offered[0] if offered else "")
    if chosen not in offered:
        kind = type(config).__name__
        lacks = f"no {chosen} head in transformers" if chosen else "no head ampbench can feed"
        has = ", ".join(offered) or "none"
        why = f"{kind} has {lacks} (ampbench feeds {', '.join(heads.TASKS)}; it has: {has})"
        return _unfeedable(name, why)
    model_type = config.model_type
    # A vision classifier's real size is ImageNet's 1000 classes; a text classifier keeps its
    # config's labels (2 by default).
    real_fields = {"num_labels": 1000} if chosen == "image-cls" else {}
    sizes = {"default": real_fields, **NAMED.get(model_type, {})}
    presets = {}
    for preset, fields in sizes.items():
        presets[preset] = _preset(config, chosen, preset, fields, only_present=False)
    tiny = {**TINY, **_TINY_BY_TYPE.get(model_type, {}), "num_labels": common.TINY_CLASSES}
    presets["tiny"] = _preset(config, chosen, "tiny", tiny, only_present=True)
    head = _head_class(config, chosen)
    encoder_decoder = chosen == "seq2seq-lm"

    def construct(size: common.ZooSize) -> nn.Module:
        cfg = type(config).from_dict(config.to_dict())
        _set(cfg, size.kwargs, only_present=False)
        _prepare(cfg, chosen)
        model = getattr(_transformers(), head)._from_config(cfg)
        if encoder_decoder:
            # T5 starts its decoder with the padding id and names no start id in its config.
            start = getattr(cfg, "decoder_start_token_id", None)
            start = cfg.pad_token_id if start is None else start
            return heads.EncoderDecoderLM(model, int(start or 0))
        return model

    return common.make(
        name,
        description=f"transformers' {head} ({chosen}), random weights from its config",
        presets=presets,
        default_preset={"cuda": DEFAULT_ON_GPU.get(model_type, "default"), "cpu": "tiny"},
        construct=construct,
    )


def _preset(
    config: object, task: str, preset: str, fields: dict[str, object], *, only_present: bool
) -> common.ZooSize:
    """A preset: the fields it sets (those the config has, with `only_present`), and the shape
    of its batches, read from the config they make."""
    kept = {k: v for k, v in fields.items() if not only_present or hasattr(config, k)}
    cfg = type(config).from_dict(config.to_dict())
    _set(cfg, kept, only_present=False)
    _prepare(cfg, task)
    options = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in kept.items())
    return common.ZooSize(preset=preset, shape=_shape(cfg, task, preset), options=options)


def _unfeedable(name: str, why: str) -> Workload:
    """A model whose head ampbench cannot feed: it parses, and each case is `unsupported`."""
    workload = common.missing(name, "transformers")
    return dataclasses.replace(
        workload, description=f"{name}: {why}", unsupported_reason=lambda: why
    )
