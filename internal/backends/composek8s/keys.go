package composek8s

// What a cluster does with each key of a compose service. The table is the
// conversion's documentation (the Kubernetes guide has it row for row) and
// its plan-time check: a key a cluster cannot honour is refused, naming
// the key and what to write instead; one it has no use for is ignored with
// a warning; a key missing from the table is refused as unknown, so nothing
// is ever dropped without a word.

// Does is what the conversion does with a key.
type Does string

const (
	Converted Does = "converted"
	Ignored   Does = "ignored"
	Refused   Does = "refused"
)

// Key is one service key and what becomes of it.
type Key struct {
	Name string
	Does Does
	What string // the Kubernetes object or field; for Ignored and Refused, why and what to write instead
}

// ServiceKeys is the table, in the order the guide lists it.
var ServiceKeys = []Key{
	{"image", Converted, "the container's `image`"},
	{"pull_policy", Converted, "`imagePullPolicy`: always → Always, never → Never, missing or if_not_present → IfNotPresent; any other value refused"},
	{"pull_refresh_after", Ignored, "the kubelet decides when to pull again, by `imagePullPolicy`"},
	{"build", Ignored, "a cluster does not build: the service runs its `image`, which must be in a registry the cluster pulls from (without an `image`, refused)"},
	{"entrypoint", Converted, "the container's `command`"},
	{"command", Converted, "the container's `args`"},
	{"working_dir", Converted, "`workingDir`"},
	{"user", Converted, "`securityContext.runAsUser` / `runAsGroup`: numeric ids only (`\"1000:1000\"`)"},
	{"environment", Converted, "a ConfigMap `env-<service>` the container takes with `envFrom` (values holding an `env_wo` value go to a Secret of the same name instead)"},
	{"env_file", Converted, "read on the client, merged under `environment` into the same ConfigMap"},
	{"restart", Converted, "`\"no\"`: a Job (`restartPolicy: Never`, `backoffLimit: 0`), ready once completed; any other value: a Deployment"},
	{"deploy", Converted, "`replicas` → the Deployment's replicas; `resources` → `resources.limits` / `requests`; `mode: global` and placement are refused"},
	{"scale", Converted, "the Deployment's replicas"},
	{"ports", Converted, "the headless Service `<service>`'s ports, and a NodePort Service `published-<service>` for the published ones; `endpoints` gives `node_address:nodePort`"},
	{"expose", Converted, "the headless Service `<service>`'s ports"},
	{"healthcheck", Converted, "a `readinessProbe` (exec): interval → periodSeconds, timeout → timeoutSeconds, retries → failureThreshold"},
	{"depends_on", Converted, "creation order: a service's workload is created once its dependencies are started, ready (`service_healthy`) or completed (`service_completed_successfully`)"},
	{"volumes", Converted, "named volume → a PersistentVolumeClaim of the cluster's storage class, named after it (a name that is no Kubernetes name, such as `db_data`, lowercased with `-` for what a name may not hold and a short hash of the original: `db-data-<hash>`); a path in the repo → the repo's volume with `subPath`; tmpfs and anonymous → `emptyDir`; anything else refused"},
	{"tmpfs", Converted, "an `emptyDir` with `medium: Memory`"},
	{"shm_size", Converted, "an `emptyDir` with `medium: Memory` and that `sizeLimit` at /dev/shm"},
	{"networks", Converted, "NetworkPolicies: a pod takes traffic only from pods on one of its networks; `aliases` → headless Services of those names; `ipv4_address`, `ipv6_address` refused"},
	{"container_name", Converted, "a headless Service of that name, so the name resolves as in compose"},
	{"links", Converted, "a headless Service per alias"},
	{"hostname", Converted, "the pod's `hostname`"},
	{"extra_hosts", Converted, "`hostAliases`"},
	{"dns", Converted, "`dnsConfig.nameservers`, after the cluster's DNS, so service names still resolve"},
	{"dns_search", Converted, "`dnsConfig.searches`"},
	{"dns_opt", Converted, "`dnsConfig.options`"},
	{"stop_grace_period", Converted, "`terminationGracePeriodSeconds`"},
	{"privileged", Converted, "`securityContext.privileged`, where the cluster's policy allows it"},
	{"cap_add", Converted, "`securityContext.capabilities.add`"},
	{"cap_drop", Converted, "`securityContext.capabilities.drop`"},
	{"read_only", Converted, "`securityContext.readOnlyRootFilesystem`"},
	{"security_opt", Converted, "`no-new-privileges` → `allowPrivilegeEscalation: false`; any other option refused"},
	{"sysctls", Converted, "the pod's `securityContext.sysctls`"},
	{"tty", Converted, "the container's `tty`"},
	{"stdin_open", Converted, "the container's `stdin`"},
	{"mem_limit", Converted, "`resources.limits.memory`"},
	{"mem_reservation", Converted, "`resources.requests.memory`"},
	{"cpus", Converted, "`resources.limits.cpu`"},
	{"labels", Converted, "the pod's annotations"},
	{"annotations", Converted, "the pod's annotations"},
	{"configs", Converted, "a ConfigMap `config-<name>` mounted at the target (default /<name>)"},
	{"secrets", Converted, "a Secret `secret-<name>` mounted at /run/secrets/<target>"},
	{"platform", Converted, "`nodeSelector` `kubernetes.io/os` and `kubernetes.io/arch`"},
	{"profiles", Converted, "as compose: only the services of the profiles turned on"},
	{"extends", Converted, "resolved on the client as compose does"},
	{"init", Ignored, "a pod has no init process option; the container runs as its image says"},
	{"logging", Ignored, "a cluster keeps container logs its own way"},
	{"stop_signal", Ignored, "pods are stopped with SIGTERM; handle it, or stop in a `preStop` hook of your own"},
	{"pids_limit", Ignored, "pids are limited per node (the kubelet's `podPidsLimit`), not per container"},
	{"develop", Ignored, "compose watch is a client feature"},
	{"attach", Ignored, "logs are read with the logs action"},
	{"network_mode", Refused, "a pod has its own network: remove `network_mode` (services reach each other by name)"},
	{"pid", Refused, "a pod cannot share the node's or another service's process namespace: remove `pid`"},
	{"ipc", Refused, "a pod cannot share the node's or another service's IPC namespace: remove `ipc` (use `shm_size` for shared memory)"},
	{"uts", Refused, "a pod cannot share the node's UTS namespace: remove `uts`"},
	{"userns_mode", Refused, "user namespaces are the cluster's setting: remove `userns_mode`"},
	{"devices", Refused, "a cluster gives devices through device plugins, not paths: remove `devices`"},
	{"device_cgroup_rules", Refused, "a cluster gives devices through device plugins: remove `device_cgroup_rules`"},
	{"gpus", Refused, "request GPUs through the cluster's device plugin: remove `gpus`"},
	{"volumes_from", Refused, "mount the same named volume in both services instead of `volumes_from`"},
	{"external_links", Refused, "a sandbox's namespace reaches nothing by container name outside it: remove `external_links`"},
	{"cgroup_parent", Refused, "the kubelet places pods in cgroups: remove `cgroup_parent`"},
	{"cgroup", Refused, "the kubelet places pods in cgroups: remove `cgroup`"},
	{"runtime", Refused, "pick a runtime with a RuntimeClass on the cluster: remove `runtime`"},
	{"isolation", Refused, "a Windows engine option: remove `isolation`"},
	{"ulimits", Refused, "a pod has no per-container ulimits: remove `ulimits` (set them in the image or the node)"},
	{"storage_opt", Refused, "a pod has no per-container storage options: remove `storage_opt`"},
	{"blkio_config", Refused, "a pod has no block I/O weights: remove `blkio_config`"},
	{"cpu_shares", Refused, "write `cpus` (a limit) or `deploy.resources.reservations.cpus` (a request) instead"},
	{"cpu_quota", Refused, "write `cpus` instead"},
	{"cpu_period", Refused, "write `cpus` instead"},
	{"cpu_count", Refused, "write `cpus` instead"},
	{"cpu_percent", Refused, "write `cpus` instead"},
	{"cpu_rt_period", Refused, "a pod has no realtime scheduling: remove it"},
	{"cpu_rt_runtime", Refused, "a pod has no realtime scheduling: remove it"},
	{"cpuset", Refused, "the kubelet's CPU manager pins CPUs: remove `cpuset`"},
	{"memswap_limit", Refused, "swap is the node's setting: remove `memswap_limit`"},
	{"mem_swappiness", Refused, "swap is the node's setting: remove `mem_swappiness`"},
	{"oom_kill_disable", Refused, "a pod cannot opt out of the OOM killer: remove `oom_kill_disable`"},
	{"oom_score_adj", Refused, "the kubelet sets OOM scores from the QoS class: remove `oom_score_adj`"},
	{"mac_address", Refused, "a pod's address is the network plugin's: remove `mac_address`"},
	{"domainname", Refused, "a pod's domain is the cluster's: remove `domainname`"},
	{"group_add", Refused, "write numeric groups in `user` instead of `group_add`"},
	{"credential_spec", Refused, "a Windows engine option: remove `credential_spec`"},
	{"post_start", Refused, "lifecycle hooks run differently on a cluster: run the command with a sandboxer_command instead"},
	{"pre_stop", Refused, "lifecycle hooks run differently on a cluster: remove `pre_stop`"},
	{"use_api_socket", Refused, "a cluster has no engine socket to give a service: remove `use_api_socket`"},
	{"provider", Refused, "compose providers run on the client: remove `provider`"},
	{"models", Refused, "compose models need Docker Model Runner: remove `models`"},
	{"label_file", Refused, "write the labels in `labels` instead"},
}

// serviceKey is ServiceKeys by name.
var serviceKey = func() map[string]Key {
	m := make(map[string]Key, len(ServiceKeys))
	for _, k := range ServiceKeys {
		m[k.Name] = k
	}
	return m
}()
