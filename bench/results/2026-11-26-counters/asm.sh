#!/usr/bin/env bash
# Compares the core package's compiled code at two revisions, function by
# function, with file names, line numbers and the order of functions left
# out. Usage: asm.sh BEFORE AFTER (revisions of this repository).
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
root="$(git -C "$out" rev-parse --show-toplevel)"
tmp="$(mktemp -d)"
trap 'git -C "$root" worktree remove --force "$tmp/before" >/dev/null 2>&1 || true; git -C "$root" worktree remove --force "$tmp/after" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
for side in before after; do
  rev=$1; [ "$side" = after ] && rev=$2
  git -C "$root" worktree add -q --detach "$tmp/$side" "$rev"
  (cd "$tmp/$side" && go build -gcflags=-S . 2>"$tmp/$side.s")
done
python3 "$out/asm.py" "$tmp/before.s" "$tmp/after.s"
