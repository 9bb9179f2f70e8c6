#!/bin/sh
# One-shot (temporalio/admin-tools, same version as the server): create the two databases and
# bring their schemas to this server version. Safe to re-run on every `docker compose up`:
# existing databases are kept and update-schema only applies missing versions.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
PORT="${DB_PORT:-5432}"
SCHEMA=/etc/temporal/schema/postgresql/v12

until nc -z "$POSTGRES_SEEDS" "$PORT"; do echo "waiting for $POSTGRES_SEEDS:$PORT"; sleep 1; done

for db in temporal temporal_visibility; do
    dir=temporal
    [ "$db" = temporal_visibility ] && dir=visibility
    tool="temporal-sql-tool --plugin postgres12 --ep $POSTGRES_SEEDS -u $POSTGRES_USER -p $PORT --db $db"
    $tool create || echo "database $db exists: kept"
    $tool setup-schema -v 0.0
    $tool update-schema -d "$SCHEMA/$dir/versioned"
done
echo "schema ready"
