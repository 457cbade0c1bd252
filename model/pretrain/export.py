"""The end-of-run export: export/model.keras, export/hf and export/keras_hub, committed
atomically. An RTD run exports its discriminator there (a standard ALBERT,
`model.network.electra.discriminator_model`) and its generator as export/generator/model.keras."""

from __future__ import annotations

import os
import tempfile

from albert.fs import filesystem, join
from albert.outputs import atomic_output_dir
from model.pretrain.build import build_model
from model.pretrain.config import PretrainConfig
from model.runtime.distribute import jax_process

KERAS_FILES = {"keras": "model.keras", "generator": "generator/model.keras"}


def export_model(model, config: PretrainConfig, spec, heldout: dict) -> tuple[dict, dict]:
    """export/model.keras, export/hf (Hugging Face) and export/keras_hub, written atomically; they
    replace the export of the run's previous end (a resumed run moved forward from it). Returns the
    paths written and the reason of each export skipped
    (`model.conversion.exports.write_exports`)."""
    # heavy: loads keras, tensorflow; this module stays importable without it
    from model.conversion.exports import write_exports
    from model.network.electra import AlbertElectraModel, discriminator_model, generator_model

    export_dir = join(config.output, "export")
    parts = {"keras": model}
    if isinstance(model, AlbertElectraModel):
        parts = {"keras": discriminator_model(model), "generator": generator_model(model)}
    model = parts["keras"]
    paths = {}
    with atomic_output_dir(export_dir, keep_previous=False) as temp:
        for kind, part in parts.items():
            save_keras(part, join(temp, KERAS_FILES[kind]))
            paths[kind] = join(export_dir, KERAS_FILES[kind])
        names, skipped = write_exports(
            model,
            temp,
            config.model_dump(),
            spec.metadata,
            heldout,
            config.spm_model,
            config.data_license,
        )
        paths.update({kind: join(export_dir, name) for kind, name in names.items()})
    return paths, skipped


def save_keras(model, url: str) -> None:
    """`model.save` to `url` (local or gs://), through a local file."""
    with tempfile.TemporaryDirectory() as local:
        keras_path = os.path.join(local, "model.keras")
        model.save(keras_path)
        fs, target = filesystem(url)
        fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
        fs.put(keras_path, target)


def export_alone(model, config: PretrainConfig, spec, heldout: dict) -> tuple[dict, dict]:
    """`export_model`, run by process 0 alone. Of several JAX processes, it exports a copy of the
    trained weights on this process's devices, built with no distribution set: an operation on
    arrays that span the other processes would wait for them forever."""
    if jax_process()[1] == 1:
        return export_model(model, config, spec, heldout)
    import keras  # heavy: Keras loads its backend; this module stays importable without it

    distribution = keras.distribution.distribution()
    keras.distribution.set_distribution(None)
    try:
        local = build_model(config, model.config.vocab_size)
        local.set_weights(model.get_weights())  # replicated arrays: read from this process's copy
        return export_model(local, config, spec, heldout)
    finally:
        keras.distribution.set_distribution(distribution)
