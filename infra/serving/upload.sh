#!/usr/bin/env bash
# Upload a fine-tune's serving export as a Vertex AI model served by infra/serving's image, then
# deploy it to an endpoint (a CPU machine: the model tokenizes and predicts in its graph).
#   PROJECT=p REGION=us-central1 infra/serving/upload.sh gs://b/runs/sst2/export/saved_model sst2
set -euo pipefail
artifact=${1:?usage: upload.sh gs://.../export/saved_model NAME}
name=${2:?usage: upload.sh gs://.../export/saved_model NAME}
: "${PROJECT:?set PROJECT}" "${REGION:?set REGION}"
image=${SERVE_IMAGE:-$REGION-docker.pkg.dev/$PROJECT/albert/albert-serve:0.1.0}
gcloud ai models upload --project="$PROJECT" --region="$REGION" --display-name="albert-$name" \
  --artifact-uri="$artifact" --container-image-uri="$image" --container-ports=8080 \
  --container-predict-route=/v1/models/albert:predict --container-health-route=/v1/models/albert
model=$(gcloud ai models list --project="$PROJECT" --region="$REGION" \
  --filter="displayName=albert-$name" --sort-by=~createTime --limit=1 --format="value(name)")
endpoint=$(gcloud ai endpoints create --project="$PROJECT" --region="$REGION" \
  --display-name="albert-$name" --format="value(name)")
gcloud ai endpoints deploy-model "$endpoint" --project="$PROJECT" --region="$REGION" \
  --model="$model" --display-name="albert-$name" --machine-type="${MACHINE_TYPE:-n1-standard-4}"
