#!/usr/bin/env bash
# Smoke test of the cluster scripts/harness/cluster.sh brings up (run it after
# `cluster.sh up`): in a namespace of its own, a Deployment of the busybox image
# serving HTTP and a NodePort Service for it; the NodePort answers from the host
# at the node address; a second pod reaches the first through the Service's
# ClusterIP and its name (cluster DNS); a claim on the default StorageClass
# binds and a pod writes to it; a NetworkPolicy admits one pod and refuses
# another (kube-router); then the namespace is deleted and must be gone
# within a minute, and the PV it used must be gone with its directory.
set -euo pipefail

CLUSTER_SH="$(cd "$(dirname "$0")/.." && pwd)/cluster.sh"
die() { echo "check.sh: ERROR: $*" >&2; exit 1; }
say() { echo "check.sh: $*" >&2; }

env_out="$(bash "$CLUSTER_SH" env)" || die "cluster.sh env failed"
while IFS='=' read -r k v; do
	case "$k" in SANDBOXER_TEST_*) printf -v "$k" '%s' "$v" ;; esac
done <<<"$env_out"
: "${SANDBOXER_TEST_KUBECONFIG:?}" "${SANDBOXER_TEST_NODE_ADDRESS:?}" "${SANDBOXER_TEST_KUBECTL:?}" "${SANDBOXER_TEST_STORAGE_CLASS:?}"
kc() { "$SANDBOXER_TEST_KUBECTL" --kubeconfig "$SANDBOXER_TEST_KUBECONFIG" "$@"; }

NS="sandboxer-check-$$"
start=$SECONDS
cleanup() { kc delete namespace "$NS" --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT

kc create namespace "$NS" >/dev/null
# The default service account comes from kube-controller-manager, shortly after.
for _ in $(seq 1 40); do kc -n "$NS" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.25; done
kc -n "$NS" get serviceaccount default >/dev/null || die "no default service account in $NS"

kc -n "$NS" apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: sandboxer-busybox:latest
        imagePullPolicy: Never
        command: ["/bin/sh", "-c", "mkdir -p /www && echo hello-from-k8s >/www/index.html && exec httpd -f -p 8080 -h /www"]
        ports:
        - containerPort: 8080
        readinessProbe:
          tcpSocket: {port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: NodePort
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 100Mi}
EOF

kc -n "$NS" rollout status deployment/web --timeout=120s >/dev/null || {
	kc -n "$NS" describe pods >&2
	die "deployment web did not become ready"
}
say "deployment ready after $((SECONDS - start))s"

port="$(kc -n "$NS" get service web -o 'jsonpath={.spec.ports[0].nodePort}')"
ip="$(kc -n "$NS" get service web -o 'jsonpath={.spec.clusterIP}')"
out=""
for _ in $(seq 1 40); do
	out="$(curl -fsS --max-time 2 "http://$SANDBOXER_TEST_NODE_ADDRESS:$port/" 2>&1)" && break
	sleep 0.25
done
[ "$out" = hello-from-k8s ] || die "NodePort $SANDBOXER_TEST_NODE_ADDRESS:$port answered '$out'"
say "NodePort $SANDBOXER_TEST_NODE_ADDRESS:$port answers from the host"

# A second pod, through the ClusterIP and then the Service's name; and one
# writing to the claim.
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: sandboxer-busybox:latest
    imagePullPolicy: Never
    # (nc: the static busybox's wget crashes, also outside the cluster.)
    command: ["/bin/sh", "-c", "for h in $ip web; do printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 \$h 80 | sed -n '\$p'; done"]
---
apiVersion: v1
kind: Pod
metadata:
  name: writer
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
  containers:
  - name: writer
    image: sandboxer-busybox:latest
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "mkdir /data/sub && echo written >/data/sub/f && cat /data/sub/f"]
    volumeMounts:
    - {name: data, mountPath: /data}
EOF
for p in client writer; do
	phase=""
	for _ in $(seq 1 120); do
		phase="$(kc -n "$NS" get pod "$p" -o 'jsonpath={.status.phase}')"
		case "$phase" in Succeeded | Failed) break ;; esac
		sleep 0.5
	done
	if [ "$phase" != Succeeded ]; then
		kc -n "$NS" describe pod "$p" >&2
		kc -n "$NS" logs "$p" >&2 || true
		die "pod $p: phase '$phase', not Succeeded"
	fi
