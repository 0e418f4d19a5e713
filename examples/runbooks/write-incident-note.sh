#!/bin/sh
# When a critical alert resolves (examples/serve.yaml): what nightwatch recorded about it,
# as a note for the morning.
set -eu
echo "incident ${NIGHTWATCH_ALERT_ID:-}: resolved"
nightwatch log --alert "${NIGHTWATCH_ALERT_ID:-none}"
