#!/usr/bin/env bash
# Runs a command inside a ROCm root (scripts/rocm-root.sh; --stack 6.4, the default, or 7.2), with
# this machine's directories DIR... bound at the same paths, so paths mean the same inside and out:
#   scripts/in-rocm-root.sh [--stack 6.4|7.2] [--bind DIR]... [--env NAME=VALUE]... -- COMMAND [ARG...]
# The binds live in a private mount namespace and vanish with the command (a root left with /dev
# bound into it would turn a later `rm -rf` of the root into the deletion of the machine's devices).
# The environment inside is a clean one (PATH, HOME, LANG) plus each --env; the working directory
# is the current one when it is bound, else /. Exit status: the
# command's; 3 when the root is missing (build it with scripts/rocm-root.sh).
set -euo pipefail
stack=6.4
[[ ${1:-} == --stack ]] && { stack=$2; shift 2; }
root=$("$(dirname "$0")/rocm-root.sh" --stack "$stack" --path)
binds=()
envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8)
while (($#)); do
  case $1 in
    --bind) binds+=("$(realpath "$2")"); shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[[ -f $root/.hipguard-root ]] || { echo "in-rocm-root: no ROCm $stack root at $root (scripts/rocm-root.sh --stack $stack builds it)" >&2; exit 3; }
exec unshare --mount --propagation private -- bash -c '
  set -e
  r=$1; nb=$2; shift 2
  for d in proc dev sys; do mount --rbind "/$d" "$r/$d"; done
  for ((i = 0; i < nb; i++)); do
    mkdir -p "$r$1"; mount --rbind "$1" "$r$1"; shift
  done
  cwd=$1; shift
  # The working directory carries over when it is bound (else /).
  exec chroot "$r" /bin/sh -c '"'"'cd "$0" 2>/dev/null || cd /; exec /usr/bin/env -i "$@"'"'"' "$cwd" "$@"' \
  _ "$root" "${#binds[@]}" "${binds[@]}" "$PWD" "${envs[@]}" "$@"
