"""The serving export of a fine-tune: `OUTPUT/export/saved_model`, a TensorFlow SavedModel whose
`serving_default` takes raw strings (`text`, and `text_b` for a pair task), tokenizes them in the
graph (`albert.tokenization.InGraphAlbertTokenizer`, equal to the Python tokenizer) with the
fine-tune's truncation (head, tail or head_tail; a pair shares the length as BERT's rule does),
and returns, for classification, `label` (the best label's name), `score` (its probability) and
`scores` ([N, labels], in the order of `label_names`, returned too); for multi-label, `scores`
(every label's sigmoid, [N, labels], in the order of `label_names`), `selected` (a boolean mask
beside them: the score is at least the saved threshold) and `labels` (the selected labels' names
in `label_names`' order, padded with "" to [N, labels]); for regression, `value`.
TF Serving, Vertex AI or `tf.saved_model.load` serve it with TensorFlow and tensorflow-text only.

`export_saved_model` writes it into a fine-tune output from the fine-tuned model, on the
TensorFlow backend (`model.finetune.serving_export` calls it before committing the output, in a
TensorFlow-backend process for a fine-tune on JAX). A SQuAD-style fine-tune's takes `question`
and `context` and answers from a single window (`model.predict.serving_spans`); a multiple-choice
fine-tune's takes `article`, `question` and `options` and scores each option
(`model.predict.serving_choices`).
"""

from __future__ import annotations

import keras

from albert.fs import join
from albert.tokenization import AlbertTokenizer
from model.predict.serving_choices import choice_function
from model.predict.serving_spans import span_function
from model.predict.task_info import TaskInfo, task_info

SAVED_MODEL = "export/saved_model"


