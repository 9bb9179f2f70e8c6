#!/bin/sh
# One-shot (temporalio/admin-tools) once the server is healthy: the `default` namespace (the
# plain server image, unlike the old auto-setup image, creates none) and the AwaitingHuman
# search attribute the workflows set while a question waits for a person. Idempotent.
set -eu
ADDRESS="${TEMPORAL_ADDRESS:?}"
NAMESPACE="${DEFAULT_NAMESPACE:-default}"

for i in $(seq 1 60); do
    temporal operator cluster health --address "$ADDRESS" && break
    echo "waiting for $ADDRESS ($i)"; sleep 2
done
temporal operator namespace describe -n "$NAMESPACE" --address "$ADDRESS" >/dev/null 2>&1 \
    || temporal operator namespace create -n "$NAMESPACE" --retention 7d --address "$ADDRESS"
for i in $(seq 1 60); do  # a new namespace takes a moment to reach every service
    temporal operator search-attribute list --namespace "$NAMESPACE" --address "$ADDRESS" \
        | grep -q AwaitingHuman && exit 0
    temporal operator search-attribute create --name AwaitingHuman --type Bool \
        --namespace "$NAMESPACE" --address "$ADDRESS" || true
    sleep 1
done
echo "could not register AwaitingHuman on $ADDRESS" >&2
exit 1
