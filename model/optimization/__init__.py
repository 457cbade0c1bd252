"""The optimizers pretraining and fine-tuning share: LAMB and AdamW with the paper's schedule
(`optimizers`) and which weights weight decay skips (`weight_decay`).
Entry point: `model.optimization.optimizers`, which `model.pretrain.build` and fine-tuning use."""
