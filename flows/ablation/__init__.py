"""`albert ablate`: the paper's ablation tables over a grid of pretraining runs, and their
report."""
