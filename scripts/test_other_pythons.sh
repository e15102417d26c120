#!/usr/bin/env bash
# Declared Python versions are tested versions: run the fast `py_matrix` subset of the tests
# (import, API, graphs, a local job, a checkpoint/restore, the Python-version regressions)
# under every Python minor version setup.cfg declares, other than the main venv's.
#
#   scripts/test_other_pythons.sh [MAIN_PYTHON]     (make test calls it with .venv/bin/python)
#
# The versions are setup.cfg's "Programming Language :: Python :: 3.X" classifiers; the lower
# bound of python_requires must be one of them. Each interpreter is python3.X on PATH or a
# pyenv version 3.X.*; a missing one is skipped with the reason printed. Each gets a venv
# .venv-3.X with `pip install -e .` plus pytest and pytest-timeout (not the heavy test
# extras), reinstalled when setup.cfg or pyproject.toml change. Any failure fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

main_python=${1:-.venv/bin/python}
main_minor=$("$main_python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
declared=$(sed -n 's/^[[:space:]]*Programming Language :: Python :: \(3\.[0-9][0-9]*\)[[:space:]]*$/\1/p' setup.cfg)
lowest=$(sed -n 's/^python_requires[[:space:]]*=[[:space:]]*>=[[:space:]]*\([0-9.]*\).*/\1/p' setup.cfg)
if [ -z "$declared" ]; then
    echo "test_other_pythons: setup.cfg declares no 'Programming Language :: Python :: 3.X' classifier" >&2
    exit 1
fi
if [ -n "$lowest" ] && ! grep -qx "$lowest" <<<"$declared"; then
    echo "test_other_pythons: python_requires >= $lowest but setup.cfg has no classifier 'Programming Language :: Python :: $lowest'" >&2
    exit 1
fi
stamp=".installed-$(cat setup.cfg pyproject.toml | cksum | cut -d' ' -f1)"
# the subset: test files holding py_matrix tests (collecting other files could need the extras)
mapfile -t files < <(grep -rl --include='test_*.py' 'pytest.mark.py_matrix' tests | sort)

works() {  # $1 runs and is Python $2 (a pyenv shim of a version not selected fails here)
    "$1" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$2' else 1)" >/dev/null 2>&1
}

find_python() {  # the interpreter of minor version $1, or nothing
    local minor=$1 candidate
    local root=${PYENV_ROOT:-$HOME/.pyenv}
    for candidate in $(command -v "python$minor") \
                     $(ls -d "$root"/versions/"$minor".* 2>/dev/null | sort -V -r | sed "s|\$|/bin/python$minor|"); do
        if works "$candidate" "$minor"; then
            echo "$candidate"
            return
        fi
    done
}

failed=()
for minor in $declared; do
    if [ "$minor" = "$main_minor" ]; then
        continue  # the main venv runs the whole suite
    fi
    python=$(find_python "$minor")
    if [ -z "$python" ]; then
        echo "test_other_pythons: Python $minor skipped: no working python$minor on PATH and no pyenv version $minor.*"
        continue
    fi
    venv=".venv-$minor"
    if [ ! -e "$venv/$stamp" ]; then
        echo "test_other_pythons: Python $minor: installing into $venv ($python)"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --upgrade pip
        "$venv/bin/python" -m pip install --quiet -e . pytest pytest-timeout
        rm -f "$venv"/.installed-*
        touch "$venv/$stamp"
    fi
    echo "test_other_pythons: Python $minor: ${#files[@]} test files, -m py_matrix"
    if ! "$venv/bin/python" -m pytest -m py_matrix -p no:cacheprovider -q "${files[@]}"; then
        failed+=("$minor")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "test_other_pythons: the py_matrix tests failed on Python ${failed[*]}" >&2
    exit 1
fi
