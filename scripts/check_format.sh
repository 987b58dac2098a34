#!/usr/bin/env bash
# Checks that the C++ files changed since a base commit are formatted as .clang-format says
# (clang-format --dry-run -Werror), or formats them (--fix). Exits non-zero when a file is not
# formatted, naming it; the first lines of what would change are printed.
#
#   scripts/check_format.sh [--fix] [BASE]
#
# BASE (default: the baseline below) is any git revision; in a pull request, its target branch
# (origin/main). The files are the .h/.cc/.cpp/.hpp files that differ from BASE in the work tree
# (commits since BASE and uncommitted edits) plus new files git does not ignore; deleted files and
# files outside our own sources (web/ and its node_modules, build directories) are left out.
#
# Why a baseline and not every file: code written before the check began is not all formatted
# (some 480 lines over the column limit). A file is reformatted when someone next changes it, so
# that a change never has to carry reformatting of files it did not otherwise touch, and no file
# that was changed since the baseline is ever left unformatted. The baseline is the commit the
# check was added on top of; move it forward (to a commit after which every file is formatted)
# only if the whole tree is reformatted at once.
#
# Environment: CLANG_FORMAT=clang-format (Debian 12's is 14; another version may format
# differently).
set -uo pipefail
cd "$(dirname "$0")/.."

BASELINE=9ae27ace1e2d27555da41efe4db41477b3d170aa
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}

fix=0
if [ "${1:-}" = "--fix" ]; then
  fix=1
  shift
fi
base=${1:-$BASELINE}

if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "check_format: $CLANG_FORMAT not found (apt-get install clang-format; scripts/install-deps.sh)"
  exit 1
fi
if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  echo "check_format: no commit $base in this clone (a shallow clone? fetch its history)"
  exit 1
fi

mapfile -t files < <(
  {
    git diff --name-only --diff-filter=d "$base" --
    git ls-files --others --exclude-standard
  } | grep -E '\.(h|cc|cpp|hpp)$' | grep -vE '^(web/|build[^/]*/)' | sort -u
)
if [ "${#files[@]}" -eq 0 ]; then
  echo "check_format: no C++ file changed since $base"
  exit 0
fi

if [ "$fix" -eq 1 ]; then
  "$CLANG_FORMAT" -i "${files[@]}" || exit 1
  echo "check_format: formatted ${#files[@]} files changed since $base"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  "$CLANG_FORMAT" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -ne 0 ]; then
  for f in "${bad[@]}"; do
    echo "$f: not formatted; the first changes clang-format would make:"
    diff -u "$f" <("$CLANG_FORMAT" "$f") | sed -n '3,12p' | sed 's/^/  /'
  done
  echo "check_format: ${#bad[@]} of ${#files[@]} files changed since $base are not formatted" \
    "($("$CLANG_FORMAT" --version | grep -o 'version [0-9.]*')); scripts/check_format.sh --fix formats them"
  exit 1
fi
echo "check_format: ${#files[@]} files changed since $base are formatted"
