#!/usr/bin/env bash
# Pretrain on a Cloud TPU VM with TPUStrategy: create the VM, install the project, run the same
# CLI as everywhere (`python -m model.pretrain ... --tpu=local`), with data and run directory on gs://.
#
#   PROJECT=p ZONE=us-central1-a BUCKET=b PRESET=albert-base ACCELERATOR=v3-8 infra/tpu/pretrain_tpu_vm.sh
#   (v4: ZONE=us-central2-b ACCELERATOR=v4-8; a pod slice such as v3-32 runs the command on every host)
#   SPOT=1 creates a Spot TPU VM: on preemption the training saves a checkpoint (SIGTERM, exit 75);
#   run this script again (a new VM) and the same command resumes from it (infra/README.md).
#
# The TPU VM's service account needs read/write on gs://$BUCKET (tf.io.gfile reads gs:// directly).
set -euo pipefail
: "${PROJECT:?set PROJECT}" "${ZONE:?set ZONE}" "${BUCKET:?set BUCKET}"
TPU_NAME=${TPU_NAME:-albert-${PRESET:-albert-base}}
ACCELERATOR=${ACCELERATOR:-v3-8}
RUNTIME=${RUNTIME:-tpu-ubuntu2204-base}
PRESET=${PRESET:-albert-base}
REPO_URL=${REPO_URL:?set REPO_URL (git URL of this project)}
REPO_REF=${REPO_REF:-main}
STEPS=${STEPS:-125000}
BATCH=${BATCH:-4096}

gcloud compute tpus tpu-vm create "$TPU_NAME" --project="$PROJECT" --zone="$ZONE" \
  --accelerator-type="$ACCELERATOR" --version="$RUNTIME" ${SPOT:+--spot}

# TensorFlow for TPU replaces the CPU/GPU wheel; the rest of the stack is the pinned one.
setup="set -euo pipefail
sudo apt-get update -qq && sudo apt-get install -y -qq python3.11 python3.11-venv git
git clone --depth 1 --branch $REPO_REF $REPO_URL albert && cd albert
python3.11 -m venv .venv
.venv/bin/pip install -q -c constraints.txt .
.venv/bin/pip install -q tensorflow-tpu==2.21.0 -f https://storage.googleapis.com/libtpu-tf-releases/index.html"
gcloud compute tpus tpu-vm ssh "$TPU_NAME" --project="$PROJECT" --zone="$ZONE" --worker=all --command="$setup"

train="cd albert && nohup .venv/bin/python -m model.pretrain \
  --tpu=local \
  --data=gs://$BUCKET/albert/tfrecords \
  --output=gs://$BUCKET/albert/runs/$PRESET-tpu-$ACCELERATOR \
  --preset=$PRESET \
  --steps=$STEPS \
  --batch-size=$BATCH \
  --learning-rate=0.00176 \
  --precision=bfloat16 \
  --no-progress > pretrain.log 2>&1 &"
gcloud compute tpus tpu-vm ssh "$TPU_NAME" --project="$PROJECT" --zone="$ZONE" --worker=all --command="$train"
echo "training on $TPU_NAME; follow with: gcloud compute tpus tpu-vm ssh $TPU_NAME --zone=$ZONE --command='tail -f albert/pretrain.log'"
echo "delete when done:  gcloud compute tpus tpu-vm delete $TPU_NAME --zone=$ZONE"
