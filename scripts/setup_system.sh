#!/usr/bin/env bash
# Install the Debian packages botgrpo needs, only those missing: a Python with venv, Node.js + npm
# (react service) and Chromium (render service). Needs root or sudo for apt-get; without either it
# says what to install by hand. Users with Playwright's own browser (`playwright install chromium`)
# or BOTGRPO_CHROMIUM set do not need Debian's chromium.
set -euo pipefail

need=()
python3 -c "import venv, ensurepip" 2>/dev/null || need+=(python3-venv)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
has_chromium() {
  [ -n "${BOTGRPO_CHROMIUM:-}" ] && [ -x "${BOTGRPO_CHROMIUM}" ] && return 0
  compgen -G "${PLAYWRIGHT_BROWSERS_PATH:-$HOME/.cache/ms-playwright}/chromium-*" >/dev/null && return 0
  command -v chromium >/dev/null 2>&1
}
has_chromium || need+=(chromium)
fc-list 2>/dev/null | grep -qi dejavu || need+=(fonts-dejavu-core)
fc-list 2>/dev/null | grep -qi "color emoji" || need+=(fonts-noto-color-emoji)  # emoji in rendered components

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "botgrpo: installing Debian packages: ${need[*]}"
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
  echo "botgrpo: please install these packages (as root): apt-get install -y ${need[*]}" >&2
  exit 1
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