done
[ "$(kc -n "$NS" logs client)" = "$(printf 'hello-from-k8s\nhello-from-k8s')" ] || die "client got '$(kc -n "$NS" logs client)' from http://$ip/ and http://web/"
say "a second pod reaches the first through ClusterIP $ip and the name web"
[ "$(kc -n "$NS" logs writer)" = written ] || die "writer printed '$(kc -n "$NS" logs writer)'"
pv="$(kc -n "$NS" get pvc data -o 'jsonpath={.spec.volumeName}')"
[ "$(kc -n "$NS" get pvc data -o 'jsonpath={.status.phase}')" = Bound ] || die "claim data is not Bound"
dir="$(kc get pv "$pv" -o 'jsonpath={.spec.hostPath.path}')"
[ "$(cat "$dir/sub/f")" = written ] || die "$dir/sub/f does not hold what the pod wrote"
say "claim bound to $pv; a pod wrote $dir/sub/f"

# NetworkPolicy (kube-router): web admits only pods labelled net=a; one such
# pod reaches it, one labelled net=b is refused; the kubelet's probe keeps it
# Ready. The net=a pod tries a few times (its address joins the allowed set
# when kube-router syncs), the net=b one three times.
kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web-from-a
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
  - from:
    - podSelector: {matchLabels: {net: a}}
EOF
sleep 1
for n in a b; do
	tries=3
	[ "$n" = b ] || tries=10
	kc -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: client-$n
  labels: {net: $n}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: sandboxer-busybox:latest
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "for i in \$(seq $tries); do r=\$(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 $ip 80 2>/dev/null | sed -n '\$p'); [ -z \"\$r\" ] || { echo \"\$r\"; exit 0; }; sleep 1; done; echo refused"]
EOF
done
for n in a b; do
	phase=""
	for _ in $(seq 1 120); do
		phase="$(kc -n "$NS" get pod "client-$n" -o 'jsonpath={.status.phase}')"
		case "$phase" in Succeeded | Failed) break ;; esac
		sleep 0.5
	done
	[ "$phase" = Succeeded ] || { kc -n "$NS" describe pod "client-$n" >&2; die "pod client-$n: phase '$phase', not Succeeded"; }
done
[ "$(kc -n "$NS" logs client-a)" = hello-from-k8s ] || die "client-a (net=a) got '$(kc -n "$NS" logs client-a)' from web, not its page"
[ "$(kc -n "$NS" logs client-b)" = refused ] || die "client-b (net=b) got '$(kc -n "$NS" logs client-b)' from web: the NetworkPolicy is not enforced"
[ "$(kc -n "$NS" get deployment web -o 'jsonpath={.status.readyReplicas}')" = 1 ] || die "web is not Ready under its NetworkPolicy"
say "NetworkPolicy enforced: a net=a pod reaches web, a net=b pod is refused, web stays Ready"

t0=$SECONDS
kc delete namespace "$NS" --wait=false >/dev/null
gone=0
for _ in $(seq 1 120); do
	if ! kc get namespace "$NS" >/dev/null 2>&1; then gone=1; break; fi
	sleep 0.5
done
[ "$gone" = 1 ] || die "namespace $NS still there after 60s: $(kc get namespace "$NS" -o 'jsonpath={.status}')"
say "namespace deleted (finalized) in $((SECONDS - t0))s"
trap - EXIT

t0=$SECONDS
for _ in $(seq 1 120); do
	kc get pv "$pv" >/dev/null 2>&1 || break
	sleep 0.5
done
! kc get pv "$pv" >/dev/null 2>&1 || die "PV $pv is still there ($(kc get pv "$pv" -o 'jsonpath={.status.phase}')) 60s after its claim went"
[ ! -e "$dir" ] || die "PV $pv is gone but $dir is still there"
say "PV $pv and its directory deleted $((SECONDS - t0))s after the namespace went"
say "all checks passed in $((SECONDS - start))s"
