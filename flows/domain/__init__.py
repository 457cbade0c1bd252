"""Domain-adaptive pretraining: one adaptation of a base model to a domain corpus, and its
report."""
