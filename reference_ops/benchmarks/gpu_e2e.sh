#!/usr/bin/env bash
# On a GPU machine: build reference_ops in place, then run, part by part,
#   tests    the multi-GPU, DDP, end-to-end and host-cost tests (tests/test_multi_gpu.py, test_ddp.py,
#            test_e2e_smoke.py, test_host_cost_smoke.py);
#   host     benchmarks/host_cost.py (per-call host cost, ours vs torch);
#   e2e      benchmarks/e2e.py (training and inference of the LLaMA- and GPT-style models, ours vs torch);
#   ddp      benchmarks/ddp_train.py --compare (1 process vs 2 DDP processes; needs two GPUs);
#   project  the default generated project rendered, built and tested (its multi-GPU and DDP tests
#            included) by scripts/bake.py.
# Short tables go to stdout; at most 8 files to $OUT (default reference_ops/gpu-logs): build.log, tests.log,
# host.log, e2e.log, e2e.json, ddp.log, project.log; the DDP result files and the rendered project go
# to $WORK (default: a new folder under /tmp).
#   bash reference_ops/benchmarks/gpu_e2e.sh                  # every part
#   bash reference_ops/benchmarks/gpu_e2e.sh host e2e         # some parts (the build is reused)
#   E2E_ARGS="--archs llama --sizes small" bash reference_ops/benchmarks/gpu_e2e.sh e2e
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ops=$(dirname "$here")
root=$(dirname "$ops")
out=${OUT:-$ops/gpu-logs}
mkdir -p "$out"
work=${WORK:-$(mktemp -d /tmp/gpu_e2e.XXXXXX)}
mkdir -p "$work"
parts=${*:-tests host e2e ddp project}
py=${PYTHON:-python3}
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
# Some GPU images default to a compiler that links libstdc++ statically (docs/template.md).
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++; fi
export PYTHONPATH="$ops${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=index,name,driver_version --format=csv
gpus=$("$py" -c "import torch; print(torch.cuda.device_count())")
status=0

note() { # name exit-status
  echo "-- $1: exit $2 (log: $out/$1.log)"
  status=$((status | $2))
}

cd "$ops" || exit 1
if ! ls reference_ops/_C*.so >/dev/null 2>&1 || [ -n "${REBUILD:-}" ]; then
  start=$(date +%s)
  if ! "$py" setup.py build_ext --inplace >"$out/build.log" 2>&1; then
    tail -40 "$out/build.log"
    exit 1
  fi
  echo "build: $(($(date +%s) - start)) s"
fi

for part in $parts; do
  echo
  echo "== $part"
  case $part in
    tests)
      "$py" -m pytest -q -rs -p no:cacheprovider tests/test_multi_gpu.py tests/test_ddp.py tests/test_e2e_smoke.py \
        tests/test_host_cost_smoke.py >"$out/tests.log" 2>&1
      rc=$?
      tail -8 "$out/tests.log"
      note tests $rc
      ;;
    host)
      "$py" benchmarks/host_cost.py >"$out/host.log" 2>&1
      rc=$?
      cat "$out/host.log"
      note host $rc
      ;;
    e2e)
      # shellcheck disable=SC2086
      "$py" benchmarks/e2e.py --json "$out/e2e.json" ${E2E_ARGS:-} >"$out/e2e.log" 2>&1
      rc=$?
      head -1 "$out/e2e.log"
      sed -n '/^model /,$p' "$out/e2e.log"
      [ $rc -ne 0 ] && tail -20 "$out/e2e.log"
      note e2e $rc
      ;;
    ddp)
      if [ "$gpus" -lt 2 ]; then
        echo "skipped: $gpus GPU(s), needs 2"
        continue
      fi
      # shellcheck disable=SC2086
      "$py" benchmarks/ddp_train.py --compare --results-dir "$work/ddp" ${DDP_ARGS:-} >"$out/ddp.log" 2>&1
      rc=$?
      head -1 "$out/ddp.log"
      grep -E 'max diff|median step|^result' "$out/ddp.log"
      [ $rc -ne 0 ] && tail -20 "$out/ddp.log"
      note ddp $rc
      ;;
    project)
      (cd "$root" && "$py" scripts/bake.py matrix --only elementwise-torch_library-f16-bf16-f64-cpu \
        --out "$work/project" --jobs 1 --build-jobs "$MAX_JOBS" --require-gpu) >"$out/project.log" 2>&1
      rc=$?
      for log in "$work"/project/logs/*.log; do
        printf '\n==== %s (last 60 lines)\n' "$log" >>"$out/project.log"
        tail -60 "$log" >>"$out/project.log"
      done
      grep -A3 'combination' "$out/project.log" | head -4
      grep -hE '^(SKIPPED|FAILED|[0-9]+ (passed|failed))' "$work"/project/logs/*.test.log | tail -8
      note project $rc
      ;;
    *)
      echo "unknown part $part (tests host e2e ddp project)"
      status=2
      ;;
  esac
done
echo
echo "exit $status; logs in $out, work files in $work"
exit $status
