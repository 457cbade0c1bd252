#!/usr/bin/env bash
# Run one Beam stage on Dataflow from this checkout, with the worker image built from
# infra/dataflow/Dockerfile (the recommended route: workers start with everything installed).
#
#   infra/dataflow/launch.sh segment --input=gs://B/raw/enwiki-*.xml.bz2 --input=gs://B/raw/books/*.txt --output=gs://B/corpus
#   infra/dataflow/launch.sh vocab --input=gs://B/corpus --output=gs://B/vocab
#   infra/dataflow/launch.sh tfrecords --input=gs://B/corpus --spm-model=gs://B/vocab/spiece.model --output=gs://B/tfrecords
#   infra/dataflow/launch.sh predict --model=gs://B/runs/sst2 --input=gs://B/backlog/*.jsonl --output=gs://B/predictions
#
# Required environment: PROJECT, REGION, BUCKET. Optional: IMAGE (default below), MACHINE_TYPE,
# MAX_WORKERS, ROUTE=container|setup_file. Any further flag goes to the stage (its --field-name
# flags) or to Beam (Dataflow options such as --dataflow_service_options, --disk_size_gb).
set -euo pipefail
stage=${1:?usage: launch.sh segment|vocab|tfrecords|predict [stage and Beam flags]}
shift
: "${PROJECT:?set PROJECT}" "${REGION:?set REGION}" "${BUCKET:?set BUCKET}"
IMAGE=${IMAGE:-$REGION-docker.pkg.dev/$PROJECT/albert/albert-dataflow:0.1.0}
MACHINE_TYPE=${MACHINE_TYPE:-n1-standard-4}
MAX_WORKERS=${MAX_WORKERS:-100}
ROUTE=${ROUTE:-container}
cd "$(dirname "$0")/../.."

common=(
  --runner=DataflowRunner
  --project="$PROJECT"
  --region="$REGION"
  --temp_location="gs://$BUCKET/dataflow/tmp"
  --staging_location="gs://$BUCKET/dataflow/staging"
  --job_name="albert-$stage-$(date -u +%Y%m%d-%H%M%S)"
  --machine_type="$MACHINE_TYPE"
  --max_num_workers="$MAX_WORKERS"
  --autoscaling_algorithm=THROUGHPUT_BASED
  --experiments=use_runner_v2
  --no_save_main_session
)
case "$ROUTE" in
  container)   # everything preinstalled in the worker image
    route=(--sdk_container_image="$IMAGE" --sdk_location=container) ;;
  setup_file)  # lighter: stock Beam image, our package built here (python -m build) and pip-installed on each worker
    route=(--setup_file="$PWD/pyproject.toml") ;;
  *) echo "ROUTE must be container or setup_file" >&2; exit 2 ;;
esac
case "$stage" in
  predict) module=flows.predict ;;  # the pipeline and the fine-tuned model it runs (docs/predict.md)
  *) module="pipelines.$stage" ;;
esac
exec python -m "$module" "${common[@]}" "${route[@]}" "$@"
