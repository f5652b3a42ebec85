# Shared by the e2e scripts (sourced): a work folder removed on exit, and checks that
# count themselves. `run` keeps the command's stdout and stderr in $out and $err.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
checks=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# run EXPECTED_CODE CMD...: runs the command, keeps stdout/stderr in $out/$err.
run() {
  local expected="$1"
  shift
  checks=$((checks + 1))
  "$@" >"$work/out" 2>"$work/err"
  local code=$?
  out="$(cat "$work/out")"
  err="$(cat "$work/err")"
  if [ "$code" != "$expected" ]; then
    fail "'$*' exited $code, expected $expected"
    echo "--- stdout"; echo "$out"; echo "--- stderr"; echo "$err"
    return 1
  fi
  return 0
}

contains() {  # contains WHAT TEXT NEEDLE
  checks=$((checks + 1))
  case "$2" in
    *"$3"*) ;;
    *) fail "$1 does not contain '$3'"; echo "--- $1:"; echo "$2" ;;
  esac
}

empty() {  # empty WHAT TEXT
  checks=$((checks + 1))
  [ -z "$2" ] || { fail "$1 should be empty"; echo "$2"; }
}
