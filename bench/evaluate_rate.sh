#!/usr/bin/env bash
# Evaluations per second of `kerncap evaluate` on 1, 2, 4 ... and all GPUs of this host: the
# vectorAdd capture with EVAL_CANDIDATES (default 1000) candidates, timed (--time), no hanging
# candidates (they cost the time limit, not throughput). Runs tests/gpu/evaluate_e2e.sh, which
# also checks exactly-once reporting and identical verdicts, and prints its table (evaluations/s,
# per GPU, scaling over the 1-GPU run). Exit 77 without a GPU.
#
#   bench/evaluate_rate.sh BUILD_DIR
set -u -o pipefail
BUILD=${1:?usage: bench/evaluate_rate.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
EVAL_CANDIDATES=${EVAL_CANDIDATES:-1000} EVAL_HANG=${EVAL_HANG:-0} exec "$HERE/../tests/gpu/evaluate_e2e.sh" "$BUILD"
