#!/usr/bin/env bash
# container-real.sh SRC GARUDAD GARCTL MINIMAL — contrib/kubernetes with a real
# container engine (Debian's podman 4.3 + runc; there is no kubelet in Debian): the
# image is built offline from this build with the shipped recipe (make-rootfs.sh +
# Dockerfile: FROM scratch, no pull), and garudad-daemonset.yaml's pod template is
# played as a Pod (podman kube play takes no DaemonSet; only image: changes) with the
# shipped ConfigMap. Checked:
#   - garudad runs with exactly the capabilities the manifest adds (CHOWN, IPC_LOCK,
#     SYS_NICE), a read-only root, the memory limit, no privilege escalation;
#   - the liveness command (a podman healthcheck) passes, and fails with garudad stopped;
#   - the client socket in the hostPath directory has the ConfigMap's numeric gid, the
#     gid example-pod.yaml puts in supplementalGroups;
#   - the metrics sidecar writes garuda.prom (garuda_up 1) into its hostPath;
#   - a client container (examples/minimal, as uid 1000 with the example pod's
#     supplementalGroups) reaches garudad through the shipped CDI spec
#     (--device garuda.dev/daemon=socket), and again after the pod is restarted;
#   - garudad says it runs on epoll (the default seccomp profile refuses io_uring).
# Everything in a temp dir (podman's root, runroot, config, networks: --network none),
# in private mount and pid namespaces with a tmpfs /run and /var/lib (the hostPaths
# /run/garuda and /var/lib/prometheus/node-exporter, the CDI directory /run/cdi and
# podman's blob cache are the test's); the host is checked at the end for leftover
# processes, mounts, cgroups, network changes and files in the engines' places.
# Exit 77 (skip) naming the package when a tool is missing, or without root/unshare.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=real-frame.sh
source "$here/real-frame.sh"

if [[ ${1:-} != --inner ]]; then
	real_require "rootful podman in a private mount namespace" \
		podman:podman runc:runc conmon:conmon unshare:util-linux
	[[ -x /usr/libexec/podman/catatonit ]] || skip "catatonit not installed (Debian package catatonit: podman's pause image)"
	python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml not installed (Debian package python3-yaml)"
	real_cleanup() {
		# the cgroupfs manager makes libpod_parent under each controller outside the
		# namespace: remove the ones this test made (those not there before)
		find /sys/fs/cgroup -maxdepth 2 -type d -name libpod_parent 2>/dev/null | while read -r d; do
			grep -qxF "$d" "$work/host.before" || find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
		done
	}
	real_outer 'conmon|podman|runc|catatonit' garuda-ctr "$@"
fi

# --- inside: pid 1 of a private pid namespace, a private mount table
real_inner "$@"
k8s=$src/contrib/kubernetes
# /var/lib: the metrics sidecar's hostPath (/var/lib/prometheus/node-exporter,
# DirectoryOrCreate) and podman build's blob cache (/var/lib/containers/cache, written
# whatever --root says) land in the test's tmpfs, not on the host
mount -t tmpfs -o mode=0755 tmpfs /var/lib
mkdir -p /var/lib/containers
mkdir -p "$work/net" "$work/tmp"
hard=$(ulimit -Hn)
cat >"$work/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$hard:$hard", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$work/events.log"
tmp_dir = "$work/tmp"
[network]
network_config_dir = "$work/net"
CONF
export CONTAINERS_CONF=$work/containers.conf TMPDIR=$work/tmp
pm() { podman --root "$work/root" --runroot "$work/runroot" --storage-driver vfs "$@"; }
dump() {
	pm pod ps 2>&1 | tail -n 5
	pm ps -a 2>&1 | tail -n 5
	pm logs garudad-garudad 2>&1 | tail -n 10
}
trap 'rc=$?; ((rc == 0)) || dump; pm pod rm -f -a >/dev/null 2>&1; pm rm -f -a >/dev/null 2>&1; exit $rc' EXIT

echo "--- the image, built offline with the shipped recipe from this build"
mkdir -p "$work/ctx"
"$k8s/make-rootfs.sh" "$work/ctx/rootfs" "$garudad:/usr/sbin/garudad" "$garctl:/usr/bin/garctl" \
	"$src/contrib/prometheus/garuda-textfile:/usr/libexec/garuda/garuda-textfile"
pm build -q --network none -f "$k8s/Dockerfile" -t localhost/garuda:test "$work/ctx" >/dev/null
# the client: examples/minimal (and this build's libgaruda), the same way
mkdir -p "$work/cctx"
"$k8s/make-rootfs.sh" "$work/cctx/rootfs" "$minimal:/usr/bin/minimal"
printf 'FROM scratch\nCOPY rootfs/ /\nENTRYPOINT ["/usr/bin/minimal"]\n' >"$work/cctx/Containerfile"
pm build -q --network none -f "$work/cctx/Containerfile" -t localhost/garuda-client:test "$work/cctx" >/dev/null
echo "images built after $((SECONDS - start)) s: $(pm images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | tr '\n' ' ')"

echo "--- the DaemonSet's pod template, played as a Pod"
python3 - "$k8s/garudad-daemonset.yaml" "$work/pod.yaml" <<'PY'
import sys, yaml
ds = yaml.safe_load(open(sys.argv[1]))
tpl = ds["spec"]["template"]
for c in tpl["spec"]["containers"]:
    c["image"] = "localhost/garuda:test"
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "garudad", "labels": tpl["metadata"]["labels"]},
       "spec": tpl["spec"]}
