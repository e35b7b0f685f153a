#!/bin/bash
# Fails when a C file does not follow .clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(git ls-files '*.c' '*.h' | grep -v '^tests/vm/simhca/' | while read -r f; do
	clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [ -n "$bad" ]; then
	echo "clang-format would change (run: clang-format -i FILE):" >&2
	echo "$bad" >&2
	exit 1
fi
