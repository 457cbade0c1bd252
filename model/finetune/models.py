"""The fine-tuning Keras models: one backbone with one task head (`FinetuneModel`) or with one
classification/regression head per task (`MultiTaskModel`), and the backbone they start from."""

from __future__ import annotations

import keras

from albert.errors import StageError, naming
from albert.fs import exists
from albert.tokenization import AlbertTokenizer
from model.conversion.convert import load_pretrained
from model.finetune.features import Features, LayerFeatures, feature_size, needs_hidden_states
from model.finetune.kinds import KINDS
from model.network.backbone import AlbertBackbone
from model.network.config import get_preset


@keras.saving.register_keras_serializable(package="albert")
class FinetuneModel(keras.Model):
    """The backbone with one task head: classification/regression logits, SQuAD start/end logits, or
    multiple-choice scores over inputs `[B, C, T]`: the head and how it reads the backbone are
    those of `kind`, the task's `Task.kind` (`model.finetune.kinds.KINDS`)."""

    def __init__(
        self,
        backbone: AlbertBackbone,
        kind: str,
        num_labels: int,
        features: Features = "pooled",
        dropout: float = 0.1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.backbone, self.kind, self.num_labels = backbone, kind, num_labels
        self.features, self.dropout = features, dropout
        size = feature_size(
            features, backbone.config.hidden_size, backbone.config.num_hidden_layers
        )
        head_config = backbone.config.model_copy(
            update={"classifier_dropout_prob": dropout, "hidden_size": size}
        )
        self.pool = LayerFeatures(features, name="features")
        self.task_kind = KINDS[kind]
        self.head = self.task_kind.head(backbone.config, head_config, num_labels)
        self.head.build()
        backbone.pooler.trainable = not self.task_kind.token_outputs and features == "pooled"

    def build(self, input_shape=None):  # every weight is created in __init__
        self.built = True

    def call(self, inputs, training=False):
        return self.call_with_outputs(inputs, training)[0]

    def call_with_outputs(self, inputs, training=False, intermediate=False):
        """`(prediction, the backbone's outputs)`: what `call` returns and the dict it was computed
        from, over `[B, T]` rows (multiple choice: `[B * C, T]`), with `input_mask` (those rows')
        and, with `intermediate`, the hidden states and the attention scores (what
        `model.distill.matching` matches)."""
        shape = keras.ops.shape(inputs["input_ids"])
        inputs = self.task_kind.model_rows(inputs)
        outputs = self.backbone(
            inputs,
            training=training,
            output_hidden_states=intermediate or needs_hidden_states(self.features),
            output_attention_scores=intermediate,
        )
        prediction = self.task_kind.head_outputs(self, outputs, inputs, shape, training)
        return prediction, {**outputs, "input_mask": inputs["input_mask"]}

    def get_config(self):
        return {
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "kind": self.kind,
            "num_labels": self.num_labels,
            "features": self.features,
            "dropout": self.dropout,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="albert")
class MultiTaskModel(keras.Model):
    """One shared backbone, one classification/regression head per task: `{task: logits}`."""

    def __init__(
        self,
        backbone: AlbertBackbone,
        tasks: dict[str, int],
        features: Features = "pooled",
        dropout: float = 0.1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.backbone, self.tasks = backbone, dict(tasks)
        self.features, self.dropout = features, dropout
        self.singles = {
            name: FinetuneModel(
                backbone, "classification", labels, features, dropout, name=f"task_{name}"
            )
            for name, labels in self.tasks.items()
        }

    def build(self, input_shape=None):  # every weight is created in __init__
        self.built = True

    def call(self, inputs, training=False):
        outputs = self.backbone(
            inputs, training=training, output_hidden_states=needs_hidden_states(self.features)
        )
        result = {}
        for name, single in self.singles.items():
            pooled = single.pool(outputs, inputs["input_mask"])
            result[name] = single.head(pooled, training=training)
        return result

    def get_config(self):
        return {
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "tasks": self.tasks,
            "features": self.features,
            "dropout": self.dropout,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)


def load_backbone(init: str, tokenizer: AlbertTokenizer, preset: str) -> AlbertBackbone:
    """The pretrained backbone at `init` (a .keras file, a Hugging Face directory or a TF1
    checkpoint), or a randomly initialised `preset` when init is 'random'."""
    if init == "random":
        return AlbertBackbone(get_preset(preset, vocab_size=tokenizer.vocab_size), name="albert")
    if not exists(init):
        raise StageError(f"{init}: pretrained model not found")
    with naming(init):  # e.g. Keras refusing an unsafe .keras file
        backbone = load_pretrained(init).backbone
    if backbone.config.vocab_size != tokenizer.vocab_size:
        raise StageError(
            f"{init}: vocabulary of {backbone.config.vocab_size} pieces, but the SentencePiece "
            f"model {tokenizer.model_file} has {tokenizer.vocab_size}"
        )
    return backbone
