#!/usr/bin/env bash
# host-packages.sh installs, with apt-get, the Debian packages a real node of the local cluster runs on:
# containerd (its CRI plugin is the node's runtime: Debian 13's 1.7, the first with CDI, through which the DRA
# drivers' prepared claims reach containers), runc, the CNI plugins (bridge, host-local, loopback, portmap),
# iptables (kube-proxy and the CNI plugins' rules), a static busybox (the tests' user image) and the
# OpenSSH server (the Instances' SSH sidecar image; the client reaches it in the tests). The
# versions are the ones tested; a package already at its version is left alone, so a warm machine pays nothing.
# `make host-packages` runs it; `make demo` and `make test` call that first.
set -euo pipefail

packages=(
	containerd=1.7.24~ds1-6+deb13u1
	runc=1.1.5+ds1-1+deb12u1
	containernetworking-plugins=1.1.1+ds1-3+b5
	iptables=1.8.9-2
	busybox-static=1:1.35.0-4+deb12u1+b1
	openssh-server=1:9.2p1-2+deb12u10
	openssh-sftp-server=1:9.2p1-2+deb12u10
	openssh-client=1:9.2p1-2+deb12u10
)

containerd_deb_url="http://deb.debian.org/debian/pool/main/c/containerd/containerd_1.7.24~ds1-6+deb13u1_amd64.deb"
containerd_deb_sha256=ed708deb96fe476a3bce4efa5c0538dfbcf717ab9a7c7944ba7260342c25899c

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
# Debian 12 has no containerd with CDI: Debian 13's package is fetched from the same mirror and checked against
# its digest in the release's package index (it needs only runc and libc6 >= 2.34 of Debian 12).
debs=()
for i in "${!missing[@]}"; do
	[[ ${missing[$i]} == containerd=* ]] || continue
	deb=$(mktemp -d)/containerd_1.7.24_amd64.deb
	curl -fsSL --retry 3 -o "$deb" "$containerd_deb_url"
	echo "$containerd_deb_sha256  $deb" | sha256sum -c --quiet
	debs+=("$deb")
	unset 'missing[i]'
done
# The packages' services are not started: the local cluster runs its own containerd per node.
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
	printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends --allow-downgrades "${missing[@]}" "${debs[@]}" >/dev/null
