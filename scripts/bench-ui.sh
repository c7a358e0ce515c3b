#!/usr/bin/env bash
# The web UI's speed goals, measured in headless Chromium against a real
# dev agent seeded with N reservations in the visible range (see
# BenchmarkTimeline in ui/bench_test.go): first render ≤ 2 s and pan/zoom
# redraw p95 ≤ 100 ms. Writes OUT/README.md (default benchmarks/results/ui)
# with the command, commit, CPU model and load average beside the figures.
#
#   scripts/bench-ui.sh                 # 10,000 reservations, 200 steps per view
#   N=20000 STEPS=400 scripts/bench-ui.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000}
STEPS=${STEPS:-200}
COUNT=${COUNT:-3}
OUT=${OUT:-benchmarks/results/ui}
mkdir -p "$OUT"
cmd=(go test -tags hashicorpmetrics -run '^$' -bench BenchmarkTimeline -benchtime "${STEPS}x" -count "$COUNT" ./ui -args -ui.reservations "$N")
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
raw=$("${cmd[@]}" 2>&1) || { echo "$raw"; exit 1; }
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$raw"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
chromium_version=$( (chromium --version || chromium-browser --version) 2>/dev/null | head -1 || echo unknown)
{
  echo "# Web UI timeline: first render and pan/zoom redraw"
  echo
  echo "Goals: with $N reservations in the visible range, first render ≤ 2 s and pan/zoom redraw"
  echo "p95 ≤ 100 ms in headless Chromium. Measured in the page with performance.now: first render"
  echo "is navigation start to the first frame drawn with every reservation loaded (List of all"
  echo "$N in pages of 1,000, over Connect, binary); a redraw is one pan (5 %) or zoom (×0.8 /"
  echo "×1.25) step, from the call to the end of the frame that shows it (so it includes the wait"
  echo "for the next animation frame). The steps cancel out (pan +5 %, pan −5 %, zoom in, zoom out),"
  echo "so the window stays on the seeded day. view=day draws individual bars; view=week draws the"
  echo "same data aggregated into a usage profile per resource. \"in view\" is the seeded"
  echo "reservations plus the dev agent's sample; \"bars drawn\" counts a bar once per resource row"
  echo "it appears in (the sample has two parts). Each row of the table is one -count run, with its"
  echo "own agent, seed data and browser tab."
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| command | \`scripts/bench-ui.sh\` (N=$N STEPS=$STEPS COUNT=$COUNT): \`${cmd[*]}\` |"
  echo "| commit | $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- ui || echo ' (ui/ modified)') |"
  echo "| date | $(date -u +%Y-%m-%dT%H:%MZ) |"
  echo "| CPU | $cpu, $(nproc) cores |"
  echo "| load average (1/5/15 min) before → after | $load_before → $load_after |"
  echo "| browser | $chromium_version, headless, software rendering (--disable-gpu) |"
  echo
  echo "| view | first render (ms) | redraw p50 (ms) | redraw p95 (ms) | bars drawn | in view |"
  echo "|---|---:|---:|---:|---:|---:|"
  echo "$raw" | awk '/^BenchmarkTimeline/ {
      name=$1; sub(/^BenchmarkTimeline\//, "", name); sub(/-[0-9]+$/, "", name)
      for (i = 3; i < NF; i++) { m[$(i+1)] = $i }
      printf "| %s | %s | %s | %s | %s | %s |\n", name, m["first-render-ms"], m["redraw-p50-ms"], m["redraw-p95-ms"], m["bars-drawn"], m["in-view"]
    }'
  echo
  echo "Raw output:"
  echo
  echo '```'
  echo "$raw" | grep -E '^(goos|goarch|pkg|cpu|Benchmark|PASS|ok)'
  echo '```'
} >"$OUT/README.md"
echo "wrote $OUT/README.md"
