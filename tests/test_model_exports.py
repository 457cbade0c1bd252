"""The exports other tools load: a keras-hub preset (backbone equal to ours on this backend, for
every sharing layout keras-hub represents; the classifier and the tokenizer load) and the
pretraining export set (Hugging Face weights + fast tokenizer + model card, keras-hub preset)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import shared_path
from model_testdata import padded_inputs

from albert.tokenization import AlbertTokenizer
from albert.vocabulary_record import REFERENCE, Preprocessing
from model.checkpoints.weights import ConversionError
from model.conversion.exports import model_card, write_exports
from model.conversion.keras_hub import export_keras_hub
from model.network.config import get_preset
from model.network.pretraining_model import AlbertPretrainingModel

keras_hub = pytest.importorskip("keras_hub")

VOCAB = 16000  # the reference vocabulary's size, so its tokenizer fits the models
LAYOUTS = {
    "one-group": {},
    "groups-x-inner": {"num_hidden_layers": 4, "num_hidden_groups": 2, "inner_group_num": 2},
    "no-sharing-E-equals-H": {"num_hidden_layers": 3, "sharing": "none", "embedding_size": 32},
}
TEXTS = ["The Year 10, CAFÉ naïve (a-b)", "``Quoted'' text\u00a0and  spaces", "Москва İstanbul ½"]


@pytest.mark.keras
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_keras_hub_backbone_matches_ours(layout, keras_backend, tmp_path):
    import keras

    keras.utils.set_random_seed(0)
    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=VOCAB, **LAYOUTS[layout]))
    export_keras_hub(model, str(tmp_path / "preset"))
    backbone = keras_hub.models.AlbertBackbone.from_preset(str(tmp_path / "preset"))
    batch = padded_inputs(VOCAB, 12)
    ours = model.backbone(batch)
    theirs = backbone(
        {
            "token_ids": batch["input_ids"],
            "segment_ids": batch["segment_ids"],
            "padding_mask": batch["input_mask"],
        }
    )
    diff = float(
        np.abs(np.asarray(ours["sequence_output"]) - np.asarray(theirs["sequence_output"])).max()
    )
    print({"backend": keras_backend, "layout": layout, "max_abs_diff": diff})
    assert diff <= 1e-4
    np.testing.assert_allclose(
        np.asarray(theirs["pooled_output"]), np.asarray(ours["pooled_output"]), atol=1e-4
    )


@pytest.mark.keras
@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"sharing": "attention"}, "no equivalent"),
        ({"sharing": "ffn"}, "no equivalent"),
        ({"hidden_act": "gelu"}, "tanh GELU"),
    ],
)
def test_keras_hub_refuses_what_it_cannot_represent(overrides, message, tmp_path):
    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=101, **overrides))
    with pytest.raises(ConversionError, match=message):
        export_keras_hub(model, str(tmp_path / "preset"))
    assert not (tmp_path / "preset").exists()


@pytest.mark.keras
def test_pretraining_exports_with_model_card_and_keras_hub_tokenizer(tmp_path):
    pytest.importorskip("transformers")
    from transformers import AlbertForPreTraining, AutoTokenizer

    spm_model = str(shared_path("reference", "sp16k.model"))
    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=VOCAB))
    run = {
        "data": "records/",
        "preset": "albert-nano",
        "steps": 40,
        "batch_size": 8,
        "learning_rate": 0.005,
        "optimizer": "lamb",
        "seed": 1,
    }
    data = {
        "files": ["records/part-0.tfrecord", "records/part-1.tfrecord"],
        "max_seq_length": 128,
        "masking": "static",
        "objective": "sop",
        "do_lower_case": True,
        "counts": {"documents": 12, "sentences": 345, "tokens": 6789, "instances": 90},
        "options": {"input": "corpus/"},
    }
    heldout = {"masked_lm_accuracy": 0.25, "sop_accuracy": 0.75, "perplexity": 123.4}
    names, skipped = write_exports(
        model, str(tmp_path), run, data, heldout, spm_model, "CC-BY-SA-4.0"
    )
    assert names == {"huggingface": "hf", "keras_hub": "keras_hub"} and skipped == {}
    hf = tmp_path / "hf"
    assert AlbertForPreTraining.from_pretrained(hf) is not None
    tokenizer = AutoTokenizer.from_pretrained(str(hf))
    assert tokenizer("CAFÉ 10, x", add_special_tokens=False)["input_ids"] == AlbertTokenizer(
        spm_model
    ).encode("CAFÉ 10, x")
    assert json.loads((hf / "special_tokens_map.json").read_text())["mask_token"] == "[MASK]"
    card = (hf / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["library_name"] == "transformers" and front["pipeline_tag"] == "fill-mask"
    metrics = front["model-index"][0]["results"][0]["metrics"]
    assert {m["type"]: m["value"] for m in metrics} == heldout
    for fact in (
        "| steps | 40 |",
        "| batch_size | 8 |",
        "- documents: 12",
        "- tokens: 6,789",
        "2 files",
        "CC-BY-SA-4.0",
        "16,000 pieces",
        "| num_hidden_layers | 2 |",
    ):
        assert fact in card, fact

    # The keras-hub preset: its tokenizer lowercases and strips accents through its own vocabulary,
    # and the classifier loads with its preprocessor.
    preset = str(tmp_path / "keras_hub")
    preset_tokenizer = keras_hub.models.AlbertTokenizer.from_preset(preset)
    ours = AlbertTokenizer(spm_model)
    for text in TEXTS:
        assert np.asarray(preset_tokenizer(text)).tolist() == ours.encode(text), text
    classifier = keras_hub.models.AlbertTextClassifier.from_preset(preset, num_classes=2)
    assert classifier.predict(TEXTS, verbose=0).shape == (3, 2)
    expected = [ours.cls_id, *ours.encode("Hello there"), ours.sep_id]
    features = classifier.preprocessor(["Hello there"])
    assert np.asarray(features["token_ids"])[0, : len(expected)].tolist() == expected


@pytest.mark.keras
@pytest.mark.parametrize(
    "hidden,skipped",
    [(("keras_hub",), {"keras_hub"}), (("safetensors",), {"huggingface", "keras_hub"})],
)
def test_an_export_whose_library_is_missing_is_skipped_in_one_line(
    hidden, skipped, tmp_path, monkeypatch, caplog
):
    """An install without an export's library (the GPU kit's, say) writes the other exports and
    names what it skipped and why, one warning line each; the run does not fail."""
    import sys

    for name in hidden:
        monkeypatch.setitem(sys.modules, name, None)  # `import name` now fails as if not installed
    for name in ("model.conversion.hf", "model.conversion.keras_hub"):
        monkeypatch.delitem(sys.modules, name, raising=False)  # imported again, without it
    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=101))
    names, reasons = write_exports(model, str(tmp_path), {}, {}, {"sop_accuracy": 0.5}, None)
    assert set(reasons) == skipped and set(names) == {"huggingface", "keras_hub"} - skipped
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == len(skipped) and all(
        f"needs the module {hidden[0]}, which is not installed" in w and "\n" not in w
        for w in warnings
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names.values())


@pytest.mark.keras
@pytest.mark.parametrize("kind", ["span", "multiple_choice"])
def test_span_and_multiple_choice_models_export_as_their_hugging_face_classes(kind, tmp_path):
    """SQuAD's fine-tuned model is AlbertForQuestionAnswering, RACE's AlbertForMultipleChoice:
    the same logits (question answering's on the unpadded tokens)."""
    import keras
    import torch
    import transformers

    from model.conversion.hf import export_huggingface_task
    from model.finetune.models import FinetuneModel
    from model.network.backbone import AlbertBackbone

    keras.utils.set_random_seed(0)
    backbone = AlbertBackbone(get_preset("albert-nano", vocab_size=VOCAB))
    model = FinetuneModel(backbone, kind, 2 if kind == "span" else 1, dropout=0.0)
    architecture = {
        "span": "AlbertForQuestionAnswering",
        "multiple_choice": "AlbertForMultipleChoice",
    }
    export_huggingface_task(model, architecture[kind], str(tmp_path / "hf"))
    theirs_model = getattr(transformers, architecture[kind]).from_pretrained(str(tmp_path / "hf"))
    rng = np.random.default_rng(0)
    ids = rng.integers(5, VOCAB, size=(3, 12)).astype("int32")
    mask = np.ones_like(ids)
    mask[:, 9:] = 0
    inputs = {"input_ids": ids, "segment_ids": np.zeros_like(ids), "input_mask": mask}
    if kind == "multiple_choice":  # 1 question x 3 choices
        inputs = {name: value[None] for name, value in inputs.items()}
    ours = model(inputs)
    torch_inputs = {
        "input_ids": torch.tensor(inputs["input_ids"], dtype=torch.long),
        "token_type_ids": torch.tensor(inputs["segment_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(inputs["input_mask"], dtype=torch.long),
    }
    with torch.no_grad():
        theirs = theirs_model.eval()(**torch_inputs)
    if kind == "span":
        for name in ("start_logits", "end_logits"):
            np.testing.assert_allclose(
                np.asarray(ours[name])[:, :9], getattr(theirs, name).numpy()[:, :9], atol=1e-5
            )
    else:
        np.testing.assert_allclose(np.asarray(ours), theirs.logits.numpy(), atol=1e-5)


@pytest.mark.keras
def test_an_rtd_discriminator_is_exported_as_what_it_is(tmp_path):
    """No masked-LM head, `AlbertModel` in config.json, a card without fill-mask, the generator's
    masked-LM figures apart from the discriminator's and the command with --objective rtd."""
    pytest.importorskip("safetensors")
    from model.conversion.exports import model_card
    from model.conversion.hf import export_huggingface, read_huggingface_tensors

    model = AlbertPretrainingModel(get_preset("albert-nano", vocab_size=100))
    export_huggingface(model, str(tmp_path / "hf"), masked_lm=False)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["AlbertModel"]
    assert not [n for n in read_huggingface_tensors(str(tmp_path / "hf")) if "predictions" in n]
    run = {"data": "records/", "preset": "albert-nano", "steps": 4, "objective": "rtd"}
    heldout = {"masked_lm_accuracy": 0.25, "replaced_token_accuracy": 0.9, "sop_accuracy": 0.75}
    card = model_card(model.config, run, {"objective": "sop"}, heldout)
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["pipeline_tag"] == "feature-extraction" and "masked-lm" not in front["tags"]
    metrics = front["model-index"][0]["results"][0]["metrics"]
    assert {m["type"] for m in metrics} == {"replaced_token_accuracy", "sop_accuracy"}
    assert "--objective rtd" in card and "objective sop" not in card
    assert "| masked_lm_accuracy (the generator's) | 0.2500 |" in card
    assert "AlbertModel.from_pretrained(path)" in card


@pytest.mark.keras
def test_the_model_card_states_the_vocabularys_language_and_preprocessing():
    config = get_preset("albert-nano", vocab_size=VOCAB)
    japanese = Preprocessing(lowercase=False, strip_accents=False, language="ja")
    card = model_card(config, {}, {}, {}, japanese)
    assert yaml.safe_load(card.split("---\n")[1])["language"] == ["ja"]
    assert "language ja: text cased, accents kept" in card and "stripped" not in card
    reference = model_card(config, {}, {}, {}, REFERENCE)
    assert "language" not in yaml.safe_load(reference.split("---\n")[1])
    assert "lowercased, accents stripped" in reference and "google-research/albert" in reference
