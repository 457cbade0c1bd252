"""Which JAX processes a pretraining run joins (model.runtime.distribute.jax_cluster): the flags,
TF_CONFIG (Vertex AI) or JAX's cluster detection; a wrong flag is one line. The flows pass the
flags through."""

import json

import pytest

from albert.errors import StageError
from model.runtime.distribute import JaxCluster, jax_cluster

pytestmark = pytest.mark.backend_free


def test_flags_name_the_process_and_none_is_one_process():
    assert jax_cluster("10.0.0.2:8476", 4, 3, {}) == JaxCluster("10.0.0.2:8476", 4, 3)
    assert jax_cluster(None, None, None, {}) is None
    assert (
        jax_cluster(None, None, None, {"SLURM_JOB_ID": "7"}) == JaxCluster()
    )  # JAX detects the rest


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("h:1", 2, 2), "--process-id 2 is out of range for --num-processes 2 (0 to 1)"),
        (("h:1", None, 0), "--num-processes missing"),
        (("h", 2, 0), "--coordinator h: expected HOST:PORT"),
    ],
)
def test_a_wrong_flag_is_one_line(flags, message):
    with pytest.raises(StageError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        jax_cluster(*flags, {})


def test_tf_config_tasks_are_the_jax_processes_chief_first():
    cluster = {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"]}
    ranks = [
        jax_cluster(None, None, None, {"TF_CONFIG": json.dumps({"cluster": cluster, "task": task})})
        for task in ({"type": "chief", "index": 0}, {"type": "worker", "index": 1})
    ]
    assert ranks == [JaxCluster("c:2222", 3, 0), JaxCluster("c:2222", 3, 2)]


def test_the_flows_pass_the_flags_to_pretrain(tmp_path):
    from flows.pipeline.config import PretrainPipelineConfig

    config = PretrainPipelineConfig(
        run_dir=str(tmp_path),
        input=["corpus.txt"],
        coordinator="h:8476",
        num_processes=2,
        process_id=1,
    )
    pretrain = config.pretrain_config("spiece.model")
    assert (pretrain.coordinator, pretrain.num_processes, pretrain.process_id) == ("h:8476", 2, 1)
