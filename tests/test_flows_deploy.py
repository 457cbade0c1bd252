"""A real Prefect server (this session's `prefect server start`, tests/prefect_session.py):
prefect.yaml's deployments applied as `albert deploy` applies them (flows.deploy), every one listed
with a parameter form a person can fill in (the server's `parameter_openapi_schema`: a description
and a default or a value for every parameter and config field), and a process worker picks up a
triggered run of the nightly deployment and completes a night of a model line (made on that first
night from the session's line base, tests/line_inputs.py, with domain-classifier selection), whose
report is the flow run's markdown artifact. One triggered run stands for the four: the other flows
run end to end in tests/test_flows_pipeline.py, test_flows_line.py and test_flows_ablation.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser import image_widths
from conftest import prefect_server, session_api_url
from line_inputs import base  # noqa: F401  (a fixture: the session's line base)
from test_flows_pipeline import write_corpus

REPO = Path(__file__).resolve().parents[1]
DEPLOYMENTS = {  # flow -> its deployment in prefect.yaml
    "albert-pretrain-pipeline": "pretrain-run",
    "albert-domain-adaptive": "domain-adaptive",
    "albert-ablation": "ablation-grid",
    "albert-model-line": "model-line-nightly",
    "albert-predict": "predict",
    "albert-finetune": "finetune",
}
PREFECT = str(Path(sys.executable).with_name("prefect"))


def server(api: str, path: str, body: dict | None = None):
    """The server's JSON answer to GET `path` (POST `body`, if given)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        api + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


