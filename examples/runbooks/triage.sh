#!/bin/sh
# A runbook for a critical alert (examples/serve.yaml): the alert arrives on stdin as JSON, and
# NIGHTWATCH_ALERT_ID, NIGHTWATCH_ALERT_TITLE, NIGHTWATCH_SESSION and NIGHTWATCH_LABEL_* are set.
# It looks and reports; every command it runs through `nightwatch exec` is decided and recorded.
set -eu
echo "triage of ${NIGHTWATCH_ALERT_ID:-an alert}: ${NIGHTWATCH_ALERT_TITLE:-}"
nightwatch exec -- uptime
nightwatch exec -- df -h
