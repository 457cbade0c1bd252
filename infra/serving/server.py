"""A prediction server for a fine-tune's serving export (`OUTPUT/export/saved_model`): the image
of infra/serving/Dockerfile, for a Vertex AI model (infra/serving/upload.sh) or any container
platform. It needs TensorFlow and tensorflow-text only (the SavedModel tokenizes in its graph).

TF Serving's REST shapes: `POST /v1/models/albert:predict` with `{"instances": [{"text": "..."}]}`
(and `"text_b"` for a pair task) answers `{"predictions": [{"label": ..., "score": ..., ...}]}`;
`GET /v1/models/albert` answers 200 once the model is loaded. On Vertex AI the model directory,
port and routes come from its variables (AIP_STORAGE_URI, AIP_HTTP_PORT, AIP_PREDICT_ROUTE,
AIP_HEALTH_ROUTE); elsewhere MODEL_DIR (a local path or gs://) and PORT (default 8080).
"""

from __future__ import annotations

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece op the SavedModel calls)

ROUTE = "/v1/models/albert"


def plain(value):
    """A tensor's value as JSON: bytes as text, arrays as lists."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def predictions(serve, instances: list[dict]) -> list[dict]:
    """The served function's outputs, one dict per instance."""
    names = [arg.name for arg in serve.structured_input_signature[1].values()]
    inputs = {name: tf.constant([instance[name] for instance in instances]) for name in names}
    outputs = {name: value.numpy().tolist() for name, value in serve(**inputs).items()}
    return [
        {name: plain(values[index]) for name, values in outputs.items()}
        for index in range(len(instances))
    ]


def handler(serve, predict_route: str, health_route: str):
    """The request handler: predictions on `predict_route`, the model's status on
    `health_route`; a bad request is a 400 naming the error."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == health_route:
                self._answer(200, {"model_version_status": [{"state": "AVAILABLE"}]})
            else:
                self._answer(404, {"error": f"no route {self.path}"})

        def do_POST(self):
            if self.path != predict_route:
                self._answer(404, {"error": f"no route {self.path}"})
                return
            try:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._answer(200, {"predictions": predictions(serve, request["instances"])})
            except (KeyError, TypeError, ValueError, tf.errors.InvalidArgumentError) as error:
                self._answer(400, {"error": f"{type(error).__name__}: {error}"})

    return Handler


def main() -> None:
    model_dir = os.environ.get("AIP_STORAGE_URI") or os.environ["MODEL_DIR"]
    serve = tf.saved_model.load(model_dir).signatures["serving_default"]
    port = int(os.environ.get("AIP_HTTP_PORT") or os.environ.get("PORT", "8080"))
    routes = (
        os.environ.get("AIP_PREDICT_ROUTE", f"{ROUTE}:predict"),
        os.environ.get("AIP_HEALTH_ROUTE", ROUTE),
    )
    ThreadingHTTPServer(("0.0.0.0", port), handler(serve, *routes)).serve_forever()


if __name__ == "__main__":
    main()