@pytest.mark.slow
def test_deployment_served_by_process_worker(tmp_path: Path, base: Path) -> None:  # noqa: F811
    api = session_api_url()
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        "PREFECT_API_URL": api,
        "PYTHONPATH": str(REPO),
    }
    processes: list[subprocess.Popen] = []
    try:
        from flows.deploy import apply, load_deployments, parameter_form_faults

        specs = load_deployments(REPO / "prefect.yaml")
        with prefect_server():  # `albert deploy`'s work, in this process (its flags:
            # tests/test_entry_point_errors.py); the worker below is a real process
            ids = {spec["name"]: apply(spec, REPO) for spec in specs}
        assert set(ids) == set(DEPLOYMENTS.values())

        from prefect.client.orchestration import get_client

        with prefect_server(), get_client(sync_client=True) as client:
            listed = server(api, "/deployments/filter", {"limit": 50})  # the UI's list
            assert {d["name"]: d["id"] for d in listed if d["id"] in ids.values()} == ids
            for flow_name, name in DEPLOYMENTS.items():
                assert str(client.read_deployment_by_name(f"{flow_name}/{name}").id) == ids[name]
                served = server(api, f"/deployments/{ids[name]}")  # the form the UI draws
                schema = served["parameter_openapi_schema"]
                assert parameter_form_faults(schema, served["parameters"]) == [], name
                assert set(schema["required"]) <= set(served["parameters"]), name  # no `digests`
            deployment = client.read_deployment_by_name("albert-model-line/model-line-nightly")
            assert deployment.schedules and deployment.schedules[0].schedule.cron == "0 2 * * *"
            assert deployment.parameters["config"]["line"] == "runs/domain-line"
            select = {
                "target_samples": str(write_corpus(tmp_path / "target.txt", documents=6)),
                "source_samples": str(base / "general.txt"),
                "top_k": 25,
                "epochs": 1,
            }
            line = tmp_path / "line"
            parameters = {
                "config": {
                    "line": str(line),
                    "base": str(base),
                    # new documents: the base's own would be near-duplicates of the line's
                    "input": [str(write_corpus(tmp_path / "d.txt", 40, seed=1))],
                    "num_shards": 2,
                    "steps": 1,
                    "batch_size": 8,
                    "eval_batches": 1,
                    "min_improvement": -10,
                    "heldout_fraction": 0.3,  # of 25 selected documents: some held out
                    "segment": {"format": "text", "num_shards": 2, "quality": False},
                    "pretrain": {"jit_compile": False, "progress": False},
                    "select": select,
                }
            }
            flow_run = client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
            processes.append(
                subprocess.Popen(
                    [PREFECT, "worker", "start", "--pool", "albert-process"],
                    env=env,
                    cwd=REPO,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                state = client.read_flow_run(flow_run.id).state
                if state is not None and state.is_final():
                    break
                time.sleep(1)
            assert state is not None and state.is_completed(), state
            assert state.message.startswith(f"{line}: v0002 promoted, current is now v0002")
            artifacts = server(  # the run page's Artifacts tab
                api, "/artifacts/filter", {"flow_runs": {"id": {"any_": [str(flow_run.id)]}}}
            )
            (page,) = [a for a in artifacts if a["key"] == "albert-model-line-report"]
            assert page["type"] == "markdown" and "| **v0002** | v0001 | promoted" in page["data"]
            # its plot travels with it: a link relative to the line would lead nowhere in the UI
            assert "](data:image/png;base64," in page["data"] and "](plots/" not in page["data"]
        assert (line / "current").read_text() == "v0002\n"
        version = json.loads((line / "v0002" / "version.json").read_text())
        assert version["parent"] == "v0001" and version["status"] == "promoted"
        assert version["corpus"]["files"][0]["path"] == str(tmp_path / "d.txt")
        for held_out in ("domain", "general"):
            assert version["scores"][held_out]["masked_lm_loss"] > 0
        report = (line / "report.md").read_text()
        assert "| **v0002** | v0001 | promoted (current) |" in report
        if shutil.which("chromium"):  # test_flows_report.py skips with the reason elsewhere
            assert all(width > 0 for _, width in image_widths(line / "report.html"))
        (night,) = (line / "nights").glob("v0001-*")
        selection = json.loads((night / "select" / "selection.json").read_text())
        assert selection["selected"] == 25 and selection["documents"] > 25
        assert (
            json.loads((night / "tfrecords" / "metadata.json").read_text())["counts"]["documents"]
            == 25
        )
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()  # reaped here, not by a later test's first Popen


def test_a_form_without_descriptions_or_values_is_refused() -> None:
    from prefect.utilities.callables import parameter_schema

    from flows.deploy import parameter_form_faults
    from flows.line.config import LineConfig

    def night(config: LineConfig, digests: dict | None = None) -> None:
        """No Args section: Prefect's form has no description for either parameter."""

    night.__annotations__.update(config=LineConfig, digests=dict | None)  # not strings
    schema = parameter_schema(night).model_dump_for_openapi()
    faults = parameter_form_faults(schema, {"config": {"input": ["a.txt"]}})
    assert faults == [
        "config: no description",
        "config.line: neither a default nor a value",
        "digests: no description",
    ]


def _deploy(tmp_path: Path, text: str, api: str | None) -> tuple[int, str]:
    """`albert deploy --file` a prefect.yaml of `text`, with PREFECT_API_URL `api` (None: unset)."""
    import io
    from contextlib import redirect_stderr

    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.deploy import main

    (tmp_path / "prefect.yaml").write_text(text)
    settings = (
        {"updates": {PREFECT_API_URL: api}} if api else {"restore_defaults": {PREFECT_API_URL}}
    )
    err = io.StringIO()
    with temporary_settings(**settings), redirect_stderr(err):
        code = main(["--file", str(tmp_path / "prefect.yaml"), "--source", str(REPO)])
    return code, err.getvalue()


GOOD = """deployments:
  - name: nightly
    description: d
    entrypoint: flows/line/flow.py:model_line_night
    work_pool: {name: albert-process}
    schedules: [{cron: "0 2 * * *"}]
    parameters: {config: {line: runs/l, base: runs/b, input: [x.txt]}}
"""


@pytest.mark.parametrize(
    "text, message",
    [
        ("deployments: 5\n", "deployments: a list of deployments, not int"),
        (GOOD.replace("model_line_night", "nightly_run"), "nightly: entrypoint flows/line/"),
        (GOOD.replace("0 2 * * *", "99 * * *"), "nightly: schedules[0]: Invalid cron string"),
        (GOOD.replace("{name: albert-process}", "{name: [a]}"), "nightly: work_pool.name"),
        (GOOD + GOOD.split("\n", 1)[1].replace("0 2", "x 2"), "nightly: schedules[0]"),
    ],
)
def test_a_bad_prefect_yaml_is_one_line_and_exit_2_before_any_deployment_is_applied(
    tmp_path: Path, text: str, message: str
) -> None:
    """The whole file is checked before the server is asked (a dead PREFECT_API_URL here: a
    deployment applied before the refusal would be an internal error)."""
    code, err = _deploy(tmp_path, text, "http://127.0.0.1:9/api")
    (line,) = err.strip().splitlines()
    assert code == 2 and message in line, line


def test_a_server_that_does_not_answer_or_none_set_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, err = _deploy(tmp_path, GOOD, "http://127.0.0.1:9/api")
    (line,) = err.strip().splitlines()
    assert code == 2 and "PREFECT_API_URL=http://127.0.0.1:9/api: no Prefect server answers" in line
    code, err = _deploy(tmp_path, GOOD, None)
    (line,) = err.strip().splitlines()
    assert code == 2 and "PREFECT_API_URL is not set" in line
