#!/bin/sh
# Regenerates every shipped GPU tables file (hwprofiles/tables/<gpu>.yaml) with shardplan's own calibration path
# from the measured rows in hwprofiles/measured/ (NVIDIA AIConfigurator, README there):
#   calibrate import-aic hwprofiles/measured --gpu G --out RAW/G.jsonl      (CSV -> the JSON lines `fit` reads)
#   calibrate fit RAW/G.jsonl --gpu-tables G --out TABLES/G.yaml            (the fit -> the tables file)
# Usage: calibrate/make_tables.sh SHARDPLAN_BINARY [TABLES_DIR (hwprofiles/tables)] [RAW_DIR (a temp dir)]
# `make tables` runs it; tests/cli/tables_cli_test.sh runs it into a temp dir and compares with the shipped files.
# The serving model's tables (modeler/serving/*_rows.inc) come from hwprofiles/measured/serving/ through
# calibrate/serving_tables.py instead (`make serving-tables`; tests/cli/serving_tables_cli_test.sh compares).
set -eu
bin=$1
tables=${2:-hwprofiles/tables}
raw=${3:-$(mktemp -d)}
measured=${SHARDPLAN_MEASURED:-hwprofiles/measured}
mkdir -p "$tables" "$raw"
for gpu in a100-sxm4-80gb h100-sxm5-80gb h200-sxm-141gb b200 gb200 b300 gb300; do
  "$bin" calibrate import-aic "$measured" --gpu "$gpu" --out "$raw/$gpu.jsonl" --force
  "$bin" calibrate fit "$raw/$gpu.jsonl" --gpu-tables "$gpu" --out "$tables/$gpu.yaml" --force
done
