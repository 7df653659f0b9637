#!/usr/bin/env bash
# initramfs.sh KVER OUT: a busybox initramfs for the test guest: busybox-static, vm/init, and the
# modules (with their dependencies, in load order) that 9p over virtio and overlayfs need in Debian's
# kernel KVER. Rebuilt only when an input changed.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 KVER OUT.cpio.gz" >&2; exit 2; }
kver=$1 out=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# busybox-static's binary: the initramfs has no libc.
busybox=/bin/busybox
[[ -x $busybox ]] || { echo "initramfs: $busybox not found (apt-get install busybox-static)" >&2; exit 1; }
if ldd "$busybox" > /dev/null 2>&1; then echo "initramfs: $busybox is dynamically linked: install busybox-static" >&2; exit 1; fi
stamp="$kver $(sha256sum "$here/init" "$busybox" | cut -c1-16 | tr '\n' ' ')"
if [[ -f $out && -f $out.stamp && $(cat "$out.stamp") == "$stamp" ]]; then exit 0; fi

want=(virtio_pci 9pnet_virtio 9p overlay)
order=()
# add MODULE: its dependencies first (modinfo), each module once.
add() {
  local m=$1 d
  [[ " ${order[*]} " == *" $m "* ]] && return
  for d in $(modinfo -k "$kver" -F depends "$m" | tr ',' ' '); do add "$d"; done
  order+=("$m")
}
for m in "${want[@]}"; do add "$m"; done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{bin,proc,sys,dev,modules}
cp "$busybox" "$tmp/bin/busybox"
install -m 755 "$here/init" "$tmp/init"
for m in "${order[@]}"; do
  f=$(modinfo -k "$kver" -n "$m")
  case $f in
    *.ko) cp "$f" "$tmp/modules/$m.ko" ;;
    *.ko.xz) xz -dc "$f" > "$tmp/modules/$m.ko" ;;
    *.ko.zst) zstd -qdc "$f" > "$tmp/modules/$m.ko" ;;
    *) echo "initramfs: module $m at '$f' is neither a file nor built in" >&2; exit 1 ;;
  esac
done
printf '%s\n' "${order[@]}" > "$tmp/modules/order"
mkdir -p "$(dirname "$out")"
(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) > "$out.tmp"
mv "$out.tmp" "$out"
echo "$stamp" > "$out.stamp"
echo "initramfs: $out (${order[*]})" >&2
