"""The serving export of a SQuAD-style fine-tune (`model.predict.serving`): its `serving_default`
takes `question` and `context` string tensors [N] and answers from a single window, in the graph.

The question's pieces (at most `max_query_length`) and the context's, each word tokenized on its
own with the character span it covers as `model.tasks.squad_features.tokenize_with_offsets` gives
it, make `[CLS] question [SEP] context [SEP]` padded to the fine-tune's length; a context longer
than the one window left is cut there (`albert predict` reads the rest in further windows, so only
rows whose context fits one window are answered alike). The decoding is
`model.tasks.squad_decode.decode`'s on that window: the `n_best_size` best starts and ends, spans
within the context with end >= start and at most `max_answer_length` pieces, ranked by the sum of
their logits, a text seen before left out. It returns `answer` (the best span's text, the
context's characters `start`..`end`), `start` and `end` (character offsets; -1 with no answer),
`score` (its probability among the n best; 0 with no answer) and, for SQuAD v2, `null_score_diff`
(the answer is "" where it exceeds the fine-tune's tuned threshold).
"""

from __future__ import annotations

import keras

from model.predict.task_info import TaskInfo
from model.tasks.squad_decode import NO_SPAN_DIFF
from model.tasks.squad_features import SPIECE_UNDERLINE


def context_pieces(in_graph, contexts):
    """The pieces of each context (int64 RaggedTensor [N, None]) and each piece's [start, end)
    character span in it (`tokenize_with_offsets`: exact where a word's pieces spell it, else the
    whole word)."""
    import tensorflow as tf  # the serving export's own

    words, begins, _ = in_graph.split_words(contexts)
    # character offsets of the words (the split gives bytes)
    begins = begins.flat_values
    before = tf.strings.substr(
        tf.repeat(contexts, words.row_lengths()), tf.zeros_like(begins), begins
    )
    word_start = tf.cast(tf.strings.length(before, unit="UTF8_CHAR"), tf.int64)
    word_chars = tf.cast(tf.strings.length(words.flat_values, unit="UTF8_CHAR"), tf.int64)
    pieces = tf.cast(in_graph.tokenize(words.flat_values), tf.int64)  # [words, None]
    names = in_graph.sentencepiece.id_to_string(tf.cast(pieces.flat_values, tf.int32))
    surfaces = pieces.with_flat_values(tf.strings.regex_replace(names, SPIECE_UNDERLINE, ""))
    lengths = tf.cast(tf.strings.length(surfaces, unit="UTF8_CHAR"), tf.int64)
    spelled = tf.strings.reduce_join(surfaces, axis=1)
    preprocessed = tf.strings.regex_replace(in_graph.preprocess(words.flat_values), " ", "")
    exact = (tf.reduce_sum(lengths, axis=1) == word_chars) & (spelled == preprocessed)
    ends_within = tf.cumsum(lengths, axis=1)
    exact_pieces = tf.ones_like(pieces, tf.bool) & exact[:, None]
    starts = tf.where(
        exact_pieces, word_start[:, None] + ends_within - lengths, word_start[:, None]
    )
    ends = tf.where(
        exact_pieces, word_start[:, None] + ends_within, (word_start + word_chars)[:, None]
    )

    def per_context(value):
        return words.with_flat_values(value).merge_dims(1, 2)

    return per_context(pieces), per_context(starts), per_context(ends)


def at_piece(offsets, pieces):
    """`offsets` (ragged [N, None]) at the piece indices `pieces` [N, C] (0 where outside)."""
    import tensorflow as tf  # the serving export's own

    dense = tf.pad(offsets.to_tensor(0), [[0, 0], [0, 1]])  # a column even for empty contexts
    inside = (pieces >= 0) & (pieces < offsets.row_lengths()[:, None])
    return tf.gather(dense, tf.where(inside, pieces, 0), batch_dims=1)


