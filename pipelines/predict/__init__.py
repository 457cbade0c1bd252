"""`albert predict`'s Beam side: its settings (`config`), the rows it reads (`rows`), the
RunInference model handler (`handler`) and the pipeline (`stage`). The command, which hands the
pipeline a fine-tuned model (`model.predict`), is `flows.predict`."""
