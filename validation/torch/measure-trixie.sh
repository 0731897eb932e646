#!/usr/bin/env bash
# The torch 2.6 ground truth (issue 29): the same harness run by Debian 13's python3-torch (2.6.0, CPU) inside a
# Debian 13 root made with debootstrap from Debian's packages; created on first use, reused after.
# Usage (root): validation/torch/measure-trixie.sh --out FILE | --check FILE [measure.py's other flags]
# HEADROOM_TRIXIE_ROOT chooses the root's folder (default /srv/headroom-trixie).
set -euo pipefail
root=${HEADROOM_TRIXIE_ROOT:-/srv/headroom-trixie}
here=$(cd "$(dirname "$0")" && pwd)
if ! { [ -x "$root/usr/bin/python3" ] && chroot "$root" /usr/bin/python3 -c 'import torch' 2>/dev/null; }; then
  mkdir -p "$root"
  # torch.compile's Inductor needs a C++ compiler and libtorch's headers in the root (issue 29).
  debootstrap --variant=minbase --include=python3-torch,python3-setuptools,python3-numpy,g++,libtorch-dev \
    trixie "$root" http://deb.debian.org/debian >/dev/null
fi
mountpoint -q "$root/proc" || { mount --bind /proc "$root/proc" && trap 'umount "$root/proc"' EXIT; }
work=/root/headroom-torch
rm -rf "${root:?}$work" && cp -r "$here" "$root$work"
args=() out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; args+=(--out "$work/out.csv"); shift 2 ;;
    --check) cp "$2" "$root$work/check.csv"; args+=(--check "$work/check.csv"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
chroot "$root" /usr/bin/python3 -W ignore "$work/measure.py" "${args[@]}"
if [ -n "$out" ]; then cp "$root$work/out.csv" "$out"; fi
