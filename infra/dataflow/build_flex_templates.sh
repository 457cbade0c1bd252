#!/usr/bin/env bash
# Build the worker image and one flex template per stage (same image, ALBERT_STAGE picks the stage).
#   PROJECT=p REGION=us-central1 BUCKET=b infra/dataflow/build_flex_templates.sh
# Then, for example:
#   gcloud dataflow flex-template run albert-segment-$(date +%s) --region=$REGION \
#     --template-file-gcs-location=gs://$BUCKET/templates/segment.json \
#     --parameters=input=gs://$BUCKET/raw/enwiki-latest-pages-articles.xml.bz2,output=gs://$BUCKET/corpus \
#     --parameters=sdk_container_image=$IMAGE,sdk_location=container --max-workers=100
# (A list parameter such as input takes items separated by commas: escape with gcloud's ^;^ syntax:
#  --parameters=^;^input=gs://B/a/*.bz2,gs://B/b/*.txt;output=gs://B/corpus)
set -euo pipefail
: "${PROJECT:?set PROJECT}" "${REGION:?set REGION}" "${BUCKET:?set BUCKET}"
IMAGE=${IMAGE:-$REGION-docker.pkg.dev/$PROJECT/albert/albert-dataflow:0.1.0}
cd "$(dirname "$0")/../.."
gcloud builds submit --project="$PROJECT" --region="$REGION" \
  --config=infra/dataflow/cloudbuild.yaml --substitutions="_IMAGE=$IMAGE" .
for stage in segment vocab tfrecords predict; do
  gcloud dataflow flex-template build "gs://$BUCKET/templates/$stage.json" \
    --project="$PROJECT" \
    --image="$IMAGE" \
    --sdk-language=PYTHON \
    --metadata-file="infra/dataflow/$stage-metadata.json" \
    --env="ALBERT_STAGE=$stage"
done
