#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/vm/run.sh BUILDDIR [--suite SUITE]... [TEST]...
#
# Boots a real Debian kernel under qemu-system-x86_64 and runs the tests of
# BUILDDIR (default: the kernel and root suites) inside it, as root, with no
# network. Everything goes in BUILDDIR/vm/:
#   kernel/PACKAGE/  the kernel package, fetched with apt-get download and
#                    unpacked with dpkg-deb -x (never installed on the host)
#   rootfs/          the guest's root filesystem as a folder: busybox, the
#                    commands the tests run and the libraries ldd names,
#                    python3, the source and build trees at their own paths
#   root.img         that folder as a sparse ext4 image (mkfs.ext4 -d), the
#                    guest's /dev/vda: test files live on a real block
#                    device, not on tmpfs or the initramfs
#   initrd.img       busybox and the kernel's virtio and overlay modules
#   console.log      the guest's serial console
#   out/             each test's output and the results, read back from
#                    root.img with debugfs after the guest powered off
#   testlog.json     meson's test-log shape, for scripts/testlog.py
# Exit status: 0 when every test passed or skipped, 1 when one failed or the
# guest did not finish within its bound, 77 when this machine cannot run
# qemu at all (no qemu-system-x86_64), 2 on a usage error.
#
# Environment:
#   PC_VM_KERNEL   the kernel package (default: the newest
#                  linux-image-6.1.0-*-cloud-amd64 that apt knows)
#   PC_VM_TIMEOUT  seconds the whole guest may run (default 1200)
#   PC_VM_MEMORY   guest memory in MiB (default 2048)
#   PC_VM_CPUS     guest CPUs (default 2)
#   PC_VM_JOBS     tests the guest runs at once (default: twice its CPUs;
#                  some tests sleep more than they compute there, see below)
#   PC_VM_ACCEL    tcg (default) or kvm: on these machines a KVM guest has
#                  been seen to hang in the BIOS, so KVM is used only when
#                  asked for
#   PC_VM_SHELL=1  an interactive shell in the guest instead of the tests
#   PC_VM_SCRIPT=FILE  a bash script the guest runs (from BUILDDIR, output on
#                  the console) instead of the tests

set -euo pipefail

usage() {
	sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

if (($# == 0)); then
	usage >&2
	exit 2
fi
case $1 in
-h | --help)
	usage
	exit 0
	;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
shift
vm=$build/vm

log() {
	printf 'vm: %s\n' "$*" >&2
}

die() {
	log "$*"
	exit 1
}

qemu=$(command -v qemu-system-x86_64 || true)
if [[ -z $qemu ]]; then
	log "qemu-system-x86_64 is not installed (Debian: qemu-system-x86): cannot boot a guest"
	exit 77
fi
for tool in busybox cpio mkfs.ext4 debugfs dpkg-deb apt-get; do
	command -v "$tool" >/dev/null || die "$tool is not installed"
done
busybox=$(command -v busybox)
ldd_out=$(LC_ALL=C ldd "$busybox" 2>&1 || true)
[[ $ldd_out == *"not a dynamic"* ]] || die "$busybox is not a static busybox (Debian: busybox-static)"

mkdir -p "$vm"
plan=$vm/plan
python3 "$here/vmtests.py" plan "$build" "$plan" "$@" || exit 2

# ---- the kernel -----------------------------------------------------------
pkg=${PC_VM_KERNEL:-}
if [[ -z $pkg ]]; then
	pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' |
		awk '{ print $1 }' | sort -V | tail -n 1)
	[[ -n $pkg ]] || die "apt knows no linux-image-6.1.0-*-cloud-amd64 (apt-get update?)"
fi
kdir=$vm/kernel/$pkg
if [[ ! -f $kdir/done ]]; then
	rm -rf "$kdir"
	mkdir -p "$kdir/deb"
	# apt-get download drops privileges to _apt, which must be able to write here
	chmod 0777 "$kdir/deb"
	log "fetching $pkg"
	(cd "$kdir/deb" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) ||
		die "apt-get download $pkg failed"
	dpkg-deb -x "$kdir"/deb/*.deb "$kdir/root" || die "dpkg-deb -x failed"
	touch "$kdir/done"
fi
vmlinuz=$(find "$kdir/root/boot" -name 'vmlinuz-*' | head -n 1)
[[ -n $vmlinuz ]] || die "$pkg has no /boot/vmlinuz-*"
kver=${vmlinuz##*/vmlinuz-}
moddir=$kdir/root/lib/modules/$kver
[[ -d $moddir/kernel ]] || die "$pkg has no /lib/modules/$kver/kernel"

