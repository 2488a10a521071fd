// k8s-validate.js NODE_MODULES DIR — every object in DIR/*.yaml whose apiVersion is a
// Kubernetes API is validated against the Kubernetes OpenAPI schemas (npm
// kubernetes-models: Model#validate throws on a schema violation); a known-bad
// DaemonSet must be refused (the check is not vacuous); the CDI spec gets the
// structural checks of the CDI spec (cdiVersion, kind vendor/class, devices with
// containerEdits); and the deployment rules are asserted on the DaemonSet and
// the CDI spec. Prints one line per object; exits 1 on the first failure.
'use strict';
const path = require('path');
const fs = require('fs');
const [nodeModules, dir] = process.argv.slice(2);
const req = (m) => require(path.join(nodeModules, m));
const yaml = req('js-yaml');

function fail(msg) { console.error('FAIL: ' + msg); process.exit(1); }
function model(obj) {
  const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : [null, obj.apiVersion];
  const mod = group ? `kubernetes-models/${group}/${version}/${obj.kind}` : `kubernetes-models/${version}/${obj.kind}`;
  const M = req(mod)[obj.kind];
  if (!M) fail(`no schema for ${obj.apiVersion} ${obj.kind}`);
  return new M(obj);
}
function validate(obj, where) {
  try { model(obj).validate(); } catch (e) { return `${where}: ${e.message}`; }
  return null;
}

const seen = {};
for (const f of fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
  const docs = yaml.loadAll(fs.readFileSync(path.join(dir, f), 'utf8')).filter(Boolean);
  for (const obj of docs) {
    if (obj.cdiVersion) {
      if (!/^0\.[5-8]\.0$/.test(obj.cdiVersion)) fail(`${f}: cdiVersion ${obj.cdiVersion}`);
      if (!/^[a-z0-9.-]+\/[a-zA-Z0-9_.-]+$/.test(obj.kind || '')) fail(`${f}: CDI kind "${obj.kind}" is not vendor/class`);
      if (!Array.isArray(obj.devices) || !obj.devices.length) fail(`${f}: CDI spec without devices`);
      for (const d of obj.devices) {
        if (!/^[a-zA-Z0-9][a-zA-Z0-9_.:-]*$/.test(d.name || '')) fail(`${f}: CDI device name "${d.name}"`);
        if (!d.containerEdits) fail(`${f}: CDI device ${d.name} without containerEdits`);
      }
      seen.cdi = obj;
      console.log(`${f}: CDI ${obj.cdiVersion} ${obj.kind}: structure ok`);
      continue;
    }
    const err = validate(obj, f);
    if (err) fail(err);
    seen[obj.kind] = obj;
    console.log(`${f}: ${obj.apiVersion} ${obj.kind} ${obj.metadata.name}: schema ok`);
  }
}

// the validator refuses a broken object (a container's ports must be an array)
if (seen.DaemonSet) {
  const bad = JSON.parse(JSON.stringify(seen.DaemonSet));
  bad.spec.template.spec.containers[0].ports = 'tcp/80';
  if (!validate(bad, 'broken DaemonSet')) fail('kubernetes-models accepted a DaemonSet with ports: "tcp/80"');
  console.log('a broken DaemonSet is refused by the schema check');
}

// the deployment rules of the issue
const ds = seen.DaemonSet || fail('no DaemonSet');
const pod = ds.spec.template.spec;
if (pod.priorityClassName !== 'system-node-critical') fail('DaemonSet priorityClassName is not system-node-critical');
if (!pod.nodeSelector || !Object.keys(pod.nodeSelector).length) fail('DaemonSet has no GPU node selector');
const c = pod.containers.find((c) => c.name === 'garudad') || fail('no garudad container');
const caps = ((c.securityContext || {}).capabilities || {}).add || [];
for (const cap of ['IPC_LOCK', 'SYS_NICE']) if (!caps.includes(cap)) fail(`garudad lacks capability ${cap}`);
const vm = (c.volumeMounts || []).find((m) => m.mountPath === '/run/garuda') || fail('garudad does not mount /run/garuda');
const vol = pod.volumes.find((v) => v.name === vm.name);
if (!vol.hostPath || vol.hostPath.path !== '/run/garuda' || !/^Directory/.test(vol.hostPath.type || ''))
  fail('the /run/garuda volume is not the hostPath directory /run/garuda');
const cdi = seen.cdi || fail('no CDI spec');
const edits = cdi.devices[0].containerEdits;
if (!(edits.env || []).some((e) => e.startsWith('GARUDA_SOCKET=/run/garuda/'))) fail('CDI spec sets no GARUDA_SOCKET');
if (!(edits.mounts || []).some((m) => m.hostPath === '/run/garuda' && m.containerPath === '/run/garuda'))
  fail('CDI spec does not mount the socket directory');
// what workload pods get must not hold the control socket (a root pod would be garudad's
// admin), and must not let them replace garudad's socket
const ctl = (c.command || []).find((a) => a.startsWith('--control-socket=')) || fail('garudad has no --control-socket');
if (ctl.slice('--control-socket='.length).startsWith('/run/garuda/'))
  fail(`the control socket ${ctl} is in /run/garuda, which workload pods mount`);
if (!(edits.mounts || []).some((m) => m.hostPath === '/run/garuda' && (m.options || []).includes('ro')))
  fail('CDI spec mounts /run/garuda writable: a pod could unlink or replace the socket');
console.log('deployment rules: hostPath directory, IPC_LOCK+SYS_NICE, system-node-critical, node selector, CDI socket dir (read-only, no control socket) + GARUDA_SOCKET');

// the socket's gid by construction: the ConfigMap's socket_group (numeric) is the gid
// the example pod names in supplementalGroups, and the DaemonSet mounts that ConfigMap
// at /etc/garuda, where its --config points
const cm = seen.ConfigMap || fail('no ConfigMap');
const conf = JSON.parse(cm.data['garudad.json']);
if (!/^[0-9]+$/.test(String(conf.socket_group))) fail(`ConfigMap socket_group "${conf.socket_group}" is not a numeric gid`);
const ex = seen.Pod || fail('no example Pod');
const groups = ((ex.spec.securityContext || {}).supplementalGroups || []).map(String);
if (!groups.includes(String(conf.socket_group)))
  fail(`example pod supplementalGroups [${groups}] lack socket_group ${conf.socket_group}`);
const cmVol = pod.volumes.find((v) => v.configMap && v.configMap.name === cm.metadata.name) ||
  fail(`the DaemonSet does not mount ConfigMap ${cm.metadata.name}`);
if (!(c.volumeMounts || []).some((m) => m.name === cmVol.name && m.mountPath === '/etc/garuda'))
  fail('the ConfigMap is not mounted at /etc/garuda');
if (!c.command.includes('--config=/etc/garuda/garudad.json')) fail('garudad is not started with --config=/etc/garuda/garudad.json');
console.log(`socket gid ${conf.socket_group}: ConfigMap socket_group = example pod supplementalGroups; ConfigMap at /etc/garuda`);
