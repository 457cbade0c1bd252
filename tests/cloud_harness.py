"""Offline cloud for the tests: a loopback-only network guard, a stand-in GCE metadata server, a
local GCS emulator (with the objects.move route it lacks), Dataflow dry-run options, and parsing of
the job specs' `python -m MODULE ...` commands with the stage's real flags.

Used by `tests/test_infra_*.py` and the tests that run a stage on `gs://`; nothing here runs in
production (the flex-template launcher's code is `pipelines.common.flex_template`).
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import ipaddress
import json
import os
import shlex
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ports import free_port

from albert.cli import WRAPPED_STAGES
from albert.config import add_config_arguments, config_from_namespace
from albert.stages import STAGES, config_class

REPO_ROOT = Path(__file__).resolve().parents[1]
INFRA_DIR = REPO_ROOT / "infra"


# --------------------------------------------------------------------------------------------
# Network and storage


def _is_loopback(address: Any) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX sockets
        return True
    host = address[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def loopback_only() -> Iterator[list]:
    """Refuse every connection and name lookup that is not loopback; yields what was refused.

    Proves a check stays offline: Google client libraries that would reach a cloud endpoint (or the
    GCE metadata server) fail fast instead of hanging.
    """
    refused: list = []
    original_connect, original_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def connect(sock, address):
        if not _is_loopback(address):
            refused.append(address)
            raise OSError(f"offline check: refused connection to {address!r}")
        return original_connect(sock, address)

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and not _is_loopback(
            (host if isinstance(host, str) else host.decode(), 0)
        ):
            refused.append(host)
            raise socket.gaierror(
                socket.EAI_NONAME, f"offline check: refused name lookup of {host!r}"
            )
        return original_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect, socket.getaddrinfo = connect, getaddrinfo
    try:
        yield refused
    finally:
        socket.socket.connect, socket.getaddrinfo = original_connect, original_getaddrinfo


class _MetadataHandler(http.server.BaseHTTPRequestHandler):
    """The GCE metadata server's credential endpoints, offline: a dummy token for a dummy
    account."""

    def do_GET(self):
        path = self.path
        if "/token" in path:
            body = json.dumps(
                {"access_token": "offline-test-token", "expires_in": 3600, "token_type": "Bearer"}
            )
        elif "recursive=true" in path:
            body = json.dumps(
                {
                    "email": "offline-test-account",
                    "aliases": ["default"],
                    "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
                }
            )
        elif path.endswith("/project/project-id"):
            body = "test-project"
        elif path.endswith("/universe/universe-domain"):
            body = "googleapis.com"
        else:
            body = ""
        self.send_response(200)
        self.send_header("Metadata-Flavor", "Google")
        self.send_header(
            "Content-Type", "application/json" if body.startswith("{") else "text/plain"
        )
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


_METADATA_SERVER: http.server.ThreadingHTTPServer | None = None


@contextlib.contextmanager
def offline_metadata_server() -> Iterator[str]:
    """Stand in for the GCE metadata server on 127.0.0.1 so google.auth finds credentials at once.

    Without credentials Beam retries google.auth.default() with back-off (~20 s) before going on
    anonymously; with this every credential lookup and token refresh stays on 127.0.0.1. One server
    serves the whole process (Beam caches the credentials it found), in a daemon thread.
    """
    global _METADATA_SERVER
    if _METADATA_SERVER is None:
        _METADATA_SERVER = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _MetadataHandler)
        threading.Thread(target=_METADATA_SERVER.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{_METADATA_SERVER.server_address[1]}"
    names = (
        "GCE_METADATA_HOST",
        "GCE_METADATA_IP",
        "NO_GCE_CHECK",
        "GOOGLE_APPLICATION_CREDENTIALS",
    )
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update({"GCE_METADATA_HOST": address, "GCE_METADATA_IP": address})
    os.environ.pop("NO_GCE_CHECK", None)
    os.environ.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    # google.auth reads GCE_METADATA_HOST once, when it is first imported: a test that imported it
    # earlier in this process left it on metadata.google.internal
    from google.auth.compute_engine import _metadata

    host = _metadata._GCE_METADATA_HOST
    _metadata._GCE_METADATA_HOST = address
    try:
        yield address
    finally:
        _metadata._GCE_METADATA_HOST = host
        _restore(saved)


def _restore(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# (The account name is not an e-mail address: google.auth then skips its regional access boundary
# lookup, which would go to iamcredentials.googleapis.com.)


# Environment that points every Google client at the emulator: Beam's GCS filesystem and
# google-cloud-storage read STORAGE_EMULATOR_HOST, gcsfs reads it too (with HNS probing off).
def emulator_environment(host: str) -> dict[str, str]:
    return {
        "STORAGE_EMULATOR_HOST": host,
        "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
        "GOOGLE_CLOUD_PROJECT": "test-project",
    }


def _move_object(request, response, storage) -> None:
    """GCS objects.move (`POST .../o/SRC/moveTo/o/DEST`), which gcsfs's mv uses and the emulator
    lacks.

    Without it the emulator answers 501, which gcsfs retries with back-off (~30 s) before copying.
    """
    from gcp_storage_emulator.exceptions import NotFound
    from gcp_storage_emulator.handlers import objects

    params = request.params
    params["dest_bucket_name"] = params["bucket_name"]
    objects.rewrite(request, response, storage)
    try:
        resource = storage.get_file_obj(params["bucket_name"], params["dest_object_id"])
    except NotFound:
        return  # rewrite already answered 404
    storage.delete_file(params["bucket_name"], params["object_id"])
    response.json(resource)


def _move_routes() -> tuple:
    from gcp_storage_emulator import settings

    return tuple(
        (
            rf"^{prefix}/b/(?P<bucket_name>[-.\w]+)/o/(?P<object_id>.*[^/]+)/moveTo/o/(?P<dest_object_id>.*[^/]+)$",
            {"POST": _move_object},
        )
        for prefix in (settings.API_ENDPOINT, "")
    )


@contextlib.contextmanager
def gcs_emulator(bucket: str = "bucket") -> Iterator[str]:
    """Run `gcp-storage-emulator` in memory on 127.0.0.1 with `bucket`; yields its URL.

    Adds the objects.move route the emulator lacks. Sets the emulator environment for this process
    for the duration (subprocesses inherit it).
    """
    from gcp_storage_emulator import server as emulator
    from gcp_storage_emulator.server import create_server

    if not any("moveTo" in regex for regex, _ in emulator.HANDLERS):
        emulator.HANDLERS = _move_routes() + tuple(emulator.HANDLERS)
    port = free_port()
    host = f"http://127.0.0.1:{port}"
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket=bucket)
    server.start()
    saved = {name: os.environ.get(name) for name in emulator_environment(host)}
    os.environ.update(emulator_environment(host))
    try:
        yield host
    finally:
        _restore(saved)
        server.stop()


def gcs_filesystem():
    """A fresh gcsfs filesystem talking to the emulator (anonymous, no cached instance)."""
    import gcsfs

    return gcsfs.GCSFileSystem(
        token="anon", endpoint_url=os.environ["STORAGE_EMULATOR_HOST"], skip_instance_cache=True
    )


# --------------------------------------------------------------------------------------------
# Dataflow


def dataflow_dry_run_args(bucket: str = "bucket", *extra: str) -> list[str]:
    """The DataflowRunner flags of an offline dry run: translate and validate, never submit."""
    return [
        "--runner=DataflowRunner",
        "--dry_run=True",
        "--project=test-project",
        "--region=us-central1",
        f"--temp_location=gs://{bucket}/tmp",
        f"--staging_location=gs://{bucket}/staging",
        "--sdk_location=container",
        # Beam 2.77 defaults it on with cloudpickle; ours must not need it
        "--no_save_main_session",
        *extra,
    ]


def pipeline_dofns(pipeline) -> dict[str, Any]:
    """Every user function of a built pipeline (DoFns, CombineFns, Map/FlatMap callables) by
    label."""
    from apache_beam.pipeline import PipelineVisitor
    from apache_beam.transforms.core import CombinePerKey, ParDo

    found: dict[str, Any] = {}

    class Visitor(PipelineVisitor):
        def visit_transform(self, node):
            transform = node.transform
            if isinstance(transform, (ParDo, CombinePerKey)):
                found[node.full_label] = transform.fn

        def enter_composite_transform(self, node):
            self.visit_transform(node)

    pipeline.visit(Visitor())
    return found


# --------------------------------------------------------------------------------------------
# Job specs


def parse_stage_command(module_name: str, args: Sequence[str]):
    """Parse `args` with the real flags of the stage `module_name` runs (albert.stages) into its
    validated config (what `main` would run).

    Returns (config, unknown_args); Beam stages pass unknown args to Beam, the others reject them.
    """
    stage = next(
        name
        for name, entry in STAGES.items()
        if WRAPPED_STAGES.get(name, entry.module).removesuffix(".stage") == module_name
    )
    cls = config_class(stage)
    parser = argparse.ArgumentParser(prog=module_name, exit_on_error=False)
    parser.add_argument("--verbose", action="store_true")
    add_config_arguments(parser, cls)
    namespace, unknown = parser.parse_known_args(list(args))
    return config_from_namespace(cls, namespace), unknown


def module_command(command: Sequence[str]) -> tuple[str, list[str]]:
    """Split `python -m MODULE args...` (or `python3 -m`) into the module and its args."""
    words = list(command)
    if len(words) < 3 or not Path(words[0]).name.startswith("python") or words[1] != "-m":
        raise ValueError(f"not a `python -m MODULE` command: {shlex.join(words)}")
    return words[2], words[3:]
