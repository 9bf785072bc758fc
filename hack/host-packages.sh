#!/usr/bin/env bash
# host-packages.sh installs, with apt-get, the Debian packages a real node of the local cluster runs on:
# containerd (its CRI plugin is the node's runtime), runc, the CNI plugins (bridge, host-local, loopback,
# portmap), iptables (kube-proxy and the CNI plugins' rules), a static busybox (the tests' user image) and the
# OpenSSH server (the Instances' SSH sidecar image; the client reaches it in the tests). The
# versions are the ones tested; a package already at its version is left alone, so a warm machine pays nothing.
# `make host-packages` runs it; `make demo` and `make test` call that first.
set -euo pipefail

packages=(
	containerd=1.6.20~ds1-1+deb12u3
	runc=1.1.5+ds1-1+deb12u1
	containernetworking-plugins=1.1.1+ds1-3+b5
	iptables=1.8.9-2
	busybox-static=1:1.35.0-4+deb12u1+b1
	openssh-server=1:9.2p1-2+deb12u10
	openssh-sftp-server=1:9.2p1-2+deb12u10
	openssh-client=1:9.2p1-2+deb12u10
)

missing=()
for p in "${packages[@]}"; do
	name=${p%%=*} want=${p#*=}
	have=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)
	[[ $have == "install ok installed $want" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "host-packages: these packages are missing and installing them needs root: ${missing[*]}" >&2
	exit 1
fi
echo ">> installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The packages' services are not started: the local cluster runs its own containerd per node.
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
	printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
