"""The end-of-run export: export/model.keras, export/hf and export/keras_hub, committed atomically."""

from __future__ import annotations

import os
import tempfile

from albert import fileio
from model.pretrain.config import PretrainConfig


def export_model(model, config: PretrainConfig, spec, heldout: dict) -> dict:
    """export/model.keras, export/hf (Hugging Face) and export/keras_hub, written atomically; they
    replace the export of the run's previous end (a resumed run moved forward from it)."""
    from model.exports import write_exports

    export_dir = fileio.join(config.output, "export")
    paths = {}
    with fileio.atomic_output_dir(export_dir, keep_previous=False) as temp:
        with tempfile.TemporaryDirectory() as local:
            keras_path = os.path.join(local, "model.keras")
            model.save(keras_path)
            fs, target = fileio.filesystem(fileio.join(temp, "model.keras"))
            fs.put(keras_path, target)
        paths["keras"] = fileio.join(export_dir, "model.keras")
        names = write_exports(model, temp, config.model_dump(), spec.metadata, heldout, config.spm_model,
                              config.data_license)
        paths.update({kind: fileio.join(export_dir, name) for kind, name in names.items()})
    return paths
