#!/usr/bin/env bash
# The suite beside a CPU-heavy job: `botgrpo bench step` in a loop for as long as the suite runs.
cd /work/ci/main
( while [ ! -f /work/ci/loaded.done ]; do
    BOTGRPO_CACHE=/work/ci/main/.cache/botgrpo .venv/bin/botgrpo bench step --steps 3 --repeats 1 --threads 2 >> /work/ci/bench-loop.log 2>&1
  done ) &
loop=$!
make test-record RECORD=/work/ci/rec/loaded > /work/ci/loaded.log 2>&1
rc=$?
touch /work/ci/loaded.done
wait $loop
echo "rc=$rc" >> /work/ci/loaded.log
