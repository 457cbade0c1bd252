"""Training job specs and Prefect work pools: they parse, carry the required fields, and the command
they run parses with model.pretrain's real flags into a valid PretrainConfig."""

from __future__ import annotations

import json
import re
import shlex

import cloud_harness as harness
import jsonschema
import pytest
import yaml
from prefect.utilities.templating import apply_values, find_placeholders

pytestmark = pytest.mark.backend_free

VERTEX_SPECS = sorted((harness.INFRA_DIR / "vertex").glob("*.yaml"))
ACCELERATORS = {
    "NVIDIA_A100_80GB",
    "NVIDIA_TESLA_A100",
    "NVIDIA_H100_80GB",
    "NVIDIA_L4",
    "NVIDIA_TESLA_V100",
    "TPU_V2",
    "TPU_V3",
}
PLACEHOLDERS = {
    "${IMAGE}": "us-central1-docker.pkg.dev/p/albert/albert-train:0.1.0",
    "${BUCKET}": "bucket",
}


def substitute(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace(name, value)
    return text


def parse_pretrain(command: list[str]):
    """The job's command parsed by model.pretrain's own flags; unknown flags would make it exit."""
    module, args = harness.module_command(command)
    assert module == "model.pretrain"
    config, unknown = harness.parse_stage_command(module, args)
    assert unknown == [], f"model.pretrain would reject {unknown}"
    assert config.batch_size % config.gradient_accumulation == 0
    return config


def test_there_are_gpu_and_tpu_vertex_specs():
    names = [path.name for path in VERTEX_SPECS]
    assert any("tpu" in name for name in names) and any("a100" in name for name in names), names


@pytest.mark.parametrize("path", VERTEX_SPECS, ids=lambda p: p.name)
def test_vertex_custom_job_spec(path):
    spec = yaml.safe_load(substitute(path.read_text(), PLACEHOLDERS))
    pools = spec["workerPoolSpecs"]
    assert pools and pools[0]["replicaCount"] == 1, "pool 0 is the single chief"
    for pool in pools:
        machine = pool["machineSpec"]
        assert machine["machineType"] and machine["acceleratorType"] in ACCELERATORS
        assert machine["acceleratorCount"] >= 1 and pool["replicaCount"] >= 1
        container = pool["containerSpec"]
        assert container["imageUri"] == PLACEHOLDERS["${IMAGE}"]
        config = parse_pretrain(container["command"] + container["args"])
        assert config.data.startswith("gs://") and config.output.startswith("gs://")
        replicas = sum(p["replicaCount"] * p["machineSpec"]["acceleratorCount"] for p in pools)
        micro_batch = config.batch_size // config.gradient_accumulation
        assert micro_batch % replicas == 0, (
            f"{micro_batch} sequences do not split over {replicas} devices"
        )
        assert (machine["acceleratorType"].startswith("TPU")) == (config.tpu is not None)
    assert int(spec["scheduling"]["timeout"].rstrip("s")) > 0


def test_tpu_vm_script_runs_the_same_cli_with_tpu_strategy():
    script = (harness.INFRA_DIR / "tpu" / "pretrain_tpu_vm.sh").read_text()
    assert (
        "gcloud compute tpus tpu-vm create" in script and "gcloud compute tpus tpu-vm ssh" in script
    )
    train = re.search(
        r'train="cd albert && nohup \.venv/bin/(python -m model\.pretrain .*?) >', script, re.DOTALL
    ).group(1)
    values = {
        "$BUCKET": "bucket",
        "$PRESET": "albert-base",
        "$ACCELERATOR": "v3-8",
        "$STEPS": "125000",
        "$BATCH": "4096",
    }
    words = shlex.split(substitute(train.replace("\\\n", " "), values))
    config = parse_pretrain(words)
    assert config.tpu == "local" and config.precision == "bfloat16"
    assert "tensorflow-tpu==" in script and "-c constraints.txt" in script


def test_kubernetes_gpu_job_manifest():
    manifest = yaml.safe_load(
        (harness.INFRA_DIR / "kubernetes" / "pretrain-albert-base-8gpu-job.yaml").read_text()
    )
    assert manifest["apiVersion"] == "batch/v1" and manifest["kind"] == "Job"
    pod = manifest["spec"]["template"]["spec"]
    assert pod["restartPolicy"] in ("Never", "OnFailure")
    (container,) = pod["containers"]
    gpus = int(container["resources"]["limits"]["nvidia.com/gpu"])
    config = parse_pretrain(container["command"] + container["args"])
    assert config.batch_size // config.gradient_accumulation % gpus == 0
    assert config.resume, "a restarted pod must resume from its checkpoints"


def _env(container: dict) -> dict:
    return {
        item["name"]: item.get("value", item.get("valueFrom")) for item in container.get("env", [])
    }


def test_vertex_jax_spec_runs_one_jax_process_per_replica():
    """Vertex's TF_CONFIG on each replica, read as JAX processes: the chief is process 0."""
    from model.runtime.distribute import jax_cluster

    (path,) = [p for p in VERTEX_SPECS if "jax" in p.name]
    pools = yaml.safe_load(substitute(path.read_text(), PLACEHOLDERS))["workerPoolSpecs"]
    assert all(_env(pool["containerSpec"])["KERAS_BACKEND"] == "jax" for pool in pools)
    workers = sum(p["replicaCount"] for p in pools[1:])
    hosts = {
        "chief": ["workerpool0-0:2222"],
        "worker": [f"workerpool1-{i}:2222" for i in range(workers)],
    }
    processes = []
    for kind, addresses in hosts.items():
        for index in range(len(addresses)):
            tf_config = json.dumps({"cluster": hosts, "task": {"type": kind, "index": index}})
            processes.append(jax_cluster(None, None, None, {"TF_CONFIG": tf_config}))
    assert [c.process_id for c in processes] == list(range(sum(p["replicaCount"] for p in pools)))
    coordinators = {(c.coordinator, c.num_processes) for c in processes}
    assert coordinators == {("workerpool0-0:2222", len(processes))}


def test_gke_jax_indexed_job_one_pod_per_host():
    spec = harness.INFRA_DIR / "kubernetes" / "pretrain-albert-large-jax-4host.yaml"
    service, job = yaml.safe_load_all(spec.read_text())
    assert service["kind"] == "Service" and service["spec"]["clusterIP"] == "None"
    assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed"
    hosts = job["spec"]["completions"]
    assert job["spec"]["parallelism"] == hosts > 1
    assert service["spec"]["selector"] == {"job-name": job["metadata"]["name"]}
    pod = job["spec"]["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"]
    (container,) = pod["containers"]
    env = _env(container)
    assert env["KERAS_BACKEND"] == "jax"
    assert "job-completion-index" in env["JOB_COMPLETION_INDEX"]["fieldRef"]["fieldPath"]
    gpus = int(container["resources"]["limits"]["nvidia.com/gpu"])
    for index in range(hosts):  # Kubernetes expands $(JOB_COMPLETION_INDEX) in args
        args = [arg.replace("$(JOB_COMPLETION_INDEX)", str(index)) for arg in container["args"]]
        config = parse_pretrain(container["command"] + args)
        assert (config.num_processes, config.process_id) == (hosts, index)
        micro_batch = config.batch_size // config.gradient_accumulation
        assert micro_batch % (gpus * hosts) == 0 and config.resume
    host, port = config.coordinator.rsplit(":", 1)
    assert host == f"{job['metadata']['name']}-0.{service['metadata']['name']}"
    assert int(port) in [p["port"] for p in service["spec"]["ports"]]
    assert int(port) in [p["containerPort"] for p in container["ports"]]


# What the grace period must fit: the largest preset's checkpoint (weights and LAMB's two slots,
# float32) written to gs:// at this rate, plus the step in flight (infra/README.md).
CHECKPOINT_WRITE_BYTES_PER_SECOND = 50e6
STEP_IN_FLIGHT_SECONDS = 30


def largest_checkpoint_bytes() -> int:
    from model.network.config import PRESETS, get_preset, parameter_counts

    return max(
        12 * parameter_counts(get_preset(name, vocab_size=30000))["pretraining"] for name in PRESETS
    )


@pytest.mark.parametrize(
    "name", ["pretrain-albert-base-8gpu-job.yaml", "pretrain-albert-large-jax-4host.yaml"]
)
def test_gke_jobs_save_on_preemption_and_rerun_the_same_command(name):
    """SIGTERM saves a checkpoint and exits 75 (albert.errors.EXIT_INTERRUPTED): the Job makes a new
    pod, not counted as a failure, which resumes; the grace period fits the largest save."""
    from albert.errors import EXIT_INTERRUPTED

    (job,) = [
        doc
        for doc in yaml.safe_load_all((harness.INFRA_DIR / "kubernetes" / name).read_text())
        if doc["kind"] == "Job"
    ]
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"  # podFailurePolicy needs it
    (container,) = pod["containers"]
    rules = job["spec"]["podFailurePolicy"]["rules"]
    ignored_codes = [
        code
        for rule in rules
        if rule["action"] == "Ignore" and "onExitCodes" in rule
        for code in rule["onExitCodes"]["values"]
        if rule["onExitCodes"]["operator"] == "In"
        and rule["onExitCodes"].get("containerName", container["name"]) == container["name"]
    ]
    assert ignored_codes == [EXIT_INTERRUPTED]
    assert {"type": "DisruptionTarget"} in [
        condition
        for rule in rules
        if rule["action"] == "Ignore"
        for condition in rule.get("onPodConditions", [])
    ]
    needed = largest_checkpoint_bytes() / CHECKPOINT_WRITE_BYTES_PER_SECOND + STEP_IN_FLIGHT_SECONDS
    assert pod["terminationGracePeriodSeconds"] >= needed
    assert parse_pretrain(
        container["command"]
        + [arg.replace("$(JOB_COMPLETION_INDEX)", "0") for arg in container["args"]]
    ).resume


@pytest.mark.parametrize("path", VERTEX_SPECS, ids=lambda p: p.name)
def test_vertex_jobs_restart_the_same_command_on_a_worker_restart(path):
    spec = yaml.safe_load(substitute(path.read_text(), PLACEHOLDERS))
    assert spec["scheduling"]["restartJobOnWorkerRestart"] is True


def test_tpu_vm_script_creates_a_spot_vm_when_asked():
    script = (harness.INFRA_DIR / "tpu" / "pretrain_tpu_vm.sh").read_text()
    create = re.search(r"gcloud compute tpus tpu-vm create .*?\n(.*)\n", script).group(0)
    assert "${SPOT:+--spot}" in create


def test_jax_training_dockerfile_installs_the_pinned_jax():
    dockerfile = (harness.INFRA_DIR / "training" / "Dockerfile.jax").read_text()
    constraints = (harness.REPO_ROOT / "constraints.txt").read_text()
    jax_pin = re.search(r"^jax==(\S+)$", constraints, re.MULTILINE).group(1)
    install = f'pip install --no-cache-dir -c constraints.txt ".[jax]" "jax[cuda12]=={jax_pin}"'
    assert install in dockerfile
    assert "KERAS_BACKEND=jax" in dockerfile


def test_training_dockerfile_installs_the_pinned_stack():
    dockerfile = (harness.INFRA_DIR / "training" / "Dockerfile").read_text()
    requires = re.search(
        r'requires-python = ">=3\.(\d+)', (harness.REPO_ROOT / "pyproject.toml").read_text()
    ).group(1)
    assert re.search(rf"^FROM python:3\.{requires}-slim$", dockerfile, re.MULTILINE)
    tf_pin = re.search(
        r"^tensorflow==(\S+)$", (harness.REPO_ROOT / "constraints.txt").read_text(), re.MULTILINE
    ).group(1)
    assert (
        f'pip install --no-cache-dir -c constraints.txt . "tensorflow[and-cuda]=={tf_pin}"'
        in dockerfile
    )


# --------------------------------------------------------------------------------------------
# Prefect work pools

POOLS = {
    "vertex-ai-gpu-pool.json": "vertex-ai",
    "kubernetes-gpu-pool.json": "kubernetes",
}
BUILTIN_VARIABLES = {"name", "command", "env", "labels"}  # Prefect fills these for every flow run


def load_pool(name: str) -> dict:
    return json.loads((harness.INFRA_DIR / "prefect" / name).read_text())


def defaults(template: dict) -> dict:
    return {
        k: v["default"] for k, v in template["variables"]["properties"].items() if "default" in v
    }


@pytest.mark.parametrize("name", sorted(POOLS))
def test_work_pool_template_is_a_valid_base_job_template(name):
    template = load_pool(name)
    assert set(template) == {"job_configuration", "variables"}
    variables = template["variables"]
    jsonschema.Draft7Validator.check_schema(variables)
    assert set(variables.get("required", [])) <= set(variables["properties"])
    jsonschema.validate(defaults(template), {k: v for k, v in variables.items() if k != "required"})
    placeholders = {p.name for p in find_placeholders(template["job_configuration"])}
    assert placeholders <= set(variables["properties"]) | BUILTIN_VARIABLES, placeholders - set(
        variables["properties"]
    )
    unused = set(variables["properties"]) - placeholders
    assert not unused, f"variables no job field uses: {unused}"


def test_vertex_pool_keeps_prefect_gcp_structure_and_asks_for_gpus():
    """Same job_configuration and variables as prefect-gcp 0.6.22's default (only defaults
    differ)."""
    ours = load_pool("vertex-ai-gpu-pool.json")
    upstream = json.loads(
        (
            harness.INFRA_DIR / "prefect" / "upstream" / "vertex-ai-prefect-gcp-0.6.22.json"
        ).read_text()
    )
    assert ours["job_configuration"] == upstream["job_configuration"]
    assert set(ours["variables"]["properties"]) == set(upstream["variables"]["properties"])
    rendered = apply_values(
        ours["job_configuration"], {**defaults(ours), "command": "python -m prefect.engine"}
    )
    (pool,) = rendered["job_spec"]["worker_pool_specs"]
    assert pool["machine_spec"] == {
        "machine_type": "a2-ultragpu-8g",
        "accelerator_type": "NVIDIA_A100_80GB",
        "accelerator_count": 8,
    }
    assert pool["container_spec"]["image_uri"].endswith("/albert-train:0.1.0")


def test_kubernetes_pool_renders_a_gpu_job():
    template = load_pool("kubernetes-gpu-pool.json")
    rendered = apply_values(
        template["job_configuration"],
        {**defaults(template), "command": "python -m prefect.engine", "name": "run"},
    )
    manifest = rendered["job_manifest"]
    (container,) = manifest["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert container["args"] == "python -m prefect.engine"
    assert manifest["spec"]["template"]["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-accelerator": "nvidia-a100-80gb"
    }


def test_readme_documents_each_work_pool_command():
    readme = (harness.INFRA_DIR / "README.md").read_text()
    for name, pool_type in POOLS.items():
        assert re.search(
            rf"prefect work-pool create \S+ --type {pool_type}\s+\\?\s*--base-job-template "
            rf"infra/prefect/{name}",
            readme,
        ), name


@pytest.mark.parametrize("script", sorted(harness.INFRA_DIR.glob("*/*.sh")), ids=lambda p: p.name)
def test_shell_scripts_are_valid_and_executable(script):
    import subprocess

    subprocess.run(["bash", "-n", str(script)], check=True)
    assert script.stat().st_mode & 0o111, f"{script} is not executable"
    assert "set -euo pipefail" in script.read_text()


def test_serving_image_and_upload_match_the_server():
    """infra/serving: the image installs the pinned TensorFlow and tensorflow-text and runs the
    server; the Vertex upload's routes are the server's (tests/test_predict.py runs it)."""
    serving = harness.INFRA_DIR / "serving"
    dockerfile = (serving / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -c constraints.txt tensorflow tensorflow-text" in dockerfile
    assert 'ENTRYPOINT ["python", "/serve/server.py"]' in dockerfile
    route = re.search(r'^ROUTE = "(.+)"$', (serving / "server.py").read_text(), re.MULTILINE)
    upload = (serving / "upload.sh").read_text()
    assert f"--container-predict-route={route.group(1)}:predict" in upload
    assert f"--container-health-route={route.group(1)}" in upload