# ---- the initramfs: busybox, the modules, an /init that finds /dev/vda -----
initdir=$vm/initrd
rm -rf "$initdir"
mkdir -p "$initdir"/{bin,dev,proc,sys,newroot,modules}
cp "$busybox" "$initdir/bin/busybox"
# The modules the guest needs, each after those it depends on. The package
# leaves modules.dep to its postinst's depmod, so the dependencies are read
# from each module's own .modinfo ("depends=a,b"), with no kmod on the host.
declare -A seen=()
order=()
add_module() {
	local name=$1 path deps d
	path=$(find "$moddir/kernel" \( -name "$name.ko*" -o -name "${name//_/-}.ko*" \) | head -n 1)
	if [[ -z $path ]]; then
		# built in (modules.builtin) or not there at all: nothing to load
		return 0
	fi
	[[ -z ${seen[$path]:-} ]] || return 0
	seen[$path]=1
	deps=$(tr '\0' '\n' <"$path" | sed -n 's/^depends=//p' | head -n 1)
	for d in ${deps//,/ }; do
		add_module "$d"
	done
	order+=("$path")
}
for m in virtio_pci virtio_blk overlay loop; do
	add_module "$m"
done
: >"$initdir/modules/order"
for path in "${order[@]}"; do
	case $path in
	*.ko) ;;
	*) die "$path: compressed modules are not supported (busybox insmod)" ;;
	esac
	cp "$path" "$initdir/modules/"
	printf '%s\n' "${path##*/}" >>"$initdir/modules/order"
done
cat >"$initdir/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do
	insmod "/modules/$m" || echo "pc-vm: insmod $m failed"
done
i=0
while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if ! mount -t ext4 /dev/vda /newroot; then
	echo "pc-vm: cannot mount /dev/vda"
	poweroff -f
fi
umount /proc /sys /dev
exec switch_root /newroot /pc-vm/init
EOF
chmod 0755 "$initdir/init"
(cd "$initdir" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) >"$vm/initrd.img"

# ---- the root filesystem --------------------------------------------------
root=$vm/rootfs
rm -rf "$root"
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,run,tmp,var/tmp,root,mnt,opt/busybox,pc-vm/out}
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
chmod 1777 "$root/tmp" "$root/var/tmp"
chmod 0700 "$root/root"

declare -A copied=()
# copy_file PATH: the file at PATH (symlinks followed) at the same path
copy_file() {
	local p=$1
	[[ -z ${copied[$p]:-} ]] || return 0
	copied[$p]=1
	mkdir -p "$root$(dirname "$p")"
	cp -L --preserve=mode "$p" "$root$p"
}
# copy_elf PATH: the file and every library ldd names for it
copy_elf() {
	local p=$1 lib
	copy_file "$p"
	while read -r lib; do
		copy_file "$lib"
	done < <(LC_ALL=C ldd "$p" 2>/dev/null | awk '/=> \// { print $3 } /^\t\// { print $1 }')
}

