"""Predictions of a fine-tuned model on new text, Beam-free: what a fine-tune's output says about
its task (`task_info`), each task kind's encoding and outputs (`kinds`, one table), rows' texts ->
model inputs (`encoding`), the loaded model and its batches (`predictor`), model outputs ->
predictions (`outputs`). `albert predict` (`flows.predict`) runs
them in a Beam RunInference job (`pipelines.predict`)."""
