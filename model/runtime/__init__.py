"""Where training runs: devices and strategies, JAX processes (`distribute`), CPU cores, Keras
seeds, Keras's TensorFlow when it is loaded, and stopping at a step on SIGTERM (`preemption`).
Entry point: none of its own; `model.pretrain` and `model.finetune` use it."""
