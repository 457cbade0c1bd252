"""The paper's LAMB against a step computed by hand, AdamW's exclusions, and the warmup+decay
schedule."""

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from model.optimization.optimizers import Lamb, WarmupPolynomialDecay, build_optimizer, is_excluded


def reference_lamb_step(w, g, m, v, lr, adapted, b1=0.9, b2=0.999, eps=1e-6, wd=0.01):
    """google-research/albert lamb_optimizer.py, one step, in numpy."""
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    update = m / (np.sqrt(v) + eps)
    ratio = 1.0
    if adapted:
        update = update + wd * w
        w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(update)
        ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return w - lr * ratio * update, m, v


@pytest.mark.keras
def test_lamb_matches_hand_computed_steps_and_excludes_layernorm_and_bias():
    rng = np.random.default_rng(0)
    kernel = keras.Variable(rng.normal(size=(4, 3)).astype("float32"), name="kernel")
    bias = keras.Variable(rng.normal(size=(3,)).astype("float32"), name="bias")
    gamma = keras.Variable(np.ones(3, "float32"), name="gamma")
    variables = [kernel, bias, gamma]
    optimizer = Lamb(learning_rate=0.01, global_clipnorm=None)
    state = {id(v): (np.array(v.numpy()), 0.0, 0.0) for v in variables}
    for _ in range(3):
        grads = [rng.normal(size=v.shape).astype("float32") for v in variables]
        optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
        for variable, grad in zip(variables, grads):
            w, m, v = state[id(variable)]
            state[id(variable)] = reference_lamb_step(
                w, grad, m, v, 0.01, adapted=variable is kernel
            )
            np.testing.assert_allclose(
                variable.numpy(), state[id(variable)][0], rtol=1e-5, atol=1e-6
            )


@pytest.mark.keras
def test_global_norm_clipping_at_one_precedes_the_update():
    w = keras.Variable(np.ones((2, 2), "float32"), name="kernel")
    clipped = Lamb(learning_rate=0.1, global_clipnorm=1.0)
    grad = np.full((2, 2), 10.0, "float32")  # norm 20 -> scaled to norm 1
    clipped.apply([keras.ops.convert_to_tensor(grad)], [w])
    expected, _, _ = reference_lamb_step(np.ones((2, 2)), grad / 20.0, 0.0, 0.0, 0.1, adapted=True)
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-5)


def test_exclusion_patterns_follow_the_reference():
    assert is_excluded("albert/encoder/layer_0/attention_layer_norm/gamma")
    assert is_excluded("albert/encoder/dense/bias")
    assert is_excluded("bert/embeddings/LayerNorm/beta")
    assert not is_excluded("albert/encoder/layer_0/attention/query/kernel")
    assert not is_excluded("albert/embeddings/token_embedding/embeddings")


def test_schedule_warms_up_linearly_then_decays_polynomially_over_all_steps():
    schedule = WarmupPolynomialDecay(peak=1.0, warmup_steps=10, total_steps=100)
    values = [float(schedule(step)) for step in (0, 5, 10, 55, 100, 150)]
    np.testing.assert_allclose(values, [0.0, 0.5, 0.9, 0.45, 0.0, 0.0], atol=1e-6)


@pytest.mark.keras
def test_adamw_option_excludes_layernorm_and_bias_from_decay():
    kernel = keras.Variable(np.ones((2, 2), "float32"), name="kernel")
    bias = keras.Variable(np.ones((2,), "float32"), name="bias")
    optimizer = build_optimizer(
        "adamw", WarmupPolynomialDecay(0.1, 0, 10), weight_decay=0.5, clipnorm=None
    )
    optimizer.apply([keras.ops.zeros((2, 2)), keras.ops.zeros((2,))], [kernel, bias])
    np.testing.assert_allclose(bias.numpy(), 1.0)
    assert float(kernel.numpy()[0, 0]) < 1.0


@pytest.mark.keras
def test_adamw_steps_equal_torch_adamw_with_small_gradients():
    """Our AdamW is torch.optim.AdamW (Hugging Face's): ε after the bias correction, decoupled
    weight decay. Gradients of 1e-6, where Keras' own ε-hat placement would damp the updates."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    start = rng.normal(size=(3, 4)).astype("float32")
    ours = keras.Variable(start, name="kernel")
    theirs = torch.nn.Parameter(torch.from_numpy(start.copy()))
    optimizer = build_optimizer("adamw", WarmupPolynomialDecay(1e-3, 0, 100), clipnorm=None)
    reference = torch.optim.AdamW(
        [theirs], lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01
    )
    for step in range(5):
        grad = (1e-6 * rng.normal(size=start.shape)).astype("float32")
        for group in reference.param_groups:
            group["lr"] = 1e-3 * (1 - step / 100)
        optimizer.apply([keras.ops.convert_to_tensor(grad)], [ours])
        theirs.grad = torch.from_numpy(grad)
        reference.step()
        moved = ours.numpy() - start  # about 5e-4 a step (Keras' own AdamW: 3e-5 at step 1)
        np.testing.assert_allclose(moved, theirs.detach().numpy() - start, rtol=1e-3, atol=1e-7)
