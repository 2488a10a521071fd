#!/usr/bin/env bash
# deps.sh — install what garuda's build, tests, sanitizer and fuzz builds need
# (Debian 12). Does nothing when every package is already installed; otherwise runs
# apt-get update, then apt-get install -y. Needs root (uses sudo when not root).
#   --build  only what building garuda (and its Criterion tests) needs: the demo's and
#            the bench's, which must not install the test suites' services
#            (Prometheus, node_exporter, munge start with their packages)
set -euo pipefail

build=(meson ninja-build pkg-config gcc libsystemd-dev liburing-dev libcjson-dev libcriterion-dev)

packages=(
	"${build[@]}"
	clang libclang-rt-14-dev
	systemd valgrind
	spin # the models suite (tests/models)
	python3-pytest python3-pytest-asyncio python3-uvloop
	python3-venv python3-setuptools python3-wheel # the python suite's pip route (test_pip.py)
	procps util-linux # the systemd suite: ps; unshare, nsenter, setpriv
	# the deploy suite (tests/deploy): the Debian packages built, linted and installed
	# into a debootstrap'd root; promtool (prometheus: ~96 MB installed, the smallest
	# Debian package with promtool) on the alert rules and garctl metrics
	dpkg-dev debhelper dh-python lintian debootstrap prometheus
	# the CDI spec (contrib/kubernetes) against the CDI JSON schema and library rules
	golang-github-container-orchestrated-devices-container-device-interface-dev
	python3-jsonschema python3-yaml
	# the deploy suite's real Prometheus test (prometheus-real.sh): node_exporter's
	# textfile collector (13.1 MiB installed) and curl for Prometheus' API (0.5 MiB)
	prometheus-node-exporter curl
)
# Installed without their Recommends (podman's would add buildah, criu, slirp4netns,
# fuse-overlayfs and more that the tests do not use). Sizes as installed on Debian 12:
lean=(
	# the deploy suite's real Slurm test (slurm-real.sh): Slurm 22.05 and munge, 12.7 MiB
	# with their dependencies (libhwloc15, liblua5.1-0, libmunge2, slurm-wlm-basic-plugins)
	slurmctld slurmd slurm-client munge
	# the deploy suite's container test (container-real.sh): podman 4.3 + runc and
	# catatonit (the pause image), 91.9 MiB with their dependencies (conmon,
	# containernetworking-plugins 43.7 MiB, iptables, containers-common/-image, ...)
	podman runc catatonit
)

case ${1:-} in
--build) packages=("${build[@]}") lean=() ;;
"") ;;
*) echo "usage: deps.sh [--build]" >&2; exit 2 ;;
esac

missing=() missing_lean=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[[ $status == installed ]] || missing+=("$p")
done
for p in "${lean[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[[ $status == installed ]] || missing_lean+=("$p")
done

if ((${#missing[@]} + ${#missing_lean[@]} == 0)); then
	echo "deps: all $((${#packages[@]} + ${#lean[@]})) packages present"
	exit 0
fi

echo "deps: installing ${missing[*]} ${missing_lean[*]}"
sudo=()
if ((EUID != 0)); then
	command -v sudo >/dev/null || { echo "deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
if ((${#missing[@]})); then
	"${sudo[@]}" apt-get install -y "${missing[@]}"
fi
if ((${#missing_lean[@]})); then
	"${sudo[@]}" apt-get install -y --no-install-recommends "${missing_lean[@]}"
fi
