"""The serving export of a multiple-choice (RACE-style) fine-tune (`model.predict.serving`): its
`serving_default` takes `article` and `question` string tensors [N] and `options` [N, C] (C the
fine-tune's options, 4 for RACE) and scores every option in the graph.

Each option is encoded as `model.tasks.encode.encode_race` encodes it: the question completed by
the option (`albert.race_json.fill_option`: every "_" of the question replaced by the option, else
the option after a space), its last `MAX_QA_LENGTH` pieces, then `[CLS] article [SEP]
question+option [SEP]` cut to the fine-tune's length with its truncation (the longer text loses
pieces first). It returns `choice` (the best option's letter), `answer` (its text), `score` (its
probability: the softmax over the row's options) and `scores` ([N, C], in the options' order).
"""

from __future__ import annotations

import keras

from model.predict.task_info import TaskInfo
from model.tasks.encode import MAX_QA_LENGTH


def filled_questions(questions, options):
    """`albert.race_json.fill_option` of each pair of string tensors [M]: the question with each
    "_" replaced by the option, or the question, a space and the option where it has none."""
    import tensorflow as tf  # the serving export's own

    parts = tf.strings.split(questions, sep="_")  # [M, None]; one part where there is no "_"
    count = parts.row_lengths()
    last = tf.ragged.range(count) == (count - 1)[:, None]
    option_after = tf.where(last.flat_values, "", tf.gather(options, parts.value_rowids()))
    completed = parts.with_flat_values(tf.strings.join([parts.flat_values, option_after]))
    replaced = tf.strings.reduce_join(completed, axis=1)
    return tf.where(count > 1, replaced, tf.strings.join([questions, options], separator=" "))


def choice_function(info: TaskInfo, model: keras.Model, encode):
    """The `serving_default` function of a multiple-choice fine-tune's `model` (see the module
    docstring) and its signature; `encode` is the text tasks' `ServingEncoder`."""
    import tensorflow as tf  # the serving export's own

    choices = len(info.labels)
    letters = tf.constant(list(info.labels))

    def serve(articles, questions, options):
        rows = tf.shape(options, tf.int64)[0]
        owner = tf.repeat(tf.range(rows), choices)  # each option's row
        article = tf.gather(encode.tokenize(articles), owner)
        flat_options = tf.reshape(options, [-1])
        completed = filled_questions(tf.gather(questions, owner), flat_options)
        question = encode.tokenize(completed)
        start = tf.maximum(question.row_lengths() - MAX_QA_LENGTH, 0)
        question = tf.ragged.boolean_mask(
            question, tf.ragged.range(question.row_lengths()) >= start[:, None]
        )
        inputs = encode.inputs(article, question)
        inputs = {
            name: tf.reshape(value, [rows, choices, tf.shape(value, tf.int64)[-1]])
            for name, value in inputs.items()
        }
        logits = tf.cast(model(inputs, training=False), tf.float64)
        scores = tf.nn.softmax(logits, axis=-1)
        best = tf.argmax(scores, axis=-1)
        return {
            "choice": tf.gather(letters, best),
            "answer": tf.gather(options, best, batch_dims=1),
            "score": tf.reduce_max(scores, axis=-1),
            "scores": scores,
        }

    article = tf.TensorSpec([None], tf.string, name="article")
    question = tf.TensorSpec([None], tf.string, name="question")
    options = tf.TensorSpec([None, choices], tf.string, name="options")
    return serve, [article, question, options]
