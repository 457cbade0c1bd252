"""Training checkpoints: atomic, the last K kept, an exact resume (`store`), written in the
background (`writer`) under one manager, and weights matched by name across formats (`weights`).
Entry point: `model.checkpoints.manager.Checkpoints`."""
