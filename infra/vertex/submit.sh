#!/usr/bin/env bash
# Submit a Vertex AI custom job spec from infra/vertex/ (fills ${IMAGE} and ${BUCKET}).
#   PROJECT=p REGION=us-central1 BUCKET=b infra/vertex/submit.sh infra/vertex/pretrain-albert-base-a100x8.yaml
set -euo pipefail
spec=${1:?usage: submit.sh SPEC.yaml}
: "${PROJECT:?set PROJECT}" "${REGION:?set REGION}" "${BUCKET:?set BUCKET}"
export BUCKET IMAGE=${IMAGE:-$REGION-docker.pkg.dev/$PROJECT/albert/albert-train:0.1.0}
rendered=$(mktemp --suffix=.yaml)
trap 'rm -f "$rendered"' EXIT
envsubst '${IMAGE} ${BUCKET}' < "$spec" > "$rendered"
gcloud ai custom-jobs create --project="$PROJECT" --region="$REGION" \
  --display-name="albert-$(basename "$spec" .yaml)-$(date -u +%Y%m%d-%H%M%S)" --config="$rendered"
