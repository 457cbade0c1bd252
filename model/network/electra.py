"""`AlbertElectraModel`: ELECTRA's replaced-token detection (Clark et al. 2020) with ALBERT on both
sides, and the standard ALBERT models an export makes of it.

A small generator ALBERT (`generator_config`: the discriminator's hidden size times
`generator_hidden_fraction`, its heads and feed-forward size scaled with it, the same layers and
embedding size) predicts the masked tokens; a token is sampled from its distribution at every masked
position (`keras.random.categorical` with the model's `SeedGenerator`, so the draw is a state the
checkpoints hold; no gradient flows through it) and written into `input_ids`; the discriminator, the
ALBERT being trained, tells at every real token whether it was replaced (`ReplacedTokenHead`), and
its pooled output feeds the sentence-order head. The whole `AlbertEmbeddings` layer (word, position
and token-type tables and their LayerNorm: ELECTRA ties all its embeddings) is shared; the
generator's masked-LM output is tied to the shared word table. Both backbones get the same inputs
dict (only `input_ids` differs), so any feature the backbone reads reaches both.
"""

from __future__ import annotations

import keras
from keras import ops

from model.network.backbone import AlbertBackbone, ConfiguredModel
from model.network.config import AlbertConfig
from model.network.heads import (
    MaskedLMHead,
    SentenceOrderHead,
    _ConfigLayer,
    gather_positions,
)
from model.network.pretraining_model import AlbertPretrainingModel, model_inputs
from model.network.transformer import activation_fn

GENERATOR_HIDDEN_FRACTION = 0.25  # ELECTRA-Small's and -Large's; docs/pretrain.md measures it
LABEL_FEATURES = ("masked_lm_ids", "masked_lm_weights")