yaml.safe_dump(pod, open(sys.argv[2], "w"))
PY
gid=$(python3 -c 'import json, sys, yaml
print(json.loads(yaml.safe_load(open(sys.argv[1]))["data"]["garudad.json"])["socket_group"])' "$k8s/garudad-configmap.yaml")
pod_gid=$(python3 -c 'import sys, yaml
print(*yaml.safe_load(open(sys.argv[1]))["spec"]["securityContext"]["supplementalGroups"])' "$k8s/example-pod.yaml")
[[ $gid == "$pod_gid" ]] || fail "ConfigMap socket_group $gid, example pod supplementalGroups $pod_gid"
pm kube play --network none --configmap "$k8s/garudad-configmap.yaml" "$work/pod.yaml" >/dev/null
for _ in $(seq 100); do [[ -S /run/garuda/garuda.sock && -S /run/garuda-control/control.sock ]] && break; sleep 0.1; done
[[ -S /run/garuda/garuda.sock ]] || fail "no client socket in the hostPath /run/garuda"
[[ -S /run/garuda-control/control.sock && ! -e /run/garuda/control.sock ]] ||
	fail "the control socket is not in /run/garuda-control alone (workload pods mount /run/garuda)"
echo "pod up after $((SECONDS - start)) s"

ctr=garudad-garudad
pid=$(pm inspect -f '{{.State.Pid}}' "$ctr")
capeff=$(awk '/^CapEff/ {print $2}' "/proc/$pid/status")
capbnd=$(awk '/^CapBnd/ {print $2}' "/proc/$pid/status")
# CHOWN (0), IPC_LOCK (14), SYS_NICE (23)
[[ $capeff == 0000000000804001 && $capbnd == 0000000000804001 ]] ||
	fail "garudad's capabilities: effective $capeff, bounding $capbnd (want 0000000000804001)"
echo "capabilities: CHOWN IPC_LOCK SYS_NICE only ($capeff)"
[[ $(awk '/^NoNewPrivs/ {print $2}' "/proc/$pid/status") == 1 ]] || fail "allowPrivilegeEscalation: false not applied"
[[ $(pm inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$ctr") == true ]] || fail "root file system not read-only"
if pm exec "$ctr" /bin/sh -c ': >/probe' 2>/dev/null; then fail "the root file system is writable"; fi
mem=$(pm inspect -f '{{.HostConfig.Memory}}' "$ctr")
((mem == 512 * 1024 * 1024)) || fail "memory limit $mem, not 512Mi"
echo "read-only root, no new privileges, memory limit 512Mi"
got=$(stat -c '%g %a' /run/garuda/garuda.sock)
[[ $got == "$gid 660" ]] || fail "client socket gid/mode $got, not $gid 660"
echo "client socket: gid $gid (the ConfigMap's socket_group, the example pod's supplementalGroups), mode 0660"

echo "--- metrics sidecar"
# its first round may have come before garudad listened (garuda_up 0): the next is 15 s later
for _ in $(seq 200); do grep -qx 'garuda_up 1' /var/lib/prometheus/node-exporter/garuda.prom 2>/dev/null && break; sleep 0.1; done
grep -qx 'garuda_up 1' /var/lib/prometheus/node-exporter/garuda.prom 2>/dev/null || fail "no garuda.prom with garuda_up 1 from the sidecar"
echo "garuda.prom: $(grep -c '^garuda_' /var/lib/prometheus/node-exporter/garuda.prom) samples, garuda_up 1"

echo "--- liveness command"
pm healthcheck run "$ctr" >/dev/null || fail "the liveness command fails with garudad running"
kill -STOP "$pid"
if pm healthcheck run "$ctr" >/dev/null 2>&1; then fail "the liveness command passes with garudad stopped"; fi
kill -CONT "$pid"
pm healthcheck run "$ctr" >/dev/null || fail "the liveness command fails after SIGCONT"
echo "healthy with garudad answering, unhealthy with garudad stopped"

echo "--- a client through the CDI spec"
mkdir -p /run/cdi
cp "$k8s/garuda-cdi.yaml" /run/cdi/garuda.yaml
client() {
	pm run --rm --network none --device garuda.dev/daemon=socket --user 1000:1000 \
		--group-add "$pod_gid" --read-only localhost/garuda-client:test
}
out=$(client 2>&1) || { echo "$out"; fail "the client container did not reach garudad"; }
echo "client: $out"
echo "--- the pod restarted (pod stop + pod start)"
pm pod stop -t 5 garudad >/dev/null
pm pod start garudad >/dev/null
for _ in $(seq 100); do GARUDA_CONTROL_SOCKET=/run/garuda-control/control.sock "$garctl" --timeout=1 status >/dev/null 2>&1 && break; sleep 0.1; done
[[ $(pm inspect -f '{{.State.Pid}}' "$ctr") != "$pid" ]] || fail "garudad was not restarted"
out=$(client 2>&1) || { echo "$out"; fail "the client container did not reach the restarted garudad"; }
echo "client after the restart: $out"
logs=$(pm logs "$ctr" 2>&1)
grep -qi 'epoll' <<<"$logs" || { echo "$logs"; fail "garudad's log does not say it runs on epoll"; }
echo "event loop under the default seccomp profile: $(grep -i 'epoll' <<<"$logs" | head -n 1)"
echo "containers: all steps passed in $((SECONDS - start)) s"
