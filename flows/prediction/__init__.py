"""The `predict` deployment's flow: a fine-tuned model's predictions on files (flows.predict) as a
Prefect flow run, its summary a Prefect artifact."""
