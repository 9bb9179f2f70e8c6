#!/bin/sh
# One-shot (temporalio/admin-tools) once the server is healthy: the `default` namespace (the
# plain server image, unlike the old auto-setup image, creates none) and the search attributes
# the workflows set: AwaitingHuman while a question waits for a person, Team and Task (its
# first words) to tell conversations apart in the Web UI. Idempotent.
set -eu
ADDRESS="${TEMPORAL_ADDRESS:?}"
NAMESPACE="${DEFAULT_NAMESPACE:-default}"

for i in $(seq 1 60); do
    temporal operator cluster health --address "$ADDRESS" && break
    echo "waiting for $ADDRESS ($i)"; sleep 2
done
temporal operator namespace describe -n "$NAMESPACE" --address "$ADDRESS" >/dev/null 2>&1 \
    || temporal operator namespace create -n "$NAMESPACE" --retention 7d --address "$ADDRESS"
for spec in AwaitingHuman:Bool Team:Keyword Task:Keyword; do
    name="${spec%%:*}"; type="${spec#*:}"
    ok=""
    for i in $(seq 1 60); do  # a new namespace takes a moment to reach every service
        if temporal operator search-attribute list --namespace "$NAMESPACE" --address "$ADDRESS" \
                | grep -qw "$name"; then ok=1; break; fi
        temporal operator search-attribute create --name "$name" --type "$type" \
            --namespace "$NAMESPACE" --address "$ADDRESS" || true
        sleep 1
    done
    [ -n "$ok" ] || { echo "could not register $name on $ADDRESS" >&2; exit 1; }
done
