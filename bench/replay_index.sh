#!/usr/bin/env bash
# How fast `tilefit replay --list` indexes a large Triton cache (no compiles): builds a synthetic
# cache of N entries from one real kernel entry (metadata rewritten per entry so none group
# together; the IR hard-linked to keep the disk small), then times the index several times and
# prints the median.
# usage: bench/replay_index.sh REAL_ENTRY_DIR [N] [TILEFIT_BINARY]
set -euo pipefail
entry="$1"; n="${2:-10000}"; tilefit="${3:-target/release/tilefit}"
json=$(ls "$entry"/*.json | grep -v __grp__ | head -1)
name=$(basename "$json" .json)
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
for i in $(seq 1 "$n"); do
  d="$cache/E$i"; mkdir "$d"
  ln "$entry/$name.ttir" "$d/$name.ttir"
  sed "s/\"hash\": \"[0-9a-f]*\"/\"hash\": \"synthetic$i\"/" "$json" > "$d/$name.json"
done
sync
times=()
for run in 1 2 3 4 5; do
  start=$(date +%s.%N)
  "$tilefit" replay "$cache" --list > /dev/null
  end=$(date +%s.%N)
  times+=("$(awk "BEGIN { print $end - $start }")")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
echo "entries: $n"
echo "runs (s): $(echo $sorted | tr '\n' ' ')"
echo "median (s): $(echo "$sorted" | sed -n 3p)"
