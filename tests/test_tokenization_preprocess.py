"""ALBERT's text preprocessing: the fast path equals the reference's character-by-character
definition."""

from __future__ import annotations

import unicodedata

import pytest

from albert.tokenization import preprocess_text

pytestmark = pytest.mark.backend_free

TEXTS = [
    "",
    "  plain ASCII,   with\tspaces \n",
    "``Quoted'' text",
    "Café naïve RÉSUMÉ Ångström ﬁne ½ ² İstanbul ǅ",
    "combining: e\u0301\u0301 a\u0308 x\u0338 \u0300start a\u0345b",
    "no-break\u00a0space\u3000ideographic\u2028separator",
    "Σίσυφος Москва 東京 😀",
]


def reference_preprocess(text: str, lower: bool, keep_accents: bool) -> str:
    """google-research/albert's tokenization.preprocess_text (Python 3), which leaves `` and '' as
    they are, plus our `keep_accents` switch (the reference always strips accents)."""
    outputs = " ".join(text.strip().split())
    if not keep_accents:
        outputs = unicodedata.normalize("NFKD", outputs)
        outputs = "".join(c for c in outputs if not unicodedata.combining(c))
    return outputs.lower() if lower else outputs


@pytest.mark.parametrize(
    "lower,keep_accents", [(True, False), (False, False), (True, True), (False, True)]
)
def test_preprocess_equals_the_reference(lower, keep_accents):
    for text in TEXTS:
        assert preprocess_text(text, lower, keep_accents) == reference_preprocess(
            text, lower, keep_accents
        )


def test_a_model_rewritten_at_the_same_path_is_read_again(tmp_path):
    import hashlib
    import os
    from pathlib import Path

    from albert.tokenization import AlbertTokenizer, model_sha256
    from tests.fixtures.tasks.tiny_vocab import train_tiny_spm

    path = train_tiny_spm(tmp_path, vocab_size=60)
    assert AlbertTokenizer(path).vocab_size == 60
    (tmp_path / "new").mkdir()
    os.replace(
        train_tiny_spm(tmp_path / "new", vocab_size=80), path
    )  # a new --vocab-size, same path
    assert AlbertTokenizer(path).vocab_size == 80
    assert model_sha256(path) == hashlib.sha256(Path(path).read_bytes()).hexdigest()
