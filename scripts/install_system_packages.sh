#!/usr/bin/env bash
# Installs the Debian packages that agentenvs uses beside its Python packages, each only when missing:
#   chromium        ColBench-Frontend's page renderer (driven over DevTools' pipe) and the browser tests
#                   (Playwright drives it there; no browser download).
#   python3-seccomp libseccomp's own Python binding: the ColBench sandbox's syscall filter (loaded from its
#                   file by the jail; without it the jail runs unfiltered and says so in its isolation).
# It needs root or password-less sudo, apt-get and the package archive. Where any of them is lacking it
# says what to install by hand and exits 0: what needs the program then skips and names it (a missing
# optional program never fails the install, `agentenvs run all` or the tests).
set -uo pipefail

# program on PATH -> the Debian package that provides it
declare -A PACKAGE_OF=([chromium]=chromium)
# a library's file (a glob) -> the Debian package that provides it
declare -A PACKAGE_OF_FILE=([/usr/lib/python3/dist-packages/seccomp.cpython-*.so]=python3-seccomp)

missing=()
for program in "${!PACKAGE_OF[@]}"; do
    command -v "$program" >/dev/null 2>&1 || missing+=("${PACKAGE_OF[$program]}")
done
for pattern in "${!PACKAGE_OF_FILE[@]}"; do
    compgen -G "$pattern" >/dev/null || missing+=("${PACKAGE_OF_FILE[$pattern]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

say() { echo "install_system_packages: $*" >&2; }
if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    say "not root and no password-less sudo: skipped ${missing[*]} (install with: sudo apt-get install ${missing[*]})"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    say "no apt-get on this system: skipped ${missing[*]} (install your system's ${missing[*]} package)"
    exit 0
fi
say "installing ${missing[*]} with apt-get"
if ! { "${as_root[@]}" apt-get update -qq \
        && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; }; then
    say "apt-get could not install ${missing[*]}: what needs it will be skipped (retry: apt-get install ${missing[*]})"
fi
exit 0
