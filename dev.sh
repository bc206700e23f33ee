#!/usr/bin/env bash
# Karukan developer entry point.
#   ./dev.sh demo   set everything up, then convert with the bundled defaults
#   ./dev.sh test   set up what the tests need, then run the whole suite
#   ./dev.sh setup  only set up (venv + packages)
set -euo pipefail
cd "$(dirname "$0")"

VENV=${KARUKAN_VENV:-.venv}
PY=${PYTHON:-python3}

# Debian packages: building llama.cpp, and the real daemons the end-to-end tests drive.
APT_BUILD=(cmake g++ ninja-build)
# ibus/fcitx5 daemons, python3-gi + typelibs (libibus cross-checks), the fcitx5 addon build, and
# the real-application tests: Xvfb, xdotool (XTEST keys), GTK 3, PyQt5 and both frameworks'
# im-modules for each (Debian's Qt 5 has IBus support built in).
APT_TEST=(dbus dbus-daemon dbus-bin ibus python3-gi gir1.2-ibus-1.0 gir1.2-glib-2.0 fcitx5 fcitx5-modules
          libfcitx5core-dev libfcitx5utils-dev libfcitx5config-dev fcitx5-modules-dev pkg-config make
          xvfb xdotool gir1.2-gtk-3.0 ibus-gtk3 fcitx5-frontend-gtk3 python3-pyqt5 fcitx5-frontend-qt5)

need_apt() {
    local missing=()
    for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "dev.sh: installing Debian packages: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

setup_python() {
    local extras=$1
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
    # llama.cpp compiles from source (no binary wheel on PyPI); portable x86-64-v3 flags keep the
    # cached wheel valid on any AVX2 machine and pip's wheel cache makes later installs take seconds.
    export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
    export CMAKE_ARGS=${CMAKE_ARGS:-"-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"}
    "$VENV/bin/python" -m pip install -q -e ".[$extras]"
}

case "${1:-}" in
    setup)
        need_apt "${APT_BUILD[@]}"
        setup_python neural,frontend
        ;;
    demo)
        need_apt "${APT_BUILD[@]}"
        setup_python neural,frontend
        "$VENV/bin/karukan" convert -n 5 きょうはいいてんきですね
        "$VENV/bin/karukan" keys "kaiginosiryouwookurimasu<space><return>"
        ;;
    test)
        need_apt "${APT_BUILD[@]}" "${APT_TEST[@]}"
        # `train` too: the export test trains a tiny model with torch (CPU build) and the reading
        # tests run the real fugashi and SudachiPy analysers.
        setup_python neural,frontend,dev,train
        shift
        # pytest exits 5 when it collects nothing: that is a failure here, not a green run.
        "$VENV/bin/python" -m pytest -q "$@"
        ;;
    *)
        echo "usage: ./dev.sh demo|test|setup [pytest args]" >&2
        exit 2
        ;;
esac