def pair_budgets(len_a, len_b, budget: int):
    """`model.tasks.truncation.pair_budgets` (the longer segment loses tokens first) on tensors of
    lengths, in closed form: a keeps at most max(budget - len_b, ceil(budget / 2))."""
    import tensorflow as tf  # the serving export's own

    half = tf.cast((budget + 1) // 2, len_a.dtype)
    kept_a = tf.minimum(len_a, tf.maximum(budget - len_b, half))
    return kept_a, tf.minimum(len_b, budget - kept_a)


def truncated(ids, keep, strategy: str, head_tokens: int):
    """`model.tasks.truncation.truncate_tokens` of each row of a ragged tensor, to `keep` [N]."""
    import tensorflow as tf  # the serving export's own

    lengths = ids.row_lengths()
    positions = tf.ragged.range(lengths)
    keep, lengths = keep[:, None], lengths[:, None]
    if strategy == "head":
        mask = positions < keep
    elif strategy == "tail":
        mask = positions >= lengths - keep
    else:  # head_tail
        head = tf.minimum(tf.cast(head_tokens, keep.dtype), keep)
        mask = (positions < head) | (positions >= lengths - (keep - head))
    return tf.ragged.boolean_mask(ids, mask)


class ServingEncoder:
    """Strings -> the model's padded inputs, in the graph (see the module docstring)."""

    def __init__(self, info: TaskInfo):
        self.info = info
        tokenizer = AlbertTokenizer(info.spm_model)
        self.tokenizer, self.in_graph = tokenizer, tokenizer.in_graph()

    def __call__(self, texts, texts_b=None):
        b = None if texts_b is None else self.tokenize(texts_b)
        return self.inputs(self.tokenize(texts), b)

    def tokenize(self, texts):
        """The piece ids (int64 RaggedTensor [N, None]) of a string tensor [N]."""
        import tensorflow as tf  # the serving export's own

        return tf.cast(self.in_graph.tokenize(texts), tf.int64)

    def inputs(self, a, b=None):
        """The model's inputs (int32 [N, T], T the longest row's length) of the piece ids `a` (and
        the pair's `b`), cut as `model.tasks.encode.encode_pair` cuts them."""
        import tensorflow as tf  # the serving export's own

        info, tokenizer = self.info, self.tokenizer
        rows = a.nrows()
        budget = info.max_seq_length - (2 if b is None else 3)
        len_a = a.row_lengths()
        if b is None:
            keep_a = tf.minimum(len_a, budget)
        else:
            keep_a, keep_b = pair_budgets(len_a, b.row_lengths(), budget)
            b = truncated(b, keep_b, info.truncation, info.head_tokens)
        a = truncated(a, keep_a, info.truncation, info.head_tokens)

        def token(piece_id):
            return tf.fill([rows, 1], tf.constant(piece_id, tf.int64))

        parts = [token(tokenizer.cls_id), a, token(tokenizer.sep_id)]
        segments = [tf.zeros_like(p, tf.int64) for p in parts]
        if b is not None:
            parts += [b, token(tokenizer.sep_id)]
            segments += [tf.ones_like(b, tf.int64), tf.ones([rows, 1], tf.int64)]
        ids = tf.concat(parts, axis=1)
        inputs = {
            "input_ids": ids.to_tensor(tokenizer.pad_id),
            "segment_ids": tf.concat(segments, axis=1).to_tensor(0),
            "input_mask": tf.ones_like(ids).to_tensor(0),
        }
        return {name: tf.cast(value, tf.int32) for name, value in inputs.items()}


def _value_outputs(info: TaskInfo, names, logits) -> dict:
    """Regression: the score."""
    return {"value": logits[:, 0]}


def _label_set_outputs(info: TaskInfo, names, logits) -> dict:
    """Multi-label: every label's sigmoid, the mask of those at least the threshold, their
    names."""
    import tensorflow as tf  # the serving export's own

    scores = tf.sigmoid(tf.cast(logits, tf.float64))
    label_names = tf.broadcast_to(names[None, :], tf.shape(scores, tf.int64))
    selected = scores >= info.label_threshold
    labels = tf.ragged.boolean_mask(label_names, selected)
    return {
        "labels": labels.to_tensor("", shape=[None, len(info.labels)]),
        "selected": selected,
        "scores": scores,
        "label_names": label_names,
    }


def _class_outputs(info: TaskInfo, names, logits) -> dict:
    """Classification: the best label, its probability, every label's."""
    import tensorflow as tf  # the serving export's own

    scores = tf.nn.softmax(tf.cast(logits, tf.float64), axis=-1)
    best = tf.argmax(scores, axis=-1)
    return {
        "label": tf.gather(names, best),
        "score": tf.reduce_max(scores, axis=-1),
        "scores": scores,
        "label_names": tf.broadcast_to(names[None, :], tf.shape(scores, tf.int64)),
    }


# A text task's outputs from its logits, by kind.
TEXT_OUTPUTS = {
    "classification": _class_outputs,
    "regression": _value_outputs,
    "multi_label": _label_set_outputs,
}


def serving_function(info: TaskInfo, model: keras.Model, encode: ServingEncoder):
    """The `serving_default` function of `model` (see the module docstring) and its signature."""
    import tensorflow as tf  # the serving export's own

    names = tf.constant(list(info.labels) or [""])
    kind_outputs = TEXT_OUTPUTS[info.kind]

    def outputs(logits):
        return kind_outputs(info, names, logits)

    text = tf.TensorSpec([None], tf.string, name="text")
    if info.texts == 2:
        text_b = tf.TensorSpec([None], tf.string, name="text_b")
        return (lambda a, b: outputs(model(encode(a, b), training=False))), [text, text_b]
    return (lambda a: outputs(model(encode(a), training=False))), [text]


SERVED = {
    **{kind: serving_function for kind in TEXT_OUTPUTS},
    "span": span_function,
    "multiple_choice": choice_function,
}
"""Each task kind -> the function that builds its serving signature."""


def export_saved_model(output_dir: str, model: keras.Model) -> str:
    """Write `output_dir/export/saved_model` for the fine-tune output `output_dir` (its
    results.json written) of `model`, on the TensorFlow backend; its path."""
    info = task_info(output_dir)
    encode = ServingEncoder(info)
    function, signature = SERVED[info.kind](info, model, encode)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(encode.in_graph.sentencepiece)  # its SentencePiece model, a TF resource
    archive.add_endpoint("serving_default", function, input_signature=signature)
    path = join(output_dir, SAVED_MODEL)
    archive.write_out(path, verbose=False)
    return path
