#!/usr/bin/env bash
# Headless Chromium for the HTML report tests (Playwright drives it via executable_path).
# Debian's package, because `playwright install` downloads a browser build and cannot run offline.
# Idempotent: an installed /usr/bin/chromium is left alone.
set -euo pipefail

[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "chromium is missing and only root can install it (sudo apt-get install chromium)" >&2
  exit 1
fi
echo "installing chromium"
# Other setup steps may hold the dpkg lock; wait for it rather than fail.
apt-get -o DPkg::Lock::Timeout=300 update -qq
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends chromium >/dev/null
[ -x /usr/bin/chromium ]
