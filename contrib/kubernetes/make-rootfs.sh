#!/bin/sh
# make-rootfs.sh DIR [SRC:DEST]... — the root file system of the garudad image (the
# Dockerfile here: FROM scratch, COPY rootfs/ /), made offline from what is installed
# on this machine: each SRC is copied to DIR/DEST with the shared libraries ldd lists
# for it (and the dynamic loader), plus what the DaemonSet runs besides garudad:
# /bin/sh (exec probes run through it), sleep, mktemp, chmod and mv (the metrics
# sidecar's garuda-textfile loop) and garuda-textfile itself.
# Without SRC:DEST pairs, the installed packages (garuda, garuda-fleet):
#   /usr/sbin/garudad, /usr/bin/garctl, /usr/libexec/garuda/garuda-textfile
# From a build tree instead (what tests/deploy/container-real.sh does):
#   make-rootfs.sh ctx/rootfs build/daemon/garudad:/usr/sbin/garudad \
#       build/client/garctl/garctl:/usr/bin/garctl \
#       contrib/prometheus/garuda-textfile:/usr/libexec/garuda/garuda-textfile
# No group database is needed: the client socket's group is a numeric gid
# (garudad-configmap.yaml, socket_group).
set -eu
out=${1:?usage: make-rootfs.sh DIR [SRC:DEST]...}
shift
if [ $# -eq 0 ]; then
	set -- /usr/sbin/garudad:/usr/sbin/garudad /usr/bin/garctl:/usr/bin/garctl \
		/usr/libexec/garuda/garuda-textfile:/usr/libexec/garuda/garuda-textfile
fi
set -- "$@" /bin/dash:/bin/sh /bin/sleep:/bin/sleep /bin/mktemp:/bin/mktemp \
	/bin/chmod:/bin/chmod /bin/mv:/bin/mv
multiarch=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || true)
libdir=/usr/lib${multiarch:+/$multiarch}

mkdir -p "$out"
for d in etc/garuda run tmp proc sys dev "$libdir"; do
	mkdir -p "$out/$d"
done
printf 'root:x:0:0:root:/:/bin/sh\n' >"$out/etc/passwd"
printf 'root:x:0:\n' >"$out/etc/group"
for pair in "$@"; do
	src=${pair%%:*} dest=${pair#*:}
	[ -f "$src" ] || { echo "make-rootfs.sh: $src: no such file" >&2; exit 1; }
	mkdir -p "$out${dest%/*}"
	cp -L "$src" "$out$dest"
	chmod 0755 "$out$dest"
	# scripts have no libraries
	head -c 4 "$src" | grep -q 'ELF' || continue
	ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
		while read -r lib; do
			case $lib in
			/lib/* | /lib64/* | /usr/lib/*) to=$lib ;;
			*) to=$libdir/${lib##*/} ;; # a build tree's libgaruda.so.0
			esac
			mkdir -p "$out${to%/*}"
			[ -e "$out$to" ] || cp -L "$lib" "$out$to"
		done
done
echo "make-rootfs.sh: $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1) in $out"
