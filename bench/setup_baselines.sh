#!/usr/bin/env bash
# Create the two reference linters that bench/bench_check.py compares `graphsafe check` with,
# each in its own virtual environment (they pin their own libcst versions and are NOT
# graphsafe dependencies: never install them into the project's venv).
#
#   GS_BASELINES   where the venvs go (default /tmp/gs-baselines)
#   PYTHON         the interpreter that creates them (default python3)
#
# Idempotent: a venv whose tool already has the pinned version is left as it is.
#
# TorchFix 0.7.0 requires flake8, PyYAML and libcst>=1.5,<1.6; it does NOT depend on torch
# (it only analyses source text), so no torch is installed into its venv. If a future pin does
# pull torch, the script installs torch==2.13.0 first (see TORCHFIX_NEEDS_TORCH below) so that
# pip never resolves an unpinned, multi-GB CUDA torch.
set -euo pipefail

ROOT="${GS_BASELINES:-/tmp/gs-baselines}"
PY="${PYTHON:-python3}"
TORCHFIX_VERSION="0.7.0"
FIXIT_VERSION="2.2.1"
TORCH_PIN="torch==2.13.0"

mkdir -p "$ROOT"

pip_in() {  # venv args...: pip install, without the noise of unused local index locations
  local venv="$1"; shift
  "$venv/bin/python" -m pip install -q "$@" 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
  return "${PIPESTATUS[0]}"
}

have_version() {  # venv dist version
  "$1/bin/python" - "$2" "$3" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
try:
    sys.exit(0 if version(sys.argv[1]) == sys.argv[2] else 1)
except PackageNotFoundError:
    sys.exit(1)
EOF
}

make_venv() {  # venv
  if [ ! -x "$1/bin/python" ]; then
    echo "creating $1"
    "$PY" -m venv "$1"
    pip_in "$1" --upgrade pip
  fi
}

needs_torch() {  # dist==version -> exit 0 if its metadata requires torch (unconditionally)
  local tmp
  tmp="$(mktemp -d)"
  "$PY" -m pip download -q --no-deps -d "$tmp" "$1" >/dev/null 2>&1 || { rm -rf "$tmp"; return 1; }
  "$PY" - "$tmp" <<'EOF'
import sys, zipfile, glob, re
for whl in glob.glob(sys.argv[1] + "/*.whl"):
    with zipfile.ZipFile(whl) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        for line in z.read(meta).decode().splitlines():
            if line.startswith("Requires-Dist:") and "extra ==" not in line:
                if re.match(r"Requires-Dist:\s*torch\b", line):
                    sys.exit(0)
sys.exit(1)
EOF
  local rc=$?
  rm -rf "$tmp"
  return $rc
}

# --- TorchFix -------------------------------------------------------------------------------
TF="$ROOT/torchfix-venv"
make_venv "$TF"
if have_version "$TF" TorchFix "$TORCHFIX_VERSION"; then
  echo "torchfix $TORCHFIX_VERSION already in $TF"
else
  if needs_torch "torchfix==$TORCHFIX_VERSION"; then
    echo "torchfix requires torch: installing $TORCH_PIN first"
    pip_in "$TF" "$TORCH_PIN"
    pip_in "$TF" "torchfix==$TORCHFIX_VERSION" "$TORCH_PIN"
  else
    echo "torchfix $TORCHFIX_VERSION does not depend on torch: not installing torch"
    pip_in "$TF" "torchfix==$TORCHFIX_VERSION"
  fi
fi

# --- Fixit ----------------------------------------------------------------------------------
FX="$ROOT/fixit-venv"
make_venv "$FX"
if have_version "$FX" fixit "$FIXIT_VERSION"; then
  echo "fixit $FIXIT_VERSION already in $FX"
else
  pip_in "$FX" "fixit==$FIXIT_VERSION"
fi

# Report what is installed (the bench records this too).
for v in "$TF" "$FX"; do
  "$v/bin/python" - "$v" <<'EOF'
import sys
from importlib.metadata import version
names = ["TorchFix", "fixit", "libcst", "flake8"]
got = []
for n in names:
    try:
        got.append(f"{n}=={version(n)}")
    except Exception:
        pass
print(sys.argv[1] + ": " + " ".join(got) + f" (python {sys.version.split()[0]})")
EOF
done