# The commands the tests and their scripts run; busybox stands in for
# whatever this machine does not have (it is last on the guest's PATH).
commands=(
	bash sh dash env stat mount umount losetup mkfs.ext4 mke2fs truncate dd
	setpriv unshare nsenter findmnt chattr lsattr setfacl getfacl chmod chown
	mkdir rmdir rm cp mv ln cat sync sleep true false ls head tail grep sed
	awk mawk tr cut wc sort uniq printf echo test timeout id dirname basename
	readlink realpath mktemp touch find xargs ldd vmtouch fincore mknod mkfifo
	blockdev fallocate strace kill nproc du df seq date od cmp diff md5sum
	sha256sum gzip zcat tee setsid taskset nice mountpoint getent uname ps
	sysctl ionice stdbuf python3.11 expr yes prlimit flock chrt pgrep pkill xxd
)
for c in "${commands[@]}"; do
	# the system's own commands, never a pyenv shim or a /usr/local one
	p=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$c" 2>/dev/null || true)
	if [[ $p == /* ]]; then
		if [[ $(head -c 4 "$p" | od -A n -t x1 | tr -d ' ') == 7f454c46 ]]; then
			copy_elf "$p"
		else
			copy_file "$p"
		fi
		# and at /usr/bin/NAME, whatever the host's PATH found first
		if [[ ! -e $root/usr/bin/$c && $p != /usr/bin/* && $p != /bin/* ]]; then
			ln -s "$p" "$root/usr/bin/$c"
		fi
	fi
done
[[ -e $root/usr/bin/python3.11 ]] || die "the guest needs Debian's python3 (/usr/bin/python3.11)"
ln -sf python3.11 "$root/usr/bin/python3"
cp "$busybox" "$root/opt/busybox/busybox"
for applet in $("$busybox" --list); do
	[[ -e $root/opt/busybox/$applet ]] || ln -s busybox "$root/opt/busybox/$applet"
done
# python's standard library and the extension modules it loads
pylib=/usr/lib/python3.11
mkdir -p "$root$pylib"
(cd "$pylib" && tar --exclude=./test --exclude=./idlelib --exclude=./tkinter \
	--exclude=./ensurepip --exclude=./lib2to3 --exclude=./site-packages -cf - .) |
	tar -C "$root$pylib" -xf -
for so in "$pylib"/lib-dynload/*.so; do
	copy_elf "$so"
done
# the project: sources and this build, at the paths the build refers to
mkdir -p "$root$src"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		tar -C "$src" --null -T - -cf - | tar -C "$root$src" -xf -
else
	tar -C "$src" --exclude='./build*' -cf - . | tar -C "$root$src" -xf -
fi
mkdir -p "$root$build"
(cd "$build" && tar --exclude=./vm --exclude=./meson-logs -cf - .) | tar -C "$root$build" -xf -
for exe in "$build"/tests/test-* "$build"/tools/pagecache/pagecache "$build"/lib/*.so*; do
	if [[ -f $exe && $(head -c 4 "$exe" | od -A n -t x1 | tr -d ' ') == 7f454c46 ]]; then
		while read -r lib; do
			[[ $lib == "$build"/* ]] || copy_file "$lib"
		done < <(LC_ALL=C ldd "$exe" 2>/dev/null | awk '/=> \// { print $3 } /^\t\// { print $1 }')
	fi
done
# the system's files the commands read
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' >"$root/etc/nsswitch.conf"
printf '127.0.0.1 localhost pc-vm\n' >"$root/etc/hosts"
: >"$root/etc/fstab"
ln -s ../proc/self/mounts "$root/etc/mtab"
[[ ! -f /etc/mke2fs.conf ]] || cp /etc/mke2fs.conf "$root/etc/"
printf '/usr/lib/x86_64-linux-gnu\n/usr/local/lib\n' >"$root/etc/ld.so.conf"
ldconfig -r "$root" 2>/dev/null || log "ldconfig -r failed: the guest's loader searches its default paths"

# The guest's init: mount, run the plan vm_jobs tests at a time, power off.
# Twice as many tests as CPUs: without cachestat (6.1) some tests sleep more
# than they compute (each RWF_NOWAIT detection waits up to a second for a
# read that a clean kernel never starts, and test-faults detects anew in
# every child), and a vCPU left idle is a host core left unused. Measured
# for the whole plan on 2 vCPUs: 287 s one test more than CPUs, 212 s with
# this and the longest tests in two parts (vmtests.py SHARDS). More vCPUs
# than host cores make the emulation slower instead (4 on 2 cores).
vm_jobs=${PC_VM_JOBS:-$((${PC_VM_CPUS:-2} * 2))}
cp "$plan" "$root/pc-vm/plan"
if [[ -n ${PC_VM_SCRIPT:-} ]]; then
	cp "$PC_VM_SCRIPT" "$root/pc-vm/script"
fi
cat >"$root/pc-vm/init" <<EOF
#!/bin/bash
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/opt/busybox
export HOME=/root LC_ALL=C TERM=dumb
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t tmpfs -o mode=0755 run /run
mount -o remount,rw /
# cgroup v2 with the memory and io controllers, for the budget and
# throttled-disk cases (a guest without them skips those)
if mount -t cgroup2 cgroup2 /sys/fs/cgroup; then
	echo "+memory +io" >/sys/fs/cgroup/cgroup.subtree_control || true
fi
hostname pc-vm
echo "pc-vm: up: \$(uname -r), \$(nproc) CPUs, \$(awk '/MemTotal/ { print int(\$2 / 1024) }' /proc/meminfo) MiB"
if [[ ${PC_VM_SHELL:-0} == 1 ]]; then
	setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
elif [[ -f /pc-vm/script ]]; then
	cd '$build'
	bash /pc-vm/script 2>&1 | sed 's/^/pc-vm: script| /'
else
	cd '$build'
	run_one() {
		local name=\$1 secs=\$2 cmd=\$3 start rc=0
		start=\$(date +%s.%N)
		timeout -k 10 "\$secs" bash -c "exec \$cmd" >"/pc-vm/out/\$name.log" 2>&1 </dev/null || rc=\$?
		printf '%s %d %s\n' "\$name" "\$rc" "\$(awk -v a="\$start" -v b="\$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" >>/pc-vm/out/results
		echo "pc-vm: \$name: exit status \$rc"
		if ((rc != 0 && rc != 77)); then
			tail -n 30 "/pc-vm/out/\$name.log" | sed "s/^/pc-vm: \$name| /"
		fi
	}
	while IFS=\$'\t' read -r name secs cmd; do
		while ((\$(jobs -rp | wc -l) >= $vm_jobs)); do
			wait -n || true
		done
		echo "pc-vm: \$name: started"
		run_one "\$name" "\$((secs * 3))" "\$cmd" &
	done </pc-vm/plan
	wait
fi
echo "pc-vm: done"
sync
umount -a -r 2>/dev/null
poweroff -f
echo o >/proc/sysrq-trigger
EOF
chmod 0755 "$root/pc-vm/init"

need_mb=$(du -sm "$root" | awk '{ print $1 }')
img_mb=$((need_mb + 6144))
rm -f "$vm/root.img"
truncate -s "${img_mb}M" "$vm/root.img"
mkfs.ext4 -q -F -L pc-vm -E root_owner=0:0 -d "$root" "$vm/root.img" ||
	die "mkfs.ext4 -d failed"

# ---- the guest ------------------------------------------------------------
accel=${PC_VM_ACCEL:-tcg}
cpu=max
if [[ $accel == kvm ]]; then
	cpu=host
fi
bound=${PC_VM_TIMEOUT:-1200}
log "booting $pkg ($kver) under $accel, $(wc -l <"$plan") tests, at most ${bound}s"
qemu_args=(-accel "$accel" -cpu "$cpu" -smp "${PC_VM_CPUS:-2}" -m "${PC_VM_MEMORY:-2048}"
	-nographic -no-reboot -nic none
	-kernel "$vmlinuz" -initrd "$vm/initrd.img"
	-append "console=ttyS0 panic=-1 quiet loglevel=4"
	-drive "file=$vm/root.img,if=virtio,format=raw")
start=$SECONDS
qemu_rc=0
if [[ ${PC_VM_SHELL:-0} == 1 ]]; then
	"$qemu" "${qemu_args[@]}" || qemu_rc=$?
	exit "$qemu_rc"
fi
timeout -k 10 "$bound" "$qemu" "${qemu_args[@]}" </dev/null 2>&1 |
	tee "$vm/console.log" | grep --line-buffered '^pc-vm: ' >&2 || qemu_rc=${PIPESTATUS[0]}
log "the guest ran $((SECONDS - start))s"

rm -rf "$vm/out"
debugfs -R "rdump /pc-vm/out $vm" "$vm/root.img" >/dev/null 2>&1 ||
	log "debugfs could not read the results back from root.img"
status=0
python3 "$here/vmtests.py" log "$plan" "$vm/out" "$vm/testlog.json" || status=1
if ((qemu_rc == 124 || qemu_rc == 137)); then
	log "FAIL: the guest did not finish within ${bound}s (PC_VM_TIMEOUT)"
	status=1
elif ! grep -q '^pc-vm: done' "$vm/console.log"; then
	log "FAIL: the guest stopped before it finished (qemu exit status $qemu_rc); see $vm/console.log"
	status=1
fi
exit "$status"
