"""torchvision's classification models by name: `torchvision:NAME`,
`torchvision.models.get_model(NAME, weights=None)`."""

from __future__ import annotations

from bench.faults import UsageError
from bench.workloads.base import Workload
from bench.workloads.zoo import common


def workload(model_name: str) -> Workload:
    """`torchvision:NAME`: `torchvision.models.get_model(NAME, weights=None)`, a classification
    model, at the crop size its weights' transforms name (224 for most; read from torchvision's
    metadata, nothing downloaded), 1000 classes; `tiny` at 64×64 with 10 classes (a ViT is told
    the image size)."""
    name = f"torchvision:{model_name}"
    if not common.importable("torchvision.models"):
        return common.missing(name, "torchvision")
    import torchvision

    known = torchvision.models.list_models(module=torchvision.models)
    if model_name not in known:
        raise UsageError(
            f"--model {name}: not one of torchvision's classification models "
            "(torchvision.models.list_models(module=torchvision.models))"
        )
    side = 224
    try:
        weights = torchvision.models.get_model_weights(model_name)
        side = int(next(iter(weights)).transforms().crop_size[0])
    except Exception:  # no weights enum or no crop size: torchvision's usual 224
        pass

    def sized(side: int) -> dict[str, object]:
        # Only the vision transformers fix their input size; other builders would pass an
        # unknown keyword on to a module that does not take it.
        return {"image_size": side} if model_name.startswith("vit_") else {}

    return common.make(
        name,
        description=f"torchvision's {model_name}, random weights, image classification",
        presets=common.image_presets(side, 1000, sized),
        default_preset={"cuda": "default", "cpu": "tiny"},
        construct=lambda size: torchvision.models.get_model(
            model_name, weights=None, **size.kwargs
        ),
    )
