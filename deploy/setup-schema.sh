#!/bin/sh
# Create Temporal's two PostgreSQL databases and bring their schemas up to the
# version this admin-tools image ships. Safe to run again: create is skipped
# when the database exists and update-schema only applies what is missing.
set -eu
SCHEMA=/etc/temporal/schema/postgresql/v12
tool() { temporal-sql-tool --plugin "$SQL_PLUGIN" --ep "$SQL_HOST" -p "$SQL_PORT" -u "$SQL_USER" --pw "$SQL_PASSWORD" "$@"; }

for db in temporal temporal_visibility; do
  tool --db "$db" create-database || echo "database $db exists"
done
tool --db temporal setup-schema -v 0.0 || true
tool --db temporal update-schema -d "$SCHEMA/temporal/versioned"
tool --db temporal_visibility setup-schema -v 0.0 || true
tool --db temporal_visibility update-schema -d "$SCHEMA/visibility/versioned"
echo "schemas ready"