def span_function(info: TaskInfo, model: keras.Model, encode):
    """The `serving_default` function of a SQuAD fine-tune's `model` (see the module docstring)
    and its signature; `encode` is the text tasks' `ServingEncoder` (its tokenizers)."""
    import tensorflow as tf  # the serving export's own

    tokenizer, in_graph, length = encode.tokenizer, encode.in_graph, info.max_seq_length
    k, v2 = min(info.n_best_size, length), info.unanswerable

    def serve(questions, contexts):
        query = tf.cast(in_graph.tokenize(questions), tf.int64)[:, : info.max_query_length]
        pieces, piece_starts, piece_ends = context_pieces(in_graph, contexts)
        window = length - 3 - query.row_lengths()
        kept = tf.minimum(pieces.row_lengths(), window)
        pieces = tf.ragged.boolean_mask(
            pieces, tf.ragged.range(pieces.row_lengths()) < kept[:, None]
        )
        rows = query.nrows()

        def token(piece_id):
            return tf.fill([rows, 1], tf.constant(piece_id, tf.int64))

        parts = [token(tokenizer.cls_id), query, token(tokenizer.sep_id), pieces]
        ids = tf.concat([*parts, token(tokenizer.sep_id)], axis=1)
        first = query.row_lengths() + 2  # the position of the context's first piece
        positions = tf.ragged.range(ids.row_lengths())
        segments = tf.cast(positions >= first[:, None], tf.int64)
        inputs = {
            "input_ids": ids.to_tensor(tokenizer.pad_id, shape=[None, length]),
            "segment_ids": segments.to_tensor(0, shape=[None, length]),
            "input_mask": tf.ones_like(ids).to_tensor(0, shape=[None, length]),
        }
        outputs = model({n: tf.cast(t, tf.int32) for n, t in inputs.items()}, training=False)
        starts, ends = outputs["start_logits"], outputs["end_logits"]
        start_logit, start_at = tf.math.top_k(starts, k)
        end_logit, end_at = tf.math.top_k(ends, k)
        start_at, end_at = tf.cast(start_at, tf.int64), tf.cast(end_at, tf.int64)

        def in_context(at):
            return (at >= first[:, None]) & (at < (first + kept)[:, None])

        s, e = start_at[:, :, None], end_at[:, None, :]
        valid = in_context(start_at)[:, :, None] & in_context(end_at)[:, None, :]
        valid &= (e >= s) & (e - s + 1 <= info.max_answer_length)
        score = start_logit[:, :, None] + end_logit[:, None, :]  # float32, as the decoder sums
        flat = [rows, k * k]
        valid, score = tf.reshape(valid, flat), tf.reshape(tf.cast(score, tf.float64), flat)
        s = tf.reshape(tf.broadcast_to(s, [rows, k, k]), flat)
        e = tf.reshape(tf.broadcast_to(e, [rows, k, k]), flat)
        order = tf.argsort(tf.where(valid, -score, float("inf")), stable=True)
        valid, score, s, e = (tf.gather(t, order, batch_dims=1) for t in (valid, score, s, e))
        char_start = at_piece(piece_starts, s - first[:, None])
        char_end = at_piece(piece_ends, e - first[:, None])
        texts = tf.strings.substr(
            tf.broadcast_to(contexts[:, None], tf.shape(char_start)),
            char_start,
            char_end - char_start,
            unit="UTF8_CHAR",
        )
        earlier = tf.linalg.band_part(tf.ones([k * k, k * k], tf.bool), -1, 0)
        earlier &= ~tf.eye(k * k, dtype=tf.bool)  # [i, j]: j ranks before i
        seen = tf.reduce_any(
            (texts[:, :, None] == texts[:, None, :]) & earlier & valid[:, None, :], axis=2
        )
        kept_span = valid & ~seen
        kept_span &= tf.cumsum(tf.cast(kept_span, tf.int64), axis=1) <= info.n_best_size
        found = tf.reduce_any(kept_span, axis=1)
        best = tf.argmax(tf.cast(kept_span, tf.int64), axis=1)  # the first kept span
        best_score = tf.gather(score, best, batch_dims=1)
        share = tf.where(kept_span, tf.exp(score - best_score[:, None]), 0.0)
        null = tf.cast(starts[:, 0] + ends[:, 0], tf.float64)
        null_diff = tf.where(found, null - best_score, NO_SPAN_DIFF)
        answer = tf.gather(texts, best, batch_dims=1)
        answered = found & (answer != "")  # `albert predict`'s: an empty best text is no answer
        if v2 and info.threshold is not None:
            answered &= null_diff <= info.threshold
        none = tf.constant(-1, tf.int64)
        result = {
            "answer": tf.where(answered, answer, ""),
            "start": tf.where(answered, tf.gather(char_start, best, batch_dims=1), none),
            "end": tf.where(answered, tf.gather(char_end, best, batch_dims=1), none),
            "score": tf.where(answered, 1.0 / tf.reduce_sum(share, axis=1), 0.0),
        }
        if v2:
            result["null_score_diff"] = null_diff
        return result

    question = tf.TensorSpec([None], tf.string, name="question")
    context = tf.TensorSpec([None], tf.string, name="context")
    return serve, [question, context]
