"""Pretrained weights in and out: Hugging Face (`hf`), the original TF1 checkpoints (`tf1`) and
KerasHub (`keras_hub`) read and written, and the exports written at the end of pretraining.
Entry points: `model.conversion.convert.load_pretrained` and
`model.conversion.exports.write_exports`."""
