#!/usr/bin/env bash
# Prints the folder holding the binaries of keyplane's test control plane (etcd, kube-apiserver,
# kube-controller-manager: what envtest gives Go operators), building it the first time.
#
#   ASSETS=$(test/support/envtest-assets.sh)     # progress on stderr, the folder on stdout
#   test/support/envtest-assets.sh --folder      # only prints where the folder is (or will be)
#
# Only Debian's packages can be had where keyplane is tested, and no Kubernetes release binary, so
# kube-apiserver and kube-controller-manager are compiled from Debian's `kubernetes` source package
# (v1.20.2) with Debian's Go, and etcd is Debian's `etcd-server`. The first run needs root (apt-get),
# about 6 minutes of both cores and 4 GB of scratch disk; the result (about 220 MB) is kept under
# KEYPLANE_ENVTEST_CACHE (default ~/.cache/keyplane-envtest) and every later run prints it at once.
# Concurrent runs wait for each other (flock), so parallel test files build it once.
set -euo pipefail
readonly version=1.20.2
cache=${KEYPLANE_ENVTEST_CACHE:-$HOME/.cache/keyplane-envtest}
out=$cache/v$version
say() { echo "envtest-assets: $*" >&2; }
built() { [[ -x $out/etcd && -x $out/kube-apiserver && -x $out/kube-controller-manager ]]; }
[[ ${1:-} == --folder ]] && { echo "$out"; exit 0; }

built && { echo "$out"; exit 0; }
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
built && { echo "$out"; exit 0; }
[[ $(id -u) == 0 ]] || { say "building the control plane needs root (apt-get); run this script once as root"; exit 1; }

export DEBIAN_FRONTEND=noninteractive
# `apt-get source` reads deb-src entries; add them for the archives the machine already installs from.
if ! apt-get source --print-uris kubernetes 2>/dev/null | grep -q 'orig\.tar'; then
  say "adding deb-src entries for the machine's own archives"
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >/etc/apt/sources.list.d/keyplane-envtest-src.sources
  else
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/keyplane-envtest-src.list
  fi
  apt-get update -qq >&2
fi
say "installing Go, etcd and reflect2 from Debian"
apt-get install -y -qq --no-install-recommends golang-go etcd-server rsync golang-github-modern-go-reflect2-dev >&2

scratch=$(mktemp -d "${TMPDIR:-/tmp}/keyplane-envtest.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
say "fetching Debian's kubernetes source package"
apt-get source --download-only -qq kubernetes >&2
tar -xzf kubernetes_*.orig.tar.gz
cd "kubernetes-$version"
# The reflect2 1.0.1 vendored by v1.20 panics on the map layout of Go 1.18 and later; 1.0.2 (Debian's)
# is the release that fixed it.
rm -rf vendor/github.com/modern-go/reflect2
cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 vendor/github.com/modern-go/reflect2
rm -f vendor/github.com/modern-go/reflect2/go.mod

say "compiling kube-apiserver and kube-controller-manager (several minutes)"
export GOTOOLCHAIN=local GOFLAGS= HOME=$scratch/home GOCACHE=$scratch/gocache
export KUBE_GIT_VERSION=v$version KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20 KUBE_GIT_TREE_STATE=clean
mkdir -p "$HOME"
make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" GOLDFLAGS="-s -w" >&2

rm -rf "$out.partial"; mkdir -p "$out.partial"
cp _output/bin/kube-apiserver _output/bin/kube-controller-manager "$out.partial/"
ln -s "$(command -v etcd || echo /usr/bin/etcd)" "$out.partial/etcd"
rm -rf "$out"; mv "$out.partial" "$out"
say "ready: $("$out/kube-apiserver" --version)"
echo "$out"