def generator_config(config: AlbertConfig, fraction: float) -> AlbertConfig:
    """The generator's architecture: hidden size `fraction` x H (a multiple of its heads, which
    keep the discriminator's head size where they can), feed-forward size scaled alike; layers,
    sharing, embedding size and every embedding setting as the discriminator's. ValueError for a
    fraction outside (0, 1]: a generator larger than the discriminator."""
    if not 0 < fraction <= 1:
        raise ValueError(
            f"generator hidden fraction {fraction} must be in (0, 1]: the generator may not be "
            "larger than the discriminator"
        )
    hidden = max(1, round(config.hidden_size * fraction))
    heads = max(1, min(config.num_attention_heads, hidden // config.head_size))
    hidden = max(heads, hidden - hidden % heads)
    return config.model_copy(
        update={
            "hidden_size": hidden,
            "num_attention_heads": heads,
            "intermediate_size": max(
                1, round(config.intermediate_size * hidden / config.hidden_size)
            ),
            "embedding_projection": True if config.embedding_projection else None,
        }
    )


def electra_inputs(batch: dict) -> dict:
    """The features `AlbertElectraModel` takes: `model_inputs`' and the masked tokens' ids and
    weights (which say where to write the generator's samples and which ones replaced a token)."""
    return {**model_inputs(batch), **{name: batch[name] for name in LABEL_FEATURES}}


def inputs_for(model):
    """The function that selects `model`'s inputs from a pretraining batch."""
    return electra_inputs if isinstance(model, AlbertElectraModel) else model_inputs


def objective_of(model) -> str:
    """`rtd` for an `AlbertElectraModel`, else `mlm`."""
    return "rtd" if isinstance(model, AlbertElectraModel) else "mlm"


def corrupt(input_ids, positions, weights, sampled, original):
    """`(corrupted ids [B, T] int32, replaced [B, T] float32)`: `sampled [B, P]` written at the
    `positions [B, P]` whose weight is non-zero (distinct positions, as masking draws them);
    replaced is 1.0 where the written id differs from `original [B, P]`."""
    length = ops.shape(input_ids)[1]
    real = ops.cast(ops.greater(weights, 0), "int32")
    hot = ops.one_hot(ops.cast(positions, "int32"), length, dtype="int32") * real[:, :, None]
    written = ops.max(hot, axis=1)
    values = ops.sum(hot * ops.cast(sampled, "int32")[:, :, None], axis=1)
    changed = ops.cast(ops.not_equal(sampled, original), "int32")
    replaced = ops.max(hot * changed[:, :, None], axis=1)
    ids = ops.where(ops.greater(written, 0), values, ops.cast(input_ids, "int32"))
    return ids, ops.cast(replaced, "float32")


@keras.saving.register_keras_serializable(package="albert")
class ReplacedTokenHead(_ConfigLayer):
    """`sequence [B, T, H] -> logits [B, T]` (float32): dense H->H, activation, dense H->1
    (ELECTRA's discriminator head); > 0 says replaced."""

    def __init__(self, config: AlbertConfig | dict, **kwargs):
        super().__init__(config, **kwargs)
        self.dense = self._dense(self.config.hidden_size, "dense")
        self.prediction = self._dense(1, "dense_prediction")
        self.activation = activation_fn(self.config.hidden_act)

    def build(self, input_shape=None):
        self.dense.build((None, None, self.config.hidden_size))
        self.prediction.build((None, None, self.config.hidden_size))
        self.built = True

    def call(self, sequence):
        logits = self.prediction(self.activation(self.dense(sequence)))
        return ops.cast(logits[..., 0], "float32")


@keras.saving.register_keras_serializable(package="albert")
class AlbertElectraModel(ConfiguredModel):
    """`call(electra_inputs(batch)) -> dict(mlm_logits [B, P, V] (the generator's), sop_logits
    [B, 2], rtd_logits [B, T] (the discriminator's), rtd_labels [B, T] (1.0 = replaced))`.

    `config` is the discriminator's; `generator` shares `backbone.embeddings`; `sampler` is the
    `SeedGenerator` of the replacements (a non-trainable variable: saved and restored with the
    dropout seed states)."""

    def __init__(
        self,
        config: AlbertConfig | dict,
        generator_hidden_fraction: float = GENERATOR_HIDDEN_FRACTION,
        **kwargs,
    ):
        super().__init__(config, **kwargs)
        self.generator_hidden_fraction = generator_hidden_fraction
        self.generator_config = generator_config(self.config, generator_hidden_fraction)
        dtype = self.dtype_policy
        self.backbone = AlbertBackbone(self.config, dtype=dtype, name="albert")
        self.generator = AlbertBackbone(
            self.generator_config,
            embeddings=self.backbone.embeddings,
            pooler=False,
            dtype=dtype,
            name="generator",
        )
        self.mlm_head = MaskedLMHead(
            self.generator_config, dtype=dtype, name="generator_predictions"
        )
        self.rtd_head = ReplacedTokenHead(
            self.config, dtype=dtype, name="discriminator_predictions"
        )
        self.sop_head = SentenceOrderHead(self.config, dtype=dtype, name="sop_classifier")
        self.sampler = keras.random.SeedGenerator(name="replacement_sampler")
        self.build()

    def build(self, input_shape=None):
        for head in (self.mlm_head, self.rtd_head, self.sop_head):
            head.build()
        self.built = True

    @property
    def word_embeddings(self):
        """The shared `[V, E]` table: both backbones' input, the generator's masked-LM output."""
        return self.backbone.embeddings.word_embeddings.embeddings

    def get_config(self):
        return {**super().get_config(), "generator_hidden_fraction": self.generator_hidden_fraction}

    def call(self, inputs, training=False):
        positions = inputs["masked_lm_positions"]
        hidden = self.generator(inputs, training=training)["sequence_output"]
        mlm_logits = self.mlm_head(gather_positions(hidden, positions), self.word_embeddings)
        flat = ops.reshape(ops.stop_gradient(mlm_logits), (-1, ops.shape(mlm_logits)[-1]))
        sampled = keras.random.categorical(flat, 1, dtype="int32", seed=self.sampler)
        sampled = ops.reshape(sampled, ops.shape(positions))
        ids, replaced = corrupt(
            inputs["input_ids"],
            positions,
            inputs["masked_lm_weights"],
            sampled,
            ops.cast(inputs["masked_lm_ids"], "int32"),
        )
        outputs = self.backbone({**inputs, "input_ids": ids}, training=training)
        return {
            "mlm_logits": mlm_logits,
            "sop_logits": self.sop_head(outputs["pooled_output"], training=training),
            "rtd_logits": self.rtd_head(outputs["sequence_output"]),
            "rtd_labels": replaced,
        }


def discriminator_model(model: AlbertElectraModel) -> AlbertPretrainingModel:
    """The discriminator as a standard `AlbertPretrainingModel`: its backbone and sentence-order
    head; the masked-LM head at its initial values (a discriminator never trains one)."""
    exported = AlbertPretrainingModel(model.config, name="albert_pretraining")
    exported.backbone.set_weights(model.backbone.get_weights())
    exported.sop_head.set_weights(model.sop_head.get_weights())
    return exported


def generator_model(model: AlbertElectraModel) -> AlbertPretrainingModel:
    """The generator as a standard `AlbertPretrainingModel` (a small masked-LM ALBERT): the shared
    embeddings, its encoder and masked-LM head; pooler and sentence-order head at their initial
    values (the generator has neither)."""
    exported = AlbertPretrainingModel(model.generator_config, name="albert_generator")
    exported.backbone.embeddings.set_weights(model.backbone.embeddings.get_weights())
    exported.backbone.encoder.set_weights(model.generator.encoder.get_weights())
    exported.mlm_head.set_weights(model.mlm_head.get_weights())
    return exported


def load_parts(
    model: AlbertElectraModel,
    discriminator: AlbertPretrainingModel,
    generator: AlbertPretrainingModel | None = None,
) -> None:
    """The inverse of the two exports: `discriminator`'s backbone and sentence-order head into
    `model`, and `generator`'s encoder and masked-LM head when given (else they stay as they are).
    ValueError when the shapes differ."""
    model.backbone.set_weights(discriminator.backbone.get_weights())
    model.sop_head.set_weights(discriminator.sop_head.get_weights())
    if generator is not None:
        model.generator.encoder.set_weights(generator.backbone.encoder.get_weights())
        model.mlm_head.set_weights(generator.mlm_head.get_weights())
