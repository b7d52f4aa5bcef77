"""The validator and executor checked against real bash: generated commands
and scripts run both ways, output, status and files compared."""
