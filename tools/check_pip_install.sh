#!/usr/bin/env bash
# Checks that `pip install --no-build-isolation .` works offline into a venv on Debian's python
# (system site packages), and that the installed package and console script run.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$venv"
start=$(date +%s)
"$venv/bin/pip" install --no-build-isolation --no-index -q .
echo "pip install: $(( $(date +%s) - start )) s"
cd "$(dirname "$venv")"   # not the checkout: import the installed package
"$venv/bin/python" -c "import npuc, npuc.rknn.api.custom_op; assert 'Conv' in npuc.supported_ops(); print('import npuc', npuc.__version__, 'ok')"
"$venv/bin/npuc" socs > /dev/null && echo "npuc console script ok"
