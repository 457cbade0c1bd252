"""Evaluation: held-out pretraining metrics (`heldout`; `heldout_stage`, the heldout stage), the
loss baselines a run is compared with (`baselines`), and fine-tuning predictions scored against
gold (`evaluate`). Entry points: `python -m model.evaluation.evaluate` and
`model.evaluation.heldout_stage.run`."""
