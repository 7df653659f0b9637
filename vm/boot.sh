#!/usr/bin/env bash
# boot.sh SHAPE OUTDIR JOB [TIMEOUT_S]: boot the test guest of SHAPE under QEMU (TCG: /dev/kvm is
# not usable with Debian's kernel here), run the bash script JOB inside it with OUTDIR shared
# read-write at /vmout, and exit with the job's exit code. The host root is the guest's root, read-only
# under a tmpfs overlay, so the guest runs this very checkout.
# About one TCG boot in 20 hangs before userspace: a boot that has not reached init's "booted" mark in
# BOOT_TIMEOUT_S (default 90) is killed and retried, up to 3 boots.
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 SHAPE OUTDIR JOB [TIMEOUT_S]" >&2; exit 2; }
shape=$1 out=$2 job=$3 limit=${4:-900}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=vm/shapes.sh
. "$here/shapes.sh"
mapfile -t machine < <(shape_args "$shape")
[[ -f $job ]] || { echo "boot: no job script $job" >&2; exit 2; }
kver=${LAB_VM_KERNEL:-$(find /boot -maxdepth 1 -name 'vmlinuz-*-amd64' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V | tail -n 1)}
[[ -n $kver && -r /boot/vmlinuz-$kver ]] || { echo "boot: no Debian kernel in /boot (apt-get install linux-image-amd64)" >&2; exit 1; }
command -v qemu-system-x86_64 > /dev/null || { echo "boot: qemu-system-x86_64 missing (apt-get install qemu-system-x86)" >&2; exit 1; }
initrd=$here/../.work/vm/initramfs-$kver.cpio.gz
"$here/initramfs.sh" "$kver" "$initrd"

mkdir -p "$out"
cp "$job" "$out/job.sh"
echo "guest-$shape" > "$out/hostname"
boot_timeout=${BOOT_TIMEOUT_S:-90}
for attempt in 1 2 3; do
  rm -f "$out/booted" "$out/job.rc"
  t0=$SECONDS
  # No network, no display; the serial console is the boot log. panic=-1 + -no-reboot: a guest panic
  # ends QEMU instead of hanging.
  qemu-system-x86_64 -machine q35 -accel tcg,thread=multi "${machine[@]}" \
    -kernel "/boot/vmlinuz-$kver" -initrd "$initrd" \
    -append "console=ttyS0 quiet panic=-1 rdinit=/init" \
    -virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap \
    -virtfs local,path="$out",mount_tag=out,security_model=none,multidevs=remap \
    -nic none -display none -no-reboot -serial "file:$out/console-$attempt.log" -monitor none &
  qemu=$!
  while kill -0 "$qemu" 2> /dev/null && [[ ! -f $out/booted ]] && (( SECONDS - t0 < boot_timeout )); do sleep 1; done
  if [[ ! -f $out/booted ]]; then
    kill "$qemu" 2> /dev/null || true
    wait "$qemu" 2> /dev/null || true
    echo "boot: $shape attempt $attempt did not reach userspace in $((SECONDS - t0)) s (console-$attempt.log); retrying" >&2
    continue
  fi
  echo "boot: $shape up in $((SECONDS - t0)) s (attempt $attempt)" >&2
  while kill -0 "$qemu" 2> /dev/null && (( SECONDS - t0 < limit )); do sleep 2; done
  if kill -0 "$qemu" 2> /dev/null; then
    kill "$qemu"; wait "$qemu" 2> /dev/null || true
    echo "boot: $shape job still running after $limit s: killed (job.log)" >&2
    exit 1
  fi
  wait "$qemu" 2> /dev/null || true
  echo "boot: $shape job ended after $((SECONDS - t0)) s, exit $(cat "$out/job.rc" 2> /dev/null || echo '?')" >&2
  [[ -f $out/job.rc ]] || { echo "boot: the guest stopped without the job's exit code (console-$attempt.log)" >&2; exit 1; }
  exit "$(cat "$out/job.rc")"
done
echo "boot: $shape did not boot in 3 attempts" >&2
exit 1
